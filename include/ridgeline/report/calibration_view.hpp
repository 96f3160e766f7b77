// What a stack calibration file (`--calibration FILE`, written by
// `ridgeline calibrate --runs`) does for one plan on one GPU: applied (the
// plan runs on the GPU profile and framework the runs were fitted on; the
// engine then scales the step time and uses the fitted allocator reserve,
// spec::HardwareSpec::stack_for) or not, and why. Every view that takes
// --calibration says so in its header (calibration_line) and in its JSON
// (calibration_json), from this one place.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/plan.hpp"
#include "ridgeline/spec/stack_calibration.hpp"

namespace ridgeline::report {

struct CalibrationUse {
  const spec::StackCalibrationSpec* file = nullptr;    // nullptr: no --calibration
  const spec::StackCalibrationEntry* entry = nullptr;  // the stack applied to the plan, or nullptr
  std::string gpu;                                     // the plan's GPU profile id
  std::string framework;                               // and framework id
  bool given() const { return file != nullptr; }
  bool applied() const { return entry != nullptr; }
};

/// The calibration's use for plan `p` on `hw` (applied when hw carries the
/// stack of p's framework: spec::attach_stacks put it there from `c`).
CalibrationUse calibration_use(const spec::StackCalibrationSpec* c, const spec::HardwareSpec& hw,
                               const spec::PlanSpec& p);

/// "calibrated on 2 runs: pilot-a, pilot-b (stack.yaml, h100_sxm + torchtitan): step time x 1.150, allocator
/// reserve 10.3%", or "calibration stack.yaml (2 runs: ...) not applied: it covers h100_sxm + torchtitan; this
/// plan runs megatron on h200"; "" when no file was given.
std::string calibration_line(const CalibrationUse& u);

/// The JSON `calibration` object: file, runs (every run of the file),
/// applied, the plan's gpu and framework, the stacks the file covers; when
/// applied the stack's runs, time_scale, allocator_reserve (null when kept at
/// the framework's) and their notes; `line` as calibration_line. null when no
/// file was given.
nlohmann::json calibration_json(const CalibrationUse& u);

/// The line over several rows (compare, a search over GPUs): the rows' one
/// calibration_line when they all share it, else "calibration FILE (N runs:
/// ...) applied to K of M rows (those on h100_sxm + torchtitan)".
std::string calibration_rows_line(const std::vector<CalibrationUse>& uses);

}  // namespace ridgeline::report
