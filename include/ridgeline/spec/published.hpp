// Published measurements as read from a file in the schema of
// shared/validation/published.yaml (papers' tables, framework benchmark
// tables, microbenchmark studies): rows of text and numbers, nothing mapped
// yet. validation/ interprets them.
//
// Loading is strict on the row structure (the file is a map with a `rows`
// sequence; a row is a map with `id`, `group` and a known `category`; its
// sections are maps; the numbers Ridgeline reads are numbers) and lenient on
// unknown keys inside rows, because every source states different things.
// Problems are located and collected like every other loader's, then thrown
// as one support::SpecError.
//
// Units: none are converted here; a value keeps the text the source printed,
// with its number when the whole text is one.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/support/diagnostics.hpp"

namespace ridgeline::spec {

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
/// Every category, in schema order.
const std::vector<PublishedCategory>& published_categories();

/// Largest whole number a row may state (2^30), so that counts stay exact ints.
inline constexpr double kPublishedMaxWhole = 1073741824.0;

/// A row's yes/no text: true, yes, on / false, no, off in any case.
std::optional<bool> parse_published_bool(std::string_view s);

/// One scalar as the file states it.
struct PublishedValue {
  std::string text;
  std::optional<double> number;  // when the whole text is a number
  support::SourceLoc loc;
};

/// The scalar fields of one section of a row (source, hardware, model,
/// training, kernel, measured, derived); nested maps and sequences are not kept.
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
  PublishedSection source, hardware, model, training, kernel, measured, derived;
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

/// The distinct groups of a file, in order of first appearance.
std::vector<std::string> published_groups(const PublishedFile& file);

}  // namespace ridgeline::spec
