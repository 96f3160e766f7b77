// report: a capacity-planning report (Markdown, self-contained HTML with SVG
// charts, JSON) for one question: a model on a GPU, with a plan, optionally a
// GPU count to search layouts for and a budget to size the model for.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <unistd.h>

#include "commands.hpp"
#include "common.hpp"
#include "overrides.hpp"
#include "ridgeline/advise/advise.hpp"
#include "ridgeline/report/advice_view.hpp"
#include "ridgeline/report/capacity_text.hpp"
#include "ridgeline/report/capacity_view.hpp"
#include "ridgeline/report/html.hpp"
#include "ridgeline/report/markdown.hpp"
#include "ridgeline/search/compare.hpp"
#include "ridgeline/search/search.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/uncertainty/interval.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::cli {

namespace fs = std::filesystem;

namespace {

/// Largest --gpus (the scaling chart searches twice as many).
constexpr int kMaxGpus = 1 << 20;

struct ReportArgs {
  std::string gpu;
  std::string model;
  std::string output;
  std::optional<int> gpus;
  std::optional<double> budget_gpu_hours, budget_usd;
  std::string objective = "time";
  int top = 8;
  double interval_level = uncertainty::kDefaultLevel;
  PlanFlags plan;
};

/// Where the three files go: folder and file-name stem.
struct Target {
  fs::path dir;
  std::string stem;
};

Target resolve_target(const std::string& output) {
  fs::path p(output);
  std::string stem = p.filename().string();
  for (const char* ext : {".md", ".html", ".json"})
    if (stem.size() > std::strlen(ext) && stem.ends_with(ext)) stem.resize(stem.size() - std::strlen(ext));
  if (stem.empty() || stem == "." || stem == "..")
    throw UsageError{"--output", fmt::format("expected a folder and a name such as reports/llama3_8b, got '{}'", output)};
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw UsageError{"--output", fmt::format("no such directory '{}'", dir.string())};
  if (!fs::is_directory(dir, ec)) throw UsageError{"--output", fmt::format("'{}' is not a directory", dir.string())};
  if (::access(dir.c_str(), W_OK) != 0)
    throw UsageError{"--output", fmt::format("directory '{}' is not writable", dir.string())};
  return {dir, stem};
}

/// Writes every file to a temporary name in the target folder, then renames
/// them into place. On any failure nothing stays behind: the temporaries are
/// removed, and so are the files already renamed.
void write_all(const Target& t, const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<fs::path> tmp, final_path;
  for (const auto& [ext, text] : files) {
    final_path.push_back(t.dir / (t.stem + ext));
    tmp.push_back(t.dir / fmt::format(".{}{}.tmp{}", t.stem, ext, static_cast<long>(::getpid())));
  }
  auto remove_all = [](const std::vector<fs::path>& ps, size_t from, size_t to) {
    std::error_code ec;
    for (size_t i = from; i < to; ++i) fs::remove(ps[i], ec);
  };
  for (size_t i = 0; i < files.size(); ++i) {
    FILE* f = std::fopen(tmp[i].c_str(), "wb");
    bool ok = f != nullptr;
    int err = ok ? 0 : errno;
    if (ok) {
      const auto& text = files[i].second;
      ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
      if (!ok) err = errno;
      if (std::fclose(f) != 0 && ok) ok = false, err = errno;
    }
    if (!ok) {
      remove_all(tmp, 0, i + 1);
      throw UsageError{"--output", fmt::format("cannot write to '{}': {}", final_path[i].string(), std::strerror(err))};
    }
  }
  for (size_t i = 0; i < files.size(); ++i) {
    std::error_code ec;
    fs::rename(tmp[i], final_path[i], ec);
    if (ec) {
      remove_all(tmp, i, files.size());
      remove_all(final_path, 0, i);
      throw UsageError{"--output", fmt::format("cannot write to '{}': {}", final_path[i].string(), ec.message())};
    }
  }
}

/// The command line as parsed, in canonical form, for the reader to rerun.
std::string command_line(const CLI::App& cmd) {
  std::string s = "ridgeline report";
  for (const CLI::Option* opt : cmd.get_options()) {
    if (opt->count() == 0 || opt->get_lnames().empty()) continue;
    const std::string name = opt->get_lnames().front();
    if (opt->get_expected_min() == 0) {  // a flag
      const auto& r = opt->results();
      const bool on = r.empty() || (r.back() != "false" && r.back() != "0");
      s += on ? " --" + name : " --no-" + name;
      continue;
    }
    for (const auto& value : opt->results()) s += " --" + name + " " + shell_quote(value);
  }
  return s;
}

/// The technique comparison of the report: recomputation (the policies the
/// plan's framework offers) x precision (fp8 where the GPU has it) x
/// attention kernel x fusion.
std::vector<search::Variation> technique_variations(const spec::HardwareSpec& hw, const spec::PlanSpec& plan) {
  std::vector<search::Variation> v;
  const spec::FrameworkSpec& fw = spec::framework(plan.framework);
  search::Variation rec{"recompute", {}};
  for (const auto* word : {"none", "selective", "full"}) {
    const spec::RecomputeKind k = spec::parse_recompute(word)->kind;
    if (fw.recompute_kinds.empty() ||
        std::find(fw.recompute_kinds.begin(), fw.recompute_kinds.end(), k) != fw.recompute_kinds.end())
      rec.values.push_back(word);
  }
  v.push_back(rec);
  if (hw.supports(spec::Peak::kFp8)) v.push_back({"precision", {"bf16", "fp8"}});
  else v.push_back({"precision", {"bf16"}});
  v.push_back({"attention", {"naive", "flash2"}});
  v.push_back({"fusion", {"eager", "fused", "compiled"}});
  return v;
}

/// Each technique combination's own layout search: the report's search with
/// the combination's recomputation and precision fixed and its attention and
/// fusion in the base plan (the rest of the layout as the report searched
/// it), then its best layout predicted. A combination that cannot be valid
/// (check_fixed, or an invalid plan) is not searched and says why.
std::vector<report::TechniqueSearch> search_techniques(const std::vector<search::CompareRow>& rows,
                                                       const search::SearchSpec& s, const spec::ModelSpec& model,
                                                       const spec::HardwareSpec& gpu, bool use_cal) {
  std::vector<report::TechniqueSearch> out;
  out.reserve(rows.size());
  engine::EvalOptions opt;
  opt.use_calibration = use_cal;
  for (const auto& r : rows) {
    report::TechniqueSearch t;
    search::SearchSpec st = s;
    st.top = 1;
    st.recompute = {r.plan.recompute};
    st.precision = {r.plan.precision};
    if (r.pred.status == engine::Status::kInvalid) {
      t.problem = r.pred.problem.message;
    } else if (auto pr = search::check_fixed(st, model, r.plan); !pr.field.empty()) {
      t.problem = pr.message;
    } else {
      t.searched = true;
      t.result = search::run(st, model, r.plan, gpu, use_cal);
      if (!t.result.top.empty()) {
        t.plan = search::plan_for(r.plan, t.result.top.front().layout, st.global_batch);
        t.pred = engine::evaluate(model, t.plan, gpu, opt);
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

/// GPU counts for the scaling chart: N/4, N/2, N, 2N (whole numbers only).
std::vector<int> scaling_counts(int n) {
  std::vector<int> out;
  if (n % 4 == 0) out.push_back(n / 4);
  if (n % 2 == 0) out.push_back(n / 2);
  out.push_back(n);
  out.push_back(2 * n);
  return out;
}

}  // namespace

void register_report(Commands& commands, int& rc) {
  auto a = std::make_shared<ReportArgs>();
  auto* cmd = commands.add(
      "report", "Write a capacity-planning report (NAME.md, NAME.html with charts, NAME.json) for one question");
  if (!cmd) return;
  cmd->add_option("--gpu", a->gpu, "GPU profile name (see 'ridgeline list gpus') or YAML file")->required();
  cmd->add_option("--model", a->model, "Model name (see 'ridgeline list models'), YAML file or HF config.json")
      ->required();
  cmd->add_option("--output,-o", a->output, "Folder and name of the report: reports/NAME writes NAME.md, NAME.html "
                                            "and NAME.json there (atomically)")
      ->required();
  cmd->add_option("--gpus", a->gpus, "Search the best layout for this many GPUs (needs --global-batch)");
  cmd->add_option("--budget-gpu-hours", a->budget_gpu_hours, "Train for this many GPU-hours; sizes the model (Chinchilla)");
  cmd->add_option("--budget-usd", a->budget_usd, "Train for this many US dollars; sizes the model (Chinchilla)");
  cmd->add_option("--objective", a->objective, "Layout search objective: time | cost | mfu")->capture_default_str();
  cmd->add_option("--top", a->top, "Layouts listed")->capture_default_str();
  add_interval_level(*cmd, a->interval_level);
  a->plan.add_to(*cmd);
  cmd->callback([a, cmd, &rc] {
    rc = guarded([&] {
      // Flags first: nothing is computed or written for a bad one.
      if (a->plan.given("tokens") && (a->budget_usd || a->budget_gpu_hours))
        throw UsageError{a->budget_usd ? "--budget-usd" : "--budget-gpu-hours",
                         "cannot be combined with --tokens: give the training run as tokens or as a budget, not both"};
      if (a->budget_usd && a->budget_gpu_hours)
        throw UsageError{"--budget-usd", "cannot be combined with --budget-gpu-hours: give one budget"};
      report::Budget budget;
      if (a->budget_usd) budget = {report::BudgetKind::kUsd, *a->budget_usd};
      if (a->budget_gpu_hours) budget = {report::BudgetKind::kGpuHours, *a->budget_gpu_hours};
      const char* budget_flag = budget.kind == report::BudgetKind::kUsd ? "--budget-usd" : "--budget-gpu-hours";
      if (budget.kind != report::BudgetKind::kNone && !(budget.value > 0 && std::isfinite(budget.value)))
        throw UsageError{budget_flag, fmt::format("expected a positive amount, got {}", budget.value)};
      if (a->gpus && *a->gpus < 1) throw UsageError{"--gpus", fmt::format("expected at least 1 GPU, got {}", *a->gpus)};
      if (a->gpus && *a->gpus > kMaxGpus)
        throw UsageError{"--gpus", fmt::format("expected at most {} GPUs, got {}", kMaxGpus, *a->gpus)};
      if (a->top < 1) throw UsageError{"--top", fmt::format("expected at least 1, got {}", a->top)};
      check_interval_level(a->interval_level);
      search::Objective objective = search::Objective::kTime;
      if (a->objective == "cost") objective = search::Objective::kCost;
      else if (a->objective == "mfu") objective = search::Objective::kMfu;
      else if (a->objective != "time")
        throw UsageError{"--objective", fmt::format("expected one of time, cost, mfu, got \"{}\"", a->objective)};
      const Target target = resolve_target(a->output);

      auto [gpu, model, base] = a->plan.resolve(a->gpu, a->model);
      if (a->plan.print_plan) {
        write_output("", spec::describe_plan(base, a->plan.imported));
        return kExitOk;
      }
      base.source_file.clear();
      if (budget.kind == report::BudgetKind::kUsd && gpu.price_per_gpu_hour_usd <= 0)
        throw UsageError{"--budget-usd", fmt::format("{} has no price per GPU-hour; give --budget-gpu-hours instead",
                                                     gpu.name)};
      const bool use_cal = !a->plan.no_calibration;

      report::CapacityInputs in;
      in.gpu = &gpu;
      in.model = &model;
      in.use_calibration = use_cal;
      in.stack_calibration = a->plan.stack_calibration();
      in.budget = budget;
      in.command = command_line(*cmd);
      in.interval_level = a->interval_level;
      in.settings = settings_summary(a->plan.sets);
      // With --gpus: search the layouts at N (and N/4, N/2, 2N for the scaling
      // chart) and predict the best one. The ranking is a total order, so the
      // answer is the same on any number of threads.
      search::SearchSpec s;
      if (a->gpus) {
        s.gpus = *a->gpus;
        s.global_batch = base.global_batch;
        s.objective = objective;
        s.top = a->top;
        const auto& f = a->plan;
        // A plan flag given is fixed; the rest is searched.
        const auto& q = base.parallel;
        if (f.given("parallel.tp")) s.tp = q.tp;
        if (f.given("parallel.pp")) s.pp = q.pp;
        if (f.given("parallel.dp")) s.dp = q.dp;
        if (f.given("parallel.cp")) s.cp = q.cp;
        if (f.given("parallel.virtual_stages")) s.vpp = q.virtual_stages;
        if (f.given("parallel.zero")) s.zero = q.zero;
        if (f.given("micro_batch")) s.micro_batch = base.micro_batch;
        if (f.given("recompute")) s.recompute = {base.recompute};
        if (f.given("precision")) s.precision = {base.precision};
        if (s.global_batch <= 0)
          throw UsageError{"--global-batch", "a report with --gpus needs the global batch in sequences, e.g. "
                                             "--global-batch 1024"};
        if (auto pr = search::check_fixed(s, model, base); !pr.field.empty()) throw UsageError{pr.field, pr.message};
        in.searched = true;
        in.search_spec = s;
        in.headroom_frac = s.headroom;  // layouts qualify with this much memory left free
      }
      engine::EvalOptions opt;
      opt.use_calibration = use_cal;
      opt.keep_kernels = true;
      auto answer = [&](const spec::PlanSpec& b) {
        spec::PlanSpec plan = b;
        if (!a->gpus) return plan;
        in.search = search::run(s, model, b, gpu, use_cal);
        in.scaling.clear();
        for (int n : scaling_counts(s.gpus)) {
          if (n == s.gpus) {
            in.scaling.push_back({n, in.search, std::nullopt});
            continue;
          }
          search::SearchSpec sn = s;
          sn.gpus = n;
          sn.dp = -1;
          if (!search::check_fixed(sn, model, b).field.empty()) continue;
          in.scaling.push_back({n, search::run(sn, model, b, gpu, use_cal), std::nullopt});
        }
        if (!in.search.top.empty()) {
          plan = search::plan_for(b, in.search.top.front().layout, s.global_batch);
        } else {  // nothing fits: report the plain data-parallel layout and why it does not fit
          const int rest = b.parallel.tp * b.parallel.pp * b.parallel.cp;
          if (s.gpus % rest == 0) plan.parallel.dp = s.gpus / rest;
        }
        return plan;
      };
      spec::PlanSpec plan = answer(base);
      auto pred = engine::evaluate(model, plan, gpu, opt);
      if (pred.status == engine::Status::kInvalid) {
        std::cerr << problem_line(pred.problem) << "\n";
        return kExitBadInput;
      }
      if (budget.kind != report::BudgetKind::kNone) {
        // The budget sets the tokens: what it buys at the predicted step time.
        // The searches run again so that their days and costs are for the same run.
        const double hours = report::budget_gpu_hours(budget, gpu);
        const double step_hours = pred.step.time_s * pred.step.gpus / 3600.0;
        if (hours < step_hours) {
          const std::string step = fmt::format("one training step ({:.3g} GPU-hours: {} on {} GPU{})", step_hours,
                                               units::format_seconds(pred.step.time_s), pred.step.gpus,
                                               pred.step.gpus == 1 ? "" : "s");
          throw UsageError{budget_flag,
                           budget.kind == report::BudgetKind::kUsd
                               ? fmt::format("${:g} buys {:.3g} GPU-hours at ${:.2f} per GPU-hour, less than {}",
                                             budget.value, hours, gpu.price_per_gpu_hour_usd, step)
                               : fmt::format("{:g} GPU-hours is less than {}", budget.value, step)};
        }
        base.tokens = report::tokens_for_gpu_hours(pred, hours);
        plan = answer(base);
        pred = engine::evaluate(model, plan, gpu, opt);
      }
      if (in.searched) {
        // Each candidate carries the traits its evaluation gave (search::Candidate::traits).
        for (const auto& c : in.search.top) in.top_traits.push_back(c.traits);
        for (auto& run : in.scaling)
          if (!run.result.top.empty()) run.best_traits = run.result.top.front().traits;
      }
      in.plan = plan;
      in.prediction = std::move(pred);
      in.vary = technique_variations(gpu, plan);
      std::string error;
      in.compare_rows = search::compare(model, plan, gpu, in.vary, use_cal, error);
      if (!error.empty()) throw UsageError{"--plan", "technique comparison: " + error};
      // With a layout search, each combination searches its own layout: a
      // technique that does not fit at the bf16 layout may fit at another.
      double technique_search_s = 0;
      if (in.searched) {
        const auto t0 = std::chrono::steady_clock::now();
        in.technique_searches = search_techniques(in.compare_rows, s, model, gpu, use_cal);
        technique_search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      }

      report::CapacityView view = report::make_capacity_view(in);
      {
        // What to change: the advisor on the answer's plan.
        advise::Options ao;
        ao.level = a->interval_level;
        ao.top = 5;
        ao.eval.use_calibration = use_cal;
        auto advice = std::make_shared<advise::Advice>(advise::advise(model, plan, gpu, ao));
        set_predict_commands(*advice, a->gpu, a->model, a->plan);
        if (advice->base.status != engine::Status::kInvalid) view.advice = std::move(advice);
      }
      const std::string md = report::capacity_markdown(view, target.stem);
      const std::string html = report::capacity_html(view, target.stem);
      // Names come from user files: bytes that are not UTF-8 are replaced, not fatal.
      nlohmann::json doc = report::capacity_json(view);
      if (view.advice) {
        report::Inputs ai{&gpu, &model, &plan, a->interval_level};
        ai.calibration = in.stack_calibration;
        doc["advice"] = report::advice_json(*view.advice, ai);
      }
      const std::string json = doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
      write_all(target, {{".md", md}, {".html", html}, {".json", json}});
      const fs::path stem_path = target.dir / target.stem;
      if (!in.settings.empty()) std::cout << in.settings << "\n";
      if (view.calibration.runs_given) std::cout << view.calibration.runs_line << "\n";
      std::cout << fmt::format("wrote {0}.md, {0}.html and {0}.json\n{1}\n", stem_path.string(),
                               report::text::headline(view));
      if (in.searched)
        std::cout << fmt::format("technique grid: {} combinations, each with its own layout search, in {:.2f} s\n",
                                 in.technique_searches.size(), technique_search_s);
      if (!view.answer.memory.fits) {
        std::cerr << fmt::format("does not fit: needs {} of {} per GPU; see the report's techniques{} for what does\n",
                                 units::format_bytes(view.answer.memory.total),
                                 units::format_bytes(view.answer.memory.capacity),
                                 view.layouts.present ? " and layouts" : "");
        return kExitInfeasible;
      }
      return kExitOk;
    });
  });
}

}  // namespace ridgeline::cli
