#include "ridgeline/memory/memory.hpp"

#include <algorithm>

#include "ridgeline/spec/precision.hpp"
#include "ridgeline/techniques/params.hpp"

namespace ridgeline::memory {

double in_flight_microbatches(const spec::PlanSpec& p, double m) {
  const double pp = std::max(1, p.parallel.pp);
  if (pp <= 1) return 1;
  // 1F1B: the first stage holds p micro-batches (Narayanan et al. 2021);
  // interleaved: p (1 + (p - 1) / (p v)) (Korthikanti et al. 2022, Sec. 4.2.3).
  double n = pp;
  if (p.parallel.virtual_stages > 1)
    n = pp * (1 + (pp - 1) / (pp * p.parallel.virtual_stages));
  return std::min(n, std::max(1.0, m));
}

double layer_saved_bytes(const graph::Graph& g) {
  double s = 0;
  for (const auto& k : g.kernels)
    if (k.phase == spec::Phase::kForward && k.has(graph::kLayer)) s += k.saved_bytes + k.saved_core_bytes;
  return s;
}

GraphFacts facts(const graph::Graph& g) {
  GraphFacts f;
  for (const auto& k : g.kernels) {
    const double s = k.saved_bytes + k.saved_core_bytes;
    if (k.phase == spec::Phase::kRecompute) {
      // What one segment's recomputation rebuilds, alive during its backward.
      f.recompute_working += s * k.saved_fraction * k.count;
      continue;
    }
    if (k.phase != spec::Phase::kForward) continue;
    f.logits_transient = std::max(f.logits_transient, k.workspace_bytes);
    if (k.has(graph::kLayer)) {
      f.layer_saved += s;
      f.layer_alive += s * k.saved_fraction;
    } else {
      f.other_saved += s * k.saved_fraction * k.count;
    }
    if (k.has(graph::kFp8Gemm)) {
      f.fp8_linear_params += k.weight_params * k.gemm.batch * k.count;
      f.fp8_linears += k.gemm.batch * k.count;
    }
  }
  f.tokens = g.tokens;
  f.act_bytes = g.act_bytes;
  f.layers = g.layers;
  return f;
}

ModelState model_state(const spec::ModelSpec& m, const spec::PlanSpec& p, double fp8_linear_params) {
  ModelState r;
  const auto lp = techniques::local_params(m, p);
  const auto groups = techniques::data_parallel_groups(p);
  const spec::PrecisionPolicy pol = spec::precision_policy(p);
  const double wb = pol.weight_bytes;
  // Weights: trainable at working precision, a frozen base at the policy's
  // frozen width (16 bits for LoRA, NF4 for QLoRA).
  double weights = (lp.weights - lp.frozen) * wb + lp.frozen * pol.frozen_weight_bytes;
  // Transformer Engine keeps a quantized copy of each linear weight and its
  // transpose beside the 16-bit weight: +2 bytes per linear parameter in fp8
  // (plus block scales: blockwise 2 x 4/16384, mxfp8 2 x 1/32), 2 x 9/16 in NVFP4.
  if (pol.fp8_linear) weights += 2.0 * pol.quant.weight_bytes_per_elem * fp8_linear_params;
  const double expert_weights = lp.expert_weights * (lp.expert_trainable > 0 ? wb : pol.frozen_weight_bytes);
  // ZeRO stage s shards what it covers over the data-parallel group: dense
  // bytes over DP x CP ranks, expert bytes over DP x CP / EP.
  auto shard = [&](int stage, double bytes, double expert_bytes) {
    if (p.parallel.zero < stage) return bytes;
    return (bytes - expert_bytes) / groups.dense + expert_bytes / groups.expert;
  };
  r.weights = shard(3, weights, expert_weights);
  r.gradients = shard(2, lp.trainable * pol.gradient_bytes, lp.expert_trainable * pol.gradient_bytes);
  r.master_weights = shard(1, lp.trainable * pol.master_bytes, lp.expert_trainable * pol.master_bytes);
  const double opt_b = techniques::optimizer_state_bytes(p.optimizer, lp);
  r.optimizer = shard(1, lp.trainable * opt_b, lp.expert_trainable * opt_b);
  return r;
}

MemoryResult estimate(const GraphFacts& g, const spec::ModelSpec& m, const spec::PlanSpec& p,
                      const spec::HardwareSpec& hw, double micro_batches) {
  MemoryResult r;
  const auto lp = techniques::local_params(m, p);
  const auto& par = p.parallel;
  const double dgroup = techniques::data_parallel_groups(p).dense;
  const double wb = spec::precision_policy(p).weight_bytes;
  const ModelState ms = model_state(m, p, g.fp8_linear_params);
  r.weights = ms.weights;
  r.gradients = ms.gradients;
  r.master_weights = ms.master_weights;
  r.optimizer = ms.optimizer;

  // Activations.
  r.activations_per_layer = g.layer_saved;
  const double per_mb = g.other_saved + g.layers * g.layer_alive;
  r.activations_per_microbatch = per_mb;
  r.in_flight_microbatches = in_flight_microbatches(p, micro_batches);
  r.recompute_working = g.recompute_working;
  r.activations = r.in_flight_microbatches * per_mb + g.recompute_working;

  // Buffers: fp32 logits of an unfused loss, the logits' gradient, ZeRO-3's
  // gathered weights of two layers (current + prefetched).
  const double t = std::max(1, par.tp);
  r.buffers = g.logits_transient + g.tokens * (m.vocab / t) * g.act_bytes;
  if (par.zero >= 3 && dgroup > 1) r.buffers += 2 * (lp.weights / std::max(1.0, lp.layers_local)) * wb;
  // fp8 scaling state, persistent and small: per quantized linear three
  // tensors (input, weight, output gradient) of spec::QuantRecipe state each
  // (delayed: a 1024-entry fp32 amax history plus scale and scale_inv).
  // Block scales travel with their tensors (saved activations, weight copies).
  if (const auto pol = spec::precision_policy(p); pol.fp8_linear)
    r.buffers += 3 * pol.quant.state_bytes_per_tensor * g.fp8_linears;
  const bool distributed = par.gpus() > 1;
  r.workspace = kWorkspaceBytes + (distributed ? kNcclBytes : 0.0);
  r.fragmentation = kFragmentationFrac * (r.activations + r.buffers);
  r.total = 0;
  for (const auto& c : kMemoryCategories) r.total += r.*c.bytes;
  r.capacity = hw.memory_bytes;
  r.fits = r.total <= r.capacity;
  return r;
}

}  // namespace ridgeline::memory
