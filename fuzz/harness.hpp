// Fuzz harness: what every fuzz target does with one input, shared by the
// libFuzzer targets (fuzz/fuzz_*.cpp) and the regression replay
// (tests/unit/fuzz_regression_test.cpp), so a saved crash is replayed through
// exactly the code that found it.
//
// A target loads a file with one loader. A support::SpecError is a clean
// rejection; any other exception is a finding. What loads is evaluated with
// engine::evaluate against fixed counterparts (shipped profile, model and
// plans), and every step, memory and totals number of an evaluated prediction
// must be finite and non-negative. The views (JSON, table, CSV) are rendered
// too, since the CLI prints them.
//
// Each run_* returns "" when the input was handled cleanly, or one line saying
// what went wrong; the fuzzers abort() on a non-empty answer, the tests CHECK it.
// Header-only: the test binary and the fuzz build compile it from source.
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <exception>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/report/prediction_view.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/measurements.hpp"
#include "ridgeline/spec/model.hpp"
#include "ridgeline/spec/plan.hpp"
#include "ridgeline/spec/published.hpp"
#include "ridgeline/support/diagnostics.hpp"
#include "ridgeline/validation/published.hpp"

namespace ridgeline::fuzz {

/// Repository root (shipped profiles, models, plans).
inline std::string root() { return RIDGELINE_SOURCE_DIR; }

/// The fixed counterparts, loaded once.
struct Fixed {
  spec::HardwareSpec gpu = spec::load_hardware(root() + "/hardware_profiles/h100_sxm.yaml");
  spec::HardwareSpec small_gpu = spec::load_hardware(root() + "/hardware_profiles/a100_sxm_80gb.yaml");
  spec::ModelSpec model = spec::load_model(root() + "/models/llama3_8b.yaml");
  spec::ModelSpec moe = spec::load_model(root() + "/models/mixtral_8x7b.yaml");

  /// Plans every loaded spec is evaluated under: the default, a sharded
  /// data-parallel one and a tensor/pipeline-parallel one with recomputation.
  std::vector<spec::PlanSpec> plans;
  Fixed() {
    spec::PlanSpec p;
    p.seq_len = 2048;
    plans.push_back(p);
    spec::PlanSpec z = p;
    z.parallel.dp = 8;
    z.parallel.zero = 3;
    z.global_batch = 64;
    z.fusion = spec::Fusion::kCompiled;
    z.cuda_graphs = true;
    plans.push_back(z);
    spec::PlanSpec t = p;
    t.parallel.tp = 8;
    t.parallel.sp = true;
    t.parallel.pp = 2;
    t.parallel.dp = 4;
    t.global_batch = 32;
    t.recompute = {spec::RecomputeKind::kSelective, 0};
    t.attention = spec::AttentionKind::kNaive;
    t.fusion = spec::Fusion::kEager;
    plans.push_back(t);
  }
};

inline const Fixed& fixed() {
  static const Fixed f;
  return f;
}

/// "" when every number of the prediction is finite and non-negative, else the first offending field.
inline std::string check_prediction(const engine::Prediction& p) {
  if (p.status == engine::Status::kInvalid) return p.problem.field.empty() ? "invalid prediction without a problem" : "";
  struct Field {
    const char* name;
    double value;
  };
  const auto& s = p.step;
  const auto& m = p.memory;
  const auto& t = p.totals;
  const Field fields[] = {
      {"step.time_s", s.time_s}, {"step.tokens_per_step", s.tokens_per_step}, {"step.tokens_per_s", s.tokens_per_s},
      {"step.model_flops", s.model_flops}, {"step.recompute_flops", s.recompute_flops},
      {"step.hardware_flops", s.hardware_flops}, {"step.mfu", s.mfu}, {"step.mfu_dtype", s.mfu_dtype},
      {"step.hfu", s.hfu}, {"step.micro_batches", s.micro_batches}, {"step.microbatch_time_s", s.microbatch_time_s},
      {"step.compute_time_s", s.compute_time_s}, {"step.exposed_comm_s", s.exposed_comm_s},
      {"step.bubble_s", s.bubble_s}, {"step.optimizer_s", s.optimizer_s}, {"step.bubble_fraction", s.bubble_fraction},
      {"step.gpus", static_cast<double>(s.gpus)},
      {"memory.weights", m.weights}, {"memory.gradients", m.gradients}, {"memory.master_weights", m.master_weights},
      {"memory.optimizer", m.optimizer}, {"memory.activations", m.activations}, {"memory.buffers", m.buffers},
      {"memory.workspace", m.workspace}, {"memory.fragmentation", m.fragmentation}, {"memory.total", m.total},
      {"memory.capacity", m.capacity}, {"memory.activations_per_layer", m.activations_per_layer},
      {"memory.activations_per_microbatch", m.activations_per_microbatch},
      {"memory.in_flight_microbatches", m.in_flight_microbatches}, {"memory.recompute_working", m.recompute_working},
      {"totals.tokens", t.tokens}, {"totals.steps", t.steps}, {"totals.wall_s", t.wall_s},
      {"totals.gpu_hours", t.gpu_hours}, {"totals.cost_usd", t.cost_usd}, {"totals.energy_kwh", t.energy_kwh},
      {"params.total", p.params.total}, {"trainable_params", p.trainable_params}};
  for (const auto& f : fields)
    if (!std::isfinite(f.value) || f.value < 0) return std::string(f.name) + " = " + std::to_string(f.value);
  if (!(s.time_s > 0)) return "step.time_s is not positive";
  if (m.fits != (m.total <= m.capacity)) return "memory.fits disagrees with total <= capacity";
  return "";
}

/// Evaluates one configuration and renders its views; "" or a one-line problem.
inline std::string evaluate_and_check(const spec::ModelSpec& m, const spec::PlanSpec& p, const spec::HardwareSpec& hw) {
  try {
    const auto pred = engine::evaluate(m, p, hw);
    if (auto bad = check_prediction(pred); !bad.empty())
      return "model " + m.id + ", gpu " + hw.id + ", plan " + spec::plan_summary(p) + ": " + bad;
    if (pred.status != engine::Status::kInvalid) {
      report::Inputs in{&hw, &m, &p};
      (void)report::prediction_json(pred, in).dump(2);
      (void)report::prediction_table(pred, in);
      (void)report::prediction_csv(pred);
    }
  } catch (const std::exception& e) {
    return std::string("evaluate threw: ") + e.what();
  }
  return "";
}

/// Runs `load(path)`; a SpecError is a clean rejection (returns false with
/// `problem` empty), a SpecError without diagnostics or any other exception is a problem.
template <class Load, class Out>
bool load_cleanly(Load load, const std::string& path, Out& out, std::string& problem) {
  try {
    out = load(path);
    return true;
  } catch (const support::SpecError& e) {
    if (e.diagnostics().empty()) problem = "SpecError without a diagnostic";
    for (const auto& d : e.diagnostics())
      if (d.message.empty()) problem = "diagnostic without a message: " + d.format();
  } catch (const std::exception& e) {
    problem = std::string("loader threw a non-SpecError exception: ") + e.what();
  } catch (...) {
    problem = "loader threw a non-exception";
  }
  return false;
}

inline std::string run_hardware(const std::string& path) {
  spec::HardwareSpec hw;
  std::string problem;
  if (!load_cleanly(spec::load_hardware, path, hw, problem)) return problem;
  for (const auto& p : fixed().plans) {
    if (auto bad = evaluate_and_check(fixed().model, p, hw); !bad.empty()) return bad;
    if (auto bad = evaluate_and_check(fixed().moe, p, hw); !bad.empty()) return bad;
  }
  for (bool calibrated : {true, false}) {
    engine::EvalOptions opt;
    opt.use_calibration = calibrated;
    opt.keep_kernels = false;
    if (auto bad = check_prediction(engine::evaluate(fixed().model, fixed().plans[0], hw, opt)); !bad.empty())
      return bad;
  }
  return "";
}

template <class Load>
std::string run_model_with(Load load, const std::string& path) {
  spec::ModelSpec m;
  std::string problem;
  if (!load_cleanly(load, path, m, problem)) return problem;
  const auto pc = spec::count_params(m);
  if (!std::isfinite(pc.total) || pc.total <= 0) return "count_params: total = " + std::to_string(pc.total);
  for (const auto& p : fixed().plans) {
    if (auto bad = evaluate_and_check(m, p, fixed().gpu); !bad.empty()) return bad;
    if (auto bad = evaluate_and_check(m, p, fixed().small_gpu); !bad.empty()) return bad;
  }
  // The model's own maximum sequence length (plan seq_len 0).
  spec::PlanSpec own;
  if (auto bad = evaluate_and_check(m, own, fixed().gpu); !bad.empty()) return bad;
  return "";
}

inline std::string run_model(const std::string& path) { return run_model_with(spec::load_model, path); }
inline std::string run_hf_config(const std::string& path) { return run_model_with(spec::load_hf_config, path); }

inline std::string run_plan(const std::string& path) {
  spec::PlanSpec p;
  std::string problem;
  if (!load_cleanly(spec::load_plan, path, p, problem)) return problem;
  for (const auto* m : {&fixed().model, &fixed().moe})
    for (const auto* hw : {&fixed().gpu, &fixed().small_gpu})
      if (auto bad = evaluate_and_check(*m, p, *hw); !bad.empty()) return bad;
  return "";
}

/// A measurement file: loaded, every record's numbers finite and its times
/// positive, and to_json() of what loaded loads again to the same records.
inline std::string run_measurements(const std::string& path) {
  spec::MeasurementSet set;
  std::string problem;
  if (!load_cleanly(spec::load_measurements, path, set, problem)) return problem;
  for (const auto& r : set.records) {
    for (double v : {r.m, r.n, r.k, r.batch, r.elements, r.flops, r.bytes, r.launches, r.median_s, r.min_s})
      if (!std::isfinite(v) || v < 0) return "record " + r.name + ": a number is " + std::to_string(v);
    if (!(r.median_s > 0) || !(r.min_s > 0) || r.min_s > r.median_s) return "record " + r.name + ": bad times";
  }
  const std::string again = path + ".roundtrip.json";
  try {
    std::ofstream(again, std::ios::binary | std::ios::trunc) << spec::to_json(set);
  } catch (const std::exception& e) {
    return std::string("to_json threw: ") + e.what();
  }
  spec::MeasurementSet back;
  if (!load_cleanly(spec::load_measurements, again, back, problem))
    return "to_json output does not load again: " + (problem.empty() ? std::string("SpecError") : problem);
  if (back.records.size() != set.records.size()) return "round trip changed the number of records";
  for (size_t i = 0; i < set.records.size(); ++i) {
    const auto& a = set.records[i];
    const auto& b = back.records[i];
    if (a.name != b.name || a.cls != b.cls || a.dtype != b.dtype || a.flops != b.flops || a.bytes != b.bytes ||
        a.median_s != b.median_s || a.min_s != b.min_s || a.m != b.m || a.n != b.n || a.k != b.k)
      return "round trip changed record " + std::to_string(i) + " (" + a.name + ")";
  }
  return "";
}

/// A published-measurements file: loaded, then every row predicted with the
/// shipped profiles; every compared number and statistic must be finite.
inline std::string run_published(const std::string& path) {
  spec::PublishedFile file;
  std::string problem;
  if (!load_cleanly(spec::load_published, path, file, problem)) return problem;
  try {
    // The shipped profiles, loaded once for every input.
    static const validation::ProfileSet profiles = validation::ProfileSet::load(root() + "/hardware_profiles");
    const auto rep = validation::validate_published(file, profiles);
    auto finite_stats = [](const validation::ErrorStats& s) {
      return std::isfinite(s.median_abs_pct) && std::isfinite(s.p90_abs_pct) && std::isfinite(s.median_speed_pct);
    };
    for (const auto& r : rep.results) {
      if (!r.predicted) continue;
      for (const auto* c : {&r.primary}) {
        if (!std::isfinite(c->predicted) || !std::isfinite(c->error_pct) || !std::isfinite(c->speed_error_pct()))
          return "row " + r.id + ": " + c->quantity + " predicted " + std::to_string(c->predicted) + ", error " +
                 std::to_string(c->error_pct) + "%";
      }
      for (const auto& c : r.secondary)
        if (!std::isfinite(c.predicted) || !std::isfinite(c.error_pct))
          return "row " + r.id + ": secondary " + c.quantity + " predicted " + std::to_string(c.predicted) +
                 ", error " + std::to_string(c.error_pct) + "%";
    }
    if (!finite_stats(rep.overall)) return "overall statistics are not finite";
    for (const auto& g : rep.by_group)
      if (!finite_stats(g.stats)) return "statistics of group " + g.name + " are not finite";
  } catch (const support::SpecError& e) {
    return std::string("validate_published threw SpecError: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("validate_published threw: ") + e.what();
  }
  return "";
}

/// A CLI fuzz input is an argument vector, one argument per line (at most 32
/// arguments of at most 256 bytes; longer ones are cut).
inline std::vector<std::string> cli_args(std::string_view input) {
  std::vector<std::string> args;
  while (args.size() < 32) {
    const auto nl = input.find('\n');
    args.emplace_back(input.substr(0, std::min<size_t>(nl, 256)));
    if (nl == std::string_view::npos) break;
    input.remove_prefix(nl + 1);
  }
  return args;
}

/// Argument vectors the CLI fuzzer runs: only the read-only subcommands
/// (predict, compare, list, check) and no output option, so fuzzing never
/// writes a file; no device or proc paths (reading /dev/zero never ends; see
/// docs/errors.md).
inline bool cli_args_allowed(const std::vector<std::string>& args) {
  if (args.empty()) return false;
  const std::string& cmd = args[0];
  if (cmd != "predict" && cmd != "compare" && cmd != "list" && cmd != "check") return false;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--o", 0) == 0) return false;                                       // --output, --output=F
    if (a.size() > 1 && a[0] == '-' && a[1] != '-' && a.find('o') != std::string::npos) return false;  // -o, -oF, -ho
    if (a.find("/dev") != std::string::npos || a.find("/proc") != std::string::npos ||
        a.find("/sys") != std::string::npos)
      return false;
    for (const char* writer : {"microbench", "calibrate", "validate", "validate-published", "search", "report"})
      if (a == writer) return false;
  }
  return true;
}

/// "" when a CLI run ended as it should: exit 0, 1 (does not fit) or 2 (bad
/// input), and no "nan" or "inf" printed as a word (a word joined to a
/// name by a hyphen, "ZeRO-Infinity", is part of the name). An error message may echo
/// an argument, so the word check is skipped when an argument contains one.
inline std::string cli_result_problem(int rc, const std::string& out, const std::string& err,
                                      const std::vector<std::string>& args) {
  if (rc != 0 && rc != 1 && rc != 2) return "exit status " + std::to_string(rc) + ": " + err.substr(0, 300);
  for (const auto& a : args) {
    std::string lower = a;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower.find("nan") != std::string::npos || lower.find("inf") != std::string::npos) return "";
  }
  for (const std::string* text : {&out, &err}) {
    const std::string& s = *text;
    auto word = [&](size_t i) { return i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_'); };
    for (size_t i = 0; i < s.size(); ++i) {
      if (i > 0 && word(i - 1)) continue;
      // A hyphenated name ("ZeRO-Infinity" in the help text), not a negative number.
      if (i > 1 && s[i - 1] == '-' && std::isalpha(static_cast<unsigned char>(s[i - 2]))) continue;
      for (const char* bad : {"nan", "NaN", "NAN", "inf", "Inf", "INF", "infinity", "Infinity"}) {
        const size_t n = std::char_traits<char>::length(bad);
        if (s.compare(i, n, bad) == 0 && !word(i + n))
          return std::string("printed '") + bad + "': ..." + s.substr(i > 60 ? i - 60 : 0, 120) + "...";
      }
    }
  }
  return "";
}

}  // namespace ridgeline::fuzz
