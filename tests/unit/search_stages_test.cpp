// Two searched dimensions that refine the pipeline (search::SearchSpec::
// block_quarters and ::stages):
//   - recompute_layers: full recomputation also tries Megatron-LM's
//     --recompute-method block --recompute-num-layers K (block:K), K = 1/4,
//     1/2 and 3/4 of a stage's L = layers / PP layers in integers, keeping
//     1 <= K < L and dropping a K an earlier share gave at that PP;
//   - stages: Megatron-LM's --decoder-first-pipeline-num-layers /
//     --decoder-last-pipeline-num-layers; with PP > 1 the last stage, both
//     end stages and the first stage lighter than L, each by the least
//     number of layers with which the other stages split the rest evenly
//     (spec::check_stage_layers).
// Each search is checked against a reference that lists the same space by
// hand (the K and the splits the rules give, worked out in the comments)
// and evaluates every layout with the plain engine::evaluate: the search's
// rows are the reference's, figure for figure, bit for bit; its feasible
// step times are the reference's; its counts add up.
#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/search/search.hpp"
#include "ridgeline/spec/framework.hpp"
#include "search_candidate.hpp"
#include "test_support.hpp"

using namespace ridgeline;

namespace {

struct Reference {
  std::vector<search::Candidate> rows;  // best first, exact ties collapsed
  std::vector<double> feasible_times;   // sorted
  std::uint64_t accepted = 0;           // layouts engine::check_plan accepts
};

/// Each layout through a full engine::evaluate; the qualifying ones ranked
/// by search::ranks_before, exact ties collapsed as the search collapses them.
Reference reference(const std::vector<search::Layout>& layouts, const spec::ModelSpec& m, const spec::PlanSpec& base,
                    const spec::HardwareSpec& hw, int global_batch, double headroom) {
  Reference ref;
  std::vector<search::Candidate> all;
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  for (const auto& l : layouts) {
    const auto pred = engine::evaluate(m, search::plan_for(base, l, global_batch), hw, opt);
    if (pred.status == engine::Status::kInvalid) continue;
    ++ref.accepted;
    if (pred.status != engine::Status::kOk || search::memory_upper_bytes(pred.memory) > hw.memory_bytes * (1 - headroom))
      continue;
    ref.feasible_times.push_back(pred.step.time_s);
    all.push_back(test::from_prediction(pred, l));
  }
  std::sort(all.begin(), all.end(), search::ranks_before);
  for (auto& c : all) {
    if (!ref.rows.empty() && search::ties(ref.rows.back(), c)) ref.rows.back().equivalent.push_back(c.layout);
    else ref.rows.push_back(std::move(c));
  }
  std::sort(ref.feasible_times.begin(), ref.feasible_times.end());
  return ref;
}

std::string layout_text(const search::Layout& l) {
  return "PP" + std::to_string(l.pp) + " DP" + std::to_string(l.dp) + " " + spec::to_string(l.recompute) +
         " stages " + search::stages_text(l);
}

/// The search's rows are the reference's (all of them: `top` holds every
/// qualifying layout), with the same figures to the bit.
void check_against(const search::SearchResult& r, const Reference& ref) {
  const auto& n = r.counts;
  CHECK(n.enumerated == n.pruned + n.evaluated);
  CHECK(n.evaluated == n.infeasible + r.feasible_step_times_s.size());
  CHECK(n.evaluated + n.state == ref.accepted);
  auto times = r.feasible_step_times_s;
  std::sort(times.begin(), times.end());
  CHECK(times == ref.feasible_times);
  REQUIRE(!r.top.empty());
  REQUIRE(r.top.size() == ref.rows.size());
  for (size_t i = 0; i < r.top.size(); ++i) {
    const auto& a = r.top[i];
    const auto& b = ref.rows[i];
    CAPTURE(i);
    CAPTURE(layout_text(a.layout));
    CHECK(layout_text(a.layout) == layout_text(b.layout));
    test::check_same_figures(a, b);
    REQUIRE(a.equivalent.size() == b.equivalent.size());
    for (size_t e = 0; e < a.equivalent.size(); ++e)
      CHECK(layout_text(a.equivalent[e]) == layout_text(b.equivalent[e]));
  }
}

/// Every layout of the rows and their ties.
std::vector<search::Layout> row_layouts(const search::SearchResult& r) {
  std::vector<search::Layout> out;
  for (const auto& c : r.top) {
    out.push_back(c.layout);
    out.insert(out.end(), c.equivalent.begin(), c.equivalent.end());
  }
  return out;
}

/// Llama-3-8B (32 layers) on 32 H100s, TP 1, CP 1, micro-batch 1, one
/// virtual stage, ZeRO-0, full recomputation; PP searched (1, 2, 4, 8, 16, 32).
struct RecomputeCase {
  spec::HardwareSpec hw = test::gpu("h100_sxm");
  spec::ModelSpec m = test::model("llama3_8b");
  spec::PlanSpec base;
  search::SearchSpec s;
  RecomputeCase() {
    base.seq_len = 2048;
    base.global_batch = 64;
    s.gpus = 32;
    s.global_batch = 64;
    s.tp = 1, s.cp = 1, s.micro_batch = 1, s.vpp = 1, s.zero = 0;
    s.recompute = {{spec::RecomputeKind::kFull, 0}};
    s.top = 1000;  // every qualifying layout is a row
    s.threads = 1;
  }
};

/// Gpt-3 1.3B (24 layers) on 12 A100s, TP 1, CP 1, micro-batch 1, one
/// virtual stage, ZeRO-0, selective recomputation; PP searched (1, 2, 3, 4,
/// 6, 8, 12; 8 does not divide 12 GPUs).
struct StagesCase {
  spec::HardwareSpec hw = test::gpu("a100_sxm_80gb");
  spec::ModelSpec m = test::model("gpt3_1.3b");
  spec::PlanSpec base;
  search::SearchSpec s;
  StagesCase() {
    base.seq_len = 2048;
    base.global_batch = 24;
    s.gpus = 12;
    s.global_batch = 24;
    s.tp = 1, s.cp = 1, s.micro_batch = 1, s.vpp = 1, s.zero = 0;
    s.recompute = {{spec::RecomputeKind::kSelective, 0}};
    s.top = 1000;
    s.threads = 1;
  }
};

}  // namespace

TEST_CASE("search recompute_layers: block:K at a quarter, half and three quarters of each stage's layers") {
  RecomputeCase c;
  CHECK(search::searchable_block_quarters() == std::vector<int>{1, 2, 3});
  c.s.block_quarters = search::searchable_block_quarters();
  const auto r = search::run(c.s, c.m, c.base, c.hw);
  // 32 layers; L = 32 / PP a stage; K = L x {1, 2, 3} / 4 in integers:
  //   PP 1:  L 32 -> 8, 16, 24
  //   PP 2:  L 16 -> 4, 8, 12
  //   PP 4:  L 8  -> 2, 4, 6
  //   PP 8:  L 4  -> 1, 2, 3
  //   PP 16: L 2  -> 0 (every layer: plain full), 1, 1 (the same as the last) -> 1
  //   PP 32: L 1  -> 0, 0, 0 -> none
  // DP = 32 / PP divides the global batch 64 at every PP.
  const std::vector<std::pair<int, std::vector<int>>> ks = {
      {1, {8, 16, 24}}, {2, {4, 8, 12}}, {4, {2, 4, 6}}, {8, {1, 2, 3}}, {16, {1}}, {32, {}}};
  std::vector<search::Layout> layouts;
  for (const auto& [pp, k_list] : ks) {
    search::Layout l;
    l.pp = pp;
    l.dp = 32 / pp;
    l.recompute = {spec::RecomputeKind::kFull, 0};
    layouts.push_back(l);
    for (int k : k_list) {
      l.recompute.block_layers = k;
      layouts.push_back(l);
    }
  }
  REQUIRE(layouts.size() == 19);
  // Six PP degrees x (full + three shares); the five K dropped are redundant.
  CHECK(r.counts.enumerated == 24);
  CHECK(r.counts.redundant == 5);
  CHECK(r.counts.shape == 0);
  CHECK(r.counts.plan == 0);
  check_against(r, reference(layouts, c.m, c.base, c.hw, 64, c.s.headroom));
  // The K the rows hold are among those the rule gives, and some rows recompute only part of a stage.
  bool partial = false;
  for (const auto& l : row_layouts(r)) {
    if (l.recompute.block_layers == 0) continue;
    partial = true;
    const auto it = std::find_if(ks.begin(), ks.end(), [&](const auto& e) { return e.first == l.pp; });
    REQUIRE(it != ks.end());
    CHECK(std::count(it->second.begin(), it->second.end(), l.recompute.block_layers) == 1);
  }
  CHECK(partial);

  // Without the dimension the same space has full recomputation only: six layouts.
  c.s.block_quarters.clear();
  const auto plain = search::run(c.s, c.m, c.base, c.hw);
  CHECK(plain.counts.enumerated == 6);
  for (const auto& l : row_layouts(plain)) CHECK(l.recompute.block_layers == 0);
}

TEST_CASE("search recompute_layers: a framework without block recomputation refuses block:K as a plan") {
  RecomputeCase c;
  c.base.framework = *spec::find_framework("deepspeed");
  c.s.block_quarters = search::searchable_block_quarters();
  const auto r = search::run(c.s, c.m, c.base, c.hw);
  // The 13 block layouts of the test above (3 + 3 + 3 + 3 + 1), each refused.
  CHECK(r.counts.plan == 13);
  CHECK(r.counts.enumerated == r.counts.pruned + r.counts.evaluated);
  for (const auto& l : row_layouts(r)) CHECK(l.recompute.block_layers == 0);
  CHECK(r.first_problem.field == "recompute");
}

TEST_CASE("search recompute_layers: a fixed block:K is the plan's, not widened") {
  RecomputeCase c;
  c.s.recompute = {{spec::RecomputeKind::kFull, 0, 2}};
  c.s.block_quarters = search::searchable_block_quarters();  // applies to full of every layer only
  const auto r = search::run(c.s, c.m, c.base, c.hw);
  CHECK(r.counts.enumerated == 6);
  for (const auto& l : row_layouts(r)) CHECK(l.recompute.block_layers == 2);
}

TEST_CASE("search stages: even stages and the end stages lighter, where the other stages share the rest") {
  StagesCase c;
  CHECK(search::searchable_stage_trims() ==
        std::vector<search::StageTrim>{{0, 0}, {0, 1}, {1, 1}, {1, 0}});
  c.s.stages = search::searchable_stage_trims();
  const auto r = search::run(c.s, c.m, c.base, c.hw);
  // 24 layers; L = 24 / PP. One end d layers lighter leaves (PP - 1) L + d
  // to the other PP - 1 stages; both ends d lighter leave (PP - 2) L + 2d
  // to PP - 2. The least d >= 1 (and < L) with which they share it evenly:
  //   PP 1:  one stage: the trims are the even layout again (3 redundant)
  //   PP 2:  L 12 -> last 11 (first 13); both: no middle stage to take 2d (no); first 11 (last 13)
  //   PP 3:  L 8  -> last: 16 + d over 2, d = 2: last 6 (9 + 9); both: 8 + 2d over 1, d = 1: 7 and 7
  //          (middle 10); first 6 (9 + 9)
  //   PP 4:  L 6  -> last: 18 + d over 3, d = 3: last 3 (7 each); both: 12 + 2d over 2, d = 1: 5 and 5
  //          (middle 7 + 7); first 3
  //   PP 6:  L 4  -> last: 20 + d over 5 needs d = 5 >= L (no); both: 16 + 2d over 4, d = 2: 2 and 2
  //          (middle 5 each); first (no)
  //   PP 12: L 2  -> d = 1 only: 23 over 11, 22 over 10 (no)
  //   PP 8:  does not divide 12 GPUs
  const std::vector<std::pair<int, std::vector<std::pair<int, int>>>> splits = {
      {1, {{0, 0}}},
      {2, {{0, 0}, {0, 11}, {11, 0}}},
      {3, {{0, 0}, {0, 6}, {7, 7}, {6, 0}}},
      {4, {{0, 0}, {0, 3}, {5, 5}, {3, 0}}},
      {6, {{0, 0}, {2, 2}}},
      {12, {{0, 0}}}};
  std::vector<search::Layout> layouts;
  for (const auto& [pp, list] : splits)
    for (const auto& [first, last] : list) {
      search::Layout l;
      l.pp = pp;
      l.dp = 12 / pp;
      l.recompute = {spec::RecomputeKind::kSelective, 0};
      l.first_stage_layers = first;
      l.last_stage_layers = last;
      layouts.push_back(l);
    }
  REQUIRE(layouts.size() == 15);
  // 7 PP degrees x 4 splits = 28: PP 8's 4 and the 6 splits that do not
  // share evenly (PP 2: 1; PP 6: 2; PP 12: 3) do not divide; PP 1's 3
  // trims are redundant; 15 are kept.
  CHECK(r.counts.enumerated == 28);
  CHECK(r.counts.shape == 10);
  CHECK(r.counts.redundant == 3);
  CHECK(r.counts.plan == 0);
  check_against(r, reference(layouts, c.m, c.base, c.hw, 24, c.s.headroom));
  for (const auto& l : row_layouts(r)) {
    const auto p = search::plan_for(c.base, l, 24);
    CHECK(spec::check_stage_layers(c.m.layers, l.pp, p.parallel.first_stage_layers, p.parallel.last_stage_layers)
              .empty());
  }
  CHECK(search::stages_text(layouts[2]) == "last 11");
  CHECK(search::stages_text(layouts[3]) == "first 11");
  CHECK(search::stages_text(layouts[6]) == "first 7 last 7");

  // With interleaving searched too, engine::check_plan takes uneven stages
  // with virtual stages only where the busiest stage's layers split evenly
  // into them (Megatron-Core's chunks; an end stage's may hold a layer
  // fewer): PP 2 with the last stage at 11 leaves 13 on the first, which 2
  // virtual stages do not split (a plan refusal); PP 3 with 7 + 7 leaves 10
  // in the middle, which they do.
  c.s.vpp = -1;
  const auto v = search::run(c.s, c.m, c.base, c.hw);
  CHECK(v.counts.plan > 0);
  CHECK(v.counts.enumerated == v.counts.pruned + v.counts.evaluated);
  for (const auto& l : row_layouts(v))
    if (l.vpp > 1 && (l.first_stage_layers > 0 || l.last_stage_layers > 0))
      CHECK(spec::max_stage_layers(c.m.layers, l.pp, l.first_stage_layers, l.last_stage_layers) % l.vpp == 0);
  spec::PlanSpec odd = search::plan_for(c.base, layouts[2], 24);  // PP 2, last 11: 13 on the first
  odd.parallel.virtual_stages = 2;
  CHECK(engine::check_plan(c.m, odd, c.hw).field == "parallel.virtual_stages");
  spec::PlanSpec even = search::plan_for(c.base, layouts[6], 24);  // PP 3, first 7, last 7: 10 in the middle
  even.parallel.virtual_stages = 2;
  CHECK(engine::check_plan(c.m, even, c.hw).field.empty());
}

TEST_CASE("search stages: not searched, the plan's split is fixed") {
  StagesCase c;
  c.s.pp = 2;
  c.base.parallel.last_stage_layers = 10;  // --last-stage-layers 10 (the first stage then holds 14)
  const auto r = search::run(c.s, c.m, c.base, c.hw);
  CHECK(r.counts.enumerated == 1);
  REQUIRE(r.top.size() == 1);
  CHECK(r.top.front().layout.last_stage_layers == 10);
  CHECK(r.top.front().layout.first_stage_layers == 0);
}

TEST_CASE("search recompute_layers and stages through the command line") {
  const std::string k8 = "search --gpu h100_sxm --model llama3_8b --gpus 32 --global-batch 64 --seq 2048 --tp 1 --cp 1 "
                         "--micro-batch 1 --vpp 1 --zero 0 ";
  const auto r = test::run_cli(k8 + "--search pp,recompute,recompute_layers,stages --top 40 --format json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& searched = j["query"]["searched"];
  CHECK(std::find(searched.begin(), searched.end(), "recompute_layers") != searched.end());
  CHECK(std::find(searched.begin(), searched.end(), "stages") != searched.end());
  bool block = false, uneven = false;
  for (const auto& row : j["top"]) {
    block = block || row["recompute"].get<std::string>().starts_with("block:");
    uneven = uneven || row.contains("last_stage_layers") || row.contains("first_stage_layers");
  }
  CHECK(block);
  CHECK(uneven);
  // Each row's predict command reproduces it: the split and block:K are on it.
  for (const auto& row : j["top"]) {
    const std::string cmd = row["predict_command"];
    CAPTURE(cmd);
    if (row["recompute"].get<std::string>().starts_with("block:"))
      CHECK(cmd.find(" --recompute " + row["recompute"].get<std::string>()) != std::string::npos);
    if (row.contains("last_stage_layers"))
      CHECK(cmd.find(" --last-stage-layers " + std::to_string(row["last_stage_layers"].get<int>())) !=
            std::string::npos);
    if (row.contains("first_stage_layers"))
      CHECK(cmd.find(" --first-stage-layers " + std::to_string(row["first_stage_layers"].get<int>())) !=
            std::string::npos);
  }
  for (const auto& row : j["top"]) {
    if (!row.contains("last_stage_layers") && !row["recompute"].get<std::string>().starts_with("block:")) continue;
    const std::string cmd = row["predict_command"];
    const auto p = test::run_cli(cmd.substr(std::string("ridgeline ").size()) + " --format json");
    REQUIRE(p.status == 0);
    CHECK(nlohmann::json::parse(p.out)["step"]["step_time_s"].get<double>() == row["step_time_s"].get<double>());
    break;
  }
  // The table shows a stages column; a plain search shows none.
  const auto t = test::run_cli(k8 + "--search pp,stages --top 5");
  REQUIRE(t.status == 0);
  CHECK(t.out.find(" stages ") != std::string::npos);
  const auto csv = test::run_cli(k8 + "--search pp,stages --top 5 --format csv");
  CHECK(csv.out.starts_with("rank,gpu,model,framework,tokens,tp,pp,first_stage_layers,last_stage_layers,dp,"));
  const auto plain = test::run_cli(k8 + "--search pp --top 5");
  CHECK(plain.out.find(" stages ") == std::string::npos);
}

TEST_CASE("search recompute_layers and stages: pinned by the plan's flags and by --fix") {
  const std::string k8 = "search --gpu h100_sxm --model llama3_8b --gpus 32 --global-batch 64 --seq 2048 --tp 1 --cp 1 "
                         "--micro-batch 1 --vpp 1 --top 40 ";
  const auto both = test::run_cli(k8 + "--search pp,recompute_layers --recompute block:2");
  CHECK(both.status == 2);
  CHECK(both.err == "error: --search: recompute_layers is fixed by --recompute; leave it out of --search or drop "
                    "the flag\n");
  const auto fixed_rec = test::run_cli(k8 + "--search pp,recompute_layers --fix recompute=block:2");
  CHECK(fixed_rec.status == 2);
  CHECK(fixed_rec.err == "error: --search: recompute_layers is fixed by --fix; leave it out of --search or drop "
                         "the flag\n");
  const auto stg = test::run_cli(k8 + "--search pp,stages --last-stage-layers 14");
  CHECK(stg.status == 2);
  CHECK(stg.err == "error: --search: stages is fixed by --last-stage-layers; leave it out of --search or drop the "
                   "flag\n");

  // Pinned: every row has the plan's block:2 and its split (PP 2: the first stage 18, the last 14).
  for (const std::string pins : {"--recompute block:2 --pp 2 --last-stage-layers 14",
                                 "--fix recompute=block:2 --fix pp=2 --fix last_stage_layers=14"}) {
    CAPTURE(pins);
    const auto r = test::run_cli(k8 + pins + " --format json");
    REQUIRE(r.status == 0);
    const auto j = nlohmann::json::parse(r.out);
    REQUIRE(!j["top"].empty());
    for (const auto& row : j["top"]) {
      CHECK(row["recompute"] == "block:2");
      CHECK(row["last_stage_layers"] == 14);
      CHECK_FALSE(row.contains("first_stage_layers"));
    }
    bool listed = false;
    for (const auto& f : j["query"]["fixed"]) listed = listed || (f["dimension"] == "stages" && f["value"] == "last 14");
    CHECK(listed);
  }
}
