#include "ridgeline/spec/stack_calibration.hpp"

#include <cmath>
#include <fmt/format.h>

#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/hardware_yaml.hpp"
#include "ridgeline/spec/yaml_reader.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::spec {

namespace {

/// A list of non-empty names (`runs: [a, b]`); each item that is not one is reported.
std::vector<std::string> read_names(MapReader& r, const std::string& key) {
  std::vector<std::string> out;
  const YamlNode seq = r.sequence(key, true);
  if (!seq.IsDefined()) return out;
  if (seq.size() == 0) r.error_at(key, "expected at least one run name");
  for (size_t i = 0; i < seq.size(); ++i) {
    const YamlNode n = seq[i];
    if (!n.IsScalar() || n.Scalar().empty()) {
      r.diags().error(loc_of(r.file(), n), fmt::format("{}[{}]", r.field(key), i), "expected a run name");
      continue;
    }
    out.push_back(n.Scalar());
  }
  return out;
}

/// `interval_80: [lo, hi]`, two positive numbers in order, at most `max`.
void read_pair(MapReader& r, const std::string& key, double& lo, double& hi, double max = 1e6) {
  const YamlNode seq = r.sequence(key);
  if (!seq.IsDefined()) return;
  std::string error;
  std::optional<double> a, b;
  if (seq.size() == 2 && seq[std::size_t{0}].IsScalar() && seq[std::size_t{1}].IsScalar()) {
    a = parse_real_number(seq[std::size_t{0}].Scalar(), 0, max, error);
    b = parse_real_number(seq[std::size_t{1}].Scalar(), 0, max, error);
  }
  if (!a || !b || *a > *b || *a <= 0) {
    r.error_at(key, "expected [low, high]: two positive numbers, the lower first");
    return;
  }
  lo = *a;
  hi = *b;
}

void read_residual(MapReader& r, StackRunResidual& x) {
  x.run = r.string("run", true).value_or("");
  x.predicted_step_s = r.number("predicted_step_s", true, 1e-12, 1e9).value_or(0);
  x.measured_step_s = r.number("measured_step_s", true, 1e-12, 1e9).value_or(0);
  x.predicted_reserved_bytes = r.number("predicted_reserved_gib", false, 0, 1e9).value_or(0) * units::kGiB;
  x.measured_memory_bytes = r.number("measured_memory_gib", false, 0, 1e9).value_or(0) * units::kGiB;
  x.memory_kind = r.word(
                       "memory_kind",
                       [](std::string_view w) -> std::optional<std::string> {
                         if (w == "reserved" || w == "allocated") return std::string(w);
                         return std::nullopt;
                       },
                       "reserved, allocated")
                      .value_or("");
  r.finish();
}

void read_stack(MapReader& r, StackCalibrationEntry& e) {
  StackCorrection& c = e.correction;
  c.gpu = r.string("gpu", true).value_or("");
  c.gpu_name = r.string("gpu_name").value_or("");
  if (auto fw = r.string("framework", true)) {
    if (auto i = find_framework(*fw)) {
      c.framework = *i;
    } else {
      std::vector<std::string> ids;
      for (std::size_t k = 0; k < framework_count(); ++k) ids.push_back(framework_id(static_cast<std::uint8_t>(k)));
      r.error_at("framework", fmt::format("unknown framework '{}'{} (known: {})", *fw,
                                          support::did_you_mean(*fw, ids), framework_choices()));
    }
  }
  c.runs = read_names(r, "runs");
  if (auto t = r.map("step_time", true)) {
    c.time_scale = t->number("scale", true, 1e-3, 1e3).value_or(1);
    t->number("prior", false, 1e-3, 1e3);
    c.time_runs = static_cast<int>(t->integer("runs", true, 1, 1 << 20).value_or(0));
    c.time_log_sd = t->number("log_sd", false, 0, 10).value_or(0);
    read_pair(*t, "interval_80", e.time_interval_lo, e.time_interval_hi);
    read_pair(*t, "gpus", c.gpus_lo, c.gpus_hi, 1e9);
    read_pair(*t, "params", c.params_lo, c.params_hi, 1e16);
    e.time_note = t->string("note").value_or("");
    t->finish();
  }
  if (auto m = r.map("allocator_reserve", true)) {
    if (m->has("value")) c.allocator_reserve = m->number("value", true, 0, 1).value_or(-1);
    c.reserve_prior = m->number("prior", true, 0, 1).value_or(0);
    c.memory_runs = static_cast<int>(m->integer("runs", false, 0, 1 << 20).value_or(0));
    c.reserve_log_sd = m->number("log_sd", false, 0, 10).value_or(0);
    e.reserve_note = m->string("note").value_or("");
    m->finish();
  }
  const YamlNode res = r.sequence("residuals");
  for (size_t i = 0; res.IsDefined() && i < res.size(); ++i) {
    MapReader item(res[i], r.file(), fmt::format("{}[{}]", r.field("residuals"), i), r.diags());
    if (!item.valid()) continue;
    StackRunResidual x;
    read_residual(item, x);
    e.residuals.push_back(std::move(x));
  }
  r.finish();
  if (c.time_runs > 0 && !c.runs.empty() && c.time_runs > static_cast<int>(c.runs.size()))
    r.error_at("step_time", fmt::format("runs: {} runs gave a time, but the stack lists {}", c.time_runs,
                                        c.runs.size()));
}

/// A number written to read back as exactly the same double.
std::string exact(double v) { return fmt::format("{}", v); }

}  // namespace

std::vector<std::string> StackCalibrationSpec::runs() const {
  std::vector<std::string> out;
  for (const auto& s : stacks) out.insert(out.end(), s.correction.runs.begin(), s.correction.runs.end());
  return out;
}

StackCalibrationSpec load_stack_calibration(const std::string& path) {
  YamlNode root = load_yaml_file(path);
  support::DiagnosticList diags;
  StackCalibrationSpec c;
  c.file = path;
  MapReader top(root, path, "", diags);
  if (!top.valid()) diags.throw_if_errors();
  // Another kind of file (a runs file given for the calibration it makes): say that alone.
  if (!root["schema"].IsDefined())
    throw support::SpecError(loc_of(path, root), "schema",
                             fmt::format("missing: not a stack calibration file ({}, written by `ridgeline calibrate "
                                         "--runs`)",
                                         kStackCalibrationSchema));
  if (auto schema = top.string("schema", true); schema && *schema != kStackCalibrationSchema)
    top.error_at("schema", fmt::format("expected \"{}\" (a file `ridgeline calibrate --runs` writes), got \"{}\"",
                                       kStackCalibrationSchema, *schema));
  c.runs_file = top.string("runs_file").value_or("");
  const YamlNode stacks = top.sequence("stacks", true);
  if (stacks.IsDefined() && stacks.size() == 0) top.error_at("stacks", "expected at least one stack");
  for (size_t i = 0; stacks.IsDefined() && i < stacks.size() && !diags.full(); ++i) {
    MapReader r(stacks[i], path, fmt::format("stacks[{}]", i), diags);
    if (!r.valid()) continue;
    StackCalibrationEntry e;
    read_stack(r, e);
    for (const auto& prev : c.stacks)
      if (prev.correction.gpu == e.correction.gpu && prev.correction.framework == e.correction.framework)
        r.error_here(fmt::format("a second stack for {} + {}: one per GPU profile and framework", e.correction.gpu,
                                 framework_id(e.correction.framework)));
    c.stacks.push_back(std::move(e));
  }
  top.finish();
  diags.throw_if_errors();
  return c;
}

std::string to_yaml(const StackCalibrationSpec& c) {
  std::string y = "# Stack calibration fitted by `ridgeline calibrate --runs` to measured runs; read by "
                  "--calibration (docs/commands.md).\n";
  y += fmt::format("schema: {}\n", kStackCalibrationSchema);
  if (!c.runs_file.empty()) y += fmt::format("runs_file: {}\n", yaml_quoted(c.runs_file));
  y += "stacks:\n";
  for (const auto& e : c.stacks) {
    const StackCorrection& s = e.correction;
    y += fmt::format("  - gpu: {}\n", yaml_scalar(s.gpu));
    if (!s.gpu_name.empty()) y += fmt::format("    gpu_name: {}\n", yaml_quoted(s.gpu_name));
    y += fmt::format("    framework: {}\n", framework_id(s.framework));
    y += "    runs: [";
    for (size_t i = 0; i < s.runs.size(); ++i) y += (i ? ", " : "") + yaml_quoted(s.runs[i]);
    y += "]\n";
    y += "    step_time:\n";
    y += fmt::format("      scale: {}\n", exact(s.time_scale));
    y += "      prior: 1\n";
    y += fmt::format("      runs: {}\n", s.time_runs);
    if (s.time_runs >= 2) {
      y += fmt::format("      log_sd: {}\n", exact(s.time_log_sd));
      y += fmt::format("      interval_80: [{}, {}]\n", exact(e.time_interval_lo), exact(e.time_interval_hi));
    }
    if (s.gpus_hi > 0) y += fmt::format("      gpus: [{}, {}]\n", exact(s.gpus_lo), exact(s.gpus_hi));
    if (s.params_hi > 0) y += fmt::format("      params: [{}, {}]\n", exact(s.params_lo), exact(s.params_hi));
    if (!e.time_note.empty()) y += fmt::format("      note: {}\n", yaml_quoted(e.time_note));
    y += "    allocator_reserve:\n";
    if (s.has_reserve()) y += fmt::format("      value: {}\n", exact(s.allocator_reserve));
    y += fmt::format("      prior: {}\n", exact(s.reserve_prior));
    y += fmt::format("      runs: {}\n", s.memory_runs);
    if (s.memory_runs >= 2) y += fmt::format("      log_sd: {}\n", exact(s.reserve_log_sd));
    if (!e.reserve_note.empty()) y += fmt::format("      note: {}\n", yaml_quoted(e.reserve_note));
    if (!e.residuals.empty()) y += "    residuals:\n";
    for (const auto& r : e.residuals) {
      y += fmt::format("      - run: {}\n", yaml_quoted(r.run));
      y += fmt::format("        predicted_step_s: {}\n", exact(r.predicted_step_s));
      y += fmt::format("        measured_step_s: {}\n", exact(r.measured_step_s));
      if (r.predicted_reserved_bytes > 0)
        y += fmt::format("        predicted_reserved_gib: {}\n", exact(r.predicted_reserved_bytes / units::kGiB));
      if (r.measured_memory_bytes > 0) {
        y += fmt::format("        measured_memory_gib: {}\n", exact(r.measured_memory_bytes / units::kGiB));
        y += fmt::format("        memory_kind: {}\n", r.memory_kind);
      }
    }
  }
  return y;
}

void attach_stacks(HardwareSpec& hw, const StackCalibrationSpec& c) {
  for (const auto& e : c.stacks)
    if (e.correction.gpu == hw.id && !hw.stack_for(e.correction.framework)) hw.stacks.push_back(e.correction);
}

}  // namespace ridgeline::spec
