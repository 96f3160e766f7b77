#include "ridgeline/validation/stats.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace ridgeline::validation {

double Comparison::speed_error_pct() const {
  if (higher_is_faster) return error_pct;
  // A time: predicted speed / measured speed = measured / predicted.
  return predicted > 0 ? (measured / predicted - 1.0) * 100.0 : 0.0;
}

Comparison compare(std::string quantity, std::string unit, double measured, double predicted, bool higher_is_faster) {
  Comparison c;
  c.quantity = std::move(quantity);
  c.unit = std::move(unit);
  c.measured = measured;
  c.predicted = predicted;
  c.error_pct = (predicted - measured) / measured * 100.0;
  c.higher_is_faster = higher_is_faster;
  return c;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const double pos = std::clamp(q, 0.0, 1.0) * (v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

ErrorStats summarize(int rows, const std::vector<const Comparison*>& predicted) {
  ErrorStats s;
  s.rows = rows;
  s.predicted = static_cast<int>(predicted.size());
  s.skipped = rows - s.predicted;
  std::vector<double> abs_err, speed;
  for (const Comparison* c : predicted) {
    abs_err.push_back(std::fabs(c->error_pct));
    speed.push_back(c->speed_error_pct());
  }
  s.median_abs_pct = percentile(abs_err, 0.5);
  s.p90_abs_pct = percentile(abs_err, 0.9);
  s.median_speed_pct = percentile(speed, 0.5);
  return s;
}

}  // namespace ridgeline::validation
