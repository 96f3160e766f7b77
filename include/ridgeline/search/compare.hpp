// Technique comparison: the cross product of a few settings, each row
// evaluated by the engine, baseline (every variation's first value) first.
// A setting is a plan setting (spec::apply_setting: tp, recompute, framework,
// ...) or names what the row runs on (gpu, model, gpu.FIELD, model.FIELD),
// which the caller resolves, so each row has its own GPU and model. Rows keep
// what does not fit and what is invalid (engine::Status with its
// engine::Problem): a sweep goes on. Speed-up is on tokens/s; memory in bytes.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/engine/engine.hpp"

namespace ridgeline::search {

struct Variation {
  std::string key;                  // a spec::apply_setting key, or a subject key (is_subject_key)
  std::vector<std::string> values;  // in the user's order; the first is the baseline's
};

/// Whether a variation's key names what a row runs on rather than a plan
/// setting: "gpu", "model", "gpu.FIELD", "model.FIELD" (the caller's Resolve
/// reads these; compare applies every other key to the row's plan, "plan.FIELD"
/// as FIELD).
bool is_subject_key(std::string_view key);

/// What one row runs on: its GPU profile and model, and the base plan for
/// them (before the row's plan settings), resolved by the caller.
struct Subject {
  std::shared_ptr<const spec::HardwareSpec> gpu;
  std::shared_ptr<const spec::ModelSpec> model;
  spec::PlanSpec plan;
};

/// The subject of the row whose values are `values` (one per variation, in
/// order). It may throw (a value that names no GPU): compare passes it on.
using Resolve = std::function<Subject(const std::vector<std::string>& values)>;

struct CompareRow {
  std::vector<std::string> values;  // one per variation
  spec::PlanSpec plan;
  engine::Prediction pred;          // status kInvalid with pred.problem for a plan its model or GPU cannot run
  std::shared_ptr<const spec::HardwareSpec> gpu;  // what this row runs on
  std::shared_ptr<const spec::ModelSpec> model;
  /// Whether this row and the baseline are both valid, so speedup and
  /// memory_saved hold (else they stay 1 and 0 and views show none).
  bool compared = false;
  double speedup = 1;        // this tokens/s / the baseline's tokens/s (> 1: more tokens per second)
  double memory_saved = 0;   // baseline peak - this peak (bytes; negative = more)
};

/// Parses "key=v1,v2,...". A comma inside double or single quotes does not
/// split, and quotes around a whole value are removed
/// (gpu.memory.hbm_bandwidth="3.35 TB/s","4.8 TB/s"). Plan settings' values
/// are checked here; subject keys' values are the caller's to check. Returns
/// "" or an error message.
std::string parse_variation(const std::string& text, Variation& out);

/// Evaluates every combination (first variation varies slowest), each on the
/// subject `resolve` gives for its values. A plan setting that does not apply
/// is returned in `error` (with the offending "key=value") and no rows; a plan
/// its model or GPU cannot run is a row with status kInvalid.
std::vector<CompareRow> compare(const std::vector<Variation>& vars, const Resolve& resolve, bool use_calibration,
                                std::string& error);
/// The same on one GPU and model (no subject keys among `vars`).
std::vector<CompareRow> compare(const spec::ModelSpec& m, const spec::PlanSpec& base, const spec::HardwareSpec& hw,
                                const std::vector<Variation>& vars, bool use_calibration, std::string& error);

enum class SortKey { kNone, kTime, kMemory, kMfu, kCost };
/// US dollars per token of a valid row's run (its cost over its tokens, so
/// rows of other GPU counts, prices and batches are weighed by what they
/// deliver); +infinity where the GPU has no price.
double cost_per_token_usd(const CompareRow& r);
/// Sorts all rows but the baseline; invalid rows go last. kCost: least cost
/// per token first (rows of unknown cost after those of known cost).
void sort_rows(std::vector<CompareRow>& rows, SortKey key);

}  // namespace ridgeline::search
