#include "ridgeline/calibrate/published.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <functional>
#include <set>

#include "ridgeline/cost/cost.hpp"
#include "ridgeline/engine/engine.hpp"
#include "ridgeline/graph/graph.hpp"
#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/model.hpp"
#include "ridgeline/spec/plan.hpp"
#include "ridgeline/spec/yaml_reader.hpp"
#include "ridgeline/techniques/passes.hpp"

namespace ridgeline::calibrate {

using support::SourceLoc;

// ---------------------------------------------------------------------------
// Categories

namespace {

constexpr std::pair<std::string_view, PublishedCategory> kCategories[] = {
    {"end_to_end_training", PublishedCategory::kEndToEndTraining},
    {"attention_kernel", PublishedCategory::kAttentionKernel},
    {"gemm_kernel", PublishedCategory::kGemmKernel},
    {"memory_microbenchmark", PublishedCategory::kMemoryMicrobenchmark},
    {"tensor_core_instruction", PublishedCategory::kTensorCoreInstruction},
    {"launch_overhead", PublishedCategory::kLaunchOverhead},
    {"layer_time", PublishedCategory::kLayerTime},
    {"clock_observation", PublishedCategory::kClockObservation},
};

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

std::optional<double> parse_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<bool> parse_bool(std::string_view s) {
  const std::string l = lower(s);
  if (l == "true" || l == "yes" || l == "on") return true;
  if (l == "false" || l == "no" || l == "off") return false;
  return std::nullopt;
}

}  // namespace

std::string_view name(PublishedCategory c) {
  for (const auto& [w, v] : kCategories)
    if (v == c) return w;
  return "end_to_end_training";
}

std::optional<PublishedCategory> parse_published_category(std::string_view s) {
  for (const auto& [w, v] : kCategories)
    if (w == s) return v;
  return std::nullopt;
}

const std::vector<std::string>& published_category_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& [w, c] : kCategories) v.emplace_back(w);
    return v;
  }();
  return names;
}

const PublishedValue* PublishedSection::get(const std::string& key) const {
  auto it = fields.find(key);
  return it == fields.end() ? nullptr : &it->second;
}

std::optional<double> PublishedSection::number(const std::string& key) const {
  const PublishedValue* v = get(key);
  return v ? v->number : std::nullopt;
}

std::string PublishedSection::text(const std::string& key) const {
  const PublishedValue* v = get(key);
  return v ? v->text : std::string();
}

double Comparison::speed_error_pct() const {
  if (higher_is_faster) return error_pct;
  // A time: predicted speed / measured speed = measured / predicted.
  return predicted > 0 ? (measured / predicted - 1.0) * 100.0 : 0.0;
}

// ---------------------------------------------------------------------------
// Loading

namespace {

/// Whole-number fields Ridgeline reads, per section (must be >= 1 when present).
const std::map<std::string, std::vector<std::string>>& whole_fields() {
  static const std::map<std::string, std::vector<std::string>> f = {
      {"hardware", {"num_gpus"}},
      {"model", {"layers", "hidden", "heads", "kv_heads", "head_dim", "ffn_hidden", "vocab", "seq_len"}},
      {"training", {"global_batch", "micro_batch", "tp", "pp", "dp", "cp", "virtual_pp_interleave", "grad_accum"}},
      {"kernel", {"M", "N", "K", "batch", "seq_len", "heads", "kv_heads", "head_dim"}},
  };
  return f;
}

/// Positive real-number fields Ridgeline reads.
const std::map<std::string, std::vector<std::string>>& positive_fields() {
  static const std::map<std::string, std::vector<std::string>> f = {
      {"hardware", {"peak_tflops_used_by_source"}},
      {"training", {"global_batch_tokens"}},
  };
  return f;
}

/// Boolean fields Ridgeline reads.
const std::map<std::string, std::vector<std::string>>& bool_fields() {
  static const std::map<std::string, std::vector<std::string>> f = {
      {"training", {"sequence_parallel", "cpu_offload"}},
      {"kernel", {"causal"}},
  };
  return f;
}

/// Largest whole number a row may state (2^30): counts stay exact ints.
constexpr double kMaxWhole = 1073741824.0;

constexpr const char* kSections[] = {"hardware", "model", "training", "kernel", "measured", "derived"};

class RowReader {
 public:
  RowReader(const std::string& file, support::DiagnosticList& d) : file_(file), d_(d) {}

  void error(const YAML::Node& at, const std::string& label, const std::string& message) {
    d_.error(spec::loc_of(file_, at), label, message);
  }

  /// Reads a section's scalars and checks the fields Ridgeline reads.
  void section(const YAML::Node& row, const char* key, const std::string& label, PublishedSection& out) {
    const YAML::Node n = row[key];
    if (!n.IsDefined() || n.IsNull()) return;
    if (!n.IsMap()) {
      error(n, label, fmt::format("{}: expected a mapping of fields", key));
      return;
    }
    for (auto it = n.begin(); it != n.end(); ++it) {
      // Copies: yaml-cpp's it->first / it->second live in a temporary proxy.
      const YAML::Node k = it->first;
      const YAML::Node v = it->second;
      if (!k.IsScalar()) {
        error(k, label, fmt::format("{}: expected a field name", key));
        continue;
      }
      if (!v.IsScalar()) continue;  // nested detail (lists, maps) is for readers, not for predictions
      PublishedValue pv;
      pv.text = v.Scalar();
      pv.number = parse_number(pv.text);
      pv.loc = spec::loc_of(file_, v);
      out.fields.emplace(k.Scalar(), std::move(pv));
    }
    const std::string sec = key;
    auto check = [&](const auto& table, auto ok, const char* expected) {
      auto it = table.find(sec);
      if (it == table.end()) return;
      for (const auto& f : it->second) {
        const PublishedValue* v = out.get(f);
        if (!v || ok(*v)) continue;
        d_.error(v->loc, label, fmt::format("{}.{}: expected {}, got \"{}\"", sec, f, expected, v->text));
        out.fields.erase(f);
      }
    };
    check(whole_fields(), [](const PublishedValue& v) {
      return v.number && *v.number >= 1 && std::floor(*v.number) == *v.number && *v.number <= kMaxWhole;
    }, "a whole number from 1 to 1073741824");
    check(positive_fields(), [](const PublishedValue& v) { return v.number && *v.number > 0; },
          "a number greater than zero");
    check(bool_fields(), [](const PublishedValue& v) { return parse_bool(v.text).has_value(); }, "true or false");
  }

 private:
  const std::string& file_;
  support::DiagnosticList& d_;
};

}  // namespace

PublishedFile load_published(const std::string& path) {
  YAML::Node root = spec::load_yaml_file(path);
  support::DiagnosticList d;
  PublishedFile out;
  out.path = path;
  spec::MapReader top(root, path, "", d);
  if (!top.valid()) d.throw_if_errors();
  if (auto v = top.integer("schema_version", false, 0); v && *v != 1)
    top.error_at("schema_version", fmt::format("unsupported schema version {}; this Ridgeline reads version 1", *v));
  top.string("description");
  top.allow("confidence_levels");
  top.allow("conventions");
  const auto row_count = top.integer("row_count", false, 0);
  YAML::Node rows = top.sequence("rows", true);
  top.finish();
  if (!rows.IsDefined() || !rows.IsSequence()) {
    d.throw_if_errors();
    return out;
  }
  if (row_count && static_cast<size_t>(*row_count) != rows.size())
    top.error_at("row_count", fmt::format("row_count says {} but the file has {} rows", *row_count, rows.size()));

  RowReader rr(path, d);
  std::map<std::string, int> first_line;  // id -> line of its first row
  std::string previous_id;
  for (size_t i = 0; i < rows.size() && !d.full(); ++i) {
    const YAML::Node row = rows[i];
    const std::string at = fmt::format("rows[{}]", i);
    if (!row.IsMap()) {
      rr.error(row, previous_id.empty() ? at : fmt::format("{} (after id {})", at, previous_id),
               "expected a mapping of fields (id, group, category, ...)");
      continue;
    }
    PublishedRow r;
    r.index = static_cast<int>(i);
    r.loc = spec::loc_of(path, row);
    std::string label = at;
    const YAML::Node id = row["id"];
    if (!id.IsDefined() || id.IsNull()) {
      rr.error(row, previous_id.empty() ? at : fmt::format("{} (after id {})", at, previous_id),
               "missing required field 'id'");
      continue;
    }
    if (!id.IsScalar() || id.Scalar().empty()) {
      rr.error(id, at, "id: expected a single word");
      continue;
    }
    r.id = id.Scalar();
    previous_id = r.id;
    label = fmt::format("{} (id {})", at, r.id);
    if (auto it = first_line.find(r.id); it != first_line.end())
      rr.error(id, label, fmt::format("duplicate id (first used at line {})", it->second));
    else
      first_line.emplace(r.id, r.loc.line);
    bool ok = true;
    auto scalar = [&](const char* key, bool required, std::string& dst) {
      const YAML::Node n = row[key];
      if (!n.IsDefined() || n.IsNull()) {
        if (required) {
          rr.error(row, label, fmt::format("missing required field '{}'", key));
          ok = false;
        }
        return false;
      }
      if (!n.IsScalar()) {
        rr.error(n, label, fmt::format("{}: expected a single value", key));
        ok = false;
        return false;
      }
      dst = n.Scalar();
      return true;
    };
    scalar("group", true, r.group);
    std::string category;
    if (scalar("category", true, category)) {
      if (auto c = parse_published_category(category)) {
        r.category = *c;
      } else {
        std::string choices;
        for (const auto& n : published_category_names()) choices += (choices.empty() ? "" : ", ") + n;
        rr.error(row["category"], label,
                 fmt::format("category: expected one of {}, got \"{}\"{}", choices, category,
                             support::did_you_mean(category, published_category_names())));
        ok = false;
      }
    }
    scalar("confidence", false, r.confidence);
    scalar("notes", false, r.notes);
    if (const YAML::Node s = row["source"]; s.IsDefined() && !s.IsNull() && !s.IsMap())
      rr.error(s, label, "source: expected a mapping of fields");
    PublishedSection* secs[] = {&r.hardware, &r.model, &r.training, &r.kernel, &r.measured, &r.derived};
    for (size_t k = 0; k < std::size(kSections); ++k) rr.section(row, kSections[k], label, *secs[k]);
    if (ok) out.rows.push_back(std::move(r));
  }
  d.throw_if_errors();
  return out;
}

std::vector<std::string> published_groups(const PublishedFile& file) {
  std::vector<std::string> g;
  for (const auto& r : file.rows)
    if (std::find(g.begin(), g.end(), r.group) == g.end()) g.push_back(r.group);
  return g;
}

// ---------------------------------------------------------------------------
// GPU names

namespace {

/// "NVIDIA A100-SXM4-80GB (400W), NVLink" -> "A100-SXM4-80GB".
std::string normalize_gpu(std::string_view s) {
  const size_t cut = s.find_first_of("(,");
  if (cut != std::string_view::npos) s = s.substr(0, cut);
  std::string out;
  for (char c : s) {
    const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    out += (u == ' ' || u == '_') ? '-' : u;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  while (!out.empty() && out.front() == '-') out.erase(out.begin());
  if (out.rfind("NVIDIA-", 0) == 0) out.erase(0, 7);
  if (out.rfind("AMD-", 0) == 0) out.erase(0, 4);
  if (out.rfind("INSTINCT-", 0) == 0) out.erase(0, 9);
  if (out.rfind("GEFORCE-", 0) == 0) out.erase(0, 8);
  return out;
}

/// The GPU's name as printed, without the parenthesised detail.
std::string short_gpu(std::string_view s) {
  const size_t cut = s.find_first_of("(,");
  std::string out(cut == std::string_view::npos ? s : s.substr(0, cut));
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& gpu_name_table() {
  // Normalized names (upper case, dashes) as sources print them -> shipped
  // profile. A name maps only to the same part: same die, memory and clocks.
  // H800 PCIe is the export variant of H100 PCIe (same GH100 die, 114 SMs,
  // 80 GB HBM2e at 2.0 TB/s, same clocks; only NVLink is cut), so single-GPU
  // figures use h100_pcie. GH200, GB200, B300, L40 (not L40S), MI210, MI325X,
  // MI355X and A100 PCIe 40GB have no shipped profile.
  static const std::vector<std::pair<std::string, std::string>> table = {
      {"A100-SXM4-80GB", "a100_sxm_80gb"}, {"A100-SXM-80GB", "a100_sxm_80gb"}, {"A100-80GB", "a100_sxm_80gb"},
      {"A100-SXM", "a100_sxm_80gb"},       {"A100-SXM4", "a100_sxm_80gb"},     {"A100", "a100_sxm_80gb"},
      {"A100-SXM4-40GB", "a100_sxm_40gb"}, {"A100-SXM-40GB", "a100_sxm_40gb"},
      {"A100-PCIE", "a100_pcie_80gb"},     {"A100-PCIE-80GB", "a100_pcie_80gb"},
      {"H100-SXM5-80GB", "h100_sxm"},      {"H100-SXM-80GB", "h100_sxm"},      {"H100-SXM5", "h100_sxm"},
      {"H100-SXM", "h100_sxm"},            {"H100", "h100_sxm"},
      {"H100-PCIE", "h100_pcie"},          {"H100-PCIE-80GB", "h100_pcie"},
      {"H800-PCIE", "h100_pcie"},          {"H800-PCIE-80GB", "h100_pcie"},
      {"H100-NVL", "h100_nvl"},            {"H100-NVL-94GB", "h100_nvl"},
      {"H200", "h200"},                    {"H200-SXM", "h200"},               {"H200-SXM-141GB", "h200"},
      {"B200", "b200"},                    {"B200-SXM", "b200"},               {"B200-SXM-180GB", "b200"},
      {"L4", "l4"},                        {"L40S", "l40s"},
      {"RTX-4090", "rtx_4090"},            {"RTX4090", "rtx_4090"},
      {"MI300X", "mi300x"},
  };
  return table;
}

std::string profile_for_gpu(std::string_view gpu_name) {
  const std::string n = normalize_gpu(gpu_name);
  for (const auto& [k, v] : gpu_name_table())
    if (k == n) return v;
  return "";
}

// ---------------------------------------------------------------------------
// Per-source conventions

namespace {

/// How a source counts FLOPs and what it leaves unstated.
struct SourceConvention {
  std::string_view group;
  spec::AttentionFlops attention_flops;  // kFull: causal attention counted whole
  bool tflops_count_recompute;           // TFLOP/s include recomputation (hardware FLOPs)
  spec::AttentionKind default_attention;  // when a row does not say
  spec::AttentionKind flash_version;      // when a row says FlashAttention without a version
  std::string_view basis;
  std::string_view flash_note;            // why flash_version, when it is not flash2
};

constexpr SourceConvention kConventions[] = {
    // Korthikanti et al. 2022, App. A: 72 B s L h^2 (1 + s/6h + V/12hL), attention not halved;
    // Megatron-LM of 2022 (fused scale-mask-softmax, no FlashAttention).
    {"korthikanti2022", spec::AttentionFlops::kFull, false, spec::AttentionKind::kNaive,
     spec::AttentionKind::kFlash2, "72 B s L h^2 (1 + s/6h + V/12hL)", ""},
    // Narayanan et al. 2021, Sec. 5.1: 96 B s L h^2 (...): TFLOP/s count the recomputed forward.
    {"narayanan2021", spec::AttentionFlops::kFull, true, spec::AttentionKind::kNaive, spec::AttentionKind::kFlash2,
     "96 B s L h^2 (1 + s/6h + V/16hL), counts recomputation", ""},
    // FlashAttention-2 paper, Sec. 4.2: 6 s N + 12 L h s^2 per sequence (attention not halved).
    {"flashattention2_paper", spec::AttentionFlops::kFull, false, spec::AttentionKind::kFlash2,
     spec::AttentionKind::kFlash2, "6 s N + 12 L h s^2 per sequence", ""},
    // flash-attention training README: Megatron-LM formula x 3/4 (model FLOPs, not halved).
    {"flashattention_repo", spec::AttentionFlops::kFull, false, spec::AttentionKind::kFlash,
     spec::AttentionKind::kFlash2, "Megatron-LM formula x 3/4", ""},
    // llm-foundry collect_results.py: 3 x (2 N s + 4 L h s^2) per sequence (not halved). Its
    // benchmark runs (scripts/train/benchmarking/submit_benchmarks.py, 2023) default to
    // attn_impl triton on a PyTorch 1.13 image, and llm-foundry then pinned flash-attn
    // 1.0.3: either way a FlashAttention-1-class kernel.
    {"llm_foundry", spec::AttentionFlops::kFull, false, spec::AttentionKind::kFlash, spec::AttentionKind::kFlash,
     "3 x (2 N s + 4 L h s^2) per sequence",
     "FlashAttention version not stated: flash (v1 class; llm-foundry's 2023 benchmarks ran attn_impl triton "
     "or flash-attn 1.0.x)"},
};

constexpr SourceConvention kDefaultConvention = {"", spec::AttentionFlops::kCausal, false,
                                                 spec::AttentionKind::kFlash2, spec::AttentionKind::kFlash2,
                                                 "causal attention halved", ""};

/// The FlashAttention version a source ran when a row does not say which.
spec::AttentionKind unstated_flash(const SourceConvention& conv, std::vector<std::string>& notes) {
  notes.push_back(conv.flash_note.empty() ? std::string("FlashAttention version not stated: flash2")
                                          : std::string(conv.flash_note));
  return conv.flash_version;
}

const SourceConvention& convention_of(const std::string& group) {
  for (const auto& c : kConventions)
    if (c.group == group) return c;
  return kDefaultConvention;
}

// ---------------------------------------------------------------------------
// Mapping rows to specs

/// A row that cannot be predicted: the reason, in words that group well.
struct Skip {
  std::string reason;
};

std::string missing(const char* section, const char* field) {
  return fmt::format("missing field {}.{}", section, field);
}

int whole(const PublishedSection& s, const char* section, const char* key) {
  auto v = s.number(key);
  if (!v) throw Skip{missing(section, key)};
  return static_cast<int>(*v);
}

int whole_or(const PublishedSection& s, const char* key, int fallback) {
  auto v = s.number(key);
  return v ? static_cast<int>(*v) : fallback;
}

struct Mapped {
  spec::ModelSpec model;
  spec::PlanSpec plan;
  int gpus = 1;
  std::vector<std::string> assumptions;
};

/// Model from the row's fields. GPT-style unless the architecture text says
/// llama/swiglu/rmsnorm; explicit activation/norm/position/bias/dropout/
/// tied_embeddings keys win.
spec::ModelSpec map_model(const PublishedRow& row, std::vector<std::string>& notes) {
  const auto& m = row.model;
  spec::ModelSpec s;
  s.id = row.id;
  s.name = m.has("name") ? m.text("name") : row.id;
  s.hidden = whole(m, "model", "hidden");
  s.layers = whole(m, "model", "layers");
  s.heads = whole(m, "model", "heads");
  s.ffn_hidden = whole(m, "model", "ffn_hidden");
  s.vocab = whole(m, "model", "vocab");
  s.max_seq_len = whole(m, "model", "seq_len");
  s.kv_heads = whole_or(m, "kv_heads", s.heads);
  if (!m.has("kv_heads")) notes.push_back("model.kv_heads not stated: multi-head attention (kv_heads = heads)");
  if (m.has("head_dim")) {
    s.head_dim = whole(m, "model", "head_dim");
  } else {
    if (s.hidden % s.heads != 0)
      throw Skip{fmt::format("model.heads {} do not divide model.hidden {}", s.heads, s.hidden)};
    s.head_dim = s.hidden / s.heads;
  }
  const std::string arch = lower(m.text("architecture") + " " + m.text("name"));
  const bool llama = contains(arch, "llama") || contains(arch, "swiglu") || contains(arch, "rmsnorm") ||
                     contains(arch, "mistral") || contains(arch, "qwen");
  if (llama) {
    s.activation = spec::Activation::kSwiglu;
    s.norm = spec::Norm::kRmsNorm;
    s.position = spec::Position::kRope;
    s.bias = false;
    s.dropout = 0.0;
    s.tied_embeddings = false;
    notes.push_back("llama-style: RMSNorm, SwiGLU, rotary positions, no biases, no dropout, untied embeddings");
  } else {
    // GPT-style (Megatron-LM defaults as in Korthikanti et al. 2022): LayerNorm,
    // GeLU, learned positions, biases, dropout 0.1, tied embeddings.
    s.activation = spec::Activation::kGelu;
    s.norm = spec::Norm::kLayerNorm;
    s.position = spec::Position::kLearned;
    s.bias = true;
    s.dropout = 0.1;
    s.tied_embeddings = true;
    std::string what = "GPT-style: LayerNorm, GeLU, learned positions";
    if (contains(arch, "no bias")) s.bias = false;
    what += s.bias ? ", biases" : ", no biases";
    // MPT (llm-foundry yamls): attn_pdrop = resid_pdrop = emb_pdrop = 0.
    if (contains(arch, "mpt")) s.dropout = 0.0;
    what += s.dropout > 0 ? ", dropout 0.1" : ", no dropout";
    if (contains(arch, "rotary") || contains(arch, "rope")) s.position = spec::Position::kRope;
    if (contains(arch, "alibi")) s.position = spec::Position::kAlibi;
    notes.push_back(what + ", tied embeddings");
  }
  if (m.has("activation")) {
    const std::string a = lower(m.text("activation"));
    if (a == "gelu") s.activation = spec::Activation::kGelu;
    else if (a == "relu") s.activation = spec::Activation::kRelu;
    else if (a == "swiglu") s.activation = spec::Activation::kSwiglu;
    else if (a == "geglu") s.activation = spec::Activation::kGeglu;
    else throw Skip{fmt::format("unsupported model.activation '{}'", m.text("activation"))};
  }
  if (m.has("norm")) {
    const std::string n = lower(m.text("norm"));
    if (n == "layernorm") s.norm = spec::Norm::kLayerNorm;
    else if (n == "rmsnorm") s.norm = spec::Norm::kRmsNorm;
    else throw Skip{fmt::format("unsupported model.norm '{}'", m.text("norm"))};
  }
  if (m.has("bias")) s.bias = parse_bool(m.text("bias")).value_or(s.bias);
  if (m.has("tied_embeddings")) s.tied_embeddings = parse_bool(m.text("tied_embeddings")).value_or(s.tied_embeddings);
  if (auto dr = m.number("dropout")) s.dropout = *dr;
  try {
    spec::validate_model(s, row.id);
  } catch (const support::SpecError& e) {
    throw Skip{fmt::format("model rejected: {}", e.diagnostics().empty() ? e.what() : e.diagnostics()[0].message)};
  }
  return s;
}

std::optional<spec::Precision> precision_of(const std::string& text, std::vector<std::string>& notes) {
  const std::string t = lower(text);
  if (t.empty()) {
    notes.push_back("precision not stated: bf16");
    return spec::Precision::kBf16;
  }
  if (contains(t, "fp8")) return spec::Precision::kFp8;
  if (contains(t, "bf16") || contains(t, "bfloat16")) return spec::Precision::kBf16;
  if (contains(t, "fp16") || contains(t, "float16")) return spec::Precision::kFp16;
  if (contains(t, "tf32")) return spec::Precision::kTf32;
  if (contains(t, "fp32") || contains(t, "float32")) return spec::Precision::kFp32;
  if (contains(t, "16-bit") || contains(t, "mixed precision")) {
    notes.push_back("'" + text + "' taken as bf16 (fp16 runs at the same peak; loss-scaling skips not counted)");
    return spec::Precision::kBf16;
  }
  return std::nullopt;
}

spec::Recompute recompute_of(const std::string& text) {
  const std::string t = lower(text);
  if (t.empty() || t.rfind("none", 0) == 0 || t == "no" || t == "false") return {};
  if (contains(t, "microbatch-level") || contains(t, "micro-batch-level"))
    throw Skip{"unsupported technique: micro-batch-level recomputation (Korthikanti et al. 2022, App. C)"};
  if (contains(t, "selective")) return {spec::RecomputeKind::kSelective, 0};
  if (contains(t, "full")) return {spec::RecomputeKind::kFull, 0};
  if (contains(t, "sqrt")) return {spec::RecomputeKind::kSqrt, 0};
  throw Skip{fmt::format("unrecognised training.recompute '{}'", text)};
}

/// FlashAttention version named in free text ("flashattention_2", "FlashAttention (v1 era)",
/// "flash_attn 2", "FA3"), or 0 when the text names none.
int flash_version_in(std::string_view text) {
  std::string t;
  for (char c : lower(text))
    if (c != ' ') t += c;
  for (int v = 3; v >= 1; --v) {
    const std::string n = std::to_string(v);
    for (const char* stem : {"flash", "flash_", "flash-", "flashattention", "flashattention_", "flashattention-",
                             "flash_attn", "flash_attn_", "fa", "v"})
      if (contains(t, std::string(stem) + n)) return v;
  }
  return 0;
}

spec::AttentionKind kind_of_version(int v) {
  return v == 1 ? spec::AttentionKind::kFlash : v == 3 ? spec::AttentionKind::kFlash3 : spec::AttentionKind::kFlash2;
}

spec::AttentionKind attention_of(const PublishedRow& row, const SourceConvention& conv,
                                 std::vector<std::string>& notes) {
  const auto& tr = row.training;
  if (tr.has("attention")) {
    const std::string t = lower(tr.text("attention"));
    if (contains(t, "no_flash") || contains(t, "no flash") || contains(t, "naive") || contains(t, "standard") ||
        contains(t, "eager"))
      return spec::AttentionKind::kNaive;
    if (contains(t, "flash")) {
      if (const int v = flash_version_in(t)) return kind_of_version(v);
      return unstated_flash(conv, notes);
    }
  }
  if (const PublishedValue* fa = tr.get("flash_attention")) {
    const std::string t = lower(fa->text);
    if (t.rfind("false", 0) == 0 || t.rfind("no", 0) == 0) return spec::AttentionKind::kNaive;
    if (t.rfind("true", 0) == 0 || t.rfind("yes", 0) == 0) return unstated_flash(conv, notes);
  }
  if (conv.group.empty()) notes.push_back("attention kernel not stated: flash2");
  return conv.default_attention;
}

/// ZeRO stage from `training.zero` ("ZeRO-1 style ...", 3) or an FSDP sharding strategy.
int zero_of(const PublishedSection& tr, std::vector<std::string>& notes) {
  if (const PublishedValue* z = tr.get("zero")) {
    if (z->number) return static_cast<int>(std::clamp(*z->number, 0.0, 3.0));  // clamp before the cast: 1e300 fits no int
    const std::string t = lower(z->text);
    for (size_t i = 0; i < t.size(); ++i)
      if (t[i] >= '0' && t[i] <= '3') return t[i] - '0';
  }
  const std::string dp = lower(tr.text("dp_type"));
  if (contains(dp, "full_shard")) {
    notes.push_back("FSDP FULL_SHARD modelled as ZeRO-3");
    return 3;
  }
  if (contains(dp, "shard_grad_op")) {
    notes.push_back("FSDP SHARD_GRAD_OP modelled as ZeRO-2");
    return 2;
  }
  return 0;
}

/// The engine's prediction of a plan, or a Skip when the engine rejects it.
engine::Prediction run(const spec::ModelSpec& m, const spec::PlanSpec& p, const spec::HardwareSpec& hw,
                       bool use_calibration) {
  engine::EvalOptions o;
  o.keep_kernels = false;
  o.use_calibration = use_calibration;
  engine::Prediction pr = engine::evaluate(m, p, hw, o);
  if (pr.status == engine::Status::kInvalid)
    throw Skip{fmt::format("plan rejected: {}: {}", pr.problem.field, pr.problem.message)};
  return pr;
}

/// Model and plan of an end-to-end or per-layer row.
Mapped map_training(const PublishedRow& row, const spec::HardwareSpec& hw, bool use_calibration) {
  Mapped out;
  auto& notes = out.assumptions;
  const SourceConvention& conv = convention_of(row.group);
  out.model = map_model(row, notes);
  const auto& tr = row.training;
  spec::PlanSpec& p = out.plan;
  p.seq_len = out.model.max_seq_len;
  p.attention_flops = conv.attention_flops;
  if (tr.has("cpu_offload") && parse_bool(tr.text("cpu_offload")).value_or(false))
    throw Skip{"unsupported technique: CPU offload"};
  auto prec = precision_of(tr.text("precision"), notes);
  if (!prec) throw Skip{fmt::format("unrecognised training.precision '{}'", tr.text("precision"))};
  p.precision = *prec;
  p.recompute = recompute_of(tr.text("recompute"));
  p.attention = attention_of(row, conv, notes);
  const std::string impl = lower(tr.text("implementation"));
  p.fusion = (contains(impl, "huggingface") || contains(impl, "eager")) ? spec::Fusion::kEager : spec::Fusion::kFused;
  auto& q = p.parallel;
  q.tp = whole_or(tr, "tp", 1);
  q.pp = whole_or(tr, "pp", 1);
  q.cp = whole_or(tr, "cp", 1);
  if (tr.has("sequence_parallel")) q.sp = parse_bool(tr.text("sequence_parallel")).value_or(false);
  if (auto v = tr.number("virtual_pp_interleave"); v && *v > 1) {
    q.virtual_stages = static_cast<int>(*v);
    q.schedule = spec::PipelineSchedule::kInterleaved;
  }
  q.zero = zero_of(tr, notes);
  const auto gpus = row.hardware.number("num_gpus");
  const double layout = static_cast<double>(q.tp) * q.pp * q.cp * whole_or(tr, "dp", 1);
  if (layout > (1 << 24)) throw Skip{"parallel layout of more than 16M GPUs"};
  const int model_par = q.tp * q.pp * q.cp;
  if (tr.has("dp")) {
    q.dp = whole(tr, "training", "dp");
    if (gpus && static_cast<int>(*gpus) != q.dp * model_par)
      throw Skip{fmt::format("TP x PP x DP x CP = {} does not match hardware.num_gpus {}", q.dp * model_par,
                             static_cast<int>(*gpus))};
  } else if (gpus) {
    if (static_cast<int>(*gpus) % model_par != 0)
      throw Skip{fmt::format("hardware.num_gpus {} is not a multiple of TP x PP x CP = {}", static_cast<int>(*gpus),
                             model_par)};
    q.dp = static_cast<int>(*gpus) / model_par;
  } else {
    throw Skip{missing("hardware", "num_gpus")};
  }
  out.gpus = q.gpus();
  if (q.zero > 0 && q.dp == 1) q.zero = 0;

  // Batch: micro-batch per GPU, global batch in sequences.
  const double seq = p.seq_len;
  std::optional<double> global;
  bool global_exact = false;  // stated in sequences (not rounded from a token count)
  if (auto g = tr.number("global_batch")) {
    global = *g;
    global_exact = true;
  } else if (auto gt = tr.number("global_batch_tokens")) {
    global = std::max(1.0, std::round(*gt / seq));
    notes.push_back(fmt::format("global batch {} tokens = {} sequences of {}", *gt, *global, p.seq_len));
  }
  const auto accum = tr.number("grad_accum");
  int micro = 0;
  if (auto mb = tr.number("micro_batch")) {
    micro = static_cast<int>(*mb);
  } else if (global && accum && std::fmod(*global, q.dp * *accum) == 0) {
    if (*global / (q.dp * *accum) > kMaxWhole) throw Skip{"micro-batch out of range"};
    micro = static_cast<int>(*global / (q.dp * *accum));
    notes.push_back(fmt::format("micro-batch {} = global batch / (DP x grad_accum)", micro));
  } else if (global) {
    // Not stated: the largest power of two that fits in memory (Ridgeline's
    // memory model) and divides the per-GPU batch, when that batch is stated in
    // sequences, or does not exceed it, when it is rounded from a token count:
    // what a practitioner would pick.
    const double per_rank = *global / q.dp;
    const bool exact = global_exact && std::floor(per_rank) == per_rank;
    spec::PlanSpec trial = p;
    trial.global_batch = 0;
    for (int b = 1 << 12; b >= 1; b /= 2) {
      if (b > per_rank || (exact && std::fmod(per_rank, b) != 0)) continue;
      trial.micro_batch = b;
      const engine::Prediction pr = run(out.model, trial, hw, use_calibration);
      if (pr.memory.fits || b == 1) {
        micro = b;
        break;
      }
    }
    micro = std::max(1, micro);
    notes.push_back(fmt::format("training.micro_batch not stated: assumed {} (the largest power of two {} the "
                                "per-GPU batch of {:.4g} that Ridgeline predicts fits)",
                                micro, exact ? "dividing" : "not above", per_rank));
  } else {
    throw Skip{missing("training", "micro_batch")};
  }
  p.micro_batch = std::max(1, micro);
  const double per_step = static_cast<double>(p.micro_batch) * q.dp;
  if (!global) {
    global = per_step * (accum ? *accum : 1.0);
    if (!accum) notes.push_back("global batch not stated: one micro-batch per GPU per step");
  }
  if (std::fmod(*global, per_step) != 0) {
    const double rounded = std::max(1.0, std::round(*global / per_step)) * per_step;
    notes.push_back(fmt::format("global batch {} sequences rounded to {} (a multiple of micro-batch x DP)", *global,
                                rounded));
    global = rounded;
  }
  // Products of stated counts (a token count / sequence, micro-batch x DP)
  // can pass what an int holds.
  if (*global > kMaxWhole) throw Skip{fmt::format("global batch of {:.4g} sequences is out of range", *global)};
  p.global_batch = static_cast<int>(*global);
  return out;
}

std::string describe(const Mapped& mp) {
  const auto& m = mp.model;
  const auto& p = mp.plan;
  const auto& q = p.parallel;
  std::string s = fmt::format("L{} h{} a{} s{} | mb {} gb {} | {}, {} attention, recompute {} | TP{} PP{} DP{}",
                              m.layers, m.hidden, m.heads, p.seq_len, p.micro_batch, p.global_batch,
                              spec::to_string(p.precision), spec::to_string(p.attention),
                              spec::to_string(p.recompute), q.tp, q.pp, q.dp);
  if (q.cp > 1) s += fmt::format(" CP{}", q.cp);
  if (q.sp) s += " +SP";
  if (q.virtual_stages > 1) s += fmt::format(" v{}", q.virtual_stages);
  if (q.zero > 0) s += fmt::format(" ZeRO-{}", q.zero);
  return s;
}

Comparison compare(std::string quantity, std::string unit, double measured, double predicted, bool higher_is_faster) {
  Comparison c;
  c.quantity = std::move(quantity);
  c.unit = std::move(unit);
  c.measured = measured;
  c.predicted = predicted;
  c.error_pct = (predicted - measured) / measured * 100.0;
  c.higher_is_faster = higher_is_faster;
  return c;
}

/// Positive measured value, or nullopt.
std::optional<double> measured(const PublishedRow& row, const char* key) {
  auto v = row.measured.number(key);
  if (v && *v > 0) return v;
  return std::nullopt;
}

/// Fills primary (the first present) and secondary comparisons.
void choose(PublishedResult& r, std::vector<Comparison> found, const char* what) {
  if (found.empty()) throw Skip{fmt::format("no comparable measured quantity ({})", what)};
  r.primary = found.front();
  r.secondary.assign(found.begin() + 1, found.end());
  r.predicted = true;
}

// ---------------------------------------------------------------------------
// Predictors, one per category

struct Context {
  const spec::HardwareSpec& hw;
  const cost::CostParams& cost;
  bool use_calibration;
};

void predict_end_to_end(const PublishedRow& row, const Context& cx, PublishedResult& r) {
  const SourceConvention& conv = convention_of(row.group);
  if (row.measured.text("status") == "OOM" && row.measured.fields.size() == 1)
    throw Skip{"measured only an out-of-memory failure: no time to compare"};
  Mapped mp = map_training(row, cx.hw, cx.use_calibration);
  const engine::Prediction pr = run(mp.model, mp.plan, cx.hw, cx.use_calibration);
  r.config = describe(mp);
  r.assumptions = std::move(mp.assumptions);
  r.assumptions.push_back(fmt::format("FLOP convention: {}", conv.basis));
  r.fits = pr.memory.fits;
  if (!r.fits)
    r.assumptions.push_back(fmt::format("Ridgeline predicts this run does not fit: {:.1f} of {:.1f} GiB",
                                        pr.memory.total / (1 << 30), pr.memory.capacity / (1 << 30)));
  const auto& st = pr.step;
  const double gpus = st.gpus;
  const double flops = st.model_flops + (conv.tflops_count_recompute ? st.recompute_flops : 0.0);
  // MFU against the peak the source divided by (A100: 312 TFLOP/s), else the profile's bf16 peak.
  const double peak =
      row.hardware.number("peak_tflops_used_by_source").value_or(cx.hw.peak(spec::Peak::kBf16) / 1e12) * 1e12;
  std::vector<Comparison> found;
  if (auto v = measured(row, "iteration_time_s"))
    found.push_back(compare("iteration_time_s", "s", *v, st.time_s, false));
  if (auto v = measured(row, "tokens_per_s_total"))
    found.push_back(compare("tokens_per_s_total", "tokens/s", *v, st.tokens_per_s, true));
  if (auto v = measured(row, "tokens_per_s_per_gpu"))
    found.push_back(compare("tokens_per_s_per_gpu", "tokens/s", *v, st.tokens_per_s / gpus, true));
  for (const char* k : {"model_tflops_per_gpu", "tflops"})
    if (auto v = measured(row, k)) found.push_back(compare(k, "TFLOP/s", *v, flops / st.time_s / gpus / 1e12, true));
  if (auto v = measured(row, "mfu"))
    found.push_back(compare("mfu", "fraction", *v, st.model_flops / (st.time_s * gpus * peak), true));
  if (auto v = measured(row, "hfu"))
    found.push_back(
        compare("hfu", "fraction", *v, (st.model_flops + st.recompute_flops) / (st.time_s * gpus * peak), true));
  choose(r, std::move(found),
         "expected iteration_time_s, tokens_per_s_total/_per_gpu, model_tflops_per_gpu, mfu or hfu");
}

/// One decoder layer's forward and backward time (Korthikanti et al. 2022,
/// Table 4): the engine's kernels of a one-layer model, summed over the
/// kernels inside the layer (embedding, LM head, loss and optimizer left out);
/// overlapped communication hides behind the layer's GEMMs as in the engine.
void predict_layer_time(const PublishedRow& row, const Context& cx, PublishedResult& r) {
  Mapped mp = map_training(row, cx.hw, cx.use_calibration);
  if (engine::Problem pr = engine::check_plan(mp.model, mp.plan, cx.hw); !pr.field.empty())
    throw Skip{fmt::format("plan rejected: {}: {}", pr.field, pr.message)};
  graph::Graph g;
  techniques::build_step(g, mp.model, mp.plan, cx.hw);
  double fwd = 0, bwd = 0;
  for (const auto& k : g.kernels) {
    if (!k.has(graph::kLayer) || k.has(graph::kPerStep) || k.has(graph::kOverlapped)) continue;
    const double t = cost::cost_kernel(k, cx.cost, mp.plan.cuda_graphs).time_s * k.count / std::max(1, g.layers);
    (k.phase == spec::Phase::kForward ? fwd : bwd) += t;
  }
  r.config = describe(mp);
  r.assumptions = std::move(mp.assumptions);
  std::vector<Comparison> found;
  if (auto v = measured(row, "fwd_plus_bwd_ms"))
    found.push_back(compare("fwd_plus_bwd_ms", "ms", *v, (fwd + bwd) * 1e3, false));
  if (auto v = measured(row, "forward_ms")) found.push_back(compare("forward_ms", "ms", *v, fwd * 1e3, false));
  if (auto v = measured(row, "backward_ms")) found.push_back(compare("backward_ms", "ms", *v, bwd * 1e3, false));
  choose(r, std::move(found), "expected fwd_plus_bwd_ms, forward_ms or backward_ms");
}

std::optional<spec::Dtype> dtype_of(const std::string& text) {
  const std::string t = lower(text);
  if (t == "bf16" || t == "bfloat16") return spec::Dtype::kBf16;
  if (t == "fp16" || t == "float16" || t == "half") return spec::Dtype::kFp16;
  if (t == "fp8" || t == "fp8_e4m3" || t == "e4m3") return spec::Dtype::kFp8E4M3;
  if (t == "fp8_e5m2" || t == "e5m2") return spec::Dtype::kFp8E5M2;
  if (t == "tf32") return spec::Dtype::kTf32;
  if (t == "fp32" || t == "float32") return spec::Dtype::kFp32;
  if (t == "int8") return spec::Dtype::kInt8;
  return std::nullopt;
}

spec::Dtype kernel_dtype(const PublishedRow& row, const spec::HardwareSpec& hw) {
  const std::string text = row.kernel.text("dtype");
  if (text.empty()) throw Skip{missing("kernel", "dtype")};
  auto dt = dtype_of(text);
  if (!dt) throw Skip{fmt::format("unsupported kernel.dtype '{}'", text)};
  const spec::Peak pk = spec::peak_of(*dt);
  if (!hw.supports(pk)) throw Skip{fmt::format("profile {} has no {} peak", hw.id, spec::name(pk))};
  return *dt;
}

/// Best achievable GEMM throughput of one shape (MAMF): a cuBLAS GEMM of the
/// row's M x N x K costed by cost::cost_kernel (tile and wave quantization,
/// launch overhead). fp8 GEMMs write bf16 (torch._scaled_mm's output).
void predict_gemm(const PublishedRow& row, const Context& cx, PublishedResult& r) {
  const auto& kr = row.kernel;
  const double M = whole(kr, "kernel", "M"), N = whole(kr, "kernel", "N"), K = whole(kr, "kernel", "K");
  const double batch = whole_or(kr, "batch", 1);
  const spec::Dtype dt = kernel_dtype(row, cx.hw);
  const double in_b = spec::bytes_per_element(dt);
  const double out_b = in_b < 2 ? 2.0 : in_b;
  graph::Kernel k;
  k.name = "gemm";
  k.op = graph::Op::kOther;
  k.cls = spec::KernelClass::kGemm;
  k.dtype = dt;
  k.gemm = {M, N, K, batch};
  k.flops = 2.0 * M * N * K * batch;
  k.model_flops = k.flops;
  k.read_bytes = batch * (M * K + K * N) * in_b;
  k.write_bytes = batch * M * N * out_b;
  const cost::KernelCost kc = cost::cost_kernel(k, cx.cost, false);
  r.config = fmt::format("{} GEMM M={} N={} K={}{}", spec::name(dt), M, N, K,
                         batch > 1 ? fmt::format(" x{}", batch) : "");
  std::vector<Comparison> found;
  for (const char* key : {"tflops", "tflops_or_tops"})
    if (auto v = measured(row, key)) found.push_back(compare(key, "TFLOP/s", *v, k.flops / kc.time_s / 1e12, true));
  choose(r, std::move(found), "expected tflops");
}

/// FlashAttention kernel throughput in the FlashAttention benchmarks'
/// convention (forward 4 b s^2 a d, halved when causal; backward 2.5x): the
/// attention pass's fused kernel of a one-layer model with the row's shape.
void predict_attention(const PublishedRow& row, const Context& cx, PublishedResult& r) {
  const auto& kr = row.kernel;
  const int b = whole_or(kr, "batch", 1);
  const int s = whole(kr, "kernel", "seq_len");
  const int a = whole(kr, "kernel", "heads");
  const int d = whole(kr, "kernel", "head_dim");
  const int g = whole_or(kr, "kv_heads", a);
  const bool causal = kr.has("causal") ? parse_bool(kr.text("causal")).value_or(true) : true;
  if (!causal) throw Skip{"non-causal attention: the attention pass models causal decoder attention only"};
  if (static_cast<double>(a) * d > (1 << 24) || static_cast<double>(b) * s > 1e12)
    throw Skip{"attention shape out of range"};
  const std::string op = lower(kr.text("op") + " " + kr.text("implementation"));
  spec::AttentionKind kind = spec::AttentionKind::kFlash2;
  if (contains(op, "flash") || contains(op, "fa")) {
    if (const int v = flash_version_in(op)) kind = kind_of_version(v);
    else r.assumptions.push_back("FlashAttention version not stated: flash2");
  } else if (op != " ") {
    throw Skip{"attention kernel other than FlashAttention: not modelled as one kernel"};
  }
  const spec::Dtype dt = kr.has("dtype") ? kernel_dtype(row, cx.hw) : spec::Dtype::kBf16;
  if (dt != spec::Dtype::kBf16 && dt != spec::Dtype::kFp16)
    throw Skip{fmt::format("attention in {}: the attention pass models 16-bit attention", spec::name(dt))};
  std::string dir = lower(kr.text("direction"));
  if (dir.empty()) dir = "fwd_bwd";
  if (dir != "fwd" && dir != "bwd" && dir != "fwd_bwd")
    throw Skip{fmt::format("unsupported kernel.direction '{}' (fwd, bwd or fwd_bwd)", kr.text("direction"))};
  spec::ModelSpec m;
  m.id = row.id;
  m.layers = 1;
  m.heads = a;
  m.kv_heads = g;
  m.head_dim = d;
  m.hidden = a * d;
  m.ffn_hidden = 4 * a * d;
  m.vocab = 128;
  m.max_seq_len = s;
  m.bias = false;
  spec::PlanSpec p;
  p.micro_batch = b;
  p.seq_len = s;
  p.attention = kind;
  p.precision = dt == spec::Dtype::kFp16 ? spec::Precision::kFp16 : spec::Precision::kBf16;
  try {
    spec::validate_model(m, row.id);
  } catch (const support::SpecError& e) {
    throw Skip{fmt::format("attention shape rejected: {}", e.diagnostics().empty() ? e.what()
                                                                                   : e.diagnostics()[0].message)};
  }
  if (engine::Problem pr = engine::check_plan(m, p, cx.hw); !pr.field.empty())
    throw Skip{fmt::format("attention shape rejected: {}: {}", pr.field, pr.message)};
  graph::Graph gr;
  techniques::build_step(gr, m, p, cx.hw);
  double t_f = 0, t_b = 0;
  for (const auto& k : gr.kernels) {
    if (k.op != graph::Op::kFlashAttn) continue;
    const double t = cost::cost_kernel(k, cx.cost, false).time_s * k.count;
    (k.phase == spec::Phase::kForward ? t_f : t_b) += t;
  }
  const double fwd_flops = 4.0 * b * static_cast<double>(s) * s * a * d * 0.5;
  double flops = 0, t = 0;
  if (dir != "bwd") flops += fwd_flops, t += t_f;
  if (dir != "fwd") flops += 2.5 * fwd_flops, t += t_b;
  r.config = fmt::format("{} {} causal b={} s={} heads={} d={}", spec::to_string(kind), dir, b, s, a, d);
  std::vector<Comparison> found;
  if (auto v = measured(row, "tflops")) found.push_back(compare("tflops", "TFLOP/s", *v, flops / t / 1e12, true));
  choose(r, std::move(found), "expected tflops");
}

/// Bytes a streaming benchmark moves per run: three arrays of 2^25 doubles
/// (BabelStream's default size, 768 MiB of traffic for triad); large enough
/// that launch and latency are under 1% of the time.
constexpr double kStreamBytes = 3.0 * (1 << 25) * 8.0;

void predict_memory(const PublishedRow& row, const Context& cx, PublishedResult& r) {
  auto stream = [&](const char* key, double read_frac, double flops_per_elem) -> std::optional<Comparison> {
    auto v = measured(row, key);
    if (!v) return std::nullopt;
    graph::Kernel k;
    k.name = "stream";
    k.cls = spec::KernelClass::kElementwise;
    k.dtype = spec::Dtype::kFp32;
    k.read_bytes = kStreamBytes * read_frac;
    k.write_bytes = kStreamBytes * (1 - read_frac);
    k.flops = kStreamBytes / 8.0 * flops_per_elem;
    const double t = cost::cost_kernel(k, cx.cost, false).time_s;
    return compare(key, "GB/s", *v, kStreamBytes / t / 1e9, true);
  };
  std::vector<Comparison> found;
  // Streaming kernels: triad a = b + s c (2 reads, 1 write), scale, read, init.
  const std::pair<const char*, std::pair<double, double>> kinds[] = {
      {"triad_GB_s", {2.0 / 3.0, 2.0 / 3.0}}, {"global_memory_GB_s", {1.0, 0.0}},
      {"dram_bandwidth_GB_s_approx", {1.0, 0.0}}, {"read_GB_s", {1.0, 0.0}},
      {"scale_GB_s", {0.5, 0.5}},              {"init_GB_s", {0.0, 0.0}}};
  for (const auto& [key, mix] : kinds)
    if (auto c = stream(key, mix.first, mix.second)) found.push_back(*c);
  if (!found.empty()) {
    r.config = "streaming kernel, 768 MiB of HBM traffic";
    choose(r, std::move(found), "");
    return;
  }
  if (auto v = measured(row, "shared_bytes_per_clk_per_SM")) {
    if (cx.hw.sm_count <= 0 || cx.hw.clock_hz <= 0 || cx.hw.sram_bytes_per_s <= 0)
      throw Skip{fmt::format("profile {} states no shared-memory bandwidth", cx.hw.id)};
    r.config = "profile compute.sram_bandwidth / (SMs x clock)";
    choose(r, {compare("shared_bytes_per_clk_per_SM", "B/clk/SM", *v,
                       cx.hw.sram_bytes_per_s / (cx.hw.sm_count * cx.hw.clock_hz), true)}, "");
    return;
  }
  throw Skip{"no comparable measured quantity (expected a streaming bandwidth)"};
}

void predict_launch(const PublishedRow& row, const Context& cx, PublishedResult& r) {
  auto v = measured(row, "per_kernel_overhead_ns");
  if (!v) throw Skip{"no comparable measured quantity (expected per_kernel_overhead_ns)"};
  r.config = "profile launch overhead (back-to-back queued kernels, no CUDA graph)";
  choose(r, {compare("per_kernel_overhead_ns", "ns", *v, cx.cost.launch_s * 1e9, false)}, "");
}

/// Why a row's quantity is outside the model, before looking at its GPU.
std::optional<std::string> out_of_scope(const PublishedRow& row) {
  switch (row.category) {
    case PublishedCategory::kClockObservation:
      return "clock observation: not a prediction target (profiles assume the boost clock)";
    case PublishedCategory::kTensorCoreInstruction:
      return "tensor-core instruction microbenchmark (mma/wgmma issue rate): below the kernel level Ridgeline models";
    case PublishedCategory::kMemoryMicrobenchmark: {
      static const char* streams[] = {"triad_GB_s", "global_memory_GB_s", "dram_bandwidth_GB_s_approx", "read_GB_s",
                                      "scale_GB_s", "init_GB_s", "shared_bytes_per_clk_per_SM"};
      for (const char* k : streams)
        if (row.measured.has(k)) return std::nullopt;
      for (const auto& [k, v] : row.measured.fields) {
        if (contains(k, "cycles")) return "memory latency in cycles: the model has no per-level latency";
        if (contains(k, "ring_copy")) return "SM-to-SM (distributed shared memory) traffic: not modelled";
        if (k.rfind("L1", 0) == 0 || k.rfind("L2", 0) == 0 || k.rfind("l2", 0) == 0)
          return "L1/L2 cache bandwidth: the model streams from HBM only";
      }
      return "no comparable measured quantity (expected a streaming bandwidth)";
    }
    case PublishedCategory::kLaunchOverhead:
      if (!row.measured.has("per_kernel_overhead_ns"))
        return "launch cost measured on the host or through a framework (driver call, Triton, Inductor, synced "
               "chain): not the GPU-side per-kernel gap the profile models";
      return std::nullopt;
    default: return std::nullopt;
  }
}

}  // namespace

std::optional<TrainingCase> map_training_row(const PublishedRow& row, const spec::HardwareSpec& hw, std::string* why,
                                             bool use_calibration) {
  try {
    Mapped mp = map_training(row, hw, use_calibration);
    return TrainingCase{std::move(mp.model), std::move(mp.plan), std::move(mp.assumptions)};
  } catch (const Skip& s) {
    if (why) *why = s.reason;
    return std::nullopt;
  }
}

// ---------------------------------------------------------------------------
// Statistics and the whole run

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const double pos = std::clamp(q, 0.0, 1.0) * (v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

ErrorStats summarize(const std::vector<const PublishedResult*>& rows) {
  ErrorStats s;
  std::vector<double> abs_err, speed;
  for (const auto* r : rows) {
    ++s.rows;
    if (!r->predicted) {
      ++s.skipped;
      continue;
    }
    ++s.predicted;
    abs_err.push_back(std::fabs(r->primary.error_pct));
    speed.push_back(r->primary.speed_error_pct());
  }
  s.median_abs_pct = percentile(abs_err, 0.5);
  s.p90_abs_pct = percentile(abs_err, 0.9);
  s.median_speed_pct = percentile(speed, 0.5);
  return s;
}

PublishedReport validate_published(const PublishedFile& file, const PublishedOptions& opt) {
  PublishedReport rep;
  rep.file = file.path;
  rep.group_filter = opt.group;
  std::map<std::string, spec::HardwareSpec> profiles;
  std::map<std::string, cost::CostParams> costs;
  for (const auto& row : file.rows) {
    if (!opt.group.empty() && row.group != opt.group) continue;
    PublishedResult r;
    r.id = row.id;
    r.group = row.group;
    r.category = row.category;
    r.gpu = row.hardware.text("gpu");
    try {
      if (auto why = out_of_scope(row)) throw Skip{*why};
      if (r.gpu.empty()) throw Skip{missing("hardware", "gpu")};
      r.profile = profile_for_gpu(r.gpu);
      if (r.profile.empty()) throw Skip{fmt::format("no shipped profile for GPU '{}'", short_gpu(r.gpu))};
      auto it = profiles.find(r.profile);
      if (it == profiles.end()) {
        const std::string path = (std::filesystem::path(opt.profiles_dir) / (r.profile + ".yaml")).string();
        it = profiles.emplace(r.profile, spec::load_hardware(path)).first;
        costs.emplace(r.profile, cost::resolve(it->second, opt.use_calibration));
      }
      const Context cx{it->second, costs.at(r.profile), opt.use_calibration};
      switch (row.category) {
        case PublishedCategory::kEndToEndTraining: predict_end_to_end(row, cx, r); break;
        case PublishedCategory::kLayerTime: predict_layer_time(row, cx, r); break;
        case PublishedCategory::kGemmKernel: predict_gemm(row, cx, r); break;
        case PublishedCategory::kAttentionKernel: predict_attention(row, cx, r); break;
        case PublishedCategory::kMemoryMicrobenchmark: predict_memory(row, cx, r); break;
        case PublishedCategory::kLaunchOverhead: predict_launch(row, cx, r); break;
        default: throw Skip{"category not predicted"};
      }
      if (!std::isfinite(r.primary.predicted) || r.primary.predicted <= 0)
        throw Skip{fmt::format("prediction of {} is not a positive number", r.primary.quantity)};
    } catch (const Skip& s) {
      r.predicted = false;
      r.skip_reason = s.reason;
      r.primary = {};
      r.secondary.clear();
    }
    rep.results.push_back(std::move(r));
  }
  std::vector<const PublishedResult*> all;
  std::vector<std::string> groups;
  std::map<std::string, int> reasons;
  for (const auto& r : rep.results) {
    all.push_back(&r);
    if (std::find(groups.begin(), groups.end(), r.group) == groups.end()) groups.push_back(r.group);
    if (!r.predicted) ++reasons[r.skip_reason];
    if (r.predicted && !r.fits) ++rep.predicted_not_fitting;
  }
  rep.overall = summarize(all);
  for (const auto& g : groups) {
    std::vector<const PublishedResult*> v;
    for (const auto* r : all)
      if (r->group == g) v.push_back(r);
    rep.by_group.push_back({g, summarize(v)});
  }
  for (const auto& [word, cat] : kCategories) {
    std::vector<const PublishedResult*> v;
    for (const auto* r : all)
      if (r->category == cat) v.push_back(r);
    if (!v.empty()) rep.by_category.push_back({std::string(word), summarize(v)});
  }
  rep.skip_reasons.assign(reasons.begin(), reasons.end());
  std::stable_sort(rep.skip_reasons.begin(), rep.skip_reasons.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return rep;
}

}  // namespace ridgeline::calibrate
