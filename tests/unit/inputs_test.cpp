// Inputs (issue 16, items 9, 14, 15): --set FIELD=VALUE for the GPU profile
// and the model, applied to the parsed file before it is read so that each
// is validated exactly as the field in the file; the names --model and --gpu
// accept; the Hugging Face model types; the private profile path; and
// `check --verbose`. Every message is compared as exact text; expected
// numbers are the values written (4.8 TB/s = 4.8e12 B/s) or hand counts
// shown beside them.
#include <doctest/doctest.h>

#include <cstdlib>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/model.hpp"
#include "ridgeline/support/diagnostics.hpp"
#include "test_support.hpp"

using namespace ridgeline;
namespace fs = std::filesystem;

namespace {

const std::string kSrc = RIDGELINE_SOURCE_DIR;

std::string profile(const std::string& id) { return kSrc + "/hardware_profiles/" + id + ".yaml"; }
std::string model_file(const std::string& id) { return kSrc + "/models/" + id + ".yaml"; }
std::string hf(const std::string& name) { return kSrc + "/tests/data/hf/" + name; }

spec::FieldOverride set(const std::string& prefix, const std::string& field, const std::string& value) {
  return {field, value, "--set " + prefix + field};
}

using Overrides = std::vector<spec::FieldOverride>;
spec::HardwareSpec load_gpu(const std::string& path, const Overrides& o) { return spec::load_hardware_with_overrides(path, o); }
spec::ModelSpec load_yaml_model(const std::string& path, const Overrides& o) { return spec::load_model_with_overrides(path, o); }
spec::ModelSpec load_hf(const std::string& path, const Overrides& o) { return spec::load_hf_config_with_overrides(path, o); }

/// Every diagnostic of loading `path` with the overrides, formatted.
template <class Load>
std::vector<std::string> errors_of(Load load) {
  try {
    load();
  } catch (const support::SpecError& e) {
    std::vector<std::string> out;
    for (const auto& d : e.diagnostics()) out.push_back(d.format());
    return out;
  }
  return {};
}

std::vector<std::string> gpu_errors(const std::string& path, const std::vector<spec::FieldOverride>& o) {
  return errors_of([&] { spec::load_hardware_with_overrides(path, o); });
}
std::vector<std::string> model_errors(const std::string& path, const std::vector<spec::FieldOverride>& o) {
  return errors_of([&] { spec::load_model_with_overrides(path, o); });
}
std::vector<std::string> hf_errors(const std::string& path, const std::vector<spec::FieldOverride>& o) {
  return errors_of([&] { spec::load_hf_config_with_overrides(path, o); });
}

/// A file under the temp directory with `text`; its path.
std::string write_temp(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / ("ridgeline_inputs_" + std::to_string(::getpid())) / name;
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
  return p.string();
}

using Lines = std::vector<std::string>;

}  // namespace

TEST_SUITE("inputs") {

TEST_CASE("--set gpu.*: a value replaces the profile's field and is read with its unit") {
  const auto hw = load_gpu(profile("h100_sxm"), {set("gpu.", "memory.hbm_bandwidth", "4.8 TB/s"),
                                                             set("gpu.", "interconnect.inter_node_bandwidth", "25 GB/s"),
                                                             set("gpu.", "interconnect.nic_bandwidth", "200 Gb/s"),
                                                             set("gpu.", "price_per_gpu_hour", "2.10 USD/h")});
  CHECK(hw.hbm_bytes_per_s == 4.8e12);
  CHECK(hw.interconnect.inter_node_bytes_per_s == 25e9);
  CHECK(hw.price_per_gpu_hour_usd == 2.10);
  CHECK(hw.memory_bytes == 80.0 * 1024 * 1024 * 1024);  // untouched: 80 GiB as in the file
  CHECK(hw.sources.at("memory.hbm_bandwidth") == "--set gpu.memory.hbm_bandwidth on the command line");
}

TEST_CASE("--set gpu.*: a bare number gets the file's message, naming the flag") {
  CHECK(gpu_errors(profile("h100_sxm"), {set("gpu.", "memory.hbm_bandwidth", "4.8")}) ==
        Lines{"error: --set gpu.memory.hbm_bandwidth: expected a bandwidth such as \"3.35 TB/s\", got \"4.8\""});
  CHECK(gpu_errors(profile("h100_sxm"), {set("gpu.", "price_per_gpu_hour", "2.10")}) ==
        Lines{"error: --set gpu.price_per_gpu_hour: expected a price per hour such as \"2.50 USD/h\", got \"2.10\""});
  CHECK(gpu_errors(profile("h100_sxm"), {set("gpu.", "compute.sm_count", "0")}) ==
        Lines{"error: --set gpu.compute.sm_count: expected a whole number from 1 to 100000, got 0"});
}

TEST_CASE("--set gpu.*: an unknown field gets did-you-mean from the profile's schema") {
  CHECK(gpu_errors(profile("h100_sxm"), {set("gpu.", "memory.hbm_bandwith", "4.8 TB/s")}) ==
        Lines{"error: --set gpu.memory.hbm_bandwith: unknown key 'hbm_bandwith'; did you mean 'hbm_bandwidth'?"});
  CHECK(gpu_errors(profile("h100_sxm"), {set("gpu.", "memroy.hbm_bandwidth", "4.8 TB/s")}) ==
        Lines{"error: --set gpu.memroy.hbm_bandwidth: unknown key 'memroy'; did you mean 'memory'?"});
  CHECK(gpu_errors(profile("h100_sxm"), {set("gpu.", "name.short", "H100")}) ==
        Lines{"error: --set gpu.name.short: 'name' holds a value, not a section of fields"});
}

TEST_CASE("--set gpu.*: a field the profile lacks is added") {
  // A profile without a price or a power section: both optional (0 = unknown).
  std::string text = test::edited(test::shipped_text("h100_sxm"), "price_per_gpu_hour: 2.99 USD/h\n", "");
  text = test::edited(text, "power:\n  tdp: 700 W\n", "");
  const std::string path = write_temp("no_price.yaml", text);
  const auto bare = spec::load_hardware(path);
  CHECK_FALSE(bare.has_price());
  CHECK_FALSE(bare.has_tdp());
  const auto hw = load_gpu(path, {set("gpu.", "price_per_gpu_hour", "2.10 USD/h"),
                                             set("gpu.", "power.tdp", "700 W")});
  CHECK(hw.price_per_gpu_hour_usd == 2.10);
  CHECK(hw.tdp_w == 700.0);
  CHECK(hw.has_price());
}

TEST_CASE("--set gpu.*: cross-field checks see the new value") {
  // 8 NICs of 400 Gb/s for 8 GPUs give each 50 GB/s: 25 GB/s alone disagrees, as in the file.
  CHECK(gpu_errors(profile("h100_sxm"), {set("gpu.", "interconnect.inter_node_bandwidth", "25 GB/s")}) ==
        Lines{"error: --set gpu.interconnect.inter_node_bandwidth: 25 GB/s per GPU, but nic_bandwidth x "
              "min(nics_per_node, gpus_per_node) / gpus_per_node is 50 GB/s; make them agree"});
  // sustained_clock 1.755 GHz may not exceed the boost clock, set to 1.5 GHz.
  CHECK(gpu_errors(profile("h100_sxm"), {set("gpu.", "compute.boost_clock", "1.5 GHz")})[0].ends_with(
      "error: compute.sustained_clock: expected at most the boost clock (1500 MHz), got 1755 MHz"));
  // fp8 on an Ampere part is refused as in the file.
  CHECK(gpu_errors(profile("a100_sxm_80gb"), {set("gpu.", "compute.peak.fp8", "600 TFLOP/s")}) ==
        Lines{"error: --set gpu.compute.peak.fp8: ampere GPUs have no fp8 tensor cores (fp8 arrived with ada and "
              "hopper); remove it or correct generation"});
}

TEST_CASE("--set model.*: YAML model fields, validated as in the file") {
  const auto m = load_yaml_model(model_file("llama3_8b"), {set("model.", "layers", "40")});
  CHECK(m.layers == 40);
  CHECK(m.hidden == 4096);
  CHECK(model_errors(model_file("llama3_8b"), {set("model.", "layers", "0")}) ==
        Lines{"error: --set model.layers: expected a whole number from 1 to 100000, got 0"});
  CHECK(model_errors(model_file("llama3_8b"), {set("model.", "layres", "40")}) ==
        Lines{"error: --set model.layres: unknown key 'layres'; did you mean 'layers'?"});
  // 4096 / 7 is not whole: the cross-field check names the flag.
  CHECK(model_errors(model_file("llama3_8b"), {set("model.", "heads", "7")}) ==
        Lines{"error: --set model.heads: 7 heads do not divide hidden 4096"});
  const auto moe = load_yaml_model(model_file("llama3_8b"), {set("model.", "moe.experts", "8"),
                                                               set("model.", "moe.top_k", "2")});
  CHECK(moe.moe.experts == 8);
  CHECK(moe.moe.top_k == 2);
}

TEST_CASE("--set model.*: a Hugging Face config takes its own keys") {
  const auto m = load_hf(hf("llama3_8b_config.json"), {set("model.", "num_hidden_layers", "40")});
  CHECK(m.layers == 40);
  CHECK(hf_errors(hf("llama3_8b_config.json"), {set("model.", "num_hiden_layers", "40")}) ==
        Lines{"error: --set model.num_hiden_layers: unknown key 'num_hiden_layers'; did you mean 'num_hidden_layers'?"});
  CHECK(hf_errors(hf("llama3_8b_config.json"), {set("model.", "num_hidden_layers", "\"40\"")}) ==
        Lines{"error: --set model.num_hidden_layers: expected a whole number, got the string \"40\""});
  // The Ridgeline name of the field is not a config.json key.
  CHECK(hf_errors(hf("llama3_8b_config.json"), {set("model.", "layers", "40")}) ==
        Lines{"error: --set model.layers: a llama config.json names this field 'num_hidden_layers' "
              "(--set model.num_hidden_layers=...)"});
}

// Hugging Face model types. Fixtures: tests/data/hf/SOURCES.md names each
// config's Hub repository. Expected parameter counts are hand counts with
// count_params' formula (embedding V h, per layer h (q + 2 kv) + q h
// attention, 3 h f gated MLP (x experts, + router h E), 2 h RMSNorm; final
// norm h; LM head V h unless tied), checked against the published totals.
TEST_CASE("HF config: phi3, gemma, gemma2, qwen3 and qwen3_moe read as the published models") {
  // microsoft/Phi-3-mini-4k-instruct: V 32064, h 3072, L 32, f 8192, untied:
  // 2 x 98,500,608 + 32 x (37,748,736 + 75,497,472 + 6,144) + 3,072 = 3,821,079,552,
  // keras-hub's phi3_mini_4k_instruct_en preset lists "params": 3821079552.
  const auto phi = spec::load_hf_config(hf("phi3_mini_4k_config.json"));
  CHECK(spec::count_params(phi).total == 3821079552.0);
  CHECK(phi.activation == spec::Activation::kSwiglu);
  CHECK(phi.notes == Lines{"sliding-window attention (2047 tokens) is modelled as full attention: exact for "
                           "sequences up to the window, attention work overestimated beyond it"});

  // google/gemma-7b: head_dim 256 x 16 heads = 4096 != hidden 3072; tied; GeGLU.
  // 786,432,000 + 28 x (50,331,648 + 226,492,416 + 6,144) + 3,072 = 8,537,680,896 (model card: 8.54B).
  const auto gemma = spec::load_hf_config(hf("gemma_7b_config.json"));
  CHECK(gemma.head_dim == 256);
  CHECK(gemma.tied_embeddings);
  CHECK(gemma.activation == spec::Activation::kGeglu);
  CHECK(spec::count_params(gemma).total == 8537680896.0);
  CHECK(gemma.notes.empty());

  // google/gemma-2-9b: 917,504,000 + 42 x (44,040,192 + 154,140,672 + 7,168) + 3,584 = 9,241,404,928;
  // the published 9,241,705,984 adds the post-attention and post-MLP norms (42 x 2 x 3584 = 301,056).
  const auto gemma2 = spec::load_hf_config(hf("gemma2_9b_config.json"));
  CHECK(spec::count_params(gemma2).total == 9241404928.0);
  CHECK(spec::count_params(gemma2).total + 42 * 2 * 3584 == 9241705984.0);
  CHECK(gemma2.notes ==
        Lines{"the norms after attention and after the MLP (2 x hidden weights a layer) are not counted",
              "sliding-window attention (4096 tokens, every other layer) is modelled as full attention: exact for "
              "sequences up to the window, attention work overestimated beyond it"});

  // Qwen/Qwen3-0.6B, as downloaded into its folder: the folder names it.
  // 155,582,464 (tied) + 28 x (6,291,456 + 9,437,184 + 2,048) + 1,024 = 596,042,752;
  // the model card: 0.6B, 0.44B non-embedding (28 x 15,730,688 = 440,459,264).
  const auto qwen3 = spec::load_hf_config(hf("Qwen3-0.6B/config.json"));
  CHECK(qwen3.id == "Qwen3-0.6B");
  CHECK(qwen3.name == "Qwen3-0.6B");
  CHECK(qwen3.head_dim == 128);
  CHECK(spec::count_params(qwen3).total == 596042752.0);
  CHECK(qwen3.notes == Lines{"the per-head RMSNorm of queries and keys (2 x head_dim weights a layer) is not counted"});

  // Qwen/Qwen3-30B-A3B: 128 experts of width 768 (moe_intermediate_size), 8 a token.
  // Total 622,329,856 + 48 x 623,120,384 + 2,048 = 30,532,110,336 (card: 30.5B);
  // active 622,329,856 + 48 x 56,889,344 + 2,048 = 3,353,020,416 (card: 3.3B activated).
  const auto moe = spec::load_hf_config(hf("qwen3_30b_a3b/config.json"));
  CHECK(moe.moe.experts == 128);
  CHECK(moe.moe.top_k == 8);
  CHECK(moe.ffn_hidden == 768);
  CHECK(spec::count_params(moe).total == 30532110336.0);
  CHECK(spec::count_params(moe).active == 3353020416.0);
  CHECK(moe.moe.dense_layers == 0);
  CHECK(moe.moe.shared_ffn == 0);
}

// DeepSeek-V3's shapes (h 7168, H 128 heads, r_q 1536, r_kv 512, d_nope 128,
// d_rope 64, d_v 128; deepseek-ai/DeepSeek-V3 inference/model.py, class MLA):
//   W_DQ 7168 x 1536 = 11,010,048, q_norm 1,536, W_UQ 1536 x 128 x 192 = 37,748,736
//   W_DKV 7168 x 576 = 4,128,768, kv_norm 512, W_UK/W_UV 512 x 128 x 256 = 16,777,216
//   W_O 128 x 128 x 7168 = 117,440,512; attention 187,107,328 a layer.
// MoE layer: 256 x 3 x 7168 x 2048 = 11,274,289,152 routed, 44,040,192 shared,
//   router 1,835,008 + bias 256, norms 14,336: 11,507,286,272 (active, 8 of
//   256: 585,318,656). Dense layer (3 x 7168 x 18432 = 396,361,728): 583,483,392.
// Total 2 x 926,679,040 + 7,168 + 3 x 583,483,392 + 58 x 11,507,286,272
//   = 671,026,419,200 (README_WEIGHTS.md: 671B);
// active 1,853,365,248 + 1,750,450,176 + 58 x 585,318,656 = 37,552,297,472;
//   less the embedding (a lookup, no compute) 36,625,618,432 (README_WEIGHTS.md:
//   36.7B activated; the headline "37B").
// MTP: 2 x 7168^2 + 2 x 7,168 + 11,507,286,272 = 11,610,061,056 (README_WEIGHTS.md:
//   11.5B unique); 682,636,480,256 with it. The published weights' 685B also hold
//   the MTP layer's copies of the embedding and head (1,853,358,080): 684.5B.
TEST_CASE("HF config: DeepSeek-V3 (multi-head latent attention, shared experts, dense first layers, MTP)") {
  const auto m = spec::load_hf_config(hf("deepseek_v3/config.json"));
  CHECK(m.id == "deepseek_v3");
  CHECK(m.is_mla());
  CHECK(m.mla.q_lora_rank == 1536);
  CHECK(m.mla.kv_lora_rank == 512);
  CHECK(m.mla.qk_nope_head_dim == 128);
  CHECK(m.mla.qk_rope_head_dim == 64);
  CHECK(m.mla.v_head_dim == 128);
  CHECK(m.head_dim == 192);
  CHECK(m.kv_heads == 128);
  CHECK(m.ffn_hidden == 2048);
  CHECK(m.moe.experts == 256);
  CHECK(m.moe.top_k == 8);
  CHECK(m.moe.shared_ffn == 2048);
  CHECK(m.moe.dense_layers == 3);
  CHECK(m.moe.dense_ffn == 18432);
  CHECK(m.moe.router_bias);
  CHECK(m.moe.groups == 8);
  CHECK(m.moe.topk_groups == 4);
  CHECK(m.mtp_layers == 1);
  CHECK(m.moe_layers() == 58);
  const auto c = spec::count_params(m);
  CHECK(c.attention_per_layer == 187107328.0);
  CHECK(c.per_layer == 11507286272.0);
  CHECK(c.per_layer_active == 585318656.0);
  CHECK(c.dense_layer == 583483392.0);
  CHECK(c.total == 671026419200.0);
  CHECK(c.active == 37552297472.0);
  CHECK(c.mtp == 11610061056.0);
  CHECK(c.total_with_mtp == 682636480256.0);
  CHECK(c.total == doctest::Approx(671e9).epsilon(0.01));
  CHECK(c.active - c.embedding == doctest::Approx(36.7e9).epsilon(0.01));
  CHECK(c.mtp == doctest::Approx(11.5e9).epsilon(0.01));
  CHECK(c.total_with_mtp + 2 * c.embedding == doctest::Approx(685e9).epsilon(0.01));
  CHECK(m.notes == Lines{"node-limited routing (8 groups, 4 a token) changes no FLOPs; it is kept for the "
                         "expert-parallel communication"});
  // The model YAML states the same architecture.
  const auto y = spec::load_model(model_file("deepseek_v3"));
  const auto cy = spec::count_params(y);
  CHECK(cy.total == c.total);
  CHECK(cy.active == c.active);
  CHECK(cy.mtp == c.mtp);
  CHECK(y.head_dim == 192);
  CHECK(y.kv_heads == 128);
}

// Kimi K2 (a deepseek_v3 with 64 heads, 384 experts, one dense layer, no MTP):
//   attention 29,885,952 (q) + 12,517,888 (kv) + 58,720,256 (o) = 101,124,096;
//   MoE layer 101,124,096 + 384 x 44,040,192 + 44,040,192 + 2,752,512 + 384 + 14,336
//   = 17,059,365,248; dense layer 497,500,160; ends 2 x 1,174,405,120 + 7,168.
//   Total 1,026,408,232,448 (Kimi Team 2025: "1.04T", the model card "1T");
//   active 2,348,817,408 + 497,500,160 + 60 x 500,253,056 = 32,861,500,928 (32B activated).
// Qwen3-235B-A22B: attention 4096 x (8192 + 1024) + 8192 x 4096 = 71,303,168,
//   MoE 128 x 18,874,368 + 524,288, norms 8,192: 2,487,754,752 a layer;
//   total 1,244,663,808 + 94 x 2,487,754,752 = 235,093,610,496 (card: 235B);
//   active 1,244,663,808 + 94 x 222,830,592 = 22,190,739,456 (card: 22B activated).
TEST_CASE("HF config: Kimi K2 and Qwen3-235B-A22B, as config.json and as model YAML") {
  const auto k2 = spec::load_hf_config(hf("kimi_k2/config.json"));
  const auto ck = spec::count_params(k2);
  CHECK(k2.moe.dense_layers == 1);
  CHECK(k2.moe.groups == 1);
  CHECK(k2.notes.empty());
  CHECK(ck.attention_per_layer == 101124096.0);
  CHECK(ck.total == 1026408232448.0);
  CHECK(ck.active == 32861500928.0);
  CHECK(ck.mtp == 0.0);
  CHECK(ck.total == doctest::Approx(1.04e12).epsilon(0.015));
  CHECK(ck.active == doctest::Approx(32e9).epsilon(0.03));
  CHECK(spec::count_params(spec::load_model(model_file("kimi_k2"))).total == ck.total);
  CHECK(spec::count_params(spec::load_model(model_file("kimi_k2"))).active == ck.active);

  const auto q = spec::load_hf_config(hf("qwen3_235b_a22b/config.json"));
  const auto cq = spec::count_params(q);
  CHECK(cq.total == 235093610496.0);
  CHECK(cq.active == 22190739456.0);
  CHECK(cq.total == doctest::Approx(235e9).epsilon(0.01));
  CHECK(cq.active == doctest::Approx(22e9).epsilon(0.01));
  CHECK(spec::count_params(spec::load_model(model_file("qwen3_235b_a22b"))).total == cq.total);
  CHECK(spec::count_params(spec::load_model(model_file("qwen3_235b_a22b"))).active == cq.active);
  const auto c30 = spec::count_params(spec::load_model(model_file("qwen3_30b_a3b")));
  CHECK(c30.total == 30532110336.0);
  CHECK(c30.active == 3353020416.0);
}

// Qwen/Qwen1.5-MoE-A2.7B (qwen2_moe): 60 experts of 1408 (4 a token) and a
// shared expert of 5632 behind a sigmoid gate (2048 weights):
//   layer 16,777,216 + 60 x 8,650,752 + 34,603,008 + 122,880 + 2,048 + 4,096 = 570,554,368;
//   total 622,331,904 + 24 x 570,554,368 = 14,315,636,736 (card: 14.3B);
//   active 622,331,904 + 24 x 86,112,256 = 2,689,026,048 (card: 2.7B activated).
TEST_CASE("model YAML: the mla block and the MoE layout fields are checked where they stand") {
  const std::string ds = model_file("deepseek_v3");
  CHECK(model_errors(ds, {set("model.", "mla.kv_lora_rank", "-1")}) ==
        Lines{"error: --set model.mla.kv_lora_rank: expected a whole number from 1 to 1048576, got -1"});
  CHECK(model_errors(ds, {set("model.", "mla.q_lora_rank", "null")}) ==
        Lines{"error: --set model.mla.q_lora_rank: expected a whole number, got \"null\""});
  CHECK(model_errors(ds, {set("model.", "mla.v_head_dm", "128")}) ==
        Lines{"error: --set model.mla.v_head_dm: unknown key 'v_head_dm'; did you mean 'v_head_dim'?"});
  CHECK(model_errors(ds, {set("model.", "head_dim", "192")}) ==
        Lines{"error: --set model.head_dim: a model with an mla block takes its head dimensions from it; remove head_dim"});
  CHECK(model_errors(ds, {set("model.", "kv_heads", "8")}) ==
        Lines{"error: --set model.kv_heads: multi-head latent attention has one key/value head per query head (128), got 8"});
  CHECK(model_errors(ds, {set("model.", "moe.dense_layers", "61")}) ==
        Lines{"error: --set model.moe.dense_layers: 61 dense layers leave none of the 61 layers with experts"});
  CHECK(model_errors(ds, {set("model.", "moe.groups", "7")}) ==
        Lines{"error: --set model.moe.groups: 7 expert groups do not divide 256 experts"});
  CHECK(model_errors(ds, {set("model.", "moe.shared_ffn", "-2048")}) ==
        Lines{"error: --set model.moe.shared_ffn: expected a whole number from 0 to 67108864, got -2048"});
  CHECK(model_errors(ds, {set("model.", "mtp_layers", "-1")}) ==
        Lines{"error: --set model.mtp_layers: expected a whole number from 0 to 64, got -1"});
  // In the file: located at the field.
  std::ifstream in(ds);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bad = write_temp("ds_bad.yaml", test::edited(ss.str(), "  dense_ffn: 18432\n", ""));
  CHECK(model_errors(bad, {}) == Lines{bad + ":22:3: error: moe.dense_ffn: missing required field"});
}

TEST_CASE("HF config: a qwen2_moe shared expert is counted") {
  const auto m = spec::load_hf_config(hf("qwen1.5_moe_a2.7b_config.json"));
  CHECK(m.moe.shared_ffn == 5632);
  CHECK(m.moe.shared_gate);
  CHECK(spec::count_params(m).total == 14315636736.0);
  CHECK(spec::count_params(m).active == 2689026048.0);
}

TEST_CASE("HF config: what Ridgeline does not model is one clear error") {
  const std::string ds = hf("deepseek_v3/config.json");
  CHECK(hf_errors(ds, {set("model.", "moe_layer_freq", "2")}) ==
        Lines{"error: --set model.moe_layer_freq: an MoE layer every 2 layers is not modelled; Ridgeline's MoE models have "
              "experts in every layer but the first dense ones (1)"});
  CHECK(hf_errors(ds, {set("model.", "kv_lora_rank", "null")}) ==
        Lines{"error: --set model.kv_lora_rank: expected a whole number, got null"});
  CHECK(hf_errors(ds, {set("model.", "q_lora_rank", "-1")}) ==
        Lines{"error: --set model.q_lora_rank: expected a whole number from 0 to 1048576, got -1"});
  CHECK(hf_errors(ds, {set("model.", "first_k_dense_replace", "61")}) ==
        Lines{"error: --set model.first_k_dense_replace: 61 dense layers leave none of the 61 layers with experts"});
  CHECK(hf_errors(ds, {set("model.", "n_group", "7")}) ==
        Lines{"error: --set model.n_group: 7 expert groups do not divide 256 experts"});
  CHECK(hf_errors(ds, {set("model.", "topk_group", "9")}) ==
        Lines{"error: --set model.topk_group: 9 groups a token may use exceed the 8 groups"});
  const std::string q3 = hf("qwen3_30b_a3b/config.json");
  CHECK(hf_errors(q3, {set("model.", "mlp_only_layers", "[0, 5]")}) ==
        Lines{"error: --set model.mlp_only_layers: 2 dense layers among the MoE layers are not modelled; Ridgeline's MoE "
              "models have dense layers first (0, 1, ...) or none"});
  const auto first = load_hf(q3, {set("model.", "mlp_only_layers", "[0, 1]")});
  CHECK(first.moe.dense_layers == 2);
  CHECK(first.moe.dense_ffn == 6144);
  const std::string t5 = hf("t5_small_config.json");
  CHECK(hf_errors(t5, {}) ==
        Lines{t5 + ":15:17: error: model_type: unsupported model type 't5'; supported: llama, mistral, mixtral, qwen2, "
                   "qwen2_moe, qwen3, qwen3_moe, gemma, gemma2, phi3, gpt2, gpt_neox, deepseek_v2, deepseek_v3, gpt_oss, nemotron"});
}

TEST_CASE("hub_id: validated as owner/name") {
  std::string text = test::edited(
      [] {
        std::ifstream in(model_file("llama3_8b"));
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
      }(),
      "hub_id: meta-llama/Meta-Llama-3-8B", "hub_id: Meta-Llama-3-8B");
  const std::string path = write_temp("bad_hub.yaml", text);
  CHECK(model_errors(path, {}) ==
        Lines{path + ":2:9: error: hub_id: expected a Hugging Face repository such as \"meta-llama/Meta-Llama-3-8B\" "
                     "(owner/name), got \"Meta-Llama-3-8B\""});
  CHECK(spec::load_model(model_file("llama3_8b")).hub_id == "meta-llama/Meta-Llama-3-8B");
}

// The command line: names, private profiles, check --verbose, did-you-mean.
TEST_CASE("cli: unknown commands and flags get did-you-mean") {
  auto r = test::run_cli("predcit");
  CHECK(r.status == 2);
  CHECK(r.err == "error: unknown command 'predcit'; did you mean 'predict'?\n");
  r = test::run_cli("predict --micro-bach 2");
  CHECK(r.status == 2);
  CHECK(r.err == "error: unknown flag '--micro-bach'; did you mean '--micro-batch'?\n");
  r = test::run_cli("check --verbos models/llama3_8b.yaml");
  CHECK(r.status == 2);
  CHECK(r.err == "error: unknown flag '--verbos'; did you mean '--verbose'?\n");
}

TEST_CASE("cli: --gpu and --model names") {
  // Case-insensitive ids, the aliases sources print, Hub ids, display names, model folders.
  CHECK(test::run_cli("check H100").out == "./hardware_profiles/h100_sxm.yaml: ok (hardware profile)\n");
  CHECK(test::run_cli("check H100_SXM").out == "./hardware_profiles/h100_sxm.yaml: ok (hardware profile)\n");
  CHECK(test::run_cli("check 'NVIDIA H100 SXM5 80GB'").out == "./hardware_profiles/h100_sxm.yaml: ok (hardware profile)\n");
  CHECK(test::run_cli("check meta-llama/Meta-Llama-3-8B").out == "./models/llama3_8b.yaml: ok (model)\n");
  CHECK(test::run_cli("check META-LLAMA/meta-llama-3-8b").out == "./models/llama3_8b.yaml: ok (model)\n");
  CHECK(test::run_cli("check Llama-3-8B").out == "./models/llama3_8b.yaml: ok (model)\n");
  CHECK(test::run_cli("check 'llama 3 8b'").out == "./models/llama3_8b.yaml: ok (model)\n");
  CHECK(test::run_cli("check tests/data/hf/Qwen3-0.6B").out ==
        "tests/data/hf/Qwen3-0.6B/config.json: ok (Hugging Face config)\n");
  auto r = test::run_cli("predict --model meta-llama/Llama-3-8B");
  CHECK(r.status == 2);
  CHECK(r.err == "error: --model: 'meta-llama/Llama-3-8B' is not a file or folder, nor the Hugging Face id of a "
                 "shipped model (did you mean 'llama3_8b'?); download its config.json and give its folder\n");
  r = test::run_cli("predict --gpu H100-SMX");
  CHECK(r.status == 2);
  CHECK(r.err.starts_with("error: --gpu: unknown GPU 'H100-SMX' (did you mean 'h100_sxm'?); known: a10, "));
  r = test::run_cli("predict --model tests/data");
  CHECK(r.status == 2);
  CHECK(r.err == "error: --model: folder 'tests/data' holds no config.json (a Hugging Face model folder does)\n");
}

TEST_CASE("cli: --set on check names the flag") {
  auto r = test::run_cli("check --set gpu.memory.hbm_bandwidth=4.8 hardware_profiles/h100_sxm.yaml");
  CHECK(r.status == 2);
  CHECK(r.err == "error: --set gpu.memory.hbm_bandwidth: expected a bandwidth such as \"3.35 TB/s\", got \"4.8\"\n");
  r = test::run_cli("check --set gpu.memory.hbm_bandwith='4.8 TB/s' hardware_profiles/h100_sxm.yaml");
  CHECK(r.err == "error: --set gpu.memory.hbm_bandwith: unknown key 'hbm_bandwith'; did you mean 'hbm_bandwidth'?\n");
  r = test::run_cli("check --verbose --set gpu.memory.hbm_bandwidth='4.8 TB/s' h100_sxm");
  CHECK(r.status == 0);
  CHECK(r.out.find("  memory        80.0 GiB, HBM 4.80 TB/s\n") != std::string::npos);
}

TEST_CASE("cli: check --verbose prints what it understood") {
  // Llama-3-8B: 2 x 128256 x 4096 (untied) + 32 x (41,943,040 attention + 176,160,768 MLP + 8,192 norms)
  // + 4,096 = 8,030,261,248, the published 8.03B.
  auto r = test::run_cli("check --verbose models/llama3_8b.yaml");
  CHECK(r.status == 0);
  CHECK(r.out ==
        "models/llama3_8b.yaml: ok (model)\n"
        "  Llama-3-8B (meta-llama/Meta-Llama-3-8B)\n"
        "  parameters    8.03B (8030261248)\n"
        "  layers        32\n"
        "  hidden        4096\n"
        "  heads         32 query, 8 key/value, head dim 128\n"
        "  MLP           swiglu 14336\n"
        "  experts       none (dense)\n"
        "  vocab         128256\n"
        "  sequence      up to 8192, rope positions, rmsnorm\n");
  // The profile's figures; ridge = peak / 3.35 TB/s: 66.9/3.35 = 19.97, 494.7/3.35 = 147.67,
  // 989.4/3.35 = 295.34, 1978.9/3.35 = 590.72.
  r = test::run_cli("check --verbose hardware_profiles/h100_sxm.yaml");
  CHECK(r.status == 0);
  CHECK(r.out ==
        "hardware_profiles/h100_sxm.yaml: ok (hardware profile)\n"
        "  NVIDIA H100 SXM5 80GB (hopper, nvidia)\n"
        "  memory        80.0 GiB, HBM 3.35 TB/s\n"
        "  peak fp32     66.9 TFLOP/s   ridge 20.0 FLOP/byte\n"
        "  peak tf32     495 TFLOP/s    ridge 147.7 FLOP/byte\n"
        "  peak fp16     989 TFLOP/s    ridge 295.3 FLOP/byte\n"
        "  peak bf16     989 TFLOP/s    ridge 295.3 FLOP/byte\n"
        "  peak fp8      1.98 PFLOP/s   ridge 590.7 FLOP/byte\n"
        "  peak int8     1978.9 TOP/s   ridge 590.7 OP/byte\n"
        "  interconnect  8 GPUs a node, 450 GB/s within, 50.0 GB/s between nodes (per GPU, one direction)\n"
        "  price         2.99 USD per GPU-hour\n"
        "  TDP           700 W\n"
        "  calibration   none (documented default efficiencies)\n");
  // A profile without price or TDP says unknown, not $0.00.
  std::string text = test::edited(test::shipped_text("h100_sxm"), "price_per_gpu_hour: 2.99 USD/h\n", "");
  text = test::edited(text, "power:\n  tdp: 700 W\n", "");
  const std::string path = write_temp("unknown_price.yaml", text);
  r = test::run_cli("check --verbose " + path);
  CHECK(r.out.find("  price         unknown (no price_per_gpu_hour: cost is unknown)\n"
                   "  TDP           unknown (no power.tdp: energy is unknown)\n") != std::string::npos);
  // A Hugging Face folder: named by the folder; the notes say what is approximated.
  r = test::run_cli("check --verbose tests/data/hf/Qwen3-0.6B");
  CHECK(r.out.find("  Qwen3-0.6B\n  parameters    596M (596042752)\n") != std::string::npos);
  CHECK(r.out.find("  note          the per-head RMSNorm of queries and keys (2 x head_dim weights a layer) is not "
                   "counted\n") != std::string::npos);
  r = test::run_cli("check --verbose tests/data/hf/qwen3_30b_a3b/config.json");
  CHECK(r.out.find("  parameters    30.5B (30532110336), 3.35B active per token\n") != std::string::npos);
  CHECK(r.out.find("  experts       128, 8 per token\n") != std::string::npos);
}

TEST_CASE("cli: RIDGELINE_PROFILE_PATH adds private profiles, a same-named one wins") {
  const fs::path dir = fs::temp_directory_path() / ("ridgeline_private_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "my_gpu.yaml") << test::edited(test::edited(test::shipped_text("h100_sxm"),
                                                                  "name: NVIDIA H100 SXM5 80GB", "name: Lab H100"),
                                                     "aliases: [H100-SXM5-80GB, H100-SXM-80GB, H100-SXM5, H100-SXM, "
                                                     "H100, H100-80GB]",
                                                     "aliases: [Lab-H100]");
  std::ofstream(dir / "h100_sxm.yaml") << test::edited(test::shipped_text("h100_sxm"), "price_per_gpu_hour: 2.99 USD/h",
                                                       "price_per_gpu_hour: 1.50 USD/h");
  ::setenv("RIDGELINE_PROFILE_PATH", dir.c_str(), 1);
  const auto list = test::run_cli("list gpus");
  const auto verbose = test::run_cli("check --verbose h100_sxm");
  const auto alias = test::run_cli("check lab-h100");
  // A second profile claiming the shipped alias "H100": the name is ambiguous.
  std::ofstream(dir / "twin.yaml") << test::edited(test::shipped_text("h100_sxm"),
                                                   "aliases: [H100-SXM5-80GB, H100-SXM-80GB, H100-SXM5, H100-SXM, "
                                                   "H100, H100-80GB]",
                                                   "aliases: [H100]");
  const auto twin = test::run_cli("predict --gpu H100");
  ::setenv("RIDGELINE_PROFILE_PATH", "/no/such/folder", 1);
  const auto missing = test::run_cli("list gpus");
  ::unsetenv("RIDGELINE_PROFILE_PATH");
  CHECK(list.status == 0);
  CHECK(list.out.find("my_gpu           Lab H100") != std::string::npos);
  CHECK(list.out.find("(private: " + (dir / "my_gpu.yaml").string() + ")\n") != std::string::npos);
  CHECK(list.out.find("(private: " + (dir / "h100_sxm.yaml").string() + ", replaces the shipped one)\n") !=
        std::string::npos);
  CHECK(list.out.find("b200 ") != std::string::npos);  // the shipped set stays
  CHECK(verbose.out.find("  price         1.50 USD per GPU-hour\n") != std::string::npos);
  CHECK(alias.out == (dir / "my_gpu.yaml").string() + ": ok (hardware profile)\n");
  CHECK(twin.status == 2);
  CHECK(twin.err == "error: --gpu: 'H100' names more than one GPU profile: h100_sxm, twin; give one of them\n");
  CHECK(missing.status == 2);
  CHECK(missing.err == "error: RIDGELINE_PROFILE_PATH: no such folder '/no/such/folder'\n");
  fs::remove_all(dir);
}

}  // TEST_SUITE

// GPT-OSS-120B (openai/gpt-oss-120b config.json; transformers
// modeling_gpt_oss.py): h 2880, 64 query heads and 8 KV heads of 64,
// biased q/k/v/o, one attention sink per head, 128 experts of 2880 (SwiGLU,
// gate/up and down biased), a biased router, 36 layers, vocab 201088.
//   attention 2880 x (4096 + 2 x 512) + 4096 x 2880 + (4096 + 1024 + 2880) + 64 sinks
//     = 26,550,144 a layer
//   expert 3 x 2880^2 + (2 x 2880 + 2880) = 24,891,840; router 2880 x 128 + 128 = 368,768
//   layer 26,550,144 + 128 x 24,891,840 + 368,768 + 2 x 2880 = 3,213,080,192
//   active layer 26,550,144 + 4 x 24,891,840 + 368,768 + 5,760 = 126,492,032
// Total 2 x 201088 x 2880 + 2880 + 36 x 3,213,080,192 = 116,829,156,672
//   (model card, arXiv:2508.10925, Table 1: 116.83B; MLP 36 x 3,186,524,288 =
//   114.71B, attention 36 x 26,550,144 = 0.96B, embedding + unembedding 1.16B);
// active less the embedding lookup: 579,136,320 + 36 x 126,492,032
//   = 5,132,849,472 (the card's 5.13B, which counts the unembedding).
TEST_CASE("HF config: GPT-OSS-120B (sliding-window layers, attention sinks, biased experts)") {
  const auto m = spec::load_hf_config(hf("gpt_oss_120b/config.json"));
  CHECK(m.head_dim == 64);
  CHECK(m.kv_heads == 8);
  CHECK(m.ffn_hidden == 2880);
  CHECK(m.moe.experts == 128);
  CHECK(m.moe.top_k == 4);
  CHECK(m.moe.router_bias);
  CHECK(m.bias);
  CHECK(m.attention_sinks);
  CHECK(m.sliding_window == 128);
  CHECK(m.window_layers == 18);
  const auto c = spec::count_params(m);
  CHECK(c.attention_per_layer == 26550144.0);
  CHECK(c.per_layer == 3213080192.0);
  CHECK(c.per_layer_active == 126492032.0);
  CHECK(c.total == 116829156672.0);
  CHECK(c.active - c.embedding == 5132849472.0);
  CHECK(c.total == doctest::Approx(117e9).epsilon(0.01));
  CHECK(c.active - c.embedding == doctest::Approx(5.1e9).epsilon(0.01));
  // The shipped YAML is the same model.
  const auto y = test::model("gpt_oss_120b");
  const auto cy = spec::count_params(y);
  CHECK(cy.total == c.total);
  CHECK(cy.active == c.active);
  CHECK(y.window_layers == 18);
  CHECK(y.sliding_window == 128);
}

// Nemotron-4 15B in transformers' NemotronConfig keys (tests/data/hf/SOURCES.md):
// an MLP not gated with relu2 (squared ReLU), LayerNorm (weight and bias, 2h),
// GQA 48 / 8 heads of 128, untied. Hand count:
//   attention 6144 x (6144 + 2 x 1024) + 6144 x 6144 = 88,080,384
//   MLP 2 x 6144 x 24576 = 301,989,888; norms 2 x 2 x 6144 = 24,576
//   layer 390,094,848; 32 layers 12,483,035,136, + final norm 12,288
//   embedding and LM head 2 x 256000 x 6144 = 3,145,728,000
//   total 15,628,775,424: Nemotron-4 15B (arXiv:2402.16819, Sec. 2: "3.2
//   billion embedding parameters and 12.5 billion non-embedding parameters").
TEST_CASE("HF config: Nemotron-4 15B (nemotron: squared ReLU, LayerNorm, not gated)") {
  const auto m = spec::load_hf_config(hf("nemotron4_15b/config.json"));
  CHECK(m.activation == spec::Activation::kSquaredRelu);
  CHECK_FALSE(spec::is_gated(m.activation));
  CHECK(m.norm == spec::Norm::kLayerNorm);
  CHECK_FALSE(m.bias);
  CHECK_FALSE(m.tied_embeddings);
  CHECK(m.kv_heads == 8);
  CHECK(m.head_dim == 128);
  const auto c = spec::count_params(m);
  CHECK(c.attention_per_layer == 88080384.0);
  CHECK(c.per_layer == 390094848.0);
  CHECK(c.total == 15628775424.0);
  CHECK(c.embedding + c.lm_head == doctest::Approx(3.2e9).epsilon(0.02));
  CHECK(c.total - c.embedding - c.lm_head == doctest::Approx(12.5e9).epsilon(0.01));
  CHECK(std::string(spec::name(m.activation)) == "squared_relu");
  // A gated activation is not what a nemotron MLP runs: located, not guessed.
  const std::string bad =
      write_temp("nemotron_silu.json", "{\"model_type\": \"nemotron\", \"hidden_size\": 64, \"num_hidden_layers\": 2,\n"
                                       " \"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 256,\n"
                                       " \"hidden_act\": \"silu\"}\n");
  CHECK(hf_errors(bad, {}) ==
        Lines{bad + ":3:16: error: hidden_act: expected relu2, relu or a gelu for a nemotron MLP, got \"silu\""});
  // The shipped YAML is the same model.
  CHECK(spec::count_params(test::model("nemotron4_15b")).total == c.total);
  // Nemotron-4 340B (models/nemotron4_340b.yaml): heads of 18432 / 96 = 192,
  //   attention 18432 x (18432 + 2 x 8 x 192) + 18432^2 = 736,100,352
  //   MLP 2 x 18432 x 73728 = 2,717,908,992; norms 4 x 18432 = 73,728
  //   96 layers 331,591,974,912 (+ final norm 36,864); embedding and head
  //   2 x 256000 x 18432 = 9,437,184,000: the report's 331.6B and 9.4B.
  const auto c340 = spec::count_params(test::model("nemotron4_340b"));
  CHECK(c340.per_layer == 3454083072.0);
  CHECK(c340.total == 341029195776.0);
}

// GPT-OSS-20B (openai/gpt-oss-20b config.json): the same block as the 120B
// above with 32 experts, 24 layers (12 windowed).
//   router 2880 x 32 + 32 = 92,192
//   layer 26,550,144 + 32 x 24,891,840 + 92,192 + 5,760 = 823,186,976
//   active layer 26,550,144 + 4 x 24,891,840 + 92,192 + 5,760 = 126,215,456
// Total 2 x 201088 x 2880 + 2880 + 24 x 823,186,976 = 20,914,757,184
//   (model card, arXiv:2508.10925, Table 1: 20.91B);
// active less the embedding lookup: 579,136,320 + 24 x 126,215,456
//   = 3,608,307,264 (the card's 3.61B).
TEST_CASE("model YAML: GPT-OSS-20B's parameter counts are the model card's") {
  const auto m = test::model("gpt_oss_20b");
  CHECK(m.window_layers == 12);
  CHECK(m.moe.experts == 32);
  const auto c = spec::count_params(m);
  CHECK(c.per_layer == 823186976.0);
  CHECK(c.per_layer_active == 126215456.0);
  CHECK(c.total == 20914757184.0);
  CHECK(c.active - c.embedding == 3608307264.0);
}

TEST_CASE("model YAML: window_layers without sliding_window, and a window without its layers, are refused") {
  const auto dir = std::filesystem::temp_directory_path();
  const auto a = dir / "ridgeline_window_a.yaml";
  std::ofstream(a) << "name: w\nlayers: 2\nhidden: 64\nheads: 4\nffn_hidden: 128\nvocab: 100\nmax_seq_len: 256\n"
                      "window_layers: 1\n";
  CHECK_THROWS_WITH(spec::load_model(a.string()),
                    doctest::Contains("window_layers needs sliding_window (the window's length in tokens)"));
  const auto b = dir / "ridgeline_window_b.yaml";
  std::ofstream(b) << "name: w\nlayers: 2\nhidden: 64\nheads: 4\nffn_hidden: 128\nvocab: 100\nmax_seq_len: 256\n"
                      "sliding_window: 16\n";
  CHECK_THROWS_WITH(spec::load_model(b.string()), doctest::Contains("window_layers"));
}

TEST_CASE("cli: check reads framework profiles as framework profiles") {
  // frameworks/*.yaml are read by spec::load_framework (their `value:` /
  // `source:` behaviours), not as plans: the shipped ones are ok, a bad
  // value is located.
  const auto r = test::run_cli("check frameworks");
  CHECK(r.status == 0);
  CHECK(r.out ==
        "frameworks/deepspeed.yaml: ok (framework profile)\nframeworks/fsdp.yaml: ok (framework profile)\n"
        "frameworks/hf.yaml: ok (framework profile)\nframeworks/megatron.yaml: ok (framework profile)\n"
        "frameworks/torchtitan.yaml: ok (framework profile)\n");
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ridgeline_fw_" + std::to_string(::getpid())) / "frameworks";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "x.yaml") << "id: x\nrefuses:\n  indivisible_layers: maybe\n";
  const auto bad = test::run_cli("check " + (dir / "x.yaml").string());
  std::filesystem::remove_all(dir.parent_path());
  CHECK(bad.status == 2);
  CHECK(bad.err.find("x.yaml:") != std::string::npos);
}
