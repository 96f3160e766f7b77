#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <utility>

#include "commands.hpp"
#include "common.hpp"
#include "ridgeline/report/prediction_view.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/measurements.hpp"
#include "ridgeline/spec/published.hpp"
#include "ridgeline/spec/yaml_reader.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::cli {

namespace {

struct PredictArgs {
  std::string gpu = "h100_sxm";
  std::string model = "llama3_8b";
  std::string format = "table";
  std::string output;
  int top = 12;
  double interval_level = 0;
  PlanFlags plan;
};

/// Names what does not fit and the levers that would make it fit.
std::string does_not_fit_hint(const engine::Prediction& p) {
  const auto& m = p.memory;
  return fmt::format(
      "does not fit: needs {} of {} (model state {}, activations {}); try --zero 3 with --dp N, --tp N, "
      "--recompute selective|full, --optimizer adafactor|adam8bit, --finetune lora, or a smaller --micro-batch",
      units::format_bytes(m.total), units::format_bytes(m.capacity),
      units::format_bytes(m.weights + m.gradients + m.master_weights + m.optimizer),
      units::format_bytes(m.activations));
}

}  // namespace

void register_predict(CLI::App& app, int& rc) {
  auto args = std::make_shared<PredictArgs>();
  auto* cmd = app.add_subcommand("predict", "Predict step time, memory, MFU and HFU of one configuration");
  cmd->add_option("--gpu", args->gpu, "GPU profile name (see 'ridgeline list gpus') or YAML file")
      ->capture_default_str();
  cmd->add_option("--model", args->model, "Model name (see 'ridgeline list models'), YAML file or HF config.json")
      ->capture_default_str();
  args->plan.add_to(*cmd);
  cmd->add_option("--format", args->format, "table | json | csv")->capture_default_str();
  cmd->add_option("--output,-o", args->output, "Write to FILE instead of standard output (atomically)");
  cmd->add_option("--top", args->top, "Kernels shown in the table")->capture_default_str();
  add_interval_level(*cmd, args->interval_level);
  cmd->callback([args, &rc] {
    rc = guarded([&] {
      const Format fmt_kind = parse_format(args->format);
      check_interval_level(args->interval_level);
      auto gpu = resolve_gpu(args->gpu);
      auto model = resolve_model(args->model);
      auto plan = args->plan.build(model);
      engine::EvalOptions opt;
      opt.use_calibration = !args->plan.no_calibration;
      auto pred = engine::evaluate(model, plan, gpu, opt);
      if (pred.status == engine::Status::kInvalid) {
        std::cerr << problem_line(pred.problem) << "\n";
        return kExitBadInput;
      }
      report::Inputs in{&gpu, &model, &plan, args->interval_level};
      std::string text;
      switch (fmt_kind) {
        case Format::kJson: text = report::prediction_json(pred, in).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"; break;
        case Format::kCsv: text = report::prediction_csv(pred, in); break;
        case Format::kTable: text = report::prediction_table(pred, in, args->top); break;
      }
      write_output(args->output, text);
      if (pred.status == engine::Status::kDoesNotFit) {
        std::cerr << does_not_fit_hint(pred) << "\n";
        return kExitInfeasible;
      }
      return kExitOk;
    });
  });
}

}  // namespace ridgeline::cli
