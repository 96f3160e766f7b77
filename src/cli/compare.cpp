#include <algorithm>
#include <fmt/format.h>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "common.hpp"
#include "overrides.hpp"
#include "ridgeline/report/capacity_text.hpp"
#include "ridgeline/report/compare_view.hpp"
#include "ridgeline/report/prediction_view.hpp"
#include "ridgeline/search/compare.hpp"
#include "ridgeline/search/interval_ranking.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "ridgeline/uncertainty/interval.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::cli {

namespace {

struct CompareArgs {
  std::string gpu = "h100_sxm";
  std::string model = "llama3_8b";
  std::vector<std::string> vary;
  std::string sort = "none";
  std::string format = "table";
  std::string output;
  bool wide = false;
  double interval_level = uncertainty::kDefaultLevel;
  PlanFlags plan;
};

/// Resolves each row's GPU, model and base plan from the base flags and the
/// row's subject values (search::is_subject_key): "gpu" and "model" replace
/// --gpu and --model, "gpu.FIELD" and "model.FIELD" add "FIELD=VALUE" to the
/// --set values. Each distinct GPU and model is read once. A value that names
/// nothing, or does not validate, is "--vary: KEY=VALUE: message".
class SubjectCache {
 public:
  SubjectCache(const CompareArgs& a, const std::vector<search::Variation>& vars) : a_(a), vars_(vars) {}

  search::Subject operator()(const std::vector<std::string>& values) {
    std::string gpu = a_.gpu, model = a_.model, gpu_what, model_what;
    std::vector<std::string> gpu_sets = a_.plan.sets, model_sets = a_.plan.sets;
    for (size_t i = 0; i < vars_.size(); ++i) {
      const auto& k = vars_[i].key;
      const std::string kv = k + "=" + values[i];
      if (k == "gpu") gpu = values[i];
      else if (k == "model") model = values[i];
      else if (k.starts_with("gpu.")) gpu_sets.push_back(kv);
      else if (k.starts_with("model.")) model_sets.push_back(kv);
      else continue;
      std::string& what = k == "gpu" || k.starts_with("gpu.") ? gpu_what : model_what;
      what += (what.empty() ? "" : " ") + kv;
    }
    search::Subject s;
    s.gpu = cached(gpus_, gpu, gpu_sets, gpu_what, [this](const std::string& n, const std::vector<std::string>& sets) {
      auto hw = resolve_gpu(n, sets);
      a_.plan.calibrate(hw);
      return hw;
    });
    s.model = cached(models_, model, model_sets, model_what,
                     [](const std::string& n, const std::vector<std::string>& sets) { return resolve_model(n, sets); });
    auto& plan = plans_[s.model.get()];
    if (!plan) plan = std::make_shared<const spec::PlanSpec>(a_.plan.build(*s.model));
    s.plan = *plan;
    return s;
  }

 private:
  template <class T, class Load>
  std::shared_ptr<const T> cached(std::map<std::string, std::shared_ptr<const T>>& cache, const std::string& name,
                                  const std::vector<std::string>& sets, const std::string& what, Load load) {
    std::string key = name;
    for (const auto& s : sets) key += "\n" + s;
    auto& slot = cache[key];
    if (slot) return slot;
    try {
      slot = std::make_shared<const T>(load(name, sets));
    } catch (const UsageError& e) {
      if (what.empty()) throw;
      throw UsageError{"--vary", fmt::format("{}: {}", what, e.message)};
    }
    return slot;
  }

  const CompareArgs& a_;
  const std::vector<search::Variation>& vars_;
  std::map<std::string, std::shared_ptr<const spec::HardwareSpec>> gpus_;
  std::map<std::string, std::shared_ptr<const spec::ModelSpec>> models_;
  std::map<const spec::ModelSpec*, std::shared_ptr<const spec::PlanSpec>> plans_;
};

}  // namespace

void register_compare(Commands& commands, int& rc) {
  auto a = std::make_shared<CompareArgs>();
  auto* cmd = commands.add("compare", "Weigh techniques side by side: one row per combination of --vary values");
  if (!cmd) return;
  cmd->add_option("--gpu", a->gpu, "GPU profile name or YAML file")->capture_default_str();
  cmd->add_option("--model", a->model, "Model name, YAML file or HF config.json")->capture_default_str();
  cmd->add_option("--vary", a->vary,
                  "KEY=V1,V2,... (repeatable): gpu, model, framework, precision, recompute, attention, fusion, "
                  "optimizer, finetune, lora_rank, micro_batch, seq, tp, pp, dp, cp, zero, vpp, sp, cuda_graphs, or a "
                  "--set FIELD (gpu.memory.hbm_bandwidth=\"3.35 TB/s\",\"4.8 TB/s\"); a comma inside quotes does not "
                  "split. A combination the model or GPU cannot run is a row marked invalid, with its reason")
      ->required();
  cmd->add_option("--sort", a->sort,
                  "none | time | memory | mfu | cost (the baseline row stays first, invalid rows last; the best row "
                  "is the one that fits with the most tokens/s, or by the sort key: the least peak memory, the "
                  "highest MFU, the least cost per token)")
      ->capture_default_str();
  add_format_and_output(*cmd, a->format, a->output, {Format::kTable, Format::kJson, Format::kCsv, Format::kMarkdown},
                        {}, "Write to FILE (atomically)");
  cmd->add_flag("--wide", a->wide, "Show every column and leave long lines whole (by default the table keeps "
                                  "to 120 columns)");
  add_interval_level(*cmd, a->interval_level);
  a->plan.add_to(*cmd);
  cmd->callback([a, &rc] {
    rc = guarded([&] {
      const Format parsed = parse_format(a->format, {Format::kTable, Format::kJson, Format::kCsv, Format::kMarkdown});
      const bool markdown = parsed == Format::kMarkdown;
      const Format f = markdown ? Format::kTable : parsed;  // markdown: the table's rows, rendered as Markdown
      check_interval_level(a->interval_level);
      search::SortKey sort = search::SortKey::kNone;
      if (a->sort == "time") sort = search::SortKey::kTime;
      else if (a->sort == "memory") sort = search::SortKey::kMemory;
      else if (a->sort == "mfu") sort = search::SortKey::kMfu;
      else if (a->sort == "cost") sort = search::SortKey::kCost;
      else if (a->sort != "none")
        throw UsageError{"--sort", fmt::format("expected one of none, time, memory, mfu, cost, got \"{}\"", a->sort)};
      std::vector<search::Variation> vars;
      for (const auto& v : a->vary) {
        search::Variation var;
        if (auto e = search::parse_variation(v, var); !e.empty()) throw UsageError{"--vary", e};
        for (const auto& prev : vars)
          if (prev.key == var.key) throw UsageError{"--vary", fmt::format("{} is varied twice", var.key)};
        vars.push_back(std::move(var));
      }
      // The --set values and the base GPU and model first, so a problem with them is their own.
      const auto sets = parse_settings(a->plan.sets);
      const auto varied = [&](const char* key) {
        return std::any_of(vars.begin(), vars.end(), [&](const search::Variation& v) { return v.key == key; });
      };
      SubjectCache subjects(*a, vars);
      if (!varied("model")) resolve_model(a->model, a->plan.sets);
      if (!varied("gpu")) resolve_gpu(a->gpu, a->plan.sets);
      if (a->plan.print_plan) {
        const auto m = resolve_model(a->model, a->plan.sets);
        write_output(a->output, spec::describe_plan(a->plan.build(m), a->plan.imported));
        return kExitOk;
      }
      std::string error;
      auto rows = search::compare(vars, std::ref(subjects), !a->plan.no_calibration, error);
      if (!error.empty()) throw UsageError{"--vary", error};
      search::sort_rows(rows, sort);
      const auto iv =
          search::compare_intervals(rows, *rows.front().gpu, uncertainty::shipped(), a->interval_level, sort);
      std::string text;
      if (f == Format::kJson) {
        std::vector<std::string> set_texts;
        for (const auto& s : sets) set_texts.push_back(s.text);
        text = report::compare_json(vars, rows, iv, set_texts, a->plan.stack_calibration())
                   .dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
               "\n";
      } else if (f == Format::kCsv) {
        text = report::compare_csv(vars, rows, iv);
      } else {
        // The base plan as its rows run it: on one GPU, with that GPU's
        // defaults (the framework's attention kernel for its generation).
        // Across generations an unstated attention kernel is each GPU's.
        spec::PlanSpec base = a->plan.build(*rows.front().model);
        const bool one_generation = std::all_of(rows.begin(), rows.end(), [&](const search::CompareRow& r) {
          return r.gpu->generation == rows.front().gpu->generation;
        });
        if (one_generation) spec::apply_generation_defaults(base, rows.front().gpu->generation);
        std::string summary = spec::plan_summary(base);
        if (!one_generation && !base.attention_given) {
          const std::string said = spec::to_string(base.attention) + " attention";
          if (const size_t at = summary.find(said); at != std::string::npos)
            summary.replace(at, said.size(), "the framework's attention on each GPU");
        }
        const std::string header = report::compare_header(rows, summary,
                                                          settings_summary(a->plan.sets),
                                                          a->plan.stack_calibration());
        text = markdown ? report::compare_markdown(vars, rows, iv, header)
                        : header + "\n" + report::compare_table(vars, rows, iv, a->wide);
        if (!markdown && !a->wide) text = report::text::fit_width(text);
      }
      write_output(a->output, text);
      return kExitOk;
    });
  });
}

}  // namespace ridgeline::cli
