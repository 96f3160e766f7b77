#include "ridgeline/spec/model.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>
#include <fmt/format.h>

#include "ridgeline/spec/json_reader.hpp"
#include "ridgeline/spec/yaml_reader.hpp"

namespace ridgeline::spec {

namespace {

std::optional<Activation> parse_activation(std::string_view s) {
  if (s == "gelu") return Activation::kGelu;
  if (s == "relu") return Activation::kRelu;
  if (s == "squared_relu") return Activation::kSquaredRelu;
  if (s == "swiglu") return Activation::kSwiglu;
  if (s == "geglu") return Activation::kGeglu;
  return std::nullopt;
}
std::optional<Norm> parse_norm(std::string_view s) {
  if (s == "layernorm") return Norm::kLayerNorm;
  if (s == "rmsnorm") return Norm::kRmsNorm;
  return std::nullopt;
}
std::optional<Position> parse_position(std::string_view s) {
  if (s == "learned") return Position::kLearned;
  if (s == "rope") return Position::kRope;
  if (s == "alibi") return Position::kAlibi;
  if (s == "none") return Position::kNone;
  return std::nullopt;
}

/// Where a key's value is in the file, or nullopt when the file has no such key.
using Locate = std::function<std::optional<support::SourceLoc>(const char* key)>;

/// Cross-field checks, located at the offending key when the file has it, else
/// at `root_loc`. `explicit_head_dim`: the file states head_dim, so heads need
/// not divide the hidden size.
/// The names of the MoE and MLA fields in the file checked (models/*.yaml or config.json).
struct Keys {
  const char* top_k_at = "moe";  // where an out-of-range top-k is reported
  const char* top_k = "moe.top_k";
  const char* dense_layers = "moe.dense_layers";
  const char* groups = "moe.groups";
  const char* topk_groups = "moe.topk_groups";
  const char* qk_nope = "mla.qk_nope_head_dim";
  const char* window_layers = "window_layers";
};
constexpr Keys kYamlKeys{};
constexpr Keys kHfKeys{"num_experts_per_tok", "num_experts_per_tok", "first_k_dense_replace", "n_group",
                       "topk_group", "qk_nope_head_dim", "layer_types"};

void check(const ModelSpec& m, const Locate& locate, const support::SourceLoc& root_loc, bool explicit_head_dim,
           const char* k_heads, const char* k_kv, const char* k_hidden, const Keys& k, support::DiagnosticList& d) {
  auto at = [&](const char* key) { return locate(key).value_or(root_loc); };
  const long long q_dim = static_cast<long long>(m.head_dim) * m.heads;  // 2^26 x 2^20 overflows int
  if (m.heads > 0 && m.hidden > 0 && q_dim == 0)
    d.error(at(k_heads), k_heads, "head dimension is zero");
  if (m.heads > 0 && m.hidden > 0 && m.hidden % m.heads != 0 && q_dim != m.hidden && !explicit_head_dim) {
    d.error(at(k_heads), k_heads, fmt::format("{} heads do not divide {} {}", m.heads, k_hidden, m.hidden));
    return;  // one clear line: the KV-head checks below would only echo this one
  }
  if (m.heads > 0 && m.kv_heads > 0 && m.heads % m.kv_heads != 0)
    d.error(at(k_kv), k_kv, fmt::format("{} KV heads do not divide {} heads", m.kv_heads, m.heads));
  if (m.kv_heads > m.heads && m.heads > 0)
    d.error(at(k_kv), k_kv, fmt::format("{} KV heads exceed {} heads", m.kv_heads, m.heads));
  if (m.moe.experts > 0 && (m.moe.top_k < 1 || m.moe.top_k > m.moe.experts))
    d.error(at(k.top_k_at), k.top_k, fmt::format("expected 1 to {} experts per token, got {}", m.moe.experts,
                                              m.moe.top_k));
  if (m.moe.experts > 0 && m.moe.dense_layers >= m.layers && m.layers > 0)
    d.error(at(k.dense_layers), k.dense_layers,
            fmt::format("{} dense layers leave none of the {} layers with experts", m.moe.dense_layers, m.layers));
  if (m.moe.experts > 0 && m.moe.groups > 0) {
    if (m.moe.experts % m.moe.groups != 0)
      d.error(at(k.groups), k.groups,
              fmt::format("{} expert groups do not divide {} experts", m.moe.groups, m.moe.experts));
    else if (m.moe.topk_groups > m.moe.groups)
      d.error(at(k.topk_groups), k.topk_groups,
              fmt::format("{} groups a token may use exceed the {} groups", m.moe.topk_groups, m.moe.groups));
  }
  if (m.sliding_window > 0 && m.window_layers > m.layers && m.layers > 0)
    d.error(at(k.window_layers), k.window_layers,
            fmt::format("{} windowed layers exceed the {} layers", m.window_layers, m.layers));
  // MLA: the query/key head is d_nope + d_rope wide (head_dim), the value head d_v.
  if (m.is_mla() && m.head_dim != m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim)
    d.error(at(k.qk_nope), k.qk_nope,
            fmt::format("the query/key head dimension {} is not qk_nope_head_dim + qk_rope_head_dim = {} + {}",
                        m.head_dim, m.mla.qk_nope_head_dim, m.mla.qk_rope_head_dim));
  if (m.is_mla() && m.kv_heads != m.heads)
    d.error(at(k_kv), k_kv,
            fmt::format("multi-head latent attention has one key/value head per query head ({}), got {}", m.heads,
                        m.kv_heads));
}

/// The checks for a YAML model (`root`) or a spec with no file behind it (nullptr).
void check(const ModelSpec& m, const YamlNode* root, const std::string& file, const char* k_heads,
           const char* k_kv, const char* k_hidden, support::DiagnosticList& d) {
  // A dotted key ("moe.groups") names a field of a nested map.
  const Locate locate = [&](const char* key) -> std::optional<support::SourceLoc> {
    if (!root) return std::nullopt;
    YamlNode node = *root;
    for (const auto& part : split_field_path(key)) {
      if (!node.IsMap() || !node[part].IsDefined()) return std::nullopt;
      node = node[part];
    }
    return loc_of(file, node);
  };
  const support::SourceLoc root_loc = root ? loc_of(file, *root) : support::SourceLoc{file, 0, 0};
  check(m, locate, root_loc, (root && (*root)["head_dim"].IsDefined()) || m.is_mla(), k_heads, k_kv, k_hidden,
        kYamlKeys, d);
}

/// "owner/name": two non-empty parts of letters, digits, '-', '_' and '.'
/// (the Hub's repository naming rule).
bool valid_hub_id(std::string_view s) {
  const size_t slash = s.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == s.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (i == slash) continue;
    if (!std::isalnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

/// An override of a config.json key that no getter read would change nothing:
/// an unknown key gets a did-you-mean among the keys read, a key the file
/// has but Ridgeline does not read says so.
void check_overrides_read(const JsonMapReader& r, std::span<const FieldOverride> overrides, const std::string& type,
                          support::DiagnosticList& d) {
  std::vector<std::string> read;
  for (const auto& k : r.read_keys())
    if (std::find(read.begin(), read.end(), k) == read.end()) read.push_back(k);
  for (const FieldOverride& o : overrides) {
    const std::string key = split_field_path(o.field).front();
    if (std::find(read.begin(), read.end(), key) != read.end() && key == o.field) continue;
    // The models/*.yaml name of a field, for the config.json key it maps to.
    static constexpr std::pair<std::string_view, std::string_view> kYamlToHf[] = {
        {"layers", "num_hidden_layers"}, {"layers", "n_layer"},
        {"hidden", "hidden_size"},       {"hidden", "n_embd"},
        {"heads", "num_attention_heads"}, {"heads", "n_head"},
        {"kv_heads", "num_key_value_heads"}, {"ffn_hidden", "intermediate_size"},
        {"ffn_hidden", "n_inner"},       {"vocab", "vocab_size"},
        {"max_seq_len", "max_position_embeddings"}, {"max_seq_len", "n_positions"},
        {"tied_embeddings", "tie_word_embeddings"}, {"moe.experts", "num_local_experts"},
        {"moe.experts", "n_routed_experts"}, {"moe.experts", "num_experts"},
        {"moe.top_k", "num_experts_per_tok"}, {"moe.dense_layers", "first_k_dense_replace"},
        {"moe.dense_ffn", "intermediate_size"}, {"moe.shared_ffn", "n_shared_experts"},
        {"moe.shared_ffn", "shared_expert_intermediate_size"}, {"moe.groups", "n_group"},
        {"moe.topk_groups", "topk_group"}, {"mtp_layers", "num_nextn_predict_layers"},
        {"mla.q_lora_rank", "q_lora_rank"}, {"mla.kv_lora_rank", "kv_lora_rank"},
        {"mla.qk_nope_head_dim", "qk_nope_head_dim"}, {"mla.qk_rope_head_dim", "qk_rope_head_dim"},
        {"mla.v_head_dim", "v_head_dim"}};
    std::string hf_key;
    for (const auto& [yaml, json] : kYamlToHf)
      if (yaml == o.field && hf_key.empty() && std::find(read.begin(), read.end(), json) != read.end())
        hf_key = json;
    if (!hf_key.empty()) {
      d.error({}, o.label, fmt::format("a {} config.json names this field '{}' (--set model.{}=...)", type, hf_key,
                                       hf_key));
      continue;
    }
    std::string all;
    for (const auto& k : read) all += (all.empty() ? "" : ", ") + k;
    if (const std::string guess = support::closest_match(key, read); !guess.empty())
      d.error({}, o.label, fmt::format("unknown key '{}'; did you mean '{}'?", key, guess));
    else
      d.error({}, o.label, fmt::format("Ridgeline does not read '{}' from a {} config.json; it reads {}", key, type, all));
  }
}

}  // namespace

std::string_view name(Activation a) {
  switch (a) {
    case Activation::kGelu: return "gelu";
    case Activation::kRelu: return "relu";
    case Activation::kSwiglu: return "swiglu";
    case Activation::kGeglu: return "geglu";
    case Activation::kSquaredRelu: return "squared_relu";
  }
  return "gelu";
}
std::string_view name(Norm n) { return n == Norm::kLayerNorm ? "layernorm" : "rmsnorm"; }
std::string_view name(Position p) {
  switch (p) {
    case Position::kLearned: return "learned";
    case Position::kRope: return "rope";
    case Position::kAlibi: return "alibi";
    case Position::kNone: return "none";
  }
  return "none";
}

/// Exact parameter count: embeddings (+ learned positions), per layer
/// attention, MLP, norms (LayerNorm 2h, RMSNorm h), final norm, LM head V h
/// unless tied.
///   attention, grouped-query: QKV h(q + 2 kv) and output q h (+ biases);
///   attention, MLA (MlaSpec): h r_q + r_q + r_q H d_qk (r_q = 0: h H d_qk)
///     + h (r_kv + d_rope) + r_kv + r_kv H (d_nope + d_v) + H d_v h;
///   MLP, one of width f: k h f (k = 3 gated, 2 otherwise, + biases);
///   MoE layer: E experts of width f, the shared expert (width f_s, + Qwen2-MoE's
///     gate h), the router h E (+ DeepSeek-V3's correction bias E); active: top-k experts;
///   an MoE model's first dense_layers layers: one MLP of width dense_ffn;
///   MTP module (DeepSeek-V3 README_WEIGHTS.md): eh_proj 2h x h, enorm and hnorm
///     (h each), one MoE decoder layer; embedding and head shared, so not counted.
ParamCounts count_params(const ModelSpec& m) {
  ParamCounts c;
  const double h = m.hidden, q = m.q_dim(), kv = m.kv_dim(), f = m.ffn_hidden, V = m.vocab;
  const double nb = m.bias ? 1.0 : 0.0;
  c.embedding = V * h + (m.position == Position::kLearned ? static_cast<double>(m.max_seq_len) * h : 0.0);
  if (m.is_mla()) {
    const auto& a = m.mla;
    const double H = m.heads, d_qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    const double q_proj = a.q_lora_rank > 0 ? h * a.q_lora_rank + a.q_lora_rank + a.q_lora_rank * H * d_qk
                                            : h * H * d_qk;
    const double kv_proj = h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank +
                           a.kv_lora_rank * H * (a.qk_nope_head_dim + a.v_head_dim);
    c.attention_per_layer = q_proj + kv_proj + H * a.v_head_dim * h;
  } else {
    c.attention_per_layer = h * (q + 2 * kv) + q * h + nb * (q + 2 * kv + h);
  }
  if (m.attention_sinks) c.attention_per_layer += m.heads;  // one sink logit per head
  const bool gated = is_gated(m.activation);
  const auto mlp = [&](double width) {
    return width > 0 ? (gated ? 3.0 : 2.0) * h * width + nb * ((gated ? 2.0 : 1.0) * width + h) : 0.0;
  };
  const double mlp_one = mlp(f);
  const double experts = m.is_moe() ? m.moe.experts : 1;
  // Per MoE layer: the router (and its bias), the shared expert (and its gate).
  const double always = m.is_moe() ? h * experts + (m.moe.router_bias ? experts : 0.0) + mlp(m.moe.shared_ffn) +
                                         (m.moe.shared_gate ? h : 0.0)
                                   : 0.0;
  c.mlp_per_layer = experts * mlp_one + always;
  const double norm = m.norm == Norm::kLayerNorm ? 2 * h : h;
  c.norms_per_layer = 2 * norm;
  c.per_layer = c.attention_per_layer + c.mlp_per_layer + c.norms_per_layer;
  c.per_layer_active = c.attention_per_layer + (m.is_moe() ? m.moe.top_k * mlp_one + always : mlp_one) +
                       c.norms_per_layer;
  const double dense = m.is_moe() ? m.moe.dense_layers : 0;
  if (dense > 0) {
    c.dense_mlp_per_layer = mlp(m.moe.dense_ffn);
    c.dense_layer = c.attention_per_layer + c.dense_mlp_per_layer + c.norms_per_layer;
  }
  const double sparse = m.layers - dense;
  c.final_norm = norm;
  c.lm_head = m.tied_embeddings ? 0.0 : V * h;
  const double ends = c.embedding + c.final_norm + c.lm_head;
  c.total = ends + dense * c.dense_layer + sparse * c.per_layer;
  c.active = ends + dense * c.dense_layer + sparse * c.per_layer_active;
  c.mtp = m.mtp_layers * (2 * h * h + 2 * norm + c.per_layer);
  c.mtp_active = m.mtp_layers * (2 * h * h + 2 * norm + c.per_layer_active);
  c.total_with_mtp = c.total + c.mtp;
  return c;
}

void validate_model(const ModelSpec& m, const std::string& file) {
  support::DiagnosticList d;
  check(m, nullptr, file, "heads", "kv_heads", "hidden", d);
  d.throw_if_errors();
}

ModelSpec load_model(const std::string& path) { return load_model_with_overrides(path, {}); }

ModelSpec load_model_with_overrides(const std::string& path, std::span<const FieldOverride> overrides) {
  YamlNode root = load_yaml_file(path);
  support::DiagnosticList d;
  apply_overrides(root, overrides, d);
  ModelSpec m;
  m.source_file = path;
  m.id = std::filesystem::path(path).stem().string();
  MapReader r(root, path, "", d);
  m.name = r.string("name", true).value_or(m.id);
  if (auto hub = r.string("hub_id")) {
    if (valid_hub_id(*hub)) m.hub_id = *hub;
    else r.error_at("hub_id", fmt::format("expected a Hugging Face repository such as \"meta-llama/Meta-Llama-3-8B\" "
                                          "(owner/name), got \"{}\"", *hub));
  }
  m.layers = static_cast<int>(r.integer("layers", true, 1, 100000).value_or(0));
  m.hidden = static_cast<int>(r.integer("hidden", true, 1, 1 << 24).value_or(0));
  m.heads = static_cast<int>(r.integer("heads", true, 1, 1 << 20).value_or(0));
  m.kv_heads = static_cast<int>(r.integer("kv_heads", false, 1, 1 << 20).value_or(m.heads));
  m.ffn_hidden = static_cast<int>(r.integer("ffn_hidden", true, 1, 1 << 26).value_or(0));
  m.vocab = static_cast<int>(r.integer("vocab", true, 1, 1 << 26).value_or(0));
  m.max_seq_len = static_cast<int>(r.integer("max_seq_len", true, 1, 1 << 30).value_or(0));
  m.activation =
      r.word("activation", parse_activation, "gelu, relu, squared_relu, swiglu, geglu").value_or(Activation::kGelu);
  m.norm = r.word("norm", parse_norm, "layernorm, rmsnorm").value_or(Norm::kLayerNorm);
  m.position = r.word("position", parse_position, "learned, rope, alibi, none").value_or(Position::kLearned);
  m.tied_embeddings = r.boolean("tied_embeddings").value_or(false);
  m.bias = r.boolean("bias").value_or(true);
  m.dropout = r.number("dropout", false, 0.0, 0.99).value_or(0.0);
  const auto hd = r.integer("head_dim", false, 1, 1 << 16);
  m.head_dim = hd ? static_cast<int>(*hd) : (m.heads > 0 ? m.hidden / m.heads : 0);
  if (auto moe = r.map("moe")) {
    m.moe.experts = static_cast<int>(moe->integer("experts", true, 1, 1 << 16).value_or(0));
    m.moe.top_k = static_cast<int>(moe->integer("top_k", true, 1, 1 << 16).value_or(0));
    m.moe.shared_ffn = static_cast<int>(moe->integer("shared_ffn", false, 0, 1 << 26).value_or(0));
    m.moe.shared_gate = moe->boolean("shared_gate").value_or(false);
    m.moe.dense_layers = static_cast<int>(moe->integer("dense_layers", false, 0, 100000).value_or(0));
    // The dense layers' width: required once there are any.
    m.moe.dense_ffn = static_cast<int>(moe->integer("dense_ffn", m.moe.dense_layers > 0, 1, 1 << 26).value_or(0));
    m.moe.router_bias = moe->boolean("router_bias").value_or(false);
    m.moe.groups = static_cast<int>(moe->integer("groups", false, 1, 1 << 16).value_or(0));
    m.moe.topk_groups = static_cast<int>(moe->integer("topk_groups", m.moe.groups > 0, 1, 1 << 16).value_or(0));
    moe->finish();
  }
  if (auto mla = r.map("mla")) {
    m.mla.q_lora_rank = static_cast<int>(mla->integer("q_lora_rank", false, 0, 1 << 20).value_or(0));
    m.mla.kv_lora_rank = static_cast<int>(mla->integer("kv_lora_rank", true, 1, 1 << 20).value_or(0));
    m.mla.qk_nope_head_dim = static_cast<int>(mla->integer("qk_nope_head_dim", true, 1, 1 << 16).value_or(0));
    m.mla.qk_rope_head_dim = static_cast<int>(mla->integer("qk_rope_head_dim", true, 1, 1 << 16).value_or(0));
    m.mla.v_head_dim = static_cast<int>(mla->integer("v_head_dim", true, 1, 1 << 16).value_or(0));
    mla->finish();
    if (hd) r.error_at("head_dim", "a model with an mla block takes its head dimensions from it; remove head_dim");
    m.head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
    if (!r.has("kv_heads")) m.kv_heads = m.heads;
  }
  m.mtp_layers = static_cast<int>(r.integer("mtp_layers", false, 0, 64).value_or(0));
  m.sliding_window = static_cast<int>(r.integer("sliding_window", false, 1, 1 << 30).value_or(0));
  // The windowed layers: required with a window (no silent "all of them").
  m.window_layers = static_cast<int>(r.integer("window_layers", m.sliding_window > 0, 0, 100000).value_or(0));
  if (r.has("window_layers") && m.sliding_window == 0)
    r.error_at("window_layers", "window_layers needs sliding_window (the window's length in tokens)");
  m.attention_sinks = r.boolean("attention_sinks").value_or(false);
  r.allow("source");
  r.finish();
  if (!d.has_errors()) check(m, &root, path, "heads", "kv_heads", "hidden", d);
  relabel_overrides(d, overrides).throw_if_errors();
  return m;
}

ModelSpec load_hf_config(const std::string& path) { return load_hf_config_with_overrides(path, {}); }

ModelSpec load_hf_config_with_overrides(const std::string& path, std::span<const FieldOverride> overrides) {
  JsonValue root = load_json_file(path);
  support::DiagnosticList d;
  apply_overrides(root, overrides, d);
  const auto throw_if_errors = [&] { relabel_overrides(d, overrides).throw_if_errors(); };
  throw_if_errors();
  ModelSpec m;
  m.source_file = path;
  const std::filesystem::path fp(path);
  // A downloaded model is a folder holding config.json: the folder names it.
  const std::string folder = fp.has_parent_path() ? fp.parent_path().filename().string() : "";
  const bool named_by_folder = fp.filename() == "config.json" && !folder.empty() && folder != "." && folder != "..";
  m.id = named_by_folder ? folder : fp.stem().string();
  // Unknown keys are ignored (configs carry many Ridgeline has no use for);
  // a null optional field takes its default, as in transformers.
  JsonMapReader r(root, "", d);
  throw_if_errors();
  const auto type = r.string("model_type", true);
  r.finish();
  throw_if_errors();
  static const std::vector<std::string> kTypes = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3",
                                                  "qwen3_moe", "gemma", "gemma2", "phi3", "gpt2", "gpt_neox",
                                                  "deepseek_v2", "deepseek_v3", "gpt_oss", "nemotron"};
  if (std::find(kTypes.begin(), kTypes.end(), *type) == kTypes.end()) {
    std::string all;
    for (const auto& t : kTypes) all += (all.empty() ? "" : ", ") + t;
    r.error_at("model_type", fmt::format("unsupported model type '{}'; supported: {}", *type, all));
    throw_if_errors();
  }
  m.name = named_by_folder ? folder : fmt::format("{} ({})", m.id, *type);
  auto i = [&](const char* key, bool req, long long dflt) {
    return static_cast<int>(r.integer(key, req, 1, 1LL << 30).value_or(dflt));
  };
  const char* k_heads = "num_attention_heads";
  const char* k_kv = "num_key_value_heads";
  const char* k_hidden = "hidden_size";
  const bool gemma = *type == "gemma" || *type == "gemma2";
  const bool moe = *type == "mixtral" || *type == "qwen2_moe" || *type == "qwen3_moe";
  // GPT-OSS (transformers' GptOssConfig, modeling_gpt_oss.py): experts in
  // every layer (num_local_experts, num_experts_per_tok), each with biases,
  // a router with a bias, biased attention projections, attention sinks,
  // sliding-window layers alternating with full ones (layer_types).
  const bool gpt_oss = *type == "gpt_oss";
  // DeepSeek-V2/V3 (and Kimi K2, a deepseek_v3): multi-head latent attention,
  // shared and routed experts, dense first layers (transformers'
  // DeepseekV3Config; deepseek-ai/DeepSeek-V3 inference/model.py).
  const bool deepseek = *type == "deepseek_v2" || *type == "deepseek_v3";
  if (*type == "gpt2") {
    k_heads = "n_head";
    k_kv = "n_head";
    k_hidden = "n_embd";
    m.hidden = i("n_embd", true, 0);
    m.layers = i("n_layer", true, 0);
    m.heads = i("n_head", true, 0);
    m.kv_heads = m.heads;
    m.max_seq_len = i("n_positions", false, 1024);
    m.vocab = i("vocab_size", true, 0);
    // n_inner null means 4 x n_embd (checked below for range, in 64 bits).
    const long long ffn = r.has("n_inner") ? r.integer("n_inner", false, 1, 1LL << 26).value_or(4LL * m.hidden)
                                           : 4LL * m.hidden;
    if (ffn > (1LL << 26)) r.error_at("n_embd", fmt::format("expected at most {}, got {}", (1LL << 24), m.hidden));
    m.ffn_hidden = static_cast<int>(std::min(ffn, 1LL << 26));
    m.activation = Activation::kGelu;
    m.norm = Norm::kLayerNorm;
    m.position = Position::kLearned;
    m.tied_embeddings = r.boolean("tie_word_embeddings").value_or(true);
    m.bias = true;
    m.dropout = r.number("resid_pdrop", false, 0.0, 0.99).value_or(0.1);
  } else {
    m.hidden = i("hidden_size", true, 0);
    m.layers = i("num_hidden_layers", true, 0);
    m.heads = i("num_attention_heads", true, 0);
    m.kv_heads = r.has(k_kv) ? i(k_kv, false, m.heads) : m.heads;
    // The MoE types' experts have their own width (moe_intermediate_size);
    // intermediate_size is then the width of dense layers, which these have none of.
    const bool expert_width = (*type == "qwen2_moe" || *type == "qwen3_moe" || deepseek);
    m.ffn_hidden = expert_width ? i("moe_intermediate_size", true, 0) : i("intermediate_size", true, 0);
    m.vocab = i("vocab_size", true, 0);
    m.max_seq_len = i("max_position_embeddings", false, 2048);
    m.position = Position::kRope;
    if (*type == "gpt_neox") {
      m.activation = Activation::kGelu;
      m.norm = Norm::kLayerNorm;
      m.bias = true;
      m.tied_embeddings = r.boolean("tie_word_embeddings").value_or(false);
      m.dropout = r.number("hidden_dropout", false, 0.0, 0.99).value_or(0.0);
    } else if (*type == "nemotron") {
      // Nemotron-4 (transformers' NemotronConfig, modeling_nemotron.py): an MLP
      // that is not gated (up_proj, act_fn, down_proj), hidden_act relu2 =
      // ReLUSquaredActivation (relu, then square), LayerNorm1p (a LayerNorm
      // with zero-centred gamma: costed as a LayerNorm), untied embeddings.
      const std::string act = r.string("hidden_act").value_or("relu2");
      if (act == "relu2") m.activation = Activation::kSquaredRelu;
      else if (act == "relu") m.activation = Activation::kRelu;
      else if (act.rfind("gelu", 0) == 0) m.activation = Activation::kGelu;
      else r.error_at("hidden_act", fmt::format("expected relu2, relu or a gelu for a nemotron MLP, got \"{}\"", act));
      m.norm = Norm::kLayerNorm;
      m.bias = r.boolean("attention_bias").value_or(false) || r.boolean("mlp_bias").value_or(false);
      m.tied_embeddings = r.boolean("tie_word_embeddings").value_or(false);
      m.dropout = 0.0;
      if (r.number("partial_rotary_factor", false, 0.0, 1.0).value_or(0.5) < 1.0)
        m.notes.push_back("RoPE on part of each head (partial_rotary_factor) is costed as RoPE on all of it");
    } else {
      // Gemma names its MLP activation hidden_activation (gelu_pytorch_tanh) and
      // keeps hidden_act for older checkpoints; both gate the MLP (GeGLU).
      std::string act = r.string("hidden_act").value_or(gemma ? "gelu_pytorch_tanh" : "silu");
      if (gemma && r.has("hidden_activation")) act = r.string("hidden_activation").value_or(act);
      m.activation = (act == "silu" || act == "swish") ? Activation::kSwiglu : Activation::kGeglu;
      m.norm = Norm::kRmsNorm;
      // GPT-OSS: attention_bias for q, k, v and o; its experts' gate/up and
      // down projections carry biases too (gate_up_proj_bias, down_proj_bias).
      m.bias = gpt_oss ? r.boolean("attention_bias").value_or(true) : false;
      // transformers' GemmaConfig and Gemma2Config tie the embeddings by default.
      m.tied_embeddings = r.boolean("tie_word_embeddings").value_or(gemma);
      m.dropout = 0.0;
    }
    if (*type == "mixtral") {
      m.moe.experts = i("num_local_experts", true, 0);
      m.moe.top_k = i("num_experts_per_tok", false, 2);
    } else if (gpt_oss) {
      m.moe.experts = i("num_local_experts", true, 0);
      // The release's config names it both ways (experts_per_token, num_experts_per_tok).
      m.moe.top_k = r.has("num_experts_per_tok") ? i("num_experts_per_tok", true, 0) : i("experts_per_token", true, 0);
      m.moe.router_bias = true;  // GptOssTopKRouter: weight (experts x h) and bias (experts)
      m.attention_sinks = true;  // GptOssAttention.sinks: one per head
      m.sliding_window = i("sliding_window", true, 0);
      // layer_types names each layer; absent, GptOssConfig alternates them,
      // sliding first: ceil(layers / 2) windowed.
      const JsonValue* types = root.find("layer_types");
      if (types && types->kind == JsonValue::Kind::kArray) {
        int sliding = 0;
        for (const auto& t : types->items) {
          if (t.kind == JsonValue::Kind::kString && t.text == "sliding_attention") ++sliding;
          else if (t.kind != JsonValue::Kind::kString || t.text != "full_attention")
            r.error_at("layer_types", fmt::format("expected \"sliding_attention\" or \"full_attention\", got {}",
                                                  t.kind == JsonValue::Kind::kString ? "\"" + t.text + "\"" : "a non-string"));
        }
        r.loc("layer_types");
        if (static_cast<int>(types->items.size()) != m.layers)
          r.error_at("layer_types", fmt::format("{} layer types for {} layers", types->items.size(), m.layers));
        m.window_layers = sliding;
      } else {
        m.window_layers = (m.layers + 1) / 2;
      }
      if (r.has("swiglu_limit"))
        m.notes.push_back("the SwiGLU's clamp (swiglu_limit) is elementwise work inside the activation, not costed "
                          "apart");
      m.notes.push_back("attention sinks (one logit per head in the softmax's denominator) are counted in the "
                        "parameters; their FLOPs (b x heads x s a layer) are negligible and not costed");
    } else if (moe) {
      m.moe.experts = i("num_experts", true, 0);
      m.moe.top_k = i("num_experts_per_tok", true, 0);
      // Every layer an MoE layer (decoder_sparse_step 1) but the first
      // mlp_only_layers ones, which are dense of width intermediate_size.
      const int step = i("decoder_sparse_step", false, 1);
      const JsonValue* dense = root.find("mlp_only_layers");
      r.loc("mlp_only_layers");
      if (step != 1)
        r.error_at("decoder_sparse_step", fmt::format("an MoE layer every {} layers is not modelled; Ridgeline's "
                                                      "MoE models have experts in every layer but the first "
                                                      "dense ones (1)", step));
      else if (dense && dense->kind == JsonValue::Kind::kArray && !dense->items.empty()) {
        bool prefix = true;
        for (size_t k = 0; k < dense->items.size(); ++k)
          prefix = prefix && dense->items[k].kind == JsonValue::Kind::kNumber &&
                   dense->items[k].text == std::to_string(k);
        if (!prefix)
          r.error_at("mlp_only_layers", fmt::format("{} dense layers among the MoE layers are not modelled; "
                                                    "Ridgeline's MoE models have dense layers first (0, 1, ...) "
                                                    "or none", dense->items.size()));
        m.moe.dense_layers = static_cast<int>(dense->items.size());
        m.moe.dense_ffn = i("intermediate_size", true, 0);
      }
      if (*type == "qwen2_moe" && r.has("shared_expert_intermediate_size")) {
        // Qwen2MoeSparseMoeBlock: one shared expert of this width, its output
        // scaled by a sigmoid gate (Linear(hidden_size, 1)).
        m.moe.shared_ffn =
            static_cast<int>(r.integer("shared_expert_intermediate_size", false, 0, 1LL << 26).value_or(0));
        m.moe.shared_gate = m.moe.shared_ffn > 0;
      }
    } else if (deepseek) {
      m.moe.experts = i("n_routed_experts", true, 0);
      m.moe.top_k = i("num_experts_per_tok", true, 0);
      const int shared = static_cast<int>(r.integer("n_shared_experts", false, 0, 1 << 16).value_or(0));
      if (static_cast<long long>(shared) * m.ffn_hidden > (1LL << 26))
        r.error_at("n_shared_experts", fmt::format("expected a shared width of at most {}, got {} x {}", 1LL << 26,
                                                   shared, m.ffn_hidden));
      else
        m.moe.shared_ffn = shared * m.ffn_hidden;
      m.moe.dense_layers = static_cast<int>(r.integer("first_k_dense_replace", false, 0, 1 << 20).value_or(0));
      m.moe.dense_ffn = i("intermediate_size", m.moe.dense_layers > 0, 0);
      if (const int freq = i("moe_layer_freq", false, 1); freq != 1)
        r.error_at("moe_layer_freq", fmt::format("an MoE layer every {} layers is not modelled; Ridgeline's MoE "
                                                 "models have experts in every layer but the first dense ones (1)",
                                                 freq));
      // DeepSeek-V3's auxiliary-loss-free balancing adds a per-expert bias to
      // the scores (e_score_correction_bias, made when topk_method is noaux_tc).
      m.moe.router_bias = r.string("topk_method").value_or("") == "noaux_tc";
      m.moe.groups = static_cast<int>(r.integer("n_group", false, 1, 1 << 16).value_or(0));
      m.moe.topk_groups = static_cast<int>(r.integer("topk_group", false, 1, 1 << 16).value_or(0));
      if (m.moe.groups > 0 && m.moe.topk_groups == 0) m.moe.topk_groups = m.moe.groups;
      m.mtp_layers = static_cast<int>(r.integer("num_nextn_predict_layers", false, 0, 64).value_or(0));
      m.mla.q_lora_rank = static_cast<int>(r.integer("q_lora_rank", false, 0, 1 << 20).value_or(0));
      m.mla.kv_lora_rank = static_cast<int>(r.integer("kv_lora_rank", true, 1, 1 << 20).value_or(0));
      m.mla.qk_nope_head_dim = static_cast<int>(r.integer("qk_nope_head_dim", true, 1, 1 << 16).value_or(0));
      m.mla.qk_rope_head_dim = static_cast<int>(r.integer("qk_rope_head_dim", true, 1, 1 << 16).value_or(0));
      m.mla.v_head_dim = static_cast<int>(r.integer("v_head_dim", true, 1, 1 << 16).value_or(0));
      // Every query head has its own up-projected key and value.
      m.kv_heads = m.heads;
      if (m.moe.groups > 1)
        m.notes.push_back(fmt::format("node-limited routing ({} groups, {} a token) changes no FLOPs; it is kept for "
                                      "the expert-parallel communication", m.moe.groups, m.moe.topk_groups));
    }
    if (*type == "qwen3" || *type == "qwen3_moe")
      m.notes.push_back("the per-head RMSNorm of queries and keys (2 x head_dim weights a layer) is not counted");
    if (*type == "gemma2")
      m.notes.push_back("the norms after attention and after the MLP (2 x hidden weights a layer) are not counted");
    // A sliding window in use (mistral, phi3, gemma2's every other layer) is
    // modelled as full attention: exact up to the window, attention FLOPs
    // overestimated beyond it. Qwen configs carry a window they do not use.
    const bool window_used = !r.has("use_sliding_window") || r.boolean("use_sliding_window").value_or(false);
    if (r.has("sliding_window") && window_used && !gpt_oss) {
      if (const auto w = r.integer("sliding_window", false, 1, 1LL << 30); w && *w < m.max_seq_len)
        m.notes.push_back(fmt::format("sliding-window attention ({} tokens{}) is modelled as full attention: exact "
                                      "for sequences up to the window, attention work overestimated beyond it",
                                      *w, *type == "gemma2" ? ", every other layer" : ""));
    }
  }
  if (m.is_mla())
    m.head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;  // the query/key head; values: v_head_dim
  else
    m.head_dim = r.has("head_dim") ? i("head_dim", false, 0) : (m.heads > 0 ? m.hidden / m.heads : 0);
  r.finish();
  check_overrides_read(r, overrides, *type, d);
  if (!d.has_errors())
    check(m, [&](const char* key) { return r.loc(key); }, r.self_loc(), r.has("head_dim") || m.is_mla(), k_heads,
          k_kv, k_hidden, kHfKeys, d);
  throw_if_errors();
  return m;
}

}  // namespace ridgeline::spec
