// Technique comparison: the cross product of a few plan settings, each
// evaluated by the engine, baseline first. Rows keep infeasible
// configurations (marked), so the table shows what does not fit and why.
#pragma once

#include <string>
#include <vector>

#include "ridgeline/engine/engine.hpp"

namespace ridgeline::search {

struct Variation {
  std::string key;                  // a spec::apply_setting key
  std::vector<std::string> values;  // in the user's order; the first is the baseline's
};

struct CompareRow {
  std::vector<std::string> values;  // one per variation
  spec::PlanSpec plan;
  engine::Prediction pred;
  double speedup = 1;        // baseline step time / this step time
  double memory_saved = 0;   // baseline peak - this peak (bytes; negative = more)
};

/// Parses "key=v1,v2,...". Returns "" or an error message.
std::string parse_variation(const std::string& text, Variation& out);

/// Evaluates every combination (first variation varies slowest). Throws
/// nothing: a setting error is returned in `error` (with the offending
/// "key=value"), and an invalid plan too (its engine::Problem message).
std::vector<CompareRow> compare(const spec::ModelSpec& m, const spec::PlanSpec& base, const spec::HardwareSpec& hw,
                                const std::vector<Variation>& vars, bool use_calibration, std::string& error);

enum class SortKey { kNone, kTime, kMemory, kMfu };
void sort_rows(std::vector<CompareRow>& rows, SortKey key);

}  // namespace ridgeline::search
