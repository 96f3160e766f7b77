// Mapping an end-to-end or per-layer published row onto Ridgeline's specs:
// the row's free text (architecture, precision, recomputation, attention
// kernel, FSDP strategy) interpreted, everything the row leaves unstated
// assumed in words. Words a spec parser knows (spec::parse_precision,
// parse_recompute, parse_attention, parse_dtype) are read by it; only the
// genuinely free-text readings ("amp_bf16", "full activation checkpointing",
// "FlashAttention (v1 era)") are interpreted here.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/model.hpp"
#include "ridgeline/spec/plan.hpp"
#include "ridgeline/spec/published.hpp"
#include "ridgeline/validation/skip.hpp"

namespace ridgeline::validation {

/// The model and training plan an end-to-end or per-layer row describes.
struct TrainingCase {
  spec::ModelSpec model;
  spec::PlanSpec plan;
  std::vector<std::string> assumptions;  // what the row did not state
};

/// Maps an end-to-end or per-layer row onto specs: GPT-style models
/// (LayerNorm, GeLU, learned positions, biases, dropout 0.1, tied embeddings)
/// unless the architecture says llama/SwiGLU/RMSNorm; MPT without biases and
/// dropout; precision, recomputation and attention kernel from the row's
/// text; FSDP FULL_SHARD as ZeRO-3; an unstated micro-batch as the largest
/// power of two that divides the per-GPU batch and fits (the engine's memory
/// model on `hw`). A row that cannot be mapped gives its Skip.
OrSkip<TrainingCase> map_training_row(const spec::PublishedRow& row, const spec::HardwareSpec& hw,
                                      bool use_calibration = true);

/// The engine's prediction of a mapped case, or the engine's rejection of its plan as a Skip.
OrSkip<engine::Prediction> predict_case(const TrainingCase& tc, const spec::HardwareSpec& hw, bool use_calibration);

/// "L24 h2048 a16 s2048 | mb 8 gb 512 | bf16, flash2 attention, recompute none | TP1 PP1 DP8 ZeRO-1".
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
