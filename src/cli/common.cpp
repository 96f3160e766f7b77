#include "common.hpp"

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include "ridgeline/units/units.hpp"

namespace ridgeline::cli {

namespace fs = std::filesystem;

std::string data_dir() {
  if (const char* d = std::getenv("RIDGELINE_DATA_DIR"); d && *d) return d;
  if (fs::exists("hardware_profiles") && fs::exists("models")) return ".";
  return RIDGELINE_SOURCE_DIR;
}

std::vector<std::string> list_names(const std::string& subdir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(data_dir()) / subdir, ec))
    if (e.path().extension() == ".yaml") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

std::string resolve_path(const std::string& name, const std::string& subdir, const std::string& flag,
                         const std::string& what) {
  if (name.find('/') != std::string::npos || name.ends_with(".yaml") || name.ends_with(".json") ||
      name.ends_with(".yml")) {
    if (!fs::exists(name)) throw support::SpecError({name, 0, 0}, "", "cannot read file: no such file");
    return name;
  }
  fs::path p = fs::path(data_dir()) / subdir / (name + ".yaml");
  if (fs::exists(p)) return p.string();
  auto names = list_names(subdir);
  std::vector<std::string> prefixed;
  for (const auto& n : names)
    if (n.rfind(name, 0) == 0) prefixed.push_back(n);
  std::string hint;
  if (prefixed.size() > 1) hint = fmt::format(" (did you mean one of {}?)", join(prefixed));
  else if (auto guess = support::closest_match(name, names); !guess.empty()) hint = fmt::format(" (did you mean '{}'?)", guess);
  throw UsageError{flag, fmt::format("unknown {} '{}'{}; known: {}", what, name, hint, join(names))};
}

template <class E>
void set_word(std::optional<E> (*parse)(std::string_view), const std::optional<std::string>& v, E& out,
              const char* flag, const std::string& choices) {
  if (!v) return;
  auto r = parse(*v);
  if (!r) throw UsageError{flag, fmt::format("expected one of {}, got \"{}\"", choices, *v)};
  out = *r;
}

}  // namespace

spec::HardwareSpec resolve_gpu(const std::string& name) {
  return spec::load_hardware(resolve_path(name, "hardware_profiles", "--gpu", "GPU"));
}

spec::ModelSpec resolve_model(const std::string& name) {
  const std::string path = resolve_path(name, "models", "--model", "model");
  if (path.ends_with(".json")) return spec::load_hf_config(path);
  return spec::load_model(path);
}

void PlanFlags::add_to(CLI::App& app, bool with_parallel) {
  app.add_option("--plan", plan_file, "Training plan YAML (flags override its fields)");
  app.add_option("--seq", seq, "Sequence length (default: 8192 capped at the model's maximum)");
  app.add_option("--micro-batch", micro_batch, "Micro-batch size per GPU (default 1)");
  app.add_option("--global-batch", global_batch, "Global batch in sequences (default: micro-batch x DP)");
  app.add_option("--precision", precision, "fp32 | tf32 | fp16 | bf16 | fp8 (default bf16)");
  app.add_option("--recompute", recompute, "none | selective | full | every:K | sqrt (default none)");
  app.add_option("--attention", attention, "naive | flash | flash2 | flash3 (default flash2)");
  app.add_option("--fusion", fusion, "eager | fused | compiled | xla (default fused)");
  app.add_option("--optimizer", optimizer, "sgd | adam | adamw | adafactor | came | sophia | lion | adam8bit");
  app.add_option("--finetune", finetune, "full | lora | qlora (default full)");
  app.add_option("--lora-rank", lora_rank, "LoRA rank r (default 8)");
  app.add_option("--lora-targets", lora_targets, "LoRA target matrices: q,k,v,o,gate,up,down or all (default q,v)");
  app.add_option("--attention-flops", attention_flops,
                 "causal (Megatron: causal attention halved, default) | full (older papers' convention)");
  app.add_option("--fp8-scaling", fp8_scaling, "delayed | current (fp8 per-tensor scaling)");
  app.add_option("--fp8-recipe", fp8_recipe, "hybrid (E4M3 forward, E5M2 gradients) | e4m3");
  app.add_option("--skipped-step-rate", skipped_step_rate, "fp16: fraction of steps skipped on overflow (0.001)");
  app.add_option("--hessian-interval", hessian_interval, "sophia: Hessian estimate every k steps (10)");
  app.add_option("--tokens", tokens, "Tokens to train on, e.g. 15T (default: 20 per parameter)");
  app.add_flag("--cuda-graphs,!--no-cuda-graphs", cuda_graphs, "Capture the step in CUDA graphs");
  app.add_flag("--no-calibration", no_calibration, "Ignore the profile's calibration block");
  if (with_parallel) {
    app.add_option("--tp", tp, "Tensor-parallel degree");
    app.add_option("--pp", pp, "Pipeline-parallel degree");
    app.add_option("--dp", dp, "Data-parallel degree");
    app.add_option("--cp", cp, "Context-parallel degree");
    app.add_option("--ep", ep, "Expert-parallel degree (MoE)");
    app.add_option("--zero", zero, "ZeRO stage 0-3");
    app.add_option("--vpp", vpp, "Virtual pipeline stages per GPU (interleaved 1F1B)");
    app.add_flag("--sp,!--no-sp", sp, "Sequence parallelism (with TP)");
    app.add_flag("--tp-comm-overlap", tp_overlap, "Overlap TP communication with GEMMs");
  }
}

void apply_setting(spec::PlanSpec& p, const std::string& key, const std::string& value, const std::string& flag) {
  if (auto err = spec::apply_setting(p, key, value); !err.empty()) throw UsageError{flag, err};
}

spec::PlanSpec PlanFlags::build(const spec::ModelSpec& model) const {
  spec::PlanSpec p = plan_file.empty() ? spec::PlanSpec{} : spec::load_plan(plan_file);
  if (plan_file.empty()) p.seq_len = std::min(8192, model.max_seq_len);
  auto positive = [](const std::optional<int>& v, const char* flag, int lo, int& out) {
    if (!v) return;
    if (*v < lo) throw UsageError{flag, fmt::format("expected a whole number >= {}, got {}", lo, *v)};
    out = *v;
  };
  positive(seq, "--seq", 1, p.seq_len);
  positive(micro_batch, "--micro-batch", 1, p.micro_batch);
  positive(global_batch, "--global-batch", 1, p.global_batch);
  positive(tp, "--tp", 1, p.parallel.tp);
  positive(pp, "--pp", 1, p.parallel.pp);
  positive(dp, "--dp", 1, p.parallel.dp);
  positive(cp, "--cp", 1, p.parallel.cp);
  positive(ep, "--ep", 1, p.parallel.ep);
  positive(vpp, "--vpp", 1, p.parallel.virtual_stages);
  positive(lora_rank, "--lora-rank", 1, p.finetune.rank);
  positive(hessian_interval, "--hessian-interval", 1, p.optimizer.hessian_interval);
  if (zero) {
    if (*zero < 0 || *zero > 3) throw UsageError{"--zero", fmt::format("expected 0, 1, 2 or 3, got {}", *zero)};
    p.parallel.zero = *zero;
  }
  set_word(spec::parse_precision, precision, p.precision, "--precision", spec::precision_choices());
  set_word(spec::parse_recompute, recompute, p.recompute, "--recompute", spec::recompute_choices());
  set_word(spec::parse_attention, attention, p.attention, "--attention", spec::attention_choices());
  set_word(spec::parse_fusion, fusion, p.fusion, "--fusion", spec::fusion_choices());
  set_word(spec::parse_optimizer, optimizer, p.optimizer.kind, "--optimizer", spec::optimizer_choices());
  set_word(spec::parse_finetune, finetune, p.finetune.mode, "--finetune", spec::finetune_choices());
  set_word(spec::parse_attention_flops, attention_flops, p.attention_flops, "--attention-flops", "causal, full");
  set_word(spec::parse_fp8_scaling, fp8_scaling, p.fp8_scaling, "--fp8-scaling", "delayed, current");
  set_word(spec::parse_fp8_recipe, fp8_recipe, p.fp8_recipe, "--fp8-recipe", "hybrid, e4m3");
  set_word(spec::parse_lora_targets, lora_targets, p.finetune.targets, "--lora-targets",
           "a comma list of q, k, v, o, gate, up, down, or all");
  if (skipped_step_rate) {
    if (!(*skipped_step_rate >= 0 && *skipped_step_rate <= 0.5))
      throw UsageError{"--skipped-step-rate", fmt::format("expected a fraction from 0 to 0.5, got {}", *skipped_step_rate)};
    p.skipped_step_rate = *skipped_step_rate;
  }
  if (tokens) {
    auto r = units::parse(*tokens, units::Dimension::kCount);
    if (!r.value || *r.value <= 0) throw UsageError{"--tokens", fmt::format("expected a token count such as \"15T\" or \"300B\", got \"{}\"", *tokens)};
    p.tokens = *r.value;
  }
  if (sp) p.parallel.sp = *sp;
  if (cuda_graphs) p.cuda_graphs = *cuda_graphs;
  if (tp_overlap) p.parallel.tp_comm_overlap = *tp_overlap;
  if (p.parallel.virtual_stages > 1) p.parallel.schedule = spec::PipelineSchedule::kInterleaved;
  if (p.global_batch > 0 && p.micro_batch > p.global_batch)
    throw UsageError{"--micro-batch", fmt::format("micro-batch {} exceeds the global batch {}", p.micro_batch,
                                                  p.global_batch)};
  return p;
}

void write_output(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    std::cout << text;
    std::cout.flush();
    return;
  }
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(dir)) throw UsageError{"--output", fmt::format("no such directory '{}'", dir.string())};
  const fs::path tmp = dir / fmt::format(".{}.tmp{}", target.filename().string(), static_cast<long>(getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw UsageError{"--output", fmt::format("cannot write to '{}'", path)};
    out << text;
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw UsageError{"--output", fmt::format("cannot write to '{}'", path)};
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw UsageError{"--output", fmt::format("cannot write to '{}'", path)};
  }
}

std::string problem_line(const engine::Problem& p) {
  static const std::pair<const char*, const char*> kFlags[] = {
      {"parallel.tp", "--tp"}, {"parallel.pp", "--pp"}, {"parallel.dp", "--dp"}, {"parallel.cp", "--cp"},
      {"parallel.ep", "--ep"}, {"parallel.virtual_stages", "--vpp"}, {"precision", "--precision"},
      {"global_batch", "--global-batch"}, {"micro_batch", "--micro-batch"}, {"seq_len", "--seq"},
      {"finetune.rank", "--lora-rank"}};
  for (const auto& [field, flag] : kFlags)
    if (p.field == field) return fmt::format("error: {} ({}): {}", p.field, flag, p.message);
  return fmt::format("error: {}: {}", p.field, p.message);
}

Format parse_format(const std::string& s) {
  if (s == "table") return Format::kTable;
  if (s == "json") return Format::kJson;
  if (s == "csv") return Format::kCsv;
  throw UsageError{"--format", fmt::format("expected one of table, json, csv, got \"{}\"", s)};
}

int guarded(const std::function<int()>& body) {
  try {
    return body();
  } catch (const support::SpecError& e) {
    for (const auto& d : e.diagnostics()) std::cerr << d.format() << "\n";
    return kExitBadInput;
  } catch (const UsageError& e) {
    std::cerr << "error: " << e.flag << ": " << e.message << "\n";
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory\n";
    return kExitInternal;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace ridgeline::cli
