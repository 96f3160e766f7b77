#include "ridgeline/spec/plan.hpp"

#include <algorithm>
#include <cstdlib>
#include <charconv>
#include <fmt/format.h>

#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "ridgeline/spec/yaml_reader.hpp"

namespace ridgeline::spec {

namespace {

template <class E, size_t N>
std::optional<E> find_word(const std::pair<std::string_view, E> (&table)[N], std::string_view s) {
  for (const auto& [w, v] : table)
    if (w == s) return v;
  return std::nullopt;
}
template <class E, size_t N>
std::string_view view_of(const std::pair<std::string_view, E> (&table)[N], E v) {
  for (const auto& [w, x] : table)
    if (x == v) return w;
  return "?";
}
template <class E, size_t N>
std::string word_of(const std::pair<std::string_view, E> (&table)[N], E v) {
  return std::string(view_of(table, v));
}
template <class E, size_t N>
std::string choices_of(const std::pair<std::string_view, E> (&table)[N]) {
  std::string out;
  for (size_t i = 0; i < N; ++i) out += (i ? ", " : "") + std::string(table[i].first);
  return out;
}

constexpr std::pair<std::string_view, Precision> kPrecisions[] = {
    {"fp32", Precision::kFp32}, {"tf32", Precision::kTf32}, {"fp16", Precision::kFp16},
    {"bf16", Precision::kBf16}, {"fp8", Precision::kFp8}, {"nvfp4", Precision::kNvfp4}};
constexpr std::pair<std::string_view, AttentionKind> kAttention[] = {
    {"naive", AttentionKind::kNaive}, {"flash", AttentionKind::kFlash}, {"flash2", AttentionKind::kFlash2},
    {"flash3", AttentionKind::kFlash3}, {"cudnn", AttentionKind::kCudnn}, {"triton", AttentionKind::kTriton},
    {"triton_legacy", AttentionKind::kTritonLegacy}};
constexpr std::pair<std::string_view, Fusion> kFusion[] = {
    {"eager", Fusion::kEager}, {"fused", Fusion::kFused}, {"compiled", Fusion::kCompiled}, {"xla", Fusion::kXla}};
constexpr std::pair<std::string_view, OptimizerKind> kOptimizers[] = {
    {"sgd", OptimizerKind::kSgd},       {"adam", OptimizerKind::kAdam},     {"adamw", OptimizerKind::kAdamW},
    {"adafactor", OptimizerKind::kAdafactor}, {"came", OptimizerKind::kCame}, {"sophia", OptimizerKind::kSophia},
    {"lion", OptimizerKind::kLion},     {"adam8bit", OptimizerKind::kAdam8bit}, {"muon", OptimizerKind::kMuon}};
constexpr std::pair<std::string_view, FinetuneMode> kFinetune[] = {
    {"full", FinetuneMode::kFull}, {"lora", FinetuneMode::kLora}, {"qlora", FinetuneMode::kQlora}};
constexpr std::pair<std::string_view, AttentionFlops> kAttnFlops[] = {
    {"causal", AttentionFlops::kCausal}, {"full", AttentionFlops::kFull}};
// The fp8 recipes techniques/precision.cpp models (what each costs is there).
constexpr std::pair<std::string_view, Fp8Recipe> kRecipes[] = {{"delayed", Fp8Recipe::kDelayed},
                                                              {"tensorwise", Fp8Recipe::kTensorwise},
                                                              {"blockwise", Fp8Recipe::kBlockwise},
                                                              {"mxfp8", Fp8Recipe::kMxfp8},
                                                              {"rowwise", Fp8Recipe::kRowwise},
                                                              {"rowwise_with_gw_hp", Fp8Recipe::kRowwiseGwHp}};
constexpr std::pair<std::string_view, std::uint8_t> kTargets[] = {
    {"q", kTargetQ}, {"k", kTargetK}, {"v", kTargetV}, {"o", kTargetO},
    {"gate", kTargetGate}, {"up", kTargetUp}, {"down", kTargetDown}};
constexpr std::pair<std::string_view, MasterWeights> kMasterWeights[] = {
    {"fp32", MasterWeights::kFp32}, {"remainder", MasterWeights::kRemainder}, {"none", MasterWeights::kNone}};
constexpr std::pair<std::string_view, MainGrads> kMainGrads[] = {{"working", MainGrads::kWorking},
                                                                {"fp32", MainGrads::kFp32}};
constexpr std::pair<std::string_view, CrossEntropy> kCrossEntropy[] = {
    {"fused", CrossEntropy::kFused}, {"eager", CrossEntropy::kEager}, {"chunked", CrossEntropy::kChunked}};
constexpr std::pair<std::string_view, RmsNormImpl> kRmsNorm[] = {
    {"composite", RmsNormImpl::kComposite}, {"native", RmsNormImpl::kNative}, {"fused", RmsNormImpl::kFused}};
constexpr std::pair<std::string_view, OffloadDevice> kOffloadDevices[] = {{"none", OffloadDevice::kNone},
                                                                         {"cpu", OffloadDevice::kCpu}};
constexpr std::pair<std::string_view, MoeDispatcher> kMoeDispatchers[] = {{"alltoall", MoeDispatcher::kAllToAll},
                                                                          {"deepep", MoeDispatcher::kDeepEp}};
constexpr std::pair<std::string_view, StateDtype> kStateDtypes[] = {
    {"auto", StateDtype::kAuto}, {"fp32", StateDtype::kFp32}, {"bf16", StateDtype::kBf16}, {"fp16", StateDtype::kFp16}};
constexpr std::pair<std::string_view, PpSchedule> kPpSchedules[] = {{"1f1b", PpSchedule::k1f1b},
                                                                    {"dualpipe", PpSchedule::kDualPipe}};

}  // namespace

std::optional<Precision> parse_precision(std::string_view s) { return find_word(kPrecisions, s); }
std::optional<AttentionKind> parse_attention(std::string_view s) { return find_word(kAttention, s); }
std::optional<Fusion> parse_fusion(std::string_view s) { return find_word(kFusion, s); }
std::optional<OptimizerKind> parse_optimizer(std::string_view s) { return find_word(kOptimizers, s); }
std::optional<FinetuneMode> parse_finetune(std::string_view s) { return find_word(kFinetune, s); }
std::optional<AttentionFlops> parse_attention_flops(std::string_view s) { return find_word(kAttnFlops, s); }
std::optional<Fp8Recipe> parse_fp8_recipe(std::string_view s) { return find_word(kRecipes, s); }
std::optional<MasterWeights> parse_master_weights(std::string_view s) { return find_word(kMasterWeights, s); }
std::optional<MainGrads> parse_main_grads(std::string_view s) { return find_word(kMainGrads, s); }
std::optional<CrossEntropy> parse_cross_entropy(std::string_view s) { return find_word(kCrossEntropy, s); }
std::optional<RmsNormImpl> parse_rms_norm(std::string_view s) { return find_word(kRmsNorm, s); }
std::optional<OffloadDevice> parse_offload_device(std::string_view s) { return find_word(kOffloadDevices, s); }
std::optional<MoeDispatcher> parse_moe_dispatcher(std::string_view s) { return find_word(kMoeDispatchers, s); }
std::optional<PpSchedule> parse_pp_schedule(std::string_view s) { return find_word(kPpSchedules, s); }
std::optional<StateDtype> parse_state_dtype(std::string_view s) { return find_word(kStateDtypes, s); }

namespace {
/// Megatron-Core's recompute_modules words, in the order they are printed.
constexpr std::pair<std::string_view, std::uint8_t> kRecomputeModules[] = {
    {"core_attn", kRecomputeCoreAttn},     {"layernorm", kRecomputeLayernorm},
    {"mla_up_proj", kRecomputeMlaUpProj}, {"mlp", kRecomputeMlp},
    {"shared_experts", kRecomputeSharedExperts}, {"moe_act", kRecomputeMoeAct}};
}  // namespace

std::optional<std::uint8_t> parse_recompute_modules(std::string_view s) {
  std::uint8_t mask = 0;
  while (true) {
    const auto sep = s.find_first_of("+, ");
    const auto w = s.substr(0, sep);
    const auto* hit = std::find_if(std::begin(kRecomputeModules), std::end(kRecomputeModules),
                                   [&](const auto& m) { return m.first == w; });
    if (hit == std::end(kRecomputeModules)) return std::nullopt;
    mask |= hit->second;
    if (sep == std::string_view::npos) break;
    s.remove_prefix(sep + 1);
  }
  return mask;
}

std::string recompute_modules_to_string(std::uint8_t mask, std::string_view sep) {
  std::string out;
  for (const auto& [word, bit] : kRecomputeModules)
    if (mask & bit) out += (out.empty() ? "" : std::string(sep)) + std::string(word);
  return out;
}

std::optional<Recompute> parse_recompute(std::string_view s) {
  if (s == "none") return Recompute{RecomputeKind::kNone, 0};
  if (s.starts_with("selective:")) {
    auto mods = parse_recompute_modules(s.substr(10));
    if (!mods) return std::nullopt;
    Recompute r{RecomputeKind::kSelective, 0};
    r.modules = *mods;
    return r;
  }
  if (s == "selective") return Recompute{RecomputeKind::kSelective, 0};
  if (s == "full") return Recompute{RecomputeKind::kFull, 0};
  if (s == "sqrt") return Recompute{RecomputeKind::kSqrt, 0};
  if (s == "op") return Recompute{RecomputeKind::kOp, 0};
  const bool every = s.starts_with("every:"), block = s.starts_with("block:");
  if (every || block) {
    auto num = s.substr(6);
    int k = 0;
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), k);
    if (ec != std::errc() || p != num.data() + num.size() || k < 1) return std::nullopt;
    if (block) return Recompute{RecomputeKind::kFull, 0, k};
    return Recompute{RecomputeKind::kEvery, k};
  }
  return std::nullopt;
}

std::optional<std::uint8_t> parse_lora_targets(std::string_view s) {
  if (s == "all") return static_cast<std::uint8_t>(127);
  if (s == "attention") return static_cast<std::uint8_t>(kTargetQ | kTargetK | kTargetV | kTargetO);
  std::uint8_t mask = 0;
  while (!s.empty()) {
    auto comma = s.find(',');
    auto w = s.substr(0, comma);
    while (!w.empty() && w.front() == ' ') w.remove_prefix(1);
    while (!w.empty() && w.back() == ' ') w.remove_suffix(1);
    auto bit = find_word(kTargets, w);
    if (!bit) return std::nullopt;
    mask |= *bit;
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  if (mask == 0) return std::nullopt;
  return mask;
}

std::string to_string(Precision p) { return word_of(kPrecisions, p); }
std::string to_string(AttentionKind a) { return word_of(kAttention, a); }
std::string to_string(Fusion f) { return word_of(kFusion, f); }
std::string to_string(OptimizerKind o) { return word_of(kOptimizers, o); }
std::string to_string(FinetuneMode f) { return word_of(kFinetune, f); }
std::string_view name(AttentionFlops a) { return view_of(kAttnFlops, a); }
std::string to_string(AttentionFlops a) { return word_of(kAttnFlops, a); }
std::string to_string(Fp8Recipe r) { return word_of(kRecipes, r); }
std::string to_string(MasterWeights w) { return word_of(kMasterWeights, w); }
std::string to_string(MainGrads g) { return word_of(kMainGrads, g); }
std::string to_string(CrossEntropy c) { return word_of(kCrossEntropy, c); }
std::string to_string(RmsNormImpl r) { return word_of(kRmsNorm, r); }
std::string to_string(OffloadDevice d) { return word_of(kOffloadDevices, d); }
std::string to_string(MoeDispatcher d) { return word_of(kMoeDispatchers, d); }
std::string to_string(PpSchedule s) { return word_of(kPpSchedules, s); }
std::string to_string(StateDtype s) { return word_of(kStateDtypes, s); }
std::string to_string(const Recompute& r) {
  switch (r.kind) {
    case RecomputeKind::kNone: return "none";
    case RecomputeKind::kSelective:
      return r.modules == kRecomputeCoreAttn ? "selective"
                                             : "selective:" + recompute_modules_to_string(r.modules, "+");
    case RecomputeKind::kFull: return r.block_layers > 0 ? fmt::format("block:{}", r.block_layers) : "full";
    case RecomputeKind::kSqrt: return "sqrt";
    case RecomputeKind::kOp: return "op";
    case RecomputeKind::kEvery: return fmt::format("every:{}", r.every_k);
  }
  return "none";
}
std::string lora_targets_to_string(std::uint8_t mask) {
  std::string out;
  for (const auto& [w, bit] : kTargets)
    if (mask & bit) {
      if (!out.empty()) out += ',';
      out += w;
    }
  return out;
}

std::string precision_choices() { return choices_of(kPrecisions); }
std::string recompute_choices() {
  return "none, selective, selective:M+M (M: core_attn, layernorm, mla_up_proj, mlp, shared_experts, moe_act), op, "
         "full, every:K, block:K, sqrt";
}
std::string attention_choices() { return choices_of(kAttention); }
std::string fusion_choices() { return choices_of(kFusion); }
std::string optimizer_choices() { return choices_of(kOptimizers); }
std::string finetune_choices() { return choices_of(kFinetune); }
std::string fp8_recipe_choices() { return choices_of(kRecipes); }
std::string attention_flops_choices() { return choices_of(kAttnFlops); }
std::string lora_target_choices() { return "a comma list of q, k, v, o, gate, up, down, or all, attention"; }
std::string master_weights_choices() { return choices_of(kMasterWeights); }
std::string main_grads_choices() { return choices_of(kMainGrads); }
std::string cross_entropy_choices() { return choices_of(kCrossEntropy); }
std::string rms_norm_choices() { return choices_of(kRmsNorm); }
std::string offload_device_choices() { return choices_of(kOffloadDevices); }
std::string moe_dispatcher_choices() { return choices_of(kMoeDispatchers); }
std::string pp_schedule_choices() { return choices_of(kPpSchedules); }
std::string state_dtype_choices() { return choices_of(kStateDtypes); }

int stage_layers(int layers, int pp, int first, int last, int stage) {
  pp = std::max(1, pp);
  if (first <= 0 && last <= 0) return (layers + pp - 1) / pp;
  if (pp == 1) return layers;
  if (stage == 0 && first > 0) return first;
  if (stage == pp - 1 && last > 0) return last;
  const int others = pp - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
  const int rest = layers - std::max(0, first) - std::max(0, last);
  if (others <= 0 || rest <= 0 || rest % others != 0) return 0;
  return rest / others;
}

int max_stage_layers(int layers, int pp, int first, int last) {
  int most = 0;
  // The end stages and one stage between them cover every distinct count.
  for (int i : {0, std::min(1, std::max(0, pp - 1)), std::max(0, pp - 1)})
    most = std::max(most, stage_layers(layers, pp, first, last, i));
  return most;
}

int timed_mtp_layers(int layers, int mtp, int pp, int first, int last) {
  if (mtp <= 0) return 0;
  const int last_layers = stage_layers(layers, pp, first, last, std::max(1, pp) - 1);
  return last_layers > 0 && last_layers + mtp >= max_stage_layers(layers, pp, first, last) ? mtp : 0;
}

std::string stage_split_hint(int layers, int pp) {
  if (pp < 2 || layers < pp) return "";
  const int others = pp - 1;
  int best = 0;
  for (int first = 1; first <= layers - others; ++first) {
    if ((layers - first) % others != 0) continue;
    // |first - layers/pp| compared in whole numbers: |first * pp - layers|.
    if (best == 0 || std::abs(first * pp - layers) < std::abs(best * pp - layers)) best = first;
  }
  if (best == 0) return "";
  return fmt::format("; uneven stages do: --first-stage-layers {} (then {} on each of the other {})", best,
                     (layers - best) / others, others);
}

std::string check_stage_layers(int layers, int pp, int first, int last) {
  if (first <= 0 && last <= 0) return "";
  if (pp <= 1) return "uneven pipeline stages need PP > 1";
  const int given = std::max(0, first) + std::max(0, last);
  const int others = pp - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
  const int rest = layers - given;
  if (others == 0 ? rest == 0 : rest >= others && rest % others == 0) return "";  // the message only when refused
  std::string ends;
  if (first > 0) ends = fmt::format("the first stage's {}", first);
  if (last > 0) ends += fmt::format("{}the last stage's {}", ends.empty() ? "" : " and ", last);
  if (others == 0) {
    if (rest == 0) return "";
    return fmt::format("{} add up to {} layers, not the model's {}", ends, given, layers);
  }
  if (rest < others)
    return fmt::format("{} layers less {} leave {}, fewer than one for each of the {} other stages", layers, ends,
                       rest, others);
  if (rest % others != 0)
    return fmt::format("{} layers less {} leave {}, which {} other stages do not divide", layers, ends, rest,
                       others);
  return "";
}

void apply_framework_defaults(PlanSpec& p) {
  if (!p.sp_given && p.parallel.tp > 1 && framework(p.framework).sequence_parallel_with_tp) p.parallel.sp = true;
  if (!p.main_grads_given) p.main_grads = main_grads_of(p);
  if (!p.cross_entropy_given) p.cross_entropy = cross_entropy_of(p);
}

const std::vector<std::string>& setting_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> v;
    for (const auto& f : plan_fields()) v.emplace_back(f.setting.empty() ? f.key : f.setting);
    return v;
  }();
  return keys;
}

std::string apply_setting(PlanSpec& p, std::string_view key, std::string_view value) {
  const PlanField* f = find_plan_field(key);
  if (!f) return fmt::format("unknown setting '{}'{}", key, support::did_you_mean(std::string(key), setting_keys()));
  if (auto e = set_field(*f, p, value); !e.empty()) return fmt::format("{}: {}", key, e);
  return "";
}

namespace {

/// Reads every plan field present under `r` (the map at `prefix`, "" at the
/// top): scalars through set_field, nested maps recursively.
void read_fields(MapReader& r, std::string_view prefix, PlanSpec& p) {
  std::vector<std::string> children;  // nested maps under this prefix, in table order
  for (const auto& f : plan_fields()) {
    std::string_view rest = f.key;
    if (!prefix.empty()) {
      if (!rest.starts_with(prefix) || rest.size() <= prefix.size() || rest[prefix.size()] != '.') continue;
      rest.remove_prefix(prefix.size() + 1);
    }
    const auto dot = rest.find('.');
    if (dot != std::string_view::npos) {
      const std::string child(rest.substr(0, dot));
      if (std::find(children.begin(), children.end(), child) == children.end()) children.push_back(child);
      continue;
    }
    const std::string key(rest);
    if (!r.has(key)) continue;
    auto text = r.string(key);
    if (!text) continue;
    if (auto e = set_field(f, p, *text); !e.empty()) r.error_at(key, e);
  }
  for (const auto& child : children) {
    const std::string path = prefix.empty() ? child : std::string(prefix) + "." + child;
    if (r.has(child) && !r.node(child).IsMap()) {
      // "optimizer: adamw": the parent holds its shorthand field's value.
      const PlanField* shorthand = nullptr;
      for (const auto& f : plan_fields())
        if (f.shorthand && f.key.starts_with(path + ".")) shorthand = &f;
      if (shorthand) {
        if (auto text = r.string(child))
          if (auto e = set_field(*shorthand, p, *text); !e.empty()) r.error_at(child, e);
        continue;
      }
    }
    if (auto sub = r.map(child)) {
      read_fields(*sub, path, p);
      sub->finish();
    }
  }
}

}  // namespace

std::string packed_docs_problem(int doc_len, int seq_len) {
  if (seq_len <= 0 || doc_len <= seq_len) return "";
  return fmt::format("packed documents of {} tokens exceed the sequence length {}", doc_len, seq_len);
}

PlanSpec load_plan(const std::string& path) {
  YamlNode root = load_yaml_file(path);
  support::DiagnosticList d;
  PlanSpec p;
  p.source_file = path;
  MapReader r(root, path, "", d);
  read_fields(r, "", p);
  r.finish();
  if (root.IsMap() && root["parallel"].IsMap() && root["parallel"]["sp"]) p.sp_given = true;
  if (!d.has_errors() && p.global_batch > 0 && p.micro_batch > p.global_batch)
    d.error(loc_of(path, root["micro_batch"]), "micro_batch",
            fmt::format("micro-batch {} exceeds the global batch {}", p.micro_batch, p.global_batch));
  if (const auto why = packed_docs_problem(p.packed_doc_len, p.seq_len); !d.has_errors() && !why.empty())
    d.error(loc_of(path, root["packed_doc_len"]), "packed_doc_len", why);
  d.throw_if_errors();
  return p;
}

}  // namespace ridgeline::spec
