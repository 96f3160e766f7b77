// Sequence parallelism as a searched dimension (search::Dim::kSp,
// SearchSpec::sp_searched): one axis-table entry. Searched, each TP degree
// is tried with SP off and on; at TP 1 there is nothing to split, so on is
// the same layout as off and is pruned as redundant.
#include <doctest/doctest.h>

#include "ridgeline/search/search.hpp"
#include "search_candidate.hpp"
#include "test_support.hpp"

using namespace ridgeline;

namespace {

/// Llama-3-8B on 8 H100s, everything but TP fixed: TP in {1, 2, 4, 8, 16,
/// 32} of which 16 and 32 exceed the 8 GPUs; DP = 8 / TP.
struct Case8B {
  spec::HardwareSpec hw = test::gpu("h100_sxm");
  spec::ModelSpec m = test::model("llama3_8b");
  spec::PlanSpec base;
  search::SearchSpec s;
  Case8B() {
    base.seq_len = 4096;
    base.global_batch = 32;
    s.gpus = 8;
    s.global_batch = 32;
    s.pp = 1, s.cp = 1, s.micro_batch = 1, s.vpp = 1, s.zero = 1;
    s.recompute = {{spec::RecomputeKind::kSelective, 0}};
    s.threads = 1;
    s.top = 100;
  }
};

}  // namespace

TEST_CASE("search sp: off and on at each TP degree; on at TP 1 is redundant") {
  Case8B c;
  const auto fixed = search::run(c.s, c.m, c.base, c.hw);  // SP on with TP > 1, the default rule
  c.s.sp_searched = true;
  const auto r = search::run(c.s, c.m, c.base, c.hw);
  // Two values: the enumeration doubles. TP 16 and 32 do not divide 8 GPUs
  // (shape, checked first) with SP on or off; TP 8 leaves DP 1, where ZeRO-1
  // has nothing to shard (redundant, on or off). Of the rest, TP 1 with SP
  // on repeats TP 1 without (redundant); TP 2 and 4 with SP off are new
  // layouts, evaluated.
  CHECK(r.counts.enumerated == 2 * fixed.counts.enumerated);
  CHECK(r.counts.shape == 2 * fixed.counts.shape);
  CHECK(fixed.counts.redundant == 1);  // TP 8 at ZeRO-1
  CHECK(r.counts.redundant == 3);      // TP 8 on and off, TP 1 on
  CHECK(fixed.counts.evaluated == 3);  // TP 1, 2, 4
  CHECK(r.counts.evaluated == 5);      // and TP 2, 4 with SP off
  CHECK(r.counts.enumerated ==
        r.counts.shape + r.counts.batch + r.counts.redundant + r.counts.plan + r.counts.state + r.counts.evaluated);
  // Every row is what `predict` says of its plan, and no row has SP at TP 1.
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  const search::Candidate* off2 = nullptr;
  const search::Candidate* on2 = nullptr;
  for (const auto& row : r.top) {
    CHECK(!(row.layout.sp && row.layout.tp == 1));
    const auto p = search::plan_for(c.base, row.layout, c.s.global_batch);
    const auto pred = engine::evaluate(c.m, p, c.hw, opt);
    test::check_same_figures(row, test::from_prediction(pred, row.layout));
    if (row.layout.tp == 2) (row.layout.sp ? on2 : off2) = &row;
  }
  // At TP 2 both qualify (8B in bf16 with ZeRO-1 and selective
  // recomputation is far from 80 GB), and SP saves activation memory: per
  // layer s*b*h*(10 + 24/t) bytes of what TP leaves whole become
  // s*b*h*34/t (Korthikanti et al. 2022, Table 2: with t = 2, 22 against 17
  // units of s*b*h for the non-attention-core part).
  REQUIRE(off2 != nullptr);
  REQUIRE(on2 != nullptr);
  CHECK(on2->memory_bytes < off2->memory_bytes);
}

TEST_CASE("search sp: pinned, it takes the given value at every TP degree") {
  Case8B c;
  c.s.sp = 0;
  const auto r = search::run(c.s, c.m, c.base, c.hw);
  REQUIRE(!r.top.empty());
  for (const auto& row : r.top) CHECK(!row.layout.sp);
}
