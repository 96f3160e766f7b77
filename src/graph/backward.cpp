// Backward kernels derived from forward ones, and graph totals.
#include "ridgeline/graph/graph.hpp"
#include "ridgeline/graph/kernels.hpp"

namespace ridgeline::graph {

namespace {

/// backward_copy's changes, made to `b`, a copy of forward kernel `f`.
void to_backward(Kernel& b, const Kernel& f) {
  b.phase = Phase::kBackward;
  b.saved_bytes = 0;
  b.saved_core_bytes = 0;
  b.workspace_bytes = 0;
  b.chain_bytes = 0;
  b.flops = 2 * f.flops;
  b.model_flops = 2 * f.model_flops;
}

}  // namespace

Kernel backward_copy(const Kernel& f) {
  Kernel b = f;
  to_backward(b, f);
  return b;
}

namespace {

/// Appends the backward GEMM of forward kernel `f` to `ks` in place (the
/// room is reserved: `f`, an element of `ks`, stays where it is).
void push_backward_gemm(std::vector<Kernel>& ks, const Kernel& f, std::string_view name, double m, double n,
                        double k, double read, double write) {
  Kernel& b = ks.emplace_back(f);
  b.name = name;
  b.phase = Phase::kBackward;
  b.gemm = {m, n, k, f.gemm.batch};
  b.flops = f.flops;              // same multiply-adds as the forward GEMM
  b.model_flops = f.model_flops;  // causal halving carries over
  b.read_bytes = read;
  b.write_bytes = write;
  b.chain_bytes = 0;
  b.saved_bytes = 0;
  b.saved_core_bytes = 0;
  b.workspace_bytes = 0;
}

std::string_view dgrad_name(Op op) {
  switch (op) {
    case Op::kQkv: return "qkv_proj.dgrad";
    case Op::kOut: return "attn_out_proj.dgrad";
    case Op::kQDown: return "mla_q_down_proj.dgrad";
    case Op::kQUp: return "mla_q_up_proj.dgrad";
    case Op::kKvDown: return "mla_kv_down_proj.dgrad";
    case Op::kKvUp: return "mla_kv_up_proj.dgrad";
    case Op::kUp: return "mlp_up_proj.dgrad";
    case Op::kDown: return "mlp_down_proj.dgrad";
    case Op::kLmHead: return "lm_head.dgrad";
    case Op::kRouter: return "moe_router.dgrad";
    case Op::kQk: return "attn_qk.dgrad_q";
    case Op::kPv: return "attn_pv.dgrad_p";
    case Op::kLoraA: return "lora_a.dgrad";
    case Op::kLoraB: return "lora_b.dgrad";
    default: return "gemm.dgrad";
  }
}

std::string_view wgrad_name(Op op) {
  switch (op) {
    case Op::kQkv: return "qkv_proj.wgrad";
    case Op::kOut: return "attn_out_proj.wgrad";
    case Op::kQDown: return "mla_q_down_proj.wgrad";
    case Op::kQUp: return "mla_q_up_proj.wgrad";
    case Op::kKvDown: return "mla_kv_down_proj.wgrad";
    case Op::kKvUp: return "mla_kv_up_proj.wgrad";
    case Op::kUp: return "mlp_up_proj.wgrad";
    case Op::kDown: return "mlp_down_proj.wgrad";
    case Op::kLmHead: return "lm_head.wgrad";
    case Op::kRouter: return "moe_router.wgrad";
    case Op::kQk: return "attn_qk.dgrad_k";
    case Op::kPv: return "attn_pv.dgrad_v";
    case Op::kLoraA: return "lora_a.wgrad";
    case Op::kLoraB: return "lora_b.wgrad";
    default: return "gemm.wgrad";
  }
}

}  // namespace


void derive_backward(Graph& g) {
  const size_t n = g.kernels.size();
  // At most two backward kernels per forward one: with the room reserved
  // (once per kept graph), the forward kernel is read in place while its
  // backward ones are appended, not copied out first.
  g.kernels.reserve(3 * n);
  for (size_t i = 0; i < n; ++i) {
    const Kernel& f = g.kernels[i];
    if (f.phase != Phase::kForward) continue;
    if (f.cls == KernelClass::kCollective || f.cls == KernelClass::kP2p || f.has(kPerStep)) continue;
    // Quantization casts and amax passes: the precision pass emits the
    // backward ones itself, sized by each linear's output gradient.
    if (f.op == Op::kCast || f.op == Op::kAmax) continue;
    const double e = g.act_bytes;
    if (f.cls == KernelClass::kGemm) {
      const double M = f.gemm.m, N = f.gemm.n, K = f.gemm.k, B = f.gemm.batch;
      const double in_b = f.has(kFp8Gemm) ? 1.0 : e;
      // Input gradient dX[M,K] = dY[M,N] * W[N,K]: reads dY and W, writes dX.
      // The forward's second operand. LoRA's B GEMM also read the base
      // output it adds into (techniques/finetune.cpp), which its backward
      // neither reads nor has a gradient for: the add passes dY through.
      const double w_bytes = f.read_bytes - B * M * K * in_b - (f.op == Op::kLoraB ? B * M * N * e : 0.0);
      push_backward_gemm(g.kernels, f, dgrad_name(f.op), M, K, N, B * M * N * e + w_bytes, B * M * K * e);
      // Weight gradient dW[N,K] = dY^T * X (none for a frozen weight); for
      // activation-activation GEMMs the second operand's gradient.
      if (!f.has(kFrozen) && f.has(kFp8Gemm) && g.fp8_wgrad_16bit) {
        // A 16-bit weight gradient of an fp8 linear (torchao
        // ROWWISE_WITH_GW_HP): the 16-bit dY and saved X, the GEMM at the
        // 16-bit rate.
        push_backward_gemm(g.kernels, f, wgrad_name(f.op), N, K, M, B * M * N * e + B * M * K * e, w_bytes);
        Kernel& w = g.kernels.back();
        w.dtype = g.fp8_wgrad_dtype;
        w.flags = static_cast<std::uint16_t>(w.flags & ~kFp8Gemm);
      } else if (!f.has(kFrozen)) {
        push_backward_gemm(g.kernels, f, wgrad_name(f.op), N, K, M, B * M * N * e + B * M * K * in_b, w_bytes);
      }
      continue;
    }
    // Built in place (room reserved above); `f` stays valid.
    Kernel& b = g.kernels.emplace_back(f);
    to_backward(b, f);
    switch (f.op) {
      case Op::kResidual1:
      case Op::kResidual2:
        // The residual stream's input feeds two consumers (the branch and the
        // skip): autograd sums their two gradients, reading both and writing one.
        b.read_bytes = f.read_bytes;
        b.write_bytes = f.write_bytes;
        b.flops = f.flops;
        break;
      case Op::kFlashAttn:
        finish_flash_attention_backward(b, f);  // b is backward_copy(f) already
        break;
      case Op::kDequant:  // dequantize the frozen weight again for the input-gradient GEMM
        b.flops = f.flops;
        b.read_bytes = f.read_bytes;
        b.write_bytes = f.write_bytes;
        break;
      case Op::kLoss:
        if (f.has(kLossInPlace)) {
          // In place on the saved fp32 softmax (megatron/core/tensor_parallel/
          // cross_entropy.py backward: the target's one subtracted, then
          // grad_input.mul_(grad_output)), then the upcast's backward casts
          // it to the 16-bit logits.
          b.read_bytes = 2 * f.saved_bytes;
          b.write_bytes = f.saved_bytes + f.saved_bytes / 4.0 * e;
          b.launches = 2;
          break;
        }
        if (f.workspace_bytes > 0) {
          // Eager fp32 chain (autocast): nll_loss backward writes the fp32
          // gradient of the log-probabilities, log_softmax backward reads it
          // and the saved output and writes the fp32 logit gradient, and the
          // upcast's backward casts that to the 16-bit logits.
          b.read_bytes = 3 * f.saved_bytes;
          b.write_bytes = 2 * f.saved_bytes + f.saved_bytes / 4.0 * e;
          b.launches = 3;
          break;
        }
        // Fused: reads the saved 16-bit logits, writes their gradient.
        b.read_bytes = f.saved_bytes;
        b.write_bytes = f.saved_bytes;
        b.launches = 2;
        break;
      case Op::kEmbed:
        // Scatter-add of the output gradient into the embedding's gradient rows.
        b.read_bytes = f.write_bytes * 2;
        b.write_bytes = f.write_bytes;
        break;
      default:
        // Reads what the op read (its saved inputs) and its output's gradient;
        // writes its inputs' gradients.
        b.read_bytes = f.read_bytes + f.chain_bytes;
        b.write_bytes = f.read_bytes;
        if (f.cls == KernelClass::kNorm) b.launches = f.launches + 1;  // weight-gradient reduction
        break;
    }
  }
}

GraphTotals totals(const Graph& g) {
  GraphTotals t;
  for (const auto& k : g.kernels) {
    if (k.has(kPerStep)) continue;
    t.flops += k.flops * k.count;
    if (k.phase == Phase::kRecompute)
      t.recompute_flops += k.model_flops * k.count;
    else
      t.model_flops += k.model_flops * k.count;
    t.hbm_bytes += k.hbm_bytes() * k.count;
    if (k.phase == Phase::kForward) t.saved_bytes += (k.saved_bytes + k.saved_core_bytes) * k.count;
    t.launches += k.launches * k.count;
  }
  return t;
}

}  // namespace ridgeline::graph
