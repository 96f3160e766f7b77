#include <algorithm>
#include <cmath>
#include <cstdint>

#include "ridgeline/graph/kernels.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/techniques/passes.hpp"

namespace ridgeline::techniques {

using graph::Kernel;
using graph::Op;

void apply_attention(graph::Graph& g, const spec::ModelSpec& m, const spec::MicrobatchPlan& p,
                     const spec::HardwareSpec& hw) {
  if (p.attention == spec::AttentionKind::kNaive) return;
  auto& ks = g.kernels;
  size_t out = 0;
  bool placed = false;
  Kernel window;  // the sliding-window layers' kernel, placed after the full one
  size_t window_at = SIZE_MAX;
  for (size_t i = 0; i < ks.size(); ++i) {
    const Kernel& k = ks[i];
    const bool core = k.phase == spec::Phase::kForward && k.has(graph::kAttnCore);
    if (!core) {
      if (out != i) ks[out] = k;  // kept kernels move down only behind a dropped one
      ++out;
      continue;
    }
    if (placed) continue;
    placed = true;
    const double t = std::max(1, p.parallel.tp);
    const double T = g.tokens;
    const double b = p.micro_batch;
    const double sq = T / b;
    graph::AttentionShape shape;
    shape.batch = b;
    shape.heads = m.heads / t;
    shape.kv_heads = std::max(1.0, m.kv_heads / t);
    shape.q_len = sq;
    shape.kv_len = sq * std::max(1, p.parallel.cp);  // keys: the whole sequence under CP
    // Packed documents (spec::PlanSpec::packed_doc_len): the kernel runs each
    // document as its own sequence (flash-attn varlen and Transformer Engine's
    // THD format iterate over cu_seqlens; a block-causal mask skips the blocks
    // between documents), so a sequence of s tokens is s / N documents of N.
    // Under CP each document is split over the ranks as the sequence was
    // (TE's THD format: 2 cp chunks per document), its rank's share N / cp.
    const double whole = shape.kv_len;
    if (p.packed_doc_len > 0 && p.packed_doc_len < whole) {
      const double n = p.packed_doc_len;
      shape.batch = b * whole / n;
      shape.q_len = n * sq / whole;
      shape.kv_len = n;
    }
    shape.head_dim = m.head_dim;
    if (m.is_mla()) {
      // Latent attention materializes K and V per head: d_qk = nope + rope, d_v.
      shape.kv_heads = shape.heads;
      shape.head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
      shape.v_head_dim = m.mla.v_head_dim;
    }
    shape.causal = true;  // decoder-only training
    // The framework's default kernel depends on the GPU (Transformer Engine
    // runs cuDNN fused attention on Hopper and later: spec::attention_on).
    Kernel f = graph::flash_attention_forward(shape, spec::attention_on(p, hw.generation), k.dtype, hw,
                                              p.attention_flops == spec::AttentionFlops::kCausal);
    f.flags |= graph::kLayer;
    f.count = k.count;
    // Sliding-window layers (spec::ModelSpec::sliding_window): their share
    // of the layers runs the windowed kernel, the rest full attention.
    if (m.sliding_window > 0 && m.window_layers > 0 && m.sliding_window < shape.kv_len) {
      const double share = std::min(1.0, static_cast<double>(m.window_layers) / std::max(1, m.layers));
      graph::AttentionShape ws = shape;
      ws.window = m.sliding_window;
      window = graph::flash_attention_forward(ws, spec::attention_on(p, hw.generation), k.dtype, hw,
                                              p.attention_flops == spec::AttentionFlops::kCausal);
      window.flags |= graph::kLayer;
      window.count = k.count * share;
      f.count = k.count * (1 - share);
      window_at = out;
    }
    // Under CP the kernel streams every rank's K/V chunk, but keeps only its
    // own for backward: Q, K, V of the local tokens + the log-sum-exp.
    const double e = spec::bytes_per_element(k.dtype);
    const double lse = b * shape.heads * sq * 4.0;  // per token, packed or not
    g.attention_qkv_bytes = m.is_mla() ? T * shape.heads * (2 * shape.head_dim + shape.v_head_dim) * e
                                        : T * (shape.heads + 2 * shape.kv_heads) * shape.head_dim * e;
    f.saved_bytes = g.attention_qkv_bytes + lse;
    window.saved_bytes = f.saved_bytes;
    ks[out++] = f;
  }
  ks.resize(out);
  if (window_at != SIZE_MAX) {
    // Every layer full (window_layers = layers): the full kernel has no count left.
    if (ks[window_at].count > 0) ks.insert(ks.begin() + static_cast<std::ptrdiff_t>(window_at) + 1, window);
    else ks[window_at] = window;
  }
}

}  // namespace ridgeline::techniques
