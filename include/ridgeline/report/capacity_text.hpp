// Printer-side text of a capacity report: the formatted facts and tables that
// both the Markdown and the HTML printer lay out, so the two show the same
// strings ("1.23 s", "45.1%", "61.2 GiB"). Formatting only: every number is
// a field of CapacityView, scaled by units::format_*.
#pragma once

#include <string>
#include <vector>

#include "ridgeline/report/capacity_view.hpp"
#include "ridgeline/uncertainty/interval.hpp"

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

/// "Fits: 61.2 GiB of 80.0 GiB per GPU; 1.23 s per step; MFU 45.1%; 12.3 days and $1.23M for 15.0T
/// tokens (80% interval 11.0–14.5 days, $1.10M–$1.40M)"; "Fits at the point estimate only" when
/// the memory range's upper end does not; with a budget, the tokens it buys as the range.
std::string headline(const CapacityView& v);
std::vector<Fact> question(const CapacityView& v);
Table gpu_sources(const CapacityView& v);
Table residuals(const CapacityView& v);
/// The key figures (step time, throughput, MFU, HFU, the interval's pool, memory, days, GPU-hours,
/// cost, energy), each figure's interval first in its note.
std::vector<Fact> answer(const CapacityView& v);
Table memory_breakdown(const CapacityView& v);
Table techniques(const CapacityView& v);
/// "Fastest configuration that fits: selective · bf16 · flash2 · fused, 1.23 s per step (1.45x the baseline)".
std::string best_technique(const CapacityView& v);
Table layouts(const CapacityView& v);
Table scaling(const CapacityView& v);
std::vector<Fact> sizing(const CapacityView& v);
/// The step as it is spent (CapacityView::step): compute by kernel class,
/// exposed communication, SM contention, pipeline bubble, host wait; then the
/// step, 100%.
Table step_spent(const CapacityView& v);
/// Communication hidden behind compute (not part of the step) against the
/// exposed part and the whole; no rows without communication.
Table hidden_comm(const CapacityView& v);
/// The two tables of "Where the step time goes" as the Markdown printer asks
/// for them: step_spent and hidden_comm.
Table time_by_class(const CapacityView& v);
Table time_by_phase(const CapacityView& v);
/// Kernel time by phase (hidden communication included); the shares are of the kernel time.
Table kernel_time_by_phase(const CapacityView& v);
/// The kernels that take most of the step, with their roofline coordinates.
Table top_kernels(const CapacityView& v, int n = 12);
/// "roof = spec-sheet dense peak x 0.959 (the 1755 MHz the kernels run at, of the 1830 MHz boost) x 0.901
/// (training-clock fraction) = x 0.864": how the roofline's ceilings follow from the spec sheet.
std::string roof_derivation(const CapacityView& v);
/// Per precision: the spec-sheet dense peak, the roof (Roofline::clock_scale of it), the ridge point.
Table roofs(const CapacityView& v);
Table assumptions(const CapacityView& v);

/// "$1.23M", "$456K", "$12.34".
std::string usd(double v);
/// format_flops, or "5.31e22 FLOP" beyond the EFLOP range.
std::string flop_count(double f);
/// "12.3 days".
std::string days(double d);
/// "82.5K tokens/s".
std::string tokens_per_s(double v);

/// The figures of a prediction interval (include/ridgeline/uncertainty/interval.hpp).
/// "690–910 ms": both ends formatted by `format`, the unit written once when
/// both ends share it ("950 us–1.20 ms" when they do not; "$3.10M–$4.10M").
std::string range(double lo, double hi, std::string (*format)(double));
/// "80%": a level as a percentage.
std::string level(double level);
/// `line` broken at spaces into lines of at most `width` terminal columns
/// (a word longer than that stands alone), each after the first starting
/// with `indent`; each line ends in a newline.
std::string wrap(const std::string& line, size_t width, const std::string& indent);
/// `t` without the columns whose heads are in `heads` (a view's columns left
/// to --wide).
void drop_columns(Table& t, const std::vector<std::string>& heads);
/// The default terminal width of predict, compare, search and advise
/// (--wide: no limit).
inline constexpr size_t kTextWidth = 120;
/// Every line of `text` longer than `width` columns wrapped at spaces: its
/// continuation lines start where its value starts (after the line's indent
/// and, in a "label   value" line, its label and the spaces after it), so a
/// wrapped line reads as one entry. Tables are left whole (a paragraph whose
/// head has four or more gaps of two or more spaces): their views keep their
/// width. A line that holds a `ridgeline predict` command stays whole, so
/// that it can be copied; so does a line with no space to break at.
std::string fit_width(const std::string& text, size_t width = kTextWidth);
/// "80% interval 690–910 ms"; "" for an invalid interval or range.
std::string interval(const uncertainty::Interval& iv, const Range& r, std::string (*format)(double));
/// "80%, from megatron on Hopper, compute-bound, 61 validated runs"; for an
/// invalid interval "none: " and its note. The fallback note is separate: iv.note.
std::string interval_source(const uncertainty::Interval& iv);
/// Whether peak memory fits at its interval's upper end: "yes", "only at the
/// point estimate" (it fits, its upper end does not) or "no".
std::string fits_at_upper_bound(const uncertainty::MemoryInterval& m);

}  // namespace ridgeline::report::text
