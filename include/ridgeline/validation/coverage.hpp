// Out-of-sample residuals and the coverage of the intervals drawn from them.
//
// residuals_of takes the rows leave_one_group_out predicted with their own
// group's fits left out; each predicted end-to-end, GEMM or attention row
// gives one uncertainty::Residual, but for the rows whose source says
// `interval_pool: false` (PublishedResult::pooled, with the row's reason:
// torchtune's README table). coverage_of then checks the intervals
// honestly: every row's interval is drawn from the residuals of the *other*
// groups only (uncertainty::IntervalModel's exclude_group), as a run the
// validation has never seen would be, and the row counts as covered when
// its measured value lies inside. Reported per nominal level, overall, per
// framework, per GPU generation and per source group (end-to-end rows) and
// per kernel kind, with the median interval width.
#pragma once

#include <string>
#include <vector>

#include "ridgeline/uncertainty/interval.hpp"
#include "ridgeline/validation/published.hpp"

namespace ridgeline::validation {

/// The residual of each predicted end-to-end, GEMM or attention row of `rows`:
/// ln(predicted time / measured time), ln(measured / predicted) for a rate.
std::vector<uncertainty::Residual> residuals_of(const std::vector<PublishedResult>& rows);

/// One line of the coverage table: at each level, the share of its rows whose
/// measurement the interval holds and the median interval width, (hi - lo) as
/// a percentage of the point estimate.
struct CoverageLine {
  std::string name;
  int rows = 0;
  std::vector<double> covered;         // per level, 0..1
  std::vector<double> median_width_pct;  // per level
  std::vector<int> fallbacks;          // per level: rows whose most specific pool was too thin
};

struct CoverageReport {
  std::vector<double> levels;
  CoverageLine overall;                     // every row: end-to-end and kernels
  CoverageLine end_to_end;                  // every end-to-end row
  std::vector<CoverageLine> by_framework;   // spec::frameworks() order
  std::vector<CoverageLine> by_generation;  // spec::Generation order
  std::vector<CoverageLine> by_group;       // end-to-end rows per source group, in the residuals' order
  CoverageLine kernels;                     // every GEMM and attention row
  std::vector<CoverageLine> by_kernel_kind;
};

/// The nominal levels the coverage table reports.
inline const std::vector<double> kCoverageLevels = {0.5, 0.8, 0.95};

/// Leave-one-group-out coverage of `residuals` at `levels`.
CoverageReport coverage_of(const std::vector<uncertainty::Residual>& residuals,
                           const std::vector<double>& levels = kCoverageLevels);

}  // namespace ridgeline::validation
