// Views of a search result: table, CSV and JSON ("ridgeline.search/1"); the
// JSON reads back (search_from_json) so shards can be merged.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "ridgeline/search/search.hpp"

namespace ridgeline::report {

nlohmann::json search_query_json(const search::SearchSpec& s, const spec::ModelSpec& m, const spec::HardwareSpec& hw,
                                 const spec::PlanSpec& base);
nlohmann::json search_json(const search::SearchResult& r, const nlohmann::json& query);
search::SearchResult search_from_json(const nlohmann::json& j, std::string& error);
std::string search_table(const search::SearchResult& r, const nlohmann::json& query);
std::string search_csv(const search::SearchResult& r);

}  // namespace ridgeline::report
