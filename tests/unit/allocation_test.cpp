// No heap allocation on the evaluation path. A search evaluates millions of
// configurations; each reuses the caller's workspace (graphs, summary) and
// prediction, whose vectors keep their capacity across calls (clear() never
// frees), so once one call has sized them an evaluation of the same shape
// allocates nothing:
//  - engine::evaluate_into with keep_kernels = false (the single-plan path);
//  - engine::summarize_microbatch (with its CostMemo) + engine::finish, as search::run calls them
//    for each layout (src/search/search.cpp).
// Allocations are counted by the replaced global operator new of
// bench/counting_allocator.hpp (defined in this file for the test binary),
// only inside an alloc_count::Scope. ASan builds leave the replacement out (it
// would cost ASan its new/delete checks for the whole binary) and skip these
// checks with a MESSAGE.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#define RIDGELINE_DEFINE_COUNTING_NEW
#include "../../bench/bench_plans.hpp"
#include "../../bench/counting_allocator.hpp"
#include "ridgeline/cost/cost.hpp"
#include "ridgeline/engine/cost_memo.hpp"
#include "test_support.hpp"

using namespace ridgeline;

namespace {

/// The plans bench/engine_bench.cpp times (bench/bench_plans.hpp).
std::vector<spec::PlanSpec> plans() { return {bench::llama3_70b_plan(false), bench::llama3_70b_plan(true)}; }

const std::string kWhere =
    "to see where: build with -DRIDGELINE_ALLOC_TRACE (and -rdynamic) for a backtrace of each counted allocation";

int* volatile g_sink = nullptr;  // escapes the control allocation so it cannot be elided

/// Heap allocations made by `f()`. The count is read before any doctest
/// assertion runs: CHECK_MESSAGE and a failing CHECK allocate themselves.
template <class F>
std::uint64_t allocations(F&& f) {
  alloc_count::Scope allocs;
  f();
  return allocs.count();
}

}  // namespace

TEST_CASE("the counting allocator counts inside a scope only") {
  if (!alloc_count::kCounting) {
    MESSAGE("AddressSanitizer build: operator new is ASan's, allocations are not counted");
    return;
  }
  CHECK(allocations([] {
          g_sink = new int(1);
          delete g_sink;
        }) == 1);
  const auto before = alloc_count::g_count.load();
  g_sink = new int(2);
  delete g_sink;
  CHECK(alloc_count::g_count.load() == before);
}

TEST_CASE("evaluate_into makes no heap allocation after one warm-up call") {
  if (!alloc_count::kCounting) {
    MESSAGE("AddressSanitizer build: allocations are not counted, check skipped");
    return;
  }
  const auto hw = test::gpu("h100_sxm");
  const auto m = test::model("llama3_70b");
  const auto c = cost::resolve(hw);
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  for (const auto& p : plans()) {
    CAPTURE(p.parallel.cp);
    engine::Workspace ws;
    engine::Prediction out;
    engine::evaluate_into(out, ws, m, p, hw, c, opt);
    REQUIRE(out.status == engine::Status::kOk);
    const auto n = allocations([&] { engine::evaluate_into(out, ws, m, p, hw, c, opt); });
    CHECK_MESSAGE(n == 0, kWhere);
  }
}

TEST_CASE("the search's summarize_microbatch + finish make no heap allocation after one warm-up call") {
  if (!alloc_count::kCounting) {
    MESSAGE("AddressSanitizer build: allocations are not counted, check skipped");
    return;
  }
  const auto hw = test::gpu("h100_sxm");
  const auto m = test::model("llama3_70b");
  const auto c = cost::resolve(hw);
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  for (const auto& p : plans()) {
    CAPTURE(p.parallel.cp);
    graph::Graph g;
    engine::StepKernels sg;
    engine::MicrobatchSummary sum;
    engine::CostMemo memo;
    engine::Prediction pred;
    pred.calibrated = c.calibrated;
    auto eval = [&] {
      engine::summarize_microbatch(sum, g, m, p, hw, c, memo);
      pred.status = engine::Status::kOk;
      engine::finish(pred, sum, sg, m, p, hw, c, opt);
    };
    eval();
    REQUIRE(pred.status == engine::Status::kOk);
    const auto n = allocations(eval);
    CHECK_MESSAGE(n == 0, kWhere);
  }
}
