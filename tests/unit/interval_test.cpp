// Prediction intervals (uncertainty/interval.hpp) and their coverage
// (validation/coverage.hpp): the random-effects bounds against hand
// calculations, the pool fallback, containment of the point estimate,
// widening with the level, the residual file's located errors, the
// freshness of validation/residuals.json and the out-of-sample coverage of
// the 80% interval on the repository's published rows.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/memory/memory.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/published.hpp"
#include "ridgeline/support/diagnostics.hpp"
#include "ridgeline/uncertainty/interval.hpp"
#include "ridgeline/validation/coverage.hpp"
#include "ridgeline/validation/published.hpp"
#include "test_support.hpp"

using namespace ridgeline;
using uncertainty::Interval;
using uncertainty::IntervalModel;
using uncertainty::Residual;
using uncertainty::RunTraits;

namespace {

const std::string kPublished = std::string(RIDGELINE_SOURCE_DIR) + "/validation/published.yaml";

/// A training-run residual of `group` with traits `t`.
Residual run_row(const std::string& group, const RunTraits& t, double r) {
  Residual x;
  x.id = group + "_" + std::to_string(r);
  x.group = group;
  x.run = t;
  x.log_residual = r;
  return x;
}

RunTraits traits(std::uint8_t fw, spec::Generation g, long long gpus, double params) {
  RunTraits t;
  t.framework = fw;
  t.generation = g;
  t.gpus = gpus;
  t.params = params;
  return t;
}

/// Two sources of fsdp runs on Ampere at 7B parameters. A: 10 runs at 8
/// GPUs with r = 0.08, 10 at 16 GPUs with r = 0.12 (mean 0.10, slope +0.04
/// per doubling of GPUs); B: -0.08 at 8 GPUs, -0.12 at 16 (mean -0.10,
/// slope -0.04).
std::vector<Residual> scale_rows(std::uint8_t fsdp) {
  std::vector<Residual> rows;
  for (int i = 0; i < 10; ++i) {
    rows.push_back(run_row("A", traits(fsdp, spec::Generation::kAmpere, 8, 7e9), 0.08));
    rows.push_back(run_row("A", traits(fsdp, spec::Generation::kAmpere, 16, 7e9), 0.12));
    rows.push_back(run_row("B", traits(fsdp, spec::Generation::kAmpere, 8, 7e9), -0.08));
    rows.push_back(run_row("B", traits(fsdp, spec::Generation::kAmpere, 16, 7e9), -0.12));
  }
  return rows;
}

validation::PublishedOptions options() {
  validation::PublishedOptions o;
  o.profiles_dir = std::string(RIDGELINE_SOURCE_DIR) + "/hardware_profiles";
  return o;
}

/// The out-of-sample residuals of the repository's published rows, computed once.
const std::vector<Residual>& fresh_residuals() {
  static const std::vector<Residual> r = [] {
    const auto logo = validation::leave_one_group_out(spec::load_published(kPublished), options());
    return validation::residuals_of(logo.left_out_rows);
  }();
  return r;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() / name;
  std::ofstream(p) << text;
  return p.string();
}

}  // namespace

TEST_CASE("intervals: the standard normal quantile") {
  // Abramowitz and Stegun, Table 26.5: z(0.975) = 1.959964, z(0.9) = 1.281552, z(0.75) = 0.674490.
  CHECK(uncertainty::normal_quantile(0.975) == doctest::Approx(1.959964).epsilon(1e-6));
  CHECK(uncertainty::normal_quantile(0.9) == doctest::Approx(1.281552).epsilon(1e-6));
  CHECK(uncertainty::normal_quantile(0.75) == doctest::Approx(0.674490).epsilon(1e-6));
  CHECK(uncertainty::normal_quantile(0.5) == doctest::Approx(0.0));
}

TEST_CASE("intervals: random-effects bounds by hand") {
  // mu 0.1, s_w 0.03, s_b 0.04: s = 0.05; at 80% the half-width is 1.281552 x 0.05 = 0.0640776.
  double lo = 0, hi = 0;
  uncertainty::random_effects_bounds(0.1, 0.03, 0.04, 0.8, lo, hi);
  CHECK(lo == 0.0);  // 0.1 - 0.064 = 0.036 > 0: widened to hold the point estimate
  CHECK(hi == doctest::Approx(0.1640776).epsilon(1e-6));
  uncertainty::random_effects_bounds(0.0, 0.03, 0.04, 0.95, lo, hi);
  CHECK(lo == doctest::Approx(-0.0979982).epsilon(1e-5));  // 1.959964 x 0.05
  CHECK(hi == doctest::Approx(0.0979982).epsilon(1e-5));
}

TEST_CASE("intervals: a pool's mean, within- and between-source spread by hand") {
  // Source A: 20 rows, r = 0.10 +- 0.02 alternating (mean 0.10, within SS 20 x 0.0004 = 0.008).
  // Source B: 20 rows, r = -0.10 +- 0.02 (mean -0.10, within SS 0.008).
  // s_w^2 = 0.016 / (40 - 2); s_b = sd(0.10, -0.10) = 0.141421; mu = 0. A new run's source offset is
  // predicted from k = 2 source means: s_b sqrt(1 + 1/2) t_1(0.9) / z(0.9), t_1(0.9) = tan(0.4 pi) =
  // 3.0776835 (Cauchy), z(0.9) = 1.2815516.
  const RunTraits t = traits(0, spec::Generation::kAmpere, 8, 7e9);
  std::vector<Residual> rows;
  for (int i = 0; i < 20; ++i) {
    rows.push_back(run_row("A", t, 0.10 + (i % 2 ? 0.02 : -0.02)));
    rows.push_back(run_row("B", t, -0.10 + (i % 2 ? 0.02 : -0.02)));
  }
  const IntervalModel m(rows);
  const Interval iv = m.run_interval(t, 0.8);
  REQUIRE(iv.valid());
  CHECK(iv.rows == 40);
  CHECK_FALSE(iv.fallback);
  const double sb = 0.141421356 * std::sqrt(1.5) * 3.0776835 / 1.2815516;
  const double s = std::sqrt(0.016 / 38 + sb * sb);
  const double half = 1.2815516 * s;
  CHECK(iv.lo == doctest::Approx(std::exp(-half)).epsilon(1e-6));
  CHECK(iv.hi == doctest::Approx(std::exp(half)).epsilon(1e-6));
  CHECK(iv.time_lo(2.0) == doctest::Approx(2.0 * iv.lo));
  CHECK(iv.rate_hi(100.0) == doctest::Approx(100.0 / iv.lo));

  // Source B left out: A alone is left, and one source's offset is its own,
  // not the stack's (kMinPoolSources): no pool, no interval, and the note says so.
  const Interval a = m.run_interval(t, 0.8, "B");
  CHECK_FALSE(a.valid());
  CHECK(a.note == "fewer than 20 validated training runs from two or more sources to draw an interval from");
}

TEST_CASE("intervals: outside what was validated the spread widens, by hand") {
  const std::uint8_t fsdp = spec::find_framework("fsdp").value();
  const std::uint8_t megatron = spec::find_framework("megatron").value();
  // s_b = sd(0.10, -0.10) = 0.1414214; the slopes' spread sd(0.04, -0.04)
  // = 0.0565685 per doubling (scale_rows).
  const IntervalModel m(scale_rows(fsdp));
  const double z = 1.2815516, sb = 0.1414214;
  const double sb_new = sb * std::sqrt(1.5) * 3.0776835 / z;  // a new source's offset from k = 2 means
  // Inside: fsdp on Ampere at 8 GPUs, 7B: the 20 runs at 8 GPUs (pool
  // means 0.08, -0.08: mu 0, no within spread). Nothing added.
  const Interval in = m.run_interval(traits(fsdp, spec::Generation::kAmpere, 8, 7e9), 0.8);
  REQUIRE(in.valid());
  CHECK(in.widened.empty());
  CHECK(in.hi == doctest::Approx(std::exp(z * sb_new)).epsilon(1e-6));

  // 64 GPUs: 2 doublings above the validated 16 (pool: the 16-GPU runs, means
  // 0.12 and -0.12, mu 0): + (0.0565685 x 2)^2 = 0.0128.
  const Interval far = m.run_interval(traits(fsdp, spec::Generation::kAmpere, 64, 7e9), 0.8);
  REQUIRE(far.valid());
  const double sd_far = std::sqrt(sb_new * sb_new + 0.0128);
  CHECK(far.hi == doctest::Approx(std::exp(z * sd_far)).epsilon(1e-6));
  CHECK(far.lo == doctest::Approx(std::exp(-z * sd_far)).epsilon(1e-6));
  CHECK(far.widened == "widened (sd +0.113): 64 GPUs is 2.0 doublings outside the validated 8-16: + 0.057 per doubling");

  // A framework no validated run used: one more source's offset, + s_b^2 = 0.02
  // (pool: every Ampere run, mu 0, within-source variance 4 x 10 x 0.02^2 / 38).
  const Interval other = m.run_interval(traits(megatron, spec::Generation::kAmpere, 8, 7e9), 0.8);
  REQUIRE(other.valid());
  CHECK(other.fallback);
  const double sd_other = std::sqrt(0.016 / 38 + sb_new * sb_new + sb * sb);
  CHECK(other.hi == doctest::Approx(std::exp(z * sd_other)).epsilon(1e-6));
  CHECK(other.widened.find("framework megatron has no validated runs") != std::string::npos);

  // A generation no validated run used, and a model 8 doublings beyond the
  // validated 7B: the size slope is 0 here (every run at 7B spans no
  // doubling, so no source gives a slope), the generation adds s_b^2.
  const Interval hopper = m.run_interval(traits(fsdp, spec::Generation::kHopper, 8, 7e9 * 256), 0.8);
  REQUIRE(hopper.valid());
  CHECK(hopper.widened.find("no validated runs on Hopper") != std::string::npos);
  CHECK(hopper.widened.find("parameters") == std::string::npos);
}

TEST_CASE("intervals: an anchored interval widens with the distance from the calibration runs, by hand") {
  const std::uint8_t fsdp = spec::find_framework("fsdp").value();
  // scale_rows: sources A and B, 20 runs each, 10 at 8 GPUs and 10 at 16 of a 7B model, at 0.08 and 0.12
  // (B: -0.08, -0.12). The prior (uncertainty/scale_prior.hpp): within, sums of squares 2 x 20 x 0.02^2 =
  // 0.016 over 40 - 2 degrees of freedom, sigma_w^2 = 0.000421053; the means 0.1 and -0.1 vary by 0.02,
  // less 0.000421053 / 20: tau^2 = 0.0199789. Distance growth: in each source 90 pairs at d 0 with y 0
  // and 100 at d 1 (8 -> 16 GPUs) with y = 0.04^2 / 2 = 0.0008: beta = 0.0008 per doubling.
  const IntervalModel m(scale_rows(fsdp));
  const double sw2 = 0.016 / 38, tau2 = 0.02 - sw2 / 20;
  // Two calibration runs at 8 and 16 GPUs of a 7B model, sd of ln(measured / predicted) 0.05.
  spec::StackCorrection s;
  s.framework = fsdp;
  s.runs = {"x", "y"};
  s.time_runs = 2;
  s.time_log_sd = 0.05;
  s.gpus_lo = 8, s.gpus_hi = 16, s.params_lo = 7e9, s.params_hi = 7e9;
  RunTraits t = traits(fsdp, spec::Generation::kAmpere, 16, 7e9);
  t.stack = &s;
  // Inside the runs' range: two runs are weighed with sigma_w, posterior variance 1 / (1/tau^2 + 2/sigma_w^2)
  // = 0.000208331; a new run adds sigma_w^2: half = z sqrt(0.000629384) = z x 0.0250876.
  const double z = 1.2815516, post = 1 / (1 / tau2 + 2 / sw2);
  const Interval in = m.run_interval(t, 0.8);
  REQUIRE(in.anchored);
  CHECK(in.widened.empty());
  CHECK(in.hi == doctest::Approx(std::exp(z * std::sqrt(post + sw2))).epsilon(1e-6));
  CHECK(in.note.find("runs weighted 0.99 against the prior: tau 0.141, sigma_w 0.021") != std::string::npos);
  // 64 GPUs: 2 doublings beyond the runs' 16, + 2 x 0.0008 = 0.0016 in log variance.
  t.gpus = 64;
  const Interval far = m.run_interval(t, 0.8);
  CHECK(far.hi == doctest::Approx(std::exp(z * std::sqrt(post + sw2 + 0.0016))).epsilon(1e-6));
  CHECK(far.lo == doctest::Approx(std::exp(-z * std::sqrt(post + sw2 + 0.0016))).epsilon(1e-6));
  CHECK(far.widened == "widened (sd +0.040): 2.0 doublings of GPU count and 0.0 of model size beyond the "
                       "calibration runs', + 0.00080 variance per doubling (within-source pairs of published runs)");
  // A file written without the runs' range: no widening.
  s.gpus_lo = s.gpus_hi = s.params_lo = s.params_hi = 0;
  CHECK(m.run_interval(t, 0.8).widened.empty());
}

TEST_CASE("intervals: a run with no comparable pool falls back and says so") {
  // 25 Hopper runs under fsdp; a megatron run on Hopper has none of its kind.
  std::vector<Residual> rows;
  for (int i = 0; i < 25; ++i)
    rows.push_back(run_row("S" + std::to_string(i % 3), traits(spec::find_framework("fsdp").value(),
                                                                spec::Generation::kHopper, 8, 7e9),
                           -0.2 + 0.01 * i));
  const IntervalModel m(rows);
  const Interval iv = m.run_interval(traits(0, spec::Generation::kHopper, 16, 30e9), 0.8);
  REQUIRE(iv.valid());
  CHECK(iv.fallback);
  CHECK(iv.rows == 25);
  CHECK(iv.pool == "all Hopper runs");
  CHECK(iv.note ==
        "fewer than 20 validated training runs from two or more sources like this one (megatron on Hopper, "
        "compute-bound, 9-64 GPUs, 20-100B parameters): interval from all Hopper runs, 25 rows");

  // A Blackwell run: nothing of its generation either, so every end-to-end run.
  const Interval b = m.run_interval(traits(0, spec::Generation::kBlackwell, 8, 7e9), 0.8);
  CHECK(b.fallback);
  CHECK(b.pool == "all end-to-end runs");

  // No kernel rows at all: no interval, and the note says why.
  uncertainty::KernelTraits k;
  const Interval none = m.kernel_interval(k, 0.8);
  CHECK_FALSE(none.valid());
  CHECK(none.note == "fewer than 20 validated kernels to draw an interval from");

  // An empty model says where it looked.
  const Interval empty = IntervalModel().run_interval(traits(0, spec::Generation::kHopper, 8, 7e9), 0.8);
  CHECK_FALSE(empty.valid());
  CHECK(empty.note.find("residuals.json not found") != std::string::npos);
}

TEST_CASE("intervals: the shipped intervals hold the point estimate and widen with the level") {
  const IntervalModel& m = uncertainty::shipped();
  REQUIRE_FALSE(m.empty());
  for (const auto& x : m.rows()) {
    Interval prev;
    for (double level : {0.5, 0.6, 0.8, 0.9, 0.95, 0.99}) {
      const Interval iv = x.kernel ? m.kernel_interval(x.kernel_traits, level) : m.run_interval(x.run, level);
      REQUIRE(iv.valid());
      CHECK(iv.lo <= 1.0);
      CHECK(iv.hi >= 1.0);
      CHECK(std::isfinite(iv.lo));
      CHECK(std::isfinite(iv.hi));
      if (prev.valid()) {
        CHECK(iv.pool == prev.pool);  // the pool does not depend on the level
        CHECK(iv.lo <= prev.lo);
        CHECK(iv.hi >= prev.hi);
      }
      prev = iv;
    }
  }
}

TEST_CASE("intervals: a shipped prediction's interval names its pool") {
  // MPT-7B-like: llama3_8b under fsdp on 8 H100s: the llm-foundry H100 rows are its pool.
  const auto gpu = test::gpu("h100_sxm");
  const auto model = test::model("llama3_8b");
  spec::PlanSpec p = test::plan(2, 2048);
  p.framework = spec::find_framework("fsdp").value();
  p.parallel.dp = 8;
  p.parallel.zero = 3;
  p.global_batch = 16;
  const auto pred = engine::evaluate(model, p, gpu);
  REQUIRE(pred.status == engine::Status::kOk);
  const RunTraits t = uncertainty::traits_of(pred, p, gpu);
  CHECK(t.gpus == 8);
  CHECK(t.generation == spec::Generation::kHopper);
  const Interval iv = uncertainty::shipped().run_interval(t, 0.8);
  REQUIRE(iv.valid());
  // The fsdp Hopper rows are llm-foundry's alone: one source, whose offset
  // (Ridgeline predicts its H100 runs about 13% fast) is its own, not every
  // fsdp stack's. The interval draws on every Hopper run (llm-foundry, NeMo,
  // the Megatron-LM README: three sources) and brackets the point estimate.
  CHECK(iv.pool == "all Hopper runs");
  CHECK(iv.fallback);
  CHECK(iv.lo < 0.95);
  CHECK(iv.hi > 1.05);
}

TEST_CASE("intervals: levels outside 0.5 to 0.99 are refused") {
  std::string why;
  CHECK(uncertainty::valid_level(0.8, why));
  CHECK_FALSE(uncertainty::valid_level(0.3, why));
  CHECK(why == "expected a level from 0.5 to 0.99 (0.8 = an 80% interval), got 0.3");
  CHECK_FALSE(uncertainty::valid_level(1.0, why));
  CHECK_FALSE(uncertainty::valid_level(std::nan(""), why));
}

TEST_CASE("intervals: peak memory's interval by hand") {
  memory::MemoryResult m;
  m.allocated = 60e9;
  m.allocator_reserve = 0.10;
  m.workspace = 1e9;
  m.total = 60e9 * 1.10 + 1e9;  // 67 GB: reserved + workspace
  m.capacity = 70e9;
  const auto iv = uncertainty::memory_interval(m);
  CHECK(iv.lo == doctest::Approx(61e9));
  CHECK(iv.point == doctest::Approx(67e9));
  CHECK(iv.hi == doctest::Approx(60e9 * 1.20 + 1e9));  // 73 GB
  CHECK(iv.fits_point);
  CHECK_FALSE(iv.fits_high);  // fits only at the point estimate
}

TEST_CASE("intervals: the residual file's errors are located") {
  // One field per line, so the lines below are the fields': dominant is on
  // line 11, log_residual on line 12.
  const std::string ok =
      "{\n  \"source\": \"x\",\n  \"rows\": [\n    {\"id\": \"a\",\n     \"group\": \"g\",\n"
      "     \"kind\": \"training\",\n     \"framework\": \"fsdp\",\n     \"generation\": \"hopper\",\n"
      "     \"gpus\": 8,\n     \"params\": 7e9,\n     \"dominant\": \"compute\",\n     \"log_residual\": -0.1}\n"
      "  ]\n}\n";
  const auto m = uncertainty::load_residuals(write_temp("ridgeline_res_ok.json", ok));
  REQUIRE(m.rows().size() == 1);
  CHECK(m.rows()[0].run.gpus == 8);
  CHECK(m.rows()[0].log_residual == doctest::Approx(-0.1));

  auto error_of = [](const std::string& text) {
    try {
      uncertainty::load_residuals(write_temp("ridgeline_res_bad.json", text));
    } catch (const support::SpecError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string bad_dom = error_of(test::edited(ok, "\"dominant\": \"compute\"", "\"dominant\": \"gemm\""));
  CHECK(bad_dom.find(":11:") != std::string::npos);
  CHECK(bad_dom.find("rows[0].dominant") != std::string::npos);
  const std::string unknown =
      error_of(test::edited(ok, "     \"log_residual\"", "     \"colour\": \"red\", \"log_residual\""));
  CHECK(unknown.find(":12:") != std::string::npos);
  CHECK(unknown.find("unknown key 'colour'") != std::string::npos);
  const std::string fw = error_of(test::edited(ok, "\"framework\": \"fsdp\"", "\"framework\": \"jax\""));
  CHECK(fw.find("rows[0].framework") != std::string::npos);
  // The file is mapped, not read: the checks read_text_file makes still apply.
  CHECK(error_of(test::edited(ok, "\"x\"", std::string("\"x\0\"", 4))).find("not a text file (contains a NUL byte)") !=
        std::string::npos);
  const std::string empty = error_of("");
  CHECK(empty.find("file is empty") != std::string::npos);
  // A row that is not an object, and a second row's error after the file's own.
  const std::string rows = error_of(test::edited(ok, "  ]\n}", "  , 7]\n}"));
  CHECK(rows.find("rows[1]: expected a mapping of fields") != std::string::npos);
}

TEST_CASE("intervals: write_residuals' file reads back row for row") {
  Residual odd = run_row("g", traits(0, spec::Generation::kHopper, 8, 7e9), -0.125);
  odd.id = "a\"b\\c";  // a quote and a backslash, escaped as JSON does
  Residual kernel;
  kernel.id = "k1";
  kernel.group = "k";
  kernel.kernel = true;
  kernel.kernel_traits = {uncertainty::KernelKind::kGemm, spec::Generation::kHopper, spec::Dtype::kFp16};
  kernel.log_residual = 0.25;
  const IntervalModel m = uncertainty::load_residuals(
      write_temp("ridgeline_res_round_trip.json", uncertainty::write_residuals({odd, kernel}, "published.yaml")));
  CHECK(m.source() == "published.yaml");
  REQUIRE(m.rows().size() == 2);
  CHECK(m.rows()[0].id == odd.id);
  CHECK(m.rows()[0].group == "g");
  CHECK_FALSE(m.rows()[0].kernel);
  CHECK(m.rows()[0].run.gpus == 8);
  CHECK(m.rows()[0].run.params == 7e9);
  CHECK(m.rows()[0].log_residual == -0.125);
  CHECK(m.rows()[1].kernel);
  CHECK(m.rows()[1].kernel_traits.kind == uncertainty::KernelKind::kGemm);
  CHECK(m.rows()[1].kernel_traits.generation == spec::Generation::kHopper);
  CHECK(m.rows()[1].kernel_traits.dtype == spec::Dtype::kFp16);
  CHECK(m.rows()[1].log_residual == 0.25);
}

TEST_CASE("intervals: validation/residuals.json is what the published rows give now") {
  // scripts/accuracy_table.sh writes it; a change to the cost model that
  // moves a residual without regenerating it fails here.
  const auto& fresh = fresh_residuals();
  const auto& shipped = uncertainty::shipped().rows();
  REQUIRE(fresh.size() == shipped.size());
  for (size_t i = 0; i < fresh.size(); ++i) {
    CHECK(fresh[i].id == shipped[i].id);
    CHECK(fresh[i].log_residual == doctest::Approx(shipped[i].log_residual).epsilon(1e-5));
  }
}

TEST_CASE("intervals: the 80% interval covers 75-85% of published runs out of sample, 60% in each generation and group") {
  const auto rep = validation::coverage_of(fresh_residuals(), {0.5, 0.8, 0.95});
  REQUIRE(rep.levels.size() == 3);
  CHECK(rep.overall.rows == rep.end_to_end.rows + rep.kernels.rows);
  CHECK(rep.overall.rows > 300);
  MESSAGE("80% coverage: all " << rep.overall.covered[1] << ", end-to-end " << rep.end_to_end.covered[1]
                               << ", kernels " << rep.kernels.covered[1]);
  CHECK(rep.overall.covered[1] >= 0.70);
  CHECK(rep.overall.covered[1] <= 0.90);
  CHECK(rep.end_to_end.covered[1] >= 0.75);
  CHECK(rep.end_to_end.covered[1] <= 0.85);
  for (const auto& g : rep.by_generation) {
    if (g.rows == 0) continue;
    CAPTURE(g.name);
    CHECK(g.covered[1] >= 0.60);
  }
  for (const auto& f : rep.by_framework) {
    if (f.rows == 0) continue;
    CAPTURE(f.name);
    CHECK(f.covered[1] >= 0.60);
  }
  // Per source group: the groups split the end-to-end rows, each once.
  int group_rows = 0;
  for (const auto& g : rep.by_group) {
    CAPTURE(g.name);
    CHECK(g.rows > 0);
    CHECK(g.covered[1] >= 0.60);
    group_rows += g.rows;
  }
  CHECK(group_rows == rep.end_to_end.rows);
  CHECK(rep.by_group.size() >= 5);
  // Wider levels cover no fewer rows, with wider intervals.
  for (const auto* l : {&rep.overall, &rep.end_to_end, &rep.kernels}) {
    CHECK(l->covered[0] <= l->covered[1]);
    CHECK(l->covered[1] <= l->covered[2]);
    CHECK(l->median_width_pct[0] <= l->median_width_pct[1]);
    CHECK(l->median_width_pct[1] <= l->median_width_pct[2]);
  }
}

TEST_CASE("intervals: coverage per source group, each group's rows against the other groups' pools") {
  // Groups A and B scatter +-0.05 about the prediction; C's runs are all
  // e^1 = 2.7x slower than predicted. C's intervals come from A's and B's
  // residuals alone (spread 0.05), so none of C's runs is inside its 80%
  // interval; the groups come out in the residuals' order, 4 rows each.
  const auto t = traits(0, spec::Generation::kAmpere, 8, 7e9);
  std::vector<Residual> rows;
  for (const std::string g : {"A", "B"})
    for (double r : {-0.05, -0.02, 0.02, 0.05}) rows.push_back(run_row(g, t, r));
  for (int i = 0; i < 4; ++i) rows.push_back(run_row("C", t, 1.0 + 0.01 * i));
  const auto rep = validation::coverage_of(rows, {0.8});
  REQUIRE(rep.by_group.size() == 3);
  CHECK(rep.by_group[0].name == "A");
  CHECK(rep.by_group[1].name == "B");
  CHECK(rep.by_group[2].name == "C");
  for (const auto& g : rep.by_group) CHECK(g.rows == 4);
  CHECK(rep.by_group[2].covered[0] == 0.0);
  CHECK(rep.end_to_end.rows == 12);
}

TEST_CASE("intervals: calibration replaces the kernel-level spread and keeps the rest") {
  // Training runs on Ampere: sources A, B (40 rows, s_w^2 = 0.016/38, s_b = 0.141421 predicted for a new
  // source as above, mu 0).
  const RunTraits t = traits(0, spec::Generation::kAmpere, 8, 7e9);
  std::vector<Residual> rows;
  for (int i = 0; i < 20; ++i) {
    rows.push_back(run_row("A", t, 0.10 + (i % 2 ? 0.02 : -0.02)));
    rows.push_back(run_row("B", t, -0.10 + (i % 2 ? 0.02 : -0.02)));
  }
  // GEMM kernels on Ampere: sources K1, K2, 20 rows each at +-0.05 around +-0.05:
  // s_w^2 = 40 x 0.0025 / 38, s_b = sd(0.05, -0.05) = 0.0707107.
  for (int i = 0; i < 20; ++i)
    for (const auto& [g, m] : {std::pair{"K1", 0.05}, std::pair{"K2", -0.05}}) {
      Residual x;
      x.id = std::string(g) + std::to_string(i);
      x.group = g;
      x.kernel = true;
      x.kernel_traits = {uncertainty::KernelKind::kGemm, spec::Generation::kAmpere, spec::Dtype::kBf16};
      x.log_residual = m + (i % 2 ? 0.05 : -0.05);
      rows.push_back(x);
    }
  const IntervalModel model(rows);
  spec::CalibrationSpec cal;
  cal.present = true;
  cal.measurements = "m.json";
  cal.heldout = {{"gemm", 6, 0.01, 0.02}};

  const double sb = 0.141421356 * std::sqrt(1.5) * 3.0776835 / 1.2815516;
  const double total = std::sqrt(0.016 / 38 + sb * sb);
  const double kernel = std::sqrt(0.1 / 38 + 0.005);  // kernel pools: the normal quantile, no t factor
  const double rest = std::sqrt(total * total - kernel * kernel);
  const double sd = std::hypot(rest, 0.02);
  RunTraits tc = t;
  tc.calibration = &cal;
  const Interval plain = model.run_interval(t, 0.8), calibrated = model.run_interval(tc, 0.8);
  REQUIRE(calibrated.valid());
  CHECK(calibrated.calibrated);
  CHECK_FALSE(plain.calibrated);
  CHECK(calibrated.hi == doctest::Approx(std::exp(1.2815516 * sd)).epsilon(1e-6));  // mu 0: symmetric
  CHECK(calibrated.lo == doctest::Approx(std::exp(-1.2815516 * sd)).epsilon(1e-6));
  CHECK(calibrated.hi < plain.hi);
  CHECK(calibrated.calibration_note.find("communication, framework and clock effects") != std::string::npos);

  // A calibrated GEMM: the held-out records alone, mu 0.01 -+ 1.2816 x 0.02, widened to hold 0.
  uncertainty::KernelTraits k{uncertainty::KernelKind::kGemm, spec::Generation::kAmpere, spec::Dtype::kBf16, &cal};
  const Interval g = model.kernel_interval(k, 0.8);
  REQUIRE(g.valid());
  CHECK(g.calibrated);
  CHECK(g.rows == 6);
  CHECK(g.lo == doctest::Approx(std::exp(-(0.01 + 1.2815516 * 0.02))).epsilon(1e-6));
  CHECK(g.hi == doctest::Approx(std::exp(-(0.01 - 1.2815516 * 0.02))).epsilon(1e-6));
  // No held-out attention records: an attention kernel keeps the published pools.
  k.kind = uncertainty::KernelKind::kAttention;
  CHECK_FALSE(model.kernel_interval(k, 0.8).calibrated);
}

TEST_CASE("intervals: Student's t quantile against its closed forms and tables") {
  // nu = 1 (Cauchy): tan(pi (p - 1/2)); nu = 2: (2p - 1) / sqrt(2 p (1 - p)); nu = 10 at 0.975: 2.228139
  // (tables); a large nu tends to the normal quantile.
  CHECK(uncertainty::student_t_quantile(0.9, 1) == doctest::Approx(std::tan(0.4 * M_PI)).epsilon(1e-5));
  CHECK(uncertainty::student_t_quantile(0.75, 1) == doctest::Approx(1.0).epsilon(1e-5));
  CHECK(uncertainty::student_t_quantile(0.9, 2) == doctest::Approx(0.8 / std::sqrt(2 * 0.9 * 0.1)).epsilon(1e-5));
  CHECK(uncertainty::student_t_quantile(0.975, 10) == doctest::Approx(2.228139).epsilon(1e-5));
  CHECK(uncertainty::student_t_quantile(0.1, 3) == doctest::Approx(-1.637744).epsilon(1e-5));
  CHECK(uncertainty::student_t_quantile(0.9, 1e6) == doctest::Approx(uncertainty::normal_quantile(0.9)).epsilon(1e-4));
  // nu = 3 and 4 have closed-form CDFs (the quantile is searched on the
  // incomplete beta function, not on these): with x = t / sqrt(nu),
  // F_3(t) = 1/2 + (x / (1 + x^2) + atan x) / pi, and
  // F_4(t) = 1/2 + (3/8) (t / sqrt(1 + t^2/4)) (1 - t^2 / (12 (1 + t^2/4))).
  for (const double p : {0.6, 0.9, 0.975, 0.995}) {
    const double t3 = uncertainty::student_t_quantile(p, 3), x = t3 / std::sqrt(3.0);
    CHECK(0.5 + (x / (1 + x * x) + std::atan(x)) / M_PI == doctest::Approx(p).epsilon(1e-12));
    const double t4 = uncertainty::student_t_quantile(p, 4), r = 1 + t4 * t4 / 4;
    CHECK(0.5 + 0.375 * (t4 / std::sqrt(r)) * (1 - t4 * t4 / (12 * r)) == doctest::Approx(p).epsilon(1e-12));
  }
}

TEST_CASE("intervals: each interval says how often intervals drawn its way held out of sample") {
  // The same count as the coverage table's (validation::coverage_of, its own
  // loop over the rows): every validated training run given its interval
  // with its own source left out, the share whose measurement lies inside.
  const IntervalModel& m = uncertainty::shipped();
  REQUIRE_FALSE(m.empty());
  const auto table = validation::coverage_of(m.rows(), {0.8});
  const auto runs = m.held_out_coverage(0.8, false);
  CHECK(runs.rows == table.end_to_end.rows);
  CHECK(runs.covered == doctest::Approx(table.end_to_end.covered[0]));
  const auto kernels = m.held_out_coverage(0.8, true);
  CHECK(kernels.rows == table.kernels.rows);
  CHECK(kernels.covered == doctest::Approx(table.kernels.covered[0]));
  // A run's interval carries the runs' figure at its level; a row's own
  // left-out interval (the coverage's inner loop) does not.
  const auto& row = *std::find_if(m.rows().begin(), m.rows().end(), [](const Residual& x) { return !x.kernel; });
  const Interval iv = m.run_interval(row.run, 0.8);
  REQUIRE(iv.valid());
  CHECK(iv.held_out_rows == runs.rows);
  CHECK(iv.held_out_covered == runs.covered);
  CHECK(m.run_interval(row.run, 0.8, row.group).held_out_rows == 0);
  // Another level, another count.
  CHECK(m.run_interval(row.run, 0.95).held_out_covered >= runs.covered);
}
