// Extremes: the smallest and largest inputs the loaders accept must give
// correct, finite results or a clear "does not fit" / invalid status, never an
// overflow, a NaN or a crash. Expected numbers are hand calculations stated
// beside each check.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "../../fuzz/harness.hpp"
#include "test_support.hpp"

using namespace ridgeline;
namespace fs = std::filesystem;

namespace {

engine::Prediction eval(const spec::ModelSpec& m, const spec::PlanSpec& p, const spec::HardwareSpec& hw) {
  engine::EvalOptions opt;
  opt.keep_kernels = true;
  return engine::evaluate(m, p, hw, opt);
}

/// Finite, non-negative numbers and a status that agrees with the memory model.
void check_sane(const engine::Prediction& r) {
  CHECK(fuzz::check_prediction(r) == "");
  REQUIRE(r.status != engine::Status::kInvalid);
  CHECK((r.status == engine::Status::kOk) == r.memory.fits);
  for (const auto& k : r.kernels) {
    CAPTURE(k.name);
    CHECK(std::isfinite(k.time_s));
    CHECK(k.time_s >= 0);
    CHECK(std::isfinite(k.flops));
    CHECK(std::isfinite(k.hbm_bytes));
  }
}

/// A dense GPT-style model: layers L, hidden h, heads a (head dim h/a), FFN 4h, vocab V.
spec::ModelSpec gpt(int layers, int hidden, int heads, int vocab, int max_seq) {
  spec::ModelSpec m;
  m.id = m.name = "extreme";
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.head_dim = hidden / heads;
  m.ffn_hidden = 4 * hidden;
  m.vocab = vocab;
  m.max_seq_len = max_seq;
  m.activation = spec::Activation::kGelu;
  m.norm = spec::Norm::kLayerNorm;
  m.position = spec::Position::kRope;
  spec::validate_model(m, "extreme");
  return m;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / ("ridgeline_extremes_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p) << text;
  return p.string();
}

}  // namespace

TEST_CASE("extremes: a one-layer model with one head") {
  const auto m = gpt(1, 64, 1, 256, 128);
  // 12 h^2 per layer + 13 h with biases and LayerNorms, 2 V h embeddings + head, 2h final norm:
  // 12*4096 + 13*64 + 2*256*64 + 2*64 = 49152 + 832 + 32768 + 128 = 82880.
  CHECK(spec::count_params(m).total == 82880);
  for (auto rk : {spec::RecomputeKind::kNone, spec::RecomputeKind::kSelective, spec::RecomputeKind::kFull,
                  spec::RecomputeKind::kSqrt, spec::RecomputeKind::kEvery}) {
    spec::PlanSpec p;
    p.recompute = {rk, rk == spec::RecomputeKind::kEvery ? 4 : 0};  // every:4 with one layer: one segment
    CAPTURE(spec::to_string(p.recompute));
    const auto r = eval(m, p, test::gpu("h100_sxm"));
    check_sane(r);
    CHECK(r.status == engine::Status::kOk);
    CHECK(r.step.tokens_per_step == 128);
    CHECK(r.step.mfu < 0.01);  // a toy model on an H100 is launch-bound
  }
}

TEST_CASE("extremes: a one-token sequence and a one-sequence batch") {
  spec::PlanSpec p;
  p.seq_len = 1;
  const auto r = eval(test::model("llama3_8b"), p, test::gpu("h100_sxm"));
  check_sane(r);
  CHECK(r.step.tokens_per_step == 1);
  // Megatron's model FLOPs: 6 FLOP per token per GEMM weight, i.e. every parameter but the input
  // embedding (a lookup, not a GEMM): 6 (N - V h) = 6 (8.030e9 - 128256 x 4096) = 4.50e10 per step;
  // the attention term 6 q L b s^2 adds 6 x 4096 x 32 = 7.9e5 at s = 1.
  const auto m = test::model("llama3_8b");
  const double gemm_weights = spec::count_params(m).total - static_cast<double>(m.vocab) * m.hidden;
  CHECK(r.step.model_flops == doctest::Approx(6 * gemm_weights + 6.0 * 4096 * 32).epsilon(1e-3));
  CHECK(r.totals.steps == doctest::Approx(r.totals.tokens));  // one token per step
}

TEST_CASE("extremes: a 10-trillion-parameter model") {
  // 350 layers, hidden 49152: 12 L h^2 = 12 * 350 * 49152^2 = 1.0147e13 parameters (+ embeddings).
  const auto m = gpt(350, 49152, 384, 131072, 8192);
  const double n = spec::count_params(m).total;
  CHECK(n == doctest::Approx(12.0 * 350 * 49152.0 * 49152 + 2.0 * 131072 * 49152).epsilon(1e-3));
  CHECK(n > 1e13);
  const auto hw = test::gpu("h100_sxm");
  SUBCASE("one GPU: does not fit, with finite numbers") {
    spec::PlanSpec p;
    REQUIRE(spec::apply_setting(p, "main_grads", "working") == "");  // the ZeRO paper's 16-bit gradients
    const auto r = eval(m, p, hw);
    check_sane(r);
    CHECK(r.status == engine::Status::kDoesNotFit);
    // Mixed-precision AdamW: 16 bytes per parameter (ZeRO paper) -> 1.6e14 bytes of model state.
    CHECK(r.memory.weights + r.memory.gradients + r.memory.master_weights + r.memory.optimizer ==
          doctest::Approx(16 * n).epsilon(1e-6));
  }
  SUBCASE("tp 8, pp 50, dp 250 with ZeRO-1 and full recomputation: 100,000 GPUs") {
    spec::PlanSpec p;
    p.parallel.tp = 8;
    p.parallel.sp = true;
    p.parallel.pp = 50;
    p.parallel.dp = 250;
    p.parallel.zero = 1;
    p.recompute = {spec::RecomputeKind::kFull, 0};
    p.global_batch = 250 * 64;
    const auto r = eval(m, p, hw);
    check_sane(r);
    CHECK(r.step.gpus == 100000);
    CHECK(r.step.mfu > 0.05);
    CHECK(r.step.mfu < 0.8);
    // Chinchilla: 20 tokens per parameter = 2e14 tokens; 6 N D = 1.2e28 FLOP in total.
    CHECK(r.totals.tokens == doctest::Approx(20 * n));
    CHECK(std::isfinite(r.totals.gpu_hours));
  }
}

TEST_CASE("extremes: a one-million-token sequence") {
  const auto m = test::model("llama3_8b");
  const auto hw = test::gpu("h100_sxm");
  spec::PlanSpec p;
  p.seq_len = 1 << 20;
  SUBCASE("flash attention") {
    const auto r = eval(m, p, hw);
    check_sane(r);
    CHECK(r.status == engine::Status::kDoesNotFit);
    CHECK(r.step.tokens_per_step == 1048576);
    // Causal attention FLOPs (Megatron): 6 q L b s^2 = 6 * 4096 * 32 * 2^40 = 8.6e17, far above 6 N s = 5.1e16.
    CHECK(r.step.model_flops > 6.0 * 4096 * 32 * std::pow(2.0, 40));
  }
  SUBCASE("naive attention keeps the s^2 softmax output: 2 a s^2 b bytes per layer = 7.0e13") {
    // Korthikanti et al.'s 5 a s^2 b is softmax output (2) + dropout mask (1) + dropout output (2);
    // Llama has no dropout, so only the 16-bit softmax output stays (PV and softmax backward read it).
    p.attention = spec::AttentionKind::kNaive;
    const auto r = eval(m, p, hw);
    check_sane(r);
    const double scores = 2.0 * 32 * std::pow(2.0, 40);
    CHECK(r.memory.activations_per_layer > scores);
    CHECK(r.memory.activations_per_layer < 1.01 * scores);  // the s b h terms are 0.2% of it
  }
  SUBCASE("context parallel 64 over 8 nodes") {
    p.parallel.cp = 64;
    p.parallel.tp = 8;
    p.parallel.sp = true;
    p.recompute = {spec::RecomputeKind::kFull, 0};
    const auto r = eval(m, p, hw);
    check_sane(r);
    CHECK(r.step.gpus == 512);
  }
}

TEST_CASE("extremes: 100,000 GPUs (dp 12500 x tp 8)") {
  const auto m = test::model("llama3_70b");
  const auto hw = test::gpu("h100_sxm");
  for (int zero : {0, 1, 3}) {
    CAPTURE(zero);
    spec::PlanSpec p;
    p.seq_len = 8192;
    p.parallel.dp = 12500;
    p.parallel.tp = 8;
    p.parallel.sp = true;
    p.parallel.zero = zero;
    p.global_batch = 12500 * 4;
    const auto r = eval(m, p, hw);
    check_sane(r);
    CHECK(r.step.gpus == 100000);
    // 4 micro-batches of 8192 tokens on each of 12500 replicas: 4.096e8 tokens per step.
    CHECK(r.step.tokens_per_step == doctest::Approx(4.096e8));
    CHECK(r.step.micro_batches == 4);
  }
}

TEST_CASE("extremes: the largest values each loader accepts load and evaluate") {
  // Model: every count at its loader maximum that still passes the cross-field checks.
  const std::string model = write_temp("model.yaml",
                                       "name: big\nlayers: 100000\nhidden: 16777216\nheads: 65536\nkv_heads: 1\n"
                                       "ffn_hidden: 67108864\nvocab: 67108864\nmax_seq_len: 1073741824\n");
  const auto m = spec::load_model(model);
  CHECK(m.head_dim == 256);
  CHECK(fuzz::run_model(model) == "");
  // Plan: every whole number at its maximum.
  const std::string plan = write_temp("plan.yaml",
                                      "micro_batch: 16777216\nglobal_batch: 1073741824\nseq_len: 1073741824\n"
                                      "tokens: 1e30\nparallel:\n  dp: 64\n  tp: 4096\n  pp: 4096\n  cp: 4096\n");
  const auto p = spec::load_plan(plan);
  CHECK(p.parallel.tp == 4096);
  CHECK(fuzz::run_plan(plan) == "");
  fs::remove(model);
  fs::remove(plan);
}

TEST_CASE("extremes: a GPU with almost nothing") {
  auto hw = test::gpu("h100_sxm");
  hw.memory_bytes = 1;
  hw.hbm_bytes_per_s = 1;
  hw.sm_count = 1;
  for (auto& x : hw.peak_flop_per_s) x = x > 0 ? 1 : 0;
  hw.interconnect.intra_node_bytes_per_s = 1;
  hw.interconnect.inter_node_bytes_per_s = 1;
  spec::PlanSpec p;
  p.parallel.dp = 8;
  const auto r = eval(test::model("llama3_8b"), p, hw);
  check_sane(r);
  CHECK(r.status == engine::Status::kDoesNotFit);
  // At 1 FLOP/s and 80% GEMM efficiency a step takes at least its model FLOPs per GPU / 0.8
  // (~6e14 s, twenty million years), and is still a finite number.
  CHECK(r.step.time_s >= r.step.model_flops / 8 / 0.8 * (1 - 1e-9));
  CHECK(r.step.time_s > 1e14);
}

TEST_CASE("extremes: invalid layouts are a status, not an exception") {
  const auto m = test::model("llama3_8b");
  const auto hw = test::gpu("h100_sxm");
  auto invalid = [&](spec::PlanSpec p, const char* field) {
    const auto r = eval(m, p, hw);
    CHECK(r.status == engine::Status::kInvalid);
    CHECK(r.problem.field == field);
  };
  spec::PlanSpec p;
  p.parallel.tp = 4096;  // more ranks than heads
  invalid(p, "parallel.tp");
  p = {};
  p.parallel.pp = 33;
  invalid(p, "parallel.pp");
  p = {};
  p.seq_len = 8191;
  p.parallel.cp = 2;
  invalid(p, "parallel.cp");
  p = {};
  p.micro_batch = 0;
  invalid(p, "micro_batch");
}
