// Kernel builders shared by the step graph and by single-kernel clients (the
// `ridgeline kernel` command, kernel-level published rows): one place says
// what a GEMM or a fused attention kernel computes, reads, writes and keeps,
// so a kernel costed alone is the kernel the step costs.
// Units: FLOP and bytes per instance.
#pragma once

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

#include "ridgeline/graph/graph.hpp"
#include "ridgeline/spec/hardware.hpp"

namespace ridgeline::graph {

/// C (m x n) = A (m x k) B (k x n), `batch` independent products, A and B
/// `dtype`-wide, C 16-bit when dtype is 8 bits or narrower (as fp8 GEMMs
/// write bf16) and dtype-wide otherwise. flops = 2 m n k batch.
Kernel gemm_kernel(double m, double n, double k, double batch, Dtype dtype);

/// Which pass of a fused attention kernel.
enum class AttentionPass : std::uint8_t { kForward, kBackward };

/// The query-block rows (Br) and key-block columns (Bc) an implementation
/// tiles attention into, from its launch code:
///  - flash2 (csrc/flash_attn/src/flash_fwd_launch_template.h, sm80): forward
///    128 x 128 for head dim <= 64, 128 x 64 up to 128, 64 x 64 above;
///    backward 128 x 128 up to 64, 64 x 128 above.
///  - flash3 (hopper/tile_size.h, tile_size_fwd_sm90): forward 192 x 128 for
///    head dim <= 64, 128 x 128 (causal) or 128 x 176 up to 128, 128 x 80
///    above; backward 128 x 128 up to 64, 64 x 128 above.
///  - cudnn, triton: 128 x 128 and 128 x 64 (the Triton tutorial's BLOCK_M,
///    BLOCK_N); flash (v1, flash-attn 1.0.x): 16-row query steps against key
///    blocks of 256 (head dim <= 64) or 128 keys.
/// FlashAttention-1's query step (FMHA_kernel_traits' STEP) and the warps its
/// key block is split across, forward and backward (flash-attn v1.0.9
/// fmha_fwd_hdim*.cu: W = 4; fmha_bwd_hdim*.cu: W = 8). The warps' partial
/// P V (forward) and dS K (backward) products are summed through shared
/// memory every step, and each key block re-reads and re-writes the fp32
/// output (o_tmp) or query-gradient (dq_tmp) accumulator in global memory.
inline constexpr double kFa1QueryStep = 16;
inline constexpr double kFa1ForwardWarps = 4;
inline constexpr double kFa1BackwardWarps = 8;

struct AttentionTile {
  double br = 128, bc = 128;
};
AttentionTile attention_tile(spec::AttentionKind impl, double head_dim, AttentionPass pass, bool causal);

/// FlashAttention-1's key blocks (of bc keys) per query row, each one a pass
/// over the row's fp32 accumulator in global memory: n = ceil(kv_len / bc),
/// (n + 1) / 2 on average under a causal mask.
double fa1_key_passes(double q_len, double kv_len, double bc, bool causal);

/// Fraction of the query x key tile grid a kernel executes: 1 without a
/// mask; causal skips the tiles above the diagonal but runs the diagonal
/// tiles whole: (n + 1) / (2 n) for n = kv_len / Bc key blocks per query
/// block when q_len = kv_len (Br = Bc), in general 1/2 + Br / (2 kv_len)
/// capped at 1.
double causal_executed_fraction(const AttentionShape& s, const AttentionTile& t);

/// The ring steps of a causal attention kernel with more keys than queries:
/// a context-parallel rank (s / cp queries against all s keys) runs cp
/// fused-attention calls (Transformer Engine's AttnFuncWithCP); 1 for any
/// other kernel.
inline double context_parallel_steps(double q_len, double kv_len, bool causal) {
  return causal && kv_len > 1.5 * q_len ? std::max(2.0, std::round(kv_len / q_len)) : 1.0;
}

/// A fused (flash) attention forward kernel: reads Q, K, V, writes O and the
/// fp32 log-sum-exp; flops = 4 b h q_len kv_len d x the executed fraction;
/// model flops = the full product (halved for causal when `causal_model_flops`).
/// Saves Q, K, V and the log-sum-exp for backward.
/// A causal sliding window w < kv_len (the kernel "flash_attention_window"):
/// a query block of Br rows needs keys [i - w + 1, i + Br - 1], so it runs
/// nb = min(kv_len / Bc, ceil((w - 1) / Bc) + ceil(Br / Bc)) key blocks
/// whole (the window's edge tiles masked, as a causal kernel runs its
/// diagonal tiles whole): costed as an unmasked kernel over nb Bc keys,
/// flops 4 b h q_len nb Bc d; model flops 4 b h d (q_len w - w (w - 1) / 2),
/// the query-key pairs inside the window (q_len w without the causal
/// convention); Q, K, V and O read and written once.
Kernel flash_attention_forward(const AttentionShape& s, spec::AttentionKind impl, Dtype dtype,
                               const spec::HardwareSpec& hw, bool causal_model_flops = true);

/// The backward of a flash_attention_forward kernel: recomputes the scores,
/// 2.5x the forward FLOPs (5 matmuls of the forward's 2; FlashAttention
/// benchmark convention), model FLOPs 2x; reads Q, K, V, O, dO and the
/// log-sum-exp, writes dQ, dK, dV; two launches (the dO.O row-sum
/// preprocess and the main kernel).
Kernel flash_attention_backward(const Kernel& fwd);
/// The same, on `b`: already the backward copy of `fwd` (backward_copy), in place.
void finish_flash_attention_backward(Kernel& b, const Kernel& fwd);

/// Attention without fusion (PyTorch's eager "standard" attention, as the
/// graph builds it): the batched GEMM S = Q K^T (b h batches of q_len x
/// kv_len x d), scale, the causal mask when causal, softmax (each reading and
/// writing the dtype-wide scores), and O = P V. Backward: dV = P^T dO and
/// dP = dO V^T, the softmax backward (reads P and dP, writes dS), dQ = dS K
/// and dK = dS^T Q. The mask does not skip work: a causal naive kernel
/// executes every score.
std::vector<Kernel> naive_attention_kernels(const AttentionShape& s, Dtype dtype, AttentionPass pass);

}  // namespace ridgeline::graph
