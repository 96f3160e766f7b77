// The search against the engine it stands for. search::run takes shortcuts
// for speed (one micro-batch summary shared by the layouts that differ only
// in DP, ZeRO and virtual stages; a model-state bound that prunes before the
// engine runs; top K kept per thread); none of them may change the answer.
// So, for the README's searches, a reference search here evaluates every
// layout of the documented space with the plain `engine::evaluate`, one full
// prediction per layout, and keeps what qualifies (status ok and the peak
// memory's upper end within capacity x (1 - headroom)). Then:
//   - every row the search prints carries the figures of a full evaluation
//     of its plan (search::plan_for), bit for bit: step time, MFU, memory and
//     its upper end, tokens/s, bubble, exposed communication, the run's days,
//     GPU-hours, cost and tokens;
//   - each layout listed as an exact tie evaluates to the same step time,
//     score and memory as its row;
//   - the rows are the reference's best K (ranks_before over the reference's
//     candidates, exact ties collapsed as search::merge collapses them);
//   - the feasible step times the search keeps (read by the interval count)
//     are the reference's, as a multiset;
//   - the counts add up: enumerated = pruned + evaluated, evaluated =
//     qualifying + over memory.
// Nothing here is a frozen number: the expectations are whatever the engine
// predicts today, so the test holds when the cost model's constants change.
// (tests/golden/search_* holds the printed output as well, for review.)
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../../bench/reference_search.hpp"
#include "ridgeline/engine/cost_memo.hpp"
#include "ridgeline/memory/memory.hpp"
#include "ridgeline/search/search.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/techniques/passes.hpp"
#include "search_candidate.hpp"
#include "test_support.hpp"

using namespace ridgeline;

namespace {

/// The recomputation policies the work-item tests vary (all a work item's units may differ in).
const spec::Recompute policies[] = {{spec::RecomputeKind::kNone, 0},  {spec::RecomputeKind::kSelective, 0},
                                    {spec::RecomputeKind::kFull, 0},  {spec::RecomputeKind::kEvery, 4},
                                    {spec::RecomputeKind::kSqrt, 0}};

/// Two micro-batch summaries equal to the bit in what finish reads.
void check_same_summary(const engine::MicrobatchSummary& a, const engine::MicrobatchSummary& b) {
  CHECK(a.t_fwd == b.t_fwd);
  CHECK(a.t_bwd == b.t_bwd);
  CHECK(a.t_rec == b.t_rec);
  CHECK(a.t_step_fixed == b.t_step_fixed);
  CHECK(a.exposed_comm_s == b.exposed_comm_s);
  CHECK(a.overlappable_comm_s == b.overlappable_comm_s);
  CHECK(a.overlappable_comm_sm_s == b.overlappable_comm_sm_s);
  CHECK(a.overlappable_comm_gemm_s == b.overlappable_comm_gemm_s);
  CHECK(a.window_s == b.window_s);
  CHECK(a.gemm_window_s == b.gemm_window_s);
  CHECK(a.host_s == b.host_s);
  CHECK(a.model_flop == b.model_flop);
  CHECK(a.recompute_flop == b.recompute_flop);
  CHECK(a.hardware_flop == b.hardware_flop);
  CHECK(a.class_s == b.class_s);
  CHECK(a.phase_s == b.phase_s);
  CHECK(a.class_step_s == b.class_step_s);
  CHECK(a.phase_step_s == b.phase_step_s);
  CHECK(a.compute_bound_s == b.compute_bound_s);
  CHECK(a.facts.layer_saved == b.facts.layer_saved);
  CHECK(a.facts.layer_alive == b.facts.layer_alive);
  CHECK(a.facts.recompute_working == b.facts.recompute_working);
}

struct Case {
  std::string gpu, model;
  int gpus, global_batch, seq;
  double tokens = 0;  // 0: Chinchilla's 20 per parameter
  search::Objective objective = search::Objective::kTime;
  int top = 5;
  spec::OptimizerKind optimizer = spec::OptimizerKind::kAdamW;
};

struct Reference {
  std::vector<search::Candidate> rows;  // best first, exact ties collapsed
  std::vector<double> feasible_times;   // sorted
  std::uint64_t evaluated = 0;          // layouts the engine ran (check_plan passed)
};

/// Every layout of the space README's "search" documents
/// (bench::for_each_layout), each through a full engine::evaluate.
Reference reference_search(const Case& k, const spec::ModelSpec& m, const spec::PlanSpec& base,
                           const spec::HardwareSpec& hw, double headroom) {
  Reference ref;
  std::vector<search::Candidate> all;
  const double limit = hw.memory_bytes * (1 - headroom);
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  bench::for_each_layout(m, base, k.gpus, k.global_batch, [&](const search::Layout& l, const spec::PlanSpec& p) {
    const auto pred = engine::evaluate(m, p, hw, opt);
    if (pred.status == engine::Status::kInvalid) return;
    ++ref.evaluated;
    if (pred.status != engine::Status::kOk || search::memory_upper_bytes(pred.memory) > limit) return;
    ref.feasible_times.push_back(pred.step.time_s);
    all.push_back(test::from_prediction(pred, l, k.objective));
  });
  std::sort(all.begin(), all.end(), search::ranks_before);
  for (auto& c : all) {
    if (!ref.rows.empty() && search::ties(ref.rows.back(), c)) ref.rows.back().equivalent.push_back(c.layout);
    else ref.rows.push_back(std::move(c));
  }
  if (static_cast<int>(ref.rows.size()) > k.top) ref.rows.resize(k.top);
  std::sort(ref.feasible_times.begin(), ref.feasible_times.end());
  return ref;
}

std::string layout_text(const search::Layout& l) {
  return "TP" + std::to_string(l.tp) + " PP" + std::to_string(l.pp) + " DP" + std::to_string(l.dp) + " CP" +
         std::to_string(l.cp) + " mb" + std::to_string(l.micro_batch) + " v" + std::to_string(l.vpp) + " ZeRO-" +
         std::to_string(l.zero) + " " + spec::to_string(l.recompute);
}

void check_case(const Case& k, int threads) {
  CAPTURE(k.model);
  CAPTURE(k.gpu);
  CAPTURE(threads);
  const auto hw = test::gpu(k.gpu);
  const auto m = test::model(k.model);
  spec::PlanSpec base;
  base.seq_len = k.seq;
  base.global_batch = k.global_batch;
  base.tokens = k.tokens;
  base.optimizer.kind = k.optimizer;
  search::SearchSpec s;
  s.gpus = k.gpus;
  s.global_batch = k.global_batch;
  s.objective = k.objective;
  s.top = k.top;
  s.threads = threads;
  const auto r = search::run(s, m, base, hw);
  const auto ref = reference_search(k, m, base, hw, s.headroom);

  // Counts: every enumerated layout is pruned or evaluated; the engine ran
  // at least the layouts check_plan accepts and the state bound did not prune.
  const auto& n = r.counts;
  CHECK(n.enumerated == n.pruned + n.evaluated);
  CHECK(n.evaluated == n.infeasible + r.feasible_step_times_s.size());
  CHECK(n.evaluated + n.state == ref.evaluated);

  // The qualifying step times, as a multiset (the interval count reads them).
  auto times = r.feasible_step_times_s;
  std::sort(times.begin(), times.end());
  REQUIRE(times.size() == ref.feasible_times.size());
  CHECK(times == ref.feasible_times);

  // The rows: the reference's best K, layout by layout, with its figures.
  REQUIRE(r.top.size() == ref.rows.size());
  REQUIRE(!r.top.empty());
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  for (size_t i = 0; i < r.top.size(); ++i) {
    const auto& row = r.top[i];
    CAPTURE(i);
    CAPTURE(layout_text(row.layout));
    CHECK(layout_text(row.layout) == layout_text(ref.rows[i].layout));
    CHECK(row.layout.dp * row.layout.tp * row.layout.pp * row.layout.cp == k.gpus);
    // A direct, full evaluation of the row's plan.
    const auto p = search::plan_for(base, row.layout, k.global_batch);
    const auto pred = engine::evaluate(m, p, hw, opt);
    REQUIRE(pred.status == engine::Status::kOk);
    test::check_same_figures(row, test::from_prediction(pred, row.layout, k.objective));
    test::check_same_figures(row, ref.rows[i]);
    REQUIRE(row.equivalent.size() == ref.rows[i].equivalent.size());
    for (size_t e = 0; e < row.equivalent.size(); ++e) {
      CHECK(layout_text(row.equivalent[e]) == layout_text(ref.rows[i].equivalent[e]));
      const auto tie = engine::evaluate(m, search::plan_for(base, row.equivalent[e], k.global_batch), hw, opt);
      CHECK(tie.step.time_s == row.step_time_s);
      CHECK(tie.memory.total == row.memory_bytes);
    }
  }
}

}  // namespace

TEST_CASE("search equivalence: README's GPT-3 175B search on 1024 A100s is what engine::evaluate ranks") {
  // `search --gpu a100_sxm_80gb --model gpt3_175b --gpus 1024 --global-batch 1536 --seq 2048 --top 5`
  check_case({"a100_sxm_80gb", "gpt3_175b", 1024, 1536, 2048}, 2);
}

TEST_CASE("search equivalence: README's Llama-3-8B pre-training on 64 H100s, by time and by cost") {
  // `search --model llama3_8b --gpu h100_sxm --gpus 64 --global-batch 4M --seq 8192 --tokens 1T --top 3`
  // (4M tokens = 4 x 2^20 / 8192 = 512 sequences).
  Case k{"h100_sxm", "llama3_8b", 64, 512, 8192, 1e12};
  k.top = 3;
  check_case(k, 1);
  k.objective = search::Objective::kCost;
  check_case(k, 2);
}

TEST_CASE("search equivalence: Muon's step kernels (Newton-Schulz GEMMs, the ZeRO gather) as evaluate costs them") {
  Case k{"h100_sxm", "llama3_8b", 64, 512, 8192, 1e12};
  k.top = 3;
  k.optimizer = spec::OptimizerKind::kMuon;
  check_case(k, 2);
}

TEST_CASE("search equivalence: README's Llama-3-70B on 64 GPUs of each kind, best row per GPU") {
  // `search --model llama3_70b --gpu h100_sxm,h200,b200,mi300x --gpus 64 --global-batch 512 --seq 8192 --tokens 1T`
  for (const char* gpu : {"h100_sxm", "h200", "b200", "mi300x"}) {
    Case k{gpu, "llama3_70b", 64, 512, 8192, 1e12};
    k.top = 3;
    check_case(k, 2);
  }
}

TEST_CASE("search equivalence: a micro-batch summary with kept costs, or in two halves, is the summary without, to the bit") {
  // engine::CostMemo: graphs of one micro-batch shape at PP 1, 2, 4, 8 hold
  // the same kernels at other counts, so after the first only kernels whose
  // cost inputs differ are costed; the sums must not change.
  const auto hw = test::gpu("h100_sxm");
  const auto m = test::model("llama3_70b");  // 80 layers
  const auto c = cost::resolve(hw);
  engine::CostMemo memo;
  for (auto rk : {spec::RecomputeKind::kNone, spec::RecomputeKind::kFull})
    for (int pp : {1, 2, 4, 8}) {
      CAPTURE(pp);
      spec::PlanSpec p = test::plan(2, 4096);
      p.parallel.tp = 4;
      p.parallel.sp = true;
      p.parallel.pp = pp;
      p.recompute = {rk, 0};
      engine::MicrobatchSummary a, b, h;
      graph::Graph ga, gb, gh;
      engine::summarize_microbatch(a, ga, m, p, hw, c, nullptr, 1);
      engine::summarize_microbatch(b, gb, m, p, hw, c, memo);
      check_same_summary(a, b);
      // The search's two halves: the graph's facts with its sums zero, then its costs.
      engine::summarize_graph(h, gh, m, p, hw);
      CHECK(h.t_fwd == 0);
      CHECK(h.host_s == 0);
      CHECK(h.facts.layer_saved == a.facts.layer_saved);
      engine::summarize_costs(h, gh, m, p, c, memo);
      check_same_summary(h, a);
    }
  // After the first graph of each recomputation, the kernels' shapes repeat:
  // most costs are reused (the graphs differ from PP 1 in counts only).
  CHECK(memo.reused > memo.costed);
}

TEST_CASE("search equivalence: same_cost_inputs ignores the count and the saved tensors, nothing else") {
  graph::Kernel a;
  a.name = "gemm";
  a.gemm = {4096, 4096, 4096, 1};
  a.flops = 2.0 * 4096 * 4096 * 4096;
  graph::Kernel b = a;
  b.count = 80;
  b.saved_bytes = 1e6;
  b.saved_fraction = 0.5;
  CHECK(engine::same_cost_inputs(a, b));
  b.gemm.n = 2048;  // another shape costs differently
  CHECK_FALSE(engine::same_cost_inputs(a, b));
  // cost::cost_kernel reads no count: the same cost at any count.
  const auto c = cost::resolve(test::gpu("h100_sxm"));
  graph::Kernel d = a;
  d.count = 80;
  CHECK(cost::cost_kernel(a, c, false).time_s == cost::cost_kernel(d, c, false).time_s);
}

TEST_CASE("search equivalence: TP communication overlap as a searched dimension") {
  // Llama-3-8B on 8 H100s, batch 64 of 4096: with overlap searched the
  // enumeration doubles; with TP 1 there is no TP collective to overlap, so
  // "on" is the same layout as "off" and is pruned as redundant (all its
  // TP-1 layouts: enumerated / 6 TP degrees of the doubled space).
  const auto hw = test::gpu("h100_sxm");
  const auto m = test::model("llama3_8b");
  spec::PlanSpec base;
  base.seq_len = 4096;
  base.global_batch = 64;
  search::SearchSpec s;
  s.gpus = 8;
  s.global_batch = 64;
  s.top = 5;
  s.threads = 2;
  const auto off = search::run(s, m, base, hw);
  s.tp_overlap = {false, true};
  const auto both = search::run(s, m, base, hw);
  CHECK(both.counts.enumerated == 2 * off.counts.enumerated);
  CHECK(both.counts.redundant > off.counts.redundant);
  // Every layout with overlap off is still there; those with TP > 1 and overlap on come on top.
  CHECK(both.counts.evaluated > off.counts.evaluated);
  REQUIRE(!both.top.empty());
  CHECK(both.top.front().score <= off.top.front().score);
  // Each row is a full evaluation of its plan, overlap included.
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  for (const auto& row : both.top) {
    CAPTURE(layout_text(row.layout));
    const auto p = search::plan_for(base, row.layout, 64);
    CHECK(p.parallel.tp_comm_overlap == row.layout.tp_overlap);
    CHECK_FALSE((row.layout.tp == 1 && row.layout.tp_overlap));
    test::check_same_figures(row, test::from_prediction(engine::evaluate(m, p, hw, opt), row.layout, s.objective));
  }
  // Fixed on (--tp-comm-overlap, --fix tp_comm_overlap=true): every row has it, TP 1 included.
  s.tp_overlap = {true};
  const auto on = search::run(s, m, base, hw);
  CHECK(on.counts.enumerated == off.counts.enumerated);
  CHECK(on.counts.redundant == off.counts.redundant);
  for (const auto& row : on.top) CHECK(row.layout.tp_overlap);
}

TEST_CASE("search equivalence: tp_overlap through the command line") {
  const std::string base = "search --gpu h100_sxm --model llama3_8b --gpus 8 --global-batch 64 --seq 4096 --top 3 ";
  const auto r = test::run_cli(base + "--search tp,tp_overlap --format json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& searched = j["query"]["searched"];
  CHECK(std::find(searched.begin(), searched.end(), "tp_overlap") != searched.end());
  for (const auto& row : j["top"]) CHECK(row.contains("tp_comm_overlap"));
  const auto fixed = test::run_cli(base + "--fix tp_comm_overlap=true --format json");
  REQUIRE(fixed.status == 0);
  const auto fixed_json = nlohmann::json::parse(fixed.out);  // bound: ranging over a temporary's member dangles
  for (const auto& row : fixed_json["top"]) CHECK(row["tp_comm_overlap"] == true);
  const auto table = test::run_cli(base + "--search tp,tp_overlap");
  CHECK(table.out.find("TP ovl") != std::string::npos);
  // Not searched and not given: the plan's setting, not listed as fixed.
  const auto plain = test::run_cli(base + "--format json");
  REQUIRE(plain.status == 0);
  const auto plain_json = nlohmann::json::parse(plain.out);
  for (const auto& f : plain_json["query"]["fixed"]) CHECK(f["dimension"] != "tp_overlap");
  const auto both = test::run_cli(base + "--search tp_overlap --tp-comm-overlap");
  CHECK(both.status == 2);
  CHECK(both.err == "error: --search: tp_overlap is fixed by --tp-comm-overlap; leave it out of --search or drop the flag\n");
}

TEST_CASE("search equivalence: the fp8 recipe as a searched dimension") {
  const auto h100 = test::gpu("h100_sxm");
  const auto b200 = test::gpu("b200");
  const auto m = test::model("llama3_8b");
  spec::PlanSpec base;
  base.seq_len = 4096;
  base.global_batch = 64;
  // check_plan: mxfp8 needs Blackwell's block-scaled tensor cores; the others run on Hopper.
  const auto on_h100 = search::searchable_fp8_recipes(m, h100, base);
  CHECK(on_h100.size() == 3);
  CHECK(std::find(on_h100.begin(), on_h100.end(), spec::Fp8Recipe::kMxfp8) == on_h100.end());
  CHECK(search::searchable_fp8_recipes(m, b200, base).size() == 4);
  // Rowwise is torchao's (spec::offers_fp8_recipe): searched under torchtitan,
  // not under the default megatron, whose Transformer Engine has none.
  CHECK(std::find(on_h100.begin(), on_h100.end(), spec::Fp8Recipe::kRowwise) == on_h100.end());
  spec::PlanSpec titan = base;
  REQUIRE(spec::apply_setting(titan, "framework", "torchtitan").empty());
  const auto titan_h100 = search::searchable_fp8_recipes(m, h100, titan);
  CHECK(titan_h100.size() == 4);
  CHECK(std::find(titan_h100.begin(), titan_h100.end(), spec::Fp8Recipe::kRowwise) != titan_h100.end());

  search::SearchSpec s;
  s.gpus = 8;
  s.global_batch = 64;
  s.top = 5;
  s.threads = 2;
  s.precision = {spec::Precision::kBf16, spec::Precision::kFp8};
  const auto one = search::run(s, m, base, h100);
  s.fp8_recipe = on_h100;
  const auto three = search::run(s, m, base, h100);
  // Three recipes triple the enumeration; bf16 layouts with the second and
  // third recipe are the bf16 layout again (redundant), fp8 ones are new.
  CHECK(three.counts.enumerated == 3 * one.counts.enumerated);
  CHECK(three.counts.redundant > one.counts.redundant);
  CHECK(three.counts.evaluated > one.counts.evaluated);
  REQUIRE(!three.top.empty());
  CHECK(three.top.front().score <= one.top.front().score);
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  for (const auto& row : three.top) {
    CAPTURE(layout_text(row.layout));
    const auto p = search::plan_for(base, row.layout, 64);
    CHECK(p.fp8_recipe == row.layout.fp8_recipe);
    if (row.layout.precision != spec::Precision::kFp8) CHECK(row.layout.fp8_recipe == on_h100.front());
    test::check_same_figures(row, test::from_prediction(engine::evaluate(m, p, h100, opt), row.layout, s.objective));
  }
}

TEST_CASE("search equivalence: fp8_recipe through the command line") {
  const std::string base =
      "search --gpu h100_sxm --model llama3_8b --gpus 8 --global-batch 64 --seq 4096 --top 3 --precision fp8 ";
  const auto r = test::run_cli(base + "--search tp,fp8_recipe --format json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& searched = j["query"]["searched"];
  CHECK(std::find(searched.begin(), searched.end(), "fp8_recipe") != searched.end());
  for (const auto& row : j["top"]) CHECK(row.contains("fp8_recipe"));
  const auto fixed = test::run_cli(base + "--fix fp8_recipe=blockwise --format json");
  REQUIRE(fixed.status == 0);
  const auto fixed_json = nlohmann::json::parse(fixed.out);  // bound: ranging over a temporary's member dangles
  for (const auto& row : fixed_json["top"]) CHECK(row["fp8_recipe"] == "blockwise");
}

TEST_CASE("search equivalence: the graph and step halves of the plan check refuse what the whole refuses") {
  // A grid over the fields both halves read, most of its plans refused for
  // one reason or several: TP not dividing the heads, PP not dividing the
  // layers (with or without virtual stages), virtual stages without PP,
  // ZeRO-2 with PP where a framework refuses it, interleaving with
  // micro-batches not a multiple of PP, offload without the ZeRO stage or
  // framework it needs, a recompute policy a framework does not offer, fp8
  // on a GPU without it, a batch that does not divide. Llama-3-8B: 32
  // layers, 32 heads, 8 KV heads.
  const auto m = test::model("llama3_8b");
  const spec::HardwareSpec gpus[] = {test::gpu("h100_sxm"), test::gpu("a100_sxm_80gb")};
  const spec::OffloadSpec offloads[] = {
      {}, {spec::OffloadDevice::kCpu, spec::OffloadDevice::kNone}, {spec::OffloadDevice::kCpu, spec::OffloadDevice::kCpu},
      {spec::OffloadDevice::kNone, spec::OffloadDevice::kCpu}};
  const spec::RecomputeKind recomputes[] = {spec::RecomputeKind::kNone, spec::RecomputeKind::kSelective,
                                            spec::RecomputeKind::kFull};
  size_t plans = 0, refused = 0, by_graph = 0, by_step = 0;
  for (const auto& hw : gpus)
    for (size_t fw = 0; fw < spec::framework_count(); ++fw)
      for (int tp : {1, 3, 8})
        for (int pp : {1, 2, 3, 4})
          for (int dp : {1, 2, 4})
            for (auto rk : recomputes)
              for (auto prec : {spec::Precision::kBf16, spec::Precision::kFp8})
                for (int vpp : {1, 2, 3})
                  for (int zero : {0, 1, 2, 3})
                    for (const auto& off : offloads) {
                      spec::PlanSpec p = test::plan(1, 4096);
                      p.global_batch = 12;
                      p.framework = static_cast<std::uint8_t>(fw);
                      p.parallel.tp = tp;
                      p.parallel.pp = pp;
                      p.parallel.dp = dp;
                      p.recompute = {rk, 0};
                      p.precision = prec;
                      p.parallel.virtual_stages = vpp;
                      p.parallel.zero = zero;
                      p.offload = off;
                      const bool whole = !engine::check_plan_field(m, p, hw).empty();
                      const bool graph = !engine::check_graph_field(m, p, hw).empty();
                      const bool step = !engine::check_step_field(m, p, hw).empty();
                      CAPTURE(fw);
                      CAPTURE(tp);
                      CAPTURE(pp);
                      CAPTURE(dp);
                      CAPTURE(vpp);
                      CAPTURE(zero);
                      REQUIRE(whole == (graph || step));
                      CHECK(whole == !engine::check_plan(m, p, hw).field.empty());
                      // The graph half reads no step field: the same answer with them at their defaults.
                      spec::PlanSpec q = p;
                      q.parallel.virtual_stages = 1;
                      q.parallel.zero = 0;
                      q.offload = {};
                      CHECK(graph == !engine::check_graph_field(m, q, hw).empty());
                      ++plans;
                      refused += whole;
                      by_graph += graph;
                      by_step += step && !graph;
                    }
  // Both halves refuse plans the other accepts, and some plans pass both.
  CHECK(by_graph > 0);
  CHECK(by_step > 0);
  CHECK(refused < plans);
  CHECK(refused == by_graph + by_step);
}

TEST_CASE("search equivalence: the micro-batch graph's base reads nothing of the recomputation") {
  // The search builds techniques::build_microbatch_base once for the units
  // that differ only in recomputation and finishes a copy per unit. So the
  // base must come out the same whatever the recomputation, and a summary
  // from the shared base must equal one built from scratch, to the bit.
  const auto hw = test::gpu("h100_sxm");
  const auto m = test::model("llama3_70b");  // 80 layers
  const auto c = cost::resolve(hw);
  for (int pp : {1, 4})
    for (auto prec : {spec::Precision::kBf16, spec::Precision::kFp8}) {
      spec::PlanSpec p = test::plan(2, 4096);
      p.parallel.tp = 4;
      p.parallel.sp = true;
      p.parallel.pp = pp;
      p.precision = prec;
      graph::Graph first;
      techniques::build_microbatch_base(first, m, p, hw);
      engine::CostMemo memo;
      for (size_t r = 0; r < std::size(policies); ++r) {
        CAPTURE(pp);
        CAPTURE(r);
        p.recompute = policies[r];
        for (int block : {0, 5}) {  // block:5 (Megatron's block method) over any of them
          p.recompute.block_layers = block;
          graph::Graph base;
          techniques::build_microbatch_base(base, m, p, hw);
          REQUIRE(base.kernels.size() == first.kernels.size());
          CHECK(base.layers == first.layers);
          for (size_t i = 0; i < base.kernels.size(); ++i) {
            const graph::Kernel& a = base.kernels[i];
            const graph::Kernel& b = first.kernels[i];
            CHECK(engine::same_cost_inputs(a, b));
            CHECK(a.count == b.count);
            CHECK(a.saved_bytes == b.saved_bytes);
            CHECK(a.saved_core_bytes == b.saved_core_bytes);
            CHECK(a.saved_fraction == b.saved_fraction);
            CHECK(a.workspace_bytes == b.workspace_bytes);
          }
          // From the shared base, the summary a full build gives.
          engine::MicrobatchSummary whole, shared;
          graph::Graph gw, gs;
          engine::summarize_microbatch(whole, gw, m, p, hw, c, nullptr, 1);
          engine::summarize_microbatch(shared, gs, m, p, hw, c, memo, nullptr, &first);
          REQUIRE(gs.kernels.size() == gw.kernels.size());
          check_same_summary(shared, whole);
        }
      }
    }
}

TEST_CASE("search equivalence: the step kernels and the stages' model state read nothing of the recomputation") {
  // The search builds engine::build_step_kernels once per stage split and
  // (vpp, ZeRO, offload) of a work item, whose units differ only in the
  // recomputation, and finishes every unit's layouts with them; likewise
  // memory::stage_states per stage split and (ZeRO, offload). So they must
  // come out the same from each unit's summary, kernel for kernel and cost
  // for cost, over the frameworks, precisions, ZeRO stages and offloads.
  const auto hw = test::gpu("h100_sxm");
  const auto m = test::model("llama3_70b");  // 80 layers
  const auto c = cost::resolve(hw);
  const spec::OffloadSpec offloads[] = {
      {}, {spec::OffloadDevice::kCpu, spec::OffloadDevice::kNone}, {spec::OffloadDevice::kCpu, spec::OffloadDevice::kCpu}};
  size_t compared = 0;
  for (size_t fw = 0; fw < spec::framework_count(); ++fw)
    for (int pp : {1, 4})
      for (auto prec : {spec::Precision::kBf16, spec::Precision::kFp16, spec::Precision::kFp8})
        for (int zero : {0, 1, 3})
          for (const auto& off : offloads) {
            spec::PlanSpec p = test::plan(1, 4096);
            p.framework = static_cast<std::uint8_t>(fw);
            p.parallel.tp = 4;
            p.parallel.sp = true;
            p.parallel.pp = pp;
            p.parallel.dp = 8;
            p.global_batch = 64;
            p.parallel.virtual_stages = pp > 1 ? 2 : 1;
            p.parallel.zero = zero;
            p.precision = prec;
            p.offload = off;
            if (!engine::check_plan_field(m, p, hw).empty()) continue;
            CAPTURE(fw);
            CAPTURE(pp);
            CAPTURE(zero);
            engine::StepKernels first;
            memory::StageStates first_states;
            for (size_t r = 0; r < std::size(policies); ++r) {
              CAPTURE(r);
              p.recompute = policies[r];
              engine::MicrobatchSummary sum;
              graph::Graph g;
              engine::summarize_microbatch(sum, g, m, p, hw, c, nullptr, 1);
              engine::StepKernels step;
              engine::build_step_kernels(step, sum, m, p, c);
              const memory::StageStates states = memory::stage_states(sum.facts, p, sum.params);
              // The stages' model state a plain estimate forms is the same.
              engine::Prediction given, formed;
              engine::finish_memory(given, sum, m, p, hw, &states);
              engine::finish_memory(formed, sum, m, p, hw);
              CHECK(given.memory.total == formed.memory.total);
              CHECK(given.memory.host_bytes == formed.memory.host_bytes);
              if (r == 0) {
                first = step;
                first_states = states;
                continue;
              }
              for (const auto& [a, b] : {std::pair{states.first, first_states.first},
                                         std::pair{states.last, first_states.last},
                                         std::pair{states.middle, first_states.middle}}) {
                CHECK(a.weights == b.weights);
                CHECK(a.gradients == b.gradients);
                CHECK(a.master_weights == b.master_weights);
                CHECK(a.optimizer == b.optimizer);
                CHECK(a.host == b.host);
              }
              CHECK(step.graph.layers == first.graph.layers);
              CHECK(step.graph.act_bytes == first.graph.act_bytes);
              CHECK(step.graph.tokens == first.graph.tokens);
              REQUIRE(step.graph.kernels.size() == first.graph.kernels.size());
              REQUIRE(step.costs.size() == step.graph.kernels.size());
              for (size_t i = 0; i < step.graph.kernels.size(); ++i) {
                const graph::Kernel& a = step.graph.kernels[i];
                const graph::Kernel& b = first.graph.kernels[i];
                CHECK(engine::same_cost_inputs(a, b));
                CHECK(a.count == b.count);
                CHECK(step.costs[i].time_s == first.costs[i].time_s);
                CHECK(step.costs[i].sm_fraction == first.costs[i].sm_fraction);
              }
              ++compared;
            }
          }
  MESSAGE("step kernels: " << compared << " summaries compared with their plan's first");
  CHECK(compared > 100);  // 108 of the 270 plans pass check_plan: 432 comparisons
}
