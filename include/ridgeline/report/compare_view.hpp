// Views of a technique comparison (search::compare rows): a table for people,
// Markdown, CSV, and a JSON document ("ridgeline.compare/2") for scripts and
// reports. Each row shows what it runs on (its own GPU profile, model and
// framework), its step-time and tokens/s prediction intervals, its speed-up
// on tokens/s against the baseline, the run's wall-clock days and cost for
// the plan's tokens (engine::TrainingTotals; cost unknown where the profile
// has no price), and where it stands against the best (CompareIntervals). A
// row whose plan its model or GPU cannot run shows its status and problem in
// place of numbers.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ridgeline/report/calibration_view.hpp"
#include "ridgeline/search/compare.hpp"
#include "ridgeline/search/interval_ranking.hpp"

namespace ridgeline::report {

/// The line above a comparison: "Llama-3-8B on NVIDIA H100 SXM5 80GB; base plan: PLAN; capacity 80.0 GiB",
/// with "Each row's model" / "each row's GPU" (and no capacity) where the rows' differ, then
/// `set_summary` ("set gpu.memory.hbm_bandwidth=4.8 TB/s") on a line of its own when not empty.
/// With a --calibration file, a line saying which rows it applied to (calibration_rows_line).
std::string compare_header(const std::vector<search::CompareRow>& rows, const std::string& plan_summary,
                           const std::string& set_summary, const spec::StackCalibrationSpec* calibration = nullptr);

/// The table, then the legend: what "best" is best by, what "≈ best" means
/// at the level and which pools the intervals come from. Without `wide`, the
/// HFU, memory saved and both interval columns are left out and the columns
/// are one space apart (the rest keep to 120 columns); JSON, CSV and
/// Markdown have every column.
std::string compare_table(const std::vector<search::Variation>& vars, const std::vector<search::CompareRow>& rows,
                          const search::CompareIntervals& iv, bool wide = false);
/// The header (compare_header) as a paragraph, the table as a Markdown pipe table, the legend.
std::string compare_markdown(const std::vector<search::Variation>& vars, const std::vector<search::CompareRow>& rows,
                             const search::CompareIntervals& iv, const std::string& header);
/// "ridgeline.compare/2": vary, set (the --set texts), interval_level, best_row and one entry per row: settings,
/// gpu, gpu_name, model, model_name, framework, tokens, tokens_source, plan, status, problem {field, message} (null unless
/// invalid), step_time_s, tokens_per_s, mfu, hfu, peak_memory_bytes, capacity_bytes, fits, speedup (on tokens/s),
/// memory_saved_bytes, wall_clock_days, gpu_hours, cost_usd (null without a price), memory, the interval and
/// standing (add_ranked_json). An invalid row's figures are null.
/// With a --calibration file: `calibration` (calibration_json of the first row's plan, with `rows_applied`,
/// how many rows it applied to) and each row's `calibration_applied`.
nlohmann::json compare_json(const std::vector<search::Variation>& vars, const std::vector<search::CompareRow>& rows,
                            const search::CompareIntervals& iv, const std::vector<std::string>& sets,
                            const spec::StackCalibrationSpec* calibration = nullptr);
/// One line per row: the variations' values, gpu, model, framework, tokens, status, step_time_s, its interval's
/// ends, tokens_per_s and its interval's ends, mfu, hfu, peak_memory_bytes, fits, speedup, memory_saved_bytes,
/// wall_clock_days, gpu_hours, cost_usd, standing, distinguishable_from_best, problem; a figure is empty where
/// there is none (an interval's ends without an interval, cost without a price, every figure of an invalid row).
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
/// The table's marker for a standing: "best", "≈ best", "slower" (by cost
/// "costlier", by MFU "lower MFU", by memory "more memory"), "?" or "-".
std::string standing_marker(search::Standing s, search::SortKey by = search::SortKey::kTime);
/// The legend under a ranked table: what the best is best by, what the
/// markers mean at the level, and the pools the intervals were drawn from
/// ("" when there are no rows).
std::string ranking_legend(const std::vector<search::RankedRow>& rows, double level,
                           search::SortKey by = search::SortKey::kTime);

}  // namespace ridgeline::report
