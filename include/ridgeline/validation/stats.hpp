// Error statistics of predictions against measurements. Every comparison
// keeps the unit the source prints (s, ms, ns, tokens/s, TFLOP/s, GB/s,
// fractions); errors are signed percentages, (predicted - measured) /
// measured x 100. Median and p90 interpolate linearly between order
// statistics (numpy.percentile's default).
#pragma once

#include <string>
#include <vector>

namespace ridgeline::validation {

/// One compared quantity.
struct Comparison {
  std::string quantity;  // e.g. "iteration_time_s", "tokens_per_s_total", "tflops"
  std::string unit;      // as printed: "s", "ms", "ns", "tokens/s", "TFLOP/s", "GB/s", "fraction", ...
  double measured = 0;
  double predicted = 0;
  double error_pct = 0;          // (predicted - measured) / measured x 100
  bool higher_is_faster = true;  // throughput-like (true) or time-like (false)
  /// The same error as a speed: + when Ridgeline predicts faster than measured.
  double speed_error_pct() const;
};

/// A comparison of `predicted` against `measured` (> 0).
Comparison compare(std::string quantity, std::string unit, double measured, double predicted, bool higher_is_faster);

/// Error statistics over a set of rows (0 when nothing was predicted).
struct ErrorStats {
  int rows = 0;
  int predicted = 0;
  int skipped = 0;
  double median_abs_pct = 0;
  double p90_abs_pct = 0;
  double median_speed_pct = 0;  // signed: + = Ridgeline predicts faster (bias)
};

struct NamedStats {
  std::string name;
  ErrorStats stats;
};

/// Linear-interpolation percentile (q in [0, 1]) of unsorted values; 0 when empty.
double percentile(std::vector<double> values, double q);

/// Statistics of `rows` rows of which `predicted` holds the primary
/// comparison of each predicted one (the others were skipped).
ErrorStats summarize(int rows, const std::vector<const Comparison*>& predicted);

}  // namespace ridgeline::validation
