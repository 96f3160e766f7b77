// SVG charts of a capacity report, drawn from CapacityView alone. Each chart
// is one <svg> element (well-formed XML, inline styles, system fonts) whose
// marks carry the plotted values as data- attributes (data-intensity,
// data-flop-per-s, data-bytes, data-time-s, data-mfu, ...), so a test can
// compare what is drawn with the JSON document.
#pragma once

#include <string>

#include "ridgeline/report/capacity_view.hpp"

namespace ridgeline::report::svg {

/// Least distance between two point labels of the scaling chart (px).
inline constexpr double kLabelGap = 4;

/// Log-log roofline of the GPU: one roof per precision (fp32, tf32, bf16, fp8
/// where supported), the HBM slope, ridge points marked, and the step's
/// kernels as points (x = FLOP per HBM byte, y = achieved FLOP/s) sized by
/// their share of the step time.
std::string roofline(const CapacityView& v);

/// Peak memory per GPU as stacked horizontal bars, one per technique
/// combination, with the capacity line.
std::string memory(const CapacityView& v);

/// The step time with its interval; the step as it is spent (compute by
/// kernel class, exposed communication, SM contention, pipeline bubble, host
/// wait: bars that add up to the step, data-breakdown="step"); and,
/// separately, the communication hidden behind compute (not part of the
/// step, data-breakdown="hidden") and kernel time by phase.
std::string time_breakdown(const CapacityView& v);

/// Memory per GPU of the chosen plan (both end stages under pipeline
/// parallelism) as a stacked bar by memory::kMemoryCategories, with the
/// peak's range, the capacity line and the headroom line when
/// CapacityView::headroom_frac > 0; a legend with each category's bytes.
std::string footprint(const CapacityView& v);

/// MFU and training days of the best layout against the GPU count; "" without a search.
/// The point labels (class "point-label", their estimated boxes as
/// data-box="x0 y0 x1 y1") are placed so that no two of a panel come closer
/// than kLabelGap.
std::string scaling(const CapacityView& v);

}  // namespace ridgeline::report::svg
