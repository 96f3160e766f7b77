// Precision policy: what a plan's precision and fine-tuning mode mean for
// every tensor's width, decided in one place. The step graph (activation and
// GEMM dtypes), the memory model (weights, gradients, masters), the optimizer
// and data-parallel passes (bytes moved) and the search's pruning bound all
// read this value; none of them spells the rules again. Units: bytes per element.
#pragma once

#include "ridgeline/spec/kinds.hpp"
#include "ridgeline/spec/plan.hpp"

namespace ridgeline::spec {

/// NF4 with double-quantized block constants: 4 bits per weight plus an 8-bit
/// constant per 64 weights and an fp32 constant per 256 constants, 4.127 bits
/// (Dettmers et al. 2023, Sec. 3).
inline constexpr double kNf4BytesPerWeight = 4.127 / 8.0;

struct PrecisionPolicy {
  /// 16-bit activations and weights with fp32 masters (Micikevicius et al.
  /// 2018), as opposed to fp32 / tf32 training, where everything is 4 bytes.
  bool mixed = true;
  Dtype activation = Dtype::kBf16;  // activations between kernels, attention core
  Dtype linear_gemm = Dtype::kBf16; // linear-layer GEMMs before the fp8 pass
  bool fp8_linear = false;          // linear-layer forward GEMMs run in fp8 (techniques/precision.cpp)
  double activation_bytes = 2;
  double weight_bytes = 2;          // trainable weights and gathered copies
  double frozen_weight_bytes = 2;   // a frozen base (LoRA: as trained; QLoRA: NF4)
  double gradient_bytes = 2;
  double master_bytes = 4;          // fp32 master copy per trainable parameter; 0 without one
};

/// The policy of a plan:
///  - fp32 / tf32: 4-byte activations, weights and gradients, no masters;
///  - fp16 / bf16 / fp8: 2-byte activations, weights and gradients, fp32
///    masters (fp8 GEMM inputs are cast by the precision pass; Transformer
///    Engine keeps the 16-bit weights and activations, Micikevicius et al. 2022);
///  - QLoRA: frozen base in NF4, adapters in bf16 without fp32 copies
///    (Dettmers et al. 2023, Sec. 3).
inline PrecisionPolicy precision_policy(const MicrobatchPlan& p) {
  PrecisionPolicy r;
  r.mixed = p.precision != Precision::kFp32 && p.precision != Precision::kTf32;
  r.activation = !r.mixed ? Dtype::kFp32 : (p.precision == Precision::kFp16 ? Dtype::kFp16 : Dtype::kBf16);
  r.linear_gemm = p.precision == Precision::kTf32 ? Dtype::kTf32 : r.activation;
  r.fp8_linear = p.precision == Precision::kFp8;
  r.activation_bytes = r.mixed ? 2.0 : 4.0;
  r.weight_bytes = r.activation_bytes;
  r.gradient_bytes = r.weight_bytes;
  const bool qlora = p.finetune.mode == FinetuneMode::kQlora;
  r.frozen_weight_bytes = qlora ? kNf4BytesPerWeight : r.weight_bytes;
  r.master_bytes = r.mixed && !qlora ? 4.0 : 0.0;
  return r;
}

}  // namespace ridgeline::spec
