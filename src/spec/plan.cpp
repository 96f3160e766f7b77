#include "ridgeline/spec/plan.hpp"

#include <charconv>
#include <fmt/format.h>

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
std::string word_of(const std::pair<std::string_view, E> (&table)[N], E v) {
  for (const auto& [w, x] : table)
    if (x == v) return std::string(w);
  return "?";
}
template <class E, size_t N>
std::string choices_of(const std::pair<std::string_view, E> (&table)[N]) {
  std::string out;
  for (size_t i = 0; i < N; ++i) out += (i ? ", " : "") + std::string(table[i].first);
  return out;
}

constexpr std::pair<std::string_view, Precision> kPrecisions[] = {
    {"fp32", Precision::kFp32}, {"tf32", Precision::kTf32}, {"fp16", Precision::kFp16},
    {"bf16", Precision::kBf16}, {"fp8", Precision::kFp8}};
constexpr std::pair<std::string_view, AttentionKind> kAttention[] = {
    {"naive", AttentionKind::kNaive}, {"flash", AttentionKind::kFlash}, {"flash2", AttentionKind::kFlash2},
    {"flash3", AttentionKind::kFlash3}};
constexpr std::pair<std::string_view, Fusion> kFusion[] = {
    {"eager", Fusion::kEager}, {"fused", Fusion::kFused}, {"compiled", Fusion::kCompiled}, {"xla", Fusion::kXla}};
constexpr std::pair<std::string_view, OptimizerKind> kOptimizers[] = {
    {"sgd", OptimizerKind::kSgd},       {"adam", OptimizerKind::kAdam},     {"adamw", OptimizerKind::kAdamW},
    {"adafactor", OptimizerKind::kAdafactor}, {"came", OptimizerKind::kCame}, {"sophia", OptimizerKind::kSophia},
    {"lion", OptimizerKind::kLion},     {"adam8bit", OptimizerKind::kAdam8bit}};
constexpr std::pair<std::string_view, FinetuneMode> kFinetune[] = {
    {"full", FinetuneMode::kFull}, {"lora", FinetuneMode::kLora}, {"qlora", FinetuneMode::kQlora}};
constexpr std::pair<std::string_view, AttentionFlops> kAttnFlops[] = {
    {"causal", AttentionFlops::kCausal}, {"full", AttentionFlops::kFull}};
constexpr std::pair<std::string_view, Fp8Recipe> kRecipes[] = {{"hybrid", Fp8Recipe::kHybrid},
                                                              {"e4m3", Fp8Recipe::kE4M3}};
constexpr std::pair<std::string_view, Fp8Scaling> kScalings[] = {{"delayed", Fp8Scaling::kDelayed},
                                                                {"current", Fp8Scaling::kCurrent}};
constexpr std::pair<std::string_view, PipelineSchedule> kSchedules[] = {
    {"1f1b", PipelineSchedule::k1F1B}, {"interleaved", PipelineSchedule::kInterleaved}};
constexpr std::pair<std::string_view, std::uint8_t> kTargets[] = {
    {"q", kTargetQ}, {"k", kTargetK}, {"v", kTargetV}, {"o", kTargetO},
    {"gate", kTargetGate}, {"up", kTargetUp}, {"down", kTargetDown}};

}  // namespace

std::optional<Precision> parse_precision(std::string_view s) { return find_word(kPrecisions, s); }
std::optional<AttentionKind> parse_attention(std::string_view s) { return find_word(kAttention, s); }
std::optional<Fusion> parse_fusion(std::string_view s) { return find_word(kFusion, s); }
std::optional<OptimizerKind> parse_optimizer(std::string_view s) { return find_word(kOptimizers, s); }
std::optional<FinetuneMode> parse_finetune(std::string_view s) { return find_word(kFinetune, s); }
std::optional<AttentionFlops> parse_attention_flops(std::string_view s) { return find_word(kAttnFlops, s); }
std::optional<Fp8Recipe> parse_fp8_recipe(std::string_view s) { return find_word(kRecipes, s); }
std::optional<Fp8Scaling> parse_fp8_scaling(std::string_view s) { return find_word(kScalings, s); }
std::optional<PipelineSchedule> parse_schedule(std::string_view s) { return find_word(kSchedules, s); }

std::optional<Recompute> parse_recompute(std::string_view s) {
  if (s == "none") return Recompute{RecomputeKind::kNone, 0};
  if (s == "selective") return Recompute{RecomputeKind::kSelective, 0};
  if (s == "full") return Recompute{RecomputeKind::kFull, 0};
  if (s == "sqrt") return Recompute{RecomputeKind::kSqrt, 0};
  if (s.rfind("every:", 0) == 0) {
    auto num = s.substr(6);
    int k = 0;
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), k);
    if (ec != std::errc() || p != num.data() + num.size() || k < 1) return std::nullopt;
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
std::string to_string(AttentionFlops a) { return word_of(kAttnFlops, a); }
std::string to_string(PipelineSchedule s) { return word_of(kSchedules, s); }
std::string to_string(Fp8Recipe r) { return word_of(kRecipes, r); }
std::string to_string(Fp8Scaling s) { return word_of(kScalings, s); }
std::string to_string(const Recompute& r) {
  switch (r.kind) {
    case RecomputeKind::kNone: return "none";
    case RecomputeKind::kSelective: return "selective";
    case RecomputeKind::kFull: return "full";
    case RecomputeKind::kSqrt: return "sqrt";
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
std::string recompute_choices() { return "none, selective, full, every:K, sqrt"; }
std::string attention_choices() { return choices_of(kAttention); }
std::string fusion_choices() { return choices_of(kFusion); }
std::string optimizer_choices() { return choices_of(kOptimizers); }
std::string finetune_choices() { return choices_of(kFinetune); }

const std::vector<std::string>& setting_keys() {
  static const std::vector<std::string> keys = {"precision", "recompute", "attention", "fusion", "optimizer",
                                                "finetune", "lora_rank", "micro_batch", "seq", "tp", "pp", "dp",
                                                "cp", "ep", "zero", "vpp", "sp", "cuda_graphs"};
  return keys;
}

std::string apply_setting(PlanSpec& p, std::string_view key, std::string_view value) {
  auto as_int = [&](int lo, int hi, int& out) -> std::string {
    int v = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || ptr != value.data() + value.size() || v < lo || v > hi)
      return fmt::format("{}: expected a whole number from {} to {}, got \"{}\"", key, lo, hi, value);
    out = v;
    return "";
  };
  auto as_bool = [&](bool& out) -> std::string {
    if (value == "true" || value == "on" || value == "1") out = true;
    else if (value == "false" || value == "off" || value == "0") out = false;
    else return fmt::format("{}: expected true or false, got \"{}\"", key, value);
    return "";
  };
  auto word = [&](auto parse, auto& out, const std::string& choices) -> std::string {
    auto r = parse(value);
    if (!r) return fmt::format("{}: expected one of {}, got \"{}\"", key, choices, value);
    out = *r;
    return "";
  };
  if (key == "precision") return word(parse_precision, p.precision, precision_choices());
  if (key == "recompute") return word(parse_recompute, p.recompute, recompute_choices());
  if (key == "attention") return word(parse_attention, p.attention, attention_choices());
  if (key == "fusion") return word(parse_fusion, p.fusion, fusion_choices());
  if (key == "optimizer") return word(parse_optimizer, p.optimizer.kind, optimizer_choices());
  if (key == "finetune") return word(parse_finetune, p.finetune.mode, finetune_choices());
  if (key == "lora_rank") return as_int(1, 65536, p.finetune.rank);
  if (key == "micro_batch") return as_int(1, 1 << 20, p.micro_batch);
  if (key == "seq" || key == "seq_len") return as_int(1, 1 << 30, p.seq_len);
  if (key == "tp") return as_int(1, 4096, p.parallel.tp);
  if (key == "pp") return as_int(1, 4096, p.parallel.pp);
  if (key == "dp") return as_int(1, 1 << 20, p.parallel.dp);
  if (key == "cp") return as_int(1, 4096, p.parallel.cp);
  if (key == "ep") return as_int(1, 4096, p.parallel.ep);
  if (key == "zero") return as_int(0, 3, p.parallel.zero);
  if (key == "vpp" || key == "virtual_stages") {
    auto e = as_int(1, 1024, p.parallel.virtual_stages);
    if (e.empty() && p.parallel.virtual_stages > 1) p.parallel.schedule = PipelineSchedule::kInterleaved;
    return e;
  }
  if (key == "sp") return as_bool(p.parallel.sp);
  if (key == "cuda_graphs") return as_bool(p.cuda_graphs);
  return fmt::format("unknown setting '{}'{}", key, support::did_you_mean(std::string(key), setting_keys()));
}

PlanSpec load_plan(const std::string& path) {
  YAML::Node root = load_yaml_file(path);
  support::DiagnosticList d;
  PlanSpec p;
  p.source_file = path;
  MapReader r(root, path, "", d);
  auto int_field = [&](MapReader& m, const char* key, int& out, long long lo, long long hi) {
    if (auto v = m.integer(key, false, lo, hi)) out = static_cast<int>(*v);
  };
  int_field(r, "micro_batch", p.micro_batch, 1, 1 << 24);
  int_field(r, "global_batch", p.global_batch, 1, 1 << 30);
  int_field(r, "seq_len", p.seq_len, 1, 1 << 30);
  if (auto v = r.word("precision", parse_precision, precision_choices())) p.precision = *v;
  if (auto v = r.word("recompute", parse_recompute, recompute_choices())) p.recompute = *v;
  if (auto v = r.word("attention", parse_attention, attention_choices())) p.attention = *v;
  if (auto v = r.word("fusion", parse_fusion, fusion_choices())) p.fusion = *v;
  if (auto v = r.boolean("cuda_graphs")) p.cuda_graphs = *v;
  if (auto v = r.word("attention_flops", parse_attention_flops, "causal, full")) p.attention_flops = *v;
  if (auto v = r.quantity("tokens", units::Dimension::kCount)) p.tokens = *v;
  if (auto v = r.number("power_utilization", false, 0.01, 1.0)) p.power_utilization = *v;
  if (r.has("optimizer") && r.node("optimizer").IsMap()) {
    auto o = r.map("optimizer");
    if (auto v = o->word("kind", parse_optimizer, optimizer_choices(), true)) p.optimizer.kind = *v;
    if (auto v = o->boolean("momentum")) p.optimizer.momentum = *v;
    if (auto v = o->boolean("first_moment")) p.optimizer.first_moment = *v;
    if (auto v = o->integer("hessian_interval", false, 1, 1000000)) p.optimizer.hessian_interval = static_cast<int>(*v);
    o->finish();
  } else if (auto v = r.word("optimizer", parse_optimizer, optimizer_choices())) {
    p.optimizer.kind = *v;
  }
  if (r.has("finetune") && r.node("finetune").IsMap()) {
    auto f = r.map("finetune");
    if (auto v = f->word("mode", parse_finetune, finetune_choices(), true)) p.finetune.mode = *v;
    if (auto v = f->integer("rank", false, 1, 1 << 16)) p.finetune.rank = static_cast<int>(*v);
    if (auto v = f->number("alpha", false, 0.0, 1e6)) p.finetune.alpha = *v;
    if (auto v = f->word("targets", parse_lora_targets, "a comma list of q, k, v, o, gate, up, down, or all"))
      p.finetune.targets = *v;
    f->finish();
  } else if (auto v = r.word("finetune", parse_finetune, finetune_choices())) {
    p.finetune.mode = *v;
  }
  if (auto par = r.map("parallel")) {
    auto& q = p.parallel;
    int_field(*par, "dp", q.dp, 1, 1 << 20);
    int_field(*par, "tp", q.tp, 1, 1 << 12);
    int_field(*par, "pp", q.pp, 1, 1 << 12);
    int_field(*par, "cp", q.cp, 1, 1 << 12);
    int_field(*par, "ep", q.ep, 1, 1 << 12);
    int_field(*par, "zero", q.zero, 0, 3);
    int_field(*par, "virtual_stages", q.virtual_stages, 1, 1 << 10);
    if (auto v = par->boolean("sp")) q.sp = *v;
    if (auto v = par->boolean("tp_comm_overlap")) q.tp_comm_overlap = *v;
    if (auto v = par->word("schedule", parse_schedule, "1f1b, interleaved")) q.schedule = *v;
    par->finish();
  }
  if (auto f8 = r.map("fp8")) {
    if (auto v = f8->word("recipe", parse_fp8_recipe, "hybrid, e4m3")) p.fp8_recipe = *v;
    if (auto v = f8->word("scaling", parse_fp8_scaling, "delayed, current")) p.fp8_scaling = *v;
    f8->finish();
  }
  if (auto ls = r.map("loss_scaling")) {
    if (auto v = ls->number("skipped_step_rate", false, 0.0, 0.5)) p.skipped_step_rate = *v;
    ls->finish();
  }
  r.finish();
  if (!d.has_errors() && p.global_batch > 0 && p.micro_batch > p.global_batch)
    d.error(loc_of(path, root["micro_batch"]), "micro_batch",
            fmt::format("micro-batch {} exceeds the global batch {}", p.micro_batch, p.global_batch));
  d.throw_if_errors();
  return p;
}

}  // namespace ridgeline::spec
