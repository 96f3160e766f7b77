// The memory model's corrections, each against a hand calculation written
// out below (formula, then the numbers), a paper's formula or the documented
// behaviour of the framework the model imitates:
//  - pipeline stages differ: the first holds the embedding and p micro-batches
//    in flight under 1F1B, the last the final norm, LM head, logits and loss
//    with one (Narayanan et al. 2021; Megatron-LM's interleaved warm-up);
//  - QLoRA quantizes only the decoder's nn.Linear weights (bitsandbytes);
//    qlora.py keeps embed_tokens and lm_head in bf16 and the norms in fp32;
//  - FlashAttention's backward reads O and the fp32 log-sum-exp;
//  - autograd's saved tensors of eager RMSNorm and native_layer_norm;
//  - Sophia's Hessian pass covers the whole step (train_sophiag.py);
//  - TP > KV heads replicates KV heads; selective recomputation reruns a
//    flash kernel (Megatron-Core checkpoint_core_attention);
//  - fp32 main gradients (Megatron: 18 bytes per parameter with Adam, 6 +
//    12 / N_d with its distributed optimizer) and pure bf16 (torch.optim's
//    states in the parameter dtype);
//  - MoE capacity and imbalance; context parallelism's K/V receive buffers;
//  - the caching allocator's reserve from the plan's framework.
#include <doctest/doctest.h>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/memory/memory.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/precision.hpp"
#include "ridgeline/techniques/params.hpp"
#include "ridgeline/techniques/passes.hpp"
#include "test_support.hpp"

using namespace ridgeline;
using test::plan;
using test::step;

namespace {


const graph::Kernel& forward(const graph::Graph& g, graph::Op op) {
  for (const auto& k : g.kernels)
    if (k.phase == spec::Phase::kForward && k.op == op) return k;
  FAIL("no forward kernel of that op");
  return g.kernels.front();
}

const graph::Kernel& backward(const graph::Graph& g, graph::Op op) {
  for (const auto& k : g.kernels)
    if (k.phase == spec::Phase::kBackward && k.op == op) return k;
  FAIL("no backward kernel of that op");
  return g.kernels.front();
}

}  // namespace

TEST_CASE("memory: PP stages differ; Llama-3-8B at PP 8 peaks on the first stage") {
  // Llama-3-8B: h 4096, a 32, g 8, d 128, f 14336, V 128256, 32 layers, SwiGLU,
  // RMSNorm, untied. b 1, s 8192 (T = 8192 tokens), bf16 (e = 2), flash2,
  // fused kernels (Megatron), PP 8: 4 layers per stage; global batch 64 at DP 1
  // = 64 micro-batches, so the first stage holds p = 8 in flight, the last 1.
  const auto m = test::model("llama3_8b");
  auto p = plan(1, 8192);
  p.global_batch = 64;
  p.parallel.pp = 8;
  const auto r = engine::evaluate(m, p, test::gpu("h100_sxm")).memory;
  // Saved bytes per token of one layer:
  //   norm1, fused RMSNorm: x (2h) + fp32 rstd (4)          = 8196
  //   QKV input (2h)                                        = 8192
  //   flash: Q, K, V (a + 2g) d e = 48 x 128 x 2 + LSE 4a   = 12288 + 128 = 12416
  //   output projection input O (2h)                        = 8192
  //   norm2                                                 = 8196
  //   up/gate input (2h)                                    = 8192
  //   fused SwiGLU: gate and up (2 x 2f)                    = 57344
  //   down input (2f)                                       = 28672
  //                                                   total = 139400
  const double layer = 8192.0 * 139400;  // 1,141,964,800 bytes
  // First stage: 8 x (4 layers + the embedding's int64 token ids, 8 T).
  const double first = 8 * (4 * layer + 8192.0 * 8);  // 36,543,397,888
  // Last stage: 1 x 4 layers + final norm (2h + 4) + LM head input (2h) +
  // Megatron's unfused loss's fp32 softmax (4V; cross_entropy_loss_fusion is
  // off by default), per token: 8196 + 8192 + 513024 = 529412.
  const double last = 4 * layer + 8192.0 * 529412;  // 8,904,802,304
  CHECK(r.first_stage.in_flight_microbatches == 8);
  CHECK(r.last_stage.in_flight_microbatches == 1);
  CHECK(r.first_stage.activations == doctest::Approx(first).epsilon(1e-12));
  CHECK(r.last_stage.activations == doctest::Approx(last).epsilon(1e-12));
  // The logits' gradient (T x V x 2 = 2,101,346,304) is the last stage's; the first has no logits.
  CHECK(r.last_stage.buffers == doctest::Approx(8192.0 * 128256 * 2).epsilon(1e-12));
  CHECK(r.first_stage.buffers == 0);
  // Weights: a layer has h (q + 2kv) + q h + 3 h f + 2 h = 218,112,000
  // parameters; the first stage adds the embedding V h = 525,336,576, the
  // last the LM head V h and the final norm h.
  CHECK(r.first_stage.weights == doctest::Approx(2 * (4 * 218112000.0 + 525336576.0)).epsilon(1e-12));
  CHECK(r.last_stage.weights == doctest::Approx(2 * (4 * 218112000.0 + 525336576.0 + 4096)).epsilon(1e-12));
  CHECK(r.peak_stage == "first");
  CHECK(r.total == doctest::Approx(r.first_stage.total));
  CHECK(r.first_stage.total > r.last_stage.total);

  SUBCASE("interleaved (v = 2): the first stage 23 chunks, the last 9") {
    // Megatron-LM's interleaved schedule warms rank r up with 2 (p - r - 1) +
    // (v - 1) p chunk forwards, then holds one more: rank 0 2 x 7 + 8 + 1 =
    // 23 chunks of L / (p v) layers = 11.5 stages' worth (p + (p - 1) / v,
    // Korthikanti et al. 2022); rank 7 8 + 1 = 9 chunks = 4.5.
    p.parallel.virtual_stages = 2;
    CHECK(memory::in_flight_microbatches(p, 64, techniques::PipelineStage::kFirst) == 11.5);
    CHECK(memory::in_flight_microbatches(p, 64, techniques::PipelineStage::kLast) == 4.5);
  }
}

TEST_CASE("memory: QLoRA stores only the decoder's linear weights in NF4") {
  // Llama-2-7B (h 4096, f 11008, V 32000, 32 layers, untied), QLoRA r = 8 on
  // q and v. bitsandbytes replaces the decoder's nn.Linear modules (NF4 with
  // double quantization: 4.127 bits, Dettmers et al. 2023); qlora.py casts
  // embed_tokens and lm_head to bf16 and every norm to fp32:
  //   NF4:      32 x (4 h^2 + 3 h f) = 32 x 202,375,168 weights x 4.127 / 8
  //   bf16:     embedding + LM head 2 x V x h = 2 x 131,072,000, x 2 bytes
  //   fp32:     norms (2 x 32 + 1) x h = 266,240, x 4 bytes
  //   adapters: 32 x 2 x r (h + h) = 4,194,304 (bf16, trainable), x 2 bytes
  const auto m = test::model("llama2_7b");
  auto p = plan(1, 2048);
  p.finetune.mode = spec::FinetuneMode::kQlora;
  const double h = 4096, f = 11008, V = 32000;
  const double expected = 32 * (4 * h * h + 3 * h * f) * 4.127 / 8 + 2 * V * h * 2 + 65 * h * 4 + 4194304.0 * 2;
  CHECK(memory::model_state(m, p).weights == doctest::Approx(expected).epsilon(1e-12));
  // LoRA keeps the whole frozen base at 16 bits: 6,738,415,616 parameters x 2.
  p.finetune.mode = spec::FinetuneMode::kLora;
  CHECK(memory::model_state(m, p).weights == doctest::Approx(6738415616.0 * 2 + 4194304.0 * 2).epsilon(1e-12));
}

TEST_CASE("memory: flash attention keeps O and the log-sum-exp for its backward") {
  // Llama-3-8B, b 1, s 4096 (T = 4096), bf16: Q, K, V = T (a + 2g) d e =
  // 4096 x 12288; O = T a d e = 4096 x 8192; LSE = fp32 per head per token = 4096 x 128.
  const auto m = test::model("llama3_8b");
  const double qkv = 4096.0 * 12288, o = 4096.0 * 8192, lse = 4096.0 * 128;
  SUBCASE("full fine-tune: O is the output projection's saved input, kept once") {
    const auto g = step(m, plan(1, 4096));
    CHECK(forward(g, graph::Op::kFlashAttn).saved_bytes == doctest::Approx(qkv + lse));
    CHECK(forward(g, graph::Op::kOut).saved_bytes == doctest::Approx(o));
  }
  SUBCASE("LoRA on q, v: the frozen output projection saves nothing, the flash kernel keeps O") {
    auto p = plan(1, 4096);
    p.finetune.mode = spec::FinetuneMode::kLora;
    const auto g = step(m, p);
    CHECK(forward(g, graph::Op::kFlashAttn).saved_bytes == doctest::Approx(qkv + o + lse));  // 84,410,368
    CHECK(forward(g, graph::Op::kOut).saved_bytes == 0);
  }
  SUBCASE("fp8: the output projection saves its 1-byte column-wise input, the flash kernel the 16-bit O") {
    auto p = plan(1, 4096);
    p.precision = spec::Precision::kFp8;
    const auto g = step(m, p);
    CHECK(forward(g, graph::Op::kFlashAttn).saved_bytes == doctest::Approx(qkv + o + lse));
    CHECK(forward(g, graph::Op::kOut).saved_bytes == doctest::Approx(4096.0 * 4096));  // T q x 1 byte
  }
}

TEST_CASE("memory: norms save what PyTorch autograd saves") {
  const auto m = test::model("llama3_8b");  // h 4096; s 4096, b 1: T = 4096, bf16
  auto p = plan(1, 4096);
  SUBCASE("eager RMSNorm (Hugging Face): fp32 x, fp32 rsqrt per row, the normalized x") {
    // pow(2) and x * rsqrt share the fp32 x (4 h), rsqrt saves its result (4
    // per row), weight * x.to(bf16) saves the bf16 x (2 h): T (6 h + 4).
    p.fusion = spec::Fusion::kEager;
    p.rms_norm = spec::RmsNormImpl::kComposite;  // the model code's chain (megatron's own is TE's fused kernel)
    p.rms_norm_given = true;
    CHECK(forward(step(m, p), graph::Op::kNorm1).saved_bytes == doctest::Approx(4096.0 * (6 * 4096 + 4)));
    // LoRA: the norm weight is frozen, so weight * x saves nothing: T (4 h + 4).
    p.finetune.mode = spec::FinetuneMode::kLora;
    CHECK(forward(step(m, p), graph::Op::kNorm1).saved_bytes == doctest::Approx(4096.0 * (4 * 4096 + 4)));
  }
  SUBCASE("fused RMSNorm (Apex, Transformer Engine): x and the fp32 rstd: T (2 h + 4)") {
    CHECK(forward(step(m, p), graph::Op::kNorm1).saved_bytes == doctest::Approx(4096.0 * (2 * 4096 + 4)));
  }
  SUBCASE("native_layer_norm: the input and fp32 mean and rstd per row: T (2 h + 8)") {
    const auto gpt = test::model("gpt3_1.3b");  // h 2048
    auto q = plan(1, 2048);
    q.fusion = spec::Fusion::kEager;
    CHECK(forward(step(gpt, q), graph::Op::kNorm1).saved_bytes == doctest::Approx(2048.0 * (2 * 2048 + 8)));
  }
}

TEST_CASE("plan: QLoRA with fp8 is rejected") {
  const auto m = test::model("llama3_8b");
  auto p = plan(1, 2048);
  p.finetune.mode = spec::FinetuneMode::kQlora;
  p.precision = spec::Precision::kFp8;
  const auto pr = engine::check_plan(m, p, test::gpu("h100_sxm"));
  CHECK(pr.field == "precision");
  CHECK(pr.message == "qlora with fp8 is not supported: the NF4 base weights are dequantized to bf16 for every GEMM");
}

TEST_CASE("Sophia: the Hessian pass costs 1/k of the whole step's forward and backward") {
  // train_sophiag.py (Liuhong99/Sophia): every hess_interval steps, after the
  // optimizer step, a loop over all gradient_accumulation_steps micro-batches
  // runs forward and the sampled-label backward. So per step the estimate is
  // 1/k of the step's m micro-batches' forward and backward, whatever m:
  // with k = 10 its kernels take 0.1 of the forward + backward kernel time
  // (one micro-batch's worth / k would be 1 / (k m) = 0.0125 at m = 8).
  const auto m = test::model("llama3_8b");
  for (int micro_batches : {1, 8}) {
    CAPTURE(micro_batches);
    auto p = plan(1, 2048);
    p.global_batch = micro_batches;
    p.optimizer.kind = spec::OptimizerKind::kSophia;
    p.optimizer.hessian_interval = 10;
    const auto pred = engine::evaluate(m, p, test::gpu("h100_sxm"));
    double hessian = 0, train = 0;
    for (const auto& k : pred.kernels) {
      if (k.name == "sophia_hessian_estimate") hessian += k.time_s;
      else if (k.phase == spec::Phase::kForward || k.phase == spec::Phase::kBackward) train += k.time_s;
    }
    CHECK(hessian / train == doctest::Approx(0.1));
  }
}

TEST_CASE("TP beyond the KV heads replicates one KV head per rank") {
  // Llama-3-8B (g = 8 KV heads) at TP 16: each rank holds 2 query heads and
  // one whole KV head. Per rank and layer: QKV h (q / t + 2 d) = 4096 x 512,
  // output q / t x h = 256 x 4096: 3,145,728 attention weights (not the
  // 41,943,040 / 16 = 2,621,440 an even split would give); MLP 3 h f / 16 =
  // 11,010,048; norms 2 h = 8,192: 14,163,968 per layer. Ends: embedding and
  // LM head V h / 16 = 32,833,536 each, final norm 4,096.
  const auto m = test::model("llama3_8b");
  auto p = plan(1, 2048);
  p.parallel.tp = 16;
  const double expected = 32 * 14163968.0 + 2 * 32833536.0 + 4096;
  CHECK(techniques::local_params(m, p).weights == doctest::Approx(expected).epsilon(1e-15));
  // FLOPs: the QKV GEMM computes its 2 query and 1 KV head (N = (2 + 2) x 128);
  // model FLOPs credit 2 + 2 x 8 / 16 = 3 heads' worth: 2 T h (3 x 128).
  const auto g = step(m, p);
  const auto& qkv = forward(g, graph::Op::kQkv);
  const double T = 2048, h = 4096;
  CHECK(qkv.flops == doctest::Approx(2 * T * h * 512));
  CHECK(qkv.model_flops == doctest::Approx(2 * T * h * 384));
  // Summed over the 16 ranks: Megatron's num_floating_point_operations,
  // 6 T [L (h (q + 2 g d) + q h + 3 h f) + h V] + 6 q L b s^2.
  const double q = 4096, gd = 8 * 128, f = 14336, V = 128256, L = 32;
  const double megatron = 6 * T * (L * (h * (q + 2 * gd) + q * h + 3 * h * f) + h * V) + 6 * q * L * T * T;
  CHECK(graph::totals(g).model_flops * 16 == doctest::Approx(megatron).epsilon(1e-12));
}

TEST_CASE("selective recomputation reruns the flash kernel and keeps only its inputs") {
  // Megatron-Core (recompute_granularity selective, recompute_modules
  // core_attn) checkpoints core attention: Q, K, V are kept, the flash forward
  // runs again before its backward. Llama-3-8B, b 1, s 4096, bf16.
  const auto m = test::model("llama3_8b");
  auto p = plan(1, 4096);
  p.recompute = {spec::RecomputeKind::kSelective, 0};
  const auto g = step(m, p);
  const auto& f = forward(g, graph::Op::kFlashAttn);
  const graph::Kernel* r = nullptr;
  for (const auto& k : g.kernels)
    if (k.phase == spec::Phase::kRecompute && k.op == graph::Op::kFlashAttn) r = &k;
  REQUIRE(r != nullptr);
  CHECK(r->flops == f.flops);
  CHECK(r->model_flops == f.model_flops);
  CHECK(r->count == f.count);
  // Saved: Q, K, V = T (a + 2g) d e = 4096 x 12288 (no log-sum-exp).
  CHECK(f.saved_bytes == doctest::Approx(4096.0 * 12288));
  // The recomputed O and log-sum-exp live within their layer's backward (as
  // the naive core's recomputed scores): no working set is held.
  CHECK(memory::facts(g).recompute_working == 0);
}

TEST_CASE("precision: fp32 main gradients, remainder masters and pure bf16 model state") {
  const auto m = test::model("llama2_7b");
  spec::PlanSpec p;
  p.optimizer.kind = spec::OptimizerKind::kAdam;
  p.parallel.dp = 8;
  const double psi = techniques::local_params(m, p).trainable;
  SUBCASE("Megatron's fp32 main gradients: 2 + 4 + 4 + 8 = 18 bytes; distributed optimizer 6 + 12 / N_d") {
    REQUIRE(spec::apply_setting(p, "main_grads", "fp32") == "");
    CHECK(spec::precision_policy(p).gradient_bytes == 4);
    CHECK(memory::model_state(m, p).total() == doctest::Approx(18 * psi).epsilon(1e-12));
    p.parallel.zero = 1;
    CHECK(memory::model_state(m, p).total() == doctest::Approx(6 * psi + 12 * psi / 8).epsilon(1e-12));
  }
  SUBCASE("remainder masters (Apex store_param_remainders): 2 + 2 + 2 + 8 = 14 bytes; sharded 4 + 10 / N_d") {
    // NeMo 24.07's H100 recipes: bf16 weights, bf16 gradient buffer
    // (grad_sync_dtype=bf16), the fp32 master's low 16 bits and Adam's fp32
    // moments sharded over the data-parallel ranks.
    REQUIRE(spec::apply_setting(p, "master_weights", "remainder") == "");
    REQUIRE(spec::apply_setting(p, "main_grads", "working") == "");
    CHECK(spec::precision_policy(p).master_bytes == 2);
    CHECK(memory::model_state(m, p).total() == doctest::Approx(14 * psi).epsilon(1e-12));
    p.parallel.zero = 1;
    CHECK(memory::model_state(m, p).total() == doctest::Approx(4 * psi + 10 * psi / 8).epsilon(1e-12));
    // fp16 weights are not an fp32's high half: refused.
    p.precision = spec::Precision::kFp16;
    const auto refused = engine::check_plan(m, p, test::gpu("h100_sxm"));
    CHECK(refused.field == "master_weights");
    CHECK(refused.message.find("fp16 weights need fp32 masters") != std::string::npos);
  }
  SUBCASE("pure bf16: weights 2, gradients 2, Adam's m and v 2 + 2 (torch.optim: zeros_like(param))") {
    p.master_weights = spec::MasterWeights::kNone;
    REQUIRE(spec::apply_setting(p, "main_grads", "working") == "");  // torch.optim: gradients in bf16
    const auto ms = memory::model_state(m, p);
    CHECK(ms.master_weights == 0);
    CHECK(ms.optimizer == doctest::Approx(4 * psi).epsilon(1e-12));
    CHECK(ms.total() == doctest::Approx(8 * psi).epsilon(1e-12));
  }
  SUBCASE("bf16 optimizer states beside fp32 masters (DeepSeek-V3): 2 + 2 + 4 + 2 x 2 = 12 bytes; fp32 states "
          "without masters 2 + 2 + 2 x 4 = 12") {
    REQUIRE(spec::apply_setting(p, "main_grads", "working") == "");
    REQUIRE(spec::apply_setting(p, "optimizer_state_dtype", "bf16") == "");
    const auto ms = memory::model_state(m, p);
    CHECK(ms.master_weights == doctest::Approx(4 * psi).epsilon(1e-12));
    CHECK(ms.optimizer == doctest::Approx(4 * psi).epsilon(1e-12));
    CHECK(ms.total() == doctest::Approx(12 * psi).epsilon(1e-12));
    p.parallel.zero = 1;  // masters and states sharded: 4 + 8 / N_d
    CHECK(memory::model_state(m, p).total() == doctest::Approx(4 * psi + 8 * psi / 8).epsilon(1e-12));
    p.parallel.zero = 0;
    p.master_weights = spec::MasterWeights::kNone;
    REQUIRE(spec::apply_setting(p, "optimizer_state_dtype", "fp32") == "");
    CHECK(memory::model_state(m, p).total() == doctest::Approx(12 * psi).epsilon(1e-12));
    CHECK(spec::apply_setting(p, "optimizer_state_dtype", "fp8") ==
          "optimizer_state_dtype: expected one of auto, fp32, bf16, fp16, got \"fp8\"");
  }
}

TEST_CASE("MoE: the optimizer step shards experts over DP x CP / EP, as the memory model does") {
  // Mixtral-8x7B, DP 8, ZeRO-1. Under EP 8 each GPU holds one expert of each
  // layer, replicated over DP x CP / EP = 1 rank: its expert parameters are
  // not sharded, the dense ones over 8. The step's parameters per GPU:
  //   P = (trainable - expert) / 8 + expert / 1 (both from local_params),
  // and its FLOPs are Adam's per parameter times P (EP 1: trainable / 8).
  const auto m = test::model("mixtral_8x7b");
  auto p = plan(1, 4096);
  p.parallel.dp = 8;
  p.parallel.zero = 1;
  p.global_batch = 8;
  auto optimizer_flops = [&](const spec::PlanSpec& q) {
    for (const auto& k : step(m, q).kernels)
      if (k.op == graph::Op::kOptimizer) return k.flops;
    return 0.0;
  };
  const auto one = techniques::local_params(m, p);
  const double f1 = optimizer_flops(p);
  REQUIRE(f1 > 0);
  p.parallel.ep = 8;
  const auto lp = techniques::local_params(m, p);
  const double expect = (lp.trainable - lp.expert_trainable) / 8 + lp.expert_trainable;
  CHECK(optimizer_flops(p) / f1 == doctest::Approx(expect / (one.trainable / 8)).epsilon(1e-12));
  const auto ms = memory::model_state(m, p);
  CHECK(ms.optimizer == doctest::Approx(expect * 8).epsilon(1e-12));  // Adam: 8 bytes per parameter it steps
}

TEST_CASE("MoE: capacity and imbalance set the expert GEMMs; CP holds two K/V receive buffers") {
  // Mixtral-8x7B: 8 experts, top-2, h 4096, f 14336. b 1, s 4096: T = 4096
  // tokens, T k = 8192 token-expert pairs, an even 1024 per expert.
  const auto m = test::model("mixtral_8x7b");
  auto up = [&](const spec::PlanSpec& p) { return forward(step(m, p), graph::Op::kUp); };
  auto p = plan(1, 4096);
  CHECK(up(p).gemm.m == 1024);
  CHECK(up(p).gemm.batch == 8);
  p.moe.imbalance = 1.5;  // the busiest expert: 1.5 x 1024
  CHECK(up(p).gemm.m == 1536);
  // Model FLOPs credit the 8192 pairs: 2 x 8192 x 2f x h (gate and up).
  CHECK(up(p).model_flops == doctest::Approx(2 * 8192.0 * 2 * 14336 * 4096));
  p.moe.capacity_factor = 1.25;  // capped at 1.25 x 1024
  CHECK(up(p).gemm.m == 1280);
  // EP 2 (DP 2): 4 local experts receive 8192 pairs on average, 2048 each.
  auto q = plan(1, 4096);
  q.parallel.dp = 2;
  q.parallel.ep = 2;
  q.global_batch = 2;
  CHECK(up(q).gemm.m == 2048);
  CHECK(up(q).gemm.batch == 4);

  // Ring attention (Transformer Engine p2p): two buffers of the local K and
  // V, 2 x 2 T g d e. Llama-3-8B, s 8192, CP 2: T = 4096 local tokens,
  // g 8, d 128, e 2: 2 x 2 x 4096 x 8 x 128 x 2 = 33,554,432 bytes.
  const auto llama = test::model("llama3_8b");
  auto c = plan(1, 8192);
  c.parallel.cp = 2;
  const auto r = engine::evaluate(llama, c, test::gpu("h100_sxm")).memory;
  CHECK(r.cp_kv_buffers == doctest::Approx(33554432.0));
}

TEST_CASE("memory: the caching allocator reserve comes from the plan's framework") {
  // PyTorch reports peak allocated and peak reserved; the framework file
  // gives reserved / allocated - 1 (megatron 0.05, hf 0.10). The reserve and
  // the CUDA context / NCCL workspace (outside the allocator) sum to the total.
  const auto m = test::model("llama2_7b");
  auto p = plan(1, 2048);
  p.parallel.dp = 8;
  p.parallel.zero = 3;
  p.global_batch = 8;
  for (const char* id : {"megatron", "hf"}) {
    CAPTURE(id);
    const auto fw = spec::find_framework(id);
    REQUIRE(fw);
    p.framework = *fw;
    const auto r = engine::evaluate(m, p, test::gpu("h100_sxm")).memory;
    const double reserve = std::string_view(id) == "megatron" ? 0.05 : 0.10;
    const double allocated = r.weights + r.gradients + r.master_weights + r.optimizer + r.activations + r.buffers;
    CHECK(r.allocated == doctest::Approx(allocated));
    CHECK(r.reserved == doctest::Approx(allocated * (1 + reserve)));
    CHECK(r.fragmentation == doctest::Approx(allocated * reserve));
    // CUDA context and cuBLAS 0.75 GiB + NCCL 0.5 GiB.
    CHECK(r.total == doctest::Approx(r.reserved + 1.25 * 1024 * 1024 * 1024));
    CHECK(r.fits == (r.total <= r.capacity));
  }
}

TEST_CASE("op recomputation (torchtitan's per-op policy): every second matmul and every other op run again") {
  // torchtitan's selective_ac_option "op" saves the outputs of aten.mm and SDPA "except every second mm"
  // in each layer's call order wq, wk, wv, wo, w1, w3, w2: wk, wo and w3 run again in backward, as do the
  // norms, RoPE, SiLU, the gate product and the residual adds. Llama-3-8B (h 4096, 32 heads of 128,
  // 8 KV heads: K and V 1024 wide, SwiGLU 14336), b 1, s 4096, bf16, compiled (one kernel per norm).
  const auto m = test::model("llama3_8b");
  auto p = plan(1, 4096);
  p.fusion = spec::Fusion::kCompiled;
  p.recompute = *spec::parse_recompute("op");
  CHECK(spec::to_string(p.recompute) == "op");
  const auto g = step(m, p);
  const double T = 4096, L = 32;
  // Recomputed GEMM FLOPs per token and layer: wk 2 x 4096 x 1024 + wo 2 x 4096 x 4096 + w3 2 x 4096 x 14336
  // = 8,388,608 + 33,554,432 + 117,440,512 = 159,383,552.
  double gemm_flops = 0, flash = 0, other = 0, other_forward = 0;
  for (const auto& k : g.kernels) {
    const bool gemm_or_flash = k.cls == spec::KernelClass::kGemm || k.op == graph::Op::kFlashAttn;
    if (k.phase == spec::Phase::kForward && k.has(graph::kLayer) && !gemm_or_flash) other_forward += k.count;
    if (k.phase != spec::Phase::kRecompute) continue;
    if (k.cls == spec::KernelClass::kGemm) gemm_flops += k.flops * k.count;
    if (k.op == graph::Op::kFlashAttn) flash += k.count;
    if (!gemm_or_flash) other += k.count;
  }
  CHECK(gemm_flops == doctest::Approx(159383552.0 * T * L));
  CHECK(flash == 0);  // SDPA's outputs are saved
  REQUIRE(other_forward > 0);
  CHECK(other == other_forward);  // every norm and pointwise kernel of every layer runs again
  // Saved per token and layer (bytes): the layer input 4096 x 2 + Q and V (4096 + 1024) x 2 + O 4096 x 2
  // + its log-sum-exp 32 heads x 4 + w1's output 14336 x 2 + w2's 4096 x 2
  // = 8192 + 10240 + 8320 + 28672 + 8192 = 63,616.
  double saved = 0;
  for (const auto& k : g.kernels)
    if (k.phase == spec::Phase::kForward && k.has(graph::kLayer))
      saved += (k.saved_bytes + k.saved_core_bytes) * k.saved_fraction * k.count;
  CHECK(saved == doctest::Approx(63616.0 * T * L));
  // Fewer bytes than keeping everything, more than full recomputation's layer inputs alone.
  auto none = p;
  none.recompute = {spec::RecomputeKind::kNone, 0};
  auto full = p;
  full.recompute = {spec::RecomputeKind::kFull, 0};
  const auto mem = [&](const spec::PlanSpec& q) {
    const auto f = memory::facts(step(m, q));
    return f.layer_alive * f.layers + f.recompute_working;
  };
  CHECK(mem(p) < mem(none));
  CHECK(mem(p) > mem(full));
  // torchtitan names it selective_op; Megatron-LM does not offer it.
  auto tt = p;
  tt.framework = spec::find_framework("torchtitan").value();
  CHECK(spec::framework_recompute(spec::framework(tt.framework), "selective_op")->kind == spec::RecomputeKind::kOp);
}

TEST_CASE("memory: torchtitan under PP keeps the stage's weights gathered and its gradients whole in fp32") {
  // torchtitan's fsdp_reshard_after_forward "default" is not pp_enabled
  // (torchtitan/distributed/fsdp.py:129-132), and PyTorch's pipeline stage
  // syncs FSDP gradients only in the last backward, FSDP2 accumulating the
  // unsynced gradient in reduce_dtype float32 (frameworks/torchtitan.yaml
  // pp_params, pp_grads). Llama-3-8B at PP 2, DP 4, ZeRO-3, Adam; the first
  // stage's parameters:
  //   per layer: QKV 4096 x (4096 + 2 x 1024) = 25,165,824, O 16,777,216,
  //              MLP 3 x 4096 x 14336 = 176,160,768, norms 2 x 4096 = 8,192
  //              = 218,112,000
  //   16 layers  = 3,489,792,000; embedding 128256 x 4096 = 525,336,576
  //   Psi_1 = 4,015,128,576
  // weights 2 Psi_1 = 8,030,257,152 (not / 4), gradients 4 Psi_1 =
  // 16,060,514,304 (not 2 Psi_1 / 4), masters 4 Psi_1 / 4 = Psi_1 and Adam
  // 8 Psi_1 / 4 = 2 Psi_1 stay sharded. The fsdp profile (no such fields)
  // shards the weights and gradients: 2 Psi_1 / 4 each.
  const auto m = test::model("llama3_8b");
  spec::PlanSpec p;
  p.framework = *spec::find_framework("torchtitan");
  p.optimizer.kind = spec::OptimizerKind::kAdam;
  p.parallel.pp = 2;
  p.parallel.dp = 4;
  p.parallel.zero = 3;
  constexpr double kPsi1 = 4015128576.0;
  REQUIRE(techniques::local_params(m, p, techniques::PipelineStage::kFirst).weights == kPsi1);
  const auto tt = memory::model_state(m, p, {}, techniques::PipelineStage::kFirst);
  CHECK(tt.weights == doctest::Approx(8030257152.0).epsilon(1e-12));
  CHECK(tt.gradients == doctest::Approx(16060514304.0).epsilon(1e-12));
  CHECK(tt.master_weights == doctest::Approx(kPsi1).epsilon(1e-12));
  CHECK(tt.optimizer == doctest::Approx(2 * kPsi1).epsilon(1e-12));
  p.framework = *spec::find_framework("fsdp");
  const auto fsdp = memory::model_state(m, p, {}, techniques::PipelineStage::kFirst);
  CHECK(fsdp.weights == doctest::Approx(2 * kPsi1 / 4).epsilon(1e-12));
  CHECK(fsdp.gradients == doctest::Approx(2 * kPsi1 / 4).epsilon(1e-12));
  // Without PP torchtitan reshards after forward: sharded as ZeRO-3.
  p.framework = *spec::find_framework("torchtitan");
  p.parallel.pp = 1;
  const auto flat = memory::model_state(m, p);
  const double psi = techniques::local_params(m, p).weights;
  CHECK(flat.weights == doctest::Approx(2 * psi / 4).epsilon(1e-12));
  CHECK(flat.gradients == doctest::Approx(2 * psi / 4).epsilon(1e-12));
}

TEST_CASE("memory: torchtitan's compiled loss keeps no fp32 copy of the logits") {
  // torchtitan compiles its loss with the model (torchtitan/components/loss.py:245-252;
  // frameworks/torchtitan.yaml cross_entropy.compiled: fused). Llama-3-8B, b 1, s 8192:
  // T V = 8192 x 128256 = 1,050,673,152 logits.
  //   eager: the fp32 upcast, 4 T V = 4,202,692,608 bytes alive during the loss, and
  //          log_softmax's fp32 output saved, 4 T V = 4,202,692,608;
  //   compiled: no upcast copy (0), the 16-bit logits saved, 2 T V = 2,101,346,304.
  const auto m = test::model("llama3_8b");
  auto p = plan(1, 8192);
  p.framework = *spec::find_framework("torchtitan");
  p.fusion = spec::Fusion::kEager;
  const auto eager = step(m, p);
  CHECK(memory::facts(eager).logits_transient == doctest::Approx(4202692608.0));
  CHECK(forward(eager, graph::Op::kLoss).saved_bytes == doctest::Approx(4202692608.0));
  p.fusion = spec::Fusion::kCompiled;
  const auto compiled = step(m, p);
  CHECK(memory::facts(compiled).logits_transient == 0);
  CHECK(forward(compiled, graph::Op::kLoss).saved_bytes == doctest::Approx(2101346304.0));
  // A framework whose loss is not compiled keeps the eager loss under compile (hf: no `compiled` key).
  p.framework = *spec::find_framework("hf");
  CHECK(memory::facts(step(m, p)).logits_transient == doctest::Approx(4202692608.0));
}

TEST_CASE("memory and traffic: Megatron's unfused loss works in place on its saved fp32 upcast") {
  // megatron/core/model_parallel_config.py:320: cross_entropy_loss_fusion
  // False by default; cross_entropy.py upcasts the logits, then subtracts the
  // max, exponentiates and normalises in place and saves that fp32 softmax.
  // Llama-3-8B, b 1, s 8192: T V = 1,050,673,152 logits.
  //   megatron (eager, in place): saved 4 T V = 4,202,692,608 bytes, no second fp32 copy;
  //     forward traffic: read (2 + 6 x 4) T V = 27,317,501,952, write 4 x 4 T V = 16,810,770,432;
  //     backward: read 2 x 4 T V = 8,405,385,216, write (4 + 2) T V = 6,304,038,912;
  //   --cross-entropy fused: the 16-bit logits saved, 2 T V = 2,101,346,304.
  const auto m = test::model("llama3_8b");
  auto p = plan(1, 8192);
  p.framework = *spec::find_framework("megatron");
  const auto g = step(m, p);
  CHECK(memory::facts(g).logits_transient == 0);
  const auto& f = forward(g, graph::Op::kLoss);
  CHECK(f.saved_bytes == doctest::Approx(4202692608.0));
  CHECK(f.read_bytes == doctest::Approx(27317501952.0));
  CHECK(f.write_bytes == doctest::Approx(16810770432.0));
  const auto& b = backward(g, graph::Op::kLoss);
  CHECK(b.read_bytes == doctest::Approx(8405385216.0));
  CHECK(b.write_bytes == doctest::Approx(6304038912.0));
  REQUIRE(spec::apply_setting(p, "cross_entropy", "fused") == "");
  CHECK(forward(step(m, p), graph::Op::kLoss).saved_bytes == doctest::Approx(2101346304.0));
}

TEST_CASE("memory: a frozen fp8 LoRA base is held once, quantized; copies by GPU and recipe") {
  // Transformer Engine's quantized_model_init holds only the quantized weights
  // (quantization.py:877-911, "LoRA-like fine-tuning"); a weight quantized for
  // training keeps its row-wise copy and, for dgrad, a column-wise one, which on
  // data-center Blackwell under one scale per tensor is the same buffer
  // (float8_tensor.py:423-427). Llama-2-70B decoder linear weights:
  //   per layer: QKV 8192 x (8192 + 2 x 1024) = 83,886,080, O 67,108,864,
  //              MLP 3 x 8192 x 28672 = 704,643,072 = 855,638,016
  //   x 80 layers: Psi_lin = 68,451,041,280
  // LoRA on q, k, v, o; DP 8, ZeRO-1. Against the same plan in bf16 (Psi_lin at 2 bytes):
  //   B200, delayed (1 copy of 1 byte):   bf16 - 2 Psi_lin + 1 Psi_lin = bf16 - 68,451,041,280
  //   H100, delayed (2 copies of 1 byte): bf16 - 2 Psi_lin + 2 Psi_lin = bf16
  //   B200, mxfp8 (2 copies of 1 + 1/32): bf16 - 2 Psi_lin + 2.0625 Psi_lin = bf16 + 4,278,190,080
  // (before: bf16 + 2 Psi_lin everywhere, the 16-bit base beside two fp8 copies).
  const auto m = test::model("llama2_70b");
  auto p = plan(1, 8192);
  p.finetune.mode = spec::FinetuneMode::kLora;
  p.finetune.targets = spec::kTargetQ | spec::kTargetK | spec::kTargetV | spec::kTargetO;
  p.parallel.dp = 8;
  p.parallel.zero = 1;
  p.global_batch = 8;
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  auto weights = [&](const spec::PlanSpec& q, const char* gpu) {
    return engine::evaluate(m, q, test::gpu(gpu), opt).memory.weights;
  };
  constexpr double kPsiLin = 68451041280.0;
  const double bf16_b200 = weights(p, "b200");
  const double bf16_h100 = weights(p, "h100_sxm");
  auto q = p;
  q.precision = spec::Precision::kFp8;
  CHECK(weights(q, "b200") == doctest::Approx(bf16_b200 - kPsiLin).epsilon(1e-12));
  CHECK(weights(q, "h100_sxm") == doctest::Approx(bf16_h100).epsilon(1e-12));
  q.fp8_recipe = spec::Fp8Recipe::kMxfp8;
  CHECK(weights(q, "b200") == doctest::Approx(bf16_b200 + 4278190080.0).epsilon(1e-12));
  // A frozen base's quantized weights never change: no per-step weight cast.
  for (const auto& k : step(m, q, "b200").kernels) CHECK_FALSE((k.op == graph::Op::kCast && k.phase == spec::Phase::kOptimizer));
}

TEST_CASE("memory: trained fp8 primary weights replace the 16-bit linear weights; the optimizer keeps the master") {
  // Transformer Engine fp8_model_init (NeMo fp8_params): the module holds the
  // fp8 weight and, on Hopper, its fp8 transpose; no 16-bit linear weight.
  // Llama-2-70B, Psi_lin = 68,451,041,280 (the test above), full training,
  // DP 8, ZeRO-1, H100 delayed scaling (2 copies of 1 byte):
  //   weights: bf16 + 2 Psi_lin (fp8 copies beside the 16-bit weight)
  //         -> bf16 - 2 Psi_lin + 2 Psi_lin = bf16 (the copies alone)
  //   i.e. 2 Psi_lin = 136,902,082,560 bytes fewer than plain fp8;
  //   master fp32: 4 Psi / 8 as before; master none: the 16-bit weight in the
  //   optimizer, 2 Psi / 8, and Adam's moments in bf16, 4 Psi / 8.
  const auto m = test::model("llama2_70b");
  auto p = plan(1, 4096);
  p.parallel.dp = 8;
  p.parallel.zero = 1;
  p.global_batch = 8;
  p.precision = spec::Precision::kFp8;
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  auto mem = [&](const spec::PlanSpec& q) { return engine::evaluate(m, q, test::gpu("h100_sxm"), opt).memory; };
  constexpr double kPsiLin = 68451041280.0;
  const auto plain = mem(p);
  auto q = p;
  q.fp8_primary_weights = true;
  const auto primary = mem(q);
  CHECK(primary.weights == doctest::Approx(plain.weights - 2 * kPsiLin).epsilon(1e-12));
  CHECK(primary.master_weights == doctest::Approx(plain.master_weights).epsilon(1e-12));
  const double psi = techniques::local_params(m, p).trainable;
  q.master_weights = spec::MasterWeights::kNone;
  const auto none = mem(q);
  CHECK(none.master_weights == doctest::Approx(2 * psi / 8).epsilon(1e-12));
  CHECK(none.optimizer == doctest::Approx(4 * psi / 8).epsilon(1e-12));
  // Refused: without fp8, and with remainder masters (no bf16 weight to complete).
  auto r = q;
  r.master_weights = spec::MasterWeights::kRemainder;
  CHECK(engine::check_plan(m, r, test::gpu("h100_sxm")).field == "master_weights");
  r = q;
  r.precision = spec::Precision::kBf16;
  CHECK(engine::check_plan(m, r, test::gpu("h100_sxm")).field == "fp8.primary_weights");
}

TEST_CASE("memory: an fp8 linear saves its input's column-wise fp8 copy for wgrad") {
  // Transformer Engine's Linear keeps only the column-wise quantized input for
  // the backward (module/linear.py:614-616). Llama-3-8B, b 1, s 8192: the down
  // projection's input is T x f = 8192 x 14336 = 117,440,512 elements:
  //   bf16 2 bytes: 234,881,024; fp8 (delayed) 1 byte: 117,440,512;
  //   mxfp8 1 + 1/32 bytes (an E8M0 scale per 32): 121,110,528.
  const auto m = test::model("llama3_8b");
  auto p = plan(1, 8192);
  CHECK(forward(step(m, p), graph::Op::kDown).saved_bytes == doctest::Approx(234881024.0));
  p.precision = spec::Precision::kFp8;
  CHECK(forward(step(m, p), graph::Op::kDown).saved_bytes == doctest::Approx(117440512.0));
  p.fp8_recipe = spec::Fp8Recipe::kMxfp8;
  CHECK(forward(step(m, p, "b200"), graph::Op::kDown).saved_bytes == doctest::Approx(121110528.0));
}
