// Per-source conventions: how each published source counts FLOPs and what
// it leaves unstated, as one table keyed by the rows' `group`. A source not
// in the table gets the default row (causal attention halved, FlashAttention-2).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/plan.hpp"

namespace ridgeline::validation {

struct SourceConvention {
  std::string_view group;                 // "" for the default
  spec::AttentionFlops attention_flops;   // kFull: causal attention counted whole
  bool tflops_count_recompute;            // TFLOP/s include recomputation (hardware FLOPs)
  spec::AttentionKind default_attention;  // when a row does not say
  spec::AttentionKind flash_version;      // when a row says FlashAttention without a version
  std::string_view basis;                 // the FLOP formula, in words
  std::string_view flash_note;            // why flash_version, when it is not flash2
  /// Rows measured on Hopper with a later software stack (llm-foundry's H100
  /// tables): the FlashAttention version those ran, and why; unset = flash_version.
  std::optional<spec::AttentionKind> hopper_flash_version = std::nullopt;
  std::string_view hopper_flash_note = {};
  /// The attention kernel of a row that does not say: the framework's
  /// default on the row's GPU generation (as for a source without its own
  /// convention), not default_attention.
  bool attention_by_framework = false;

  /// The FlashAttention version a row on `g` ran when it does not say, and the note why.
  spec::AttentionKind flash_version_on(spec::Generation g) const;
  std::string_view flash_note_on(spec::Generation g) const;
};

/// The sources with their own row, in table order.
const std::vector<SourceConvention>& source_conventions();
/// The row of `group`, or the default.
const SourceConvention& convention_of(std::string_view group);

/// Backward over forward FLOPs in the FlashAttention benchmark convention
/// (Dao-AILab/flash-attention benchmarks/benchmark_flash_attention.py,
/// `flops(..., mode="bwd")`: 2.5x the forward; published.yaml's
/// `conventions.attention_flops`): five matmuls against the forward's two.
inline constexpr double kAttentionBackwardFlopRatio = 2.5;

/// FLOPs the FlashAttention benchmarks (and the FlashAttention-3 paper's
/// figures) credit an attention kernel with: forward 4 b s^2 h d, halved when
/// causal -- the forward kernels' model FLOPs, `forward_model_flops` -- and
/// backward kAttentionBackwardFlopRatio times that; a forward-and-backward
/// measurement counts both.
double attention_benchmark_flops(double forward_model_flops, bool forward, bool backward);

}  // namespace ridgeline::validation
