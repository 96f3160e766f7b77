// Megatron-Core's selective recomputation by module (--recompute-modules,
// megatron/core/transformer/transformer_config.py recompute_modules): what
// each module frees and what runs again. Expected values are hand
// calculations from the models' config.json files: DeepSeek-V3 (h 7168, 128
// heads, q_lora_rank 1536, kv_lora_rank 512, qk_nope 128, qk_rope 64, v 128,
// 8 of 256 routed experts of 2048, 1 shared expert of 2048, 3 dense first
// layers, 61 layers) and Llama-3-8B (h 4096, 32 heads, 8 KV heads, FFN
// 14336, 32 layers); bf16 activations (2 bytes) unless a case says fp8.
#include <doctest/doctest.h>

#include "ridgeline/graph/graph.hpp"
#include "ridgeline/spec/plan.hpp"
#include "test_support.hpp"

using namespace ridgeline;

namespace {

const graph::Kernel* find(const graph::Graph& g, std::string_view name, spec::Phase phase = spec::Phase::kForward) {
  for (const auto& k : g.kernels)
    if (k.name == name && k.phase == phase) return &k;
  return nullptr;
}

spec::PlanSpec plan_with(const std::string& recompute, int seq = 4096) {
  auto p = test::plan(1, seq);
  p.attention = spec::AttentionKind::kFlash2;
  p.recompute = *spec::parse_recompute(recompute);
  return p;
}

/// Bytes the recompute-phase kernels rebuild at once (the working set: each
/// copy's saved bytes x its alive fraction x its count).
double rebuilt(const graph::Graph& g) {
  double b = 0;
  for (const auto& k : g.kernels)
    if (k.phase == spec::Phase::kRecompute) b += k.saved_bytes * k.saved_fraction * k.count;
  return b;
}

/// FLOPs of the recompute-phase GEMMs per micro-batch.
double recompute_gemm_flops(const graph::Graph& g) {
  double f = 0;
  for (const auto& k : g.kernels)
    if (k.phase == spec::Phase::kRecompute && k.cls == spec::KernelClass::kGemm) f += k.flops * k.count;
  return f;
}

}  // namespace

TEST_CASE("recompute modules: the words, their order and the default") {
  const auto r = spec::parse_recompute("selective:moe_act+layernorm");
  REQUIRE(r.has_value());
  CHECK(r->kind == spec::RecomputeKind::kSelective);
  CHECK(r->modules == (spec::kRecomputeMoeAct | spec::kRecomputeLayernorm));
  CHECK(spec::to_string(*r) == "selective:layernorm+moe_act");
  // "selective" alone is Megatron-Core's default, ["core_attn"].
  CHECK(spec::parse_recompute("selective")->modules == spec::kRecomputeCoreAttn);
  CHECK(spec::to_string(*spec::parse_recompute("selective:core_attn")) == "selective");
  CHECK_FALSE(spec::parse_recompute("selective:moe").has_value());  // the whole MoE layer: not modelled
  CHECK_FALSE(spec::parse_recompute("selective:").has_value());
  const auto bad = test::run_cli("predict --gpu h100_sxm --model llama3_8b --recompute selective:moe");
  CHECK(bad.status == 2);
  CHECK(bad.out.empty());
  CHECK(bad.err.find("--recompute") != std::string::npos);
}

TEST_CASE("recompute mla_up_proj: attention keeps no Q, K, V; the up-projections run again (DeepSeek-V3)") {
  const auto m = test::model("deepseek_v3");
  const double T = 4096;
  const auto plain = test::step(m, plan_with("none"));
  const auto g = test::step(m, plan_with("selective:mla_up_proj"));
  // Q and K 128 heads x 192 x 2 bytes, V 128 x 128 x 2: 49,152 + 49,152 + 32,768 = 131,072 per token;
  // the log-sum-exp, 128 x 4 = 512 per token, stays.
  CHECK(find(plain, "flash_attention")->saved_bytes / T == doctest::Approx(131584.0));
  CHECK(find(g, "flash_attention")->saved_bytes / T == doctest::Approx(512.0));
  // One layer's Q, K, V alive again during its backward.
  CHECK(rebuilt(g) / T == doctest::Approx(131072.0));
  // Run again per token per layer: W_UQ 2 x 1536 x 24,576 = 75,497,472 and
  // W_UKV 2 x 512 x 32,768 = 33,554,432: 109,051,904, in all 61 layers and
  // the multi-token-prediction module's one (a step without PP runs it).
  CHECK(recompute_gemm_flops(g) / (T * 62) == doctest::Approx(109051904.0));
  CHECK(find(g, "mla_q_up_proj", spec::Phase::kRecompute) != nullptr);
  CHECK(find(g, "mla_kv_up_proj", spec::Phase::kRecompute) != nullptr);
  CHECK(find(g, "mla_q_down_proj", spec::Phase::kRecompute) == nullptr);  // the latents stay saved
  CHECK(find(g, "mla_q_up_proj")->saved_bytes / T == doctest::Approx(1536 * 2.0));
  // A model without latent attention has no up-projection: nothing changes.
  const auto llama = test::model("llama3_8b");
  const auto lp = test::step(llama, plan_with("none", 2048));
  const auto lm = test::step(llama, plan_with("selective:mla_up_proj", 2048));
  CHECK(find(lm, "flash_attention")->saved_bytes == find(lp, "flash_attention")->saved_bytes);
  CHECK(rebuilt(lm) == 0);
  CHECK(recompute_gemm_flops(lm) == 0);
}

TEST_CASE("recompute layernorm: a norm of its own gives up its output; a fused one is skipped") {
  const auto m = test::model("deepseek_v3");
  const double T = 4096;
  const auto plain = test::step(m, plan_with("none"));
  const auto g = test::step(m, plan_with("selective:layernorm"));
  // The input norm's output, 7168 x 2 = 14,336 bytes per token, was W_DQ's saved input.
  CHECK(find(plain, "mla_q_down_proj")->saved_bytes / T == doctest::Approx(14336.0));
  CHECK(find(g, "mla_q_down_proj")->saved_bytes == 0);
  // The pre-MLP norm's output: the shared expert's and the dense layers' up-projection input.
  CHECK(find(plain, "shared_up_proj")->saved_bytes / T == doctest::Approx(14336.0));
  CHECK(find(g, "shared_up_proj")->saved_bytes == 0);
  CHECK(find(g, "dense_up_proj")->saved_bytes == 0);
  // The routed experts keep their dispatched copy: 8 x 7168 x 2 = 114,688 per token.
  CHECK(find(g, "mlp_up_proj")->saved_bytes / T == doctest::Approx(114688.0));
  // Both norms run again; one layer's two outputs alive: 2 x 14,336.
  CHECK(find(g, "norm1", spec::Phase::kRecompute) != nullptr);
  CHECK(find(g, "norm2", spec::Phase::kRecompute) != nullptr);
  CHECK(rebuilt(g) / T == doctest::Approx(2 * 14336.0));
  // Under fp8 the consuming linear keeps the 16-bit original
  // (set_save_original_input), which the checkpoint frees: nothing stays.
  auto p8 = plan_with("selective:layernorm");
  p8.precision = spec::Precision::kFp8;
  CHECK(find(test::step(m, p8), "mla_q_down_proj")->saved_bytes == 0);
  // Llama-3-8B under Transformer Engine: both norms are fused into the next
  // linear (IdentityOp norms), so Megatron-Core recomputes none of them.
  const auto llama = test::model("llama3_8b");
  const auto lp = test::step(llama, plan_with("none", 2048));
  const auto ln = test::step(llama, plan_with("selective:layernorm", 2048));
  CHECK(find(ln, "qkv_proj")->saved_bytes == find(lp, "qkv_proj")->saved_bytes);
  CHECK(find(ln, "mlp_up_proj")->saved_bytes == find(lp, "mlp_up_proj")->saved_bytes);
  CHECK(rebuilt(ln) == 0);
}

TEST_CASE("recompute moe_act: the routed experts' down-projection keeps nothing; the activation runs again") {
  const auto m = test::model("deepseek_v3");
  const double T = 4096;
  const auto plain = test::step(m, plan_with("none"));
  const auto g = test::step(m, plan_with("selective:moe_act"));
  // The activation's output, 8 routed pairs x 2048 x 2 = 32,768 bytes per token.
  CHECK(find(plain, "mlp_down_proj")->saved_bytes / T == doctest::Approx(32768.0));
  CHECK(find(g, "mlp_down_proj")->saved_bytes == 0);
  CHECK(rebuilt(g) / T == doctest::Approx(32768.0));
  // The shared expert's and the dense layers' MLPs are not touched.
  CHECK(find(g, "shared_down_proj")->saved_bytes == find(plain, "shared_down_proj")->saved_bytes);
  CHECK(find(g, "dense_down_proj")->saved_bytes == find(plain, "dense_down_proj")->saved_bytes);
  CHECK(recompute_gemm_flops(g) == 0);
}

TEST_CASE("recompute mlp and shared_experts: the module keeps its input and runs whole again") {
  const auto llama = test::model("llama3_8b");
  const double T = 2048;
  const auto g = test::step(llama, plan_with("selective:mlp", 2048));
  // The MLP's input (4096 x 2 bytes per token) is the checkpoint; the rest goes.
  CHECK(find(g, "mlp_up_proj")->saved_bytes / T == doctest::Approx(8192.0));
  CHECK(find(g, "mlp_down_proj")->saved_bytes == 0);
  // Run again per token per layer: gate and up 2 x 4096 x 28,672 and down
  // 2 x 14,336 x 4096: 234,881,024 + 117,440,512 = 352,321,536, in 32 layers.
  CHECK(recompute_gemm_flops(g) / (T * 32) == doctest::Approx(352321536.0));
  // DeepSeek-V3's shared expert: gate and up 2 x 7168 x 4096 plus down 2 x
  // 2048 x 7168 = 58,720,256 + 29,360,128 = 88,080,384 per token, in its 58
  // MoE layers and the multi-token-prediction module's MoE layer.
  const auto ds = test::step(test::model("deepseek_v3"), plan_with("selective:shared_experts"));
  CHECK(recompute_gemm_flops(ds) / (4096.0 * 59) == doctest::Approx(88080384.0));
  CHECK(find(ds, "shared_down_proj")->saved_bytes == 0);
  CHECK(find(ds, "mlp_down_proj")->saved_bytes > 0);  // the routed experts keep theirs
}

TEST_CASE("DeepSeek-V3's published layout fits with the report's recomputation and not without it") {
  // DeepSeek-V3 technical report Sec. 3.2.3: RMSNorm and the MLA
  // up-projections recomputed; Sec. 3.3.2: SwiGLU's output recomputed. 2,048
  // H800s: PP16, EP64, ZeRO-1 DP, fp8 with blockwise scaling, micro-batch 1
  // of 4,096 tokens. A run that exists fits.
  const std::string layout =
      "predict --gpu h800_sxm --model deepseek_v3 --precision fp8 --fp8-recipe blockwise --pp 16 --ep 64 --dp 128 "
      "--zero 1 --seq 4096 --global-batch 15360 --first-stage-layers 1 --ep-comm-overlap --moe-dispatcher deepep ";
  const auto with = test::run_cli(layout + "--recompute selective:mla_up_proj+layernorm+moe_act");
  REQUIRE(with.status == 0);
  CHECK(with.out.find("DOES NOT FIT") == std::string::npos);
  const auto without = test::run_cli(layout + "--recompute none");
  CHECK(without.out.find("DOES NOT FIT") != std::string::npos);
}
