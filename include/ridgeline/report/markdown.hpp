// Markdown printer of a capacity report: the same facts as the HTML page, as
// tables (GitHub-flavoured Markdown), with a pointer to the HTML for charts.
#pragma once

#include <string>

#include "ridgeline/report/capacity_view.hpp"

namespace ridgeline::report {

/// `stem` is the report's file name without extension, for links to NAME.html and NAME.json.
std::string capacity_markdown(const CapacityView& v, const std::string& stem);

}  // namespace ridgeline::report
