// Validation against published measurements: every row of a file
// (spec::load_published) mapped onto Ridgeline's specs, predicted through
// the engine (validation/predict.hpp) on the profile its GPU name is an alias
// of (validation/profiles.hpp), compared like with like, and summarized per
// group, per subset of a group (GPU profile and precision: llm-foundry's H100
// bf16 and fp8 tables apart), per category, and for the end-to-end rows per
// training framework (validation::framework_of) and per GPU generation of
// the row's profile; and leave-one-group-out, each
// group predicted with the cost-model defaults fitted on its own rows at
// their priors. End-to-end rows that state a measured peak memory
// (measured.peak_memory_gib) are also compared with the memory model's peak
// of the kind measured, apart from the time statistics (MemoryStats). A row
// Ridgeline cannot predict is skipped with its reason; it never aborts the run.
//
// Units: every comparison keeps the unit the source prints; errors are
// signed percentages, (predicted - measured) / measured x 100 (stats.hpp).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ridgeline/spec/published.hpp"
#include "ridgeline/uncertainty/interval.hpp"
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
  /// Whether the row's residual joins the prediction intervals' pools: false
  /// where its source says `interval_pool: false` (with its reason, the
  /// row's source.interval_pool_reason), a source whose settings are too
  /// uncertain to set every interval's width; compared in every table all the same.
  bool pooled = true;
  /// End-to-end rows: whether the row states measured.peak_memory_gib, and
  /// when predicted its comparison with the predicted peak (RowPrediction::memory).
  bool memory_measured = false;
  std::optional<Comparison> memory;
  std::string memory_kind;  // "reserved" or "allocated" when memory is set
  std::string precision;  // the plan's precision or the kernel's dtype, when mapped
  /// End-to-end rows: the framework's id ("fsdp"), skipped rows too; "" for
  /// every other category (a kernel benchmark runs under no framework).
  std::string framework;
  std::string generation;  // the profile's GPU generation ("hopper"); "" when no profile claims the GPU
  std::optional<uncertainty::RunTraits> run;        // predicted end-to-end rows: the run's interval traits
  std::optional<uncertainty::KernelTraits> kernel;  // predicted GEMM and attention rows: the kernel's
  /// The row's subset of its group: "PROFILE PRECISION" ("h100_sxm fp8"),
  /// the GPU name when no profile claims it, without precision when unmapped.
  std::string subset() const;
};

/// The peak-memory comparisons of the end-to-end rows that state a measured
/// peak: |error| statistics in stats (rows: those that state one; predicted:
/// those compared), the median signed error (+ = Ridgeline predicts more
/// memory than measured), and how many of the compared rows the memory model
/// says would not fit on their GPU though the source ran them.
struct MemoryStats {
  ErrorStats stats;
  double median_error_pct = 0;
  int not_fitting = 0;
};

/// The statistics of one subset of a group.
struct SubsetStats {
  std::string group;
  std::string subset;
  ErrorStats stats;
};

struct PublishedReport {
  std::string file;
  std::string group_filter;
  std::vector<PublishedResult> results;  // file order
  ErrorStats overall;
  std::string fit_without_group;  // the group whose fits took their priors ("" = none)
  std::vector<NamedStats> by_group;     // order of first appearance
  /// Groups whose predicted rows fall into more than one subset, each subset
  /// (of predicted rows only) in order of first appearance.
  std::vector<SubsetStats> by_subset;
  std::vector<NamedStats> by_category;  // schema order, categories present only
  ErrorStats end_to_end;                // the end-to-end rows: what by_framework and by_generation split
  std::vector<NamedStats> by_framework;   // split_by_framework of the results
  std::vector<NamedStats> by_generation;  // split_by_generation of the results
  std::vector<std::pair<std::string, int>> skip_reasons;  // most frequent first
  int predicted_not_fitting = 0;  // predicted end-to-end rows the memory model says would not fit
  MemoryStats memory;             // the rows with a measured peak memory
};

/// The peak-memory statistics of `rows` (MemoryStats).
MemoryStats summarize_memory(const std::vector<const PublishedResult*>& rows);

struct PublishedOptions {
  std::string profiles_dir = "hardware_profiles";  // and a row's model.spec in the models/ folder beside it
  std::string group;  // only rows of this group ("" = all)
  bool use_calibration = true;
  /// Predict with the cost-model defaults fitted on this group's rows at
  /// their priors (engine::EvalOptions::fit_without_group); "" = every fit.
  std::string fit_without_group;
};

/// Predicts every row (of the group, when one is given) on `profiles` and summarizes.
PublishedReport validate_published(const spec::PublishedFile& file, const ProfileSet& profiles,
                                   const PublishedOptions& opt = {});

/// The same on the profiles of opt.profiles_dir. Throws support::SpecError
/// only when that folder or a profile in it cannot be read.
PublishedReport validate_published(const spec::PublishedFile& file, const PublishedOptions& opt = {});

ErrorStats summarize(const std::vector<const PublishedResult*>& rows);

/// Statistics of the rows with a non-empty key, one line per key: the keys
/// in `order` first (those present), then the others by first appearance.
std::vector<NamedStats> split_by(const std::vector<const PublishedResult*>& rows,
                                 std::string (*key)(const PublishedResult&),
                                 const std::vector<std::string>& order = {});
/// The end-to-end rows by framework, in spec::frameworks() order (megatron first).
std::vector<NamedStats> split_by_framework(const std::vector<const PublishedResult*>& rows);
/// The end-to-end rows by the GPU generation of their profile, in
/// spec::Generation order ("ampere", "hopper", ...); rows whose GPU no
/// profile claims as "no profile".
std::vector<NamedStats> split_by_generation(const std::vector<const PublishedResult*>& rows);

/// One group, predicted with every fit (in-sample) and with the fits made on
/// its own rows at their priors (left out); or one framework or generation,
/// its rows predicted each with and without its own group's fits.
struct LeaveOneOutGroup {
  std::string group;  // the group (or the framework's id, or the generation)
  ErrorStats in_sample;
  ErrorStats left_out;
};

struct LeaveOneOutReport {
  std::string file;
  std::string group_filter;
  std::vector<LeaveOneOutGroup> groups;  // groups with predicted rows, order of first appearance
  ErrorStats in_sample;                  // every group's rows, pooled
  ErrorStats left_out;                   // every row predicted without its own group's fits, pooled
  /// The pooled end-to-end rows ("end_to_end_training"), split by framework
  /// and by generation (split_by_framework, split_by_generation).
  LeaveOneOutGroup end_to_end;
  std::vector<LeaveOneOutGroup> by_framework;
  std::vector<LeaveOneOutGroup> by_generation;
  /// Every row of the groups with predicted rows, predicted with its own
  /// group's fits left out (file order within each group).
  std::vector<PublishedResult> left_out_rows;
};

/// Leave-one-group-out: for every group (of opt.group, when one is given)
/// with predicted rows, its rows predicted once with every fit and once with
/// fit_without_group = that group. opt.fit_without_group is ignored.
LeaveOneOutReport leave_one_group_out(const spec::PublishedFile& file, const ProfileSet& profiles,
                                      const PublishedOptions& opt = {});
LeaveOneOutReport leave_one_group_out(const spec::PublishedFile& file, const PublishedOptions& opt = {});

/// Anchored validation: the end-to-end rows of each stack (group, GPU
/// profile, framework) predicted after calibrating the stack on K of its
/// own runs, as `calibrate --runs` does for a user's pilot: the K with the
/// fewest GPUs (then the first by id) set the stack's step-time scale (the
/// posterior of their measured / predicted times under the prior of
/// uncertainty/scale_prior.hpp, its tau and sigma_w from the residuals with
/// the stack's group left out), and every other run of the stack is
/// predicted with it. Figures over those other runs, beside the same runs
/// unanchored, and how many lay inside their anchored 80% interval
/// (IntervalModel::run_interval on the calibrated stack, the group left out).
/// Stacks with no more than K runs add none.
struct AnchoredGroup {
  std::string name;
  int stacks = 0;   // stacks with runs beyond the anchors
  int anchors = 0;  // runs used as anchors in them
  ErrorStats unanchored, anchored;
  int interval_rows = 0;     // predicted runs given an anchored interval
  int interval_covered = 0;  // of them, measured inside it
};
struct AnchoredReport {
  int k = 1;
  std::vector<AnchoredGroup> groups;  // order of first appearance
  AnchoredGroup all;
};
/// `model`: the residuals the prior, the distance growth and the intervals
/// are drawn from (an empty model: no prior, the anchors' geometric mean).
AnchoredReport anchored(const std::vector<PublishedResult>& rows, int k,
                        const uncertainty::IntervalModel& model = uncertainty::shipped());

}  // namespace ridgeline::validation
