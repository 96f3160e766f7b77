#include <algorithm>
#include <cmath>

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
      Kernel r = k;
      r.phase = spec::Phase::kRecompute;
      r.count = k.count * recomputed;
      r.saved_fraction = 1.0 / L;  // one layer's recomputed tensors alive at a time
      ks.push_back(r);
    }
    ks[i].saved_bytes = saved;
    ks[i].saved_core_bytes = 0;
    ks[i].saved_fraction = 1;
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
    double qkv_bytes = 0;  // the QKV projection's output: the flash kernel's inputs
    for (size_t i = 0; i < n; ++i)
      if (ks[i].phase == spec::Phase::kForward && ks[i].op == graph::Op::kQkv)
        qkv_bytes = ks[i].gemm.m * ks[i].gemm.n * ks[i].gemm.batch * g.act_bytes;
    for (size_t i = 0; i < n; ++i) {
      Kernel& k = ks[i];
      if (k.phase == spec::Phase::kForward && k.op == graph::Op::kFlashAttn) {
        Kernel r = k;
        r.phase = spec::Phase::kRecompute;
        r.saved_bytes = 0;
        // Without a QKV projection (latent attention assembles Q, K, V from
        // several GEMMs) the checkpoint keeps the kernel's own Q, K, V.
        k.saved_bytes = qkv_bytes > 0 ? qkv_bytes : k.saved_bytes - k.gemm.batch * k.gemm.m * 4.0;
        ks.push_back(r);
        continue;
      }
      if (k.phase != spec::Phase::kForward || !k.has(graph::kAttnCore)) continue;
      const bool has_core = k.saved_core_bytes > 0 || k.cls == spec::KernelClass::kSoftmax;
      k.saved_core_bytes = 0;
      if (!has_core && k.cls != spec::KernelClass::kGemm) continue;
      Kernel r = k;
      r.phase = spec::Phase::kRecompute;
      r.saved_bytes = 0;
      ks.push_back(r);
    }
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
      Kernel& f = ks[i];
      if (f.phase != spec::Phase::kForward || !f.has(graph::kLayer)) continue;
      Kernel r = f;
      r.phase = spec::Phase::kRecompute;
      r.count = f.count * k / L;
      r.saved_fraction = 1.0 / k;  // one recomputed layer's tensors alive at a time
      ks.push_back(r);
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
    Kernel& k = ks[i];
    if (k.phase != spec::Phase::kForward || !k.has(graph::kLayer)) continue;
    Kernel r = k;
    r.phase = spec::Phase::kRecompute;
    r.saved_fraction = working;
    ks.push_back(r);
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
