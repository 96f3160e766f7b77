// The views of validate-published (cli/validate_published.cpp): per-row
// measured against predicted, error statistics by group, subset, category,
// framework and GPU generation, leave-one-group-out beside in-sample, the
// prediction-interval coverage and the anchored comparison, as a text
// table, JSON, CSV or Markdown. Views only: the numbers come from
// validation::validate_published, leave_one_group_out, coverage_of and
// anchored.
#pragma once

#include <string>

#include "ridgeline/validation/coverage.hpp"
#include "ridgeline/validation/published.hpp"

namespace ridgeline::report {

/// `format`: table | json | csv | markdown (the caller checks it).
std::string render_published(const validation::PublishedReport& r, const std::string& format, bool show_skipped);

/// Leave one group out, with the coverage of the intervals drawn from its residuals.
std::string render_leave_one_group_out(const validation::LeaveOneOutReport& r, const validation::CoverageReport& cov,
                                       const std::string& format);

/// Anchored on K runs per stack (`format`: table | json | markdown); `file` names the published file.
std::string render_anchored(const validation::AnchoredReport& r, const std::string& file, const std::string& format);

}  // namespace ridgeline::report
