#include <algorithm>
#include <cmath>

#include "ridgeline/techniques/passes.hpp"

namespace ridgeline::techniques {

using graph::Kernel;
using graph::Op;

double flash_tile_rows(const spec::HardwareSpec& hw, double head_dim, double elem_bytes) {
  // FlashAttention (Dao et al. 2022, Alg. 1): B_c = ceil(M / 4d) elements of
  // SRAM M, B_r = min(B_c, d). M in elements of the activation width.
  const double smem = hw.smem_per_sm_bytes > 0 ? hw.smem_per_sm_bytes : 96.0 * 1024.0;
  const double bc = std::ceil(smem / elem_bytes / (4.0 * head_dim));
  return std::max(16.0, std::min(bc, head_dim));
}

void apply_attention(graph::Graph& g, const spec::ModelSpec& m, const spec::MicrobatchPlan& p,
                     const spec::HardwareSpec& hw) {
  if (p.attention == spec::AttentionKind::kNaive) return;
  auto& ks = g.kernels;
  size_t out = 0;
  bool placed = false;
  for (size_t i = 0; i < ks.size(); ++i) {
    const Kernel& k = ks[i];
    const bool core = k.phase == spec::Phase::kForward && k.has(graph::kAttnCore);
    if (!core) {
      ks[out++] = k;
      continue;
    }
    if (placed) continue;
    placed = true;
    const double t = std::max(1, p.parallel.tp);
    const double e = g.act_bytes;
    const double T = g.tokens;
    const double b = p.micro_batch;
    const double s = T / b;
    const double a = m.heads / t, kvh = std::max(1.0, m.kv_heads / t), d = m.head_dim;
    const bool causal = true;  // decoder-only training
    const double br = flash_tile_rows(hw, d, e);
    const double tr = std::ceil(s / br);  // query tiles: K/V pass through SRAM once per tile
    Kernel f;
    f.name = "flash_attention";
    f.op = Op::kFlashAttn;
    f.cls = spec::KernelClass::kAttention;
    f.dtype = k.dtype;
    f.flags = graph::kLayer;
    f.attention = static_cast<std::uint8_t>(p.attention);
    f.count = k.count;
    const double sk = s * std::max(1, p.parallel.cp);  // keys: the whole sequence under CP
    const double full = 4.0 * b * a * s * sk * d;
    // Causal: blocks above the diagonal are skipped; diagonal blocks run whole.
    f.flops = causal ? full * (0.5 + 0.5 * std::min(1.0, br / sk)) : full;
    f.model_flops = p.attention_flops == spec::AttentionFlops::kCausal ? full / 2 : full;
    const double q = T * a * d * e, kv = T * kvh * d * e;
    // K/V of the heads in flight must fit in L2 to be read from HBM once.
    const double sms = hw.sm_count > 0 ? hw.sm_count : 100;
    const double heads_in_flight = std::max(1.0, std::ceil(sms / tr));
    const double working = heads_in_flight * 2.0 * s * d * e;
    const double l2 = hw.l2_bytes > 0 ? hw.l2_bytes : 40.0 * 1024 * 1024;
    const double reread = working <= l2 ? 1.0 : std::min(tr, working / l2);
    const double lse = b * a * s * 4.0;
    f.read_bytes = q + 2 * kv * reread;
    f.write_bytes = q + lse;
    f.chain_bytes = q;
    f.sram_bytes = q + 2 * kv * tr * (causal ? 0.5 : 1.0) + q;
    f.saved_bytes = q + 2 * kv + lse;  // Q, K, V (6 sbh as in the naive core) + log-sum-exp
    f.saved_core_bytes = 0;            // no s^2 tensors
    f.launches = 1;
    ks[out++] = f;
  }
  ks.resize(out);
}

}  // namespace ridgeline::techniques
