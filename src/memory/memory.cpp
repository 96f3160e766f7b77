#include "ridgeline/memory/memory.hpp"

#include <algorithm>

#include "ridgeline/techniques/params.hpp"

namespace ridgeline::memory {

double in_flight_microbatches(const spec::PlanSpec& p, double m) {
  const double pp = std::max(1, p.parallel.pp);
  if (pp <= 1) return 1;
  // 1F1B: the first stage holds p micro-batches (Narayanan et al. 2021);
  // interleaved: p (1 + (p - 1) / (p v)) (Korthikanti et al. 2022, Sec. 4.2.3).
  double n = pp;
  if (p.parallel.schedule == spec::PipelineSchedule::kInterleaved && p.parallel.virtual_stages > 1)
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
    if (k.phase != spec::Phase::kForward) continue;
    const double s = k.saved_bytes + k.saved_core_bytes;
    (k.has(graph::kLayer) ? f.layer_saved : f.other_saved) += s;
    if (k.has(graph::kFp8Gemm)) f.fp8_linear_params += k.weight_params * k.gemm.batch * k.count;
  }
  f.saved_layer_fraction = g.saved_layer_fraction;
  f.checkpointed_layers = g.checkpointed_layers;
  f.checkpoint_bytes_per_layer = g.checkpoint_bytes_per_layer;
  f.recompute_working = g.recompute_working_bytes;
  f.logits_transient = g.logits_transient_bytes;
  f.tokens = g.tokens;
  f.act_bytes = g.act_bytes;
  f.layers = g.layers;
  return f;
}

MemoryResult estimate(const GraphFacts& g, const spec::ModelSpec& m, const spec::PlanSpec& p,
                      const spec::HardwareSpec& hw, double micro_batches) {
  MemoryResult r;
  const auto lp = techniques::local_params(m, p);
  const auto& par = p.parallel;
  const auto groups = techniques::data_parallel_groups(p);
  const double dgroup = groups.dense;
  const bool mixed = p.precision != spec::Precision::kFp32 && p.precision != spec::Precision::kTf32;
  const double wb = mixed ? 2.0 : 4.0;
  // Weights: trainable at working precision; a frozen base at 16 bits (LoRA)
  // or NF4 with double-quantized constants, 4.127 bits (QLoRA).
  const double frozen_b = p.finetune.mode == spec::FinetuneMode::kQlora ? 4.127 / 8.0 : wb;
  double weights = (lp.weights - lp.frozen) * wb + lp.frozen * frozen_b;
  // Transformer Engine keeps an fp8 copy of each linear weight and its
  // transpose beside the 16-bit weight: +2 bytes per linear parameter.
  weights += 2.0 * g.fp8_linear_params;
  const double expert_weights = lp.expert_weights * (lp.expert_trainable > 0 ? wb : frozen_b);
  // ZeRO stage s shards what it covers over the data-parallel group: dense
  // bytes over DP x CP ranks, expert bytes over DP x CP / EP.
  auto shard = [&](int stage, double bytes, double expert_bytes) {
    if (par.zero < stage) return bytes;
    return (bytes - expert_bytes) / dgroup + expert_bytes / groups.expert;
  };
  r.weights = shard(3, weights, expert_weights);
  r.gradients = shard(2, lp.trainable * wb, lp.expert_trainable * wb);
  // QLoRA trains its adapters in bf16 without fp32 copies (Dettmers et al.
  // 2023, Sec. 3); every other mixed-precision plan keeps fp32 master weights.
  const bool masters = mixed && p.finetune.mode != spec::FinetuneMode::kQlora;
  r.master_weights = masters ? shard(1, lp.trainable * 4.0, lp.expert_trainable * 4.0) : 0.0;
  const double opt_b = techniques::optimizer_state_bytes(p.optimizer, lp);
  r.optimizer = shard(1, lp.trainable * opt_b, lp.expert_trainable * opt_b);

  // Activations.
  r.activations_per_layer = g.layer_saved;
  const double per_mb = g.other_saved + g.layers * g.layer_saved * g.saved_layer_fraction +
                        g.checkpointed_layers * g.checkpoint_bytes_per_layer;
  r.activations_per_microbatch = per_mb;
  r.in_flight_microbatches = in_flight_microbatches(p, micro_batches);
  r.recompute_working = g.recompute_working;
  r.activations = r.in_flight_microbatches * per_mb + g.recompute_working;

  // Buffers: fp32 logits of an unfused loss, the logits' gradient, ZeRO-3's
  // gathered weights of two layers (current + prefetched).
  const double t = std::max(1, par.tp);
  r.buffers = g.logits_transient + g.tokens * (m.vocab / t) * g.act_bytes;
  if (par.zero >= 3 && dgroup > 1) r.buffers += 2 * (lp.weights / std::max(1.0, lp.layers_local)) * wb;
  const bool distributed = par.gpus() > 1;
  r.workspace = kWorkspaceBytes + (distributed ? kNcclBytes : 0.0);
  r.fragmentation = kFragmentationFrac * (r.activations + r.buffers);
  r.total = r.weights + r.gradients + r.master_weights + r.optimizer + r.activations + r.buffers + r.workspace +
            r.fragmentation;
  r.capacity = hw.memory_bytes;
  r.fits = r.total <= r.capacity;
  return r;
}

}  // namespace ridgeline::memory
