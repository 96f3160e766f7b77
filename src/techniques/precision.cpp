#include <algorithm>

#include "ridgeline/techniques/passes.hpp"

namespace ridgeline::techniques {

using graph::Kernel;
using graph::Op;

/// fp8 (Transformer Engine style): every linear layer's GEMM runs in fp8
/// (E4M3 forward; hybrid recipe: E5M2 gradients), attention core and all
/// non-GEMM ops stay 16-bit. Costs it adds: a cast (with amax) of each GEMM
/// input that is not produced by a norm that casts in its epilogue
/// (LayerNormLinear), an extra amax pass per cast under current scaling, and
/// once per step an fp8 copy of every weight and its transpose. Linear layers
/// save their fp8 input (1 byte/element) for the weight gradient.
void apply_precision(graph::Graph& g, const spec::ModelSpec& m, const spec::MicrobatchPlan& p) {
  (void)m;
  if (p.precision != spec::Precision::kFp8) return;
  const bool current = p.fp8_scaling == spec::Fp8Scaling::kCurrent;
  const bool fused_norm = p.fusion != spec::Fusion::kEager;
  auto& ks = g.kernels;
  const size_t n = ks.size();
  double weights_per_layer = 0, weights_once = 0;
  for (size_t i = 0; i < n; ++i) {
    Kernel& k = ks[i];
    if (k.cls != spec::KernelClass::kGemm || !k.has(graph::kHasWeight) || k.phase != spec::Phase::kForward)
      continue;
    if (k.op == Op::kRouter) continue;  // router GEMM stays 16-bit
    const double in_elems = k.gemm.batch * k.gemm.m * k.gemm.k;
    const double w_elems = k.gemm.batch * k.gemm.n * k.gemm.k;
    k.flags |= graph::kFp8Gemm;
    k.dtype = spec::Dtype::kFp8E4M3;
    k.read_bytes = in_elems * 1.0 + w_elems * 1.0;  // fp8 input and fp8 weight copy
    if (k.saved_bytes > 0) k.saved_bytes = k.saved_bytes / g.act_bytes;  // fp8 input saved
    (k.has(graph::kLayer) ? weights_per_layer : weights_once) += w_elems;
    // The input cast: fused into the preceding norm for QKV and up (LayerNormLinear).
    const bool after_norm = (k.op == Op::kQkv || k.op == Op::kUp || k.op == Op::kLmHead) && fused_norm;
    if (!after_norm) {
      Kernel c;
      c.name = "fp8_cast_input";
      c.op = Op::kCast;
      c.cls = spec::KernelClass::kCast;
      c.dtype = spec::Dtype::kFp8E4M3;
      c.flags = k.flags & graph::kLayer;
      c.count = k.count;
      c.read_bytes = in_elems * g.act_bytes;
      c.write_bytes = in_elems;
      c.flops = 2 * in_elems;
      ks.push_back(c);
    }
    if (current) {
      Kernel a;
      a.name = "fp8_amax";
      a.op = Op::kAmax;
      a.cls = spec::KernelClass::kReduction;
      a.flags = k.flags & graph::kLayer;
      a.count = k.count;
      a.read_bytes = in_elems * g.act_bytes;
      a.write_bytes = 4;
      a.flops = in_elems;
      ks.push_back(a);
    }
  }
  // Once per step: fp8 copies of the weights and their transposes (cached
  // across micro-batches), plus the amax-history update.
  Kernel w;
  w.name = "fp8_weight_cast_transpose";
  w.op = Op::kCast;
  w.cls = spec::KernelClass::kCast;
  w.phase = spec::Phase::kOptimizer;
  w.flags = graph::kPerStep;
  w.count = 1;
  const double wp = weights_per_layer * g.layers + weights_once;
  w.read_bytes = wp * 2.0;
  w.write_bytes = wp * 2.0;
  w.launches = 2 * 7 * g.layers + 2;
  ks.push_back(w);
}

double executed_steps_per_step(const spec::PlanSpec& p) {
  if (p.precision != spec::Precision::kFp16) return 1.0;
  return 1.0 / (1.0 - std::min(0.5, p.skipped_step_rate));
}

}  // namespace ridgeline::techniques
