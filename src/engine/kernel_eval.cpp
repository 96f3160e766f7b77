#include "ridgeline/engine/kernel_eval.hpp"

namespace ridgeline::engine {

cost::KernelCost evaluate_kernel(const graph::Kernel& k, const spec::HardwareSpec& hw, const KernelEvalOptions& opt) {
  return cost::cost_kernel(k, cost::resolve(hw, opt.use_calibration), opt.cuda_graphs);
}

}  // namespace ridgeline::engine
