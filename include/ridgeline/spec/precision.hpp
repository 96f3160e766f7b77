// Precision policy: what a plan's precision and fine-tuning mode mean for
// every tensor's width, decided in one place. The step graph (activation and
// GEMM dtypes), the memory model (weights, gradients, masters), the optimizer
// and data-parallel passes (bytes moved) and the search's pruning bound all
// read this value; none of them spells the rules again. Units: bytes per element.
#pragma once

#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/kinds.hpp"
#include "ridgeline/spec/plan.hpp"

namespace ridgeline::spec {

/// NF4 with double-quantized block constants: 4 bits per weight plus an 8-bit
/// constant per 64 weights and an fp32 constant per 256 constants, 4.127 bits
/// (Dettmers et al. 2023, Sec. 3).
inline constexpr double kNf4BytesPerWeight = 4.127 / 8.0;

/// Delayed scaling's amax history per fp8 tensor (Transformer Engine
/// DelayedScaling, amax_history_len = 1024).
inline constexpr double kAmaxHistoryLen = 1024;

/// How a low-precision linear layer quantizes its tensors: what each cast
/// costs (techniques/precision.cpp) and what scale state it keeps (memory/).
/// Per element bytes include the block scales.
struct QuantRecipe {
  Dtype gemm = Dtype::kFp8E4M3;       // the linear GEMMs' dtype (fprop, dgrad, wgrad)
  Dtype grad = Dtype::kFp8E4M3;       // the output gradient's element type (E5M2 under HYBRID)
  bool amax_pass = false;             // a per-tensor amax must be reduced before the cast (current scaling)
  bool norm_fused = false;            // the LayerNorm before QKV / MLP-up can write the quantized input
  bool separate_colwise = false;      // the column-wise copy is its own quantization of the 16-bit tensor
  double hadamard_flop_per_elem = 0;  // random Hadamard transform before the column-wise (wgrad) quantization
  double act_bytes_per_elem = 1;      // a quantized activation or gradient element, with its scales
  double weight_bytes_per_elem = 1;   // a quantized weight element, with its scales
  double state_bytes_per_tensor = 0;  // persistent scaling state per quantized tensor (3 per linear)
  /// One scale per tensor (delayed, tensorwise): a transposed copy is the same
  /// bytes transposed, which a GPU with non-TN fp8 GEMMs does not need.
  bool per_tensor_scale = false;
  /// Bytes of scale per row of each quantized copy (rowwise: one fp32 per
  /// row, so an R x C copy carries R scales, and its column-wise twin C);
  /// 0 where the scales are per element (act_bytes_per_elem) or per tensor.
  double scale_bytes_per_row = 0;
  /// The weights are quantized in every micro-batch's forward and backward
  /// from the 16-bit weight, not cached per step: no persistent quantized
  /// copies (torchao Float8Linear without FSDP fp8 all-gather).
  bool weight_cast_per_microbatch = false;
  /// Backward reads the 16-bit input the forward saved and quantizes it
  /// again, rather than a quantized copy saved in the forward (torchao's
  /// Float8Linear under every recipe).
  bool saves_16bit_input = false;
  /// The weight-gradient GEMM in the 16-bit dtype on the 16-bit input and
  /// output gradient, with no cast for it (torchao ROWWISE_WITH_GW_HP).
  bool wgrad_16bit = false;
  /// The input-gradient GEMM's weight cast with one scale per tensor (torchao
  /// ROWWISE_WITH_GW_HP) where the other operands are scaled per row.
  bool dgrad_weight_per_tensor = false;
};

/// Whether the plan's fp8 linears are torchao's Float8Linear rather than
/// Transformer Engine's: the rowwise recipe anywhere, and tensorwise under
/// torchtitan, whose float8 converter swaps nn.Linear for torchao's
/// Float8Linear (torchtitan/components/quantization/float8.py, 238fa99:
/// convert_to_float8_training with Float8LinearConfig.from_recipe_name; no
/// recipe_name: Float8LinearConfig(), tensorwise).
inline bool torchao_float8(const MicrobatchPlan& p) {
  if (p.precision != Precision::kFp8) return false;
  if (p.fp8_recipe == Fp8Recipe::kRowwise || p.fp8_recipe == Fp8Recipe::kRowwiseGwHp) return true;
  return p.fp8_recipe == Fp8Recipe::kTensorwise && framework_id(p.framework) == "torchtitan";
}

struct PrecisionPolicy {
  /// 16-bit activations and weights with fp32 masters (Micikevicius et al.
  /// 2018), as opposed to fp32 / tf32 training, where everything is 4 bytes.
  bool mixed = true;
  Dtype activation = Dtype::kBf16;  // activations between kernels, attention core
  Dtype linear_gemm = Dtype::kBf16; // linear-layer GEMMs before the fp8 pass
  bool fp8_linear = false;          // linear-layer GEMMs run in fp8 or NVFP4 (techniques/precision.cpp)
  QuantRecipe quant;                // how, when fp8_linear
  /// A frozen base's fp8 linear weights are held quantized only (fp8
  /// primary weights), without their 16-bit copy.
  bool frozen_fp8_primary = false;
  /// Trained fp8 primary weights (PlanSpec::fp8_primary_weights): the linear
  /// weights held as their quantized copies alone; the master in the optimizer.
  bool fp8_primary = false;
  double activation_bytes = 2;
  double weight_bytes = 2;          // trainable weights and gathered copies
  double frozen_weight_bytes = 2;   // a frozen base's decoder linear weights (LoRA: as trained; QLoRA: NF4)
  double frozen_other_bytes = 2;    // the rest of a frozen base: embedding, LM head, biases, router
  double frozen_norm_bytes = 2;     // a frozen base's norm weights (QLoRA: fp32)
  double gradient_bytes = 2;        // accumulated gradients (fp32 main gradients: 4)
  double master_bytes = 4;          // fp32 master copy per trainable parameter; 0 without one
  /// One element of a full-size optimizer state (Adam's moments, momentum):
  /// fp32, or the 16-bit weights' dtype without masters (pure bf16).
  double state_elem_bytes = 4;

  /// Bytes of `weights` parameters as stored, without fp8 copies: the
  /// trained ones at weight_bytes, a frozen base's decoder linear weights
  /// (`frozen_linear` of them) at frozen_weight_bytes (NF4 under QLoRA), its
  /// norms (`frozen_norms`) at frozen_norm_bytes and the rest of it at
  /// frozen_other_bytes. What the model state holds and what ZeRO-3 / FSDP
  /// gathers (torchao's NF4Tensor is all-gathered as NF4 under FSDP2).
  double stored_weight_bytes(double weights, double frozen, double frozen_linear, double frozen_norms) const {
    return (weights - frozen) * weight_bytes + frozen_linear * frozen_weight_bytes + frozen_norms * frozen_norm_bytes +
           (frozen - frozen_linear - frozen_norms) * frozen_other_bytes;
  }
};

/// The quantization of a plan's fp8 recipe or NVFP4:
///  - delayed (TE DelayedScaling, HYBRID): the scale comes from the amax
///    history, so a cast is one pass and a LayerNorm can write its output in
///    fp8 (TE LayerNormLinear); state per tensor: 1024 fp32 amaxes plus scale
///    and scale_inv, (1024 + 2) x 4 bytes;
///  - tensorwise (TE Float8CurrentScaling, HYBRID): the tensor's amax is
///    reduced first, so each cast is preceded by an amax pass and cannot be
///    fused into the norm; state: amax, scale, scale_inv, 12 bytes;
///  - blockwise (TE Float8BlockScaling, E4M3; DeepSeek-AI 2024, DeepSeek-V3
///    Sec. 3.3): scales computed in the cast, fp32 per 1x128 activation block
///    (1 + 4/128 bytes per element) and per 128x128 weight block
///    (1 + 4/16384);
///  - mxfp8 (TE MXFP8BlockScaling, E4M3; OCP MX spec v1.0): an E8M0 scale per
///    32 elements (1 + 1/32 bytes), along rows for one copy and along columns
///    for the other, so the wgrad copy is its own quantization of the 16-bit
///    tensor (a transposed row-wise copy has the wrong blocks);
///  - nvfp4 (TE NVFP4BlockScaling; NVIDIA 2025, "Pretraining Large Language
///    Models with NVFP4"): E2M1 with an E4M3 scale per 16 elements
///    (0.5 + 1/16 bytes) and a per-tensor fp32 scale from the tensor's amax
///    (an amax pass), 16x16 blocks for weights, a 16x16 random Hadamard
///    transform before the wgrad operands' quantization (16 multiply-adds
///    per element), stochastic rounding of gradients (no extra pass);
///  - rowwise (torchao Float8LinearRecipeName.ROWWISE, torchtitan's
///    recipe_name = "rowwise"; torchao/float8/config.py, pytorch/ao 36027d8,
///    lines 157-162 and 334-351): dynamic AXISWISE scaling of input, weight
///    and output gradient, E4M3 for all three (no E5M2 gradients), scales
///    rounded to powers of two. Each operand's amax is reduced along the
///    GEMM's inner dimension (float8_utils.py line 69, torch.amax(dim,
///    keepdim=True)) and cast on the fly, as under tensorwise scaling; each
///    scale is an fp32 per row (amax_to_scale, line 48), 4 bytes per row of
///    each copy and no state kept between casts. The wgrad GEMM's operands
///    are scaled along the other dimension, so each is its own quantization
///    of the 16-bit tensor (float8_linear.py lines 173 and 191, axiswise_dim
///    0); the forward saves the 16-bit input and weight (float8_linear.py
///    line 45, ctx.save_for_backward(input_hp, weight_hp_t)), and the
///    weights are cast in every forward and backward, not cached (config.py
///    lines 270-274: FSDP fp8 all-gather is tensorwise only);
///  - rowwise_with_gw_hp (torchao Float8LinearRecipeName.ROWWISE_WITH_GW_HP,
///    torchtitan's recipe_name = "rowwise_with_gw_hp"; config.py, pytorch/ao
///    v0.16.0, lines 353-378): as rowwise for the output GEMM (input and
///    weight per row, E4M3) and the input-gradient GEMM's output gradient
///    (per row, E4M3, line 359-361), but the input-gradient GEMM's weight
///    cast with one scale per tensor (cc_w_gi TENSORWISE, line 362), and
///    the weight-gradient GEMM on the 16-bit input and output gradient
///    (cc_i_gw and cc_go_gw ScalingType.DISABLED, lines 365-368; float8_
///    linear.py lines 161-165 and 182-183 pass them through uncast), so it
///    runs at the 16-bit rate and nothing is cast for it. The same 16-bit
///    input and weight saved (float8_linear.py line 45);
///  - tensorwise under torchtitan (torchao_float8): torchao's default
///    Float8LinearConfig, one fp32 scale per tensor from its amax, E4M3
///    input and weight, E5M2 gradient, cast where each GEMM needs it as
///    under rowwise. matmul_with_hp_or_float8_args.forward saves the 16-bit
///    input and weight for every recipe (torchao/float8/float8_linear.py,
///    pytorch/ao v0.16.0 3c1065c, line 45, unchanged to 36027d8: the
///    release current at torchtitan 238fa99, which installs torchao
///    nightly), so backward quantizes the 16-bit input again for wgrad
///    (lines 179-195), and no quantized weight copy or scaling state is kept.
///    Transformer Engine's tensorwise (Megatron, NeMo) saves the quantized
///    column-wise copy and caches the weights' copies per step.
inline QuantRecipe quant_recipe(const MicrobatchPlan& p) {
  QuantRecipe q;
  if (p.precision == Precision::kNvfp4) {
    q.gemm = q.grad = Dtype::kFp4;
    q.amax_pass = true;
    q.separate_colwise = true;
    q.hadamard_flop_per_elem = 2.0 * 16;
    q.act_bytes_per_elem = q.weight_bytes_per_elem = bytes_per_element(Dtype::kFp4);
    q.state_bytes_per_tensor = 4;
    return q;
  }
  switch (p.fp8_recipe) {
    case Fp8Recipe::kDelayed:
      q.per_tensor_scale = true;
      q.grad = Dtype::kFp8E5M2;
      q.norm_fused = true;
      q.state_bytes_per_tensor = (kAmaxHistoryLen + 2) * 4;
      break;
    case Fp8Recipe::kTensorwise:
      q.per_tensor_scale = true;
      q.grad = Dtype::kFp8E5M2;
      q.amax_pass = true;
      if (torchao_float8(p)) {
        // torchao's Float8Linear (Float8LinearConfig(): dynamic tensorwise,
        // config.py, pytorch/ao v0.16.0, lines 107 and 331-332; E4M3 input
        // and weight, E5M2 gradient, lines 298-300): every operand cast
        // where its GEMM needs it, scales computed in the cast and kept
        // nowhere; the 16-bit input and weight saved (float8_linear.py line 45).
        q.weight_cast_per_microbatch = true;
        q.saves_16bit_input = true;
        break;
      }
      q.state_bytes_per_tensor = 3 * 4;
      break;
    case Fp8Recipe::kBlockwise:
      q.act_bytes_per_elem = 1 + 4.0 / 128;
      q.weight_bytes_per_elem = 1 + 4.0 / (128 * 128);
      break;
    case Fp8Recipe::kMxfp8:
      q.separate_colwise = true;
      q.act_bytes_per_elem = q.weight_bytes_per_elem = 1 + 1.0 / 32;
      break;
    case Fp8Recipe::kRowwise:
    case Fp8Recipe::kRowwiseGwHp:
      q.amax_pass = true;
      q.separate_colwise = true;
      q.scale_bytes_per_row = 4;
      q.weight_cast_per_microbatch = true;
      q.saves_16bit_input = true;
      q.wgrad_16bit = q.dgrad_weight_per_tensor = p.fp8_recipe == Fp8Recipe::kRowwiseGwHp;
      break;
  }
  return q;
}

/// The policy of a plan:
///  - fp32 / tf32: 4-byte activations, weights and gradients, no masters;
///  - fp16 / bf16 / fp8 / nvfp4: 2-byte activations, weights and gradients, fp32
///    masters (fp8 GEMM inputs are cast by the precision pass; Transformer
///    Engine keeps the 16-bit weights and activations, Micikevicius et al. 2022);
///  - LoRA under fp8 / NVFP4: the frozen base's quantized linear weights are
///    its primary weights, held once, quantized, with no 16-bit copy
///    (Transformer Engine quantized_model_init, transformer_engine/pytorch/
///    quantization.py:877-911: modules "hold only quantized copies of its
///    parameters", named for "LoRA-like fine-tuning, where the main
///    parameters of the model do not change"); the copies kept are
///    memory::QuantizedWeights';
///  - QLoRA: the decoder layers' linear weights in NF4 (bitsandbytes
///    replaces nn.Linear modules; the LM head is skipped), adapters in bf16
///    without fp32 copies (Dettmers et al. 2023, Sec. 3); the reference
///    qlora.py casts embed_tokens and lm_head to bf16 and the norms to fp32;
///  - fp8 primary weights (trained; Transformer Engine fp8_model_init,
///    transformer_engine/pytorch/fp8.py: modules "hold only FP8 copies"; NeMo
///    fp8_params): the linear weights as memory::QuantizedWeights' copies
///    alone, the master in the optimizer (fp32, or the 16-bit weight itself
///    with master_weights none);
///  - master_weights remainder: the fp32 master kept as the 16 bits the bf16
///    weight lacks, 2 bytes per parameter (Apex DistributedFusedAdam
///    store_param_remainders; NeMo sets it for a bf16 model with an fp32
///    optimizer, megatron_base_model.py setup_optimization); Adam 2 + 2 + 2 +
///    8 = 14 bytes per parameter, or 16 with fp32 main gradients;
///  - master_weights none ("pure bf16"): no masters, and torch.optim's
///    full-size states in the weights' dtype (zeros_like(param)): Adam 2 + 2
///    + 2 x 2 = 8 bytes per parameter;
///  - optimizer.state_dtype given: the full-size states in it (bf16: 2
///    bytes, DeepSeek-V3's AdamW moments; Adam with fp32 masters then 2 +
///    2 + 4 + 2 x 2 = 12 bytes per parameter);
///  - main_grads fp32 (Megatron-LM's accumulate_allreduce_grads_in_fp32, on
///    by default for bf16 there: spec::main_grads_of): 4-byte gradients; with
///    Adam 2 + 4 + 4 + 8 = 18 bytes per parameter, 6 + 12 / N_d under the
///    distributed optimizer.
inline PrecisionPolicy precision_policy(const MicrobatchPlan& p) {
  PrecisionPolicy r;
  r.mixed = p.precision != Precision::kFp32 && p.precision != Precision::kTf32;
  r.activation = !r.mixed ? Dtype::kFp32 : (p.precision == Precision::kFp16 ? Dtype::kFp16 : Dtype::kBf16);
  r.linear_gemm = p.precision == Precision::kTf32 ? Dtype::kTf32 : r.activation;
  r.fp8_linear = p.precision == Precision::kFp8 || p.precision == Precision::kNvfp4;
  if (r.fp8_linear) r.quant = quant_recipe(p);
  r.activation_bytes = r.mixed ? 2.0 : 4.0;
  r.weight_bytes = r.activation_bytes;
  r.gradient_bytes = r.weight_bytes;
  const bool qlora = p.finetune.mode == FinetuneMode::kQlora;
  // torchao's rowwise casts a frozen base's 16-bit weights every micro-batch
  // as it does trained ones: no quantized primary weights.
  r.frozen_fp8_primary = r.fp8_linear && p.finetune.mode == FinetuneMode::kLora && !r.quant.weight_cast_per_microbatch;
  r.fp8_primary = r.fp8_linear && !r.frozen_fp8_primary && !qlora && p.fp8_primary_weights;
  r.frozen_weight_bytes = qlora ? kNf4BytesPerWeight : r.weight_bytes;
  r.frozen_other_bytes = r.weight_bytes;
  r.frozen_norm_bytes = qlora ? 4.0 : r.weight_bytes;
  const bool masters = p.master_weights != MasterWeights::kNone;
  // remainder: the fp32 master's low 16 bits; the bf16 weight is its high 16
  // (apex/contrib/optimizers/distributed_fused_adam.py: an int16 shard per
  // parameter shard when store_param_remainders).
  const double master = p.master_weights == MasterWeights::kRemainder ? 2.0 : 4.0;
  r.master_bytes = r.mixed && !qlora && masters ? master : 0.0;
  // fp8 primary weights without an fp32 master: the optimizer holds the
  // 16-bit weight the model no longer does (NeMo fp8_params with a bf16
  // optimizer: Apex store_params in the optimizer's dtype).
  if (r.fp8_primary && !masters) r.master_bytes = r.weight_bytes;
  if (r.mixed && main_grads_of(p) == MainGrads::kFp32) r.gradient_bytes = 4.0;
  r.state_elem_bytes = r.mixed && !masters ? r.weight_bytes : 4.0;
  if (p.optimizer.state_dtype != StateDtype::kAuto)
    r.state_elem_bytes = p.optimizer.state_dtype == StateDtype::kFp32 ? 4.0 : 2.0;
  return r;
}

}  // namespace ridgeline::spec
