#include "plan_flags.hpp"

#include <algorithm>

#include <cmath>
#include <fmt/format.h>
#include <iostream>

#include "common.hpp"
#include "overrides.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/plan_fields.hpp"

namespace ridgeline::cli {

void PlanFlags::add_to(CLI::App& app) {
  const auto fields = spec::plan_fields();
  values.assign(fields.size(), std::nullopt);
  switches.assign(fields.size(), std::nullopt);
  app.add_option("--plan", plan_file, "Training plan YAML (flags override its fields)");
  static const spec::PlanSpec kDefault;
  for (size_t i = 0; i < fields.size(); ++i) {
    const auto& f = fields[i];
    if (f.flag.empty()) continue;
    const std::string flag = "--" + std::string(f.flag);
    std::string help(f.help);
    if (f.type == spec::FieldType::kWord) help += ": " + f.choices();
    if (f.type == spec::FieldType::kInt) help += fmt::format(" ({:.0f}-{:.0f}", f.lo, f.hi);
    else help += " (";
    if (help.find("default") == std::string::npos)
      help += (help.back() == '(' ? "default " : ", default ") + spec::field_text(f, kDefault);
    help += ")";
    if (help.ends_with(" ()")) help.resize(help.size() - 3);
    if (f.key == "parallel.sp")
      help += "; default on with TP > 1 where the framework runs it so (megatron, torchtitan), else off";
    if (f.type == spec::FieldType::kBool) {
      // A flag function runs only when the flag is given (CLI11 assigns an
      // optional<bool> flag target false even when it is absent, which would
      // override the plan file).
      app.add_flag_function(flag + ",!--no-" + std::string(f.flag),
                            [this, i](std::int64_t n) { switches[i] = n > 0; }, help);
      continue;
    }
    const char* type = f.type == spec::FieldType::kInt ? "N" : f.type == spec::FieldType::kWord ? "WORD" : "X";
    if (f.key == "global_batch") type = "N|TOKENS";
    app.add_option(flag, values[i], help)->type_name(type);
  }
  app.add_option("--global-batch-tokens", global_batch_tokens,
                 "Global batch in tokens (4M = 4 x 2^20; K, M, G binary as batch sizes are quoted): a whole "
                 "number of sequences")
      ->type_name("TOKENS");
  const auto aliases = spec::megatron_aliases();
  megatron.assign(aliases.size(), std::nullopt);
  for (size_t i = 0; i < aliases.size(); ++i) {
    const auto& a = aliases[i];
    const std::string flag = "--" + std::string(a.name);
    if (a.takes_value) app.add_option(flag, megatron[i], std::string(a.help))->type_name("X");
    else app.add_flag_function(flag, [this, i](std::int64_t) { megatron[i] = ""; }, std::string(a.help));
  }
  app.add_option("--from-megatron", from_megatron,
                 "Import the plan from a file of Megatron-LM arguments (as a launch script passes them); flags "
                 "override it")
      ->type_name("ARGS_FILE");
  app.add_option("--from-torchtitan", from_torchtitan, "Import the plan from a torchtitan train.toml; flags override it")
      ->type_name("TOML");
  app.add_option("--from-deepspeed", from_deepspeed, "Import the plan from a DeepSpeed ds_config.json; flags override it")
      ->type_name("JSON");
  app.add_flag("--print-plan", print_plan,
               "Show the plan the flags and any imported launch config give (what each setting came from, what "
               "was ignored), then stop");
  app.add_flag("--no-calibration", no_calibration, "Ignore the profile's calibration block");
  app.add_option("--calibration", calibration,
                 "Stack calibration from measured runs (`ridgeline calibrate --runs`): applied to plans on the GPU "
                 "profile and framework it was fitted on (step time scale, allocator reserve, an interval anchored "
                 "on the runs); the output says whether it applied")
      ->type_name("FILE");
  app.add_option("--price", price,
                 "US dollars per GPU-hour (2.50 or $2.50): replaces the GPU profile's price_per_gpu_hour in every "
                 "cost")
      ->type_name("USD");
  app.add_option("--set", sets,
                 "FIELD=VALUE (repeatable): override a field of the GPU profile (gpu.memory.hbm_bandwidth=\"4.8 TB/s\"), "
                 "the model (model.layers=40) or the plan (plan.micro_batch=2), validated as in its YAML file; "
                 "a price or bandwidth takes its unit: gpu.price_per_gpu_hour=\"2.10 USD/h\"")
      ->type_name("FIELD=VALUE")
      ->allow_extra_args(false);
}

const spec::StackCalibrationSpec* PlanFlags::stack_calibration() const {
  if (calibration.empty()) return nullptr;
  if (no_calibration)
    throw UsageError{"--calibration", "cannot be combined with --no-calibration: the runs were fitted to "
                                      "predictions with the profile's calibration block as it is"};
  if (!stack_calibration_)
    stack_calibration_ = std::make_shared<const spec::StackCalibrationSpec>(spec::load_stack_calibration(calibration));
  return stack_calibration_.get();
}

std::optional<double> PlanFlags::price_per_gpu_hour() const {
  if (price.empty()) return std::nullopt;
  std::string t = price;
  if (t.front() == '$') t.erase(0, 1);
  char* end = nullptr;
  const double v = t.empty() ? 0 : std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(v) || !(v > 0))
    throw UsageError{"--price", fmt::format("expected a positive price in US dollars per GPU-hour such as 2.50, got "
                                            "\"{}\"", price)};
  return v;
}

void PlanFlags::calibrate(spec::HardwareSpec& hw) const {
  if (const auto* c = stack_calibration()) spec::attach_stacks(hw, *c);
  if (const auto usd = price_per_gpu_hour()) {
    hw.price_per_gpu_hour_usd = *usd;
    hw.sources["price_per_gpu_hour"] = "--price";
  }
}

bool PlanFlags::given(std::string_view key) const {
  const auto fields = spec::plan_fields();
  for (size_t i = 0; i < fields.size() && i < values.size(); ++i)
    if (fields[i].key == key && (values[i].has_value() || switches[i].has_value())) return true;
  if (key == "global_batch" && global_batch_tokens) return true;
  const auto aliases = spec::megatron_aliases();
  for (size_t i = 0; i < aliases.size() && i < megatron.size(); ++i)
    if (megatron[i] && aliases[i].key == key) return true;
  // What the last build() imported.
  for (const auto& s : imported.settings)
    if (const auto* f = spec::find_plan_field(s.key); f && f->key == key) return true;
  return false;
}

void PlanFlags::warn(const spec::PlanSpec& p, bool layout_fixed) const {
  if (warned_) return;
  warned_ = true;
  const bool adapter = p.finetune.mode == spec::FinetuneMode::kLora || p.finetune.mode == spec::FinetuneMode::kQlora;
  for (const char* key : {"finetune.rank", "finetune.targets"})
    if (!adapter && given(key))
      std::cerr << fmt::format("warning: --{}: no effect without --finetune lora or --finetune qlora (this plan "
                               "trains every weight: --finetune {})\n",
                               spec::find_plan_field(key)->flag, spec::to_string(p.finetune.mode));
  // ZeRO shards over the data-parallel group, DP x CP ranks
  // (techniques::data_parallel_groups).
  const auto& par = p.parallel;
  // With CPU offload ZeRO is what offloads (DeepSpeed's ZeRO-Offload runs on one GPU): no warning.
  if (layout_fixed && par.zero > 0 && static_cast<long long>(par.dp) * par.cp == 1 && !p.offload.any())
    std::cerr << fmt::format("warning: --zero: ZeRO-{} shards over the data-parallel ranks (DP x CP), and this plan "
                             "has one (--dp 1): it frees no memory\n",
                             par.zero);
}

std::optional<long long> parse_batch_tokens(std::string_view text, std::string& error) {
  std::string_view s = text;
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  if (s.ends_with("tokens")) s.remove_suffix(6);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  double scale = 1;
  if (!s.empty()) {
    switch (s.back()) {
      case 'K': case 'k': scale = 1024.0; break;
      case 'M': scale = 1024.0 * 1024; break;
      case 'G': scale = 1024.0 * 1024 * 1024; break;
      default: break;
    }
    if (scale > 1) s.remove_suffix(1);
  }
  std::string e;
  const std::string digits(s);
  char* end = nullptr;
  const double x = std::strtod(digits.c_str(), &end);
  const double tokens = x * scale;
  if (digits.empty() || end != digits.c_str() + digits.size() || !(tokens >= 1) || tokens > 1e15 ||
      tokens != std::floor(tokens)) {
    error = fmt::format("expected a token count such as 4M (4 x 2^20) or 4194304, got \"{}\"", text);
    return std::nullopt;
  }
  return static_cast<long long>(tokens);
}

namespace {

bool has_suffix_letter(std::string_view s) {
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return !s.empty() && (std::isalpha(static_cast<unsigned char>(s.back())) != 0);
}

}  // namespace

spec::PlanSpec PlanFlags::build(const spec::ModelSpec& model) const {
  spec::PlanSpec p = plan_file.empty() ? spec::PlanSpec{} : spec::load_plan(plan_file);
  if (plan_file.empty()) p.seq_len = std::min(8192, model.max_seq_len);
  const auto fields = spec::plan_fields();
  // Ridgeline's own flags. They are applied before the launch config too, so
  // what an import derives from the layout (VPP from layers / PP, DP from
  // the GPU count over TP x PP x CP) uses the layout the flags give.
  auto apply_flags = [&] {
    for (size_t i = 0; i < fields.size() && i < values.size(); ++i) {
      const auto& f = fields[i];
      if (switches[i]) {
        f.bool_ref(p) = *switches[i];
        if (f.key == "parallel.sp") p.sp_given = true;
      }
      if (!values[i]) continue;
      const std::string flag = "--" + std::string(f.flag);
      if (f.key == "global_batch" && has_suffix_letter(*values[i])) continue;  // tokens: below, once seq is known
      if (auto e = spec::set_field(f, p, *values[i]); !e.empty()) throw UsageError{flag, e};
    }
  };
  apply_flags();
  // The launch config, at most one.
  imported = spec::ImportReport{};
  const int sources = !from_megatron.empty() + !from_torchtitan.empty() + !from_deepspeed.empty();
  if (sources > 1)
    throw UsageError{"--from-megatron", "give one of --from-megatron, --from-torchtitan and --from-deepspeed"};
  if (!from_megatron.empty()) imported = spec::import_megatron(from_megatron);
  if (!from_torchtitan.empty()) imported = spec::import_torchtitan(from_torchtitan);
  if (!from_deepspeed.empty()) imported = spec::import_deepspeed(from_deepspeed);
  if (sources == 1) {
    std::vector<std::string> overridden;  // what Ridgeline's flags give
    for (size_t i = 0; i < fields.size() && i < values.size(); ++i)
      if (values[i] || switches[i]) overridden.emplace_back(fields[i].key);
    spec::apply_launch(imported.values, p, model, imported, overridden);
  }
  // Megatron-spelt flags: the same vocabulary as an args file.
  {
    const auto aliases = spec::megatron_aliases();
    spec::LaunchValues v;
    support::DiagnosticList d;
    bool any = false;
    for (size_t i = 0; i < aliases.size() && i < megatron.size(); ++i) {
      if (!megatron[i]) continue;
      any = true;
      spec::take_megatron_arg(v, aliases[i].name, *megatron[i], {}, d);
    }
    if (any) {
      spec::ImportReport flags_report;
      try {
        d.throw_if_errors();
        spec::apply_launch(v, p, model, flags_report);
      } catch (const support::SpecError& e) {
        const auto& first = e.diagnostics().front();
        throw UsageError{first.field, first.message};
      }
    }
  }
  apply_flags();  // over the launch config
  apply_plan_settings(p, sets);
  for (const auto& s : sets) {
    const std::string_view t = s;
    if (t.starts_with("plan.sp=") || t.starts_with("plan.parallel.sp=") || t.starts_with("parallel.sp=") ||
        t.starts_with("sp="))
      p.sp_given = true;
  }
  // A global batch in tokens: a whole number of sequences of the plan's length.
  std::optional<std::string> tokens_text = global_batch_tokens;
  std::string tokens_flag = "--global-batch-tokens";
  if (const auto* f = spec::find_plan_field("global_batch")) {
    const auto i = static_cast<size_t>(f - fields.data());
    if (i < values.size() && values[i] && has_suffix_letter(*values[i])) {
      if (tokens_text) throw UsageError{"--global-batch", "give the global batch once: in sequences or in tokens"};
      tokens_text = values[i];
      tokens_flag = "--global-batch";
    }
  }
  if (tokens_text) {
    std::string e;
    const auto tokens = parse_batch_tokens(*tokens_text, e);
    if (!tokens) throw UsageError{tokens_flag, e};
    const long long seq = p.seq_len > 0 ? p.seq_len : model.max_seq_len;
    if (*tokens % seq != 0)
      throw UsageError{tokens_flag, fmt::format("{} tokens = {} is not a whole number of {}-token sequences ({:.2f})",
                                                *tokens_text, *tokens, seq, static_cast<double>(*tokens) / seq)};
    if (*tokens / seq > (1LL << 30))
      throw UsageError{tokens_flag, fmt::format("{} tokens = {} sequences of {} is out of range (at most 2^30)",
                                                *tokens_text, *tokens / seq, seq)};
    p.global_batch = static_cast<int>(*tokens / seq);
  }
  spec::apply_framework_defaults(p);
  if (p.global_batch > 0 && p.micro_batch > p.global_batch)
    throw UsageError{"--micro-batch", fmt::format("micro-batch {} exceeds the global batch {}", p.micro_batch,
                                                  p.global_batch)};
  if (auto why = spec::packed_docs_problem(p.packed_doc_len, p.seq_len); !why.empty())
    throw UsageError{"--packed-doc-len", std::move(why)};
  return p;
}


std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:=,+-%@") ==
                        std::string::npos)
    return s;
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

std::string predict_command(const std::string& gpu, const std::string& model, const PlanFlags& flags,
                            const spec::PlanSpec& p) {
  static constexpr std::string_view kAlways[] = {"micro_batch",  "global_batch",  "seq_len",     "framework",
                                                 "precision",    "recompute",     "parallel.tp", "parallel.pp",
                                                 "parallel.dp",  "parallel.cp",   "parallel.ep", "parallel.sp",
                                                 "parallel.zero", "parallel.virtual_stages",
                                                 // resolved from the framework when not given: printed
                                                 // so the command is the same plan under any default
                                                 "main_grads", "cross_entropy"};
  std::string o = "ridgeline predict --gpu " + shell_quote(gpu) + " --model " + shell_quote(model);
  if (!flags.plan_file.empty()) o += " --plan " + shell_quote(flags.plan_file);
  for (const auto& f : spec::plan_fields()) {
    if (f.flag.empty()) continue;
    const bool always = std::find(std::begin(kAlways), std::end(kAlways), f.key) != std::end(kAlways);
    if (!always && spec::is_default(f, p)) continue;
    if (f.type == spec::FieldType::kBool) {
      spec::PlanSpec q = p;
      o += (f.bool_ref(q) ? " --" : " --no-") + std::string(f.flag);
      continue;
    }
    o += " --" + std::string(f.flag) + " " + shell_quote(spec::field_text(f, p));
  }
  if (flags.no_calibration) o += " --no-calibration";
  if (!flags.calibration.empty()) o += " --calibration " + shell_quote(flags.calibration);
  for (const auto& s : parse_settings(flags.sets))
    if (s.target != SetTarget::kPlan) o += " --set " + shell_quote(s.text);
  return o;
}

PlanFlags::Inputs PlanFlags::resolve(const std::string& gpu, const std::string& model) const {
  Inputs in{resolve_gpu(gpu, sets), {}, {}};
  calibrate(in.gpu);
  in.model = resolve_model(model, sets);
  in.plan = build(in.model);
  spec::apply_generation_defaults(in.plan, in.gpu.generation);
  return in;
}

}  // namespace ridgeline::cli
