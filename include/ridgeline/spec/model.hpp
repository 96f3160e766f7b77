// Model: a decoder-only transformer, from models/NAME.yaml or a Hugging Face
// config.json. Plain data; counts are exact integers.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ridgeline/spec/field_override.hpp"

namespace ridgeline::spec {

enum class Activation : std::uint8_t { kGelu, kRelu, kSwiglu, kGeglu };
enum class Norm : std::uint8_t { kLayerNorm, kRmsNorm };
enum class Position : std::uint8_t { kLearned, kRope, kAlibi, kNone };

constexpr bool is_gated(Activation a) { return a == Activation::kSwiglu || a == Activation::kGeglu; }

struct MoeSpec {
  int experts = 0;  // 0 = dense model
  int top_k = 0;
};

struct ModelSpec {
  std::string id;  // file stem, or a config.json's folder name
  std::string name;
  /// The Hugging Face Hub repository the architecture is published under
  /// ("meta-llama/Meta-Llama-3-8B"), so --model accepts that name; "" = none.
  std::string hub_id;
  std::string source_file;
  /// What the loader approximated (a config.json feature Ridgeline does not
  /// model but that changes little), one sentence each; `check --verbose` prints them.
  std::vector<std::string> notes;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;  // defaults to hidden / heads
  int ffn_hidden = 0;
  int vocab = 0;
  int max_seq_len = 0;
  Activation activation = Activation::kGelu;
  Norm norm = Norm::kLayerNorm;
  Position position = Position::kLearned;
  bool tied_embeddings = false;
  bool bias = true;
  double dropout = 0.0;
  MoeSpec moe;

  double q_dim() const { return static_cast<double>(heads) * head_dim; }
  double kv_dim() const { return static_cast<double>(kv_heads) * head_dim; }
  bool is_moe() const { return moe.experts > 0; }
};

/// Parameter counts (exact), from the architecture.
struct ParamCounts {
  double embedding = 0;     // token (+ learned position) embedding
  double per_layer = 0;     // one decoder layer, all experts
  double per_layer_active = 0;  // one decoder layer, top-k experts
  double attention_per_layer = 0;
  double mlp_per_layer = 0;  // all experts
  double norms_per_layer = 0;
  double final_norm = 0;
  double lm_head = 0;  // 0 when tied
  double total = 0;
  double active = 0;  // parameters touched per token (MoE: top-k experts)
};

ParamCounts count_params(const ModelSpec& m);

/// Loads and validates models/NAME.yaml.
ModelSpec load_model(const std::string& path);
/// load_model with `overrides` (--set model.FIELD=VALUE) replacing or adding
/// fields before it is read, validated as the field in the file and reported
/// under their label (field_override.hpp).
ModelSpec load_model_with_overrides(const std::string& path, std::span<const FieldOverride> overrides);
/// Reads a Hugging Face config.json: model_type llama, mistral, mixtral,
/// qwen2, qwen3, qwen3_moe, gemma, gemma2, phi3, gpt2, gpt_neox; qwen2_moe
/// without shared experts. deepseek_v2/v3 and a qwen2_moe with shared
/// experts are refused, naming what is not modelled. A file named config.json
/// takes its folder's name (id and name), any other file its stem.
/// `overrides` name the config's own keys (num_hidden_layers, not layers); one
/// naming a key Ridgeline does not read is an error, not a silent no-op.
ModelSpec load_hf_config(const std::string& path);
ModelSpec load_hf_config_with_overrides(const std::string& path, std::span<const FieldOverride> overrides);
/// Validates cross-field constraints (heads divide hidden, ...); used by both loaders.
void validate_model(const ModelSpec& m, const std::string& file);

std::string_view name(Activation a);
std::string_view name(Norm n);
std::string_view name(Position p);

}  // namespace ridgeline::spec
