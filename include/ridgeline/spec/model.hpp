// Model: a decoder-only transformer, from models/NAME.yaml or a Hugging Face
// config.json. Plain data; counts are exact integers.
#pragma once

#include <cstdint>
#include <string>

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
  std::string id;  // file stem or config name
  std::string name;
  std::string source_file;
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

ModelSpec load_model(const std::string& path);
/// Reads a Hugging Face config.json (model_type llama, mistral, mixtral, qwen2, gpt2, gpt_neox).
ModelSpec load_hf_config(const std::string& path);
/// Validates cross-field constraints (heads divide hidden, ...); used by both loaders.
void validate_model(const ModelSpec& m, const std::string& file);

std::string_view name(Activation a);
std::string_view name(Norm n);
std::string_view name(Position p);

}  // namespace ridgeline::spec
