// Views of a technique comparison (search::compare rows): a table for people
// and a JSON document ("ridgeline.compare/1") for scripts and reports.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ridgeline/search/compare.hpp"

namespace ridgeline::report {

std::string compare_table(const std::vector<search::Variation>& vars, const std::vector<search::CompareRow>& rows);
nlohmann::json compare_json(const std::vector<search::Variation>& vars, const std::vector<search::CompareRow>& rows,
                            const spec::ModelSpec& model);

}  // namespace ridgeline::report
