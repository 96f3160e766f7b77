// Published measurements: rows of a file in the schema of
// shared/validation/published.yaml (papers' tables, framework benchmark tables,
// microbenchmark studies), each mapped onto Ridgeline's specs, predicted with
// the engine (end-to-end and per-layer rows) or the cost model (GEMM,
// attention, streaming and launch rows), and compared like with like.
//
// Loading is strict on the row structure (the file is a map with a `rows`
// sequence; a row is a map with `id`, `group` and a known `category`; its
// sections are maps; the numbers Ridgeline reads are numbers) and lenient on
// unknown keys inside rows, because every source states different things.
// A row Ridgeline cannot predict (an unknown GPU, a missing field, a quantity
// the model has no term for, an unsupported technique) is skipped with a
// reason; it never aborts the run.
//
// Units: every comparison keeps the unit the source prints (s, ms, ns,
// tokens/s, TFLOP/s, GB/s, fractions); errors are signed percentages,
// (predicted - measured) / measured x 100.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/model.hpp"
#include "ridgeline/spec/plan.hpp"
#include "ridgeline/support/diagnostics.hpp"

namespace ridgeline::calibrate {

/// What a row measures (the schema's `category`).
enum class PublishedCategory : std::uint8_t {
  kEndToEndTraining,
  kAttentionKernel,
  kGemmKernel,
  kMemoryMicrobenchmark,
  kTensorCoreInstruction,
  kLaunchOverhead,
  kLayerTime,
  kClockObservation,
};
inline constexpr int kPublishedCategoryCount = 8;

std::string_view name(PublishedCategory c);
std::optional<PublishedCategory> parse_published_category(std::string_view s);
/// The accepted category words, in schema order.
const std::vector<std::string>& published_category_names();

/// One scalar as the file states it.
struct PublishedValue {
  std::string text;
  std::optional<double> number;  // when the whole text is a number
  support::SourceLoc loc;
};

/// The scalar fields of one section of a row (hardware, model, training,
/// kernel, measured, derived); nested maps and sequences are not kept.
struct PublishedSection {
  std::map<std::string, PublishedValue> fields;

  bool has(const std::string& key) const { return fields.count(key) > 0; }
  const PublishedValue* get(const std::string& key) const;
  std::optional<double> number(const std::string& key) const;
  /// The text of a field, or "" when absent.
  std::string text(const std::string& key) const;
};

struct PublishedRow {
  int index = 0;  // position in rows[]
  std::string id;
  std::string group;
  PublishedCategory category = PublishedCategory::kEndToEndTraining;
  std::string confidence;
  std::string notes;
  support::SourceLoc loc;
  PublishedSection hardware, model, training, kernel, measured, derived;
};

struct PublishedFile {
  std::string path;
  std::vector<PublishedRow> rows;
};

/// Loads and checks a published-measurements file. Structural problems are
/// collected (up to support::kMaxDiagnostics) and thrown as one
/// support::SpecError whose diagnostics read
///   file:line:col: error: rows[12] (id foo): missing required field 'category'
PublishedFile load_published(const std::string& path);

/// Shipped profile id for a GPU name as sources print it ("A100-SXM4-80GB",
/// "H100-SXM", "H200 (141 GB)" ...), or "" when no shipped profile is that
/// GPU. Case, spaces versus dashes, an "NVIDIA " prefix and anything after
/// '(' or ',' are ignored.
std::string profile_for_gpu(std::string_view gpu_name);
/// The name table behind profile_for_gpu: normalized name -> profile id.
const std::vector<std::pair<std::string, std::string>>& gpu_name_table();

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
/// power of two that divides the per-GPU batch and fits. Returns nullopt
/// with the reason in `why` when the row cannot be mapped.
std::optional<TrainingCase> map_training_row(const PublishedRow& row, const spec::HardwareSpec& hw,
                                             std::string* why = nullptr, bool use_calibration = true);

/// One compared quantity.
struct Comparison {
  std::string quantity;  // e.g. "iteration_time_s", "tokens_per_s_total", "tflops"
  std::string unit;      // as printed: "s", "ms", "ns", "tokens/s", "TFLOP/s", "GB/s", "fraction", ...
  double measured = 0;
  double predicted = 0;
  double error_pct = 0;         // (predicted - measured) / measured x 100
  bool higher_is_faster = true;  // throughput-like (true) or time-like (false)
  /// The same error as a speed: + when Ridgeline predicts faster than measured.
  double speed_error_pct() const;
};

struct PublishedResult {
  std::string id;
  std::string group;
  PublishedCategory category = PublishedCategory::kEndToEndTraining;
  std::string gpu;      // as the row states it
  std::string profile;  // hardware profile used ("" when skipped before mapping)
  bool predicted = false;
  std::string skip_reason;            // when !predicted
  Comparison primary;                 // when predicted; the one the statistics use
  std::vector<Comparison> secondary;  // other stated quantities, for reading
  std::string config;                 // the mapped configuration, in words
  std::vector<std::string> assumptions;  // what Ridgeline had to assume
  bool fits = true;  // end-to-end: the memory model agrees the run fits
};

/// Error statistics over a set of rows (median and p90 by linear
/// interpolation between order statistics; 0 when nothing was predicted).
struct ErrorStats {
  int rows = 0;
  int predicted = 0;
  int skipped = 0;
  double median_abs_pct = 0;
  double p90_abs_pct = 0;
  double median_speed_pct = 0;  // signed: + = Ridgeline predicts faster (bias)
};

struct NamedStats {
  std::string name;
  ErrorStats stats;
};

struct PublishedReport {
  std::string file;
  std::string group_filter;
  std::vector<PublishedResult> results;  // file order
  ErrorStats overall;
  std::vector<NamedStats> by_group;     // order of first appearance
  std::vector<NamedStats> by_category;  // schema order, categories present only
  std::vector<std::pair<std::string, int>> skip_reasons;  // most frequent first
  int predicted_not_fitting = 0;  // predicted end-to-end rows the memory model says would not fit
};

struct PublishedOptions {
  std::string profiles_dir = "hardware_profiles";
  std::string group;  // only rows of this group ("" = all)
  bool use_calibration = true;
};

/// Linear-interpolation percentile (q in [0, 1]) of unsorted values; 0 when empty.
double percentile(std::vector<double> values, double q);

ErrorStats summarize(const std::vector<const PublishedResult*>& rows);

/// Predicts every row (of the group, when one is given) and summarizes.
/// Throws support::SpecError only when a shipped profile cannot be read.
PublishedReport validate_published(const PublishedFile& file, const PublishedOptions& opt = {});

/// The distinct groups of a file, in order of first appearance.
std::vector<std::string> published_groups(const PublishedFile& file);

}  // namespace ridgeline::calibrate
