// Validation against published measurements: every row of a file
// (spec::load_published) mapped onto Ridgeline's specs, predicted through
// the engine (validation/predict.hpp) on the profile its GPU name is an alias
// of (validation/profiles.hpp), compared like with like, and summarized per
// group and per category. A row Ridgeline cannot predict is skipped with its
// reason; it never aborts the run.
//
// Units: every comparison keeps the unit the source prints; errors are
// signed percentages, (predicted - measured) / measured x 100 (stats.hpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ridgeline/spec/published.hpp"
#include "ridgeline/validation/profiles.hpp"
#include "ridgeline/validation/stats.hpp"

namespace ridgeline::validation {

struct PublishedResult {
  std::string id;
  std::string group;
  spec::PublishedCategory category = spec::PublishedCategory::kEndToEndTraining;
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

/// Predicts every row (of the group, when one is given) on `profiles` and summarizes.
PublishedReport validate_published(const spec::PublishedFile& file, const ProfileSet& profiles,
                                   const PublishedOptions& opt = {});

/// The same on the profiles of opt.profiles_dir. Throws support::SpecError
/// only when that folder or a profile in it cannot be read.
PublishedReport validate_published(const spec::PublishedFile& file, const PublishedOptions& opt = {});

ErrorStats summarize(const std::vector<const PublishedResult*>& rows);

}  // namespace ridgeline::validation
