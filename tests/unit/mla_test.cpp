// The step graph of a DeepSeek-V3-style model: multi-head latent attention,
// a shared expert beside the routed ones and dense first layers. Expected
// values are hand calculations from DeepSeek-V3's config.json (h 7168, 128
// heads, q_lora_rank 1536, kv_lora_rank 512, qk_nope 128, qk_rope 64, v 128,
// moe_intermediate_size 2048, 1 shared expert, first_k_dense_replace 3,
// intermediate_size 18432, 61 layers, vocab 129280), bf16 (2 bytes).
#include <doctest/doctest.h>

#include "ridgeline/graph/graph.hpp"
#include "ridgeline/techniques/params.hpp"
#include "test_support.hpp"

using namespace ridgeline;

namespace {

const graph::Kernel* find(const graph::Graph& g, std::string_view name,
                          spec::Phase phase = spec::Phase::kForward) {
  for (const auto& k : g.kernels)
    if (k.name == name && k.phase == phase) return &k;
  return nullptr;
}

spec::PlanSpec flash_plan(int seq) {
  auto p = test::plan(1, seq);
  p.attention = spec::AttentionKind::kFlash2;
  return p;
}

}  // namespace

TEST_CASE("mla: forward GEMM FLOPs per token per layer (DeepSeek-V3)") {
  const auto m = test::model("deepseek_v3");
  const double T = 4096;
  const auto g = test::step(m, flash_plan(4096));
  double flop = 0;
  for (const char* name : {"mla_q_down_proj", "mla_q_up_proj", "mla_kv_down_proj", "mla_kv_up_proj", "attn_out_proj"}) {
    const auto* k = find(g, name);
    REQUIRE(k != nullptr);
    CHECK(k->count == 62);  // 61 layers and the MTP module's block
    flop += k->model_flops / T;
  }
  // Per token, 2 x the weight's elements:
  //   W_DQ  2 x 7168 x 1536             =  22,020,096
  //   W_UQ  2 x 1536 x 128 (128 + 64)   =  75,497,472
  //   W_DKV 2 x 7168 x (512 + 64)       =   8,257,536
  //   W_UKV 2 x 512 x 128 (128 + 128)   =  33,554,432
  //   W_O   2 x 128 x 128 x 7168        = 234,881,024
  //   sum                               = 374,210,560
  CHECK(flop == doctest::Approx(374210560.0).epsilon(1e-12));
  // The core, causal: 2 s^2 H (d_qk + d_v) / 2 = 4096^2 x 128 x 320 = 687,194,767,360 per sequence.
  const auto* f = find(g, "flash_attention");
  REQUIRE(f != nullptr);
  CHECK(f->model_flops == doctest::Approx(687194767360.0).epsilon(1e-12));
  // Q and K 192 wide, V and O 128: the head dimension the cost model reads
  // is their mean, (192 + 128) / 2 = 160.
  CHECK(f->gemm.k == 160);
}

TEST_CASE("mla: saved bytes per token per layer (DeepSeek-V3)") {
  const auto m = test::model("deepseek_v3");
  const double T = 4096;
  const auto g = test::step(m, flash_plan(4096));
  double saved = 0;
  for (const char* name : {"mla_q_down_proj", "mla_q_up_proj", "mla_kv_down_proj", "mla_kv_up_proj", "flash_attention",
                           "attn_out_proj"}) {
    const auto* k = find(g, name);
    REQUIRE(k != nullptr);
    saved += k->saved_bytes / T;
  }
  // Each GEMM's input and the attention's Q, K, V and log-sum-exp, 2 bytes an element:
  //   W_DQ's input h (W_DKV shares it)   7168 x 2          =  14,336
  //   W_UQ's input (the q latent)        1536 x 2          =   3,072
  //   W_UKV's input (the kv latent)       512 x 2          =   1,024
  //   Q, K  2 x 128 x 192 x 2; V 128 x 128 x 2; LSE 128 x 4 = 131,584
  //   W_O's input O                       128 x 128 x 2    =  32,768
  //   sum                                                  = 182,784
  CHECK(saved == doctest::Approx(182784.0).epsilon(1e-12));
  CHECK(find(g, "mla_kv_down_proj")->saved_bytes == 0);
}

TEST_CASE("mla: without a query latent one W_Q projects h to heads x d_qk (DeepSeek-V2-Lite style)") {
  auto m = test::model("deepseek_v3");
  m.mla.q_lora_rank = 0;
  const auto g = test::step(m, flash_plan(1024));
  CHECK(find(g, "mla_q_down_proj") == nullptr);
  const auto* q = find(g, "mla_q_proj");
  REQUIRE(q != nullptr);
  // 1024 tokens x 7168 -> 128 heads x (128 + 64) = 24,576.
  CHECK(q->gemm.m == 1024);
  CHECK(q->gemm.n == 24576);
  CHECK(q->gemm.k == 7168);
}

TEST_CASE("mla: TP splits the up-projections and W_O by heads and replicates the down-projections") {
  const auto m = test::model("deepseek_v3");
  auto p = flash_plan(1024);
  p.parallel.tp = 8;
  p.parallel.dp = 1;
  const auto g = test::step(m, p);
  CHECK(find(g, "mla_q_down_proj")->gemm.n == 1536);         // replicated
  CHECK(find(g, "mla_kv_down_proj")->gemm.n == 576);         // 512 + 64, replicated
  CHECK(find(g, "mla_q_up_proj")->gemm.n == 16 * 192);       // 128 / 8 heads x 192
  CHECK(find(g, "mla_kv_up_proj")->gemm.n == 16 * 256);      // 16 heads x (128 + 128)
  CHECK(find(g, "attn_out_proj")->gemm.k == 16 * 128);       // 16 heads x d_v
  // The shared expert splits as a dense MLP: SwiGLU's gate and up 2 x 2048 / 8 = 512 wide.
  CHECK(find(g, "shared_up_proj")->gemm.n == 512);
  CHECK(find(g, "shared_down_proj")->gemm.k == 256);
}

TEST_CASE("moe: the shared expert's GEMMs run on every token, unrouted (DeepSeek-V3)") {
  const auto m = test::model("deepseek_v3");
  const auto g = test::step(m, flash_plan(4096));
  const auto* up = find(g, "shared_up_proj");
  const auto* down = find(g, "shared_down_proj");
  REQUIRE(up != nullptr);
  REQUIRE(down != nullptr);
  // 4096 tokens x 7168 -> gate and up, 2 x 2048; then 2048 -> 7168; in the 61 - 3 = 58 MoE layers
  // and the MTP module's block (an MoE layer): 59.
  CHECK(up->gemm.m == 4096);
  CHECK(up->gemm.n == 4096);
  CHECK(up->gemm.k == 7168);
  CHECK(up->gemm.batch == 1);
  CHECK(down->gemm.m == 4096);
  CHECK(down->gemm.n == 7168);
  CHECK(down->gemm.k == 2048);
  CHECK(up->count == 59);
  CHECK(down->count == 59);
}

TEST_CASE("moe: the first dense_layers layers run a dense MLP, the rest the experts (DeepSeek-V3: 3 and 58)") {
  const auto m = test::model("deepseek_v3");
  const auto g = test::step(m, flash_plan(4096));
  CHECK(g.layers == 62);  // 61 and the MTP module's block, an MoE layer
  CHECK(g.dense_layers == 3);
  const auto* dense = find(g, "dense_up_proj");
  REQUIRE(dense != nullptr);
  CHECK(dense->count == 3);
  CHECK(dense->gemm.n == 2 * 18432);  // gate and up of the dense MLP
  CHECK(find(g, "dense_down_proj")->gemm.k == 18432);
  CHECK(find(g, "mlp_up_proj")->count == 59);  // the routed experts (58 and MTP's)
  CHECK(find(g, "moe_router")->count == 59);
  CHECK(find(g, "flash_attention")->count == 62);

  // Under PP the first stages take the dense layers: with 5 layers on the
  // first of 8 stages and 56 / 7 = 8 on each other, the busiest stage holds
  // none: the last, whose 8 layers and the MTP block make 9.
  auto p = flash_plan(4096);
  p.parallel.pp = 8;
  p.parallel.first_stage_layers = 5;
  const auto gp = test::step(m, p);
  CHECK(gp.layers == 9);
  CHECK(gp.mtp_layers == 1);
  CHECK(gp.dense_layers == 0);
  CHECK(find(gp, "dense_up_proj") == nullptr);
}

TEST_CASE("moe: a stage's parameters count its dense layers apart (DeepSeek-V3)") {
  const auto m = test::model("deepseek_v3");
  const auto pc = spec::count_params(m);
  auto p = test::plan(1, 4096);
  // One stage: every parameter (count_params' total: 3 dense and 58 MoE
  // layers and the ends), and the MTP module's (total_with_mtp).
  CHECK(techniques::local_params(m, p).weights == doctest::Approx(pc.total_with_mtp).epsilon(1e-12));
  // First of 8 stages with 5 layers: the embedding, the 3 dense layers and 2 MoE ones.
  p.parallel.pp = 8;
  p.parallel.first_stage_layers = 5;
  const auto first = techniques::local_params(m, p, techniques::PipelineStage::kFirst);
  CHECK(first.weights ==
        doctest::Approx(pc.embedding + 3 * pc.dense_layer + 2 * pc.per_layer).epsilon(1e-12));
}

TEST_CASE("moe: DeepSeek-V3's model FLOPs per token are 6 x its active matmul parameters + attention") {
  const auto m = test::model("deepseek_v3");
  const double s = 4096;
  const auto t = graph::totals(test::step(m, flash_plan(4096)));
  // 6 x 37.55e9 active parameters (the project's count, inputs_test), less the
  // embedding (a lookup, no matmul: 6 x 129280 x 7168 = 5.56e9), plus
  // causal attention 3 x 61 layers x s H (d_qk + d_v) / 2 x 2
  //   = 3 x 61 x 4096 x 128 x 320 = 30.70e9 per token:
  //   225.30e9 - 5.56e9 + 30.70e9 = 250.44e9.
  // The MTP module (DeepSeek-V3 Sec. 2.2) adds 6 x its matmul parameters:
  // MLA 187,105,280 (half the 374,210,560 above), experts and shared 9 x 3
  // x 7168 x 2048 = 396,361,728, router 7168 x 256 = 1,835,008, eh_proj 2 x
  // 7168^2 = 102,760,448: 688,062,464, x 6 = 4.128e9; the shared head once
  // more, 6 x 129280 x 7168 = 5.560e9; one layer's attention 3 x s x 128 x
  // 320 = 0.503e9: 10.19e9, 260.63e9 in all.
  const double mtp = 6 * 688062464.0 + 6 * 129280.0 * 7168 + 3 * s * 128 * 320;
  const double hand = 6 * 37.55e9 - 6 * 129280.0 * 7168 + 3 * 61 * s * 128 * 320 + mtp;
  CHECK(t.model_flops / s == doctest::Approx(hand).epsilon(0.01));
}

TEST_CASE("predict answers on DeepSeek-V3 and Kimi K2 (0, or 1 when it does not fit)") {
  for (const char* id : {"deepseek_v3", "kimi_k2"}) {
    CAPTURE(id);
    const auto r = test::run_cli(std::string("predict --model ") + id +
                                 " --gpu h800_sxm --tp 1 --pp 8 --first-stage-layers 5 --ep 8 --dp 16 --seq 4096 "
                                 "--recompute full --zero 1");
    CAPTURE(r.err);
    CHECK((r.status == 0 || r.status == 1));
    CHECK(r.out.find("step time") != std::string::npos);
  }
}

// Multi-token prediction (DeepSeek-V3 Sec. 2.2; README_WEIGHTS.md): one
// depth is an MoE layer (11,507,286,272 parameters), eh_proj 2h x h =
// 2 x 7168^2 = 102,760,448 and enorm, hnorm 2 x 7168: 11,610,061,056 in all,
// the embedding and head shared.
TEST_CASE("mtp: DeepSeek-V3's MTP module's parameters are the last stage's") {
  auto m = test::model("deepseek_v3");
  auto none = m;
  none.mtp_layers = 0;
  auto p = test::plan(1, 4096);
  const double mtp = 11610061056.0;
  CHECK(spec::count_params(m).mtp == mtp);
  CHECK(techniques::local_params(m, p).weights - techniques::local_params(none, p).weights ==
        doctest::Approx(mtp).epsilon(1e-12));
  // Under PP 16 (1 layer first, 4 on each other stage) the last stage holds it, the first does not.
  p.parallel.pp = 16;
  p.parallel.first_stage_layers = 1;
  const auto last = techniques::PipelineStage::kLast, first = techniques::PipelineStage::kFirst;
  CHECK(techniques::local_params(m, p, last).weights - techniques::local_params(none, p, last).weights ==
        doctest::Approx(mtp).epsilon(1e-12));
  CHECK(techniques::local_params(m, p, first).weights == techniques::local_params(none, p, first).weights);
  // Its block's activations too: the last stage's 4 layers and the block, the first's 1 layer.
  p.global_batch = 16;
  const auto pred = engine::evaluate(m, p, test::gpu("h800_sxm"));
  CHECK(pred.memory.last_stage.layers == 5);
  CHECK(pred.memory.first_stage.layers == 1);
}

// One sequence of 4096 tokens without PP: the module's own kernels, per micro-batch:
//   eh_proj  2 x 4096 x 7168 x (2 x 7168)  =   841,813,590,016 FLOP
//   head     2 x 4096 x 129280 x 7168      = 7,591,354,695,680 FLOP (the shared head once more)
//   norms    enorm, hnorm and the head's norm: 3
// and its block as one more layer: 62 attention and 59 expert GEMMs (above).
// The step's model FLOPs grow by 3 x (2 x 688,062,464 + 2 x 129280 x 7168) x
// 4096 + 3 x 4096^2 x 128 x 320 (one layer's causal attention, forward and
// backward) = 41,745,471,504,384 (10,191,765,504 a token).
TEST_CASE("mtp: DeepSeek-V3's MTP module's kernels and FLOPs") {
  auto m = test::model("deepseek_v3");
  auto none = m;
  none.mtp_layers = 0;
  const auto p = flash_plan(4096);
  const auto g = test::step(m, p);
  const auto* eh = find(g, "mtp_eh_proj");
  const auto* head = find(g, "mtp_lm_head");
  REQUIRE(eh != nullptr);
  REQUIRE(head != nullptr);
  CHECK(eh->flops == 841813590016.0);
  CHECK(eh->count == 1);
  CHECK(head->flops == 7591354695680.0);
  CHECK(head->count == 1);
  CHECK(find(g, "mtp_norm")->count == 3);
  CHECK(find(g, "mtp_cross_entropy")->count == 1);
  const auto with = engine::evaluate(m, p, test::gpu("h800_sxm"));
  const auto without = engine::evaluate(none, p, test::gpu("h800_sxm"));
  CHECK(with.step.model_flops - without.step.model_flops == doctest::Approx(41745471504384.0).epsilon(1e-3));
  CHECK(with.step.time_s > without.step.time_s);
  // Under PP the module is the last stage's, and in the pace where that
  // stage is the busiest (graph::build_forward): 61 layers over 16 stages,
  // the first holding 1, leave 4 on each other, and the last's 4 and the
  // block (5) set the pace; with 3 on the first and 2 on the last (2 and
  // the block: 3) a middle stage's 4 do.
  auto pp = p;
  pp.parallel.pp = 16;
  pp.parallel.first_stage_layers = 1;
  pp.global_batch = 32;
  const auto last = test::step(m, pp);
  CHECK(last.layers == 5);
  CHECK(last.mtp_layers == 1);
  REQUIRE(find(last, "mtp_eh_proj") != nullptr);
  CHECK(find(last, "mtp_eh_proj")->count == 1);
  CHECK(find(last, "flash_attention")->count == 5);
  auto balanced = pp;
  balanced.parallel.first_stage_layers = 3;
  balanced.parallel.last_stage_layers = 2;
  const auto middle = test::step(m, balanced);
  CHECK(middle.layers == 4);
  CHECK(middle.mtp_layers == 0);
  CHECK(find(middle, "mtp_eh_proj") == nullptr);
  // The model FLOPs count the module where it is timed: 32 sequences at the
  // per-sequence figure above.
  const auto hw = test::gpu("h800_sxm");
  const auto a = engine::evaluate(m, pp, hw), b = engine::evaluate(m, balanced, hw);
  CHECK(a.step.model_flops - b.step.model_flops == doctest::Approx(32 * 41745471504384.0).epsilon(1e-3));
  CHECK(a.step.time_s > b.step.time_s);
}
