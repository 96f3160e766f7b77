#include "ridgeline/techniques/params.hpp"

#include <algorithm>
#include <cmath>

namespace ridgeline::techniques {

double lora_params_per_layer(const spec::ModelSpec& m, const spec::PlanSpec& p) {
  // Hu et al. 2021: a d_in x d_out weight gains r (d_in + d_out) parameters.
  const double r = p.finetune.rank, h = m.hidden, q = m.q_dim(), kv = m.kv_dim(), f = m.ffn_hidden;
  const auto t = p.finetune.targets;
  const double experts = m.is_moe() ? m.moe.experts : 1;
  double n = 0;
  if (t & spec::kTargetQ) n += r * (h + q);
  if (t & spec::kTargetK) n += r * (h + kv);
  if (t & spec::kTargetV) n += r * (h + kv);
  if (t & spec::kTargetO) n += r * (q + h);
  if ((t & spec::kTargetGate) && spec::is_gated(m.activation)) n += experts * r * (h + f);
  if (t & spec::kTargetUp) n += experts * r * (h + f);
  if (t & spec::kTargetDown) n += experts * r * (f + h);
  return n;
}

DataParallelGroups data_parallel_groups(const spec::PlanSpec& p) {
  const auto& par = p.parallel;
  DataParallelGroups g;
  g.dense = std::max(1.0, static_cast<double>(par.dp) * par.cp);
  g.expert = std::max(1.0, g.dense / std::max(1, par.ep));
  return g;
}

LocalParams local_params(const spec::ModelSpec& m, const spec::PlanSpec& p) {
  const auto pc = spec::count_params(m);
  const double t = std::max(1, p.parallel.tp);
  const double pp = std::max(1, p.parallel.pp);
  const double ep = std::max(1, p.parallel.ep);
  const double L_local = std::ceil(m.layers / pp);
  LocalParams lp;
  lp.layers_local = L_local;
  lp.model_total = pc.total;
  // Layer: attention and MLP matrices split by TP (experts also by EP); norms
  // and an MoE router (hidden x experts) replicated.
  const double router = m.is_moe() ? static_cast<double>(m.hidden) * m.moe.experts : 0.0;
  const double expert_layer = (pc.mlp_per_layer - router) / (t * ep);
  const double layer = pc.attention_per_layer / t + expert_layer + router + pc.norms_per_layer;
  const double emb = pc.embedding / t, head = pc.lm_head / t;
  const double ends = pp == 1 ? emb + head + pc.final_norm : std::max(emb, head + pc.final_norm);
  lp.weights = L_local * layer + ends;
  if (m.is_moe()) lp.expert_weights = L_local * expert_layer;
  const double h = m.hidden, q = m.q_dim(), kv = m.kv_dim(), f = m.ffn_hidden;
  const double experts = m.is_moe() ? m.moe.experts / ep : 1;
  const bool gated = spec::is_gated(m.activation);
  if (p.finetune.mode == spec::FinetuneMode::kFull) {
    lp.trainable = lp.weights;
    lp.expert_trainable = lp.expert_weights;
    lp.frozen = 0;
    // Matrices: QKV, out, up (gate+up), down per layer; embedding / LM head.
    const double rc_layer = (h + (q + 2 * kv) / t) + (q / t + h) + experts * ((gated ? 2 : 1) * f / t + h) +
                            experts * (f / t + h);
    const double mat_layer = pc.attention_per_layer / t + pc.mlp_per_layer / (t * ep) -
                             (m.bias ? (q + 2 * kv) / t + h + experts * ((gated ? 2 : 1) * f / t + h) : 0);
    lp.matrix_rows_cols = L_local * rc_layer + (pp == 1 ? (m.vocab / t + h) * (m.tied_embeddings ? 1 : 2)
                                                        : (m.vocab / t + h));
    lp.matrix_elems = L_local * mat_layer + (pp == 1 ? emb + head : std::max(emb, head));
    lp.tensors = L_local * (4 * (m.bias ? 2 : 1) + (m.norm == spec::Norm::kLayerNorm ? 4 : 2)) + 3;
    lp.model_trainable = pc.total;
  } else {
    const double lora_layer = lora_params_per_layer(m, p) / t;
    lp.frozen = lp.weights;
    lp.trainable = L_local * lora_layer;
    lp.weights += lp.trainable;
    lp.matrix_elems = lp.trainable;
    // Each adapter pair: A (r x d_in) and B (d_out x r).
    int pairs = 0;
    for (int bit = 1; bit <= 64; bit <<= 1) pairs += (p.finetune.targets & bit) ? 1 : 0;
    lp.matrix_rows_cols = L_local * pairs * 2 * (p.finetune.rank + h);
    lp.tensors = L_local * pairs * 2;
    lp.model_trainable = m.layers * lora_params_per_layer(m, p);
  }
  return lp;
}

double optimizer_state_bytes(const spec::OptimizerSpec& o, const LocalParams& lp) {
  const double P = std::max(1.0, lp.trainable);
  const double vec = std::max(0.0, lp.trainable - lp.matrix_elems);  // vectors keep full statistics
  switch (o.kind) {
    case spec::OptimizerKind::kSgd: return o.momentum ? 4.0 : 0.0;
    case spec::OptimizerKind::kAdam:
    case spec::OptimizerKind::kAdamW: return 8.0;  // fp32 m and v
    case spec::OptimizerKind::kAdafactor:
      // Shazeer & Stern 2018: row and column second-moment statistics (n + m floats per n x m matrix).
      return (4.0 * (lp.matrix_rows_cols + vec)) / P + (o.first_moment ? 4.0 : 0.0);
    case spec::OptimizerKind::kCame:
      // Luo et al. 2023: Adafactor's factored v, a full first moment, factored confidence (r, c).
      return (8.0 * lp.matrix_rows_cols + 8.0 * vec) / P + 4.0;
    case spec::OptimizerKind::kSophia: return 8.0;   // m and the diagonal Hessian estimate h
    case spec::OptimizerKind::kLion: return 4.0;     // momentum only
    case spec::OptimizerKind::kAdam8bit:
      // Dettmers et al. 2022: m and v in 8 bits, one fp32 absmax per 2048-element block each.
      return 2.0 + 2.0 * 4.0 / 2048.0;
  }
  return 8.0;
}

}  // namespace ridgeline::techniques
