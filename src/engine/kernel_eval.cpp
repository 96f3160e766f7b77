#include "ridgeline/engine/kernel_eval.hpp"

namespace ridgeline::engine {

cost::KernelCost evaluate_kernel(const graph::Kernel& k, const spec::HardwareSpec& hw, const KernelEvalOptions& opt) {
  cost::ResolveOptions r;
  r.use_calibration = opt.use_calibration;
  r.power_limit_w = opt.power_limit_w;
  r.locked_clock_hz = opt.locked_clock_hz;
  r.without_group = opt.fit_without_group;
  return cost::cost_kernel(k, cost::resolve(hw, r), opt.cuda_graphs);
}

}  // namespace ridgeline::engine
