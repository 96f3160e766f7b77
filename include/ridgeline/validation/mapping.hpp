// Mapping a published row onto Ridgeline's specs: an end-to-end or per-layer
// row onto a model and plan, a GEMM or attention row onto the kernels
// graph/kernels.hpp builds for its shape (the kernels `ridgeline kernel`
// costs). The row's free text (architecture, precision, recomputation,
// attention kernel, FSDP strategy) is interpreted, everything the row leaves
// unstated assumed in words; the training framework (frameworks/*.yaml) the
// row's source ran, read from its citation, implementation and sharding.
// Words a spec parser knows (spec::parse_precision,
// parse_recompute, parse_attention, parse_dtype) are read by it; only the
// genuinely free-text readings ("amp_bf16", "full activation checkpointing",
// "FlashAttention (v1 era)") are interpreted here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/engine/kernel_eval.hpp"
#include "ridgeline/graph/graph.hpp"
#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/model.hpp"
#include "ridgeline/spec/plan.hpp"
#include "ridgeline/spec/published.hpp"
#include "ridgeline/validation/skip.hpp"

namespace ridgeline::validation {

/// How rows are predicted: with the profiles' calibration blocks or not, and
/// the published group whose fitted cost-model defaults take their priors
/// (leave-one-group-out; see cost::ResolveOptions::without_group). The
/// string the view refers to must outlive every prediction made with it.
struct PredictOptions {
  bool use_calibration = true;
  std::string_view fit_without_group;
  /// Where a row's `model.spec` names its model file (ID.yaml): the shipped
  /// models/ beside the hardware profiles' folder.
  std::string models_dir = "models";

  engine::EvalOptions eval() const;
  engine::KernelEvalOptions kernel(bool cuda_graphs = false) const;
};

/// The model and training plan an end-to-end or per-layer row describes.
struct TrainingCase {
  spec::ModelSpec model;
  spec::PlanSpec plan;
  std::vector<std::string> assumptions;  // what the row did not state
};

/// The training framework a row's source ran (an index into
/// spec::frameworks()) and why, in words: "framework fsdp: PyTorch FSDP via
/// Composer (llm-foundry); source.citation names 'llm-foundry'".
struct FrameworkChoice {
  std::uint8_t index = 0;  // 0 = megatron, the default
  std::string why;
  bool fused_loss = false;  // the stack runs its own fused cross-entropy (FrameworkRule)
};

/// The framework of an end-to-end or per-layer row: training.framework when
/// it is a framework's id; else the first stack named (torchtitan;
/// Megatron-DeepSpeed, DeepSpeed, BLOOM and the ZeRO paper as deepspeed;
/// llm-foundry, Composer, MosaicML and FSDP as fsdp; the Hugging Face
/// Trainer as hf; Megatron-LM, NeMo and its papers as megatron; the
/// FlashAttention repo's training code as megatron, the closest profile;
/// eager PyTorch as hf) in, in turn, training.framework,
/// training.implementation, source.citation and url, training.dp_type and
/// the row's notes; else megatron. Never the row's id.
FrameworkChoice framework_of(const spec::PublishedRow& row);

/// Maps an end-to-end or per-layer row onto specs: GPT-style models
/// (LayerNorm, GeLU, learned positions, biases, dropout 0.1, tied embeddings)
/// unless the architecture says llama/SwiGLU/RMSNorm; MPT without biases and
/// dropout; precision, recomputation and attention kernel from the row's
/// text; the framework by framework_of, with its fusion unless the row's
/// implementation says eager or Hugging Face; FSDP FULL_SHARD as ZeRO-3; an
/// unstated micro-batch as the largest power of two that divides the
/// per-GPU batch and fits (the engine's memory model on `hw`). A row that
/// cannot be mapped gives its Skip.
OrSkip<TrainingCase> map_training_row(const spec::PublishedRow& row, const spec::HardwareSpec& hw,
                                      const PredictOptions& opt = {});

/// The engine's prediction of a mapped case, or the engine's rejection of its plan as a Skip.
OrSkip<engine::Prediction> predict_case(const TrainingCase& tc, const spec::HardwareSpec& hw,
                                        const PredictOptions& opt = {});

/// A GEMM or attention row as the kernels it runs, each built by
/// graph/kernels.hpp and costed alone by engine::evaluate_kernel; the
/// predicted time is the sum of theirs. `convention_flops` is what the source
/// divides its measured time by to print TFLOP/s.
struct KernelCase {
  std::vector<graph::Kernel> kernels;
  double convention_flops = 0;
  spec::Dtype dtype = spec::Dtype::kBf16;
  std::string config;                    // the mapped kernel, in words
  std::vector<std::string> assumptions;  // what the row did not state
  // Attention rows: the problem, the implementation and the passes timed.
  graph::AttentionShape shape;
  spec::AttentionKind impl = spec::AttentionKind::kFlash2;
  bool forward = false, backward = false;
};

/// kernel.M, N, K (and batch, default 1) in kernel.dtype:
/// graph::gemm_kernel(M, N, K, batch, dtype); convention FLOPs 2 M N K batch
/// (MAMF, DeepGEMM and every GEMM benchmark count a multiply-add as two).
OrSkip<KernelCase> map_gemm_row(const spec::PublishedRow& row, const spec::HardwareSpec& hw);

/// kernel.batch, seqlen (or seq_len), heads, kv_heads (default heads),
/// head_dim, causal (default true) and the implementation: kernel.impl (or
/// implementation, or the op text, or the last word of the row's id)
/// through attention_impl_of. Naive ("standard") attention is
/// graph::naive_attention_kernels, every other implementation
/// graph::flash_attention_forward / _backward. The pass: kernel.direction
/// (fwd, bwd, fwd_bwd), else the op text ("attention forward"), else both.
/// "fp16/bf16" is bf16 (one peak). Convention FLOPs:
/// attention_benchmark_flops of the forward kernels' model FLOPs. A row of
/// an ablated variant (its source's location says "ablation") that names no
/// implementation is skipped: no shipped kernel is that variant.
OrSkip<KernelCase> map_attention_row(const spec::PublishedRow& row, const spec::HardwareSpec& hw);

/// An attention implementation as sources name it: the spec's words (naive,
/// flash, flash2, flash3, cudnn, triton), "standard" / "eager" / "pytorch" as
/// naive, a FlashAttention with its version ("flashattention2", "FA3",
/// "flash_attn 2"); nullopt when the text names none.
std::optional<spec::AttentionKind> attention_impl_of(std::string_view text);

/// "L24 h2048 a16 s2048 | mb 8 gb 512 | fsdp, bf16, flash2 attention, recompute none | TP1 PP1 DP8 ZeRO-3".
std::string describe(const TrainingCase& tc);

/// The data type a kernel row states ("bf16", "bfloat16", "half", "e4m3", ...), or nullopt.
std::optional<spec::Dtype> dtype_of(std::string_view text);

/// The FlashAttention version named in free text ("flashattention_2",
/// "FlashAttention (v1 era)", "flash_attn 2", "FA3"), or 0 when it names none.
int flash_version_in(std::string_view text);
/// FlashAttention version 1, 2 or 3 as a kernel.
spec::AttentionKind kind_of_version(int v);

/// "missing field SECTION.FIELD".
Skip missing(std::string_view section, std::string_view field);

/// A whole-number field (the loader checked it is one from 1 to 2^30), or the
/// Skip for its absence; whole_or: the fallback for its absence.
OrSkip<int> whole(const spec::PublishedSection& s, const char* section, const char* key);
int whole_or(const spec::PublishedSection& s, const char* key, int fallback);

/// Lower-case copy, and a substring test: the free-text readers' tools.
std::string lower(std::string_view s);
bool contains(std::string_view hay, std::string_view needle);

}  // namespace ridgeline::validation
