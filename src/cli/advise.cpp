#include <fmt/format.h>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "common.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/advise/advise.hpp"
#include "ridgeline/report/advice_view.hpp"
#include "ridgeline/report/capacity_text.hpp"

namespace ridgeline::cli {

namespace {

struct AdviseArgs {
  std::string gpu = "h100_sxm";
  std::string model = "llama3_8b";
  std::string format = "table";
  std::string output;
  int top = 10;
  bool wide = false;
  double interval_level = 0;
  PlanFlags plan;
};

}  // namespace

void set_predict_commands(advise::Advice& a, const std::string& gpu, const std::string& model, const PlanFlags& flags) {
  const auto command = [&](const spec::PlanSpec& p) { return predict_command(gpu, model, flags, p); };
  for (auto& s : a.speed) s.predict_command = command(s.outcome.plan);
  for (auto& s : a.memory_savers) s.predict_command = command(s.outcome.plan);
  if (a.combined.tried) a.combined.predict_command = command(a.combined.outcome.plan);
}

void register_advise(Commands& commands, int& rc) {
  auto args = std::make_shared<AdviseArgs>();
  auto* cmd = commands.add(
      "advise", "Where the step time goes against the ideal, and the changes that relieve it, each evaluated");
  if (!cmd) return;
  add_gpu_and_model(*cmd, args->gpu, args->model);
  args->plan.add_to(*cmd);
  add_format_and_output(*cmd, args->format, args->output, {Format::kTable, Format::kJson, Format::kMarkdown});
  cmd->add_option("--top", args->top, "Suggestions shown per list")->capture_default_str()->check(CLI::Range(1, 1000));
  cmd->add_flag("--wide", args->wide, "Show every column and leave long lines whole (by default the table keeps "
                                  "to 120 columns)");
  add_interval_level(*cmd, args->interval_level);
  cmd->footer(
      "Every change is a plan the engine evaluates at the same GPU count and global batch: TP, PP and CP x2 and /2 "
      "(DP takes the rest), interleaved stages, micro-batch x2 and /2, SP, TP overlap, ZeRO stages, fusion "
      "(compiled = torch.compile), CUDA graphs, attention kernels, fp8 recipes, recomputation, optimizers, optimizer CPU offload, "
      "LoRA/QLoRA. Each suggestion's `predict` command reproduces its numbers. A plan imported with "
      "--from-torchtitan, --from-megatron or --from-deepspeed gets only the changes its framework offers, each as "
      "the edit to that file (TOML keys, Megatron-LM arguments, DeepSpeed JSON keys).");
  cmd->callback([args, &rc] {
    rc = guarded([&] {
      const Format f = parse_format(args->format, {Format::kTable, Format::kJson, Format::kMarkdown});
      check_interval_level(args->interval_level);
      auto [gpu, model, plan] = args->plan.resolve(args->gpu, args->model);
      advise::Options opt;
      opt.top = args->top;
      opt.level = args->interval_level;
      opt.eval.use_calibration = !args->plan.no_calibration;
      opt.imported = &args->plan.imported;
      auto a = advise::advise(model, plan, gpu, opt);
      set_predict_commands(a, args->gpu, args->model, args->plan);
      report::Inputs in{&gpu, &model, &plan, opt.level};
      in.calibration = args->plan.stack_calibration();
      if (a.base.status == engine::Status::kInvalid) {
        if (f == Format::kJson && (args->output.empty() || args->output == "-"))
          write_output("", report::advice_json(a, in).dump(2) + "\n");
        std::cerr << problem_line(a.prediction.problem) << "\n";
        return kExitBadInput;
      }
      args->plan.warn(plan, true);
      std::string text;
      if (f == Format::kJson)
        text = report::advice_json(a, in).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
      else if (f == Format::kMarkdown)
        text = report::advice_markdown(a, in);
      else
        text = args->wide ? report::advice_table(a, in) : report::text::fit_width(report::advice_table(a, in, false));
      write_output(args->output, text);
      return kExitOk;
    });
  });
}

}  // namespace ridgeline::cli
