#include <fmt/format.h>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "common.hpp"
#include "ridgeline/report/prediction_view.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::cli {

namespace {

struct PredictArgs {
  std::string gpu = "h100_sxm";
  std::string model = "llama3_8b";
  std::string format = "table";
  std::string output;
  int top = 12;
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
  cmd->callback([args, &rc] {
    rc = guarded([&] {
      const Format fmt_kind = parse_format(args->format);
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
      report::Inputs in{&gpu, &model, &plan};
      std::string text;
      switch (fmt_kind) {
        case Format::kJson: text = report::prediction_json(pred, in).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"; break;
        case Format::kCsv: text = report::prediction_csv(pred); break;
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

void register_list(CLI::App& app, int& rc) {
  auto what = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("list", "List the shipped GPU profiles or models");
  cmd->add_option("what", *what, "gpus | models")->required();
  cmd->callback([what, &rc] {
    rc = guarded([&] {
      if (*what != "gpus" && *what != "models")
        throw UsageError{"list", fmt::format("expected gpus or models, got \"{}\"", *what)};
      if (*what == "gpus") {
        for (const auto& n : list_names("hardware_profiles")) {
          auto hw = resolve_gpu(n);
          std::cout << fmt::format("{:<16} {:<28} {:>9}  {:>10}  bf16 {:>14}{}\n", n, hw.name,
                                   units::format_bytes(hw.memory_bytes), units::format_byte_rate(hw.hbm_bytes_per_s),
                                   units::format_flop_rate(hw.peak(spec::Peak::kBf16)),
                                   hw.calibration.present ? "  (calibrated)" : "");
        }
      } else {
        for (const auto& n : list_names("models")) {
          auto m = resolve_model(n);
          auto pc = spec::count_params(m);
          std::cout << fmt::format("{:<18} {:<22} {:>8} params  L={:<3} h={:<5} heads={}/{} vocab={}\n", n, m.name,
                                   units::format_count(pc.total), m.layers, m.hidden, m.heads, m.kv_heads, m.vocab);
        }
      }
      return kExitOk;
    });
  });
}

void register_check(CLI::App& app, int& rc) {
  auto files = std::make_shared<std::vector<std::string>>();
  auto* cmd = app.add_subcommand("check", "Validate hardware profile, model, plan or HF config files");
  cmd->add_option("files", *files, "Files to check (kind taken from the folder or content)")->required();
  cmd->callback([files, &rc] {
    rc = guarded([&] {
      int bad = 0;
      for (const auto& f : *files) {
        try {
          if (f.ends_with(".json")) spec::load_hf_config(f);
          else if (f.find("hardware_profiles") != std::string::npos) spec::load_hardware(f);
          else if (f.find("models") != std::string::npos) spec::load_model(f);
          else spec::load_plan(f);
          std::cout << f << ": ok\n";
        } catch (const support::SpecError& e) {
          for (const auto& d : e.diagnostics()) std::cerr << d.format() << "\n";
          ++bad;
        }
      }
      return bad ? kExitBadInput : kExitOk;
    });
  });
}

}  // namespace ridgeline::cli
