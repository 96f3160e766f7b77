#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ridgeline/techniques/passes.hpp"

namespace ridgeline::techniques {

using graph::Kernel;
using spec::RecomputeKind;

int segment_layers(const spec::Recompute& r, int layers) {
  switch (r.kind) {
    case RecomputeKind::kFull: return 1;
    case RecomputeKind::kEvery: return std::max(1, std::min(r.every_k, std::max(1, layers)));
    case RecomputeKind::kSqrt: return std::max(1, static_cast<int>(std::ceil(std::sqrt(static_cast<double>(layers)))));
    default: return 0;
  }
}

int checkpoint_count(const spec::Recompute& r, int layers) {
  const int k = segment_layers(r, layers);
  if (k == 0) return 0;
  return (layers + k - 1) / k;
}

namespace {

/// op (torchtitan's selective_ac_option "op", torchtitan/models/llama3/infra/
/// parallelize.py _apply_ac_to_transformer_block): a checkpoint per decoder
/// layer whose policy saves the outputs of aten.mm and of the fused SDPA
/// kernels "except every second mm" (a counter per layer, in call order),
/// and recomputes every other op. A Llama layer calls its matmuls in the
/// order wq, wk, wv, wo, w1, w3, w2, so wk, wo and w3 are recomputed (a
/// GeLU MLP's fc1, fc2: wk, wo and fc2); so are the norms, RoPE, the
/// activation and gate, the residual adds. The graph's fused QKV and gated
/// up-projection GEMMs stand for their matmuls: the recomputed share of QKV
/// is K's width over Q + K + V's, of a gated up-projection one half. Saved
/// per layer: the layer's input (the checkpoint), Q and V, the attention
/// output O and its log-sum-exp, w1's output and w2's; the recomputed
/// tensors of one layer live during its backward (saved_fraction 1 / L).
void apply_op_recompute(graph::Graph& g) {
  auto& ks = g.kernels;
  const size_t n = ks.size();
  const double L = std::max(1, g.layers), T = g.tokens, e = g.act_bytes;
  double qkv_n = 0, q_width = 0, up_n = 0, ffn = 0, hidden = 0;
  for (size_t i = 0; i < n; ++i) {
    const Kernel& k = ks[i];
    if (k.phase != spec::Phase::kForward || !k.has(graph::kLayer)) continue;
    if (k.op == graph::Op::kQkv) qkv_n = k.gemm.n, hidden = k.gemm.k;
    if (k.op == graph::Op::kOut) q_width = k.gemm.k;
    if (k.op == graph::Op::kUp) up_n = k.gemm.n;
    if (k.op == graph::Op::kDown) ffn = k.gemm.k;
  }
  const double kv_width = std::max(0.0, (qkv_n - q_width) / 2);
  const bool gated = ffn > 0 && up_n > 1.5 * ffn;
  for (size_t i = 0; i < n; ++i) {
    Kernel& k = ks[i];
    if (k.phase != spec::Phase::kForward || !k.has(graph::kLayer)) continue;
    double recomputed = 1;  // the share of the kernel's work that runs again
    double saved = 0;       // the bytes the policy keeps of this kernel's outputs (its inputs are recomputed)
    switch (k.op) {
      case graph::Op::kNorm1: saved = T * hidden * e; break;  // the layer input: the checkpoint itself
      case graph::Op::kQkv:
        recomputed = qkv_n > 0 ? kv_width / qkv_n : 0;
        saved = T * (q_width + kv_width) * e;  // Q and V
        break;
      case graph::Op::kFlashAttn:
        recomputed = 0;
        saved = T * q_width * e + std::max(0.0, k.saved_bytes - T * (q_width + 2 * kv_width) * e);  // O, LSE
        break;
      case graph::Op::kOut: break;
      case graph::Op::kUp:
        recomputed = gated ? 0.5 : 0.0;
        saved = T * ffn * e;  // w1's output (a GeLU MLP's fc1)
        break;
      case graph::Op::kDown:
        recomputed = gated ? 0.0 : 1.0;
        saved = gated ? T * hidden * e : 0.0;  // w2's output
        break;
      default: break;
    }
    if (recomputed > 0) {
      const double count = k.count * recomputed;
      Kernel& r = ks.emplace_back(k);  // copied in place (the vector copies k before it moves)
      r.phase = spec::Phase::kRecompute;
      r.count = count;
      r.saved_fraction = 1.0 / L;  // one layer's recomputed tensors alive at a time
    }
    ks[i].saved_bytes = saved;
    ks[i].saved_core_bytes = 0;
    ks[i].saved_fraction = 1;
  }
}


/// A recompute-phase copy of forward kernel k that rebuilds `rebuilt` bytes
/// per instance, one instance's alive at a time (the module runs again
/// just before its own backward, layer by layer).
void push_recompute(std::vector<Kernel>& ks, const Kernel& k, double rebuilt) {
  // In place; `k` may be an element of `ks` (the vector copies it before it
  // moves), so only the copy is read after.
  Kernel& r = ks.emplace_back(k);
  r.phase = spec::Phase::kRecompute;
  r.saved_bytes = rebuilt;
  r.saved_core_bytes = 0;
  r.saved_fraction = 1.0 / std::max(1.0, r.count);
}

bool layer_forward(const Kernel& k) { return k.phase == spec::Phase::kForward && k.has(graph::kLayer); }

/// core_attn (Korthikanti et al. 2022's selective recomputation): see apply_recompute.
void recompute_core_attention(graph::Graph& g) {
  auto& ks = g.kernels;
  const size_t n = ks.size();
  double qkv_bytes = 0;  // the QKV projection's output: the flash kernel's inputs
  for (size_t i = 0; i < n; ++i)
    if (ks[i].phase == spec::Phase::kForward && ks[i].op == graph::Op::kQkv)
      qkv_bytes = ks[i].gemm.m * ks[i].gemm.n * ks[i].gemm.batch * g.act_bytes;
  for (size_t i = 0; i < n; ++i) {
    Kernel& k = ks[i];
    if (k.phase == spec::Phase::kForward && k.op == graph::Op::kFlashAttn) {
      // Without a QKV projection (latent attention assembles Q, K, V from
      // several GEMMs) the checkpoint keeps the kernel's own Q, K, V.
      const double kept = qkv_bytes > 0 ? qkv_bytes : k.saved_bytes - k.gemm.batch * k.gemm.m * 4.0;
      Kernel& r = ks.emplace_back(k);  // in place; `k` is not read after
      r.phase = spec::Phase::kRecompute;
      r.saved_bytes = 0;
      ks[i].saved_bytes = kept;
      continue;
    }
    if (k.phase != spec::Phase::kForward || !k.has(graph::kAttnCore)) continue;
    const bool has_core = k.saved_core_bytes > 0 || k.cls == spec::KernelClass::kSoftmax;
    k.saved_core_bytes = 0;
    if (!has_core && k.cls != spec::KernelClass::kGemm) continue;
    Kernel& r = ks.emplace_back(k);
    r.phase = spec::Phase::kRecompute;
    r.saved_bytes = 0;
  }
}

/// layernorm (output-discarding): a norm that is its own module gives up
/// its output once the next module has run and rebuilds it before that
/// module's backward; under fp8 Megatron-Core makes the consuming linear
/// keep the original 16-bit input (set_save_original_input) so that what
/// it saved is the discarded tensor (megatron/core/transformer/
/// transformer_layer.py, TransformerLayer.__init__, "layernorm" in
/// recompute_modules). Megatron skips a norm fused into the following
/// linear (TE's LayerNormLinear, an IdentityOp norm): with Transformer
/// Engine the input norm is its own module before latent attention's
/// down-projections, the pre-MLP norm in an MoE model's layers
/// (gpt_layer_specs.py: TENorm there, IdentityOp otherwise). So: norm1
/// when the layer's first projection is a latent one (kQDown, or kQUp
/// without a query latent), norm2 in a model with a router; the
/// consumers whose saved input is the norm's output lose it: the first
/// projection after norm1, and after norm2 the MLP up-projections outside
/// the routed experts (shared expert, dense layers); the routed experts
/// keep their dispatched copy, a different tensor.
void recompute_layernorms(graph::Graph& g) {
  auto& ks = g.kernels;
  const size_t n = ks.size();
  bool moe = false;
  for (size_t i = 0; i < n; ++i) moe = moe || (ks[i].phase == spec::Phase::kForward && ks[i].op == graph::Op::kRouter);
  enum class After { kNone, kNorm1, kNorm2 } after = After::kNone;
  bool routed = false;  // between an MoE layer's dispatch and combine
  size_t norm1 = n;     // the input norm the next projection reads
  for (size_t i = 0; i < n; ++i) {
    if (!layer_forward(ks[i])) continue;
    const Kernel& k = ks[i];  // not read after a push (the push may move it)
    if (k.op == graph::Op::kDispatch) routed = true;
    if (k.op == graph::Op::kCombine) routed = false;
    if (k.op == graph::Op::kNorm1) {
      after = After::kNorm1;
      norm1 = i;
      continue;
    }
    if (k.op == graph::Op::kNorm2) {
      after = moe ? After::kNorm2 : After::kNone;
      if (moe) push_recompute(ks, k, k.chain_bytes);  // the output (Tph e) alive again
      continue;
    }
    if (after == After::kNorm1 && k.cls == spec::KernelClass::kGemm && k.has(graph::kHasWeight)) {
      after = After::kNone;
      if (k.op != graph::Op::kQDown && k.op != graph::Op::kQUp) continue;  // a fused norm: Megatron skips it
      push_recompute(ks, ks[norm1], ks[norm1].chain_bytes);
      ks[i].saved_bytes = 0;
      continue;
    }
    if (after == After::kNorm2 && k.op == graph::Op::kUp && !routed) ks[i].saved_bytes = 0;
    if (k.op == graph::Op::kResidual2) after = After::kNone;
  }
}

/// mla_up_proj (output-discarding): latent attention's up-projections and
/// RoPE run again before the attention backward, so the attention kernel's
/// Q, K and V (a heads x (2 d_qk + d_v) per token, the bulk of an MLA
/// layer's activations) are not kept between forward and backward
/// (megatron/core/transformer/multi_latent_attention.py,
/// recompute_up_proj: CheckpointWithoutOutput around the up-projections and
/// RoPE, output discarded after core attention). The latents they read
/// stay saved (the up-projections' inputs).
void recompute_mla_up_proj(graph::Graph& g) {
  auto& ks = g.kernels;
  const size_t n = ks.size();
  // Without latent attention there is no up-projection to recompute
  // (Megatron-Core reads the word in its MLA module only).
  if (std::none_of(ks.begin(), ks.end(), [](const Kernel& k) { return k.op == graph::Op::kKvUp; })) return;
  bool first = true;
  for (size_t i = 0; i < n; ++i) {
    if (!layer_forward(ks[i])) continue;
    const graph::Op op = ks[i].op;
    const bool up = op == graph::Op::kQUp || op == graph::Op::kKvUp || op == graph::Op::kKvConcat ||
                    op == graph::Op::kRope || op == graph::Op::kLatentNorm;
    if (up) {
      // The rebuilt Q, K, V alive again: charged once, on the first copy.
      push_recompute(ks, ks[i], first ? g.attention_qkv_bytes : 0.0);
      first = false;
    }
    if (op == graph::Op::kFlashAttn) ks[i].saved_bytes = std::max(0.0, ks[i].saved_bytes - g.attention_qkv_bytes);
  }
}

/// moe_act (output-discarding): the routed experts' activation output is
/// dropped after the down-projection ran and rebuilt before its backward;
/// under fp8 the down-projection keeps the original input
/// (set_save_original_input), so it keeps nothing
/// (megatron/core/transformer/moe/experts.py, activation_recompute).
/// mlp, shared_experts (normal checkpoints): the dense MLP of a layer
/// without experts, or an MoE layer's shared expert, keeps only its input
/// (the up-projection's saved copy) and runs whole again before its
/// backward (transformer_layer.py recompute_mlp, not for MoE layers;
/// moe/moe_layer.py shared_experts_recompute).
void recompute_mlps(graph::Graph& g, std::uint8_t mods) {
  auto& ks = g.kernels;
  const size_t n = ks.size();
  auto mlp_op = [](graph::Op op) {
    return op == graph::Op::kUp || op == graph::Op::kUpBias || op == graph::Op::kAct || op == graph::Op::kGateMul ||
           op == graph::Op::kDown;
  };
  bool routed = false;  // between an MoE layer's dispatch and combine
  size_t act_from = n;  // the first kernel after the routed up-projection
  for (size_t i = 0; i < n; ++i) {
    if (!layer_forward(ks[i])) continue;
    const graph::Op op = ks[i].op;
    if (op == graph::Op::kDispatch) routed = true;
    if (op == graph::Op::kCombine) routed = false;
    if (!mlp_op(op)) continue;
    const bool gemm = ks[i].cls == spec::KernelClass::kGemm;
    if (routed) {
      if (!(mods & spec::kRecomputeMoeAct)) continue;
      if (op == graph::Op::kUp && gemm) act_from = i + 1;
      if (op == graph::Op::kDown && gemm && act_from < i) {
        // The bias and activation kernels again; the last one's output is
        // the down-projection's input, alive again for its backward.
        for (size_t j = act_from; j < i; ++j)
          if (layer_forward(ks[j])) push_recompute(ks, ks[j], j + 1 == i ? ks[j].write_bytes : 0.0);
        ks[i].saved_bytes = 0;
        act_from = n;
      }
      continue;
    }
    const bool shared = ks[i].has(graph::kSharedExpert);
    if (!(mods & (shared ? spec::kRecomputeSharedExperts : spec::kRecomputeMlp))) continue;
    push_recompute(ks, ks[i], op == graph::Op::kUp && gemm ? 0.0 : ks[i].saved_bytes);
    if (!(op == graph::Op::kUp && gemm)) ks[i].saved_bytes = 0;  // the up-projection's input: the checkpoint
  }
}

}  // namespace

/// selective (Korthikanti et al. 2022): the attention core's s^2 tensors are
/// not saved; its forward kernels run again before backward. A fused
/// attention kernel is recomputed too, as Megatron-Core's
/// checkpoint_core_attention does (recompute_modules "core_attn"): the
/// checkpoint keeps only its inputs Q, K, V; the flash forward runs again in
/// backward (the output projection still saves O as its input). As for the
/// naive core, the recomputed tensors (here O and the log-sum-exp) live only
/// within their layer's backward and are not counted as a working set.
/// block:K (Megatron-LM --recompute-method block): the first K layers of
/// the stage recompute fully, one layer at a time (each keeps only its
/// input); the other L - K keep their saved tensors. The graph's layer
/// kernels stand for all L layers, so the forward kernels keep (L - K) / L of
/// their saved bytes and the recompute copies run for K of the L layers.
/// full / every:K / sqrt (Chen et al. 2016): each segment of K layers keeps
/// only its input; before its backward the segment's forward runs again and
/// its K layers' saved tensors are alive at once (the working set).
void apply_recompute(graph::Graph& g, const spec::MicrobatchPlan& p) {
  const auto kind = p.recompute.kind;
  if (kind == RecomputeKind::kNone) return;
  auto& ks = g.kernels;
  const size_t n = ks.size();
  if (kind == RecomputeKind::kSelective) {
    const std::uint8_t mods = p.recompute.modules;
    if (mods & spec::kRecomputeCoreAttn) recompute_core_attention(g);
    if (mods & spec::kRecomputeLayernorm) recompute_layernorms(g);
    if (mods & spec::kRecomputeMlaUpProj) recompute_mla_up_proj(g);
    if (mods & (spec::kRecomputeMoeAct | spec::kRecomputeMlp | spec::kRecomputeSharedExperts))
      recompute_mlps(g, mods);
    return;
  }
  const int L = g.layers;
  if (kind == RecomputeKind::kOp) {
    apply_op_recompute(g);
    return;
  }
  if (p.recompute.block_layers > 0 && L > 0) {
    const double k = std::min(p.recompute.block_layers, L);
    for (size_t i = 0; i < n; ++i) {
      const Kernel& f = ks[i];
      if (f.phase != spec::Phase::kForward || !f.has(graph::kLayer)) continue;
      Kernel& r = ks.emplace_back(f);  // in place; `f` is not read after
      r.phase = spec::Phase::kRecompute;
      r.count = r.count * k / L;
      r.saved_fraction = 1.0 / k;  // one recomputed layer's tensors alive at a time
      // The first norm saves the layer input: kept by every layer (the
      // recomputed ones as their checkpoint).
      if (ks[i].op != graph::Op::kNorm1) ks[i].saved_fraction *= (L - k) / L;
    }
    return;
  }
  // Each layer's forward kernels free their saved tensors; their recompute
  // copies rebuild them, one segment of K layers alive at a time.
  const double working = L > 0 ? std::min(segment_layers(p.recompute, L), L) / static_cast<double>(L) : 0.0;
  for (size_t i = 0; i < n; ++i) {
    const Kernel& k = ks[i];
    if (k.phase != spec::Phase::kForward || !k.has(graph::kLayer)) continue;
    Kernel& r = ks.emplace_back(k);  // in place; `k` is not read after
    r.phase = spec::Phase::kRecompute;
    r.saved_fraction = working;
    ks[i].saved_fraction = 0;
  }
  // The layer input (saved by the first norm, sharded under SP as it saves
  // it) stays alive for the checkpointed layers only.
  for (size_t i = 0; i < n; ++i)
    if (ks[i].op == graph::Op::kNorm1) {
      ks[i].saved_fraction = L > 0 ? checkpoint_count(p.recompute, L) / static_cast<double>(L) : 0.0;
      ks[i].saved_core_bytes = 0;
      break;
    }
}

}  // namespace ridgeline::techniques
