// microbench, calibrate and validate: measurements -> calibration block ->
// error statistics (docs/calibration.md).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.hpp"
#include "common.hpp"
#include "host_microbench.hpp"
#include "ridgeline/calibrate/calibrate.hpp"
#include "ridgeline/calibrate/runs.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/runs.hpp"
#include "ridgeline/spec/hardware_yaml.hpp"
#include "ridgeline/spec/measurement_class.hpp"
#include "ridgeline/support/utc_time.hpp"
#include "ridgeline/uncertainty/interval.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::cli {

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw support::SpecError({path, 0, 0}, "", "cannot read file");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string pct(double v) { return fmt::format("{:.1f}%", v); }

/// A validation group's class, or "all" for the whole set.
std::string group_class(const calibrate::GroupStats& g) { return g.cls ? std::string(spec::name(*g.cls)) : "all"; }

/// "gemm_efficiency.fp32 0.971", ... one line per fitted parameter.
std::string fit_summary(const calibrate::FitResult& f) {
  const auto& e = f.efficiency;
  std::string s;
  auto line = [&](const std::string& k, const std::string& v) { s += fmt::format("  {:<30} {}\n", k, v); };
  for (int i = 0; i < spec::kPeakCount; ++i)
    if (e.gemm_frac[i] > 0) line(fmt::format("gemm_efficiency.{}", spec::kPeakNames[i]), fmt::format("{:.3f}", e.gemm_frac[i]));
  if (f.tile_fitted) line("gemm_tile", fmt::format("{} x {}, k0 {}", e.gemm_tile_m, e.gemm_tile_n, e.gemm_k0));
  if (e.attention_frac > 0) line("attention_efficiency", fmt::format("{:.3f}", e.attention_frac));
  if (e.hbm_frac > 0) {
    line("hbm_efficiency", fmt::format("{:.3f}", e.hbm_frac));
    line("hbm_latency", units::format_seconds(e.hbm_latency_s));
  }
  for (int i = 0; i < spec::kKernelClassCount; ++i)
    if (e.class_mem_frac[i] > 0)
      line(fmt::format("class_efficiency.{}", spec::kKernelClassNames[i]), fmt::format("{:.3f}", e.class_mem_frac[i]));
  if (e.launch_overhead_s > 0) line("launch_overhead", units::format_seconds(e.launch_overhead_s));
  s += fmt::format("  {:<22} {:>7} {:>10} {:>10}\n", "residuals (class)", "records", "median", "p90");
  for (const auto& r : f.residuals)
    s += fmt::format("  {:<22} {:>7} {:>10} {:>10}\n", r.cls, r.records, pct(r.median_abs_pct), pct(r.p90_abs_pct));
  return s;
}

// --- microbench ------------------------------------------------------------------

struct MicrobenchArgs {
  bool host = false;
  bool quick = false;
  int samples = 0;
  std::vector<std::string> only;
  std::string output = "-";
  std::string profile_output;
};

void register_microbench(Commands& commands, int& rc) {
  auto a = std::make_shared<MicrobenchArgs>();
  auto* cmd = commands.add("microbench", "Measure the calibration kernel classes on this CPU (--host)");
  if (!cmd) return;
  cmd->add_flag("--host", a->host, "Run the host backend (one CPU core); GPU measurements come from cuda_validation/");
  cmd->add_flag("--quick", a->quick, "Fewer sizes and 10 samples (about 10-20 s)");
  cmd->add_option("--samples", a->samples, "Timed samples per case (default 10 with --quick, else 20)");
  cmd->add_option("--only", a->only, "Measurement classes to run (default: all)")->delimiter(',');
  cmd->add_option("--output,-o", a->output, "Measurement file to write (JSON; '-' = standard output)");
  cmd->add_option("--profile-output", a->profile_output,
                  "Also write a host hardware profile (YAML, hardware_profiles schema) built from the measurements");
  cmd->callback([a, &rc] {
    rc = guarded([&] {
      if (!a->host)
        throw UsageError{"--host", "only the host backend runs here; measure a GPU with cuda_validation/ "
                                   "(ridgeline_cuda_bench), then pass its file to 'ridgeline calibrate'"};
      if (a->samples < 0 || a->samples > 10000)
        throw UsageError{"--samples", fmt::format("expected a whole number from 1 to 10000, got {}", a->samples)};
      host_bench::HostMicrobenchOptions opt;
      for (const auto& c : a->only) {
        const auto cls = spec::parse_measurement_class(c);
        if (!cls)
          throw UsageError{"--only", fmt::format("unknown measurement class '{}'{}", c,
                                                 support::did_you_mean(c, spec::measurement_class_names()))};
        opt.classes.push_back(*cls);
      }
      opt.quick = a->quick;
      opt.samples = a->samples;
      opt.progress = [](const std::string& line) { std::cerr << line << "\n"; };
      spec::MeasurementSet set = host_bench::run_host_microbench(opt);
      if (set.records.empty()) throw UsageError{"--only", "no host benchmark measures these classes"};
      set.source_file = a->output == "-" ? "" : a->output;
      write_output(a->output, spec::to_json(set));
      if (!a->profile_output.empty()) {
        const spec::HardwareSpec hw = host_bench::host_profile(set);
        // Measured figures to 4 significant digits: more would be noise.
        const std::string text =
            fmt::format("# Hardware profile: {}. Written by ridgeline microbench --host --profile-output.\n"
                        "# One CPU core as a \"GPU\": every figure says under sources: how it was obtained.\n",
                        hw.name) +
            spec::to_yaml(hw, spec::YamlStyle{.significant_digits = 4});
        calibrate::load_hardware_text(text);  // what we write must read back
        write_output(a->profile_output, text);
      }
      return kExitOk;
    });
  });
}

// --- calibrate --------------------------------------------------------------------

/// A problem with one run's field, at the field: "runs.yaml:4:10: error: runs[0].gpu: ...".
[[noreturn]] void run_error(const support::SourceLoc& loc, const std::string& field, const std::string& message) {
  throw support::SpecError(loc, field, message);
}

/// The plan of run `r`, read as predict reads its flags: `plan_file` as --plan
/// (a YAML) or the launch config it is (--from-torchtitan for .toml,
/// --from-deepspeed for .json, --from-megatron otherwise), then `plan`'s flags.
spec::PlanSpec run_plan(const spec::RunSpec& r, const spec::ModelSpec& model, const spec::HardwareSpec& gpu) {
  const std::string field = r.field + ".plan";
  PlanFlags flags;
  CLI::App app("run plan");
  flags.add_to(app);
  app.allow_extras(true);
  try {
    app.parse(r.plan, false);
  } catch (const CLI::ParseError& e) {
    run_error(r.plan_loc, field, e.what());
  }
  if (const auto extra = app.remaining(); !extra.empty()) {
    std::vector<std::string> names;
    for (const CLI::Option* o : app.get_options())
      for (const auto& n : o->get_lnames()) names.push_back("--" + n);
    const auto flag = std::find_if(extra.begin(), extra.end(), [](const std::string& s) { return s.starts_with("-"); });
    if (flag == extra.end())
      run_error(r.plan_loc, field, fmt::format("'{}' follows no flag (predict's plan flags: --dp 8 --zero 3 ...)",
                                               extra.front()));
    if (*flag == "--gpu" || *flag == "--model")
      run_error(r.plan_loc, field, fmt::format("{} has no place in plan: gpu: and model: are fields of the run", *flag));
    run_error(r.plan_loc, field,
              fmt::format("unknown flag '{}'{} (plan: takes predict's plan flags)", *flag,
                          support::did_you_mean(*flag, names)));
  }
  if (!flags.calibration.empty() || flags.no_calibration)
    run_error(r.plan_loc, field,
              "--calibration and --no-calibration have no place in a run: runs are predicted with the profile as it "
              "is, and the stack calibration is what they fit");
  if (!r.plan_file.empty()) {
    if (!flags.plan_file.empty() || !flags.from_megatron.empty() || !flags.from_torchtitan.empty() ||
        !flags.from_deepspeed.empty())
      run_error(r.plan_file_loc, r.field + ".plan_file", "plan: gives a plan file too (--plan or --from-*); give one");
    const std::string ext = std::filesystem::path(r.plan_file).extension().string();
    if (ext == ".yaml" || ext == ".yml") flags.plan_file = r.plan_file;
    else if (ext == ".toml") flags.from_torchtitan = r.plan_file;
    else if (ext == ".json") flags.from_deepspeed = r.plan_file;
    else flags.from_megatron = r.plan_file;
  }
  spec::PlanSpec plan;
  try {
    plan = flags.build(model);
  } catch (const UsageError& e) {
    run_error(r.plan_loc.line ? r.plan_loc : r.loc, field, e.flag + ": " + e.message);
  }
  spec::apply_generation_defaults(plan, gpu.generation);
  return plan;
}

/// The measured step time of a run on `pred`'s plan: as given, or from a
/// throughput (tokens per step / tokens per second; per GPU x the GPUs).
double measured_step_s(const spec::RunMeasurement& m, const engine::Prediction& pred) {
  if (m.step_time_s > 0) return m.step_time_s;
  if (m.tokens_per_s > 0) return pred.step.tokens_per_step / m.tokens_per_s;
  return pred.step.tokens_per_step / (m.tokens_per_s_per_gpu * static_cast<double>(pred.step.gpus));
}

int calibrate_runs(const std::string& runs_file, const std::string& output) {
  const spec::RunsSpec runs = spec::load_runs(runs_file);
  std::vector<calibrate::RunPoint> points;
  std::map<std::string, std::string> lines;  // by run name (each run's is its own)
  for (const auto& r : runs.runs) {
    spec::HardwareSpec gpu;
    spec::ModelSpec model;
    try {
      gpu = resolve_gpu(r.gpu);
    } catch (const UsageError& e) {
      run_error(r.gpu_loc, r.field + ".gpu", e.message);
    }
    try {
      model = resolve_model(r.model);
    } catch (const UsageError& e) {
      run_error(r.model_loc, r.field + ".model", e.message);
    }
    const spec::PlanSpec plan = run_plan(r, model, gpu);
    const engine::Prediction pred = engine::evaluate(model, plan, gpu);
    if (pred.status == engine::Status::kInvalid)
      run_error(r.plan_loc.line ? r.plan_loc : r.loc, r.field + ".plan",
                fmt::format("the model or GPU cannot run this plan: {}: {}", pred.problem.field,
                            pred.problem.message));
    calibrate::RunPoint p;
    p.name = r.name;
    p.gpu = gpu.id;
    p.gpu_name = gpu.name;
    p.framework = plan.framework;
    p.predicted_step_s = pred.step.time_s;
    const uncertainty::RunTraits traits = uncertainty::traits_of(pred, plan, gpu);
    p.gpus = static_cast<double>(traits.gpus);
    p.params = traits.params;
    p.measured_step_s = measured_step_s(r.measured, pred);
    p.predicted_allocated_bytes = pred.memory.allocated;
    p.prior_reserve = pred.memory.allocator_reserve;
    p.measured_memory_bytes = r.measured.peak_memory_bytes;
    p.memory_kind = r.measured.memory_kind;
    if (pred.step.time_s > 0) {
      p.comm_share = pred.step.exposed_comm_s / pred.step.time_s;
      p.host_share = pred.step.host_s / pred.step.time_s;
    }
    p.host_bound = pred.step.host_bound;
    if (!(p.measured_step_s > 0) || !std::isfinite(p.measured_step_s) || !(p.predicted_step_s > 0))
      run_error(r.loc, r.field, "no step time could be formed from the measurement");
    std::string line = fmt::format("  {}: {} on {} x {}, {}; predicted {}, measured {} (x {:.3f})", r.name,
                                   model.name, plan.parallel.gpus(), gpu.id, spec::framework_id(plan.framework),
                                   units::format_seconds(p.predicted_step_s), units::format_seconds(p.measured_step_s),
                                   p.measured_step_s / p.predicted_step_s);
    if (p.measured_memory_bytes > 0)
      line += fmt::format("; peak memory predicted {} reserved ({} allocated), measured {} {}",
                          units::format_bytes(pred.memory.reserved), units::format_bytes(pred.memory.allocated),
                          units::format_bytes(p.measured_memory_bytes), spec::name(p.memory_kind));
    if (pred.status == engine::Status::kDoesNotFit) line += "; predicted not to fit, yet it ran";
    if (!r.measured.basis.empty()) line += "\n      " + r.measured.basis;
    lines[r.name] = std::move(line);
    points.push_back(std::move(p));
  }
  // The scale's prior: the shipped model, with the spread of the published
  // sources' offsets (uncertainty/scale_prior.hpp); none without the residual file.
  const uncertainty::ScalePrior prior = uncertainty::scale_prior(uncertainty::shipped().rows());
  spec::StackCalibrationSpec cal = calibrate::fit_runs(points, runs_file, prior.valid() ? &prior : nullptr);
  write_output(output, spec::to_yaml(cal));
  std::ostream& out = (output.empty() || output == "-") ? std::cerr : std::cout;
  out << fmt::format("Calibrated {} stack{} from {} runs of {}{}\n", cal.stacks.size(),
                     cal.stacks.size() == 1 ? "" : "s", points.size(), runs_file,
                     output.empty() || output == "-" ? "" : " -> " + output);
  for (const auto& e : cal.stacks) {
    const spec::StackCorrection& c = e.correction;
    out << fmt::format("{} + {} ({} run{}):\n", c.gpu, spec::framework_id(c.framework), c.runs.size(),
                       c.runs.size() == 1 ? "" : "s");
    for (const auto& name : c.runs) out << lines[name] << "\n";
    out << fmt::format("  step time scale {:.4f}: {}\n", c.time_scale, e.time_note);
    out << fmt::format("  allocator reserve {}: {}\n",
                       c.has_reserve() ? units::format_percent(c.allocator_reserve)
                                       : units::format_percent(c.reserve_prior) + " (prior)",
                       e.reserve_note);
    out << fmt::format("  held at the prior: {}\n", e.held_note);
  }
  return kExitOk;
}

struct CalibrateArgs {
  std::string gpu;
  std::string measurements;
  std::string runs;
  std::string output = "-";
  bool force = false;
  double holdout = 0.3;
  std::uint64_t seed = 1;
};

void register_calibrate(Commands& commands, int& rc) {
  auto a = std::make_shared<CalibrateArgs>();
  auto* cmd = commands.add("calibrate", "Fit a profile's efficiency parameters to measurements");
  if (!cmd) return;
  cmd->add_option("--gpu", a->gpu, "GPU profile name or YAML file (with --measurements)");
  cmd->add_option("--measurements", a->measurements, "Measurement file (JSON, ridgeline.measurements/1)");
  cmd->add_option("--runs", a->runs,
                  "Measured training runs (YAML or CSV; each its GPU, model, plan and measured time or framework "
                  "log): fit each GPU + framework stack's step-time scale and allocator reserve, and write a "
                  "calibration file for --calibration (instead of --gpu and --measurements)")
      ->type_name("FILE");
  cmd->add_option("--output,-o", a->output,
                  "Calibrated profile (with --measurements) or stack calibration (with --runs) to write ('-' = "
                  "standard output)");
  cmd->add_flag("--force", a->force, "Use measurements whose device does not match the profile");
  cmd->add_option("--holdout", a->holdout,
                  "Fraction of each class's records held out to measure the fit's error (as `validate`); their "
                  "log-residuals go in the block's `heldout:` and set the calibrated kernels' prediction "
                  "intervals; 0 = none")
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "Seed of the held-out split")->capture_default_str();
  cmd->footer("Either --gpu and --measurements (microbenchmarks: the profile's efficiency parameters) or --runs "
              "(whole measured runs: a stack calibration, docs/commands.md).");
  cmd->callback([a, cmd, &rc] {
    rc = guarded([&] {
      if (!a->runs.empty()) {
        for (const char* flag : {"--gpu", "--measurements", "--holdout", "--seed", "--force"})
          if (cmd->count(flag) > 0)
            throw UsageError{flag, "not used with --runs: each run names its GPU, model and plan"};
        return calibrate_runs(a->runs, a->output);
      }
      if (a->gpu.empty() || a->measurements.empty())
        throw UsageError{a->gpu.empty() ? "--gpu" : "--measurements",
                         "give --gpu and --measurements (microbenchmarks), or --runs FILE (measured training runs)"};
      if (!(a->holdout >= 0 && a->holdout < 1))
        throw UsageError{"--holdout", fmt::format("expected a fraction from 0 to below 1, got {}", a->holdout)};
      const spec::HardwareSpec hw = resolve_gpu(a->gpu);
      const spec::MeasurementSet set = spec::load_measurements(a->measurements);
      if (auto w = calibrate::check_device(set, hw, a->force)) std::cerr << w->format() << "\n" << w->excerpt();
      calibrate::FitResult f = calibrate::fit(set, hw);
      // The block's parameters are fitted on every record; the held-out
      // statistics come from a separate fit on the rest (validate's split),
      // so they measure the error on records no fit saw.
      if (a->holdout > 0) {
        try {
          const calibrate::ValidationReport v = calibrate::validate(set, hw, a->holdout, a->seed);
          f.heldout = calibrate::heldout_residuals(v);
          f.heldout_fraction = a->holdout;
        } catch (const support::SpecError& e) {
          f.notes.push_back(fmt::format("no held-out statistics: {}", e.what()));
        }
      }
      const std::string date = support::utc_now_iso8601();
      const std::string text = calibrate::replace_calibration_block(read_text(hw.source_file),
                                                                    calibrate::calibration_block(f, set, date));
      const spec::HardwareSpec back = calibrate::load_hardware_text(text);
      if (!back.calibration.present)
        throw std::runtime_error("the calibrated profile lost its calibration block on reading back");
      write_output(a->output, text);
      std::ostream& out = (a->output.empty() || a->output == "-") ? std::cerr : std::cout;
      out << fmt::format("Calibrated {} from {} records of {}{}\n", hw.name, f.records_used, a->measurements,
                         a->output == "-" ? "" : " -> " + a->output);
      out << fit_summary(f);
      for (const auto& h : f.heldout)
        out << fmt::format("held out ({:.0f}%): {} {} records, log-residual mean {:+.3f}, sd {:.3f}\n",
                           f.heldout_fraction * 100, h.cls, h.records, h.log_mean, h.log_sd);
      for (const auto& n : f.notes) std::cerr << "note: " << n << "\n";
      return kExitOk;
    });
  });
}

// --- validate ---------------------------------------------------------------------

struct ValidateArgs {
  std::string gpu;
  std::string measurements;
  double holdout = 0.3;
  std::uint64_t seed = 1;
  std::string format = "table";
  std::string output;
  bool force = false;
};

nlohmann::ordered_json group_json(const calibrate::GroupStats& g) {
  return {{"class", group_class(g)},
          {"dtype", g.dtype},
          {"records", g.records},
          {"calibrated", {{"median_abs_pct", g.median_abs_pct}, {"p90_abs_pct", g.p90_abs_pct}}},
          {"uncalibrated", {{"median_abs_pct", g.default_median_abs_pct}, {"p90_abs_pct", g.default_p90_abs_pct}}}};
}

nlohmann::ordered_json record_json(const calibrate::RecordError& e) {
  return {{"name", e.name},
          {"class", std::string(spec::name(e.cls))},
          {"dtype", e.dtype},
          {"measured_s", e.measured_s},
          {"predicted_s", e.predicted_s},
          {"error_pct", e.error_pct},
          {"uncalibrated_predicted_s", e.default_predicted_s},
          {"uncalibrated_error_pct", e.default_error_pct}};
}

std::string report_json(const calibrate::ValidationReport& r) {
  nlohmann::ordered_json j;
  j["device"] = r.device;
  j["profile"] = r.profile;
  j["measurements"] = r.measurements;
  j["holdout"] = r.holdout_frac;
  j["seed"] = r.seed;
  j["in_sample"] = r.in_sample;
  j["train_records"] = r.train_records;
  j["test_records"] = r.test_records;
  nlohmann::ordered_json params;
  const auto& e = r.fit.efficiency;
  for (int i = 0; i < spec::kPeakCount; ++i)
    if (e.gemm_frac[i] > 0) params[fmt::format("gemm_efficiency.{}", spec::kPeakNames[i])] = e.gemm_frac[i];
  if (r.fit.tile_fitted) params["gemm_tile"] = {{"m", e.gemm_tile_m}, {"n", e.gemm_tile_n}, {"k0", e.gemm_k0}};
  if (e.attention_frac > 0) params["attention_efficiency"] = e.attention_frac;
  if (e.hbm_frac > 0) {
    params["hbm_efficiency"] = e.hbm_frac;
    params["hbm_latency_s"] = e.hbm_latency_s;
  }
  for (int i = 0; i < spec::kKernelClassCount; ++i)
    if (e.class_mem_frac[i] > 0) params[fmt::format("class_efficiency.{}", spec::kKernelClassNames[i])] = e.class_mem_frac[i];
  if (e.launch_overhead_s > 0) params["launch_overhead_s"] = e.launch_overhead_s;
  j["fit"] = params;
  j["groups"] = nlohmann::ordered_json::array();
  for (const auto& g : r.groups) j["groups"].push_back(group_json(g));
  j["overall"] = group_json(r.overall);
  j["worst"] = nlohmann::ordered_json::array();
  for (const auto& e2 : r.worst) j["worst"].push_back(record_json(e2));
  j["records"] = nlohmann::ordered_json::array();
  for (const auto& e2 : r.records) j["records"].push_back(record_json(e2));
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

std::string report_csv(const calibrate::ValidationReport& r) {
  std::string s =
      "class,dtype,records,calibrated_median_abs_pct,calibrated_p90_abs_pct,uncalibrated_median_abs_pct,"
      "uncalibrated_p90_abs_pct\n";
  auto row = [&](const calibrate::GroupStats& g) {
    s += fmt::format("{},{},{},{:.4g},{:.4g},{:.4g},{:.4g}\n", group_class(g), g.dtype, g.records, g.median_abs_pct,
                     g.p90_abs_pct, g.default_median_abs_pct, g.default_p90_abs_pct);
  };
  for (const auto& g : r.groups) row(g);
  row(r.overall);
  return s;
}

std::string report_table(const calibrate::ValidationReport& r) {
  std::string s;
  if (r.in_sample)
    s += fmt::format("Validation of {} on {} ({} records, in sample: fit and tested on every record)\n",
                     r.measurements, r.device, r.test_records);
  else
    s += fmt::format("Validation of {} on {}: fit on {} records, {} held out (holdout {:.2f}, seed {})\n",
                     r.measurements, r.device, r.train_records, r.test_records, r.holdout_frac, r.seed);
  s += "Absolute % error of predicted vs measured time, held-out records\n\n";
  s += fmt::format("{:<20} {:<9} {:>7}   {:>9} {:>9}   {:>9} {:>9}\n", "", "", "", "calibrated", "",
                   "uncalibrated", "");
  s += fmt::format("{:<20} {:<9} {:>7}   {:>9} {:>9}   {:>9} {:>9}\n", "class", "dtype", "records", "median", "p90",
                   "median", "p90");
  auto row = [&](const calibrate::GroupStats& g) {
    s += fmt::format("{:<20} {:<9} {:>7}   {:>9} {:>9}   {:>9} {:>9}\n", group_class(g), g.dtype, g.records,
                     pct(g.median_abs_pct), pct(g.p90_abs_pct), pct(g.default_median_abs_pct),
                     pct(g.default_p90_abs_pct));
  };
  for (const auto& g : r.groups) row(g);
  row(r.overall);
  if (!r.worst.empty()) {
    s += "\nWorst held-out records (calibrated)\n";
    s += fmt::format("{:<36} {:>10} {:>10} {:>9}   {:>10} {:>9}\n", "record", "measured", "predicted", "error",
                     "uncalib.", "error");
    for (const auto& e : r.worst)
      s += fmt::format("{:<36} {:>10} {:>10} {:>9}   {:>10} {:>9}\n", e.name, units::format_seconds(e.measured_s),
                       units::format_seconds(e.predicted_s), fmt::format("{:+.1f}%", e.error_pct),
                       units::format_seconds(e.default_predicted_s), fmt::format("{:+.1f}%", e.default_error_pct));
  }
  return s;
}

void register_validate(Commands& commands, int& rc) {
  auto a = std::make_shared<ValidateArgs>();
  auto* cmd = commands.add("validate", "Fit on part of the measurements, report prediction errors on the rest");
  if (!cmd) return;
  cmd->add_option("--gpu", a->gpu, "GPU profile name or YAML file")->required();
  cmd->add_option("--measurements", a->measurements, "Measurement file (JSON, ridgeline.measurements/1)")->required();
  cmd->add_option("--holdout", a->holdout, "Fraction of each class held out for testing (0 = in sample)")
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "Seed of the train/test split")->capture_default_str();
  add_format_and_output(*cmd, a->format, a->output, {Format::kTable, Format::kJson, Format::kCsv});
  cmd->add_flag("--force", a->force, "Use measurements whose device does not match the profile");
  cmd->callback([a, &rc] {
    rc = guarded([&] {
      const Format fmt_kind = parse_format(a->format, {Format::kTable, Format::kJson, Format::kCsv});
      if (!(a->holdout >= 0.0 && a->holdout < 1.0))
        throw UsageError{"--holdout", fmt::format("expected a fraction from 0 to below 1, got {}", a->holdout)};
      const spec::HardwareSpec hw = resolve_gpu(a->gpu);
      const spec::MeasurementSet set = spec::load_measurements(a->measurements);
      if (auto w = calibrate::check_device(set, hw, a->force)) std::cerr << w->format() << "\n" << w->excerpt();
      const calibrate::ValidationReport rep = calibrate::validate(set, hw, a->holdout, a->seed);
      std::string text;
      switch (fmt_kind) {
        case Format::kJson: text = report_json(rep); break;
        case Format::kCsv: text = report_csv(rep); break;
        case Format::kTable:
        case Format::kMarkdown: text = report_table(rep); break;  // markdown is not offered here
      }
      write_output(a->output, text);
      return kExitOk;
    });
  });
}

}  // namespace

void register_calibration(Commands& commands, int& rc) {
  register_microbench(commands, rc);
  register_calibrate(commands, rc);
  register_validate(commands, rc);
}

}  // namespace ridgeline::cli
