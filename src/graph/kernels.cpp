#include "ridgeline/graph/kernels.hpp"

#include <algorithm>
#include <cmath>

namespace ridgeline::graph {

Kernel gemm_kernel(double m, double n, double k, double batch, Dtype dtype) {
  Kernel g;
  g.name = "gemm";
  g.op = Op::kOther;
  g.cls = KernelClass::kGemm;
  g.dtype = dtype;
  g.gemm = {m, n, k, batch};
  g.flops = 2.0 * m * n * k * batch;
  g.model_flops = g.flops;
  const double e = spec::bytes_per_element(dtype);
  const double e_out = e <= 1.0 ? 2.0 : e;
  g.read_bytes = batch * (m * k + k * n) * e;
  g.write_bytes = batch * m * n * e_out;
  return g;
}

AttentionTile attention_tile(spec::AttentionKind impl, double d, AttentionPass pass, bool causal) {
  const bool fwd = pass == AttentionPass::kForward;
  switch (impl) {
    case spec::AttentionKind::kFlash:
      // flash-attn 1.0.x (v1.0.9 csrc/flash_attn/src/fmha_fwd_hdim{64,128}.cu,
      // fmha_bwd_hdim{64,128}.cu): FMHA_kernel_traits<S, D, 16, 1, W>: a CTA
      // steps through its queries 16 rows at a time against a key block of
      // S = 256 keys (head dim <= 64, seqlen_k >= 256) or 128 (head dim
      // 128), the key block split across its W warps (4 forward, 8 backward).
      return {kFa1QueryStep, d <= 64 ? 256.0 : 128.0};
    case spec::AttentionKind::kFlash3:
      if (!fwd) return d <= 64 ? AttentionTile{128, 128} : AttentionTile{64, 128};
      if (d <= 64) return {192, 128};
      if (d <= 128) return {128, causal ? 128.0 : 176.0};
      return {128, 80};
    case spec::AttentionKind::kCudnn: return {128, 128};
    case spec::AttentionKind::kTriton: return {128, 64};
    case spec::AttentionKind::kTritonLegacy:
      // flash_attn_triton.py (flash-attn v1.0.x; llm-foundry v0.3.0
      // llmfoundry/models/layers/flash_attn_triton.py): BLOCK = 128 for the
      // forward's BLOCK_M and BLOCK_N, and 128 x 128 blocks in the backward.
      return {128, 128};
    case spec::AttentionKind::kNaive:
    case spec::AttentionKind::kFlash2:
    default:
      if (!fwd) return d <= 64 ? AttentionTile{128, 128} : AttentionTile{64, 128};
      if (d <= 64) return {128, 128};
      if (d <= 128) return {128, 64};
      return {64, 64};
  }
}

double fa1_key_passes(double q_len, double kv_len, double bc, bool causal) {
  const double n = std::max(1.0, std::ceil(kv_len / bc));
  return causal && q_len >= kv_len ? (n + 1) / 2 : n;
}

double causal_executed_fraction(const AttentionShape& s, const AttentionTile& t) {
  if (!s.causal || s.kv_len <= 0) return 1.0;
  return std::min(1.0, 0.5 + 0.5 * std::max(t.br, t.bc) / s.kv_len);
}

Kernel flash_attention_forward(const AttentionShape& s, spec::AttentionKind impl, Dtype dtype,
                               const spec::HardwareSpec& hw, bool causal_model_flops) {
  const double e = spec::bytes_per_element(dtype);
  const double b = s.batch, a = s.heads, g = std::max(1.0, s.kv_heads), d = s.head_dim;
  const double dv = s.v_head_dim > 0 ? s.v_head_dim : d;
  // S = Q K^T runs over d, O = P V over d_v: 2 b a sq sk (d + d_v), as one
  // head dimension of their mean. The tile is the larger one's (FlashAttention-3's
  // hdim-diff kernels, hdim 192 / v 128, tile by 192).
  const double d_mean = dv == d ? d : (d + dv) / 2;
  const double sq = s.q_len, sk = s.kv_len;
  const AttentionTile tile = attention_tile(impl, std::max(d, dv), AttentionPass::kForward, s.causal);
  Kernel f;
  f.name = "flash_attention";
  f.op = Op::kFlashAttn;
  f.cls = KernelClass::kAttention;
  f.dtype = dtype;
  f.impl = static_cast<std::uint8_t>(impl);
  f.gemm = {s.q_len, s.kv_len, d_mean, s.batch * s.heads};
  if (s.causal) f.flags |= kCausal;
  const double full = 4.0 * b * a * sq * sk * d_mean;
  f.flops = full * causal_executed_fraction(s, tile);
  f.model_flops = s.causal && causal_model_flops ? full / 2 : full;
  const double q = b * sq * a * d * e, k = b * sk * g * d * e, v = b * sk * g * dv * e, o = b * sq * a * dv * e;
  const double tr = std::ceil(sq / tile.br);  // query blocks: K/V pass through SRAM once per block
  // K/V of the heads in flight must fit in L2 to be read from HBM once.
  const double sms = hw.sm_count > 0 ? hw.sm_count : 100;
  const double heads_in_flight = std::max(1.0, std::ceil(sms / tr));
  const double working = heads_in_flight * 2.0 * sk * d_mean * e;
  const double l2 = hw.l2_bytes > 0 ? hw.l2_bytes : 40.0 * 1024 * 1024;
  const double reread = working <= l2 ? 1.0 : std::min(tr, working / l2);
  const double lse = b * a * sq * 4.0;
  f.read_bytes = q + (k + v) * reread;
  f.write_bytes = o + lse;
  f.chain_bytes = o;
  f.sram_bytes = q + (k + v) * tr * (s.causal ? 0.5 : 1.0) + o;
  f.saved_bytes = q + (k + v) + lse;  // Q, K, V (6 sbh as in the naive core) + log-sum-exp
  f.saved_core_bytes = 0;            // no s^2 tensors
  f.launches = context_parallel_steps(sq, sk, s.causal);  // a CP rank: a call per ring step
  if (impl == spec::AttentionKind::kFlash) {
    // FlashAttention-1 holds one key block at a time and streams the CTA's
    // queries past it (flash-attn v1.0.9 csrc/flash_attn/src/fmha_fprop_kernel_1xN.h,
    // device_1xN_ once per loop_step_idx of ceil(seqlen_k / S)): K and V are
    // read once, but every key block after the first re-reads Q and the fp32
    // output accumulator o_tmp and writes it back (the last writes O). A
    // causal key block meets only the queries at or below it: (n + 1) / 2
    // of the n blocks per query row on average.
    const double passes = fa1_key_passes(sq, sk, tile.bc, s.causal);
    const double acc = b * a * sq * dv * 4.0;
    f.read_bytes = k + v + q * passes + acc * (passes - 1);
    f.write_bytes = o + lse + acc * (passes - 1);
    f.sram_bytes = (q + o) * passes + k + v;
  }
  if (s.causal && s.window > 0 && s.window < sk) {
    const double w = s.window;
    const double nb = std::min(std::ceil(sk / tile.bc), std::ceil((w - 1) / tile.bc) + std::ceil(tile.br / tile.bc));
    const double keys = std::min(sk, nb * tile.bc);
    f.name = "flash_attention_window";
    f.flags &= static_cast<std::uint16_t>(~kCausal);
    f.gemm = {s.q_len, keys, d_mean, s.batch * s.heads};
    f.flops = 4.0 * b * a * sq * keys * d_mean;
    f.model_flops = 4.0 * b * a * d_mean * (causal_model_flops ? sq * w - w * (w - 1) / 2 : sq * w);
    f.read_bytes = q + k + v;
    f.sram_bytes = q + (k + v) * tr * keys / sk + o;
  }
  return f;
}

void finish_flash_attention_backward(Kernel& b, const Kernel& f) {
  b.flops = 2.5 * f.flops;  // model FLOPs stay 2x
  b.read_bytes = f.read_bytes + 2 * f.write_bytes;  // Q,K,V (+ re-reads), O, dO, lse
  b.write_bytes = f.read_bytes;                      // dQ, dK, dV
  b.sram_bytes = 2.5 * f.sram_bytes;
  b.launches = 2 * f.launches;  // per call: the dO . O preprocessing kernel and the main loop
  if (f.impl == static_cast<std::uint8_t>(spec::AttentionKind::kFlash)) {
    // FlashAttention-1's backward loops over key blocks as its forward does
    // (v1.0.9 fmha_dgrad_kernel_1xN_loop.h, gmem_dq_tmp): K, V read and dK, dV
    // written once; Q and dO re-read and the fp32 query-gradient
    // accumulator dq_tmp read and written back at every key block.
    const double e = spec::bytes_per_element(f.dtype);
    const double sq = f.gemm.m, sk = f.gemm.n, d = f.gemm.k, bh = f.gemm.batch;
    const AttentionTile t = attention_tile(spec::AttentionKind::kFlash, d, AttentionPass::kBackward, f.has(kCausal));
    const double passes = fa1_key_passes(sq, sk, t.bc, f.has(kCausal));
    const double q = bh * sq * d * e, kv = 2 * bh * sk * d * e, acc = bh * sq * d * 4.0, lse = bh * sq * 4.0;
    b.read_bytes = kv + 2 * q * passes + acc * passes + q + lse;  // + O once for dO . O
    b.write_bytes = kv + q + acc * passes;
    b.sram_bytes = 2 * q * passes + kv + q;
  }
}

Kernel flash_attention_backward(const Kernel& f) {
  Kernel b = backward_copy(f);
  finish_flash_attention_backward(b, f);
  return b;
}

std::vector<Kernel> naive_attention_kernels(const AttentionShape& s, Dtype dtype, AttentionPass pass) {
  const double e = spec::bytes_per_element(dtype);
  const double bh = s.batch * s.heads, sq = s.q_len, sk = s.kv_len, d = s.head_dim;
  const double scores = bh * sq * sk;
  auto scores_pass = [&](std::string_view name, Op op, double reads, double flops) {
    Kernel k;
    k.name = name;
    k.op = op;
    k.cls = KernelClass::kSoftmax;
    k.dtype = dtype;
    k.read_bytes = reads * scores * e;
    k.write_bytes = scores * e;
    k.flops = flops * scores;
    return k;
  };
  std::vector<Kernel> out;
  if (pass == AttentionPass::kForward) {
    Kernel qk = gemm_kernel(sq, sk, d, bh, dtype);
    qk.name = "attn_qk";
    qk.op = Op::kQk;
    out.push_back(qk);
    out.push_back(scores_pass("attn_scale", Op::kScale, 1, 1));
    if (s.causal) out.push_back(scores_pass("attn_mask", Op::kMask, 1, 1));
    out.push_back(scores_pass("attn_softmax", Op::kSoftmax, 1, 5));
    Kernel pv = gemm_kernel(sq, d, sk, bh, dtype);
    pv.name = "attn_pv";
    pv.op = Op::kPv;
    out.push_back(pv);
  } else {
    Kernel dv = gemm_kernel(sk, d, sq, bh, dtype);
    dv.name = "attn_pv_dv";
    Kernel dp = gemm_kernel(sq, sk, d, bh, dtype);
    dp.name = "attn_pv_dp";
    Kernel dq = gemm_kernel(sq, d, sk, bh, dtype);
    dq.name = "attn_qk_dq";
    Kernel dk = gemm_kernel(sk, d, sq, bh, dtype);
    dk.name = "attn_qk_dk";
    out.push_back(dv);
    out.push_back(dp);
    out.push_back(scores_pass("attn_softmax_backward", Op::kSoftmax, 2, 3));
    out.push_back(scores_pass("attn_scale_backward", Op::kScale, 1, 1));
    out.push_back(dq);
    out.push_back(dk);
  }
  for (Kernel& k : out) {
    k.phase = pass == AttentionPass::kForward ? Phase::kForward : Phase::kBackward;
    k.model_flops = k.cls == KernelClass::kGemm && s.causal ? k.flops / 2 : (k.cls == KernelClass::kGemm ? k.flops : 0);
  }
  return out;
}

}  // namespace ridgeline::graph
