// Printer-side text of a capacity report: the formatted facts and tables that
// both the Markdown and the HTML printer lay out, so the two show the same
// strings ("1.23 s", "45.1%", "61.2 GiB"). Formatting only: every number is
// a field of CapacityView, scaled by units::format_*.
#pragma once

#include <string>
#include <vector>

#include "ridgeline/report/capacity_view.hpp"

namespace ridgeline::report::text {

/// One labelled figure.
struct Fact {
  std::string label;
  std::string value;
  std::string note;  // may be empty
};

/// A table: header, rows of cells, which columns are numbers (right-aligned)
/// and which row to emphasise (-1 = none).
struct Table {
  std::vector<std::string> head;
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> numeric;
  int highlight = -1;
};

/// "Fits: 61.2 GiB of 80.0 GiB per GPU; 1.23 s per step; MFU 45.1%; 12.3 days; $1.23M".
std::string headline(const CapacityView& v);
std::vector<Fact> question(const CapacityView& v);
Table gpu_sources(const CapacityView& v);
Table residuals(const CapacityView& v);
/// The key figures (step time, throughput, MFU, HFU, memory, days, GPU-hours, cost, energy).
std::vector<Fact> answer(const CapacityView& v);
Table memory_breakdown(const CapacityView& v);
Table techniques(const CapacityView& v);
/// "Fastest configuration that fits: selective · bf16 · flash2 · fused, 1.23 s per step (1.45x the baseline)".
std::string best_technique(const CapacityView& v);
Table layouts(const CapacityView& v);
Table scaling(const CapacityView& v);
std::vector<Fact> sizing(const CapacityView& v);
Table time_by_class(const CapacityView& v);
Table time_by_phase(const CapacityView& v);
/// The kernels that take most of the step, with their roofline coordinates.
Table top_kernels(const CapacityView& v, int n = 12);
Table roofs(const CapacityView& v);
Table assumptions(const CapacityView& v);

/// "$1.23M", "$456K", "$12.34".
std::string usd(double v);
/// format_flops, or "5.31e22 FLOP" beyond the EFLOP range.
std::string flop_count(double f);
/// "12.3 days".
std::string days(double d);

}  // namespace ridgeline::report::text
