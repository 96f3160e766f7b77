#include <fmt/format.h>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "common.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/report/capacity_text.hpp"
#include "ridgeline/report/markdown.hpp"
#include "ridgeline/report/prediction_view.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "ridgeline/spec/precision.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::cli {

namespace {

enum class PredictFormat { kTable, kJson, kCsv, kMarkdown };

struct PredictArgs {
  std::string gpu = "h100_sxm";
  std::string model = "llama3_8b";
  std::string format = "table";
  std::string output;
  std::string dataset_tokens;
  bool kernels = false;
  bool wide = false;
  int top = 12;
  double interval_level = 0;
  PlanFlags plan;
};

PredictFormat parse_predict_format(const std::string& s) {
  switch (parse_format(s, {Format::kTable, Format::kJson, Format::kCsv, Format::kMarkdown})) {
    case Format::kJson: return PredictFormat::kJson;
    case Format::kCsv: return PredictFormat::kCsv;
    case Format::kMarkdown: return PredictFormat::kMarkdown;
    default: return PredictFormat::kTable;
  }
}

/// Names what does not fit and the levers that would make it fit: only the
/// levers the plan has not pulled already (no --finetune lora to a LoRA run).
std::string does_not_fit_hint(const engine::Prediction& p, const spec::PlanSpec& plan, const spec::ModelSpec& model,
                              const spec::HardwareSpec& gpu) {
  const auto& m = p.memory;
  // CPU offload: the host memory may be what is short, with the GPU's fine.
  if (!m.host_fits && m.total <= m.capacity)
    return fmt::format(
        "does not fit: the offloaded model state needs {} of host memory per GPU, the host has {} (host.memory_per_gpu "
        "of the GPU profile); try more data-parallel GPUs (--dp N shards it){} or a host with more memory "
        "(--set gpu.host.memory_per_gpu=...)",
        units::format_bytes(m.host_bytes), units::format_bytes(m.host_capacity),
        p.step.offload.param_fetch_bytes > 0 ? ", --offload-params none" : "");
  std::vector<std::string> levers;
  if (plan.parallel.zero < 3) levers.emplace_back("--zero 3 with --dp N");
  levers.emplace_back("--tp N");
  if (plan.recompute.kind != spec::RecomputeKind::kFull)
    levers.emplace_back(plan.recompute.kind == spec::RecomputeKind::kNone ? "--recompute selective|full"
                                                                          : "--recompute full");
  // A memory saver the plan has not pulled, offered where the engine accepts
  // the plan with it (the framework runs it, the layout and optimizer allow it).
  const auto offer = [&](bool pulled, const char* flag, auto&& pull) {
    spec::PlanSpec q = plan;
    pull(q);
    if (!pulled && engine::check_plan_field(model, q, gpu).empty()) levers.emplace_back(flag);
  };
  offer(plan.fp8_activation_storage, "--fp8-activation-storage",
        [](spec::PlanSpec& q) { q.fp8_activation_storage = true; });
  // torchtune's: the layers' activations in host memory, the loss a chunk at a time.
  offer(plan.offload.activations_on_cpu(), "--offload-activations cpu",
        [](spec::PlanSpec& q) { q.offload.activations = spec::OffloadDevice::kCpu; });
  offer(spec::cross_entropy_of(plan) == spec::CrossEntropy::kChunked, "--cross-entropy chunked", [](spec::PlanSpec& q) {
    q.cross_entropy = spec::CrossEntropy::kChunked;
    q.cross_entropy_given = true;
  });
  switch (plan.finetune.mode) {
    case spec::FinetuneMode::kFull:
      // Adapters' optimizer state is small: a leaner optimizer helps only when every weight trains.
      if (plan.optimizer.kind == spec::OptimizerKind::kAdamW || plan.optimizer.kind == spec::OptimizerKind::kAdam)
        levers.emplace_back("--optimizer adafactor|adam8bit");
      // fp32 moments beside fp32 masters: bf16 ones halve them (DeepSeek-V3).
      if (const auto pol = spec::precision_policy(plan);
          pol.state_elem_bytes > 2 && pol.master_bytes > 0 && plan.optimizer.kind != spec::OptimizerKind::kAdam8bit)
        levers.emplace_back("--optimizer-state-dtype bf16");
      // torchtune's single-GPU full fine-tunes: gradients freed in backward, the state paged.
      offer(plan.optimizer.in_backward, "--optimizer-in-backward",
            [](spec::PlanSpec& q) { q.optimizer.in_backward = true; });
      offer(plan.optimizer.paged, "--paged-optimizer", [](spec::PlanSpec& q) { q.optimizer.paged = true; });
      levers.emplace_back("--finetune lora");
      break;
    case spec::FinetuneMode::kLora: levers.emplace_back("--finetune qlora"); break;
    case spec::FinetuneMode::kQlora: break;
  }
  levers.emplace_back("a smaller --micro-batch");
  std::string list;
  for (size_t i = 0; i < levers.size(); ++i)
    list += (i == 0 ? "" : i + 1 == levers.size() ? ", or " : ", ") + levers[i];
  return fmt::format("does not fit: needs {} of {} (model state {}, activations {}); try {}",
                     units::format_bytes(m.total), units::format_bytes(m.capacity),
                     units::format_bytes(m.weights + m.gradients + m.master_weights + m.optimizer),
                     units::format_bytes(m.activations), list);
}

/// `--micro-batch max`: replaces the flag's text by "1" (so PlanFlags::build
/// reads a plan) and says whether it was given.
bool take_micro_batch_max(PlanFlags& flags) {
  const auto fields = spec::plan_fields();
  for (size_t i = 0; i < fields.size() && i < flags.values.size(); ++i)
    if (fields[i].key == "micro_batch" && flags.values[i] && *flags.values[i] == "max") {
      flags.values[i] = "1";
      return true;
    }
  return false;
}

/// The largest micro-batch that is valid and fits, with the plan's other
/// fields as given. Peak memory grows with the micro-batch, so "fits" is
/// monotone in it. Without a global batch every micro-batch is a plan:
/// double until one fails, then bisect. With one, only micro-batches that
/// divide global batch / DP are plans: try them in increasing order until
/// one does not fit.
report::MicroBatchMax micro_batch_max(const spec::ModelSpec& m, spec::PlanSpec p, const spec::HardwareSpec& hw,
                                      const engine::EvalOptions& base) {
  engine::EvalOptions opt = base;
  opt.keep_kernels = false;
  report::MicroBatchMax r;
  r.capacity_bytes = hw.memory_bytes;
  // Whether micro-batch b runs and fits; what stops it otherwise.
  const auto fits = [&](int b, report::MicroBatchMax& why) {
    p.micro_batch = b;
    const auto pred = engine::evaluate(m, p, hw, opt);
    why.next = b;
    why.next_fits_not = pred.status == engine::Status::kDoesNotFit;
    why.next_peak_bytes = pred.memory.total;
    why.capacity_bytes = pred.memory.capacity;
    why.why = pred.status == engine::Status::kInvalid ? pred.problem.field + ": " + pred.problem.message : "";
    return pred.status == engine::Status::kOk;
  };
  report::MicroBatchMax fail;
  if (p.global_batch > 0) {
    const long long per_dp = p.global_batch / std::max(1, p.parallel.dp);
    for (long long b = 1; b <= per_dp; ++b) {
      if (per_dp % b != 0 || p.global_batch % (b * std::max(1, p.parallel.dp)) != 0) continue;
      report::MicroBatchMax w;
      if (fits(static_cast<int>(b), w)) {
        r.max = static_cast<int>(b);
        continue;
      }
      if (!w.next_fits_not) continue;  // invalid for another reason (a framework's divisibility): try the next
      fail = w;
      break;
    }
    if (fail.next == 0) {
      fail.why = fmt::format("the global batch {} allows no larger micro-batch with DP {}", p.global_batch,
                             p.parallel.dp);
    }
  } else {
    constexpr int kLimit = 1 << 26;
    int lo = 0, hi = 0;
    for (int b = 1; b <= kLimit; b *= 2) {
      report::MicroBatchMax w;
      if (!fits(b, w)) {
        hi = b;
        fail = w;
        break;
      }
      lo = b;
    }
    if (hi == 0) {
      fail = {};
      fail.why = fmt::format("stopped at {}", kLimit);
    }
    while (hi > 0 && hi - lo > 1) {
      const int mid = lo + (hi - lo) / 2;
      report::MicroBatchMax w;
      if (fits(mid, w)) lo = mid;
      else {
        hi = mid;
        fail = w;
      }
    }
    r.max = lo;
  }
  r.next = fail.next;
  r.next_fits_not = fail.next_fits_not;
  r.next_peak_bytes = fail.next_peak_bytes;
  if (fail.capacity_bytes > 0) r.capacity_bytes = fail.capacity_bytes;
  r.why = fail.why;
  return r;
}

}  // namespace

void register_predict(Commands& commands, int& rc) {
  auto args = std::make_shared<PredictArgs>();
  auto* cmd = commands.add("predict", "Predict step time, memory, MFU and HFU of one configuration");
  if (!cmd) return;
  add_gpu_and_model(*cmd, args->gpu, args->model);
  args->plan.add_to(*cmd);
  cmd->add_option("--dataset-tokens", args->dataset_tokens,
                  "Tokens in one epoch of the data set (\"2B\"): the run's totals are one epoch's (a fine-tune's "
                  "default is per 1B tokens; a pre-training's 20 tokens per parameter)")
      ->type_name("N");
  add_format_and_output(*cmd, args->format, args->output,
                        {Format::kTable, Format::kJson, Format::kCsv, Format::kMarkdown});
  cmd->add_flag("--kernels", args->kernels, "With --format csv: the kernel table (one row per kernel) instead of the "
                                            "summary row");
  cmd->add_option("--top", args->top, "Kernels shown in the table")->capture_default_str();
  cmd->add_flag("--wide", args->wide, "Show every column and leave long lines whole (by default the table keeps "
                                  "to 120 columns)");
  add_interval_level(*cmd, args->interval_level);
  cmd->footer("--micro-batch max: the largest micro-batch that fits (the other fields as given).");
  cmd->callback([args, &rc] {
    rc = guarded([&] {
      const PredictFormat fmt_kind = parse_predict_format(args->format);
      if (args->kernels && fmt_kind != PredictFormat::kCsv)
        throw UsageError{"--kernels", "the kernel table is CSV output: add --format csv (the table, the JSON and "
                                      "the Markdown list the kernels already)"};
      check_interval_level(args->interval_level);
      const bool mb_max = take_micro_batch_max(args->plan);
      double dataset_tokens = 0;
      if (!args->dataset_tokens.empty()) {
        const auto r = units::parse(args->dataset_tokens, units::Dimension::kCount);
        if (!r.value || *r.value < 1 || *r.value > 1e18)
          throw UsageError{"--dataset-tokens", fmt::format("expected a token count such as \"2B\" or \"500M\", got "
                                                           "\"{}\"", args->dataset_tokens)};
        dataset_tokens = *r.value;
      }
      auto [gpu, model, plan] = args->plan.resolve(args->gpu, args->model);
      if (args->plan.print_plan) {
        write_output(args->output, spec::describe_plan(plan, args->plan.imported));
        return kExitOk;
      }
      if (dataset_tokens > 0) {
        if (plan.tokens > 0)
          throw UsageError{"--dataset-tokens", "the plan's tokens (--tokens or tokens:) already set the run's length; "
                                               "give one of them"};
        plan.tokens = dataset_tokens;
      }
      engine::EvalOptions opt;
      opt.use_calibration = !args->plan.no_calibration;
      report::MicroBatchMax best;
      if (mb_max) {
        best = micro_batch_max(model, plan, gpu, opt);
        plan.micro_batch = std::max(1, best.max);
      }
      auto pred = engine::evaluate(model, plan, gpu, opt);
      if (dataset_tokens > 0) pred.totals.basis = engine::TokensBasis::kDataset;
      report::Inputs in{&gpu, &model, &plan, args->interval_level};
      if (mb_max) in.micro_batch_max = &best;
      in.calibration = args->plan.stack_calibration();
      if (pred.status == engine::Status::kInvalid) {
        // The JSON document says so too (status "invalid", problem); no output file for bad input.
        if (fmt_kind == PredictFormat::kJson && (args->output.empty() || args->output == "-"))
          write_output("", report::prediction_json(pred, in).dump(2) + "\n");
        std::cerr << problem_line(pred.problem) << "\n";
        return kExitBadInput;
      }
      args->plan.warn(plan, true);
      std::string text;
      switch (fmt_kind) {
        case PredictFormat::kJson:
          text = report::prediction_json(pred, in).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
          break;
        case PredictFormat::kCsv: text = args->kernels ? report::kernels_csv(pred, in) : report::prediction_csv(pred, in); break;
        case PredictFormat::kTable:
          text = report::prediction_table(pred, in, args->top, args->wide);
          if (!args->wide) text = report::text::fit_width(text);
          break;
        case PredictFormat::kMarkdown: text = report::prediction_markdown(pred, in, args->top); break;
      }
      write_output(args->output, text);
      if (pred.status == engine::Status::kDoesNotFit) {
        std::cerr << does_not_fit_hint(pred, plan, model, gpu) << "\n";
        return kExitInfeasible;
      }
      return kExitOk;
    });
  });
}

}  // namespace ridgeline::cli
