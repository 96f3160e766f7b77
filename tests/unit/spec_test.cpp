#include <doctest/doctest.h>

#include <cmath>

#include "ridgeline/spec/plan.hpp"
#include "ridgeline/support/diagnostics.hpp"
#include "test_support.hpp"

using namespace ridgeline;

namespace {
double rel(double a, double b) { return std::fabs(a - b) / b; }
}  // namespace

TEST_CASE("spec: parameter counts match the published figures within 0.5%") {
  // Published totals: Llama-2 paper / model card 6.74B; Meta Llama 3 model card
  // 8.03B; GPT-3 paper Table 2.1 175B; Mistral 7B paper / HF card 7.24B.
  CHECK(rel(spec::count_params(test::model("llama2_7b")).total, 6.74e9) < 0.005);
  CHECK(rel(spec::count_params(test::model("llama3_8b")).total, 8.03e9) < 0.005);
  CHECK(rel(spec::count_params(test::model("gpt3_175b")).total, 175e9) < 0.005);
  CHECK(rel(spec::count_params(test::model("mistral_7b")).total, 7.24e9) < 0.005);
  // Mixtral 8x7B: 46.7B total, 12.9B active per token (Mistral AI announcement).
  const auto mx = spec::count_params(test::model("mixtral_8x7b"));
  CHECK(rel(mx.total, 46.7e9) < 0.005);
  CHECK(rel(mx.active, 12.9e9) < 0.01);
}

TEST_CASE("spec: every shipped profile and model loads") {
  for (const char* g : {"a100_sxm_40gb", "a100_sxm_80gb", "h100_sxm", "h100_pcie", "h200", "b200", "l40s",
                        "rtx_4090", "mi300x"}) {
    CAPTURE(g);
    const auto hw = test::gpu(g);
    CHECK(hw.memory_bytes > 0);
    CHECK(hw.hbm_bytes_per_s > 0);
    CHECK(hw.peak(spec::Peak::kBf16) > 0);
    CHECK(hw.sources.count("memory.hbm_bandwidth") == 1);
  }
  // Dense peaks only: H100 SXM bf16 989.4 TFLOP/s (whitepaper Table 1), not the 1979 sparsity figure.
  CHECK(test::gpu("h100_sxm").peak(spec::Peak::kBf16) == doctest::Approx(989.4e12));
  CHECK_FALSE(test::gpu("a100_sxm_80gb").supports(spec::Peak::kFp8));  // Ampere has no fp8 tensor cores
}

TEST_CASE("spec: Hugging Face configs map onto the model spec") {
  const std::string dir = std::string(RIDGELINE_SOURCE_DIR) + "/tests/data/hf/";
  const auto l3 = spec::load_hf_config(dir + "llama3_8b_config.json");
  CHECK(l3.layers == 32);
  CHECK(l3.kv_heads == 8);
  CHECK(l3.activation == spec::Activation::kSwiglu);
  // Same architecture as models/llama3_8b.yaml, so the same 8.03B parameters.
  CHECK(spec::count_params(l3).total == spec::count_params(test::model("llama3_8b")).total);
  const auto g2 = spec::load_hf_config(dir + "gpt2_config.json");
  CHECK(g2.hidden == 768);
  CHECK(g2.ffn_hidden == 4 * 768);  // n_inner null -> 4h
  // GPT-2 small: 124.4M parameters (tied embeddings, 1024 learned positions).
  CHECK(rel(spec::count_params(g2).total, 124.44e6) < 0.005);
  const auto mx = spec::load_hf_config(dir + "mixtral_8x7b_config.json");
  CHECK(mx.moe.experts == 8);
  CHECK(mx.moe.top_k == 2);
  CHECK(spec::load_hf_config(dir + "qwen2_7b_config.json").kv_heads == 4);
  CHECK(spec::load_hf_config(dir + "pythia_1b_config.json").norm == spec::Norm::kLayerNorm);
  CHECK_THROWS_AS(spec::load_hf_config(dir + "t5_small_config.json"), support::SpecError);
}

TEST_CASE("spec: technique words have one spelling for YAML and flags") {
  CHECK(spec::parse_recompute("every:4")->every_k == 4);
  CHECK_FALSE(spec::parse_recompute("every:0"));
  CHECK_FALSE(spec::parse_recompute("every:x"));
  CHECK(spec::to_string(*spec::parse_recompute("every:3")) == "every:3");
  CHECK(*spec::parse_lora_targets("q,v") == (spec::kTargetQ | spec::kTargetV));
  CHECK_FALSE(spec::parse_lora_targets("q,x"));
  CHECK(spec::to_string(*spec::parse_precision("fp8")) == "fp8");
}

TEST_CASE("support: did-you-mean suggestions") {
  CHECK(support::closest_match("hiden", {"hidden", "heads"}) == "hidden");
  CHECK(support::closest_match("h100", {"h100_sxm", "h200"}) == "h100_sxm");  // prefix beats one edit
  CHECK(support::closest_match("zzzzzz", {"hidden", "heads"}).empty());
}
