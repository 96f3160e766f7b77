// The search's declared axes (search::axes), the mixed-radix counter that
// enumerates a layout as one value index per axis (search::MixedRadix), and
// the memo each scope level keeps (search::LevelMemo). The search's answers
// themselves are checked against engine::evaluate in
// search_equivalence_test.cpp; here, the table's own promises.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "ridgeline/search/search.hpp"
#include "ridgeline/spec/plan_fields.hpp"

using namespace ridgeline;

TEST_CASE("MixedRadix: the first digit varies slowest; index and set are inverses") {
  search::MixedRadix r;
  r.push(3);
  r.push(1);  // one value: changes no index
  r.push(4);
  CHECK(r.size() == 3);
  CHECK(r.count() == 12);  // 3 x 1 x 4
  // (2, 0, 3): (2 x 1 + 0) x 4 + 3 = 11, the last point.
  const size_t last[3] = {2, 0, 3};
  CHECK(r.index(last) == 11);
  // 7 = 1 x 4 + 3: digits (1, 0, 3).
  size_t d[3];
  r.set(7, d);
  CHECK(d[0] == 1);
  CHECK(d[1] == 0);
  CHECK(d[2] == 3);
  for (size_t i = 0; i < r.count(); ++i) {
    r.set(i, d);
    CHECK(r.index(d) == i);
  }
}

TEST_CASE("axes: one entry per dimension, each named once and over a plan field with a stated scope") {
  std::set<int> dims;
  std::set<std::string> names;
  for (const search::Axis& a : search::axes()) {
    CAPTURE(a.name);
    dims.insert(static_cast<int>(a.dim));
    names.insert(std::string(a.name));
    CHECK(search::name(a.dim) == a.name);
    CHECK(search::parse_dim(a.name) == a.dim);
    const spec::PlanField* f = spec::find_plan_field(a.key);
    REQUIRE(f);
    CHECK(f->scope != spec::Scope::kNone);
    if (!a.also_key.empty()) {
      const spec::PlanField* g = spec::find_plan_field(a.also_key);
      REQUIRE(g);
      CHECK(g->scope == f->scope);  // one axis over two fields: both read by the same stage
    }
    // An axis with values of its own has all three parts of its effect;
    // one without (dp, recompute_layers) has none.
    CHECK(bool(a.values) == bool(a.count));
    if (a.count && a.dim != search::Dim::kStages) CHECK(bool(a.apply));  // stages: run() forms the split per PP
    // Searched or pinned: an axis the CLI can name says how.
    CHECK((bool(a.pin) || bool(a.search)));
  }
  CHECK(dims.size() == static_cast<size_t>(search::kDimCount));
  CHECK(names.size() == static_cast<size_t>(search::kDimCount));
  CHECK(search::axes().size() == static_cast<size_t>(search::kDimCount));
}

// A layout's place in the enumeration (which refused plan a search reports
// first) is its digits in table order; the step's digits, innermost in the
// loops, must then come last.
TEST_CASE("axes: the step's digits come last in table order") {
  bool step_seen = false;
  for (const search::Axis& a : search::axes()) {
    if (!a.count) continue;
    const bool step = search::scope_of(a) == spec::Scope::kStep;
    CAPTURE(a.name);
    CHECK((step || !step_seen));
    step_seen = step_seen || step;
  }
  CHECK(step_seen);
}

// The scopes, from what reads each field: TP shards every GEMM of the
// micro-batch graph (Megatron-LM's column/row split); PP chooses which layers
// a stage's graph holds; ZeRO shards the model state, which the step's
// memory and optimizer read, not the micro-batch's kernels (Rajbhandari et
// al. 2020, Sec. 5).
TEST_CASE("axes: scopes of the layout's degrees") {
  CHECK(search::scope_of(search::axis(search::Dim::kTp)) == spec::Scope::kGraph);
  CHECK(search::scope_of(search::axis(search::Dim::kPp)) == spec::Scope::kLayout);
  CHECK(search::scope_of(search::axis(search::Dim::kZero)) == spec::Scope::kStep);
  CHECK(search::scope_of(search::axis(search::Dim::kVpp)) == spec::Scope::kStep);
}

TEST_CASE("LevelMemo: an entry is formed once per reset") {
  search::LevelMemo<int> memo;
  int formed = 0;
  auto form = [&](int& e) { e = 10 + formed++; };
  memo.reset(4);
  CHECK(memo.get(2, form) == 10);
  CHECK(memo.get(2, form) == 10);  // kept, not formed again
  CHECK(memo.get(3, form) == 11);
  CHECK(formed == 2);
  memo.reset(4);
  CHECK(memo.get(2, form) == 12);  // forgotten by the reset
  CHECK(formed == 3);
}
