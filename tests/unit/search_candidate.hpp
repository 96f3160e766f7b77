// A search row's figures from a full engine prediction, for the tests that
// check search::run against engine::evaluate of every layout
// (search_equivalence_test.cpp, search_stages_test.cpp), and the figures
// a row prints compared exactly.
#pragma once

#include <doctest/doctest.h>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/search/search.hpp"

namespace ridgeline::test {

/// A candidate from a full prediction, as a row reports one: days from the
/// goodput-adjusted wall clock; score by the objective (time: the step;
/// cost: dollars, or GPU-seconds per step without a price; mfu: -MFU).
inline search::Candidate from_prediction(const engine::Prediction& p, const search::Layout& l,
                                         search::Objective o = search::Objective::kTime) {
  search::Candidate c;
  c.layout = l;
  c.step_time_s = p.step.time_s;
  c.mfu = p.step.mfu;
  c.hfu = p.step.hfu;
  c.memory_bytes = p.memory.total;
  c.memory_hi_bytes = search::memory_upper_bytes(p.memory);
  c.tokens_per_s = p.step.tokens_per_s;
  c.bubble_fraction = p.step.bubble_fraction;
  c.exposed_comm_s = p.step.exposed_comm_s;
  c.days = p.totals.wall_s / 86400.0;
  c.completes = p.totals.completes;
  c.gpu_hours = p.totals.gpu_hours;
  c.cost_usd = p.totals.cost_usd;
  c.tokens = p.totals.tokens;
  switch (o) {
    case search::Objective::kTime: c.score = p.step.time_s; break;
    case search::Objective::kCost:
      c.score = p.totals.cost_usd > 0 ? p.totals.cost_usd : p.step.time_s * static_cast<double>(p.step.gpus);
      break;
    case search::Objective::kMfu: c.score = -p.step.mfu; break;
  }
  return c;
}

/// The figures a row prints (and its JSON holds), exactly.
inline void check_same_figures(const search::Candidate& a, const search::Candidate& b) {
  CHECK(a.step_time_s == b.step_time_s);
  CHECK(a.score == b.score);
  CHECK(a.mfu == b.mfu);
  CHECK(a.hfu == b.hfu);
  CHECK(a.memory_bytes == b.memory_bytes);
  CHECK(a.memory_hi_bytes == b.memory_hi_bytes);
  CHECK(a.tokens_per_s == b.tokens_per_s);
  CHECK(a.bubble_fraction == b.bubble_fraction);
  CHECK(a.exposed_comm_s == b.exposed_comm_s);
  CHECK(a.days == b.days);
  CHECK(a.gpu_hours == b.gpu_hours);
  CHECK(a.cost_usd == b.cost_usd);
  CHECK(a.tokens == b.tokens);
  CHECK(a.completes == b.completes);
}

}  // namespace ridgeline::test
