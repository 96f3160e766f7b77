#include "ridgeline/search/interval_ranking.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ridgeline::search {

std::string_view name(Standing s) {
  switch (s) {
    case Standing::kBest: return "best";
    case Standing::kIndistinguishable: return "not distinguishable";
    case Standing::kDistinguishable: return "distinguishable";
    case Standing::kUnknown: return "no interval";
    case Standing::kDoesNotFit: return "does not fit";
  }
  return "no interval";
}

int distinguishable(Standing s) {
  switch (s) {
    case Standing::kBest:
    case Standing::kIndistinguishable: return 0;
    case Standing::kDistinguishable: return 1;
    default: return -1;
  }
}

bool overlaps(double t_a_s, const uncertainty::Interval& a, double t_b_s, const uncertainty::Interval& b) {
  return a.time_lo(t_a_s) <= b.time_hi(t_b_s) && b.time_lo(t_b_s) <= a.time_hi(t_a_s);
}

Standing standing(double t_s, const uncertainty::Interval& iv, double t_best_s, const uncertainty::Interval& best) {
  if (!iv.valid() || !best.valid()) return Standing::kUnknown;
  return overlaps(t_s, iv, t_best_s, best) ? Standing::kIndistinguishable : Standing::kDistinguishable;
}

CompareIntervals compare_intervals(const std::vector<CompareRow>& rows, const spec::HardwareSpec& hw,
                                   const uncertainty::IntervalModel& model, double level, SortKey by) {
  CompareIntervals out;
  out.level = level;
  out.by = by == SortKey::kNone ? SortKey::kTime : by;
  out.rows.resize(rows.size());
  // The figure ranked, least best. Time is ranked per token, t / n (step
  // time over tokens per step), so rows whose steps take different numbers
  // of tokens (a doubled micro-batch) are weighed by what they deliver; where
  // every step takes the same tokens this is the step-time ranking.
  // Intervals scale with t, so their overlap on time per token, cost per
  // token or 1 / MFU is overlaps() on that figure.
  const auto figure = [&](const CompareRow& r) {
    switch (out.by) {
      case SortKey::kCost: return cost_per_token_usd(r);
      case SortKey::kMfu: return r.pred.step.mfu > 0 ? 1 / r.pred.step.mfu : std::numeric_limits<double>::infinity();
      case SortKey::kMemory: return r.pred.memory.total;
      default:
        return r.pred.step.tokens_per_step > 0 ? r.pred.step.time_s / r.pred.step.tokens_per_step : r.pred.step.time_s;
    }
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    out.rows[i].time = model.run_interval(uncertainty::traits_of(r.pred, r.plan, r.gpu ? *r.gpu : hw), level);
    const bool fits = r.pred.status == engine::Status::kOk;
    if (!fits) out.rows[i].standing = Standing::kDoesNotFit;
    // The least figure that fits; strictly less, so a tie keeps the earlier row.
    if (fits && std::isfinite(figure(r)) && (out.best < 0 || figure(r) < figure(rows[out.best])))
      out.best = static_cast<int>(i);
  }
  if (out.best < 0) return out;
  const double f_best = figure(rows[out.best]);
  const auto& best = out.rows[out.best].time;
  for (size_t i = 0; i < rows.size(); ++i) {
    auto& x = out.rows[i];
    const double f = figure(rows[i]);
    if (static_cast<int>(i) == out.best) x.standing = Standing::kBest;
    else if (x.standing == Standing::kDoesNotFit) continue;
    else if (!std::isfinite(f)) x.standing = Standing::kUnknown;
    else if (out.by == SortKey::kMemory) x.standing = f > f_best ? Standing::kDistinguishable : Standing::kIndistinguishable;
    else x.standing = standing(f, x.time, f_best, best);
  }
  return out;
}

std::uint64_t count_at_most(const std::vector<double>& times_s, double limit_s) {
  return static_cast<std::uint64_t>(std::count_if(times_s.begin(), times_s.end(), [limit_s](double t) { return t <= limit_s; }));
}

SearchIntervals search_intervals(const SearchResult& r, const uncertainty::IntervalModel& model, double level) {
  SearchIntervals out;
  out.level = level;
  out.within.of = r.counts.evaluated - r.counts.infeasible;
  if (r.top.empty()) return out;
  out.top.resize(r.top.size());
  for (size_t i = 0; i < r.top.size(); ++i) out.top[i].time = model.run_interval(r.top[i].traits, level);
  const auto& best = r.top.front();
  const auto& best_iv = out.top.front().time;
  out.top.front().standing = Standing::kBest;
  for (size_t i = 1; i < r.top.size(); ++i)
    out.top[i].standing = standing(r.top[i].step_time_s, out.top[i].time, best.step_time_s, best_iv);
  if (best_iv.valid() && r.feasible_times_kept) {
    out.within.known = true;
    out.within.time_hi_s = best_iv.time_hi(best.step_time_s);
    out.within.count = count_at_most(r.feasible_step_times_s, out.within.time_hi_s);
  }
  return out;
}

}  // namespace ridgeline::search
