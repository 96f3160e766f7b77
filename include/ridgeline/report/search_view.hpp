// Views of a search result: table, Markdown, CSV and JSON
// ("ridgeline.search/2"); the JSON reads back (search_from_json) so shards
// can be merged. The header says which dimensions were searched and which
// fixed (and at what), the --set overrides and the memory headroom. Each row
// shows every setting that reproduces it (its `predict` command line in
// JSON), its exact ties, its step-time and tokens/s prediction intervals and
// where it stands against the best; the views say how many qualifying
// configurations lie within the best's interval (search::search_intervals),
// and, when nothing qualifies, why, with a count per cause.
// Field names follow one scheme: step_time_s, peak_memory_bytes, vpp,
// tokens_per_s, mfu, wall_clock_days, gpu_hours, cost_usd (null when the
// profile has no price), gpu, gpu_name, model, model_name, framework, tokens.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ridgeline/report/calibration_view.hpp"
#include "ridgeline/report/capacity_text.hpp"
#include "ridgeline/search/interval_ranking.hpp"
#include "ridgeline/search/search.hpp"

namespace ridgeline::report {

/// What the search was asked, beyond SearchSpec, for its header.
struct SearchQueryExtras {
  std::vector<std::string> searched;                         // --search names, in order
  std::vector<std::pair<std::string, std::string>> fixed;    // (name, value): ("precision", "bf16")
  std::vector<std::string> sets;                             // --set texts, as given
  std::string sets_summary;                                  // cli::settings_summary, "" for none
  /// --calibration's file (nullptr: none): the query's `calibration`
  /// object (calibration_json of the base plan: the search varies no
  /// framework) and a header line.
  const spec::StackCalibrationSpec* calibration = nullptr;
};

nlohmann::json search_query_json(const search::SearchSpec& s, const spec::ModelSpec& m, const spec::HardwareSpec& hw,
                                 const spec::PlanSpec& base, const SearchQueryExtras& extras = {});
/// With `feasible_times` (a shard's output, for --merge), every feasible
/// configuration's step time, ascending, as "feasible_step_times_s".
nlohmann::json search_json(const search::SearchResult& r, const nlohmann::json& query,
                           const search::SearchIntervals& iv, bool feasible_times = false);
/// Reads a search JSON back; without "feasible_step_times_s" the result's
/// feasible_times_kept is false (a merge then cannot count within the best's interval).
search::SearchResult search_from_json(const nlohmann::json& j, std::string& error);
/// Without `wide`, no tokens/s interval column (the step-time interval's
/// reciprocal), so the rows keep to 120 columns.
std::string search_table(const search::SearchResult& r, const nlohmann::json& query,
                         const search::SearchIntervals& iv, bool wide = true);
std::string search_markdown(const search::SearchResult& r, const nlohmann::json& query,
                            const search::SearchIntervals& iv);
std::string search_csv(const search::SearchResult& r, const nlohmann::json& query, const search::SearchIntervals& iv);
/// "12 of 3,456 feasible configurations lie within the best's 80% interval (step time at most 1.23 s)",
/// or why they cannot be counted.
std::string within_best_line(const search::SearchIntervals& iv);
/// The header lines: the question; "searched: ...; fixed: ..."; the --set
/// line; the headroom rule.
std::vector<std::string> search_header(const nlohmann::json& query);
/// When nothing qualifies: one line per cause with its count ("25,920 do not divide (...)").
std::vector<std::string> why_nothing_qualifies(const search::SearchResult& r, const nlohmann::json& query);
/// "$1.23M", or "unknown" when the profile has no price (`price_known` false).
std::string cost_text(double usd, bool price_known);

/// One best row per GPU (search --gpu a,b,c): the GPU's search and its query.
/// "days and cost: for 2T tokens (--tokens)": the tokens a query's days and
/// cost are for (its tokens_source); "" for a query without one.
std::string tokens_basis_line(const nlohmann::json& query);

struct GpuSearch {
  nlohmann::json query;
  search::SearchResult result;
  std::string none;  // why the GPU has no row, when a scan found nothing ("" otherwise)
};
/// A --deadline or --budget scan over the GPU kinds (search --gpu a,b,c
/// --deadline 30d): each kind's answer has its own count (the query's
/// "gpus"); the winner is the cheapest (by_cost) or the fastest of them.
struct GpuScan {
  enum Kind { kNone, kDeadline, kBudget } kind = kNone;
  std::string limit_text;  // "30d", "$2M"
  bool by_cost = false;
  std::vector<std::string> notes;  // where --max-gpus bounds a kind's answer
};
/// The index of the winning run of a scan (-1: none answers, or no scan).
int gpu_scan_winner(const std::vector<GpuSearch>& runs, const GpuScan& scan);
std::string gpu_table(const std::vector<GpuSearch>& runs, bool markdown, const GpuScan& scan = {}, bool wide = false);
nlohmann::json gpu_json(const std::vector<GpuSearch>& runs, const GpuScan& scan = {});
std::string gpu_csv(const std::vector<GpuSearch>& runs);

/// A table as terminal text: each column padded to its widest cell (by
/// terminal columns), numbers right-aligned, two spaces of indent.
std::string plain_table(const text::Table& t);

}  // namespace ridgeline::report
