// Step graph and technique passes against closed-form expectations.
#include <doctest/doctest.h>

#include <cmath>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/memory/memory.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/techniques/params.hpp"
#include "ridgeline/techniques/passes.hpp"
#include "test_support.hpp"

using namespace ridgeline;
using test::plan;
using test::step;

namespace {


/// Megatron-LM num_floating_point_operations (dense), per micro-batch:
///   6 T [L (h (q + 2 g d) + q h + k h f) + h V] + 6 q L b s^2, k = 3 gated, 2 otherwise.
double megatron_flops(const spec::ModelSpec& m, double b, double s) {
  const double T = b * s, h = m.hidden, q = m.q_dim(), g = m.kv_heads, d = m.head_dim, f = m.ffn_hidden;
  const double k = spec::is_gated(m.activation) ? 3.0 : 2.0;
  return 6 * T * (m.layers * (h * (q + 2 * g * d) + q * h + k * h * f) + h * m.vocab) +
         6 * q * m.layers * b * s * s;
}

double forward_layer_flops(const graph::Graph& g, bool gemm_only) {
  double f = 0;
  for (const auto& k : g.kernels)
    if (k.phase == spec::Phase::kForward && k.has(graph::kLayer) &&
        (!gemm_only || k.cls == spec::KernelClass::kGemm || k.cls == spec::KernelClass::kAttention))
      f += k.model_flops * k.count;
  return f;
}

double phase_model_flops(const graph::Graph& g, spec::Phase ph) {
  double f = 0;
  for (const auto& k : g.kernels)
    if (k.phase == ph) f += k.model_flops * k.count;
  return f;
}

/// A GPT-style layer as Korthikanti et al. analyse it: dropout, LayerNorm,
/// GeLU, eager attention, 16-bit activations.
spec::PlanSpec korthikanti_plan(int b, int s) {
  auto p = plan(b, s);
  p.attention = spec::AttentionKind::kNaive;
  p.fusion = spec::Fusion::kEager;
  return p;
}

}  // namespace

TEST_CASE("graph: model FLOPs equal Megatron's closed form (dense GPT and GQA+SwiGLU)") {
  for (const char* id : {"gpt3_1.3b", "llama3_8b", "llama2_70b"}) {
    CAPTURE(id);
    const auto m = test::model(id);
    for (auto att : {spec::AttentionKind::kNaive, spec::AttentionKind::kFlash2}) {
      auto p = plan(2, 2048);
      p.attention = att;
      const auto g = step(m, p);
      const auto t = graph::totals(g);
      CHECK(t.model_flops == doctest::Approx(megatron_flops(m, 2, 2048)).epsilon(1e-12));
    }
  }
}

TEST_CASE("graph: the unhalved attention convention doubles the s^2 term (Narayanan et al. 2021)") {
  const auto m = test::model("korthikanti_22b");
  auto p = plan(1, 2048);
  p.attention_flops = spec::AttentionFlops::kFull;
  const auto t = graph::totals(step(m, p));
  // 72 B s L h^2 (1 + s / 6h + V / 12 h L) for B = 1 (GPT, f = 4h, g = a).
  const double h = m.hidden, s = 2048, L = m.layers, V = m.vocab;
  CHECK(t.model_flops == doctest::Approx(72 * s * L * h * h * (1 + s / (6 * h) + V / (12 * h * L))).epsilon(1e-12));
}

TEST_CASE("graph: GPT layer activations equal Korthikanti et al.'s s b h (34 + 5 a s / h)") {
  const auto m = test::model("korthikanti_22b");  // h 6144, a 64, dropout 0.1, LayerNorm, GeLU
  const double s = 2048, b = 2, h = m.hidden, a = m.heads;
  const auto g = step(m, korthikanti_plan(2, 2048));
  const double expected = s * b * h * (34 + 5 * a * s / h);
  CHECK(memory::layer_saved_bytes(g) == doctest::Approx(expected).epsilon(0.01));

  SUBCASE("tensor parallel: s b h (10 + 24/t + 5 a s / (h t))") {
    auto p = korthikanti_plan(2, 2048);
    p.parallel.tp = 8;
    const double t = 8;
    CHECK(memory::layer_saved_bytes(step(m, p)) ==
          doctest::Approx(s * b * h * (10 + 24 / t + 5 * a * s / (h * t))).epsilon(0.01));
  }
  SUBCASE("tensor + sequence parallel: s b h (34 + 5 a s / h) / t") {
    auto p = korthikanti_plan(2, 2048);
    p.parallel.tp = 8;
    p.parallel.sp = true;
    CHECK(memory::layer_saved_bytes(step(m, p)) == doctest::Approx(expected / 8).epsilon(0.01));
  }
  SUBCASE("selective recomputation with TP + SP: 34 s b h / t") {
    auto p = korthikanti_plan(2, 2048);
    p.parallel.tp = 8;
    p.parallel.sp = true;
    p.recompute = {spec::RecomputeKind::kSelective, 0};
    const auto gs = step(m, p);
    CHECK(memory::layer_saved_bytes(gs) == doctest::Approx(34 * s * b * h / 8).epsilon(0.01));
    // The extra FLOPs equal the attention core's forward (QK^T and PV).
    double core = 0;
    for (const auto& k : gs.kernels)
      if (k.phase == spec::Phase::kForward && k.has(graph::kAttnCore)) core += k.model_flops * k.count;
    CHECK(core > 0);
    CHECK(phase_model_flops(gs, spec::Phase::kRecompute) == doctest::Approx(core));
  }
  SUBCASE("selective without parallelism: 34 s b h") {
    auto p = korthikanti_plan(2, 2048);
    p.recompute = {spec::RecomputeKind::kSelective, 0};
    CHECK(memory::layer_saved_bytes(step(m, p)) == doctest::Approx(34 * s * b * h).epsilon(0.01));
  }
  SUBCASE("FlashAttention removes the 5 a s / h term") {
    auto p = korthikanti_plan(2, 2048);
    p.attention = spec::AttentionKind::kFlash2;
    // 34 s b h plus the fp32 log-sum-exp (4 a s b bytes, 0.1% here).
    CHECK(memory::layer_saved_bytes(step(m, p)) == doctest::Approx(34 * s * b * h).epsilon(0.01));
  }
}

TEST_CASE("recompute: full recomputation keeps the block inputs and adds one forward") {
  const auto m = test::model("korthikanti_22b");
  auto p = korthikanti_plan(1, 2048);
  const auto base = step(m, p);
  p.recompute = {spec::RecomputeKind::kFull, 0};
  const auto g = step(m, p);
  const double s = 2048, b = 1, h = m.hidden;
  // Only the layer input stays alive per layer (every layer is a checkpoint):
  // the first LayerNorm's saved input, 2 s b h at 16 bits, with its fp32 mean
  // and rstd per row (native_layer_norm's saved tensors), 8 s b.
  const auto f = memory::facts(g);
  CHECK(f.layer_alive == doctest::Approx(2 * s * b * h + 8 * s * b));
  // Working set: one block's saved tensors while its backward runs.
  CHECK(f.recompute_working == doctest::Approx(memory::layer_saved_bytes(base)));
  // GEMM (and attention) FLOPs rise by exactly one forward of the layers:
  // recompute = forward, so (forward + backward + recompute) / (forward + backward) = 4/3 for the layers.
  const double fwd = forward_layer_flops(g, true);
  CHECK(phase_model_flops(g, spec::Phase::kRecompute) == doctest::Approx(fwd));
  double bwd_layers = 0;
  for (const auto& k : g.kernels)
    if (k.phase == spec::Phase::kBackward && k.has(graph::kLayer)) bwd_layers += k.model_flops * k.count;
  CHECK((fwd + bwd_layers + fwd) / (fwd + bwd_layers) == doctest::Approx(4.0 / 3.0));
}

TEST_CASE("recompute: sqrt(L) checkpointing (Chen et al. 2016) keeps O(sqrt L) layer inputs") {
  // Segments of ceil(sqrt L) layers: L = 16 -> 4, 64 -> 8, 100 -> 10 checkpoints.
  const spec::Recompute r{spec::RecomputeKind::kSqrt, 0};
  CHECK(techniques::checkpoint_count(r, 16) == 4);
  CHECK(techniques::checkpoint_count(r, 64) == 8);
  CHECK(techniques::checkpoint_count(r, 100) == 10);
  // every:K (Megatron uniform): ceil(L / K) checkpoints of K-layer segments.
  CHECK(techniques::checkpoint_count({spec::RecomputeKind::kEvery, 4}, 30) == 8);
  CHECK(techniques::segment_layers({spec::RecomputeKind::kEvery, 4}, 30) == 4);
}

TEST_CASE("attention: doubling s grows naive HBM bytes ~4x and flash bytes exactly 2x") {
  // Llama-2-7B (no dropout), b = 1, bf16, eager. Naive core per layer (elements
  // S = a s^2, Q = K = V = O = s h, e = 2 bytes, 1-byte mask of s^2):
  //   QK^T reads Q, K and writes S; scale reads/writes S; mask reads S and the
  //   s^2 mask, writes S; softmax reads/writes S; PV reads S and V, writes O:
  //   bytes(s) = e (4 s h) + 8 e a s^2 + s^2.
  // Flash: reads Q, K, V once (K/V of the heads in flight fit in L2), writes O
  //   and the fp32 log-sum-exp: bytes(s) = e (4 s h) + 4 a s, linear, ratio 2.
  const auto m = test::model("llama2_7b");
  const double h = m.hidden, a = m.heads, e = 2;
  auto naive_bytes = [&](double s) { return e * 4 * s * h + 8 * e * a * s * s + s * s; };
  auto core_bytes = [&](spec::AttentionKind kind, int s) {
    auto p = plan(1, s);
    p.attention = kind;
    p.fusion = spec::Fusion::kEager;
    double bytes = 0;
    for (const auto& k : step(m, p).kernels)
      if (k.phase == spec::Phase::kForward && (k.has(graph::kAttnCore) || k.op == graph::Op::kFlashAttn))
        bytes += k.hbm_bytes();
    return bytes;
  };
  const double n1 = core_bytes(spec::AttentionKind::kNaive, 2048), n2 = core_bytes(spec::AttentionKind::kNaive, 4096);
  CHECK(n1 == doctest::Approx(naive_bytes(2048)));
  CHECK(n2 / n1 == doctest::Approx(naive_bytes(4096) / naive_bytes(2048)));
  CHECK(n2 / n1 > 3.9);
  const double f1 = core_bytes(spec::AttentionKind::kFlash2, 2048), f2 = core_bytes(spec::AttentionKind::kFlash2, 4096);
  CHECK(f1 == doctest::Approx(e * 4 * 2048 * h + 4 * a * 2048));
  CHECK(f2 / f1 == doctest::Approx(2.0));
}

TEST_CASE("attention: under context parallelism the ring's cp steps are cp calls, forward and backward") {
  // Llama-2-7B at 8,192 tokens, CP 4: a rank's 2,048 queries against all
  // 8,192 keys (graph: q_len s / cp, kv_len s), one fused call a ring step
  // (Transformer Engine's AttnFuncWithCP): 4 forward launches, and 2 a call
  // backward (the dO . O preprocessing and the main loop): 8.
  const auto m = test::model("llama2_7b");
  auto p = plan(1, 8192);
  p.attention = spec::AttentionKind::kFlash2;
  p.parallel.cp = 4;
  int seen = 0;
  for (const auto& k : step(m, p).kernels) {
    if (k.op != graph::Op::kFlashAttn) continue;
    CHECK(k.gemm.m == 2048);
    CHECK(k.gemm.n == 8192);
    if (k.phase == spec::Phase::kForward) {
      CHECK(k.launches == 4);
      ++seen;
    }
    if (k.phase == spec::Phase::kBackward) {
      CHECK(k.launches == 8);
      ++seen;
    }
  }
  CHECK(seen == 2);
  p.parallel.cp = 1;
  for (const auto& k : step(m, p).kernels)
    if (k.op == graph::Op::kFlashAttn) CHECK(k.launches == (k.phase == spec::Phase::kBackward ? 2 : 1));
}

TEST_CASE("attention: the CP ring's merges cost a pass over the rank's chunk per step, by the framework's kernels; "
          "recomputation re-runs the ring") {
  // Llama-2-7B (32 heads of 128, MHA) at 8,192 tokens on CP 4, one
  // sequence: a rank's chunk T = 2,048 tokens. Forward, Transformer
  // Engine's out correction reads the step's output and the running one and
  // writes it (6 bytes an element of bf16): O = T x 32 x 128 = 8,388,608
  // elements, x 4 steps x 6 = 201,326,592 bytes, one kernel a step.
  // Backward, dQ, dK and dV added each step: T x (32 x 128 + 32 x 256) =
  // 25,165,824 elements x 4 x 6 = 603,979,776 bytes, three kernels a step.
  // torchtitan (PyTorch's fp32 _SDPAMerger): 38 bytes an output element eager.
  const auto m = test::model("llama2_7b");
  auto p = plan(1, 8192);
  p.attention = spec::AttentionKind::kFlash2;
  p.parallel.cp = 4;
  auto merges = [&](const spec::PlanSpec& q) {
    std::vector<graph::Kernel> out;
    for (const auto& k : step(m, q).kernels)
      if (k.name == "cp_out_merge" || k.name == "cp_grad_merge") out.push_back(k);
    return out;
  };
  auto ks = merges(p);
  REQUIRE(ks.size() == 2);
  CHECK(ks[0].phase == spec::Phase::kForward);
  CHECK(ks[0].hbm_bytes() == doctest::Approx(201326592.0));
  CHECK(ks[0].launches == 4);
  CHECK(ks[0].count == m.layers);
  CHECK(ks[1].phase == spec::Phase::kBackward);
  CHECK(ks[1].hbm_bytes() == doctest::Approx(603979776.0));
  CHECK(ks[1].launches == 12);
  // Full recomputation re-runs the forward ring: its K/V exchange and merge.
  p.recompute.kind = spec::RecomputeKind::kFull;
  ks = merges(p);
  REQUIRE(ks.size() == 3);
  CHECK(ks[1].phase == spec::Phase::kRecompute);
  CHECK(ks[1].hbm_bytes() == doctest::Approx(201326592.0));
  int rerun = 0;
  for (const auto& k : step(m, p).kernels)
    if (k.name == "cp_kv_all_gather" && k.phase == spec::Phase::kRecompute) rerun += static_cast<int>(k.count);
  CHECK(rerun == m.layers);
  p.recompute = {};
  p.framework = *spec::find_framework("torchtitan");
  ks = merges(p);
  REQUIRE(ks.size() == 2);
  CHECK(ks[0].hbm_bytes() == doctest::Approx(8388608.0 * 4 * 38));
  CHECK(ks[0].launches == 4 * 7);
  // Compiled, the merge's chain is one fused kernel: 4 + 2 + 4 bytes.
  p.fusion = spec::Fusion::kCompiled;
  ks = merges(p);
  CHECK(ks[0].hbm_bytes() == doctest::Approx(8388608.0 * 4 * 10));
  CHECK(ks[0].launches == 4 * 2);
  p.fusion = spec::Fusion::kEager;
  // No ring, no merge.
  p.parallel.cp = 1;
  CHECK(merges(p).empty());
}

TEST_CASE("attention: packed documents run as their own sequences (varlen / THD), the work N / s of one sequence") {
  // Llama-2-7B (32 heads of 128), one sequence of 4096 packed from 8
  // documents of 512, FlashAttention-2: the kernel runs 8 sequences of 512
  // (flash-attn varlen over cu_seqlens). Causal model FLOPs per layer:
  // 8 x 4 x 32 x 512^2 x 128 / 2 = 17,179,869,184, against one sequence's
  // 4 x 32 x 4096^2 x 128 / 2 = 137,438,953,472: N / s = 1/8. Under CP 2
  // each document is split over the two ranks (TE's THD format, 2 cp chunks
  // a document): a rank's 256 queries of each against its 512 keys, half
  // the work, in the ring's 2 calls.
  const auto m = test::model("llama2_7b");
  auto p = plan(1, 4096);
  p.attention = spec::AttentionKind::kFlash2;
  auto forward = [&](const spec::PlanSpec& q) {
    for (const auto& k : step(m, q).kernels)
      if (k.op == graph::Op::kFlashAttn && k.phase == spec::Phase::kForward) return k;
    return graph::Kernel{};
  };
  const graph::Kernel whole = forward(p);
  CHECK(whole.model_flops == doctest::Approx(137438953472.0));
  p.packed_doc_len = 512;
  const graph::Kernel packed = forward(p);
  CHECK(packed.model_flops == doctest::Approx(17179869184.0));
  CHECK(packed.gemm.m == 512);
  CHECK(packed.gemm.n == 512);
  CHECK(packed.gemm.batch == 8 * 32);
  CHECK(packed.launches == 1);
  // Q, K, V and O are the same tokens either way.
  CHECK(packed.saved_bytes == doctest::Approx(whole.saved_bytes));
  p.parallel.cp = 2;
  const graph::Kernel ring = forward(p);
  CHECK(ring.model_flops == doctest::Approx(17179869184.0 / 2));
  CHECK(ring.gemm.m == 256);
  CHECK(ring.gemm.n == 512);
  CHECK(ring.launches == 2);
  // A document as long as the sequence is the sequence.
  p.parallel.cp = 1;
  p.packed_doc_len = 4096;
  CHECK(forward(p).model_flops == doctest::Approx(whole.model_flops));
  // Longer than the sequence: refused, naming the field.
  p.packed_doc_len = 8192;
  const engine::Problem e = engine::check_plan(m, p, test::gpu("h100_sxm"));
  CHECK(e.field == "packed_doc_len");
  CHECK(e.message == "packed documents of 8192 tokens exceed the sequence length 4096");
}

TEST_CASE("fusion: fused chains read and write each tensor once") {
  // GPT-3 1.3B (bias, dropout), b = 1, s = 2048: N = s h elements of 2 bytes.
  const auto m = test::model("gpt3_1.3b");
  const double N = 2048.0 * m.hidden, F = 2048.0 * m.ffn_hidden, e = 2;
  auto chain = [&](spec::Fusion f, graph::FuseGroup grp, double& launches) {
    auto p = plan(1, 2048);
    p.fusion = f;
    double bytes = 0;
    launches = 0;
    for (const auto& k : step(m, p).kernels)
      if (k.phase == spec::Phase::kForward && k.group == grp) bytes += k.hbm_bytes(), launches += k.launches;
    return bytes;
  };
  double le = 0, lf = 0;
  // bias + dropout + residual. Eager: bias reads x and b, writes y (2eN + bias);
  // dropout reads y, writes z and a 1-byte mask (2eN + N); residual reads z and r,
  // writes out (3eN): 7eN + N + bias. Fused: reads x, b, r; writes out and mask: 3eN + N + bias.
  const double bias = m.hidden * e;
  const double eager = chain(spec::Fusion::kEager, graph::FuseGroup::kBiasDropoutAdd2, le);
  const double fused = chain(spec::Fusion::kFused, graph::FuseGroup::kBiasDropoutAdd2, lf);
  CHECK(eager == doctest::Approx(7 * e * N + N + bias));
  CHECK(fused == doctest::Approx(3 * e * N + N + bias));
  CHECK(eager / fused == doctest::Approx((7 * e * N + N + bias) / (3 * e * N + N + bias)));  // 2.14x
  CHECK(le == 3);
  CHECK(lf == 1);
  // bias + GeLU over the FFN width: eager 2 x (read + write) = 4eF + bias; fused 2eF + bias: 2x.
  const double ge = chain(spec::Fusion::kEager, graph::FuseGroup::kBiasAct, le);
  const double gf = chain(spec::Fusion::kFused, graph::FuseGroup::kBiasAct, lf);
  const double fbias = m.ffn_hidden * e;
  CHECK(ge == doctest::Approx(4 * e * F + fbias));
  CHECK(gf == doctest::Approx(2 * e * F + fbias));
  CHECK(le == 2);
  CHECK(lf == 1);
}

TEST_CASE("fusion: squared ReLU is relu then square, two kernels eager and one fused, with nothing more saved") {
  // The Nemotron-4 15B block (tests/data/hf/nemotron4_15b), b = 1, s = 2048:
  // F = s f elements of 2 bytes. Eager (transformers' ReLUSquaredActivation:
  // F.relu, then torch.square): each reads and writes F, 4eF; fused
  // (Megatron-Core's squared_relu under @jit_fuser): 2eF, one launch.
  auto m = spec::load_hf_config(std::string(RIDGELINE_SOURCE_DIR) + "/tests/data/hf/nemotron4_15b/config.json");
  const double F = 2048.0 * m.ffn_hidden, e = 2;
  auto act = [&](spec::Fusion f, double& launches, double& saved) {
    auto p = plan(1, 2048);
    p.fusion = f;
    double bytes = 0;
    launches = saved = 0;
    for (const auto& k : step(m, p).kernels)
      if (k.phase == spec::Phase::kForward && k.group == graph::FuseGroup::kBiasAct)
        bytes += k.hbm_bytes(), launches += k.launches, saved += k.saved_bytes;
    return bytes;
  };
  double le = 0, lf = 0, se = 0, sf = 0;
  CHECK(act(spec::Fusion::kEager, le, se) == doctest::Approx(4 * e * F));
  CHECK(act(spec::Fusion::kFused, lf, sf) == doctest::Approx(2 * e * F));
  CHECK(le == 2);
  CHECK(lf == 1);
  // Saved: the ReLU's output once (pow saves the same tensor), as for relu.
  CHECK(se == doctest::Approx(e * F));
  CHECK(sf == doctest::Approx(e * F));
  m.activation = spec::Activation::kRelu;
  double lr = 0, sr = 0;
  CHECK(act(spec::Fusion::kEager, lr, sr) == doctest::Approx(2 * e * F));
  CHECK(lr == 1);
  CHECK(sr == doctest::Approx(e * F));
}

TEST_CASE("fusion: compiled merges more than fused, and CUDA graphs cut launch cost") {
  const auto m = test::model("llama3_8b");
  auto launches = [&](spec::Fusion f) {
    auto p = plan(1, 4096);
    p.fusion = f;
    return graph::totals(step(m, p)).launches;
  };
  CHECK(launches(spec::Fusion::kEager) > launches(spec::Fusion::kFused));
  CHECK(launches(spec::Fusion::kFused) > launches(spec::Fusion::kCompiled));
  CHECK(launches(spec::Fusion::kCompiled) >= launches(spec::Fusion::kXla));
}

TEST_CASE("optimizer state bytes per parameter") {
  techniques::LocalParams lp;
  lp.trainable = lp.matrix_elems = 4096.0 * 11008;
  lp.matrix_rows_cols = 4096 + 11008;
  spec::OptimizerSpec o;
  o.kind = spec::OptimizerKind::kAdamW;
  CHECK(techniques::optimizer_state_bytes(o, lp) == 8.0);  // fp32 m and v
  o.kind = spec::OptimizerKind::kAdafactor;
  // Shazeer & Stern 2018: a 4096 x 11008 matrix keeps 4096 + 11008 fp32 statistics.
  CHECK(techniques::optimizer_state_bytes(o, lp) * lp.trainable == doctest::Approx(4.0 * (4096 + 11008)));
  o.kind = spec::OptimizerKind::kLion;
  CHECK(techniques::optimizer_state_bytes(o, lp) == 4.0);
  o.kind = spec::OptimizerKind::kAdam8bit;
  CHECK(techniques::optimizer_state_bytes(o, lp) == doctest::Approx(2.0).epsilon(0.01));
  o.kind = spec::OptimizerKind::kSgd;
  o.momentum = false;
  CHECK(techniques::optimizer_state_bytes(o, lp) == 0.0);
}

TEST_CASE("LoRA and QLoRA") {
  // PEFT on Llama-2-7B, r = 8 on q and v: 32 layers x 2 x 8 x (4096 + 4096) = 4,194,304 trainable.
  const auto m = test::model("llama2_7b");
  auto p = plan(1, 2048);
  p.finetune.mode = spec::FinetuneMode::kLora;
  p.finetune.rank = 8;
  p.finetune.targets = spec::kTargetQ | spec::kTargetV;
  CHECK(techniques::local_params(m, p).trainable == 4194304.0);
  // A frozen base has no weight-gradient GEMMs.
  int wgrad = 0;
  for (const auto& k : step(m, p).kernels)
    if (k.phase == spec::Phase::kBackward && k.cls == spec::KernelClass::kGemm && k.has(graph::kFrozen) &&
        k.name.find("wgrad") != std::string_view::npos)
      ++wgrad;
  CHECK(wgrad == 0);

  SUBCASE("the B adapter's backward reads dY and writes its own gradients, not the base output") {
    // q and v: B is [T, r] x [r, 4096] per target, T = 2048 tokens, r = 8,
    // bf16. Forward: reads A's output (T x 2r), B (2 x r x 4096) and the
    // base output it adds into (T x 8192), writes the sum (T x 8192). The
    // add passes dY through, so the backward reads no base output: dgrad
    // reads dY (T x 8192) and B, writes dA_out (T x 2r); wgrad reads dY and
    // A's output, writes dB (2 x r x 4096). Per layer, x 2 bytes:
    const double T = 2048, r = 8, out = 8192, e = 2;
    const double dgrad = (T * out + r * out) * e + T * 2 * r * e;
    const double wgrad_b = (T * out + T * 2 * r) * e + r * out * e;
    int seen = 0;
    for (const auto& k : step(m, p).kernels) {
      if (k.name == "lora_b.dgrad") {
        CHECK(k.read_bytes + k.write_bytes == doctest::Approx(dgrad));
        ++seen;
      }
      if (k.name == "lora_b.wgrad") {
        CHECK(k.read_bytes + k.write_bytes == doctest::Approx(wgrad_b));
        ++seen;
      }
    }
    CHECK(seen == 2);
  }

  SUBCASE("QLoRA fits a 65B model's fine-tune under 48 GB (Dettmers et al. 2023)") {
    const auto big = test::model("llama1_65b");
    auto q = plan(1, 512);
    q.finetune.mode = spec::FinetuneMode::kQlora;
    q.finetune.rank = 64;
    q.finetune.targets = 127;  // all linear layers, as in the paper
    q.recompute = {spec::RecomputeKind::kFull, 0};
    q.optimizer.kind = spec::OptimizerKind::kAdamW;
    REQUIRE(spec::apply_setting(q, "main_grads", "working") == "");  // the adapters' bf16 gradients (qlora.py)
    const auto pred = engine::evaluate(big, q, test::gpu("l40s"));
    const auto& mm = pred.memory;
    MESSAGE("QLoRA 65B: weights ", mm.weights / 1e9, " GB, gradients ", mm.gradients / 1e9, " GB, optimizer ",
            mm.optimizer / 1e9, " GB, activations ", mm.activations / 1e9, " GB, total ", mm.total / 1e9, " GB");
    // NF4 + double quantization, 4.127 bits (QLoRA Sec. 3), for the decoder's
    // linear weights only: 80 x (4 h^2 + 3 h f) = 64.2B (h 8192, f 22016) ->
    // 33.1 GB; qlora.py keeps the embedding and LM head in bf16 (2 x 32000 x
    // 8192 x 2 bytes = 1.05 GB) and the norms in fp32 ((2 x 80 + 1) x 8192 x 4);
    // the adapters train in bf16.
    const double h = 8192, f = 22016, V = 32000;
    CHECK(mm.weights == doctest::Approx(80 * (4 * h * h + 3 * h * f) * 4.127 / 8 + 2 * V * h * 2 + 161 * h * 4 +
                                        techniques::local_params(big, q).trainable * 2).epsilon(1e-12));
    // Fits on the 48 GB GPU (L40S: 48.3e9 bytes): the paper's claim.
    CHECK(pred.status == engine::Status::kOk);
    CHECK(mm.total < test::gpu("l40s").memory_bytes);
  }
}

TEST_CASE("fusion: Megatron's fused softmax takes at most 4096 keys; past that scale, mask and softmax run apart") {
  // megatron/core/fusions/fused_softmax.py, FusedScaleMaskSoftmax.is_kernel_available: "16 < sk <= 4096";
  // otherwise forward_torch_softmax runs the three PyTorch ops. GPT-3 1.3B (16 heads), naive attention,
  // b = 1: the scores are a s^2 = 16 s^2 elements of 2 bytes. Fused: one pass reads the scores (and the
  // s^2-byte mask) and writes them once: 2 x 2 x 16 s^2 + s^2 = 65 s^2 bytes. Apart: scale reads and writes
  // (64 s^2), mask reads, reads the mask and writes (65 s^2), softmax reads and writes (64 s^2): 193 s^2.
  const auto m = test::model("gpt3_1.3b");
  REQUIRE(m.heads == 16);
  auto softmax = [&](int s, double& launches) {
    auto p = plan(1, s);
    p.fusion = spec::Fusion::kFused;
    p.attention = spec::AttentionKind::kNaive;
    double bytes = 0;
    launches = 0;
    for (const auto& k : step(m, p).kernels)
      if (k.phase == spec::Phase::kForward && k.cls == spec::KernelClass::kSoftmax)
        bytes += k.hbm_bytes(), launches += k.launches;  // one layer's kernels (each counted L times)
    return bytes;
  };
  double l4 = 0, l8 = 0;
  const double at4096 = softmax(4096, l4), at8192 = softmax(8192, l8);
  const double s4 = 4096.0 * 4096, s8 = 8192.0 * 8192;
  CHECK(at4096 == doctest::Approx(65 * s4));
  CHECK(l4 == 1);
  CHECK(at8192 == doctest::Approx(193 * s8));
  CHECK(l8 == 3);
}

TEST_CASE("sliding-window attention: GPT-OSS's windowed layers cost their window (FLOPs and key blocks)") {
  // GPT-OSS-120B, one sequence of 4096, TP 1, FlashAttention-2 (forward
  // tile 128 x 128 for head dim 64, flash_fwd_launch_template.h): 64 heads
  // of 64. Full causal layers: model FLOPs 4 x 64 x 4096^2 x 64 / 2 =
  // 137,438,953,472. Windowed layers (w 128): the pairs inside the window
  // 4096 x 128 - 128 x 127 / 2 = 516,160, x 4 x 64 x 64 = 8,456,765,440; a
  // query block of 128 rows needs keys [i - 127, i + 127]: 2 key blocks,
  // so the kernel runs 4 x 64 x 4096 x 256 x 64 = 17,179,869,184 FLOPs.
  // 18 layers of each.
  const auto m = test::model("gpt_oss_120b");
  spec::PlanSpec p;
  p.seq_len = 4096;
  p.attention = spec::AttentionKind::kFlash2;
  p.attention_given = true;
  graph::Graph g;
  techniques::build_step(g, m, p, test::gpu("h100_sxm"));
  int seen = 0;
  for (const auto& k : g.kernels) {
    if (k.phase != spec::Phase::kForward || k.cls != spec::KernelClass::kAttention) continue;
    ++seen;
    CHECK(k.count == 18);
    if (k.name == "flash_attention_window") {
      CHECK(k.model_flops == doctest::Approx(8456765440.0));
      CHECK(k.flops == doctest::Approx(17179869184.0));
      CHECK(k.gemm.n == 256);
      CHECK(!k.has(graph::kCausal));
    } else {
      CHECK(k.model_flops == doctest::Approx(137438953472.0));
    }
  }
  CHECK(seen == 2);
}
