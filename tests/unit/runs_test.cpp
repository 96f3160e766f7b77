// Measured runs, from file to engine: the log readers on the sample files of
// tests/data/runs/ (its README.md derives every expected figure by hand from
// the sample lines), the runs file in YAML and CSV with its located
// diagnostics, the stack fit on runs made by hand (expectations from the
// formulas in include/ridgeline/calibrate/runs.hpp, worked in the comments),
// the calibration file written and read back, the engine applying a stack,
// and the interval anchored on a stack's runs.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <string>
#include <unistd.h>

#include "ridgeline/calibrate/runs.hpp"
#include "ridgeline/engine/engine.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/run_logs.hpp"
#include "ridgeline/spec/runs.hpp"
#include "ridgeline/spec/stack_calibration.hpp"
#include "ridgeline/support/diagnostics.hpp"
#include "ridgeline/uncertainty/interval.hpp"
#include "ridgeline/uncertainty/scale_prior.hpp"
#include "ridgeline/units/units.hpp"
#include "test_support.hpp"

using namespace ridgeline;
namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(RIDGELINE_SOURCE_DIR) + "/tests/data/runs/";

/// A file in a fresh folder of its own, removed at the end.
struct TempFile {
  fs::path dir, path;
  TempFile(const std::string& name, const std::string& text)
      : dir(fs::temp_directory_path() / ("ridgeline_runs_" + std::to_string(::getpid()) + "_" + name)) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    path = dir / name;
    std::ofstream(path) << text;
  }
  ~TempFile() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

/// The first diagnostic of loading `text` as a runs file named `name`, with the folder left out.
std::string runs_error(const std::string& name, const std::string& text) {
  TempFile f(name, text);
  try {
    spec::load_runs(f.path.string());
  } catch (const support::SpecError& e) {
    std::string s = e.diagnostics().front().format();
    const std::string prefix = f.dir.string() + "/";
    if (s.starts_with(prefix)) s = s.substr(prefix.size());
    return s;
  }
  return "(no error)";
}

std::string one_run(const std::string& measured_and_more) {
  return "runs:\n  - name: a\n    gpu: h100_sxm\n    model: llama3_8b\n    plan: \"--dp 8 --zero 3\"\n" +
         measured_and_more;
}

}  // namespace

TEST_CASE("run logs: torchtitan, median tps past the warm-up, peak reserved memory") {
  const auto m = spec::read_run_log(kDir + "torchtitan.log", std::nullopt);
  // Steps 20-50 kept: median of 5612, 5590, 5604, 5586 = (5590 + 5604) / 2.
  CHECK(m.tokens_per_s_per_gpu == 5597.0);
  CHECK(m.step_time_s == 0);
  CHECK(m.peak_memory_bytes == doctest::Approx(37.42 * units::kGiB));
  CHECK(m.memory_kind == spec::MemoryKind::kReserved);
  CHECK(m.basis.find("median of 4 logged steps (steps 20-50); warm-up skipped: steps 1, 10") != std::string::npos);
}

TEST_CASE("run logs: Megatron-LM, median elapsed time per iteration, largest max reserved") {
  const auto m = spec::read_run_log(kDir + "megatron.log", std::nullopt);
  // (7493.4 + 7501.9) / 2 ms.
  CHECK(m.step_time_s == doctest::Approx(7.49765).epsilon(1e-12));
  CHECK(m.peak_memory_bytes == 57344.0 * units::kMiB);
  CHECK(m.memory_kind == spec::MemoryKind::kReserved);
  CHECK(m.basis.find("warm-up skipped: steps 1, 10") != std::string::npos);
}

TEST_CASE("run logs: a Trainer's trainer_state.json, train_runtime over max_steps") {
  const auto m = spec::read_run_log(kDir + "trainer_state.json", std::nullopt);
  CHECK(m.step_time_s == doctest::Approx(1080.0 / 200));
  CHECK(m.peak_memory_bytes == 0);  // the file has none
  CHECK(m.basis.find("warm-up included") != std::string::npos);
}

TEST_CASE("run logs: a profiler trace, median of the host's ProfilerStep spans past the warm-up") {
  const auto m = spec::read_run_log(kDir + "kineto_trace.json", spec::LogFormat::kKineto);
  // #3, #4, #5 kept (#2 is the run's step 3): median 9901234.5 us.
  CHECK(m.step_time_s == doctest::Approx(9.9012345).epsilon(1e-12));
  CHECK(m.basis.find("(host;") != std::string::npos);
}

TEST_CASE("run logs: the format is told from the text, and a log of warm-up only is refused") {
  CHECK(spec::detect_log_format(test::slurp(kDir + "torchtitan.log")) == spec::LogFormat::kTorchtitan);
  CHECK(spec::detect_log_format(test::slurp(kDir + "megatron.log")) == spec::LogFormat::kMegatron);
  CHECK(spec::detect_log_format(test::slurp(kDir + "trainer_state.json")) == spec::LogFormat::kHfTrainerState);
  CHECK(spec::detect_log_format(test::slurp(kDir + "kineto_trace.json")) == spec::LogFormat::kKineto);
  CHECK_FALSE(spec::detect_log_format("hello\n").has_value());
  {
    // Steps 1 and 3: both cover the run's first 3 steps.
    TempFile f("short.log", "step:  1  loss: 9  memory: 1.00GiB(1.00%)  tps: 100\nstep:  3  loss: 9  tps: 200\n");
    CHECK_THROWS_WITH(spec::read_run_log(f.path.string(), std::nullopt),
                      (f.path.string() + ":2:1: error: none of its 2 logged steps is past the first 3 steps of the "
                                         "run (warm-up): log more steps")
                          .c_str());
  }
  {
    TempFile f("what.log", "nothing to see\n");
    CHECK_THROWS_WITH(spec::read_run_log(f.path.string(), std::nullopt),
                      (f.path.string() + ": error: cannot tell this log's format; give log_format: one of torchtitan, "
                                         "megatron, hf_trainer_state, kineto")
                          .c_str());
  }
}

TEST_CASE("runs file: YAML, measured figures and logs read from the file's folder") {
  const auto r = spec::load_runs(kDir + "runs.yaml");
  REQUIRE(r.runs.size() == 5);
  CHECK(r.runs[0].name == "pilot-8xh100");
  CHECK(r.runs[0].gpu == "h100_sxm");
  CHECK(r.runs[0].plan == "--framework torchtitan --dp 8 --zero 3 --seq 8192 --global-batch 64 --recompute op");
  CHECK(r.runs[0].measured.tokens_per_s_per_gpu == 5762);
  CHECK(r.runs[0].measured.peak_memory_bytes == doctest::Approx(48.2 * units::kGiB));
  CHECK(r.runs[0].source == "torchtitan log, 2026-11-02");
  CHECK(r.runs[0].plan_loc.line == 8);  // the plan: line, for the command line's diagnostics
  CHECK(r.runs[1].measured.tokens_per_s_per_gpu == 5597.0);  // torchtitan.log, as above
  CHECK(r.runs[2].measured.step_time_s == doctest::Approx(9.9012345));
  CHECK(r.runs[3].measured.step_time_s == doctest::Approx(7.49765));
  CHECK(r.runs[4].measured.step_time_s == doctest::Approx(5.4));
}

TEST_CASE("runs file: CSV has the same fields as columns") {
  const auto r = spec::load_runs(kDir + "runs.csv");
  REQUIRE(r.runs.size() == 2);
  CHECK(r.runs[0].name == "pilot-8xh100");
  CHECK(r.runs[0].plan == "--framework torchtitan --dp 8 --zero 3 --seq 8192 --global-batch 64 --recompute op");
  CHECK(r.runs[0].measured.tokens_per_s_per_gpu == 5762);
  CHECK(r.runs[0].measured.peak_memory_bytes == doctest::Approx(48.2 * units::kGiB));
  CHECK(r.runs[0].source == "torchtitan log, 2026-11-02");
  CHECK(r.runs[0].plan_loc.line == 2);
  CHECK(r.runs[0].plan_loc.col == 33);  // "pilot-8xh100,h100_sxm,llama3_8b," is 32 bytes: the quote opens at 33
  CHECK(r.runs[1].measured.tokens_per_s_per_gpu == 5597.0);
}

TEST_CASE("runs file: every problem is one located line") {
  CHECK(runs_error("r.yaml", one_run("    measured:\n      step_time_s: -1\n")) ==
        "r.yaml:7:20: error: runs[0].measured.step_time_s: expected a step time in seconds such as 1.25, got \"-1\"");
  CHECK(runs_error("r.yaml", one_run("    measured:\n      step_time_s: 2\n      memory_kind: reservd\n")) ==
        "r.yaml:8:20: error: runs[0].measured.memory_kind: expected one of reserved (torch.cuda.max_memory_reserved), "
        "allocated (max_memory_allocated), got \"reservd\"");
  CHECK(runs_error("r.yaml", one_run("    measured:\n      step_time_s: 2\n      memory_kind: allocated\n")) ==
        "r.yaml:8:20: error: runs[0].measured.memory_kind: memory_kind says what peak_memory_gib measured; give "
        "peak_memory_gib too");
  CHECK(runs_error("r.yaml", one_run("    log_format: kineto\n    measured:\n      step_time_s: 2\n")) ==
        "r.yaml:6:17: error: runs[0].log_format: log_format says how to read log: FILE; give log: too");
  CHECK(runs_error("r.yaml", one_run("    log: x.log\n    log_format: nsys\n")) ==
        "r.yaml:7:17: error: runs[0].log_format: expected one of torchtitan, megatron, hf_trainer_state, kineto, got "
        "\"nsys\"");
  CHECK(runs_error("r.yaml", "runs:\n  - name: a\n    model: llama3_8b\n    measured:\n      step_time_s: 2\n") ==
        "r.yaml:2:5: error: runs[0].gpu: missing required field");
  CHECK(runs_error("r.yaml", one_run("    measured:\n      step_time_s: 2\n") +
                                 "  - name: a\n    gpu: h100_sxm\n    model: llama3_8b\n    measured:\n"
                                 "      step_time_s: 3\n") ==
        "r.yaml:8:5: error: runs[1].name: 'a' names an earlier run too; each run needs a name of its own");
  CHECK(runs_error("r.csv", "name,gpu,model,step_time_s\na,h100_sxm,llama3_8b,2,5\n") ==
        "r.csv:2:24: error: 5 cells, but the header names 4 columns");  // "a,h100_sxm,llama3_8b,2," is 23 bytes
  CHECK(runs_error("r.csv", "name,gpu,model,step_time_s,plan\na,h100_sxm,llama3_8b,2,\"--dp 8\n") ==
        "r.csv:2:24: error: malformed CSV: a quoted cell is not closed");  // the quote after 23 bytes
  CHECK(runs_error("r.csv", "name,model,step_time_s\na,llama3_8b,2\n") ==
        "r.csv:1:1: error: gpu: missing required column");
}

TEST_CASE("stack fit: the scale's geometric mean and t-interval, the reserve from reserved memory") {
  calibrate::RunPoint a;
  a.name = "a";
  a.gpu = "h100_sxm";
  a.framework = *spec::find_framework("torchtitan");
  a.predicted_step_s = 10;
  a.measured_step_s = 11;  // x 1.1
  a.predicted_allocated_bytes = 40 * units::kGiB;
  a.prior_reserve = 0.05;
  a.measured_memory_bytes = 44 * units::kGiB;  // reserved / allocated = 1.1
  calibrate::RunPoint b = a;
  b.name = "b";
  b.measured_step_s = 12;  // x 1.2
  b.predicted_allocated_bytes = 50 * units::kGiB;
  b.measured_memory_bytes = 56.5 * units::kGiB;  // 1.13
  calibrate::RunPoint c = a;  // another framework: a stack of its own
  c.name = "c";
  c.framework = *spec::find_framework("megatron");
  c.measured_memory_bytes = 41 * units::kGiB;
  c.memory_kind = spec::MemoryKind::kAllocated;
  const auto cal = calibrate::fit_runs({a, b, c}, "runs.yaml");
  REQUIRE(cal.stacks.size() == 2);
  const auto& s = cal.stacks[0].correction;
  CHECK(s.runs == std::vector<std::string>{"a", "b"});
  // exp(mean(ln 1.1, ln 1.2)) = sqrt(1.32) = 1.148913; sd = (ln 1.2 - ln 1.1) / sqrt(2) = 0.0615263.
  CHECK(s.time_scale == doctest::Approx(1.1489125293076057).epsilon(1e-12));
  CHECK(s.time_log_sd == doctest::Approx(0.06152633470974625).epsilon(1e-12));
  CHECK(s.time_runs == 2);
  // 80% t-interval, 1 degree of freedom: t = tan(0.4 pi) = 3.0776835; exp(ln 1.148913 -+ t sd / sqrt 2).
  CHECK(cal.stacks[0].time_interval_lo == doctest::Approx(1.0049312458137223).epsilon(1e-9));
  CHECK(cal.stacks[0].time_interval_hi == doctest::Approx(1.3135226967006657).epsilon(1e-9));
  // 1 + rho = sqrt(1.1 x 1.13).
  CHECK(s.allocator_reserve == doctest::Approx(0.11489909857349856).epsilon(1e-12));
  CHECK(s.memory_runs == 2);
  CHECK(s.reserve_prior == 0.05);
  // One run, allocated memory only: the scale is its ratio, the reserve keeps its prior and says why.
  const auto& m = cal.stacks[1];
  CHECK(m.correction.time_scale == doctest::Approx(1.1));
  CHECK(m.correction.time_log_sd == 0);
  CHECK_FALSE(m.correction.has_reserve());
  CHECK(m.reserve_note.find("kept at the prior, frameworks/megatron.yaml's 0.05: the runs gave allocated memory "
                            "(max_memory_allocated), which holds no allocator reserve (measured / predicted allocated: "
                            "1.025, 1 run)") != std::string::npos);
  CHECK(m.time_note.find("one run has no spread of its own") != std::string::npos);
}

TEST_CASE("stack fit: a reserve below zero is clamped and said") {
  calibrate::RunPoint a;
  a.name = "a";
  a.gpu = "h100_sxm";
  a.predicted_step_s = 1;
  a.measured_step_s = 1;
  a.predicted_allocated_bytes = 40 * units::kGiB;
  a.measured_memory_bytes = 38 * units::kGiB;
  const auto cal = calibrate::fit_runs({a}, "");
  CHECK(cal.stacks[0].correction.allocator_reserve == 0);
  CHECK(cal.stacks[0].reserve_note.find("clamped at 0 from -0.050") != std::string::npos);  // 38 / 40 - 1
}

TEST_CASE("stack calibration file: written and read back to the same doubles") {
  calibrate::RunPoint a;
  a.name = "pilot: #1";  // a name YAML must quote
  a.gpu = "h100_sxm";
  a.gpu_name = "NVIDIA H100 SXM5 80GB";
  a.framework = *spec::find_framework("torchtitan");
  a.predicted_step_s = 8.94205498315784;
  a.measured_step_s = 10.1;
  a.predicted_allocated_bytes = 42.59 * units::kGiB;
  a.prior_reserve = 0.05;
  a.measured_memory_bytes = 48.2 * units::kGiB;
  calibrate::RunPoint b = a;
  b.name = "second";
  b.measured_step_s = 10.7;
  const auto cal = calibrate::fit_runs({a, b}, "runs.yaml");
  TempFile f("stack.yaml", spec::to_yaml(cal));
  const auto back = spec::load_stack_calibration(f.path.string());
  REQUIRE(back.stacks.size() == 1);
  const auto& x = cal.stacks[0].correction;
  const auto& y = back.stacks[0].correction;
  CHECK(y.gpu == x.gpu);
  CHECK(y.gpu_name == x.gpu_name);
  CHECK(y.framework == x.framework);
  CHECK(y.runs == x.runs);
  CHECK(y.time_scale == x.time_scale);
  CHECK(y.time_log_sd == x.time_log_sd);
  CHECK(y.time_runs == 2);
  CHECK(y.allocator_reserve == x.allocator_reserve);
  CHECK(y.reserve_prior == x.reserve_prior);
  CHECK(back.runs_file == "runs.yaml");
  CHECK(back.stacks[0].residuals.size() == 2);
  CHECK(back.stacks[0].time_interval_lo == cal.stacks[0].time_interval_lo);
  // A misspelt key: located, with a did-you-mean.
  TempFile g("bad.yaml", "schema: ridgeline.stack_calibration/1\nstacks:\n  - gpu: h100_sxm\n    framework: torchtitn\n"
                         "    runs: [a]\n    step_time:\n      scale: 1.1\n      runs: 1\n    allocator_reserve:\n"
                         "      prior: 0.05\n");
  CHECK_THROWS_WITH(spec::load_stack_calibration(g.path.string()),
                    (g.path.string() + ":4:16: error: stacks[0].framework: unknown framework 'torchtitn'; did you "
                                       "mean 'torchtitan'? (known: " + spec::framework_choices() + ")")
                        .c_str());
}

TEST_CASE("engine: a stack scales the step time and replaces the allocator reserve of its framework only") {
  const auto m = test::model("llama3_8b");
  auto hw = test::gpu("h100_sxm");
  spec::PlanSpec p = test::plan(1, 4096);
  p.global_batch = 64;
  p.parallel.dp = 8;
  p.parallel.zero = 3;
  p.framework = *spec::find_framework("torchtitan");
  const auto before = engine::evaluate(m, p, hw);
  spec::StackCorrection s;
  s.gpu = hw.id;
  s.framework = p.framework;
  s.time_scale = 1.15;
  s.time_runs = 1;
  s.allocator_reserve = 0.2;
  hw.stacks.push_back(s);
  const auto after = engine::evaluate(m, p, hw);
  CHECK(after.step.time_s == doctest::Approx(before.step.time_s * 1.15).epsilon(1e-12));
  CHECK(after.step.tokens_per_s == doctest::Approx(before.step.tokens_per_s / 1.15).epsilon(1e-12));
  CHECK(after.memory.allocated == before.memory.allocated);
  CHECK(after.memory.reserved == doctest::Approx(before.memory.allocated * 1.2).epsilon(1e-12));
  // Megatron on the same GPU: no stack of its own, no change.
  spec::PlanSpec q = p;
  q.framework = *spec::find_framework("megatron");
  auto bare = test::gpu("h100_sxm");
  CHECK(engine::evaluate(m, q, hw).step.time_s == engine::evaluate(m, q, bare).step.time_s);
}

TEST_CASE("intervals: anchored on a stack's runs") {
  const auto m = test::model("llama3_8b");
  auto hw = test::gpu("h100_sxm");
  spec::PlanSpec p = test::plan(1, 4096);
  p.global_batch = 64;
  p.parallel.dp = 8;
  p.parallel.zero = 3;
  const auto& model = uncertainty::shipped();
  REQUIRE_FALSE(model.empty());
  const auto pred = engine::evaluate(m, p, hw);
  const auto unanchored = model.run_interval(uncertainty::traits_of(pred, p, hw), 0.8);
  REQUIRE(unanchored.valid());
  spec::StackCorrection s;
  s.gpu = hw.id;
  s.framework = p.framework;
  s.runs = {"a", "b", "c"};
  s.time_runs = 3;
  s.time_log_sd = 0.2;  // above any pool's within-source spread
  hw.stacks.push_back(s);
  auto iv = model.run_interval(uncertainty::traits_of(pred, p, hw), 0.8);
  CHECK(iv.anchored);
  CHECK(iv.rows == 3);
  CHECK(iv.pool == "anchored on 3 runs (a, b, c)");
  // The prior of uncertainty/scale_prior.hpp from the same residuals (tested by hand in scale_prior_test).
  const auto prior = uncertainty::scale_prior(model.rows());
  REQUIRE(prior.valid());
  REQUIRE(prior.sigma_w < 0.2);
  const double z = uncertainty::normal_quantile(0.9);
  // Three runs: weighed with their own sd 0.2; posterior sd 1 / sqrt(1/tau^2 + 3 / 0.04); a new run's
  // scatter the runs' own 0.2 (above sigma_w): half = z sqrt(post_sd^2 + 0.04).
  const double post_sd = 1 / std::sqrt(1 / (prior.tau * prior.tau) + 3 / 0.04);
  const double half = z * std::sqrt(post_sd * post_sd + 0.04);
  CHECK(iv.lo == doctest::Approx(std::exp(-half)).epsilon(1e-9));
  CHECK(iv.hi == doctest::Approx(std::exp(half)).epsilon(1e-9));
  CHECK(iv.widened.empty());  // no GPU count or model size recorded for the runs: no distance
  // Runs that agree exactly: the scale is known (posterior sd 0); a new run scatters as a published
  // source's runs do, sigma_w.
  hw.stacks[0].time_log_sd = 0.0;
  iv = model.run_interval(uncertainty::traits_of(pred, p, hw), 0.8);
  CHECK(iv.hi == doctest::Approx(std::exp(z * prior.sigma_w)).epsilon(1e-9));
  // One run: weighed with sigma_w; posterior sd 1 / sqrt(1/tau^2 + 1/sigma_w^2), plus a new run's sigma_w.
  hw.stacks[0].time_runs = 1;
  hw.stacks[0].runs = {"a"};
  iv = model.run_interval(uncertainty::traits_of(pred, p, hw), 0.8);
  CHECK(iv.pool == "anchored on 1 run (a)");
  const double sw2 = prior.sigma_w * prior.sigma_w;
  const double one = 1 / (1 / (prior.tau * prior.tau) + 1 / sw2) + sw2;
  CHECK(iv.hi == doctest::Approx(std::exp(z * std::sqrt(one))).epsilon(1e-9));
  CHECK(iv.lo == doctest::Approx(std::exp(-z * std::sqrt(one))).epsilon(1e-9));
  // The run on 1 GPU of an 8-GPU plan, the same model: 3 doublings away, + 3 beta of variance.
  hw.stacks[0].gpus_lo = hw.stacks[0].gpus_hi = 1;
  hw.stacks[0].params_lo = hw.stacks[0].params_hi = pred.params.total;
  const auto growth = uncertainty::distance_growth(model.rows());
  REQUIRE(growth.beta > 0);
  iv = model.run_interval(uncertainty::traits_of(pred, p, hw), 0.8);
  CHECK(iv.hi == doctest::Approx(std::exp(z * std::sqrt(one + 3 * growth.beta))).epsilon(1e-9));
  CHECK(iv.widened.find("3.0 doublings of GPU count and 0.0 of model size beyond the calibration runs'") !=
        std::string::npos);
}
