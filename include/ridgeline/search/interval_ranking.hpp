// Ranking under uncertainty: which rows of a comparison or a search the
// prediction intervals (uncertainty/interval.hpp) can tell apart from the
// best one. Times in seconds; an interval's lo and hi are the factors on a
// predicted step time t that bound the measured one, [t x lo, t x hi].
//
// The best is the fastest configuration that fits: a compare row of least
// step time among those that fit (the earlier row on a tie), a search's first
// candidate (every objective ranks a fixed GPU count and batch by step time:
// MFU is against the fixed dense bf16 peak, cost is GPU-hours times a price).
// Every other row that fits is not distinguishable from the best when the two
// step-time intervals overlap:
//   [t x lo, t x hi] and [t_best x lo_best, t_best x hi_best] share a point
//   <=>  t x lo <= t_best x hi_best  and  t_best x lo_best <= t x hi.
// A search also says how many of its feasible configurations lie within the
// best's interval: those whose predicted step time is at most its upper end,
// t <= t_best x hi_best (they could, at the level, be as fast as the best).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "ridgeline/search/compare.hpp"
#include "ridgeline/search/search.hpp"
#include "ridgeline/uncertainty/interval.hpp"

namespace ridgeline::search {

/// Where a row stands against the best.
enum class Standing : std::uint8_t {
  kBest,              // the best row itself
  kIndistinguishable, // its interval overlaps the best's
  kDistinguishable,   // its interval lies wholly beside the best's
  kUnknown,           // no interval (its own or the best's) to tell by
  kDoesNotFit,        // cannot run: never the best, not weighed against it
};
/// "best", "not distinguishable", "distinguishable", "no interval", "does not fit".
std::string_view name(Standing s);
/// The JSON value of distinguishable_from_best: 0 (false) for the best and the
/// rows that overlap it, 1 (true) for the rows beside it, -1 (null) otherwise.
int distinguishable(Standing s);

/// Whether two predicted step times' intervals overlap (the formula above).
bool overlaps(double t_a_s, const uncertainty::Interval& a, double t_b_s, const uncertainty::Interval& b);

/// The standing of a row that fits (time t_s, interval iv) against the best.
Standing standing(double t_s, const uncertainty::Interval& iv, double t_best_s, const uncertainty::Interval& best);

/// One row's step-time interval and its standing.
struct RankedRow {
  uncertainty::Interval time;
  Standing standing = Standing::kUnknown;
};

struct CompareIntervals {
  double level = uncertainty::kDefaultLevel;
  SortKey by = SortKey::kTime;  // what the best is best by (kNone: kTime)
  int best = -1;                // index into the rows; -1 when none fits
  std::vector<RankedRow> rows;  // one per compare row, in order
};

/// The intervals of compare rows at `level`, each from the pool of its own
/// traits (uncertainty::traits_of) on its own GPU (`hw` for a row without
/// one), and their standings against the best of the rows that fit, by `by`:
/// kTime (and kNone), the least time per token (the most tokens/s); kCost,
/// the least cost per token (cost_per_token_usd); kMfu, the highest MFU;
/// kMemory, the least peak memory. Cost per token and 1 / MFU scale with
/// the step time, so their intervals overlap as the step times' do (the
/// formula above on those figures); peak memory has no step-time interval,
/// so a row with more memory than the best is told apart exactly.
CompareIntervals compare_intervals(const std::vector<CompareRow>& rows, const spec::HardwareSpec& hw,
                                   const uncertainty::IntervalModel& model, double level,
                                   SortKey by = SortKey::kTime);

/// How many feasible configurations lie within the best's interval.
struct WithinBest {
  bool known = false;        // false: the best has no interval, or a merged part kept no times
  std::uint64_t count = 0;   // configurations with step time <= time_hi_s (the best among them)
  std::uint64_t of = 0;      // feasible configurations: evaluated - infeasible
  double time_hi_s = 0;      // the best's interval's upper end
};

struct SearchIntervals {
  double level = uncertainty::kDefaultLevel;
  std::vector<RankedRow> top;  // one per SearchResult::top, in order; top[0] is the best
  WithinBest within;
};

/// The intervals of a search's top candidates at `level` (from each
/// candidate's traits), their standings against top[0], and the count of
/// feasible configurations within top[0]'s interval (from
/// SearchResult::feasible_step_times_s).
SearchIntervals search_intervals(const SearchResult& r, const uncertainty::IntervalModel& model, double level);

/// The number of `times_s` at most `limit_s`.
std::uint64_t count_at_most(const std::vector<double>& times_s, double limit_s);

}  // namespace ridgeline::search
