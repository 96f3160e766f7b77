#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "common.hpp"
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
  double interval_level = uncertainty::kDefaultLevel;
  PlanFlags plan;
};

}  // namespace

void register_compare(CLI::App& app, int& rc) {
  auto a = std::make_shared<CompareArgs>();
  auto* cmd = app.add_subcommand("compare", "Weigh techniques side by side: one row per combination of --vary values");
  cmd->add_option("--gpu", a->gpu, "GPU profile name or YAML file")->capture_default_str();
  cmd->add_option("--model", a->model, "Model name, YAML file or HF config.json")->capture_default_str();
  cmd->add_option("--vary", a->vary,
                  "KEY=V1,V2,... (repeatable): framework, precision, recompute, attention, fusion, optimizer, finetune, "
                  "lora_rank, micro_batch, seq, tp, pp, dp, cp, zero, vpp, sp, cuda_graphs")
      ->required();
  cmd->add_option("--sort", a->sort,
                  "none | time | memory | mfu (the baseline row stays first; the best row is always the fastest that "
                  "fits)")
      ->capture_default_str();
  cmd->add_option("--format", a->format, "table | json | csv")->capture_default_str();
  cmd->add_option("--output,-o", a->output, "Write to FILE (atomically)");
  add_interval_level(*cmd, a->interval_level);
  a->plan.add_to(*cmd);
  cmd->callback([a, &rc] {
    rc = guarded([&] {
      const Format f = parse_format(a->format);
      check_interval_level(a->interval_level);
      search::SortKey sort = search::SortKey::kNone;
      if (a->sort == "time") sort = search::SortKey::kTime;
      else if (a->sort == "memory") sort = search::SortKey::kMemory;
      else if (a->sort == "mfu") sort = search::SortKey::kMfu;
      else if (a->sort != "none") throw UsageError{"--sort", fmt::format("expected one of none, time, memory, mfu, got \"{}\"", a->sort)};
      std::vector<search::Variation> vars;
      for (const auto& v : a->vary) {
        search::Variation var;
        if (auto e = search::parse_variation(v, var); !e.empty()) throw UsageError{"--vary", e};
        vars.push_back(std::move(var));
      }
      auto gpu = resolve_gpu(a->gpu);
      auto model = resolve_model(a->model);
      auto base = a->plan.build(model);
      std::string error;
      auto rows = search::compare(model, base, gpu, vars, !a->plan.no_calibration, error);
      if (!error.empty()) throw UsageError{"--vary", error};
      search::sort_rows(rows, sort);
      const auto iv = search::compare_intervals(rows, gpu, uncertainty::shipped(), a->interval_level);
      std::string text;
      if (f == Format::kJson) {
        text = report::compare_json(vars, rows, model, iv).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
      } else if (f == Format::kCsv) {
        text = report::compare_csv(vars, rows, iv);
      } else {
        text = fmt::format("{} on {}; base plan: {}; capacity {}\n\n", model.name, gpu.name,
                           spec::plan_summary(base), units::format_bytes(gpu.memory_bytes)) +
               report::compare_table(vars, rows, iv);
      }
      write_output(a->output, text);
      return kExitOk;
    });
  });
}

}  // namespace ridgeline::cli
