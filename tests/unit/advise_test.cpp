// `ridgeline advise` (issue 17): the step's losses against the ideal, and the
// changes that relieve them, each a prediction of the changed plan.
// Expected values: the identities the decomposition must satisfy (the losses
// and the ideal sum to the step; each loss is the engine's own quantity:
// exposed communication, bubble, recompute phase), the predict command run
// for real, and the engine evaluated directly on the changed plans.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "ridgeline/advise/advise.hpp"
#include "ridgeline/engine/engine.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "ridgeline/units/units.hpp"
#include "test_support.hpp"

using namespace ridgeline;
using nlohmann::json;

namespace {

// The three README cases.
const std::string k8b =
    "--gpu h100_sxm --model llama3_8b --seq 8192 --global-batch 64 --precision bf16 --tp 1 --pp 1 --dp 8 --cp 1 "
    "--micro-batch 1 --zero 2 --recompute none";
const std::string k70b = "--gpu h100_sxm --model llama3_70b --tp 8 --pp 4 --dp 16 --global-batch 2048 --seq 8192";
const std::string k4090 = "--gpu rtx_4090 --model llama3_8b --finetune lora --seq 2048 --micro-batch 1 --recompute full";

json advise_json(const std::string& args) {
  const auto r = test::run_cli("advise " + args + " --format json");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  return json::parse(r.out);
}

double sum_losses(const advise::Decomposition& d) {
  double s = d.ideal_s;
  for (const auto& l : d.losses) s += l.seconds;
  return s;
}

spec::PlanSpec plan_8b() {
  spec::PlanSpec p;
  p.seq_len = 8192;
  p.global_batch = 64;
  p.parallel.dp = 8;
  p.parallel.zero = 2;
  return p;
}

}  // namespace

TEST_SUITE("advise") {
  TEST_CASE("the three README cases: at least three ranked suggestions, and #1's predict command gives its step time") {
    for (const auto& args : {k8b, k70b, k4090}) {
      CAPTURE(args);
      const auto j = advise_json(args);
      CHECK(j["schema"] == "ridgeline.advice/1");
      const auto& s = j["suggestions"];
      REQUIRE(s.size() >= 3);
      for (size_t i = 0; i < s.size(); ++i) {
        CHECK(s[i]["rank"] == i + 1);
        CHECK(s[i]["gain"].get<double>() > 0);
        CHECK(s[i]["fits"] == true);
        if (i > 0) CHECK(s[i]["gain"].get<double>() <= s[i - 1]["gain"].get<double>());
        // The gain is the changed plan's tokens/s over the plan's.
        CHECK(s[i]["gain"].get<double>() ==
              doctest::Approx(s[i]["tokens_per_s"].get<double>() / j["base"]["tokens_per_s"].get<double>() - 1)
                  .epsilon(1e-12));
      }
      // Applying the top suggestion through predict gives exactly its step time.
      const std::string cmd = s[0]["predict_command"];
      REQUIRE(cmd.starts_with("ridgeline predict "));
      const auto p = test::run_cli(cmd.substr(std::string("ridgeline ").size()) + " --format json");
      REQUIRE_MESSAGE(p.status == 0, p.err);
      const auto pj = json::parse(p.out);
      CHECK(pj["step"]["step_time_s"].get<double>() == s[0]["step_time_s"].get<double>());
      CHECK(pj["step"]["tokens_per_s"].get<double>() == s[0]["tokens_per_s"].get<double>());
      // And the plan's own step time is predict's for the plan as given.
      const auto b = test::run_cli("predict " + args + " --format json");
      REQUIRE(b.status == 0);
      CHECK(json::parse(b.out)["step"]["step_time_s"].get<double>() == j["base"]["step_time_s"].get<double>());
    }
  }

  TEST_CASE("the losses and the ideal sum to the step; each loss is the engine's own quantity") {
    const auto hw = test::gpu("h100_sxm");
    const auto m = test::model("llama3_70b");
    spec::PlanSpec p;
    p.seq_len = 8192;
    p.global_batch = 2048;
    p.parallel.tp = 8;
    p.parallel.pp = 4;
    p.parallel.dp = 16;
    p.parallel.sp = true;
    p.recompute.kind = spec::RecomputeKind::kSelective;
    const auto a = advise::advise(m, p, hw);
    REQUIRE(a.base.status == engine::Status::kOk);
    const auto& d = a.decomposition;
    CHECK(sum_losses(d) == doctest::Approx(d.step_s).epsilon(1e-12));
    // The engine's prediction of the same plan, independently.
    const auto e = engine::evaluate(m, p, hw);
    CHECK(d.step_s == doctest::Approx(e.step.time_s).epsilon(1e-12));
    CHECK(d.of(advise::LossKind::kExposedComm).seconds == doctest::Approx(e.step.exposed_comm_s).epsilon(1e-12));
    CHECK(d.of(advise::LossKind::kBubble).seconds == doctest::Approx(e.step.bubble_s).epsilon(1e-12));
    // Narayanan et al.: the bubble is (p - 1) / (v m) of the ideal time, m = 2048 / 16 = 128 micro-batches.
    CHECK(e.step.bubble_fraction == doctest::Approx(3.0 / 128.0));
    CHECK(d.of(advise::LossKind::kRecompute).seconds ==
          doctest::Approx(e.time_by_phase[static_cast<int>(spec::Phase::kRecompute)]).epsilon(1e-9));
    CHECK(d.of(advise::LossKind::kRecompute).seconds > 0);
    // The exposed communication's parts (by collective and tier) add up to it.
    double parts = 0;
    for (const auto& x : d.of(advise::LossKind::kExposedComm).parts) parts += x.seconds;
    CHECK(parts == doctest::Approx(e.step.exposed_comm_s).epsilon(1e-9));
    // TP 8 inside an 8-GPU node: its collectives are intra-node.
    CHECK(d.of(advise::LossKind::kExposedComm).parts.front().name.ends_with("(intra-node)"));
    // No recomputation, no recompute loss.
    p.recompute.kind = spec::RecomputeKind::kNone;
    CHECK(advise::advise(m, p, hw).decomposition.of(advise::LossKind::kRecompute).seconds == 0);
  }

  TEST_CASE("the ideal is the GEMM and attention FLOPs at the sustained peak") {
    // One GPU, no recomputation: the ideal is every forward and backward GEMM
    // and attention kernel's FLOPs over the sustained bf16 peak, so the
    // ideal times the peak is those FLOPs: at least 6 x (linear parameters)
    // x tokens (Kaplan et al. 2020), the attention's share on top.
    const auto hw = test::gpu("h100_sxm");
    const auto m = test::model("llama3_8b");
    spec::PlanSpec p;
    p.seq_len = 2048;
    p.micro_batch = 1;
    const auto a = advise::advise(m, p, hw);
    const auto c = engine::resolve_for(hw, p, {});
    const double peak = c.peak_flop_per_s[static_cast<int>(spec::Peak::kBf16)];
    const auto counts = spec::count_params(m);
    // Linear weights of the decoder layers and the LM head: total less the
    // input embedding (an untied model: vocab x hidden of it is the lookup).
    const double linear = counts.total - static_cast<double>(m.vocab) * m.hidden;
    const double gemm_flops = 6.0 * linear * 2048;
    CHECK(a.decomposition.ideal_s * peak >= 0.999 * gemm_flops);
    // Causal attention adds 4 s^2 d per layer forward (x3 with backward),
    // halved by the mask: 6 x 32 layers x 2048^2 x 4096 x ... at most 15% more here.
    CHECK(a.decomposition.ideal_s * peak <= 1.15 * gemm_flops);
  }

  TEST_CASE("every suggestion is the engine's prediction of the changed plan") {
    const auto hw = test::gpu("h100_sxm");
    const auto m = test::model("llama3_8b");
    const auto a = advise::advise(m, plan_8b(), hw);
    REQUIRE(!a.speed.empty());
    for (const auto& s : a.speed) {
      CAPTURE(s.change);
      const auto e = engine::evaluate(m, s.outcome.plan, hw);
      CHECK(s.outcome.step_s == e.step.time_s);
      CHECK(s.outcome.peak_bytes == e.memory.total);
      CHECK(s.saved_s == doctest::Approx(a.base.step_s - e.step.time_s).epsilon(1e-12));
      // Every change keeps the GPU count and the global batch.
      CHECK(s.outcome.plan.parallel.gpus() == 8);
      CHECK(s.outcome.plan.effective_global_batch() == 64);
      // The gain's interval holds the gain.
      if (s.gain_interval_known) {
        CHECK(s.gain_lo <= s.gain);
        CHECK(s.gain <= s.gain_hi);
      }
    }
    // The top three, applied together, are evaluated too.
    REQUIRE(a.combined.tried);
    CHECK(a.combined.of.size() >= 2);
    spec::PlanSpec together = a.base.plan;
    for (int i : a.combined.of)
      for (const auto& key : a.speed[i].fields) {
        const auto* f = spec::find_plan_field(key);
        REQUIRE(spec::set_field(*f, together, spec::field_text(*f, a.speed[i].outcome.plan)).empty());
      }
    const auto e = engine::evaluate(m, together, hw);
    CHECK(a.combined.outcome.step_s == e.step.time_s);
    CHECK(a.combined.gain == doctest::Approx(e.step.tokens_per_s / a.base.tokens_per_s - 1).epsilon(1e-12));
  }

  TEST_CASE("the memory list puts what costs no time first, then GiB per % of step time") {
    const auto a = advise::advise(test::model("llama3_8b"), plan_8b(), test::gpu("h100_sxm"));
    REQUIRE(a.memory_savers.size() >= 3);
    bool costly = false;
    for (const auto& s : a.memory_savers) {
      CHECK(s.freed_bytes > 0.01 * a.base.peak_bytes);
      const bool costs = s.gain < 0;
      if (costly) CHECK(costs);  // no free change after a costly one
      costly = costly || costs;
    }
    // Full recomputation frees activations (Korthikanti et al. 2022: only the layer inputs stay).
    const auto full = std::find_if(a.memory_savers.begin(), a.memory_savers.end(),
                                   [](const advise::Suggestion& s) { return s.flags == "--recompute full"; });
    REQUIRE(full != a.memory_savers.end());
    CHECK(full->frees == "activations");
  }

  TEST_CASE("MoE load imbalance is the step less the balanced plan's") {
    const auto hw = test::gpu("h100_sxm");
    const auto m = test::model("mixtral_8x7b");
    spec::PlanSpec p;
    p.seq_len = 4096;
    p.global_batch = 64;
    p.parallel.tp = 2;
    p.parallel.dp = 4;
    p.parallel.ep = 4;
    p.parallel.zero = 1;
    p.moe.imbalance = 1.3;
    const auto a = advise::advise(m, p, hw);
    REQUIRE(a.base.status != engine::Status::kInvalid);
    spec::PlanSpec even = p;
    even.moe.imbalance = 1;
    const double balanced = engine::evaluate(m, even, hw).step.time_s;
    CHECK(a.decomposition.of(advise::LossKind::kMoeImbalance).seconds ==
          doctest::Approx(a.base.step_s - balanced).epsilon(1e-9));
    CHECK(a.decomposition.of(advise::LossKind::kMoeImbalance).seconds > 0);
    CHECK(sum_losses(a.decomposition) == doctest::Approx(a.decomposition.step_s).epsilon(1e-12));
  }

  TEST_CASE("flags_between names exactly the fields that differ") {
    spec::PlanSpec a = plan_8b(), b = a;
    b.parallel.tp = 2;
    b.parallel.dp = 4;
    b.parallel.sp = true;
    CHECK(advise::flags_between(a, b) == "--tp 2 --dp 4 --sp");
    CHECK(advise::fields_between(a, b) == std::vector<std::string>{"parallel.tp", "parallel.dp", "parallel.sp"});
    b = a;
    b.cuda_graphs = true;
    b.recompute.kind = spec::RecomputeKind::kSelective;
    CHECK(advise::flags_between(a, b) == "--recompute selective --cuda-graphs");
    CHECK(advise::flags_between(a, a).empty());
  }

  TEST_CASE("the table, Markdown and bad input") {
    const auto t = test::run_cli("advise " + k8b);
    REQUIRE(t.status == 0);
    CHECK(t.out.find("where the step goes") != std::string::npos);
    CHECK(t.out.find("suggestions, by tokens/s gained") != std::string::npos);
    CHECK(t.out.find("\napply #1: ridgeline predict --gpu h100_sxm --model llama3_8b ") != std::string::npos);
    const auto md = test::run_cli("advise " + k8b + " --format markdown");
    REQUIRE(md.status == 0);
    CHECK(md.out.starts_with("# Advice\n"));
    CHECK(md.out.find("| # | change | flags |") != std::string::npos);
    const auto bad = test::run_cli("advise " + k8b + " --format xml");
    CHECK(bad.status == 2);
    CHECK(bad.err == "error: --format: expected one of table, json, markdown, got \"xml\"\n");
    CHECK(bad.out.empty());
    const auto tp = test::run_cli("advise --model llama3_8b --tp 3 --dp 1");
    CHECK(tp.status == 2);
    CHECK(tp.err.starts_with("error: parallel.tp (--tp): "));
    CHECK(std::count(tp.err.begin(), tp.err.end(), '\n') == 1);
  }

  TEST_CASE("the capacity report has a What to change section from the advisor") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("ridgeline_advise_report_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const auto r = test::run_cli("report " + k8b + " --output " + (dir / "r").string());
    REQUIRE_MESSAGE(r.status == 0, r.err);
    const std::string md = test::slurp(dir / "r.md"), html = test::slurp(dir / "r.html");
    CHECK(md.find("\n## What to change\n") != std::string::npos);
    CHECK(html.find("<section id=\"advice\">") != std::string::npos);
    const auto j = json::parse(test::slurp(dir / "r.json"));
    CHECK(j["advice"]["schema"] == "ridgeline.advice/1");
    // The same advice as `advise` on the same plan.
    const auto a = advise_json(k8b);
    CHECK(j["advice"]["suggestions"][0]["flags"] == a["suggestions"][0]["flags"]);
    CHECK(j["advice"]["suggestions"][0]["step_time_s"] == a["suggestions"][0]["step_time_s"]);
    fs::remove_all(dir);
  }
}

TEST_CASE("advise: Megatron's unfused loss gets the fused one as a change, and its predict command reproduces it") {
  // megatron's default loss is its fp32 vocab-parallel cross-entropy
  // (model_parallel_config.py:320); --cross-entropy fused is
  // --cross-entropy-loss-fusion. The suggested plan's command names it.
  const auto r = test::run_cli("advise --gpu h100_sxm --model llama3_8b --dp 8 --zero 3 --seq 8192 --global-batch 64 "
                               "--top 20 --format json");
  REQUIRE(r.status <= 1);
  const auto j = json::parse(r.out);
  bool found = false;
  for (const auto& s : j["suggestions"]) {
    if (s["change"] != "cross-entropy eager -> fused") continue;
    found = true;
    const std::string cmd = s["predict_command"];
    CHECK(cmd.find("--cross-entropy fused") != std::string::npos);
    const auto p = test::run_cli(cmd.substr(std::string("ridgeline ").size()) + " --format json");
    REQUIRE(p.status == 0);
    CHECK(json::parse(p.out)["step"]["step_time_s"].get<double>() == s["step_time_s"].get<double>());
  }
  CHECK(found);
}

TEST_CASE("advise: memory savers: a time cost under 0.5% counts as none, and numerics changes yield at equal savings") {
  // Four changes, as a plan at 10 GiB peak might see them (gains are
  // tokens/s ratios less 1; a negative gain is a time cost).
  const auto s = [](std::string change, std::string_view family, double freed_gib, double gain) {
    advise::Suggestion x;
    x.change = std::move(change);
    x.family = family;
    x.changes_numerics = advise::changes_numerics(family);
    x.freed_bytes = freed_gib * units::kGiB;
    x.gain = gain;
    return x;
  };
  std::vector<advise::Suggestion> v = {
      s("optimizer adamw -> adafactor", "optimizer", 8, 0.0),  // free, alters the numerics
      s("ZeRO 1 -> 2", "zero", 14, -0.001),                    // 0.1% slower: as good as free
      s("recompute none -> full", "recompute", 20, -0.30),     // 30% slower: 20 / 30 GiB per %
      s("ZeRO 1 -> 3", "zero", 8, 0.0),                        // free, as much as adafactor, numerics kept
      s("TP 1 -> 2", "tp", 10, -0.05),                         // 5% slower: 10 / 5 GiB per %
  };
  CHECK(advise::changes_numerics("optimizer"));
  CHECK(advise::changes_numerics("precision"));
  CHECK(advise::changes_numerics("finetune"));
  CHECK_FALSE(advise::changes_numerics("zero"));
  CHECK_FALSE(advise::changes_numerics("recompute"));
  advise::rank_memory_savers(v);
  std::vector<std::string> order;
  for (const auto& x : v) order.push_back(x.change);
  // Free first by GiB (14, then the two 8s with the numerics-keeping one
  // first), then GiB per % of time: 10/5 = 2 before 20/30 = 0.67.
  CHECK(order == std::vector<std::string>{"ZeRO 1 -> 2", "ZeRO 1 -> 3", "optimizer adamw -> adafactor", "TP 1 -> 2",
                                          "recompute none -> full"});
}
