#include "ridgeline/report/calibration_view.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "ridgeline/spec/framework.hpp"
#include "ridgeline/support/text.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::report {

namespace {

using support::join;

/// "h100_sxm + torchtitan".
std::string stack_name(const spec::StackCorrection& c) {
  return c.gpu + " + " + spec::framework_id(c.framework);
}

std::string runs_text(const std::vector<std::string>& runs) {
  return fmt::format("{} run{}: {}", runs.size(), runs.size() == 1 ? "" : "s", join(runs));
}

}  // namespace

CalibrationUse calibration_use(const spec::StackCalibrationSpec* c, const spec::HardwareSpec& hw,
                               const spec::PlanSpec& p) {
  CalibrationUse u;
  u.file = c;
  u.gpu = hw.id;
  u.framework = spec::framework_id(p.framework);
  if (!c || !hw.stack_for(p.framework)) return u;
  for (const auto& e : c->stacks)
    if (e.correction.gpu == hw.id && e.correction.framework == p.framework) u.entry = &e;
  return u;
}

std::string calibration_line(const CalibrationUse& u) {
  if (!u.given()) return "";
  if (u.applied()) {
    const spec::StackCorrection& c = u.entry->correction;
    return fmt::format("calibrated on {} ({}, {}): step time x {:.3f}, allocator reserve {}", runs_text(c.runs),
                       u.file->file, stack_name(c), c.time_scale,
                       c.has_reserve() ? units::format_percent(c.allocator_reserve) + " (fitted)"
                                       : units::format_percent(c.reserve_prior) + " (the framework's, kept)");
  }
  std::vector<std::string> stacks;
  for (const auto& e : u.file->stacks) stacks.push_back(stack_name(e.correction));
  return fmt::format("calibration {} ({}) not applied: it covers {}; this plan runs {} on {}", u.file->file,
                     runs_text(u.file->runs()), join(stacks), u.framework, u.gpu);
}

nlohmann::json calibration_json(const CalibrationUse& u) {
  if (!u.given()) return nullptr;
  nlohmann::json stacks = nlohmann::json::array();
  for (const auto& e : u.file->stacks)
    stacks.push_back({{"gpu", e.correction.gpu},
                      {"framework", spec::framework_id(e.correction.framework)},
                      {"runs", e.correction.runs}});
  nlohmann::json j = {{"file", u.file->file},         {"runs", u.file->runs()}, {"applied", u.applied()},
                      {"gpu", u.gpu},                 {"framework", u.framework}, {"stacks", stacks},
                      {"line", calibration_line(u)}};
  if (u.applied()) {
    const spec::StackCorrection& c = u.entry->correction;
    j["stack_runs"] = c.runs;
    j["time_scale"] = c.time_scale;
    j["time_scale_runs"] = c.time_runs;
    j["time_scale_note"] = u.entry->time_note;
    j["allocator_reserve"] = c.has_reserve() ? nlohmann::json(c.allocator_reserve) : nlohmann::json(nullptr);
    j["allocator_reserve_prior"] = c.reserve_prior;
    j["allocator_reserve_note"] = u.entry->reserve_note;
  }
  return j;
}

std::string calibration_rows_line(const std::vector<CalibrationUse>& uses) {
  if (uses.empty() || !uses.front().given()) return "";
  const std::string first = calibration_line(uses.front());
  std::vector<std::string> on;
  size_t applied = 0;
  bool same = true;
  for (const auto& u : uses) {
    same = same && calibration_line(u) == first;
    if (!u.applied()) continue;
    ++applied;
    const std::string s = stack_name(u.entry->correction);
    if (std::find(on.begin(), on.end(), s) == on.end()) on.push_back(s);
  }
  if (same) return first;
  return fmt::format("calibration {} ({}) applied to {} of {} rows (those on {})", uses.front().file->file,
                     runs_text(uses.front().file->runs()), applied, uses.size(), applied ? join(on) : "none");
}

}  // namespace ridgeline::report
