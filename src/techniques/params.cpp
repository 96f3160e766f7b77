#include "ridgeline/techniques/params.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cmath>

namespace ridgeline::techniques {

double lora_params_per_layer(const spec::ModelSpec& m, const spec::FinetuneSpec& ft) {
  // Hu et al. 2021: a d_in x d_out weight gains r (d_in + d_out) parameters.
  const double r = ft.rank, h = m.hidden, q = m.q_dim(), kv = m.kv_dim(), f = m.ffn_hidden;
  const auto t = ft.targets;
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

double lora_params_per_layer(const spec::ModelSpec& m, const spec::PlanSpec& p) {
  return lora_params_per_layer(m, p.finetune);
}

namespace {

/// What local_params reads of a plan: its TP, PP, EP, uneven stages and fine-tuning.
struct Split {
  int tp, pp, ep, first_stage_layers, last_stage_layers;
  const spec::FinetuneSpec& finetune;
};

/// What every stage of one plan shares: the per-layer counts as TP and EP
/// split them, and the ends (formed once for the two or three stages an
/// evaluation reads).
struct Shared {
  double t, pp, ep, h, q, f, V;
  bool gated;
  double kv_local, attn_matrices, attn_rows_cols, router, expert_layer, mlp_matrices, layer, dense_ffn,
      dense_mlp_matrices, dense_layer, emb, head, mtp_all, mtp_extra;
  PipelineStage larger;  // the end that holds more (kFirst with PP = 1)
};

Shared shared_counts(const spec::ModelSpec& m, const spec::ParamCounts& pc, const Split& p) {
  const double t = std::max(1, p.tp);
  const double pp = std::max(1, p.pp);
  const double ep = std::max(1, p.ep);
  const double h = m.hidden, q = m.q_dim(), f = m.ffn_hidden, V = m.vocab;
  const double nb = m.bias ? 1.0 : 0.0;
  const bool gated = spec::is_gated(m.activation);
  // Attention split by TP; with more TP ranks than KV heads each rank holds
  // one whole KV head (the graph's K/V projection width, graph/build.cpp).
  const double kv_local = std::max(1.0, static_cast<double>(m.kv_heads) / t) * m.head_dim;
  double attn_matrices = h * (q / t + 2 * kv_local) + q / t * h;
  double attn = attn_matrices + nb * (q / t + 2 * kv_local + h / t);
  double attn_rows_cols = (h + q / t + 2 * kv_local) + (q / t + h);
  if (m.is_mla()) {
    // Latent attention (spec::MlaSpec): the down-projections and the
    // latents' RMSNorms replicated, the up-projections and W_O split by heads
    // (graph/build.cpp).
    const auto& a = m.mla;
    const double H = m.heads, d_qk = a.qk_nope_head_dim + a.qk_rope_head_dim, rq = a.q_lora_rank;
    const double rkv = a.kv_lora_rank, up_kv = H * (a.qk_nope_head_dim + a.v_head_dim);
    const double down = (rq > 0 ? h * rq : 0.0) + h * (rkv + a.qk_rope_head_dim);
    const double split = (rq > 0 ? rq : h) * H * d_qk + rkv * up_kv + H * a.v_head_dim * h;
    attn_matrices = down + split / t;
    attn = attn_matrices + rq + rkv;
    attn_rows_cols = (rq > 0 ? (h + rq) + (rq + H * d_qk / t) : h + H * d_qk / t) + (h + rkv + a.qk_rope_head_dim) +
                     (rkv + up_kv / t) + (H * a.v_head_dim / t + h);
  }
  // MLP (experts) split by TP (and EP); norms and an MoE router (hidden x
  // experts) replicated.
  const double router = m.is_moe() ? h * m.moe.experts : 0.0;
  const double router_bias = m.is_moe() && m.moe.router_bias ? m.moe.experts : 0.0;
  // An MoE layer's shared expert (and Qwen2-MoE's gate on it) on every EP
  // rank, split by TP as a dense MLP.
  const auto mlp_width = [&](double w) {
    return w > 0 ? (gated ? 3.0 : 2.0) * h * w + nb * ((gated ? 2.0 : 1.0) * w + h) : 0.0;
  };
  const double shared_matrices = m.is_moe() ? (gated ? 3.0 : 2.0) * h * m.moe.shared_ffn : 0.0;
  const double shared = m.is_moe() ? mlp_width(m.moe.shared_ffn) + (m.moe.shared_gate ? h : 0.0) : 0.0;
  const double expert_layer = (pc.mlp_per_layer - router - router_bias - shared) / (t * ep);
  const double experts_all = m.is_moe() ? m.moe.experts : 1;
  const double mlp_matrices = experts_all * (gated ? 3.0 : 2.0) * h * f / (t * ep) + shared_matrices / t;
  const double layer = attn + expert_layer + router + router_bias + shared / t + pc.norms_per_layer;
  // An MoE model's dense first layers: attention and a dense MLP of width dense_ffn.
  const double dense_ffn = m.is_moe() ? m.moe.dense_ffn : 0.0;
  const double dense_mlp_matrices = (gated ? 3.0 : 2.0) * h * dense_ffn / t;
  const double dense_layer = attn + mlp_width(dense_ffn) / t + pc.norms_per_layer;
  // The ends: the embedding on the first stage, final norm and LM head on
  // the last (under PP a tied LM head is a copy of the word embeddings).
  const double emb = pc.embedding / t;
  const double head = (pp > 1 && m.tied_embeddings ? V * h : pc.lm_head) / t;
  // Multi-token prediction (DeepSeek-V3 Sec. 2.2): each depth one more
  // layer of the MoE type, its eh_proj (2h x h, replicated) and two RMSNorms
  // (enorm, hnorm), on the last stage; embedding and head shared.
  const double mtp_all = std::max(0, m.mtp_layers);
  const double mtp_extra = 2 * h * h + 2 * pc.final_norm;
  const PipelineStage larger = pp > 1 && !(emb >= head + pc.final_norm + mtp_all * (layer + mtp_extra))
                                   ? PipelineStage::kLast
                                   : PipelineStage::kFirst;
  return {t,         pp,          ep,         h,          q,     f,    V,       gated,     kv_local, attn_matrices,
          attn_rows_cols, router, expert_layer, mlp_matrices, layer, dense_ffn, dense_mlp_matrices, dense_layer,
          emb,       head,        mtp_all,    mtp_extra,  larger};
}

/// One stage's parameters written into `lp` (in place: a LocalParams is
/// half a kilobyte and every evaluation forms two), from the plan's shared
/// counts; kLargest is the end that holds more.
void fill_local_params(LocalParams& lp, const spec::ModelSpec& m, const spec::ParamCounts& pc, const Split& p,
                       const Shared& S, PipelineStage stage) {
  const double t = S.t, pp = S.pp, ep = S.ep, h = S.h, q = S.q, f = S.f, V = S.V;
  const bool gated = S.gated;
  const double kv_local = S.kv_local, attn_matrices = S.attn_matrices, attn_rows_cols = S.attn_rows_cols,
               router = S.router, expert_layer = S.expert_layer, mlp_matrices = S.mlp_matrices, layer = S.layer,
               dense_ffn = S.dense_ffn, dense_mlp_matrices = S.dense_mlp_matrices, dense_layer = S.dense_layer,
               emb = S.emb, head = S.head, mtp_all = S.mtp_all, mtp_extra = S.mtp_extra;
  lp = LocalParams{};
  double L_local = std::ceil(m.layers / pp);
  lp.model_total = pc.total;
  bool first = true, last = true;
  if (pp > 1) {
    if (stage == PipelineStage::kLargest) stage = S.larger;
    first = stage == PipelineStage::kFirst;
    last = stage == PipelineStage::kLast;
    // Uneven stages: this stage's own layers (the largest end's for kLargest).
    if (p.first_stage_layers > 0 || p.last_stage_layers > 0) {
      const int index = first ? 0 : last ? p.pp - 1 : 1;
      L_local = spec::stage_layers(m.layers, p.pp, p.first_stage_layers, p.last_stage_layers, index);
    }
  }
  const double mtp = last ? mtp_all : 0.0;
  L_local += mtp;
  lp.layers_local = L_local;
  // The dense first layers this stage holds: the first stages take them.
  double dense_local = 0;
  if (m.is_moe() && m.moe.dense_layers > 0) {
    const int index = pp <= 1 || first ? 0 : last ? p.pp - 1 : 1;
    int before = 0;
    for (int i = 0; i < index; ++i)
      before += spec::stage_layers(m.layers, p.pp, p.first_stage_layers, p.last_stage_layers, i);
    dense_local = std::clamp(static_cast<double>(m.moe.dense_layers - before), 0.0, L_local);
  }
  const double moe_local = L_local - dense_local;
  const double ends = (first ? emb : 0.0) + (last ? head + pc.final_norm : 0.0) + mtp * mtp_extra;
  const double end_matrices = (first ? 1.0 : 0.0) + (last && head > 0 ? 1.0 : 0.0);
  const bool split_layers = dense_local > 0;  // an MoE model's stage with dense layers
  lp.weights = split_layers ? moe_local * layer + dense_local * dense_layer + ends : L_local * layer + ends;
  lp.linear_weights = split_layers ? L_local * attn_matrices + moe_local * mlp_matrices + dense_local * dense_mlp_matrices
                                   : L_local * (attn_matrices + mlp_matrices);
  lp.linear_weights += mtp * 2 * h * h;
  lp.norm_weights = L_local * pc.norms_per_layer + (last ? pc.final_norm : 0.0) + mtp * 2 * pc.final_norm;
  if (m.is_mla()) lp.norm_weights += L_local * (m.mla.q_lora_rank + m.mla.kv_lora_rank);
  if (m.is_moe()) lp.expert_weights = moe_local * expert_layer;
  const double experts = m.is_moe() ? m.moe.experts / ep : 1;
  if (p.finetune.mode == spec::FinetuneMode::kFull) {
    lp.trainable = lp.weights;
    lp.expert_trainable = lp.expert_weights;
    lp.frozen = 0;
    // Matrices: QKV, out, up (gate+up), down per layer (and the router); embedding / LM head.
    const double rc_layer = attn_rows_cols + experts * ((gated ? 2 : 1) * f / t + h) + experts * (f / t + h);
    const double rc_dense = attn_rows_cols + ((gated ? 2 : 1) * dense_ffn / t + h) + (dense_ffn / t + h);
    lp.matrix_rows_cols = split_layers ? moe_local * rc_layer + dense_local * rc_dense + end_matrices * (V / t + h)
                                       : L_local * rc_layer + end_matrices * (V / t + h);
    lp.matrix_elems = split_layers ? L_local * attn_matrices + moe_local * (mlp_matrices + router) +
                                         dense_local * dense_mlp_matrices + (first ? emb : 0.0) + (last ? head : 0.0)
                                   : L_local * (attn_matrices + mlp_matrices + router) + (first ? emb : 0.0) +
                                         (last ? head : 0.0);
    lp.matrix_elems += mtp * 2 * h * h;
    lp.matrix_rows_cols += mtp * 3 * h;
    lp.tensors = L_local * (4 * (m.bias ? 2 : 1) + (m.norm == spec::Norm::kLayerNorm ? 4 : 2)) + 3 + 3 * mtp;
    lp.model_trainable = pc.total;
    // The hidden matrices by shape, as the graph and the counts above split
    // them (one GPU's TP / EP shard): Muon orthogonalises each.
    auto add = [&lp](double rows, double cols, double count) {
      if (rows <= 0 || cols <= 0 || count <= 0 || lp.matrix_groups >= kMaxMatrixGroups) return;
      lp.matrices[static_cast<size_t>(lp.matrix_groups++)] = {rows, cols, count};
      lp.hidden_matrix_elems += rows * cols * count;
    };
    if (m.is_mla()) {
      const auto& a = m.mla;
      const double H = m.heads, d_qk = a.qk_nope_head_dim + a.qk_rope_head_dim, rq = a.q_lora_rank;
      const double rkv = a.kv_lora_rank, up_kv = H * (a.qk_nope_head_dim + a.v_head_dim);
      if (rq > 0) {
        add(h, rq, L_local);              // W_DQ (replicated)
        add(rq, H * d_qk / t, L_local);   // W_UQ
      } else {
        add(h, H * d_qk / t, L_local);    // W_Q
      }
      add(h, rkv + a.qk_rope_head_dim, L_local);  // W_DKV with the rotary key (replicated)
      add(rkv, up_kv / t, L_local);               // W_UK and W_UV
      add(H * a.v_head_dim / t, h, L_local);      // W_O
    } else {
      add(h, q / t + 2 * kv_local, L_local);  // fused QKV
      add(q / t, h, L_local);                 // output projection
    }
    const double up = gated ? 2.0 : 1.0;  // gate and up fused
    if (m.is_moe()) {
      const double before = lp.hidden_matrix_elems;
      add(h, up * f / t, moe_local * experts);
      add(f / t, h, moe_local * experts);
      lp.expert_hidden_matrix_elems = lp.hidden_matrix_elems - before;
      add(h, up * m.moe.shared_ffn / t, moe_local);
      add(m.moe.shared_ffn / t, h, moe_local);
      add(h, m.moe.experts, moe_local);  // router (replicated)
      add(h, up * dense_ffn / t, dense_local);
      add(dense_ffn / t, h, dense_local);
    } else {
      add(h, up * f / t, L_local);
      add(f / t, h, L_local);
    }
    add(2 * h, h, mtp);  // MTP's eh_proj
    lp.largest_tensor = std::max((first ? emb : 0.0), (last ? head : 0.0));
    for (int i = 0; i < lp.matrix_groups; ++i)
      lp.largest_tensor = std::max(lp.largest_tensor, lp.matrices[static_cast<size_t>(i)].rows *
                                                          lp.matrices[static_cast<size_t>(i)].cols);
  } else {
    const double lora_layer = lora_params_per_layer(m, p.finetune) / t;
    lp.frozen = lp.weights;
    lp.trainable = L_local * lora_layer;
    lp.weights += lp.trainable;
    lp.matrix_elems = lp.trainable;
    // Each adapter pair: A (r x d_in) and B (d_out x r).
    int pairs = 0;
    for (int bit = 1; bit <= 64; bit <<= 1) pairs += (p.finetune.targets & bit) ? 1 : 0;
    lp.matrix_rows_cols = L_local * pairs * 2 * (p.finetune.rank + h);
    lp.tensors = L_local * pairs * 2;
    lp.model_trainable = m.layers * lora_params_per_layer(m, p.finetune);
    // Every adapter is a 2-D hidden matrix; as for the factored optimizers
    // above, each is taken as r x h.
    const double r = p.finetune.rank;
    lp.hidden_matrix_elems = lp.trainable;
    if (lp.trainable > 0) {
      lp.matrices[0] = {r, h, lp.trainable / (r * h)};
      lp.matrix_groups = 1;
      lp.largest_tensor = r * std::max(h, f / t);  // an adapter's A or B: r x (its matrix's longer side) at most
    }
  }
}

}  // namespace

LocalParams local_params(const spec::ModelSpec& m, const spec::PlanSpec& p, PipelineStage stage) {
  const auto& q = p.parallel;
  const spec::ParamCounts pc = spec::count_params(m);
  const Split split{q.tp, q.pp, q.ep, q.first_stage_layers, q.last_stage_layers, p.finetune};
  LocalParams lp;
  fill_local_params(lp, m, pc, split, shared_counts(m, pc, split), stage);
  return lp;
}

StageParams stage_params(const spec::ModelSpec& m, const spec::MicrobatchPlan& p) {
  StageParams s;
  stage_params_into(s, m, p, spec::count_params(m));
  return s;
}

void stage_params_into(StageParams& s, const spec::ModelSpec& m, const spec::MicrobatchPlan& p,
                       const spec::ParamCounts& pc) {
  const auto& q = p.parallel;
  const Split split{q.tp, q.pp, q.ep, q.first_stage_layers, q.last_stage_layers, p.finetune};
  // The shared counts once; each end formed once, in place; the larger is
  // one of them (with PP = 1 the only stage is every view).
  const Shared sh = shared_counts(m, pc, split);
  fill_local_params(s.first, m, pc, split, sh, PipelineStage::kFirst);
  if (q.pp > 1) fill_local_params(s.last, m, pc, split, sh, PipelineStage::kLast);
  s.last_largest = sh.larger == PipelineStage::kLast;
  if ((q.first_stage_layers > 0 || q.last_stage_layers > 0) && q.pp > 2)
    fill_local_params(s.middle, m, pc, split, sh, PipelineStage::kMiddle);
  else
    s.middle = LocalParams{};
}

double stored_weight_bytes(const spec::PrecisionPolicy& pol, const LocalParams& lp) {
  const bool frozen = lp.frozen > 0;
  return pol.stored_weight_bytes(lp.weights, lp.frozen, frozen ? lp.linear_weights : 0.0,
                                 frozen ? lp.norm_weights : 0.0);
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
    case spec::OptimizerKind::kMuon: {
      // Muon (Jordan et al. 2024; Liu et al. 2025, Moonlight, Sec. 2.2): one
      // momentum buffer per hidden matrix; AdamW's m and v for the rest
      // (embedding, LM head, norms, biases).
      const double muon = std::min(lp.hidden_matrix_elems, P);
      return (muon * e + (P - muon) * 2 * e) / P;
    }
  }
  return 2 * e;
}

}  // namespace ridgeline::techniques
