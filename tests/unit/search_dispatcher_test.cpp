// The MoE token dispatcher as a searched dimension (search::Dim::kDispatcher,
// `--search +dispatcher`): one axis-table entry. Searched, each layout is
// tried with the alltoall dispatcher and DeepEP's; without EP no token
// leaves its GPU, so DeepEP is the same layout as alltoall and is pruned as
// redundant. Each row is the engine's evaluation of its plan.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "ridgeline/search/search.hpp"
#include "search_candidate.hpp"
#include "test_support.hpp"

using namespace ridgeline;

TEST_CASE("search: the MoE dispatcher as a searched dimension") {
  // Qwen3-30B-A3B on 16 H100s (two nodes), batch 128 of 4096: EP in {1, 2,
  // 4, 8, 16}, everything else fixed.
  const auto hw = test::gpu("h100_sxm");
  const auto m = test::model("qwen3_30b_a3b");
  spec::PlanSpec base;
  base.seq_len = 4096;
  base.global_batch = 128;
  search::SearchSpec s;
  s.gpus = 16;
  s.global_batch = 128;
  s.tp = 1, s.pp = 1, s.cp = 1, s.micro_batch = 1, s.vpp = 1, s.zero = 1;
  s.recompute = {{spec::RecomputeKind::kSelective, 0}};
  s.threads = 1;
  s.top = 100;
  const auto one = search::run(s, m, base, hw);
  s.dispatcher = {spec::MoeDispatcher::kAllToAll, spec::MoeDispatcher::kDeepEp};
  const auto both = search::run(s, m, base, hw);
  // Twice the layouts; DeepEP at EP 1 redundant.
  CHECK(both.counts.enumerated == 2 * one.counts.enumerated);
  CHECK(both.counts.redundant > one.counts.redundant);
  REQUIRE(!both.top.empty());
  CHECK(both.top.front().score <= one.top.front().score);
  bool deepep = false;
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  for (const auto& row : both.top) {
    const auto p = search::plan_for(base, row.layout, 128);
    CHECK(p.moe.dispatcher == row.layout.dispatcher);
    CHECK_FALSE((row.layout.ep == 1 && row.layout.dispatcher == spec::MoeDispatcher::kDeepEp));
    deepep = deepep || row.layout.dispatcher == spec::MoeDispatcher::kDeepEp;
    test::check_same_figures(row, test::from_prediction(engine::evaluate(m, p, hw, opt), row.layout, s.objective));
  }
  CHECK(deepep);
}

TEST_CASE("search: +dispatcher through the command line; dense models have no such axis") {
  const std::string base = "search --gpu h100_sxm --model qwen3_30b_a3b --gpus 16 --global-batch 128 --seq 4096 "
                           "--tp 1 --pp 1 --cp 1 --micro-batch 1 --vpp 1 --zero 1 --recompute selective --top 3 ";
  const auto r = test::run_cli(base + "--search +dispatcher --format json");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const auto j = nlohmann::json::parse(r.out);
  const auto& searched = j["query"]["searched"];
  CHECK(std::find(searched.begin(), searched.end(), "dispatcher") != searched.end());
  for (const auto& row : j["top"]) CHECK(row.contains("moe_dispatcher") == (row["ep"].get<int>() > 1));
  const auto table = test::run_cli(base + "--search +dispatcher");
  CHECK(table.out.find("dispatch") != std::string::npos);
}
