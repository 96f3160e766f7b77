// SVG charts of a capacity report, drawn from CapacityView alone. Each chart
// is one <svg> element (well-formed XML, inline styles, system fonts) whose
// marks carry the plotted values as data- attributes (data-intensity,
// data-flop-per-s, data-bytes, data-time-s, data-mfu, ...), so a test can
// compare what is drawn with the JSON document.
#pragma once

#include <string>

#include "ridgeline/report/capacity_view.hpp"

namespace ridgeline::report::svg {

/// Log-log roofline of the GPU: one roof per precision (fp32, tf32, bf16, fp8
/// where supported), the HBM slope, ridge points marked, and the step's
/// kernels as points (x = FLOP per HBM byte, y = achieved FLOP/s) sized by
/// their share of the step time.
std::string roofline(const CapacityView& v);

/// Peak memory per GPU as stacked horizontal bars, one per technique
/// combination, with the capacity line.
std::string memory(const CapacityView& v);

/// Step time by kernel class and by phase.
std::string time_breakdown(const CapacityView& v);

/// MFU and training days of the best layout against the GPU count; "" without a search.
std::string scaling(const CapacityView& v);

}  // namespace ridgeline::report::svg
