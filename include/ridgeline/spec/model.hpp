// Model: a decoder-only transformer, from models/NAME.yaml or a Hugging Face
// config.json. Plain data; counts are exact integers.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ridgeline/spec/field_override.hpp"

namespace ridgeline::spec {

/// kSquaredRelu: relu(x)^2, not gated (Primer, So et al. 2021; Nemotron-4:
/// Megatron-Core's squared_relu, torch.pow(F.relu(x), 2)).
enum class Activation : std::uint8_t { kGelu, kRelu, kSwiglu, kGeglu, kSquaredRelu };
enum class Norm : std::uint8_t { kLayerNorm, kRmsNorm };
enum class Position : std::uint8_t { kLearned, kRope, kAlibi, kNone };

constexpr bool is_gated(Activation a) { return a == Activation::kSwiglu || a == Activation::kGeglu; }

/// Multi-head latent attention (DeepSeek-V2, Sec. 2.1; deepseek-ai/DeepSeek-V3
/// inference/model.py, class MLA): queries and keys/values pass through
/// low-rank latents. Per layer, H heads, hidden h:
///   W_DQ h x q_lora_rank, its RMSNorm q_lora_rank, W_UQ q_lora_rank x H (d_nope + d_rope)
///   (q_lora_rank 0: one W_Q h x H (d_nope + d_rope), as DeepSeek-V2-Lite);
///   W_DKV h x (kv_lora_rank + d_rope), its RMSNorm kv_lora_rank,
///   W_UK and W_UV together kv_lora_rank x H (d_nope + d_v); W_O H d_v x h.
/// Config keys as named; kv_lora_rank 0 = not MLA.
struct MlaSpec {
  int q_lora_rank = 0;       // q_lora_rank (0 or null: no query compression)
  int kv_lora_rank = 0;      // kv_lora_rank
  int qk_nope_head_dim = 0;  // qk_nope_head_dim
  int qk_rope_head_dim = 0;  // qk_rope_head_dim
  int v_head_dim = 0;        // v_head_dim
};

/// A mixture-of-experts layout. The routed experts' width is the model's
/// ffn_hidden (moe_intermediate_size; Mixtral's intermediate_size).
struct MoeSpec {
  int experts = 0;  // 0 = dense model (n_routed_experts, num_experts, num_local_experts)
  int top_k = 0;    // num_experts_per_tok
  /// The always-active shared expert's width (an MLP beside the routed ones):
  /// n_shared_experts x moe_intermediate_size (DeepSeek), shared_expert_intermediate_size
  /// (Qwen2-MoE); 0 = none.
  int shared_ffn = 0;
  /// Qwen2-MoE's sigmoid gate on the shared expert's output (h weights).
  bool shared_gate = false;
  /// The first layers are dense MLPs of width dense_ffn (first_k_dense_replace
  /// and intermediate_size; Qwen's mlp_only_layers when they are the first ones).
  int dense_layers = 0;
  int dense_ffn = 0;
  /// A per-expert bias added to the router's scores for selection (DeepSeek-V3's
  /// e_score_correction_bias, topk_method noaux_tc): experts weights.
  bool router_bias = false;
  /// Node-limited routing: experts in n_group groups, a token's experts from
  /// topk_group of them (n_group, topk_group); 0 = not limited.
  int groups = 0;
  int topk_groups = 0;
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
  MlaSpec mla;
  /// Multi-token prediction modules (num_nextn_predict_layers; DeepSeek-V3
  /// Sec. 2.2): each an extra decoder layer, counted apart from the main model.
  int mtp_layers = 0;
  /// Sliding-window attention (GPT-OSS: sliding_window, and layer_types
  /// "sliding_attention"): on window_layers of the layers a query sees the
  /// sliding_window keys up to itself; the others attend in full. The
  /// windowed layers are spread evenly (GPT-OSS alternates them), so a
  /// pipeline stage holds its share. 0 = full attention everywhere.
  int sliding_window = 0;
  int window_layers = 0;
  /// Attention sinks (GPT-OSS): one learned logit per head added to the
  /// softmax's denominator, heads parameters a layer; b x heads x s FLOPs a
  /// layer, not costed (against 4 b heads s w d of the windowed core).
  bool attention_sinks = false;

  double q_dim() const { return static_cast<double>(heads) * head_dim; }
  double kv_dim() const { return static_cast<double>(kv_heads) * head_dim; }
  bool is_moe() const { return moe.experts > 0; }
  bool is_mla() const { return mla.kv_lora_rank > 0; }
  /// Layers whose MLP is routed experts (all of them but the dense first ones).
  int moe_layers() const { return is_moe() ? layers - moe.dense_layers : 0; }
};

/// Parameter counts (exact), from the architecture.
/// The main model's (total, active) leave the multi-token prediction modules
/// out, as DeepSeek-V3's published 671B does; total_with_mtp adds them.
struct ParamCounts {
  double embedding = 0;     // token (+ learned position) embedding
  double per_layer = 0;     // one decoder layer, all experts (an MoE layer in an MoE model)
  double per_layer_active = 0;  // one decoder layer, top-k experts and the shared one
  double attention_per_layer = 0;  // MLA: with its latents' RMSNorms
  double mlp_per_layer = 0;  // all experts, the shared expert, the router and its bias
  double norms_per_layer = 0;
  double dense_layer = 0;        // one of an MoE model's dense first layers (0 when none)
  double dense_mlp_per_layer = 0;  // its MLP
  double final_norm = 0;
  double lm_head = 0;  // 0 when tied
  double total = 0;
  double active = 0;  // parameters touched per token (MoE: top-k experts)
  double mtp = 0;     // the MTP modules' own parameters (embedding and head shared)
  double mtp_active = 0;
  double total_with_mtp = 0;
};

ParamCounts count_params(const ModelSpec& m);

/// Loads and validates models/NAME.yaml.
ModelSpec load_model(const std::string& path);
/// load_model with `overrides` (--set model.FIELD=VALUE) replacing or adding
/// fields before it is read, validated as the field in the file and reported
/// under their label (field_override.hpp).
ModelSpec load_model_with_overrides(const std::string& path, std::span<const FieldOverride> overrides);
/// Reads a Hugging Face config.json: model_type llama, mistral, mixtral,
/// qwen2, qwen2_moe, qwen3, qwen3_moe, gemma, gemma2, phi3, gpt2, gpt_neox,
/// deepseek_v2, deepseek_v3 (Kimi K2) and gpt_oss. What is not modelled (an MoE layer
/// every other layer, dense layers among the MoE ones) is refused, naming it. A file named config.json
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
