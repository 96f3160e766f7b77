#include "ridgeline/techniques/params.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
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

namespace {

LocalParams compute_local_params(const spec::ModelSpec& m, const spec::PlanSpec& p, PipelineStage stage) {
  const auto pc = spec::count_params(m);
  const double t = std::max(1, p.parallel.tp);
  const double pp = std::max(1, p.parallel.pp);
  const double ep = std::max(1, p.parallel.ep);
  LocalParams lp;
  double L_local = std::ceil(m.layers / pp);
  lp.model_total = pc.total;
  const double h = m.hidden, q = m.q_dim(), f = m.ffn_hidden, V = m.vocab;
  const double nb = m.bias ? 1.0 : 0.0;
  const bool gated = spec::is_gated(m.activation);
  // Attention split by TP; with more TP ranks than KV heads each rank holds
  // one whole KV head (the graph's K/V projection width, graph/build.cpp).
  const double kv_local = std::max(1.0, static_cast<double>(m.kv_heads) / t) * m.head_dim;
  const double attn_matrices = h * (q / t + 2 * kv_local) + q / t * h;
  const double attn = attn_matrices + nb * (q / t + 2 * kv_local + h / t);
  // MLP (experts) split by TP (and EP); norms and an MoE router (hidden x
  // experts) replicated.
  const double router = m.is_moe() ? h * m.moe.experts : 0.0;
  const double expert_layer = (pc.mlp_per_layer - router) / (t * ep);
  const double experts_all = m.is_moe() ? m.moe.experts : 1;
  const double mlp_matrices = experts_all * (gated ? 3.0 : 2.0) * h * f / (t * ep);
  const double layer = attn + expert_layer + router + pc.norms_per_layer;
  // The ends: the embedding on the first stage, final norm and LM head on
  // the last (under PP a tied LM head is a copy of the word embeddings).
  const double emb = pc.embedding / t;
  const double head = (pp > 1 && m.tied_embeddings ? V * h : pc.lm_head) / t;
  bool first = true, last = true;
  if (pp > 1) {
    if (stage == PipelineStage::kLargest)
      stage = emb >= head + pc.final_norm ? PipelineStage::kFirst : PipelineStage::kLast;
    first = stage == PipelineStage::kFirst;
    last = stage == PipelineStage::kLast;
    // Uneven stages: this stage's own layers (the largest end's for kLargest).
    const auto& par = p.parallel;
    if (par.first_stage_layers > 0 || par.last_stage_layers > 0) {
      const int index = first ? 0 : last ? par.pp - 1 : 1;
      L_local = spec::stage_layers(m.layers, par.pp, par.first_stage_layers, par.last_stage_layers, index);
    }
  }
  lp.layers_local = L_local;
  const double ends = (first ? emb : 0.0) + (last ? head + pc.final_norm : 0.0);
  const double end_matrices = (first ? 1.0 : 0.0) + (last && head > 0 ? 1.0 : 0.0);
  lp.weights = L_local * layer + ends;
  lp.linear_weights = L_local * (attn_matrices + mlp_matrices);
  lp.norm_weights = L_local * pc.norms_per_layer + (last ? pc.final_norm : 0.0);
  if (m.is_moe()) lp.expert_weights = L_local * expert_layer;
  const double experts = m.is_moe() ? m.moe.experts / ep : 1;
  if (p.finetune.mode == spec::FinetuneMode::kFull) {
    lp.trainable = lp.weights;
    lp.expert_trainable = lp.expert_weights;
    lp.frozen = 0;
    // Matrices: QKV, out, up (gate+up), down per layer (and the router); embedding / LM head.
    const double rc_layer = (h + q / t + 2 * kv_local) + (q / t + h) + experts * ((gated ? 2 : 1) * f / t + h) +
                            experts * (f / t + h);
    lp.matrix_rows_cols = L_local * rc_layer + end_matrices * (V / t + h);
    lp.matrix_elems = L_local * (attn_matrices + mlp_matrices + router) + (first ? emb : 0.0) + (last ? head : 0.0);
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

/// Everything compute_local_params reads (count_params's model fields;
/// the plan's TP, PP, EP, uneven stages and fine-tuning) as one array of
/// ints, compared whole. The bindings list every field of ModelSpec and
/// FinetuneSpec, so a field added to either stops this compiling until it is
/// placed in or out of the key.
using ParamsKey = std::array<int, 24>;

ParamsKey params_key(const spec::ModelSpec& m, const spec::PlanSpec& p, PipelineStage stage) {
  const auto& [id, name, hub_id, source_file, notes, layers, hidden, heads, kv_heads, head_dim, ffn_hidden, vocab,
               max_seq_len, activation, norm, position, tied_embeddings, bias, dropout, moe] = m;
  const auto& [mode, rank, targets] = p.finetune;
  const auto& q = p.parallel;
  // The stage, TP, PP and EP first: local_params's table is indexed by them.
  return {static_cast<int>(stage), q.tp, q.pp, q.ep, q.first_stage_layers, q.last_stage_layers,
          static_cast<int>(mode), rank, targets, layers, hidden, heads, kv_heads, head_dim, ffn_hidden, vocab,
          max_seq_len, static_cast<int>(activation), static_cast<int>(norm), static_cast<int>(position),
          tied_embeddings, bias, moe.experts, moe.top_k};
}

}  // namespace

LocalParams local_params(const spec::ModelSpec& m, const spec::PlanSpec& p, PipelineStage stage) {
  // One evaluation asks for the same counts several times (the DP
  // collectives, the optimizer step, each end stage's memory, the totals),
  // and a search asks again for every layout of one TP x PP x EP split.
  // Answers are kept per thread in a small table indexed by the key's hash
  // (one compare per lookup; a scan of the last few entries took 170
  // instructions a lookup), each checked against its whole key.
  constexpr std::size_t kSlots = 32;
  struct Slot {
    ParamsKey key;
    LocalParams value;
    bool used = false;
  };
  thread_local std::array<Slot, kSlots> table{};
  const ParamsKey key = params_key(m, p, stage);
  // The index hashes what tells one search's layouts apart (the stage,
  // TP, PP and EP: the key's first four); the compare reads the rest.
  const std::uint64_t h = (static_cast<std::uint64_t>(key[0]) * 0x9E3779B97F4A7C15ull) ^
                          (static_cast<std::uint64_t>(key[1]) * 0xFF51AFD7ED558CCDull) ^
                          (static_cast<std::uint64_t>(key[2]) * 0xC4CEB9FE1A85EC53ull) ^
                          (static_cast<std::uint64_t>(key[3]) * 0xD6E8FEB86659FD93ull);
  Slot& slot = table[(h >> 40) % kSlots];
  // Word by word: the key was just stored word by word, and reading it back
  // in wider vector loads stalls on store forwarding (perf annotate: a
  // tenth of the search's samples).
  bool same = slot.used;
  for (std::size_t j = 0; same && j < key.size(); ++j) same = slot.key[j] == key[j];
  if (same) return slot.value;
  slot.key = key;
  slot.value = compute_local_params(m, p, stage);
  slot.used = true;
  return slot.value;
}

double optimizer_state_bytes(const spec::OptimizerSpec& o, const LocalParams& lp, double e) {
  const double P = std::max(1.0, lp.trainable);
  const double vec = std::max(0.0, lp.trainable - lp.matrix_elems);  // vectors keep full statistics
  switch (o.kind) {
    case spec::OptimizerKind::kSgd: return o.momentum ? e : 0.0;
    case spec::OptimizerKind::kAdam:
    case spec::OptimizerKind::kAdamW: return 2 * e;  // m and v
    case spec::OptimizerKind::kAdafactor:
      // Shazeer & Stern 2018: row and column second-moment statistics (n + m
      // floats per n x m matrix), fp32 (Hugging Face's Adafactor upcasts).
      return (4.0 * (lp.matrix_rows_cols + vec)) / P + (o.first_moment ? 4.0 : 0.0);
    case spec::OptimizerKind::kCame:
      // Luo et al. 2023: Adafactor's factored v, a full first moment, factored confidence (r, c).
      return (8.0 * lp.matrix_rows_cols + 8.0 * vec) / P + 4.0;
    case spec::OptimizerKind::kSophia: return 2 * e;  // m and the diagonal Hessian estimate h
    case spec::OptimizerKind::kLion: return e;        // momentum only
    case spec::OptimizerKind::kAdam8bit:
      // Dettmers et al. 2022: m and v in 8 bits, one fp32 absmax per 2048-element block each.
      return 2.0 + 2.0 * 4.0 / 2048.0;
  }
  return 2 * e;
}

}  // namespace ridgeline::techniques
