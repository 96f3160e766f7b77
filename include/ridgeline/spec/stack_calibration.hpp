// A stack calibration file: what `ridgeline calibrate --runs` fitted to the
// user's own measured runs, one entry per (GPU profile, framework) stack,
// and what `--calibration FILE` reads back for predict, compare, search,
// report and advise. Schema "ridgeline.stack_calibration/1" (docs/commands.md,
// "calibrate --runs"):
//
//   schema: ridgeline.stack_calibration/1
//   runs_file: runs.yaml
//   stacks:
//     - gpu: h100_sxm                 # the profile id the runs ran on
//       gpu_name: "NVIDIA H100 SXM5 80GB"
//       framework: torchtitan
//       runs: [pilot-a, pilot-b]
//       step_time:                    # measured = predicted x scale
//         scale: 1.15
//         prior: 1                    # the shipped model's
//         runs: 2
//         log_sd: 0.012               # sample sd of ln(measured / predicted); n >= 2
//         interval_80: [1.10, 1.20]   # 80% interval on the scale (posterior; no prior: t); n >= 2
//         note: "..."
//       allocator_reserve:            # peak reserved = allocated x (1 + value)
//         value: 0.1025               # absent: kept at the prior (note says why)
//         prior: 0.05                 # the framework's (frameworks/NAME.yaml)
//         runs: 2
//         log_sd: 0.004
//         note: "..."
//       residuals:                    # per run, for readers
//         - run: pilot-a
//           predicted_step_s: 1.2
//           measured_step_s: 1.38
//           predicted_reserved_gib: 58.4   # with the prior reserve
//           measured_memory_gib: 61.3
//           memory_kind: reserved
//
// Times in seconds, memory in GiB (the name says so), the rest ratios.
#pragma once

#include <string>
#include <vector>

#include "ridgeline/spec/hardware.hpp"

namespace ridgeline::spec {

inline constexpr const char* kStackCalibrationSchema = "ridgeline.stack_calibration/1";

/// One run's measurement beside its prediction (the residuals list).
struct StackRunResidual {
  std::string run;
  double predicted_step_s = 0, measured_step_s = 0;
  double predicted_reserved_bytes = 0;  // at the framework's (prior) reserve
  double measured_memory_bytes = 0;     // 0 = not measured
  std::string memory_kind;              // "reserved", "allocated" or "" (not measured)
};

struct StackCalibrationEntry {
  StackCorrection correction;
  /// The scale's 80% interval: the posterior's, or without a prior the t-interval (written for n >= 2).
  double time_interval_lo = 0, time_interval_hi = 0;
  std::string time_note;     // how the scale's uncertainty was made
  std::string reserve_note;  // how the reserve was fitted, or why it kept its prior
  /// The parameters a whole run does not separate from the step-time scale
  /// (the framework's host dispatch per op, the exposed share of
  /// communication), kept at the framework profile's values, and why
  /// (calibrate --runs prints it; not written to the file).
  std::string held_note;
  std::vector<StackRunResidual> residuals;
};

struct StackCalibrationSpec {
  std::string file;       // where it was read from ("" when built in code)
  std::string runs_file;  // the runs file it was fitted to
  std::vector<StackCalibrationEntry> stacks;
  /// Every stack's runs, in file order.
  std::vector<std::string> runs() const;
};

/// Reads and validates a calibration file; throws support::SpecError (located,
/// collected, unknown keys with a did-you-mean).
StackCalibrationSpec load_stack_calibration(const std::string& path);

/// The file's text (numbers written to read back exactly), with a comment
/// line on top.
std::string to_yaml(const StackCalibrationSpec& c);

/// Puts the stacks of `c` fitted on profile `hw.id` into hw.stacks (the
/// engine applies the one of a plan's framework).
void attach_stacks(HardwareSpec& hw, const StackCalibrationSpec& c);

}  // namespace ridgeline::spec
