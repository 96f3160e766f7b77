// `advise` on MoE plans: DeepEP's dispatcher and the expert all-to-all
// overlap where the all-to-alls are a visible share of the step, and
// Megatron-Core's recompute modules where memory is short; each evaluated
// through the engine. The expected flag spellings are Megatron-LM's own
// (d98e8a6): megatron/core/transformer/transformer_config.py lines 891
// (moe_token_dispatcher_type: 'allgather', 'alltoall', 'flex'), 898
// (moe_flex_dispatcher_backend: 'deepep', ...), 560-575 (recompute_modules:
// "moe_act", "layernorm", "mla_up_proj", ...), 3007-3040 (what
// overlap_moe_expert_parallel_comm refuses: PP > 1 without virtual
// stages, full recomputation, the shared-expert overlap);
// megatron/core/model_parallel_config.py line 343
// (overlap_moe_expert_parallel_comm); arguments.py line 2373 turns each
// TransformerConfig field into its --dashed flag.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "ridgeline/advise/advise.hpp"
#include "ridgeline/engine/engine.hpp"
#include "ridgeline/spec/launch_edit.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "test_support.hpp"

using namespace ridgeline;

namespace {

const advise::Suggestion* find(const advise::Advice& a, std::string_view family) {
  for (const auto* list : {&a.speed, &a.memory_savers})
    for (const auto& s : *list)
      if (s.family == family) return &s;
  return nullptr;
}

advise::Options all_kept() {
  advise::Options o;
  o.top = 1000;
  o.level = 0;
  return o;
}

/// Qwen3-30B-A3B (128 experts, no latent attention) on 16 H100s in two
/// nodes: EP 16 over DP 16, Megatron's alltoall dispatcher; its
/// all-to-alls cross the network.
spec::PlanSpec qwen_ep16() {
  spec::PlanSpec p;
  p.seq_len = 4096;
  p.micro_batch = 1;
  p.parallel.dp = 16;
  p.parallel.ep = 16;
  p.parallel.zero = 1;
  p.global_batch = 128;
  p.recompute = {spec::RecomputeKind::kSelective};
  return p;
}

}  // namespace

TEST_SUITE("advise_moe") {
  TEST_CASE("EP with visible all-to-alls: DeepEP and the all-to-all overlap, each the engine's gain") {
    const auto m = test::model("qwen3_30b_a3b");
    const auto hw = test::gpu("h100_sxm");
    const spec::PlanSpec p = qwen_ep16();
    const auto a = advise::advise(m, p, hw, all_kept());
    REQUIRE(a.base.status != engine::Status::kInvalid);
    REQUIRE(a.prediction.step.all_to_all_s > 0.01 * a.base.step_s);
    const auto* deepep = find(a, "dispatcher");
    REQUIRE(deepep);
    CHECK(deepep->change == "MoE dispatcher alltoall -> deepep");
    CHECK(deepep->flags == "--moe-dispatcher deepep");
    // The gain is the engine's: the changed plan evaluated on its own.
    spec::PlanSpec q = p;
    q.global_batch = 128;
    q.moe.dispatcher = spec::MoeDispatcher::kDeepEp;
    const auto e = engine::evaluate(m, q, hw);
    CHECK(deepep->outcome.step_s == doctest::Approx(e.step.time_s).epsilon(1e-9));
    const auto* overlap = find(a, "ep_comm_overlap");
    REQUIRE(overlap);
    CHECK(overlap->flags == "--ep-comm-overlap");
    q = p;
    q.parallel.ep_comm_overlap = true;
    CHECK(overlap->outcome.step_s == doctest::Approx(engine::evaluate(m, q, hw).step.time_s).epsilon(1e-9));
  }

  TEST_CASE("not suggested: what the plan has, what the framework lacks, what Megatron-Core refuses, no EP") {
    const auto m = test::model("qwen3_30b_a3b");
    const auto hw = test::gpu("h100_sxm");
    spec::PlanSpec p = qwen_ep16();
    p.moe.dispatcher = spec::MoeDispatcher::kDeepEp;
    p.parallel.ep_comm_overlap = true;
    auto a = advise::advise(m, p, hw, all_kept());
    CHECK_FALSE(find(a, "dispatcher"));
    CHECK_FALSE(find(a, "ep_comm_overlap"));
    // torchtitan has no --overlap-moe-expert-parallel-comm.
    p = qwen_ep16();
    REQUIRE(spec::set_field(*spec::find_plan_field("framework"), p, "torchtitan").empty());
    a = advise::advise(m, p, hw, all_kept());
    CHECK_FALSE(find(a, "ep_comm_overlap"));
    // Megatron-Core: "disable full recomputation when enabling
    // overlap_moe_expert_parallel_comm".
    p = qwen_ep16();
    p.recompute = {spec::RecomputeKind::kFull};
    a = advise::advise(m, p, hw, all_kept());
    CHECK_FALSE(find(a, "ep_comm_overlap"));
    // No EP: no all-to-all.
    p = qwen_ep16();
    p.parallel.ep = 1;
    a = advise::advise(m, p, hw, all_kept());
    CHECK_FALSE(find(a, "dispatcher"));
    CHECK_FALSE(find(a, "ep_comm_overlap"));
  }

  TEST_CASE("a dense model: none of the MoE suggestions") {
    spec::PlanSpec p;
    p.seq_len = 8192;
    p.parallel.dp = 8;
    p.global_batch = 64;
    // Llama 3 70B on 8 GPUs does not fit: memory is short, yet no recompute modules.
    const auto a = advise::advise(test::model("llama3_70b"), p, test::gpu("h100_sxm"), all_kept());
    CHECK_FALSE(a.base.fits_headroom);
    CHECK_FALSE(find(a, "dispatcher"));
    CHECK_FALSE(find(a, "ep_comm_overlap"));
    CHECK_FALSE(find(a, "recompute_modules"));
  }

  TEST_CASE("memory short on latent attention: moe_act, layernorm and mla_up_proj before full recomputation") {
    // DeepSeek-V3's published layout without its recomputation does not fit
    // (recompute_modules_test); the report's three modules are the change.
    const auto m = test::model("deepseek_v3");
    const auto hw = test::gpu("h800_sxm");
    spec::PlanSpec p;
    p.seq_len = 4096;
    p.micro_batch = 1;
    p.global_batch = 15360;
    p.precision = spec::Precision::kFp8;
    p.fp8_recipe = spec::Fp8Recipe::kBlockwise;
    p.moe.dispatcher = spec::MoeDispatcher::kDeepEp;
    p.parallel.pp = 16;
    p.parallel.ep = 64;
    p.parallel.dp = 128;
    p.parallel.zero = 1;
    p.parallel.first_stage_layers = 1;
    p.parallel.ep_comm_overlap = true;
    const auto a = advise::advise(m, p, hw, all_kept());
    REQUIRE_FALSE(a.base.fits);
    const auto* mods = find(a, "recompute_modules");
    REQUIRE(mods);
    CHECK(mods->change == "recompute none -> selective:layernorm+mla_up_proj+moe_act");
    CHECK(mods->outcome.fits);
    // Ranked before the full recomputation among the memory savers.
    int at_mods = -1, at_full = -1;
    for (int i = 0; i < static_cast<int>(a.memory_savers.size()); ++i) {
      if (a.memory_savers[i].family == "recompute_modules") at_mods = i;
      if (a.memory_savers[i].family == "recompute" && at_full < 0) at_full = i;
    }
    REQUIRE(at_mods >= 0);
    if (at_full >= 0) CHECK(at_mods < at_full);
    // Already DeepEP, and the overlap is on: neither is suggested again.
    CHECK_FALSE(find(a, "dispatcher"));
    CHECK_FALSE(find(a, "ep_comm_overlap"));
  }

  TEST_CASE("memory short without latent attention: moe_act alone; roomy: no modules") {
    const auto m = test::model("qwen3_30b_a3b");
    const auto hw = test::gpu("h100_sxm");
    spec::PlanSpec p = qwen_ep16();
    p.recompute = {spec::RecomputeKind::kNone};
    p.micro_batch = 8;  // 8 x 4096 tokens a micro-batch: short of memory
    auto a = advise::advise(m, p, hw, all_kept());
    REQUIRE_FALSE(a.base.fits_headroom);
    const auto* mods = find(a, "recompute_modules");
    REQUIRE(mods);
    CHECK(mods->change == "recompute none -> selective:moe_act");
    p = qwen_ep16();
    a = advise::advise(m, p, hw, all_kept());
    REQUIRE(a.base.fits_headroom);
    CHECK_FALSE(find(a, "recompute_modules"));
  }

  TEST_CASE("an imported Megatron-LM launch: the changes in Megatron-LM's flags") {
    const auto dir = std::filesystem::temp_directory_path() / ("ridgeline_moe_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto file = dir / "moe.sh";
    std::ofstream(file) << "python pretrain_gpt.py --tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 "
                           "--expert-model-parallel-size 16 --micro-batch-size 1 --global-batch-size 128 "
                           "--seq-length 4096 --bf16 --use-distributed-optimizer --recompute-activations\n";
    const auto r = test::run_cli("advise --gpu h100_sxm --model qwen3_30b_a3b --dp 16 --from-megatron " +
                                 file.string() + " --format json");
    std::filesystem::remove_all(dir);
    REQUIRE_MESSAGE(r.status == 0, r.err);
    CHECK(r.out.find("--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend deepep") != std::string::npos);
    CHECK(r.out.find("--overlap-moe-expert-parallel-comm") != std::string::npos);
  }

  TEST_CASE("launch edits: the dispatcher, the overlap and the recompute modules in Megatron-LM's words") {
    spec::ImportReport rep;
    rep.kind = "Megatron-LM args";
    rep.framework = "megatron";
    const auto m = test::model("deepseek_v3");
    spec::PlanSpec a;
    a.parallel.ep = 8;
    a.parallel.dp = 8;
    auto edit = [&](auto change) {
      spec::PlanSpec b = a;
      change(b);
      return spec::launch_edit(rep, a, b, m);
    };
    CHECK(edit([](auto& b) { b.moe.dispatcher = spec::MoeDispatcher::kDeepEp; }) ==
          "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend deepep");
    CHECK(edit([](auto& b) { b.parallel.ep_comm_overlap = true; }) == "--overlap-moe-expert-parallel-comm");
    CHECK(edit([](auto& b) {
            b.recompute = {spec::RecomputeKind::kSelective};
            b.recompute.modules = spec::kRecomputeMoeAct | spec::kRecomputeLayernorm | spec::kRecomputeMlaUpProj;
          }) == "--recompute-granularity selective; --recompute-modules layernorm mla_up_proj moe_act");
    // Megatron-DeepSpeed has none of them.
    rep.framework = "deepspeed";
    CHECK_FALSE(edit([](auto& b) { b.moe.dispatcher = spec::MoeDispatcher::kDeepEp; }).has_value());
    CHECK_FALSE(edit([](auto& b) { b.parallel.ep_comm_overlap = true; }).has_value());
  }
}
