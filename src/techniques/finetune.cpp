#include <algorithm>

#include "ridgeline/spec/precision.hpp"
#include "ridgeline/techniques/passes.hpp"

namespace ridgeline::techniques {

using graph::Kernel;
using graph::Op;

namespace {

/// LoRA targets that live in one fused base GEMM, and their output widths.
struct Targets {
  int count = 0;
  double out = 0;  // summed output width of the targeted sub-matrices
};

Targets targets_of(const Kernel& k, const spec::ModelSpec& m, const spec::MicrobatchPlan& p) {
  const double t = std::max(1, p.parallel.tp);
  const double q = m.heads / t * m.head_dim, kv = std::max(1.0, m.kv_heads / t) * m.head_dim;
  const double f = m.ffn_hidden / t;
  const auto mask = p.finetune.targets;
  Targets r;
  auto add = [&](std::uint8_t bit, double width) {
    if (mask & bit) r.count++, r.out += width;
  };
  switch (k.op) {
    case Op::kQkv: add(spec::kTargetQ, q); add(spec::kTargetK, kv); add(spec::kTargetV, kv); break;
    case Op::kOut: add(spec::kTargetO, m.hidden); break;
    case Op::kUp:
      if (spec::is_gated(m.activation)) add(spec::kTargetGate, f);
      add(spec::kTargetUp, f);
      break;
    case Op::kDown: add(spec::kTargetDown, m.hidden); break;
    default: break;
  }
  return r;
}

}  // namespace

/// LoRA (Hu et al. 2021): W x + (alpha/r) B A x with W frozen; A is r x d_in,
/// B is d_out x r. The base GEMM keeps its input-gradient GEMM (the gradient
/// must flow) but loses its weight-gradient GEMM; its input is saved only
/// when an adapter reads it. QLoRA (Dettmers et al. 2023) stores W in NF4 with
/// double-quantized block constants and dequantizes it to bf16 before each use.
/// Saved tensors that change with a frozen base:
///  - the attention output O is one tensor that the output projection saves
///    (its input) and a fused attention kernel keeps for its backward; when
///    the projection no longer saves it (no adapter, no weight gradient) the
///    flash kernel still does (its backward reads O and the log-sum-exp);
///  - eager RMSNorm's weight * x saves x for the weight's gradient only: with
///    the norm frozen, the fp32 x and rsqrt remain (graph/build.cpp).
void apply_finetune(graph::Graph& g, const spec::ModelSpec& m, const spec::MicrobatchPlan& p) {
  if (p.finetune.mode == spec::FinetuneMode::kFull) return;
  const bool qlora = p.finetune.mode == spec::FinetuneMode::kQlora;
  const double r = p.finetune.rank;
  const double e = g.act_bytes;
  auto& ks = g.kernels;
  const size_t n = ks.size();
  const size_t flash = g.forward_flash();
  const bool eager_rms = m.norm == spec::Norm::kRmsNorm && spec::rms_norm_of(p) == spec::RmsNormImpl::kComposite;
  for (size_t i = 0; i < n; ++i) {
    if (ks[i].phase != spec::Phase::kForward) continue;
    if (eager_rms && ks[i].cls == spec::KernelClass::kNorm) ks[i].saved_bytes -= ks[i].chain_bytes;
    if (ks[i].op == Op::kEmbed) continue;
    if (ks[i].cls != spec::KernelClass::kGemm || !ks[i].has(graph::kHasWeight)) continue;
    ks[i].flags |= graph::kFrozen;
    const Kernel k = ks[i];  // a copy: appending below may move the kernels
    const Targets tg = targets_of(k, m, p);
    const double T = k.gemm.m * k.gemm.batch;
    const double d_in = k.gemm.k;
    // The 16-bit O: held by the projection (as its input) unless fp8 made
    // that a quantized copy, in which case the precision pass gave it to the
    // flash kernel already.
    // torchao's Float8Linear saves the 16-bit input itself (saves_16bit_input):
    // the projection still holds O.
    const bool o_moved = k.has(graph::kFp8Gemm) && !spec::precision_policy(p).quant.saves_16bit_input;
    const bool out_o = k.op == Op::kOut && flash < n && !o_moved;
    if (tg.count == 0) {
      if (out_o) ks[flash].saved_bytes += T * d_in * e;
      ks[i].saved_bytes = 0;  // no adapter and no weight gradient: the input is not needed
    }
    if (qlora && k.op != Op::kLmHead && k.op != Op::kRouter) {
      Kernel dq;
      dq.name = "nf4_dequantize";
      dq.op = Op::kDequant;
      dq.cls = spec::KernelClass::kElementwise;
      dq.flags = k.flags & graph::kLayer;
      dq.count = k.count;
      const spec::PrecisionPolicy pol = spec::precision_policy(p);
      dq.read_bytes = k.weight_params * k.gemm.batch * pol.frozen_weight_bytes;  // NF4 + double-quantized constants
      dq.write_bytes = k.weight_params * k.gemm.batch * pol.weight_bytes;       // the 16-bit weight the GEMM reads
      dq.flops = 2 * k.weight_params * k.gemm.batch;
      ks.push_back(dq);
    }
    if (tg.count == 0) continue;
    // A: [T, d_in] x [d_in, r * targets] (one GEMM: the targets share the input).
    Kernel a = k;
    a.name = "lora_a";
    a.op = Op::kLoraA;
    a.flags = (k.flags & graph::kLayer) | graph::kHasWeight;
    a.gemm = {T, r * tg.count, d_in, 1};
    a.flops = 2 * T * r * tg.count * d_in;
    a.model_flops = a.flops;
    a.read_bytes = T * d_in * e + d_in * r * tg.count * e;
    a.write_bytes = T * r * tg.count * e;
    a.chain_bytes = a.write_bytes;
    a.saved_bytes = T * d_in * e;  // the shared input
    // Under fp8 the flash kernel holds the 16-bit O the adapter reads.
    if (k.op == Op::kOut && flash < n && o_moved) a.saved_bytes = 0;
    a.weight_params = d_in * r * tg.count;
    ks[i].saved_bytes = 0;  // saved once, by the adapter
    ks.push_back(a);
    // B: per target [T, r] x [r, d_out]; summed output width.
    Kernel b = a;
    b.name = "lora_b";
    b.op = Op::kLoraB;
    b.gemm = {T, tg.out / tg.count, r, static_cast<double>(tg.count)};
    b.flops = 2 * T * r * tg.out;
    b.model_flops = b.flops;
    b.read_bytes = T * r * tg.count * e + r * tg.out * e + T * tg.out * e;  // + base output to add into
    b.write_bytes = T * tg.out * e;
    b.saved_bytes = T * r * tg.count * e;  // A's output
    b.weight_params = r * tg.out;
    ks.push_back(b);
  }
  // Embedding and norms are frozen too: no gradient for the table.
}

}  // namespace ridgeline::techniques
