// Whole measured runs -> a GPU + framework stack's correction
// (`ridgeline calibrate --runs`). A whole run identifies two physical
// parameters and no more:
//
//   step time    measured = predicted x k: the stack's training clock, its
//                kernels' efficiency and its framework overheads taken together
//                (a run cannot tell them apart). With r_i = ln(measured_i /
//                predicted_i) over the stack's n runs and a prior (the shipped
//                model, scale 1, with the spread of the published sources'
//                offsets, uncertainty/scale_prior.hpp): ln k = sum(r) / (n +
//                s^2 / tau^2), the runs' mean shrunk toward 0 (the shipped
//                value) by as much as one source's scatter s outweighs the
//                sources' offsets tau; the 80% interval on k is
//                exp(ln k -+ z_0.9 sd), sd the posterior's. Without a prior:
//                ln k = mean(r), the 80% t-interval exp(mean(r) -+ t_{0.9,
//                n-1} s / sqrt(n)); one run has no s.
//   memory       peak reserved (torch.cuda.max_memory_reserved) = predicted
//                allocated x (1 + rho): with q_i = ln(measured_i / allocated_i),
//                1 + rho = exp(mean(q)), kept in [0, 1] (the framework
//                profile's range); the prior is the framework's
//                allocator_reserve. Only runs that measured reserved memory
//                identify rho: allocated memory holds no allocator reserve.
//
// A parameter no run identifies keeps its prior, and the stack's notes say
// why: the framework's host dispatch per op and the exposed share of
// communication per link tier are in every run's step time together with
// the clock and the kernels' efficiency, and stay at the framework
// profile's values; the note says how the runs' predicted shares of them
// spread (runs that differ in them are what a separate fit would need).
// Times in seconds, memory in bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ridgeline/spec/runs.hpp"
#include "ridgeline/spec/stack_calibration.hpp"
#include "ridgeline/uncertainty/scale_prior.hpp"

namespace ridgeline::calibrate {

/// One run as the fit sees it: its stack, its prediction (uncorrected: the
/// profile and the framework as shipped) and its measurement.
struct RunPoint {
  std::string name;
  std::string gpu;       // the profile id
  std::string gpu_name;
  std::uint8_t framework = 0;
  double predicted_step_s = 0;
  double measured_step_s = 0;
  double gpus = 0, params = 0;  // the plan's GPU count and the model's total parameters (0 = not known)
  double predicted_allocated_bytes = 0;  // the prediction's peak allocated (memory::MemoryResult::allocated)
  double prior_reserve = 0;              // the framework's allocator reserve the prediction used
  double measured_memory_bytes = 0;      // 0 = not measured
  spec::MemoryKind memory_kind = spec::MemoryKind::kReserved;
  /// The prediction's exposed communication and host dispatch, as shares
  /// of its step, and whether the host's dispatch outlasts the kernels.
  double comm_share = 0, host_share = 0;
  bool host_bound = false;
};

/// Fits every stack (GPU profile, framework) the runs cover, in the order
/// of their first run. `runs_file` is recorded in the result. With `prior`,
/// each stack's scale is the posterior mean of ln(scale) (scale_posterior);
/// without, the runs' geometric mean.
spec::StackCalibrationSpec fit_runs(const std::vector<RunPoint>& runs, const std::string& runs_file,
                                    const uncertainty::ScalePrior* prior = nullptr);

}  // namespace ridgeline::calibrate
