#include <algorithm>

#include "ridgeline/graph/memory_kernels.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/techniques/passes.hpp"

namespace ridgeline::techniques {

using graph::FuseGroup;
using graph::Kernel;
using graph::Op;
using spec::Fusion;

namespace {

/// Token chunks of a chunked loss: torchtune CEWithChunkedOutputLoss's
/// num_output_chunks default (torchtune/modules/loss/ce_chunked_output_loss.py at 1814feb).
constexpr double kLossChunks = 8;

std::string_view group_name(FuseGroup g, bool gated) {
  switch (g) {
    case FuseGroup::kQkvBiasRope: return "fused_bias_rope";
    case FuseGroup::kSoftmax: return "fused_scale_mask_softmax";
    case FuseGroup::kBiasDropoutAdd1: return "fused_bias_dropout_add1";
    case FuseGroup::kBiasAct: return gated ? "fused_swiglu" : "fused_bias_gelu";
    case FuseGroup::kBiasDropoutAdd2: return "fused_bias_dropout_add2";
    default: return "fused_pointwise";
  }
}

/// Megatron-LM's fused scale-mask-softmax kernel takes key lengths of at most
/// 4096 (megatron/core/fusions/fused_softmax.py, FusedScaleMaskSoftmax.
/// is_kernel_available: "16 < sk <= 4096"); beyond it forward_torch_softmax
/// runs scale, mask and softmax as separate PyTorch ops over the scores.
constexpr double kFusedSoftmaxMaxKeys = 4096;

bool mergeable(Fusion level, const Kernel& a, const Kernel& b, bool softmax_fused) {
  if (a.phase != spec::Phase::kForward || b.phase != spec::Phase::kForward) return false;
  if (a.has(graph::kLayer) != b.has(graph::kLayer) || a.count != b.count) return false;
  if (level == Fusion::kEager) return false;
  if (a.group != FuseGroup::kNone && a.group == b.group && (a.group != FuseGroup::kSoftmax || softmax_fused))
    return true;
  if (level == Fusion::kFused) return false;
  const bool pa = a.has(graph::kPointwise) || a.cls == spec::KernelClass::kGemm;
  if (!pa || !b.has(graph::kPointwise)) return false;
  if (a.cls == spec::KernelClass::kGemm) return level == Fusion::kXla && a.op != Op::kQk;  // GEMM epilogue
  return true;
}

/// a followed by b as one kernel: b's read of a's output and a's write of it vanish.
void merge_into(Kernel& a, const Kernel& b, std::string_view name) {
  const double chain = std::min(a.chain_bytes, b.read_bytes);
  a.read_bytes = a.read_bytes + b.read_bytes - chain;
  a.write_bytes = a.write_bytes - chain + b.write_bytes;
  a.chain_bytes = b.chain_bytes;
  a.flops += b.flops;
  a.model_flops += b.model_flops;
  a.saved_bytes += b.saved_bytes;
  a.saved_core_bytes += b.saved_core_bytes;
  a.workspace_bytes = std::max(a.workspace_bytes, b.workspace_bytes);
  a.flags |= (b.flags & (graph::kAttnCore));
  if (a.cls != spec::KernelClass::kGemm) {
    a.launches = 1;
    if (b.cls == spec::KernelClass::kNorm || b.cls == spec::KernelClass::kSoftmax) a.cls = b.cls;
    a.name = name;
    a.op = Op::kFused;
  }
}

}  // namespace

void apply_fusion(graph::Graph& g, const spec::ModelSpec& m, const spec::MicrobatchPlan& p) {
  const Fusion level = p.fusion;
  auto& ks = g.kernels;
  // The loss is the framework's (frameworks/*.yaml cross_entropy), whatever
  // the fusion level of the pointwise chains: a fused cross-entropy computes
  // the softmax in place over the 16-bit logits (Megatron's vocab-parallel
  // kernel, flash-attn's xentropy); an eager one keeps build's fp32 chain.
  // Under torch.compile a framework that compiles its loss (cross_entropy.
  // compiled: torchtitan/components/loss.py:245-252 wraps the loss in
  // torch.compile when compile.enable and "loss" is among compile.components,
  // the default, torchtitan/config/configs.py:301) has Inductor fuse the
  // upcast, log_softmax and nll into reductions over the 16-bit logits: no
  // fp32 copy is materialised or saved; the backward recomputes the softmax
  // from the saved 16-bit logits and row statistics, as a fused loss does.
  // (Norms are built fused or eager by graph::build_forward.)
  const spec::FrameworkSpec& fw = spec::framework(p.framework);
  const spec::CrossEntropy ce = spec::cross_entropy_of(p);
  const bool fused_loss = ce != spec::CrossEntropy::kEager;
  // Chunked: the fused loss over token chunks, one chunk's logit gradient
  // alive at a time (memory::stage_memory's logits buffer).
  g.logit_grad_chunks = ce == spec::CrossEntropy::kChunked ? kLossChunks : 1;
  if (!fused_loss && fw.cross_entropy_in_place) {
    // Megatron's vocab_parallel_cross_entropy (megatron/core/tensor_parallel/
    // cross_entropy.py): the fp32 upcast (read the 16-bit logits, write 4
    // bytes), its max (read), then in place the max subtracted (read,
    // write), exponentiated (read, write), summed (read) and normalised
    // (read, write); the normalised fp32 copy is what it saves.
    for (auto& k : ks) {
      if (k.phase != spec::Phase::kForward || k.op != Op::kLoss) continue;
      const double logits = k.workspace_bytes / 4.0;
      k.read_bytes = logits * (g.act_bytes + 6 * 4);
      k.write_bytes = logits * 4 * 4;
      k.saved_bytes = logits * 4;
      k.launches = 6;
      k.workspace_bytes = 0;
      k.flags |= graph::kLossInPlace;
    }
  }
  if (fused_loss) {
    for (auto& k : ks) {
      if (k.phase != spec::Phase::kForward || k.op != Op::kLoss) continue;
      const double logits = k.workspace_bytes / 4.0;
      k.read_bytes = logits * g.act_bytes;
      k.write_bytes = g.tokens * 8;
      k.saved_bytes = logits * g.act_bytes;
      k.launches = 1;
      k.workspace_bytes = 0;  // no fp32 copy
    }
  }
  if (level == Fusion::kEager) {
    // Eager PyTorch vectorizes an elementwise kernel only when every operand
    // is contiguous (aten/src/ATen/native/cuda/CUDALoops.cuh,
    // gpu_kernel_impl_nocast: iter.is_contiguous() launches
    // launch_vectorized_kernel, anything else launch_legacy_kernel, element
    // by element through an OffsetCalculator). Vectorized, it streams at the
    // tuned rate: Liger-Kernel's relu_squared rows (H100, bf16, 4,096 x
    // 1,024-16,384), torch's relu then square, take 2.0x the time of Liger's
    // one Triton kernel, the ratio of their passes (validation/published.yaml
    // liger_relu_squared_*). The legacy loop is the framework's rate
    // (cost::CostParams::framework_mem_frac, fitted on SwiGLU over chunk
    // views): it runs the kernels with a broadcast operand (a bias, RoPE's
    // cos and sin) or a view (the halves of a fused gate-up output).
    const bool strided_glu = spec::fused_gate_up_of(p) && spec::is_gated(m.activation);
    // A tuned RMSNorm in an eager model (Transformer Engine's, Apex's,
    // Liger's: spec::RmsNormImpl::kFused); PyTorch's own (native or the
    // composite chain) streams at the framework's norm rate.
    const bool tuned_rms = m.norm == spec::Norm::kRmsNorm && spec::rms_norm_of(p) == spec::RmsNormImpl::kFused;
    for (auto& k : ks) {
      if (tuned_rms && k.cls == spec::KernelClass::kNorm) k.impl = graph::kImplTuned;
      if (k.cls != spec::KernelClass::kElementwise) continue;
      switch (k.op) {
        case Op::kResidual1:
        case Op::kResidual2:
        case Op::kDropout1:
        case Op::kDropout2:
        case Op::kAttnDropout:
        case Op::kSharedAdd: k.impl = graph::kImplTuned; break;
        case Op::kAct:
        case Op::kGateMul:
          if (!strided_glu) k.impl = graph::kImplTuned;
          break;
        default: break;
      }
    }
    return;
  }
  // The kernels that stream at the tuned rate (graph::kImplTuned); eager
  // PyTorch's are the framework's own. Above eager the norms are Apex's or
  // Transformer Engine's fused CUDA kernels; torch.compile (Inductor) and
  // XLA also generate the pointwise chains, as Liger's Triton kernels are
  // written. The fused level's pointwise groups stay TorchScript's.
  const bool generated = level == Fusion::kCompiled || level == Fusion::kXla;
  for (auto& k : ks)
    if (k.cls == spec::KernelClass::kNorm || (generated && k.cls == spec::KernelClass::kElementwise))
      k.impl = graph::kImplTuned;
  const bool gated = spec::is_gated(m.activation);
  double keys = 0;  // the naive core's key length (its QK^T GEMM's N)
  if (p.attention == spec::AttentionKind::kNaive)
    for (const auto& k : ks)
      if (k.phase == spec::Phase::kForward && k.op == Op::kQk) keys = k.gemm.n;
  const bool softmax_fused = keys <= kFusedSoftmaxMaxKeys;
  size_t out = 0;
  for (size_t i = 0; i < ks.size(); ++i) {
    if (out > 0 && mergeable(level, ks[out - 1], ks[i], softmax_fused)) {
      Kernel& a = ks[out - 1];
      const FuseGroup grp = a.group == ks[i].group ? a.group : FuseGroup::kNone;
      merge_into(a, ks[i], group_name(grp, gated));
      if (grp == FuseGroup::kBiasAct && gated && a.cls != spec::KernelClass::kGemm)
        a.saved_bytes = a.read_bytes;  // fused SwiGLU keeps only its input (gate and up)
      if (grp == FuseGroup::kNone) a.group = FuseGroup::kNone;
      continue;
    }
    if (out != i) ks[out] = ks[i];  // kept kernels move down only behind a merged one
    ++out;
  }
  ks.resize(out);
}

void apply_eager_layer_norm_backward(graph::Graph& g, const spec::ModelSpec& m, const spec::MicrobatchPlan& p) {
  if (m.norm != spec::Norm::kLayerNorm || p.finetune.mode != spec::FinetuneMode::kFull) return;
  for (auto& k : g.kernels) {
    if (k.phase != spec::Phase::kBackward || k.cls != spec::KernelClass::kNorm || k.impl != graph::kImplFramework)
      continue;
    graph::eager_layer_norm_backward(k);
  }
}

void apply_train_metrics(graph::Graph& g, const spec::MicrobatchPlan& p) {
  const int n = spec::framework(p.framework).train_metrics;
  if (n == 0) return;
  double logits = 0;
  for (const auto& k : g.kernels)
    if (k.phase == spec::Phase::kForward && k.op == Op::kLmHead) logits = k.gemm.m * k.gemm.n * k.gemm.batch;
  if (!(logits > 0)) return;  // a pipeline stage without the head
  // Under torch.no_grad() and autocast (Composer's _eval_train_metrics):
  // each metric's torch.nn.CrossEntropyLoss upcasts the 16-bit logits it is
  // handed, as the eager training loss does, and saves nothing; it runs
  // after the micro-batch's backward, beside no other kernel.
  Kernel& k = g.kernels.emplace_back(graph::eager_cross_entropy_kernel(logits, g.act_bytes));
  k.name = "train_metrics";
  k.op = Op::kOther;
  k.phase = spec::Phase::kBackward;
  k.count = n;
}

}  // namespace ridgeline::techniques
