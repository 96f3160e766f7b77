// Views of a search result: table, CSV and JSON ("ridgeline.search/1"); the
// JSON reads back (search_from_json) so shards can be merged. Each top row
// shows its step-time and tokens/s prediction intervals and where it stands
// against the best; the views say how many feasible configurations lie
// within the best's interval (search::search_intervals).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "ridgeline/search/interval_ranking.hpp"
#include "ridgeline/search/search.hpp"

namespace ridgeline::report {

nlohmann::json search_query_json(const search::SearchSpec& s, const spec::ModelSpec& m, const spec::HardwareSpec& hw,
                                 const spec::PlanSpec& base);
/// With `feasible_times` (a shard's output, for --merge), every feasible
/// configuration's step time, ascending, as "feasible_step_times_s".
nlohmann::json search_json(const search::SearchResult& r, const nlohmann::json& query,
                           const search::SearchIntervals& iv, bool feasible_times = false);
/// Reads a search JSON back; without "feasible_step_times_s" the result's
/// feasible_times_kept is false (a merge then cannot count within the best's interval).
search::SearchResult search_from_json(const nlohmann::json& j, std::string& error);
std::string search_table(const search::SearchResult& r, const nlohmann::json& query,
                         const search::SearchIntervals& iv);
std::string search_csv(const search::SearchResult& r, const search::SearchIntervals& iv);
/// "12 of 3,456 feasible configurations lie within the best's 80% interval (step time at most 1.23 s)",
/// or why they cannot be counted.
std::string within_best_line(const search::SearchIntervals& iv);

}  // namespace ridgeline::report
