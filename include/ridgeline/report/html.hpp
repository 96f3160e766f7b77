// HTML printer of a capacity report: one self-contained page (inline CSS and
// SVG charts; no scripts, fonts or images fetched; a Content-Security-Policy
// that forbids them). The page is well-formed XML as well as HTML5.
#pragma once

#include <string>

#include "ridgeline/report/capacity_view.hpp"

namespace ridgeline::report {

/// `stem` is the report's file name without extension, for links to NAME.md and NAME.json.
std::string capacity_html(const CapacityView& v, const std::string& stem);

/// Escapes text for XML/HTML content and attribute values (&, <, >, ", ').
std::string xml_escape(std::string_view s);

}  // namespace ridgeline::report
