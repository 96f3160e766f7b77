// Engine, one kernel: the cost of a single kernel on one GPU, with the same
// efficiencies (the profile's calibration block or the documented defaults)
// and the same roofline (cost::cost_kernel) that evaluate() applies to every
// kernel of a step. For clients that compare one kernel against a
// measurement (validation/, a `ridgeline kernel` command), so that no second
// cost path exists. Units: seconds, FLOP, bytes.
#pragma once

#include "ridgeline/cost/cost.hpp"
#include "ridgeline/graph/graph.hpp"
#include "ridgeline/spec/hardware.hpp"

namespace ridgeline::engine {

struct KernelEvalOptions {
  bool use_calibration = true;  // the profile's calibration block, when it has one
  bool cuda_graphs = false;     // launches at the CUDA-graph replay cost
  double power_limit_w = 0;     // board power limit (W); 0 = the profile's TDP
  double locked_clock_hz = 0;   // a locked clock (nvidia-smi -lgc); 0 = the sustained clock
  std::string_view fit_without_group;  // see cost::ResolveOptions::without_group
};

/// One instance of `k` on `hw`: cost::cost_kernel(k, cost::resolve(hw, ...), cuda_graphs).
cost::KernelCost evaluate_kernel(const graph::Kernel& k, const spec::HardwareSpec& hw,
                                 const KernelEvalOptions& opt = {});

}  // namespace ridgeline::engine
