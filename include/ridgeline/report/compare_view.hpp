// Views of a technique comparison (search::compare rows): a table for people,
// CSV, and a JSON document ("ridgeline.compare/1") for scripts and reports.
// Each row shows its step-time and tokens/s prediction intervals and where it
// stands against the best, the fastest configuration that fits
// (search::compare_intervals, search/interval_ranking.hpp).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ridgeline/search/compare.hpp"
#include "ridgeline/search/interval_ranking.hpp"

namespace ridgeline::report {

/// The table, then the legend: what "best" and "≈ best" mean at the level and
/// which pools the intervals come from.
std::string compare_table(const std::vector<search::Variation>& vars, const std::vector<search::CompareRow>& rows,
                          const search::CompareIntervals& iv);
nlohmann::json compare_json(const std::vector<search::Variation>& vars, const std::vector<search::CompareRow>& rows,
                            const spec::ModelSpec& model, const search::CompareIntervals& iv);
/// One line per row: the variations' values, then status, step_time_s, its interval's ends, tokens_per_s and
/// its interval's ends, mfu, hfu, peak_memory_bytes, fits, speedup, memory_saved_bytes, standing,
/// distinguishable_from_best; an interval's ends are empty where it has none.
std::string compare_csv(const std::vector<search::Variation>& vars, const std::vector<search::CompareRow>& rows,
                        const search::CompareIntervals& iv);

/// The JSON of one row's interval and standing, shared with the search's view:
/// "interval" {level, pool, rows, fallback, note}, "<time_key>_interval" and
/// "tokens_per_s_interval" [lo, hi] (null without an interval), "best",
/// "standing" and "distinguishable_from_best" (true, false or null).
void add_ranked_json(nlohmann::json& e, const search::RankedRow& r, double time_s, double tokens_per_s,
                     const char* time_key);
/// Columns a cell takes on a terminal: its UTF-8 code points ("≈" and "–" are
/// three bytes, one column).
size_t columns(const std::string& s);
/// rows[i]; an invalid interval of unknown standing past the end (a caller that drew none).
const search::RankedRow& ranked_row(const std::vector<search::RankedRow>& rows, size_t i);
/// The table's marker for a standing: "best", "≈ best", "slower", "?" or "-".
std::string standing_marker(search::Standing s);
/// The legend under a ranked table: what the markers mean at the level, and the
/// pools the intervals were drawn from ("" when there are no rows).
std::string ranking_legend(const std::vector<search::RankedRow>& rows, double level);

}  // namespace ridgeline::report
