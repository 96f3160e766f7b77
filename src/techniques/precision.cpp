#include <algorithm>

#include "ridgeline/spec/precision.hpp"
#include "ridgeline/techniques/passes.hpp"

namespace ridgeline::techniques {

using graph::Kernel;
using graph::Op;

namespace {

/// DeepSeek-V3's E5M6 (report Sec. 3.3.2): 1 sign, 5 exponent and 6
/// mantissa bits, 12 bits an element.
constexpr double kE5m6Bytes = 12.0 / 8.0;

/// The linear layers a recipe quantizes: Transformer Engine's Linear,
/// LayerNormLinear and GroupedLinear modules of a Megatron-Core decoder layer
/// (QKV, attention output, MLP up/gate, down; MoE experts). The LM head stays
/// bf16 (Megatron-Core builds the output layer outside the fp8 autocast),
/// the router 16-bit, the attention core bf16 (FP8 attention, as in
/// FlashAttention-3, is a separate choice).
bool quantized_linear(const Kernel& k) {
  if (k.cls != spec::KernelClass::kGemm || !k.has(graph::kHasWeight) || k.phase != spec::Phase::kForward)
    return false;
  return k.op == Op::kQkv || k.op == Op::kOut || k.op == Op::kUp || k.op == Op::kDown || k.op == Op::kQDown ||
         k.op == Op::kQUp || k.op == Op::kKvDown || k.op == Op::kKvUp;
}

/// Kernel names: forward input (X) and backward output-gradient (dY) casts.
struct CastNames {
  std::string_view amax, cast_transpose, rowwise, colwise;
};
constexpr CastNames kFp8Input{"fp8_amax_input", "fp8_cast_transpose_input", "fp8_quantize_input_rowwise",
                              "fp8_quantize_input_colwise"};
constexpr CastNames kFp8Grad{"fp8_amax_grad", "fp8_cast_transpose_grad", "fp8_quantize_grad_rowwise",
                             "fp8_quantize_grad_colwise"};
constexpr CastNames kFp4Input{"nvfp4_amax_input", "nvfp4_cast_transpose_input", "nvfp4_quantize_input_rowwise",
                              "nvfp4_rht_quantize_input_colwise"};
constexpr CastNames kFp4Grad{"nvfp4_amax_grad", "nvfp4_cast_transpose_grad", "nvfp4_quantize_grad_rowwise",
                             "nvfp4_rht_quantize_grad_colwise"};

/// The kernels that quantize one 16-bit tensor of `elems` elements into the
/// row-wise copy (fprop / dgrad operand) and the column-wise copy (wgrad
/// operand), appended in `phase`:
///  - current scaling (tensorwise, NVFP4's per-tensor scale): an amax pass,
///    read e bytes per element, write one fp32;
///  - one cast_transpose (TE's fused cast + transpose, delayed / tensorwise /
///    blockwise): read e, write both copies, 2 q bytes per element;
///  - or, where the column-wise copy has blocks of its own (mxfp8, NVFP4): a
///    row-wise and a column-wise quantization, each read e, write q; NVFP4's
///    column-wise one applies the 16x16 random Hadamard transform first.
void append_casts(std::vector<Kernel>& out, const Kernel& gemm, const spec::QuantRecipe& q, const CastNames& names,
                  spec::Dtype dtype, spec::Phase phase, double elems, double e, bool rowwise_only = false) {
  Kernel c;
  c.op = Op::kCast;
  c.cls = spec::KernelClass::kCast;
  c.phase = phase;
  c.dtype = dtype;
  c.flags = gemm.flags & graph::kLayer;
  c.count = gemm.count;
  if (q.amax_pass) {
    Kernel a = c;
    a.name = names.amax;
    a.op = Op::kAmax;
    a.cls = spec::KernelClass::kReduction;
    a.read_bytes = elems * e;
    a.write_bytes = 4;
    a.flops = elems;
    out.push_back(a);
  }
  c.read_bytes = elems * e;
  if (!q.separate_colwise && !rowwise_only) {
    c.name = names.cast_transpose;
    c.write_bytes = 2 * elems * q.act_bytes_per_elem;
    c.flops = 2 * elems;
    out.push_back(c);
    return;
  }
  c.name = names.rowwise;
  c.write_bytes = elems * q.act_bytes_per_elem;
  c.flops = 2 * elems;
  out.push_back(c);
  if (rowwise_only) return;
  c.name = names.colwise;
  c.flops = (2 + q.hadamard_flop_per_elem) * elems;
  out.push_back(c);
}

/// One quantized copy of a torchao Float8Linear operand: the amax pass
/// (read e bytes per element, write the scales), then the cast (read e,
/// write 1 byte per element and the scales). Per-row scales (rowwise): an
/// fp32 per row, `rows` of them (the row-wise copy of an R x C operand has
/// R rows, its column-wise twin C); per-tensor scales (tensorwise): one fp32.
void append_scaled_cast(std::vector<Kernel>& out, const Kernel& gemm, const spec::QuantRecipe& q,
                        std::string_view amax_name, std::string_view cast_name, spec::Dtype dtype,
                        spec::Phase phase, double elems, double rows, double e, bool per_tensor = false) {
  const double scales = q.scale_bytes_per_row > 0 && !per_tensor ? rows * q.scale_bytes_per_row : 4.0;
  Kernel a;
  a.name = amax_name;
  a.op = Op::kAmax;
  a.cls = spec::KernelClass::kReduction;
  a.phase = phase;
  a.dtype = dtype;
  a.flags = gemm.flags & graph::kLayer;
  a.count = gemm.count;
  a.read_bytes = elems * e;
  a.write_bytes = scales;
  a.flops = elems;
  out.push_back(a);
  Kernel c = a;
  c.name = cast_name;
  c.op = Op::kCast;
  c.cls = spec::KernelClass::kCast;
  c.write_bytes = elems * 1.0 + scales;
  c.flops = 2 * elems;
  out.push_back(c);
}

/// torchao's Float8Linear (spec::quant_recipe: rowwise, and tensorwise under
/// torchtitan) for one linear with input X (T x K), weight W (N x K) and
/// output gradient dY (T x N): each operand quantized where its GEMM needs
/// it, one hp_tensor_to_float8_dynamic call each (torchao/float8/
/// float8_linear.py, pytorch/ao v0.16.0 and 36027d8, lines 53-88 and
/// 108-195), the gradient's in q.grad (E5M2 under tensorwise):
///  - forward: X along K (T scales) and W along K (N scales) for fprop;
///  - backward: dY along N (T scales) and W along N (K scales) for dgrad;
///    dY along T (N scales) and the saved 16-bit X along T (K scales) for
///    wgrad.
/// Under tensorwise each is one fp32 scale; the source casts dY twice and W
/// in both passes as it does under rowwise (eager; torch.compile may merge
/// the two identical casts of dY). Under rowwise_with_gw_hp dgrad's W is
/// scaled per tensor (one fp32) and wgrad's operands are not cast at all.
void append_torchao_linear_casts(std::vector<Kernel>& out, const Kernel& gemm, const spec::QuantRecipe& q,
                                 double e) {
  const double b = gemm.gemm.batch, t = gemm.gemm.m, k = gemm.gemm.k, n = gemm.gemm.n;
  const auto fwd = spec::Phase::kForward, bwd = spec::Phase::kBackward;
  const spec::Dtype d = q.gemm;
  append_scaled_cast(out, gemm, q, "fp8_amax_input_rowwise", "fp8_quantize_input_rowwise", d, fwd, b * t * k, b * t,
                     e);
  append_scaled_cast(out, gemm, q, "fp8_amax_weight_rowwise", "fp8_quantize_weight_rowwise", d, fwd, b * n * k,
                     b * n, e);
  append_scaled_cast(out, gemm, q, "fp8_amax_grad_rowwise", "fp8_quantize_grad_rowwise", q.grad, bwd, b * t * n,
                     b * t, e);
  append_scaled_cast(out, gemm, q, "fp8_amax_weight_colwise", "fp8_quantize_weight_colwise", d, bwd, b * n * k,
                     b * k, e, q.dgrad_weight_per_tensor);
  if (q.wgrad_16bit) return;
  append_scaled_cast(out, gemm, q, "fp8_amax_grad_colwise", "fp8_quantize_grad_colwise", q.grad, bwd, b * t * n,
                     b * n, e);
  append_scaled_cast(out, gemm, q, "fp8_amax_input_colwise", "fp8_quantize_input_colwise", d, bwd, b * t * k, b * k,
                     e);
}

}  // namespace

/// fp8 and NVFP4 linear layers as Transformer Engine runs them under
/// Megatron-Core (recipes in spec::quant_recipe). Per quantized linear with
/// input X (T x K elements), weight W (N x K) and output gradient dY (T x N):
///  - fprop, dgrad and wgrad GEMMs in the recipe's dtype (derive_backward
///    copies the forward GEMM's dtype and kFp8Gemm to both backward GEMMs);
///    fprop reads the quantized X and W;
///  - forward: X's casts (append_casts), except where a LayerNorm writes the
///    quantized input itself (QKV and MLP-up after norm1 / norm2, delayed
///    scaling, fusion not eager: TE LayerNormLinear; its two 1-byte copies
///    take the place of the 2-byte output, so the norm's bytes stand);
///  - backward: dY's casts, sized by that layer's output gradient;
///  - X's column-wise copy is saved for wgrad (q bytes per element, not e);
///    the attention output O (the output projection's X) stays 16-bit for a
///    fused attention kernel's backward, so that kernel keeps it;
///  - once per step, when the weights change: W's quantized copies (row-wise
///    and transposed), read e per pass (two passes where the column-wise copy
///    is its own quantization, mxfp8; an amax pass under current scaling).
/// torchao's Float8Linear (rowwise; tensorwise under torchtitan) instead
/// quantizes every operand where its GEMM needs it, weights included, in
/// every micro-batch (append_torchao_linear_casts), and saves the 16-bit
/// input: no quantized copy is saved or kept.
/// Not modelled: NVFP4's bf16 last blocks (the paper keeps about 15% of the
/// linear layers, mostly the final ones, in bf16: the graph's decoder layers
/// are one kernel each with count = layers) and the amax-history update
/// (one multi-tensor kernel over 12 KB per linear).
void apply_precision(graph::Graph& g, const spec::ModelSpec& m, const spec::MicrobatchPlan& p,
                     const spec::HardwareSpec& hw) {
  const spec::PrecisionPolicy pol = spec::precision_policy(p);
  g.fp8_weight_copies = 2;
  g.fp8_wgrad_16bit = false;
  if (!pol.fp8_linear) return;
  g.fp8_wgrad_16bit = pol.quant.wgrad_16bit;
  g.fp8_wgrad_dtype = pol.linear_gemm;
  const spec::QuantRecipe& q = pol.quant;
  // The weight copies Transformer Engine keeps: the row-wise copy (fprop) and
  // the column-wise one (dgrad reads W untransposed), except where one scale
  // per tensor and fp8 GEMMs in every layout let one buffer serve both
  // (transformer_engine/pytorch/tensor/float8_tensor.py:423-427: "on
  // non-TN-capable archs (Blackwell+) a single _data buffer backs both row-
  // and column-wise usage"). Block-scaled copies (blockwise, mxfp8, NVFP4)
  // have their own column-wise blocks and scales.
  g.fp8_weight_copies = q.per_tensor_scale && hw.generation_facts().fp8_non_tn_gemm ? 1 : 2;
  if (q.weight_cast_per_microbatch) g.fp8_weight_copies = 0;
  const bool fp4 = q.gemm == spec::Dtype::kFp4;
  const CastNames& in_names = fp4 ? kFp4Input : kFp8Input;
  const CastNames& grad_names = fp4 ? kFp4Grad : kFp8Grad;
  const bool fused_norm = q.norm_fused && p.fusion != spec::Fusion::kEager;
  const bool frozen_base = p.finetune.mode != spec::FinetuneMode::kFull;
  const double e = g.act_bytes;
  auto& ks = g.kernels;
  const size_t n = ks.size();
  const size_t flash = g.forward_flash();
  double weights_per_layer = 0, weights_once = 0;
  for (size_t i = 0; i < n; ++i) {
    Kernel& k = ks[i];
    if (!quantized_linear(k)) continue;
    const double in_elems = k.gemm.batch * k.gemm.m * k.gemm.k;
    const double out_elems = k.gemm.batch * k.gemm.m * k.gemm.n;
    const double w_elems = k.gemm.batch * k.gemm.n * k.gemm.k;
    k.flags |= graph::kFp8Gemm;
    k.dtype = q.gemm;
    // The input at 1 byte per element: derive_backward takes the weight's
    // bytes as read_bytes less 1 byte per input element (scales, and NVFP4's
    // half byte, are within a few percent of a compute-bound GEMM's reads).
    k.read_bytes = in_elems * 1.0 + w_elems * q.weight_bytes_per_elem;
    if (q.saves_16bit_input) {
      // The 16-bit input stays what the GEMM saves (the bf16 graph's tensors).
      const Kernel gemm = k;
      append_torchao_linear_casts(ks, gemm, q, e);
      continue;
    }
    if (k.op == Op::kOut && flash < n && p.fp8_activation_storage) {
      // DeepSeek-V3 (report Sec. 3.3.2): O saved once, in E5M6 (12 bits),
      // for both the attention backward and this projection's wgrad.
      ks[flash].saved_bytes += in_elems * kE5m6Bytes;
      k.saved_bytes = 0;
    } else if (k.op == Op::kOut && flash < n) {
      ks[flash].saved_bytes += in_elems * e;  // the 16-bit O
    }
    // Saved for wgrad: X's column-wise quantized copy alone, q bytes per
    // element (transformer_engine/pytorch/module/linear.py:614-616 "Discard
    // row-wise data since it is not needed in backward pass";
    // layernorm_linear.py:477-487 the same for the norm's quantized output).
    if (k.saved_bytes > 0) k.saved_bytes = k.saved_bytes / e * q.act_bytes_per_elem;
    // A layer kernel's weights per layer: its instances over the layers
    // (an MoE model's dense-layer and expert MLPs each run in some of them).
    if (k.has(graph::kLayer)) weights_per_layer += w_elems * (k.count / std::max(1, g.layers));
    else weights_once += w_elems;
    const bool after_norm = (k.op == Op::kQkv || k.op == Op::kUp) && fused_norm;
    // Appended to the graph itself (its capacity is kept across evaluations:
    // no allocation); a copy, since appending may move the kernels.
    const Kernel gemm = k;
    // A frozen base (LoRA, QLoRA) has no weight gradient, so its input is
    // quantized row-wise only, for the forward GEMM: no column-wise copy
    // (transformer_engine/pytorch/module/linear.py: at v1.7
    // fp8_cast_transpose_fused only "and weight.requires_grad", else
    // cast_to_fp8; at v2.5 backward_needs_input = is_grad_enabled and
    // weight.requires_grad, input_quantizer.set_usage(rowwise=True,
    // columnwise=backward_needs_input)). The output gradient keeps both
    // (v1.7's grad_output_preprocess casts and transposes it either way).
    if (!after_norm)
      append_casts(ks, gemm, q, in_names, q.gemm, spec::Phase::kForward, in_elems, e, frozen_base);
    append_casts(ks, gemm, q, grad_names, q.grad, spec::Phase::kBackward, out_elems, e);
  }
  // DeepSeek-V3's low-precision storage (report Sec. 3.3.2: "we only cache
  // the inputs of the SwiGLU operator and recompute its output in the
  // backward pass. These activations are also stored in FP8 with our
  // fine-grained quantization method"): what the activation kernels save,
  // SwiGLU's input (gate and up), at the recipe's 1x128-scaled byte.
  if (p.fp8_activation_storage && spec::is_gated(m.activation))
    for (size_t i = 0; i < n; ++i)
      if (ks[i].phase == spec::Phase::kForward && ks[i].group == graph::FuseGroup::kBiasAct &&
          ks[i].cls != spec::KernelClass::kGemm)
        ks[i].saved_bytes = ks[i].saved_bytes / e * q.act_bytes_per_elem;
  // Once per step: the weights' quantized copies (cached across micro-batches);
  // a frozen base's quantized primary weights never change: none.
  if (pol.frozen_fp8_primary || q.weight_cast_per_microbatch) return;
  const double wp = weights_per_layer * g.layers + weights_once;
  const double passes = q.separate_colwise && !fp4 ? 2 : 1;  // NVFP4's 16x16 weight blocks transpose as they are
  Kernel w;
  w.name = fp4 ? "nvfp4_weight_cast_transpose" : "fp8_weight_cast_transpose";
  w.op = Op::kCast;
  w.cls = spec::KernelClass::kCast;
  w.dtype = q.gemm;
  w.phase = spec::Phase::kOptimizer;
  w.flags = graph::kPerStep;
  w.count = 1;
  w.read_bytes = wp * e * (passes + (q.amax_pass ? 1 : 0));
  w.write_bytes = wp * 2 * q.weight_bytes_per_elem;
  w.flops = wp * 2 * passes;
  const double linears = 4.0 * g.layers;
  w.launches = linears * (passes + (q.amax_pass ? 1 : 0));
  ks.push_back(w);
}

double executed_steps_per_step(const spec::PlanSpec& p) {
  if (p.precision != spec::Precision::kFp16) return 1.0;
  return 1.0 / (1.0 - std::min(0.5, p.skipped_step_rate));
}

}  // namespace ridgeline::techniques
