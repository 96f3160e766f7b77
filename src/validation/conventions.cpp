#include "ridgeline/validation/conventions.hpp"

#include <iterator>

namespace ridgeline::validation {

namespace {

/// NeMo's model-FLOPs convention (its comment at the table's use below):
/// the attention not halved, the framework's own attention kernel.
constexpr SourceConvention nemo_model_flops(std::string_view group) {
  return {group, spec::AttentionFlops::kFull, false, spec::AttentionKind::kFlash2, spec::AttentionKind::kFlash2,
          "L h^2 (12 + 12 g/a + 18 f/h + 12 s/h + 6 V/(L h)) per token", "", std::nullopt, {}, true};
}

constexpr SourceConvention kConventions[] = {
    // Korthikanti et al. 2022, App. A: 72 B s L h^2 (1 + s/6h + V/12hL), attention not halved;
    // Megatron-LM of 2022 (fused scale-mask-softmax, no FlashAttention).
    {"korthikanti2022", spec::AttentionFlops::kFull, false, spec::AttentionKind::kNaive,
     spec::AttentionKind::kFlash2, "72 B s L h^2 (1 + s/6h + V/12hL)", ""},
    // Narayanan et al. 2021, Sec. 5.1: 96 B s L h^2 (...): TFLOP/s count the recomputed forward.
    {"narayanan2021", spec::AttentionFlops::kFull, true, spec::AttentionKind::kNaive, spec::AttentionKind::kFlash2,
     "96 B s L h^2 (1 + s/6h + V/16hL), counts recomputation", ""},
    // FlashAttention-2 paper, Sec. 4.2: 6 s N + 12 L h s^2 per sequence (attention not halved).
    {"flashattention2_paper", spec::AttentionFlops::kFull, false, spec::AttentionKind::kFlash2,
     spec::AttentionKind::kFlash2, "6 s N + 12 L h s^2 per sequence", ""},
    // flash-attention training README: Megatron-LM formula x 3/4 (model FLOPs, not halved).
    {"flashattention_repo", spec::AttentionFlops::kFull, false, spec::AttentionKind::kFlash,
     spec::AttentionKind::kFlash2, "Megatron-LM formula x 3/4", ""},
    // llm-foundry collect_results.py: 3 x (2 N s + 4 L h s^2) per sequence (not halved). Its
    // 2023 benchmark runs (scripts/train/benchmarking/submit_benchmarks.py: --attn_impl
    // default 'triton', which sets model.attn_config.attn_impl; sweep.sh passes none) ran
    // llm-foundry's Triton FlashAttention (llmfoundry/models/layers/flash_attn_triton.py,
    // flash-attn 1.0.x's flash_attn_triton.py) on the pre-MLIR Triton compiler (setup.py
    // v0.3.0: triton-pre-mlir, branch triton_pre_mlir_sm90 for the H100s): mma.sync on both
    // GPUs. The large-scale H100 table (>= 128 GPUs, added in 2024 with sweep.py's
    // --attn_impl flash and the gpu-flash2 install) states flash2 in its rows.
    {"llm_foundry", spec::AttentionFlops::kFull, false, spec::AttentionKind::kTritonLegacy,
     spec::AttentionKind::kTritonLegacy, "3 x (2 N s + 4 L h s^2) per sequence",
     "attention kernel not stated: triton_legacy (llm-foundry's benchmark script defaulted to attn_impl triton, "
     "its Triton FlashAttention on the pre-MLIR Triton compiler)",
     std::nullopt, {}},
    // NeMo's model FLOPs (nemo/utils/flops_formulas.py as first added,
    // f0bf77b, llama2/llama3: 12 s/h per layer-h^2, the attention not
    // halved; its NeMo 24.07 rows' TFLOP/s and tokens/s agree with it within
    // 0.05%): the long-context table gives TFLOP/s alone. Its kernels are
    // the framework's (cuDNN under Megatron on Hopper and Blackwell).
    // The page's two tables are two sources (NeMo 24.03.01 on DGX-H100,
    // NeMo 25.04.rc2 on DGX-B200); the B200 one is in published.yaml, the
    // H100 one pending (validation/pending/README.md).
    nemo_model_flops("nemo_long_context"),
    nemo_model_flops("nemo_long_context_b200"),
};

constexpr SourceConvention kDefaultConvention = {"", spec::AttentionFlops::kCausal, false,
                                                 spec::AttentionKind::kFlash2, spec::AttentionKind::kFlash2,
                                                 "causal attention halved", ""};

}  // namespace

spec::AttentionKind SourceConvention::flash_version_on(spec::Generation g) const {
  return g == spec::Generation::kHopper && hopper_flash_version ? *hopper_flash_version : flash_version;
}

std::string_view SourceConvention::flash_note_on(spec::Generation g) const {
  return g == spec::Generation::kHopper && hopper_flash_version ? hopper_flash_note : flash_note;
}

double attention_benchmark_flops(double forward_model_flops, bool forward, bool backward) {
  return forward_model_flops * ((forward ? 1.0 : 0.0) + (backward ? kAttentionBackwardFlopRatio : 0.0));
}

const std::vector<SourceConvention>& source_conventions() {
  static const std::vector<SourceConvention> all(std::begin(kConventions), std::end(kConventions));
  return all;
}

const SourceConvention& convention_of(std::string_view group) {
  for (const auto& c : kConventions)
    if (c.group == group) return c;
  return kDefaultConvention;
}

}  // namespace ridgeline::validation
