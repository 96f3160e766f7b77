#include "ridgeline/validation/mapping.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <span>
#include <fmt/format.h>

#include "ridgeline/graph/kernels.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/model.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "ridgeline/support/diagnostics.hpp"
#include "ridgeline/validation/conventions.hpp"

namespace ridgeline::validation {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

engine::EvalOptions PredictOptions::eval() const {
  engine::EvalOptions o;
  o.keep_kernels = false;
  o.use_calibration = use_calibration;
  o.fit_without_group = fit_without_group;
  return o;
}

engine::KernelEvalOptions PredictOptions::kernel(bool cuda_graphs) const {
  engine::KernelEvalOptions o;
  o.use_calibration = use_calibration;
  o.cuda_graphs = cuda_graphs;
  o.fit_without_group = fit_without_group;
  return o;
}

Skip missing(std::string_view section, std::string_view field) {
  return Skip{fmt::format("missing field {}.{}", section, field)};
}

OrSkip<int> whole(const spec::PublishedSection& s, const char* section, const char* key) {
  auto v = s.number(key);
  if (!v) return missing(section, key);
  return static_cast<int>(*v);
}

int whole_or(const spec::PublishedSection& s, const char* key, int fallback) {
  auto v = s.number(key);
  return v ? static_cast<int>(*v) : fallback;
}

namespace {

using spec::PublishedSection;
using spec::PublishedValue;

/// The first diagnostic of a spec check, in words.
std::string first_problem(const support::SpecError& e) {
  return e.diagnostics().empty() ? e.what() : e.diagnostics()[0].message;
}

/// A spec word the row spells in any case ("GeLU" for gelu), by the spec's own names.
template <class E, size_t N>
std::optional<E> spec_word(std::string_view text, const E (&values)[N]) {
  const std::string t = lower(text);
  for (E v : values)
    if (spec::name(v) == t) return v;
  return std::nullopt;
}

constexpr spec::Activation kActivations[] = {spec::Activation::kGelu, spec::Activation::kRelu,
                                             spec::Activation::kSquaredRelu, spec::Activation::kSwiglu,
                                             spec::Activation::kGeglu};
constexpr spec::Norm kNorms[] = {spec::Norm::kLayerNorm, spec::Norm::kRmsNorm};

/// Model from the row's fields. GPT-style unless the architecture text says
/// llama/swiglu/rmsnorm; explicit activation/norm/bias/dropout/
/// tied_embeddings keys win.
OrSkip<spec::ModelSpec> map_model(const spec::PublishedRow& row, const PredictOptions& opt,
                                  std::vector<std::string>& notes) {
  const auto& m = row.model;
  if (m.has("spec")) {
    // A shipped model file (models/ID.yaml): the layouts the row's fields
    // cannot describe (latent attention, routed and shared experts, dense
    // first layers, windowed layers), counted as the file counts them. The
    // row's model.seq_len is the sequence trained.
    const std::string id = m.text("spec");
    const std::string path = (std::filesystem::path(opt.models_dir) / (id + ".yaml")).string();
    if (!std::filesystem::exists(path)) return Skip{fmt::format("model.spec '{}': no models/{}.yaml", id, id)};
    auto seq = whole(m, "model", "seq_len");
    if (!seq) return seq.skip();
    try {
      spec::ModelSpec s = spec::load_model(path);
      s.max_seq_len = *seq;
      notes.push_back(fmt::format("model from models/{}.yaml (model.spec)", id));
      // A framework that builds the model without its multi-token
      // prediction module says so in model.mtp_layers (with its source).
      if (m.has("mtp_layers")) {
        s.mtp_layers = std::max(0, whole_or(m, "mtp_layers", s.mtp_layers));
        notes.push_back(fmt::format("mtp_layers {} (model.mtp_layers)", s.mtp_layers));
      }
      return s;
    } catch (const support::SpecError& e) {
      return Skip{fmt::format("model.spec '{}' rejected: {}", id, first_problem(e))};
    }
  }
  spec::ModelSpec s;
  s.id = row.id;
  s.name = m.has("name") ? m.text("name") : row.id;
  for (auto [dst, key] : {std::pair{&s.hidden, "hidden"}, {&s.layers, "layers"}, {&s.heads, "heads"},
                          {&s.ffn_hidden, "ffn_hidden"}, {&s.vocab, "vocab"}, {&s.max_seq_len, "seq_len"}}) {
    auto v = whole(m, "model", key);
    if (!v) return v.skip();
    *dst = *v;
  }
  s.kv_heads = whole_or(m, "kv_heads", s.heads);
  if (!m.has("kv_heads")) notes.push_back("model.kv_heads not stated: multi-head attention (kv_heads = heads)");
  if (m.has("head_dim")) {
    auto d = whole(m, "model", "head_dim");
    if (!d) return d.skip();
    s.head_dim = *d;
  } else {
    if (s.hidden % s.heads != 0)
      return Skip{fmt::format("model.heads {} do not divide model.hidden {}", s.heads, s.hidden)};
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
    auto a = spec_word(m.text("activation"), kActivations);
    if (!a) return Skip{fmt::format("unsupported model.activation '{}'", m.text("activation"))};
    s.activation = *a;
  }
  if (m.has("norm")) {
    auto n = spec_word(m.text("norm"), kNorms);
    if (!n) return Skip{fmt::format("unsupported model.norm '{}'", m.text("norm"))};
    s.norm = *n;
  }
  if (m.has("bias")) s.bias = spec::parse_published_bool(m.text("bias")).value_or(s.bias);
  if (m.has("tied_embeddings"))
    s.tied_embeddings = spec::parse_published_bool(m.text("tied_embeddings")).value_or(s.tied_embeddings);
  if (auto dr = m.number("dropout")) s.dropout = *dr;
  try {
    spec::validate_model(s, row.id);  // the spec's check; its SpecError is this row's skip reason
  } catch (const support::SpecError& e) {
    return Skip{fmt::format("model rejected: {}", first_problem(e))};
  }
  return s;
}

/// training.precision: a spec word, else free text ("amp_bf16", "mixed 16-bit").
std::optional<spec::Precision> precision_of(const std::string& text, std::vector<std::string>& notes) {
  const std::string t = lower(text);
  if (t.empty()) {
    notes.push_back("precision not stated: bf16");
    return spec::Precision::kBf16;
  }
  if (auto p = spec::parse_precision(t)) return p;
  if (contains(t, "fp8")) {
    // Composer's amp_fp8: Transformer Engine's fp8 autocast around the linear layers.
    notes.push_back("'" + text + "' taken as fp8 linear layers (Transformer Engine; fp8 recipe " +
                    spec::to_string(spec::PlanSpec{}.fp8_recipe) + ", the plan default)");
    return spec::Precision::kFp8;
  }
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

/// A recompute policy the source did not state: marked by a layer count no
/// policy uses (every_k -1), replaced by map_training_row with the least recomputation
/// that Ridgeline's memory model says fits (none, then selective, then full),
/// which is what a practitioner would run and what a run that exists must have
/// fitted with.
constexpr spec::Recompute kUnstatedRecompute{spec::RecomputeKind::kNone, -1};

/// training.recompute: a spec word (none, selective, full, every:K, sqrt), else
/// free text ("full activation checkpointing", "none stated").
OrSkip<spec::Recompute> recompute_of(const std::string& text) {
  const std::string t = lower(text);
  if (t.empty()) return spec::Recompute{};
  // "not stated (...)", "none stated": chosen later with the micro-batch, the
  // fastest that fits (kUnstatedRecompute). ("none stated" is not "none".)
  if (t.rfind("not stated", 0) == 0 || t.rfind("none stated", 0) == 0) return kUnstatedRecompute;
  if (auto r = spec::parse_recompute(t)) return *r;
  if (t.rfind("none", 0) == 0 || t == "no" || t == "false") return spec::Recompute{};
  if (contains(t, "microbatch-level") || contains(t, "micro-batch-level"))
    return Skip{"unsupported technique: micro-batch-level recomputation (Korthikanti et al. 2022, App. C)"};
  if (contains(t, "selective")) return spec::Recompute{spec::RecomputeKind::kSelective, 0};
  if (contains(t, "full")) return spec::Recompute{spec::RecomputeKind::kFull, 0};
  if (contains(t, "sqrt")) return spec::Recompute{spec::RecomputeKind::kSqrt, 0};
  return Skip{fmt::format("unrecognised training.recompute '{}'", text)};
}

/// The FlashAttention version a source ran on GPUs of generation `g` when a row does not say which.
spec::AttentionKind unstated_flash(const SourceConvention& conv, spec::Generation g, std::vector<std::string>& notes) {
  const std::string_view note = conv.flash_note_on(g);
  notes.push_back(note.empty() ? std::string("FlashAttention version not stated: flash2") : std::string(note));
  return conv.flash_version_on(g);
}

/// training.attention or training.flash_attention: a spec word (naive, flash,
/// flash2, flash3), else free text; unstated, the source's default, or for a
/// source without its own convention the framework's default on that GPU
/// generation (spec::FrameworkSpec::attention_on: cuDNN under Megatron on Hopper).
spec::AttentionKind attention_of(const spec::PublishedRow& row, const SourceConvention& conv, spec::Generation gen,
                                 const spec::FrameworkSpec& fw, std::vector<std::string>& notes) {
  const auto& tr = row.training;
  if (tr.has("attention")) {
    const std::string t = lower(tr.text("attention"));
    if (auto a = spec::parse_attention(t); a && *a != spec::AttentionKind::kFlash) return *a;
    if (contains(t, "no_flash") || contains(t, "no flash") || contains(t, "naive") || contains(t, "standard") ||
        contains(t, "eager"))
      return spec::AttentionKind::kNaive;
    if (contains(t, "flash")) {
      if (const int v = flash_version_in(t)) return kind_of_version(v);
      return unstated_flash(conv, gen, notes);
    }
  }
  if (const PublishedValue* fa = tr.get("flash_attention")) {
    const std::string t = lower(fa->text);
    if (t.rfind("false", 0) == 0 || t.rfind("no", 0) == 0) return spec::AttentionKind::kNaive;
    if (t.rfind("true", 0) == 0 || t.rfind("yes", 0) == 0) return unstated_flash(conv, gen, notes);
  }
  if (conv.group.empty() || conv.attention_by_framework) {
    const spec::AttentionKind k = fw.attention_on(gen);
    notes.push_back(fmt::format("attention kernel not stated: {}'s default on {}: {}", fw.id, spec::name(gen),
                                spec::to_string(k)));
    return k;
  }
  return conv.default_attention;
}

/// ZeRO stage from `training.zero` ("ZeRO-1 style ...", 3) or an FSDP sharding strategy.
int zero_of(const PublishedSection& tr, std::vector<std::string>& notes) {
  if (const PublishedValue* z = tr.get("zero")) {
    // Clamp before the cast: 1e300 fits no int.
    if (z->number) return static_cast<int>(std::clamp(*z->number, 0.0, 3.0));
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
OrSkip<engine::Prediction> run(const spec::ModelSpec& m, const spec::PlanSpec& p, const spec::HardwareSpec& hw,
                               const PredictOptions& opt) {
  engine::Prediction pr = engine::evaluate(m, p, hw, opt.eval());
  if (pr.status == engine::Status::kInvalid)
    return Skip{fmt::format("plan rejected: {}: {}", pr.problem.field, pr.problem.message)};
  return pr;
}

/// The training stacks sources name, the word that names each (lower case)
/// and the framework profile that runs like it. Checked in order: a longer
/// name before a word inside it (Megatron-DeepSpeed before Megatron), a
/// named stack before the kernels it uses (a Hugging Face row that says
/// FlashAttention runs the Trainer).
struct FrameworkRule {
  std::string_view word;
  std::string_view framework;  // frameworks/ID.yaml
  std::string_view stack;      // what ran, in words
  bool fused_loss = false;     // the stack's own fused cross-entropy, whatever the profile's
};

/// The FlashAttention repo's own training code (training/README.md: "optimized
/// implementations of other layers (e.g., MLP, LayerNorm, cross-entropy loss,
/// rotary embedding)", "we don't need any activation checkpointing"; DDP,
/// with the DDPStrategyZero1 of its 760M-and-up configs) runs like
/// Megatron-LM's profile: fused kernels and loss, gradients reduced once per
/// step, the optimizer state sharded where a row's zero says so. FSDP
/// (parameters gathered per layer) and the eager profiles (one kernel per op,
/// fp32 loss) are further from it.
constexpr std::string_view kFlashTraining =
    "the FlashAttention repo's training code (PyTorch Lightning; fused MLP, LayerNorm, rotary and cross-entropy "
    "kernels; DDP, with a ZeRO-1 sharded optimizer in its 760M-and-up configs), closest to Megatron-LM: fused "
    "kernels and loss, gradients reduced once per step";

constexpr FrameworkRule kFrameworkRules[] = {
    {"torchtitan", "torchtitan", "torchtitan (FSDP2 + DTensor)"},
    // NeMo AutoModel's PyTorch backend: FSDP2 (fully_shard) over DTensor
    // meshes with TP, CP, expert parallelism and torch.distributed.pipelining
    // (nemo_automodel/components/distributed/config.py FSDP2Config,
    // components/moe/parallelizer.py): torchtitan's stack.
    {"automodel", "torchtitan", "NeMo AutoModel (PyTorch FSDP2 + DTensor, torchtitan's stack)"},
    {"megatron-deepspeed", "deepspeed", "Megatron-DeepSpeed"},
    {"deepspeed", "deepspeed", "DeepSpeed"},
    {"bloom", "deepspeed", "Megatron-DeepSpeed (BLOOM)"},
    {"rajbhandari", "deepspeed", "DeepSpeed ZeRO (Rajbhandari et al.)"},
    {"zero: memory optimizations", "deepspeed", "DeepSpeed ZeRO (Rajbhandari et al.)"},
    {"llm-foundry", "fsdp", "PyTorch FSDP via Composer (llm-foundry)"},
    {"composer", "fsdp", "PyTorch FSDP via Composer"},
    {"mosaicml", "fsdp", "PyTorch FSDP via Composer (MosaicML)"},
    {"fsdp", "fsdp", "PyTorch FSDP"},
    {"full_shard", "fsdp", "PyTorch FSDP"},
    {"shard_grad_op", "fsdp", "PyTorch FSDP"},
    {"huggingface", "hf", "Hugging Face Trainer"},
    {"hugging face", "hf", "Hugging Face Trainer"},
    {"hf trainer", "hf", "Hugging Face Trainer"},
    {"megatron", "megatron", "Megatron-LM"},
    {"nemo", "megatron", "NeMo (Megatron-Core)"},
    {"korthikanti", "megatron", "Megatron-LM (Korthikanti et al.)"},
    {"narayanan", "megatron", "Megatron-LM (Narayanan et al.)"},
    {"shoeybi", "megatron", "Megatron-LM (Shoeybi et al.)"},
    {"flash-attention", "megatron", kFlashTraining, true},
    {"flashattention", "megatron", kFlashTraining, true},
    {"eager", "hf", "eager PyTorch modules under DDP"},
};

}  // namespace

FrameworkChoice framework_of(const spec::PublishedRow& row) {
  const auto& tr = row.training;
  if (auto i = spec::find_framework(lower(tr.text("framework"))))
    return {*i, fmt::format("framework {} (training.framework)", spec::framework(*i).id)};
  // Where the row names its stack, most specific first: a row's own words
  // for what ran, then its source, then how it shards, then its notes.
  const std::pair<const char*, std::string> texts[] = {
      {"training.framework", tr.text("framework")},
      {"training.implementation", tr.text("implementation")},
      {"source.citation", row.source.text("citation") + " " + row.source.text("url")},
      {"training.dp_type", tr.text("dp_type")},
      {"notes", row.notes},
  };
  for (const auto& [field, text] : texts) {
    const std::string t = lower(text);
    for (const FrameworkRule& rule : kFrameworkRules) {
      if (!contains(t, rule.word)) continue;
      const auto i = spec::find_framework(rule.framework);
      if (!i) break;  // no such profile shipped: the next field, else the default
      return {*i, fmt::format("framework {}: {}; {} names '{}'", rule.framework, rule.stack, field, rule.word),
              rule.fused_loss};
    }
  }
  return {0, fmt::format("framework not stated: {}, the default", spec::framework(0).id)};
}

std::optional<spec::Dtype> dtype_of(std::string_view text) {
  const std::string t = lower(text);
  // NF4 is a storage format (QLoRA dequantizes to bf16 before its GEMMs): no kernel runs in it.
  if (auto d = spec::parse_dtype(t); d && *d != spec::Dtype::kNf4) return d;
  // Synonyms sources print.
  if (t == "bfloat16") return spec::Dtype::kBf16;
  if (t == "float16" || t == "half") return spec::Dtype::kFp16;
  if (t == "e4m3") return spec::Dtype::kFp8E4M3;
  if (t == "e5m2") return spec::Dtype::kFp8E5M2;
  if (t == "float32") return spec::Dtype::kFp32;
  return std::nullopt;
}

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

/// training.lora_targets: Ridgeline's words ("q,k,v,o") or NeMo's module
/// names (nemo/collections/nlp/parts/peft_config.py target_modules:
/// attention_qkv, attention_dense, mlp_fc1, mlp_fc2; "all").
std::optional<std::uint8_t> lora_targets_of(std::string_view text) {
  std::string words;
  std::string t = lower(text);
  for (char& c : t)
    if (c == '[' || c == ']' || c == '\'' || c == '"' || c == ' ') c = ',';
  for (size_t at = 0; at < t.size();) {
    const size_t cut = std::min(t.find(',', at), t.size());
    const std::string w = t.substr(at, cut - at);
    at = cut + 1;
    if (w.empty()) continue;
    const char* mapped = w == "attention_qkv" || w == "linear_qkv" ? "q,k,v"
                         : w == "attention_dense" || w == "linear_proj" ? "o"
                         : w == "mlp_fc1" || w == "linear_fc1" ? "gate,up"
                         : w == "mlp_fc2" || w == "linear_fc2" ? "down"
                                                                : nullptr;
    if (!words.empty()) words += ',';
    words += mapped ? std::string(mapped) : w;
  }
  return spec::parse_lora_targets(words);
}

OrSkip<TrainingCase> map_training_row(const spec::PublishedRow& row, const spec::HardwareSpec& hw,
                                      const PredictOptions& opt) {
  TrainingCase out;
  auto& notes = out.assumptions;
  const SourceConvention& conv = convention_of(row.group);
  auto model = map_model(row, opt, notes);
  if (!model) return model.skip();
  out.model = std::move(*model);
  const auto& tr = row.training;
  spec::PlanSpec& p = out.plan;
  p.seq_len = out.model.max_seq_len;
  p.attention_flops = conv.attention_flops;
  const bool cpu_offload =
      tr.has("cpu_offload") && spec::parse_published_bool(tr.text("cpu_offload")).value_or(false);
  auto prec = precision_of(tr.text("precision"), notes);
  if (!prec) return Skip{fmt::format("unrecognised training.precision '{}'", tr.text("precision"))};
  p.precision = *prec;
  auto rec = recompute_of(tr.text("recompute"));
  if (!rec) return rec.skip();
  const bool recompute_unstated = *rec == kUnstatedRecompute;
  p.recompute = recompute_unstated ? spec::Recompute{} : *rec;
  // The framework first: the micro-batch search below asks its memory model.
  FrameworkChoice fw = framework_of(row);
  p.framework = fw.index;
  notes.push_back(std::move(fw.why));
  if (fw.fused_loss) {
    p.cross_entropy = spec::CrossEntropy::kFused;
    p.cross_entropy_given = true;
    notes.push_back("cross-entropy fused: the stack's own fused loss kernel");
  }
  p.attention = attention_of(row, conv, hw.generation, spec::framework(p.framework), notes);
  p.attention_given = true;  // the row's kernel, or its source's, whatever the GPU
  // Fusion: eager when the row says so, compiled when it says torch.compile
  // ran (training.compile), else the framework's.
  const std::string impl = lower(tr.text("implementation"));
  p.fusion = (contains(impl, "huggingface") || contains(impl, "eager")) ? spec::Fusion::kEager
                                                                         : spec::framework(p.framework).fusion;
  if (tr.has("compile")) {
    const auto c = spec::parse_published_bool(tr.text("compile"));
    if (!c) return Skip{fmt::format("unrecognised training.compile '{}' (true or false)", tr.text("compile"))};
    if (*c) {
      p.fusion = spec::Fusion::kCompiled;
      notes.push_back("torch.compile (training.compile): fusion compiled");
    }
  }
  // The model code's own gate and up projections and eager RMSNorm
  // (training.gate_up, training.rms_norm), where they differ from the
  // framework's, the recipe's fp8 scaling and CUDA-graph capture
  // (training.fp8_recipe, training.cuda_graphs) and uneven pipeline stages
  // (training.first_stage_layers, last_stage_layers) and the documents a
  // packed sequence holds (training.packed_doc_len: a row that says only
  // packed_sequences runs one document per pack, the most attention work,
  // as its source states no document lengths), where the row states them:
  // read as the plan fields of the same names.
  for (const char* key : {"gate_up", "rms_norm", "fp8_recipe", "cuda_graphs", "first_stage_layers",
                          "last_stage_layers", "packed_doc_len"}) {
    if (!tr.has(key)) continue;
    const std::string text = lower(tr.text(key));
    if (auto e = spec::apply_setting(p, key, text); !e.empty()) return Skip{"training." + e};
    notes.push_back(fmt::format("{} {} (training.{})", key, text, key));
  }
  auto& q = p.parallel;
  q.tp = whole_or(tr, "tp", 1);
  q.pp = whole_or(tr, "pp", 1);
  q.cp = whole_or(tr, "cp", 1);
  // Expert parallelism, within DP x CP as Megatron-Core and FSDP2 meshes
  // place it; the dispatcher and the routing imbalance where stated
  // (1 = balanced, as a benchmark's fake balanced gate routes).
  q.ep = whole_or(tr, "ep", 1);
  if (tr.has("moe_dispatcher")) {
    const auto d = spec::parse_moe_dispatcher(lower(tr.text("moe_dispatcher")));
    if (!d) return Skip{fmt::format("unrecognised training.moe_dispatcher '{}'", tr.text("moe_dispatcher"))};
    p.moe.dispatcher = *d;
    notes.push_back(fmt::format("MoE dispatcher {} (training.moe_dispatcher)", tr.text("moe_dispatcher")));
  }
  if (auto im = tr.number("moe_imbalance")) p.moe.imbalance = std::max(1.0, *im);
  if (tr.has("cross_entropy")) {
    const auto ce = spec::parse_cross_entropy(lower(tr.text("cross_entropy")));
    if (!ce) return Skip{fmt::format("unrecognised training.cross_entropy '{}'", tr.text("cross_entropy"))};
    p.cross_entropy = *ce;
    p.cross_entropy_given = true;
    notes.push_back(fmt::format("cross-entropy {} (training.cross_entropy)", tr.text("cross_entropy")));
  }
  if (tr.has("sequence_parallel")) q.sp = spec::parse_published_bool(tr.text("sequence_parallel")).value_or(false);
  for (const char* key : {"virtual_pp_interleave", "virtual_pp"})
    if (auto v = tr.number(key); v && *v > 1) q.virtual_stages = static_cast<int>(*v);
  if (tr.has("tp_comm_overlap"))
    q.tp_comm_overlap = spec::parse_published_bool(tr.text("tp_comm_overlap")).value_or(false);
  else if (contains(lower(tr.text("overlap")), "tp-comm-overlap"))
    q.tp_comm_overlap = true;
  q.zero = zero_of(tr, notes);
  // Megatron's --overlap-param-gather needs its distributed optimizer
  // (megatron/training/arguments.py: "--overlap-param-gather only supported
  // with distributed optimizer"): ZeRO-1 in effect.
  if (contains(lower(tr.text("overlap")), "overlap-param-gather")) {
    q.overlap_param_gather = true;
    if (q.zero == 0) {
      q.zero = 1;
      notes.push_back("--overlap-param-gather implies Megatron's distributed optimizer: ZeRO-1");
    }
  }
  if (q.tp == 1) q.tp_comm_overlap = false;  // nothing to overlap
  // The optimizer's model state where the row states it (its
  // optimizer_source names the framework's line): master_weights fp32,
  // remainder or none; main_grads working or fp32 (bf16 = working).
  if (tr.has("master_weights")) {
    const auto w = spec::parse_master_weights(lower(tr.text("master_weights")));
    if (!w) return Skip{fmt::format("unrecognised training.master_weights '{}'", tr.text("master_weights"))};
    p.master_weights = *w;
    notes.push_back(fmt::format("master weights {} (training.master_weights)", spec::to_string(*w)));
  }
  if (tr.has("fp8_params") && spec::parse_published_bool(tr.text("fp8_params")).value_or(false)) {
    if (p.precision != spec::Precision::kFp8) return Skip{"training.fp8_params without fp8 precision"};
    p.fp8_primary_weights = true;
    notes.push_back("fp8 primary weights (training.fp8_params: Transformer Engine fp8_model_init)");
  }
  if (tr.has("main_grads")) {
    const std::string g = lower(tr.text("main_grads"));
    const auto v = g == "bf16" || g == "fp16" ? std::optional(spec::MainGrads::kWorking) : spec::parse_main_grads(g);
    if (!v) return Skip{fmt::format("unrecognised training.main_grads '{}'", tr.text("main_grads"))};
    p.main_grads = *v;
    p.main_grads_given = true;
    notes.push_back(fmt::format("main gradients {} (training.main_grads)", spec::to_string(*v)));
  }
  // The optimizer where the row states it: a spec word (adamw, adam8bit, ...),
  // or a bitsandbytes 8-bit Adam class name (bitsandbytes/optim/adamw.py
  // AdamW8bit, PagedAdamW8bit: optim_bits=8, two 8-bit states per parameter)
  // as adam8bit.
  if (tr.has("optimizer")) {
    const std::string o = lower(tr.text("optimizer"));
    auto k = spec::parse_optimizer(o);
    if (!k && (contains(o, "adamw8bit") || contains(o, "adam8bit"))) k = spec::OptimizerKind::kAdam8bit;
    if (!k && (contains(o, "adamw") || contains(o, "fusedadam") || contains(o, "fused_adam"))) k = spec::OptimizerKind::kAdamW;
    // torch.optim.SGD as sources describe it ("SGD with momentum 0.9"): a
    // momentum buffer where the text names momentum (torch.optim.SGD's
    // default momentum is 0: none).
    if (!k && contains(o, "sgd")) {
      k = spec::OptimizerKind::kSgd;
      p.optimizer.momentum = contains(o, "momentum") && !contains(o, "without momentum") && !contains(o, "no momentum");
    }
    if (!k) return Skip{fmt::format("unrecognised training.optimizer '{}'", tr.text("optimizer"))};
    p.optimizer.kind = *k;
    // bitsandbytes' Paged* classes (bitsandbytes/optim: PagedAdamW8bit, ...)
    // keep their state in unified memory (optimizer.paged).
    p.optimizer.paged = contains(o, "paged");
    notes.push_back(fmt::format("optimizer {}{} (training.optimizer '{}')", spec::to_string(*k),
                                p.optimizer.paged ? ", paged" : "", tr.text("optimizer")));
  }
  // torchtune's optimizer_in_bwd (optimizer.in_backward) and
  // enable_activation_offloading (offload.activations), true or false.
  struct Flag {
    const char* key;
    const char* note;
    void (*set)(spec::PlanSpec&, bool);
  };
  static constexpr Flag kFlags[] = {
      {"optimizer_in_bwd", "optimizer in backward", [](spec::PlanSpec& q, bool v) { q.optimizer.in_backward = v; }},
      {"activation_offload", "activations offloaded to the host",
       [](spec::PlanSpec& q, bool v) { q.offload.activations = v ? spec::OffloadDevice::kCpu : spec::OffloadDevice::kNone; }}};
  for (const Flag& f : kFlags) {
    if (!tr.has(f.key)) continue;
    const auto v = spec::parse_published_bool(tr.text(f.key));
    if (!v) return Skip{fmt::format("unrecognised training.{} '{}' (true or false)", f.key, tr.text(f.key))};
    f.set(p, *v);
    if (*v) notes.push_back(fmt::format("{} (training.{})", f.note, f.key));
  }
  // Fine-tuning: training.task (SFT: every weight trains, as in pre-training;
  // LoRA: adapters on a frozen base; QLoRA: the frozen base stored in NF4).
  const std::string task = lower(tr.text("task"));
  if (contains(task, "lora")) {
    p.finetune.mode = contains(task, "qlora") ? spec::FinetuneMode::kQlora : spec::FinetuneMode::kLora;
    if (auto r = tr.number("lora_rank")) p.finetune.rank = static_cast<int>(*r);
    if (tr.has("lora_targets")) {
      auto t = lora_targets_of(tr.text("lora_targets"));
      if (!t) return Skip{fmt::format("unrecognised training.lora_targets '{}'", tr.text("lora_targets"))};
      p.finetune.targets = *t;
    }
    notes.push_back(fmt::format("{} rank {} on {}{}", p.finetune.mode == spec::FinetuneMode::kQlora ? "QLoRA" : "LoRA",
                                p.finetune.rank,
                                spec::lora_targets_to_string(p.finetune.targets),
                                tr.has("lora_targets") ? "" : " (targets not stated: the plan default)"));
  } else if (contains(task, "sft") || contains(task, "fine")) {
    p.finetune.mode = spec::FinetuneMode::kFull;
  }
  const auto gpus = row.hardware.number("num_gpus");
  const double layout = static_cast<double>(q.tp) * q.pp * q.cp * whole_or(tr, "dp", 1);
  if (layout > (1 << 24)) return Skip{"parallel layout of more than 16M GPUs"};
  const int model_par = q.tp * q.pp * q.cp;
  if (tr.has("dp")) {
    auto dp = whole(tr, "training", "dp");
    if (!dp) return dp.skip();
    q.dp = *dp;
    if (gpus && static_cast<int>(*gpus) != q.dp * model_par)
      return Skip{fmt::format("TP x PP x DP x CP = {} does not match hardware.num_gpus {}", q.dp * model_par,
                              static_cast<int>(*gpus))};
  } else if (gpus) {
    if (static_cast<int>(*gpus) % model_par != 0)
      return Skip{fmt::format("hardware.num_gpus {} is not a multiple of TP x PP x CP = {}", static_cast<int>(*gpus),
                              model_par)};
    q.dp = static_cast<int>(*gpus) / model_par;
  } else {
    return missing("hardware", "num_gpus");
  }
  if (q.zero > 0 && q.dp == 1) q.zero = 0;
  if (cpu_offload) {
    // FSDP's CPU offload (FSDP2 CPUOffloadPolicy, FSDP1 CPUOffload(offload_params=True)):
    // the parameter shard, its gradient and the optimizer state live in host
    // memory and the optimizer steps there (torch/distributed/fsdp/_fully_shard/
    // _fsdp_api.py CPUOffloadPolicy), each layer's parameters copied in before
    // its all-gather: Ridgeline's optimizer and parameter offload (ZeRO-Infinity),
    // which needs the parameters sharded (ZeRO-3).
    if (q.zero != 3)
      return Skip{"unsupported technique: CPU offload without sharded parameters (FSDP FULL_SHARD, ZeRO-3)"};
    p.offload.optimizer = spec::OffloadDevice::kCpu;
    p.offload.params = spec::OffloadDevice::kCpu;
    notes.push_back("CPU offload (training.cpu_offload): parameters, gradients and optimizer state in host memory, "
                    "modelled as optimizer and parameter offload");
  }

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
    if (*global / (q.dp * *accum) > spec::kPublishedMaxWhole) return Skip{"micro-batch out of range"};
    micro = static_cast<int>(*global / (q.dp * *accum));
    notes.push_back(fmt::format("micro-batch {} = global batch / (DP x grad_accum)", micro));
  } else if (!global) {
    return missing("training", "micro_batch");
  }
  // Not stated: chosen below with the recomputation, once the global batch is known.
  const bool micro_unstated = micro == 0;
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
  if (*global > spec::kPublishedMaxWhole)
    return Skip{fmt::format("global batch of {:.4g} sequences is out of range", *global)};
  p.global_batch = static_cast<int>(*global);
  if (recompute_unstated || micro_unstated) {
    // What the source did not state, a practitioner tunes: the micro-batch (a
    // power of two that divides the per-GPU batch when that batch is stated in
    // sequences, or does not exceed it when it is rounded from a token count)
    // and the recomputation (none, selective or full) that Ridgeline predicts
    // fastest among those that fit, the global batch kept. A run that exists
    // fitted, so nothing that does not fit is chosen while something fits;
    // when nothing does, the smallest footprint (micro-batch 1, full
    // recomputation where unstated).
    static constexpr spec::Recompute kTries[] = {{spec::RecomputeKind::kNone, 0, 0},
                                                 {spec::RecomputeKind::kSelective, 0, 0},
                                                 {spec::RecomputeKind::kFull, 0, 0}};
    const std::span<const spec::Recompute> tries =
        recompute_unstated ? std::span<const spec::Recompute>(kTries) : std::span<const spec::Recompute>(&p.recompute, 1);
    const double per_rank = static_cast<double>(p.global_batch) / q.dp;
    const bool exact = global_exact && std::floor(per_rank) == per_rank;
    spec::PlanSpec best = p, trial = p;
    double best_rate = -1;
    // A recomputation the framework does not offer (torchtitan has no
    // Megatron-style selective) is not a choice; the row is skipped only when
    // the framework refuses every one.
    int refused = 0;
    for (const spec::Recompute& r : tries) {
      trial.recompute = r;
      for (int b = micro_unstated ? 1 << 12 : p.micro_batch; b >= 1; b /= 2) {
        if (micro_unstated && (b > std::max(1.0, per_rank) || (exact && std::fmod(per_rank, b) != 0))) continue;
        trial.micro_batch = b;
        const double step = static_cast<double>(b) * q.dp;
        trial.global_batch = static_cast<int>(std::max(1.0, std::round(p.global_batch / step)) * step);
        const auto pr = run(out.model, trial, hw, opt);
        if (!pr && recompute_unstated && ++refused < static_cast<int>(tries.size())) break;
        if (!pr) return pr.skip();
        if (pr->memory.fits && pr->step.tokens_per_s > best_rate) best_rate = pr->step.tokens_per_s, best = trial;
        if (!micro_unstated) break;
      }
    }
    if (best_rate < 0) {  // nothing fits: the smallest footprint
      if (!tr.has("tp") && !tr.has("pp") && !tr.has("cp"))
        return Skip{"parallel layout not stated (training.tp, training.pp), and one without model parallelism "
                    "does not fit"};
      best = p;
      best.micro_batch = micro_unstated ? 1 : p.micro_batch;
      if (recompute_unstated) best.recompute = kTries[2];
    }
    if (micro_unstated) {
      if (best.global_batch != p.global_batch)
        notes.push_back(fmt::format("global batch {} sequences rounded to {} (a multiple of micro-batch x DP)",
                                    p.global_batch, best.global_batch));
      notes.push_back(fmt::format("training.micro_batch not stated: {} (of the powers of two {} the per-GPU batch "
                                  "of {:.4g}, {})",
                                  best.micro_batch, exact ? "dividing" : "not above", per_rank,
                                  best_rate < 0 ? "none of which Ridgeline predicts fits: the smallest"
                                                : "the fastest Ridgeline predicts fits"));
    }
    if (recompute_unstated)
      notes.push_back(fmt::format("training.recompute not stated: {} ({})", spec::to_string(best.recompute),
                                  best_rate < 0 ? "nothing fits: the least memory"
                                                : "the fastest Ridgeline predicts fits"));
    p = best;
  }
  return out;
}

OrSkip<engine::Prediction> predict_case(const TrainingCase& tc, const spec::HardwareSpec& hw,
                                        const PredictOptions& opt) {
  return run(tc.model, tc.plan, hw, opt);
}

std::string describe(const TrainingCase& tc) {
  const auto& m = tc.model;
  const auto& p = tc.plan;
  return fmt::format("L{} h{} a{} s{} | mb {} gb {} | {} | {}", m.layers, m.hidden, m.heads, p.seq_len,
                     p.micro_batch, p.global_batch,
                     spec::summary_of(p, {"framework", "precision", "attention", "recompute"}, ", "),
                     spec::summary_line(p, spec::SummaryGroup::kLayout));
}

}  // namespace ridgeline::validation

namespace ridgeline::validation {

namespace {

/// kernel.dtype as a type the profile has a peak for. A figure stated for
/// "fp16/bf16" (either, one result) is bf16: the two share a tensor-core peak
/// and a width.
OrSkip<spec::Dtype> kernel_dtype(const spec::PublishedRow& row, const spec::HardwareSpec& hw,
                                 std::vector<std::string>& notes) {
  const std::string text = row.kernel.text("dtype");
  if (text.empty()) return missing("kernel", "dtype");
  std::optional<spec::Dtype> dt = dtype_of(text);
  if (!dt && contains(text, "/")) {
    bool sixteen = true;
    for (size_t at = 0; at <= text.size() && sixteen;) {
      const size_t cut = std::min(text.find('/', at), text.size());
      const auto alt = dtype_of(std::string_view(text).substr(at, cut - at));
      sixteen = alt == spec::Dtype::kFp16 || alt == spec::Dtype::kBf16;
      at = cut + 1;
    }
    if (sixteen) {
      dt = spec::Dtype::kBf16;
      notes.push_back(fmt::format("kernel.dtype '{}' taken as bf16 (fp16 and bf16 share one peak and width)", text));
    }
  }
  if (!dt) return Skip{fmt::format("unsupported kernel.dtype '{}'", text)};
  const spec::Peak pk = spec::peak_of(*dt);
  if (!hw.supports(pk)) return Skip{fmt::format("profile {} has no {} peak", hw.id, spec::name(pk))};
  return *dt;
}

/// The last '_'-separated word of a row id ("..._s512_standard" -> "standard").
std::string_view last_word(std::string_view id) {
  const size_t cut = id.rfind('_');
  return cut == std::string_view::npos ? id : id.substr(cut + 1);
}

}  // namespace

std::optional<spec::AttentionKind> attention_impl_of(std::string_view text) {
  const std::string t = lower(text);
  if (auto a = spec::parse_attention(t); a && *a != spec::AttentionKind::kFlash) return a;
  if (contains(t, "standard") || contains(t, "naive") || contains(t, "eager") || contains(t, "pytorch"))
    return spec::AttentionKind::kNaive;
  if (contains(t, "cudnn")) return spec::AttentionKind::kCudnn;
  if (contains(t, "pre-mlir") || contains(t, "pre_mlir")) return spec::AttentionKind::kTritonLegacy;
  if (contains(t, "triton")) return spec::AttentionKind::kTriton;
  if (const int v = flash_version_in(t)) return kind_of_version(v);
  return std::nullopt;
}

OrSkip<KernelCase> map_gemm_row(const spec::PublishedRow& row, const spec::HardwareSpec& hw) {
  const auto& kr = row.kernel;
  double mnk[3];
  constexpr const char* kKeys[] = {"M", "N", "K"};
  for (int i = 0; i < 3; ++i) {
    auto v = whole(kr, "kernel", kKeys[i]);
    if (!v) return v.skip();
    mnk[i] = *v;
  }
  const double batch = whole_or(kr, "batch", 1);
  KernelCase kc;
  const auto dt = kernel_dtype(row, hw, kc.assumptions);
  if (!dt) return dt.skip();
  kc.dtype = *dt;
  kc.kernels.push_back(graph::gemm_kernel(mnk[0], mnk[1], mnk[2], batch, *dt));
  kc.convention_flops = kc.kernels.front().flops;  // 2 M N K batch
  kc.config = fmt::format("{} GEMM M={} N={} K={}{}", spec::name(*dt), mnk[0], mnk[1], mnk[2],
                          batch > 1 ? fmt::format(" x{}", batch) : "");
  return kc;
}

OrSkip<KernelCase> map_attention_row(const spec::PublishedRow& row, const spec::HardwareSpec& hw) {
  const auto& kr = row.kernel;
  KernelCase kc;
  auto& notes = kc.assumptions;
  const int b = whole_or(kr, "batch", 1);
  auto s = whole(kr, "kernel", kr.has("seqlen") ? "seqlen" : "seq_len");
  if (!s) return s.skip();
  auto a = whole(kr, "kernel", "heads");
  if (!a) return a.skip();
  auto d = whole(kr, "kernel", "head_dim");
  if (!d) return d.skip();
  // A value head of its own width (DeepSeek-V3's multi-head latent
  // attention: Q and K 192, V 128); absent, the query/key width.
  const int dv = whole_or(kr, "head_dim_v", *d);
  if (dv < 1 || dv > (1 << 16)) return Skip{fmt::format("kernel.head_dim_v {} out of range", dv)};
  const int g = whole_or(kr, "kv_heads", *a);
  if (g > *a || *a % g != 0) return Skip{fmt::format("kernel.kv_heads {} do not divide kernel.heads {}", g, *a)};
  if (static_cast<double>(*a) * *d > (1 << 24) || static_cast<double>(b) * *s > 1e12)
    return Skip{"attention shape out of range"};
  bool causal = true;
  if (kr.has("causal")) causal = spec::parse_published_bool(kr.text("causal")).value_or(true);
  else notes.push_back("kernel.causal not stated: causal");

  // The implementation: stated, else named in the op text, else the id's last word.
  std::optional<spec::AttentionKind> impl;
  for (const char* key : {"impl", "implementation"}) {
    if (impl || !kr.has(key)) continue;
    impl = attention_impl_of(kr.text(key));
    if (!impl) return Skip{fmt::format("unrecognised kernel.{} '{}'", key, kr.text(key))};
  }
  if (!impl) impl = attention_impl_of(kr.text("op"));
  if (!impl) {
    impl = attention_impl_of(last_word(row.id));
    if (impl) notes.push_back(fmt::format("kernel.impl not stated: {}, as the row's id names it", spec::to_string(*impl)));
  }
  if (!impl) {
    if (contains(lower(row.source.text("location")), "ablation"))
      return Skip{"ablated variant of an attention kernel (an ablation study's row): not a shipped implementation"};
    impl = spec::AttentionKind::kFlash2;
    notes.push_back("attention implementation not stated: flash2");
  }
  kc.impl = *impl;

  spec::Dtype dt = spec::Dtype::kBf16;
  if (kr.has("dtype")) {
    const auto stated = kernel_dtype(row, hw, notes);
    if (!stated) return stated.skip();
    dt = *stated;
  } else {
    notes.push_back("kernel.dtype not stated: bf16");
  }
  if (dt != spec::Dtype::kBf16 && dt != spec::Dtype::kFp16)
    return Skip{fmt::format("attention in {}: the attention kernels are modelled in 16-bit", spec::name(dt))};
  kc.dtype = dt;

  // The pass: kernel.direction, else the op text ("attention forward"), else both.
  if (kr.has("direction")) {
    const std::string dir = lower(kr.text("direction"));
    if (dir != "fwd" && dir != "bwd" && dir != "fwd_bwd")
      return Skip{fmt::format("unsupported kernel.direction '{}' (fwd, bwd or fwd_bwd)", kr.text("direction"))};
    kc.forward = dir != "bwd";
    kc.backward = dir != "fwd";
  } else {
    const std::string op = lower(kr.text("op"));
    kc.forward = contains(op, "forward") || contains(op, "fwd");
    kc.backward = contains(op, "backward") || contains(op, "bwd");
    if (!kc.forward && !kc.backward) {
      kc.forward = kc.backward = true;
      notes.push_back("attention pass not stated: forward and backward");
    }
  }

  auto& sh = kc.shape;
  sh.batch = b;
  sh.heads = *a;
  sh.kv_heads = g;
  sh.q_len = sh.kv_len = *s;
  sh.head_dim = *d;
  if (dv != *d) sh.v_head_dim = dv;
  sh.causal = causal;
  double forward_model_flops = 0;
  if (kc.impl == spec::AttentionKind::kNaive) {
    for (const auto& k : graph::naive_attention_kernels(sh, dt, graph::AttentionPass::kForward)) {
      forward_model_flops += k.model_flops;
      if (kc.forward) kc.kernels.push_back(k);
    }
    if (kc.backward)
      for (const auto& k : graph::naive_attention_kernels(sh, dt, graph::AttentionPass::kBackward))
        kc.kernels.push_back(k);
  } else {
    const graph::Kernel f = graph::flash_attention_forward(sh, kc.impl, dt, hw, /*causal_model_flops=*/true);
    forward_model_flops = f.model_flops;
    if (kc.forward) kc.kernels.push_back(f);
    if (kc.backward) kc.kernels.push_back(graph::flash_attention_backward(f));
  }
  kc.convention_flops = attention_benchmark_flops(forward_model_flops, kc.forward, kc.backward);
  kc.config = fmt::format("{} attention {} {} b={} s={} heads={}{} d={}{} {}", spec::to_string(kc.impl),
                          kc.forward && kc.backward ? "fwd+bwd" : kc.forward ? "fwd" : "bwd",
                          causal ? "causal" : "non-causal", b, *s, *a, g != *a ? fmt::format(" kv_heads={}", g) : "",
                          *d, dv != *d ? fmt::format(" d_v={}", dv) : "", spec::name(dt));
  return kc;
}

}  // namespace ridgeline::validation
