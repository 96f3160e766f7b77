// Markdown printers: a capacity report (the same facts as the HTML page, as
// tables in GitHub-flavoured Markdown, with a pointer to the HTML for charts)
// and a prediction (`predict --format markdown`: the lines of the terminal
// table, prediction_view.hpp, as Markdown tables).
#pragma once

#include <string>

#include "ridgeline/report/capacity_view.hpp"
#include "ridgeline/report/prediction_view.hpp"

namespace ridgeline::report {

/// `stem` is the report's file name without extension, for links to NAME.html and NAME.json.
std::string capacity_markdown(const CapacityView& v, const std::string& stem);

/// A prediction: title, plan, summary, top kernels, memory per GPU, the run's totals.
std::string prediction_markdown(const engine::Prediction& pred, const Inputs& in, int top_kernels = 12);

/// A Markdown table (pipes escaped, line breaks flattened; the highlight row
/// in bold) followed by a blank line; "" when it has no rows.
std::string markdown_table(const text::Table& t);

}  // namespace ridgeline::report
