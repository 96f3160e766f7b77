#include "ridgeline/spec/model.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <optional>
#include <fmt/format.h>

#include "ridgeline/spec/json_reader.hpp"
#include "ridgeline/spec/yaml_reader.hpp"

namespace ridgeline::spec {

namespace {

std::optional<Activation> parse_activation(std::string_view s) {
  if (s == "gelu") return Activation::kGelu;
  if (s == "relu") return Activation::kRelu;
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
void check(const ModelSpec& m, const Locate& locate, const support::SourceLoc& root_loc, bool explicit_head_dim,
           const char* k_heads, const char* k_kv, const char* k_hidden, support::DiagnosticList& d) {
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
    d.error(at("moe"), "moe.top_k", fmt::format("expected 1 to {} experts per token, got {}", m.moe.experts,
                                                m.moe.top_k));
}

/// The checks for a YAML model (`root`) or a spec with no file behind it (nullptr).
void check(const ModelSpec& m, const YAML::Node* root, const std::string& file, const char* k_heads,
           const char* k_kv, const char* k_hidden, support::DiagnosticList& d) {
  const Locate locate = [&](const char* key) -> std::optional<support::SourceLoc> {
    if (root && (*root)[key].IsDefined()) return loc_of(file, (*root)[key]);
    return std::nullopt;
  };
  const support::SourceLoc root_loc = root ? loc_of(file, *root) : support::SourceLoc{file, 0, 0};
  check(m, locate, root_loc, root && (*root)["head_dim"].IsDefined(), k_heads, k_kv, k_hidden, d);
}

}  // namespace

std::string_view name(Activation a) {
  switch (a) {
    case Activation::kGelu: return "gelu";
    case Activation::kRelu: return "relu";
    case Activation::kSwiglu: return "swiglu";
    case Activation::kGeglu: return "geglu";
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

/// Exact parameter count: embeddings (+ learned positions), per layer QKV
/// h(q + 2 kv) and output q h (+ biases), MLP k h f (k = 3 gated, 2 otherwise;
/// x experts, + router h E), norms (LayerNorm 2h, RMSNorm h), final norm,
/// LM head V h unless tied.
ParamCounts count_params(const ModelSpec& m) {
  ParamCounts c;
  const double h = m.hidden, q = m.q_dim(), kv = m.kv_dim(), f = m.ffn_hidden, V = m.vocab;
  const double nb = m.bias ? 1.0 : 0.0;
  c.embedding = V * h + (m.position == Position::kLearned ? static_cast<double>(m.max_seq_len) * h : 0.0);
  c.attention_per_layer = h * (q + 2 * kv) + q * h + nb * (q + 2 * kv + h);
  const bool gated = is_gated(m.activation);
  const double mlp_one = (gated ? 3.0 : 2.0) * h * f + nb * ((gated ? 2.0 : 1.0) * f + h);
  const double experts = m.is_moe() ? m.moe.experts : 1;
  c.mlp_per_layer = experts * mlp_one + (m.is_moe() ? h * experts : 0.0);
  const double norm = m.norm == Norm::kLayerNorm ? 2 * h : h;
  c.norms_per_layer = 2 * norm;
  c.per_layer = c.attention_per_layer + c.mlp_per_layer + c.norms_per_layer;
  c.per_layer_active = c.attention_per_layer + (m.is_moe() ? m.moe.top_k * mlp_one + h * experts : mlp_one) +
                       c.norms_per_layer;
  c.final_norm = norm;
  c.lm_head = m.tied_embeddings ? 0.0 : V * h;
  c.total = c.embedding + m.layers * c.per_layer + c.final_norm + c.lm_head;
  c.active = c.embedding + m.layers * c.per_layer_active + c.final_norm + c.lm_head;
  return c;
}

void validate_model(const ModelSpec& m, const std::string& file) {
  support::DiagnosticList d;
  check(m, nullptr, file, "heads", "kv_heads", "hidden", d);
  d.throw_if_errors();
}

ModelSpec load_model(const std::string& path) {
  YAML::Node root = load_yaml_file(path);
  support::DiagnosticList d;
  ModelSpec m;
  m.source_file = path;
  m.id = std::filesystem::path(path).stem().string();
  MapReader r(root, path, "", d);
  m.name = r.string("name", true).value_or(m.id);
  m.layers = static_cast<int>(r.integer("layers", true, 1, 100000).value_or(0));
  m.hidden = static_cast<int>(r.integer("hidden", true, 1, 1 << 24).value_or(0));
  m.heads = static_cast<int>(r.integer("heads", true, 1, 1 << 20).value_or(0));
  m.kv_heads = static_cast<int>(r.integer("kv_heads", false, 1, 1 << 20).value_or(m.heads));
  m.ffn_hidden = static_cast<int>(r.integer("ffn_hidden", true, 1, 1 << 26).value_or(0));
  m.vocab = static_cast<int>(r.integer("vocab", true, 1, 1 << 26).value_or(0));
  m.max_seq_len = static_cast<int>(r.integer("max_seq_len", true, 1, 1 << 30).value_or(0));
  m.activation = r.word("activation", parse_activation, "gelu, relu, swiglu, geglu").value_or(Activation::kGelu);
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
    moe->finish();
  }
  r.allow("source");
  r.finish();
  if (!d.has_errors()) check(m, &root, path, "heads", "kv_heads", "hidden", d);
  d.throw_if_errors();
  return m;
}

ModelSpec load_hf_config(const std::string& path) {
  const JsonValue root = load_json_file(path);
  support::DiagnosticList d;
  ModelSpec m;
  m.source_file = path;
  m.id = std::filesystem::path(path).stem().string();
  // Unknown keys are ignored (configs carry many Ridgeline has no use for);
  // a null optional field takes its default, as in transformers.
  JsonMapReader r(root, path, "", d);
  d.throw_if_errors();
  const auto type = r.string("model_type", true);
  r.finish();
  d.throw_if_errors();
  static const std::vector<std::string> kTypes = {"llama", "mistral", "mixtral", "qwen2", "gpt2", "gpt_neox"};
  if (std::find(kTypes.begin(), kTypes.end(), *type) == kTypes.end()) {
    r.error_at("model_type", fmt::format("unsupported model type '{}'; supported: llama, mistral, mixtral, qwen2, "
                                         "gpt2, gpt_neox", *type));
    d.throw_if_errors();
  }
  m.name = fmt::format("{} ({})", m.id, *type);
  auto i = [&](const char* key, bool req, long long dflt) {
    return static_cast<int>(r.integer(key, req, 1, 1LL << 30).value_or(dflt));
  };
  const char* k_heads = "num_attention_heads";
  const char* k_kv = "num_key_value_heads";
  const char* k_hidden = "hidden_size";
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
    m.ffn_hidden = i("intermediate_size", true, 0);
    m.vocab = i("vocab_size", true, 0);
    m.max_seq_len = i("max_position_embeddings", false, 2048);
    m.position = Position::kRope;
    if (*type == "gpt_neox") {
      m.activation = Activation::kGelu;
      m.norm = Norm::kLayerNorm;
      m.bias = true;
      m.tied_embeddings = r.boolean("tie_word_embeddings").value_or(false);
      m.dropout = r.number("hidden_dropout", false, 0.0, 0.99).value_or(0.0);
    } else {
      const auto act = r.string("hidden_act").value_or("silu");
      m.activation = (act == "silu" || act == "swish") ? Activation::kSwiglu : Activation::kGeglu;
      m.norm = Norm::kRmsNorm;
      m.bias = false;
      m.tied_embeddings = r.boolean("tie_word_embeddings").value_or(false);
      m.dropout = 0.0;
    }
    if (*type == "mixtral") {
      m.moe.experts = i("num_local_experts", true, 0);
      m.moe.top_k = i("num_experts_per_tok", false, 2);
    }
  }
  m.head_dim = r.has("head_dim") ? i("head_dim", false, 0) : (m.heads > 0 ? m.hidden / m.heads : 0);
  r.finish();
  if (!d.has_errors())
    check(m, [&](const char* key) { return r.loc(key); }, r.self_loc(), r.has("head_dim"), k_heads, k_kv, k_hidden,
          d);
  d.throw_if_errors();
  return m;
}

}  // namespace ridgeline::spec
