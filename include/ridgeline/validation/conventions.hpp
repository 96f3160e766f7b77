// Per-source conventions: how each published source counts FLOPs and what
// it leaves unstated, as one table keyed by the rows' `group`. A source not
// in the table gets the default row (causal attention halved, FlashAttention-2).
#pragma once

#include <string_view>
#include <vector>

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
};

/// The sources with their own row, in table order.
const std::vector<SourceConvention>& source_conventions();
/// The row of `group`, or the default.
const SourceConvention& convention_of(std::string_view group);

}  // namespace ridgeline::validation
