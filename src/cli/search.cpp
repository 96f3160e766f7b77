#include <algorithm>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "commands.hpp"
#include "common.hpp"
#include "ridgeline/report/search_view.hpp"
#include "ridgeline/search/interval_ranking.hpp"
#include "ridgeline/search/search.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "ridgeline/uncertainty/interval.hpp"

namespace ridgeline::cli {

namespace {

struct SearchArgs {
  std::string gpu = "h100_sxm";
  std::string model = "llama3_8b";
  int gpus = 8;
  std::string objective = "time";
  int top = 10;
  std::vector<std::string> fix;
  std::string shard;
  std::vector<std::string> merge;
  int threads = 0;
  std::string format = "table";
  std::string output;
  double interval_level = uncertainty::kDefaultLevel;
  PlanFlags plan;
};

/// The searched dimensions --fix can pin, by the plan field that holds each.
void apply_fix(search::SearchSpec& s, const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos) throw UsageError{"--fix", fmt::format("expected key=value such as tp=8, got \"{}\"", text)};
  const std::string key = text.substr(0, eq), value = text.substr(eq + 1);
  static constexpr std::string_view kSearched[] = {"parallel.tp", "parallel.pp", "parallel.dp", "parallel.cp",
                                                   "micro_batch", "parallel.virtual_stages", "parallel.zero",
                                                   "recompute", "precision"};
  const spec::PlanField* f = spec::find_plan_field(key);
  if (!f || std::find(std::begin(kSearched), std::end(kSearched), f->key) == std::end(kSearched))
    throw UsageError{"--fix", fmt::format("unknown key '{}'; expected tp, pp, dp, cp, micro_batch, vpp, zero, "
                                          "recompute or precision", key)};
  spec::PlanSpec p;  // the value read as the plan reads it, then pinned
  if (auto e = spec::set_field(*f, p, value); !e.empty()) throw UsageError{"--fix", fmt::format("{}: {}", key, e)};
  const auto& q = p.parallel;
  if (f->key == "parallel.tp") s.tp = q.tp;
  else if (f->key == "parallel.pp") s.pp = q.pp;
  else if (f->key == "parallel.dp") s.dp = q.dp;
  else if (f->key == "parallel.cp") s.cp = q.cp;
  else if (f->key == "micro_batch") s.micro_batch = p.micro_batch;
  else if (f->key == "parallel.virtual_stages") s.vpp = q.virtual_stages;
  else if (f->key == "parallel.zero") s.zero = q.zero;
  else if (f->key == "recompute") s.recompute = {p.recompute};
  else s.precision = {p.precision};
}

}  // namespace

void register_search(CLI::App& app, int& rc) {
  auto a = std::make_shared<SearchArgs>();
  auto* cmd = app.add_subcommand("search", "Search parallel layouts and techniques for the fastest (or cheapest) configuration");
  cmd->add_option("--gpu", a->gpu, "GPU profile name or YAML file")->capture_default_str();
  cmd->add_option("--model", a->model, "Model name, YAML file or HF config.json")->capture_default_str();
  cmd->add_option("--gpus", a->gpus, "Number of GPUs")->capture_default_str();
  cmd->add_option("--objective", a->objective, "time | cost | mfu")->capture_default_str();
  cmd->add_option("--top", a->top, "Configurations to show (each with its prediction interval, marked against the best)")
      ->capture_default_str();
  cmd->add_option("--fix", a->fix, "Pin a dimension: tp=8, pp=4, dp=.., cp=.., micro_batch=.., vpp=.., zero=.., recompute=.., precision=..");
  cmd->add_option("--shard", a->shard,
                  "i/N: evaluate slice i of N (write JSON with every feasible step time, combine with --merge)");
  cmd->add_option("--merge", a->merge, "Combine shard JSON files instead of searching");
  cmd->add_option("--threads", a->threads, "Worker threads (default: all cores)");
  cmd->add_option("--format", a->format, "table | json | csv")->capture_default_str();
  cmd->add_option("--output,-o", a->output, "Write to FILE (atomically)");
  add_interval_level(*cmd, a->interval_level);
  a->plan.add_to(*cmd, false);
  cmd->callback([a, &rc] {
    rc = guarded([&] {
      const Format f = parse_format(a->format);
      check_interval_level(a->interval_level);
      const auto dump = [](const nlohmann::json& j) {
        return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
      };
      if (a->top < 1) throw UsageError{"--top", "expected at least 1"};
      if (!a->merge.empty()) {
        std::vector<search::SearchResult> parts;
        nlohmann::json first;
        for (const auto& file : a->merge) {
          std::ifstream in(file);
          if (!in) throw support::SpecError({file, 0, 0}, "", "cannot read file");
          std::stringstream ss;
          ss << in.rdbuf();
          nlohmann::json j;
          try {
            j = nlohmann::json::parse(ss.str());
          } catch (const std::exception& e) {
            throw support::SpecError({file, 0, 0}, "", std::string("malformed JSON: ") + e.what());
          }
          std::string err;
          auto r = report::search_from_json(j, err);
          if (!err.empty()) throw support::SpecError({file, 0, 0}, "", err);
          if (first.is_null()) first = j;
          parts.push_back(std::move(r));
        }
        auto merged = search::merge(parts, a->top);
        const auto iv = search::search_intervals(merged, uncertainty::shipped(), a->interval_level);
        const std::string text = f == Format::kJson  ? dump(report::search_json(merged, first["query"], iv))
                                 : f == Format::kCsv ? report::search_csv(merged, iv)
                                                     : report::search_table(merged, first["query"], iv);
        write_output(a->output, text);
        return kExitOk;
      }
      search::SearchSpec s;
      s.gpus = a->gpus;
      s.top = a->top;
      s.threads = a->threads;
      if (a->objective == "time") s.objective = search::Objective::kTime;
      else if (a->objective == "cost") s.objective = search::Objective::kCost;
      else if (a->objective == "mfu") s.objective = search::Objective::kMfu;
      else throw UsageError{"--objective", fmt::format("expected one of time, cost, mfu, got \"{}\"", a->objective)};
      for (const auto& fx : a->fix) apply_fix(s, fx);
      if (!a->shard.empty()) {
        int i = -1, n = -1;
        char slash = 0;
        std::istringstream is(a->shard);
        if (!(is >> i >> slash >> n) || slash != '/' || n < 1 || i < 0 || i >= n || !is.eof())
          throw UsageError{"--shard", fmt::format("expected i/N with 0 <= i < N, got \"{}\"", a->shard)};
        s.shard_index = i;
        s.shard_count = n;
      }
      auto gpu = resolve_gpu(a->gpu);
      auto model = resolve_model(a->model);
      auto base = a->plan.build(model);
      base.source_file.clear();
      s.global_batch = base.global_batch;
      if (auto pr = search::check_fixed(s, model, base); !pr.field.empty()) throw UsageError{pr.field, pr.message};
      auto result = search::run(s, model, base, gpu, !a->plan.no_calibration);
      const auto query = report::search_query_json(s, model, gpu, base);
      const auto iv = search::search_intervals(result, uncertainty::shipped(), a->interval_level);
      std::string text;
      if (!a->shard.empty()) text = dump(report::search_json(result, query, iv, true));
      else if (f == Format::kJson) text = dump(report::search_json(result, query, iv));
      else if (f == Format::kCsv) text = report::search_csv(result, iv);
      else text = report::search_table(result, query, iv);
      write_output(a->output, text);
      return result.top.empty() ? kExitInfeasible : kExitOk;
    });
  });
}

}  // namespace ridgeline::cli
