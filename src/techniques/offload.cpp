#include "ridgeline/techniques/offload.hpp"

#include <algorithm>

#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/precision.hpp"
#include "ridgeline/techniques/params.hpp"

namespace ridgeline::techniques {

OffloadCost offload_cost(const spec::ModelSpec& m, const spec::PlanSpec& p, const spec::HardwareSpec& hw,
                         double micro_batches, double forward_s, double backward_s) {
  if (!p.offload.any()) return {};
  return offload_cost(p, hw, local_params(m, p), micro_batches, forward_s, backward_s);
}

OffloadCost offload_cost(const spec::PlanSpec& p, const spec::HardwareSpec& hw, const LocalParams& lp,
                         double micro_batches, double forward_s, double backward_s) {
  OffloadCost c;
  if (!p.offload.any()) return c;
  const DataParallelGroups groups = data_parallel_groups(p);
  // ZeRO's partition of this GPU: dense parameters over DP x CP ranks,
  // experts over DP x CP / EP (memory::model_state shards alike).
  auto shard = [&](double all, double experts) {
    if (p.parallel.zero < 1) return all;
    return (all - experts) / groups.dense + experts / groups.expert;
  };
  const spec::PrecisionPolicy pol = spec::precision_policy(p);
  const double link = std::max(1.0, hw.host.link_bytes_per_s);
  const double mb = std::max(1.0, micro_batches);
  if (p.offload.optimizer_on_cpu()) {
    c.cpu_params = shard(lp.trainable, lp.expert_trainable);
    const bool per_microbatch =
        spec::framework(p.framework).grad_reduce_per_microbatch && p.parallel.zero >= 2;
    const double copies = per_microbatch ? mb : 1.0;
    const double copy_s = c.cpu_params * pol.gradient_bytes / link;
    c.grad_d2h_bytes = copies * c.cpu_params * pol.gradient_bytes;
    c.grad_d2h_s = copies * copy_s;
    const double d2h_exposed = copies * std::max(0.0, copy_s - std::max(0.0, backward_s));
    c.cpu_optimizer_s = c.cpu_params / std::max(1.0, hw.host.cpu_adam_params_per_s);
    // The updated parameters stay on the host when the parameters live there.
    if (!p.offload.params_on_cpu()) {
      c.param_h2d_bytes = c.cpu_params * pol.weight_bytes;
      c.param_h2d_s = c.param_h2d_bytes / link;
    }
    c.hidden_s += c.grad_d2h_s - d2h_exposed;
    c.exposed_s += d2h_exposed + c.cpu_optimizer_s + c.param_h2d_s;
  }
  if (p.offload.params_on_cpu()) {
    // The shard as stored (a frozen QLoRA base's linear weights in NF4).
    const double stored_b = lp.weights > 0 ? stored_weight_bytes(pol, lp) / lp.weights : pol.weight_bytes;
    const double shard_bytes = shard(lp.weights, lp.expert_weights) * stored_b;
    const double fetch_s = 2.0 * shard_bytes / link;  // before forward and before backward
    c.param_fetch_bytes = mb * 2.0 * shard_bytes;
    c.param_fetch_s = mb * fetch_s;
    const double exposed = mb * std::max(0.0, fetch_s - std::max(0.0, forward_s + backward_s));
    c.hidden_s += c.param_fetch_s - exposed;
    c.exposed_s += exposed;
  }
  return c;
}

}  // namespace ridgeline::techniques
