#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "commands.hpp"
#include "common.hpp"
#include "ridgeline/report/search_view.hpp"
#include "ridgeline/search/search.hpp"

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
  PlanFlags plan;
};

void apply_fix(search::SearchSpec& s, const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos) throw UsageError{"--fix", fmt::format("expected key=value such as tp=8, got \"{}\"", text)};
  const std::string key = text.substr(0, eq), value = text.substr(eq + 1);
  auto as_int = [&](int lo) {
    try {
      size_t used = 0;
      int v = std::stoi(value, &used);
      if (used != value.size() || v < lo) throw 1;
      return v;
    } catch (...) {
      throw UsageError{"--fix", fmt::format("{}: expected a whole number >= {}, got \"{}\"", key, lo, value)};
    }
  };
  if (key == "tp") s.tp = as_int(1);
  else if (key == "pp") s.pp = as_int(1);
  else if (key == "dp") s.dp = as_int(1);
  else if (key == "cp") s.cp = as_int(1);
  else if (key == "micro_batch") s.micro_batch = as_int(1);
  else if (key == "vpp") s.vpp = as_int(1);
  else if (key == "zero") {
    s.zero = as_int(0);
    if (s.zero > 3) throw UsageError{"--fix", fmt::format("zero: expected 0, 1, 2 or 3, got {}", s.zero)};
  } else if (key == "recompute") {
    auto r = spec::parse_recompute(value);
    if (!r) throw UsageError{"--fix", fmt::format("recompute: expected one of {}, got \"{}\"", spec::recompute_choices(), value)};
    s.recompute = {*r};
  } else if (key == "precision") {
    auto p = spec::parse_precision(value);
    if (!p) throw UsageError{"--fix", fmt::format("precision: expected one of {}, got \"{}\"", spec::precision_choices(), value)};
    s.precision = {*p};
  } else {
    throw UsageError{"--fix", fmt::format("unknown key '{}'; expected tp, pp, dp, cp, micro_batch, vpp, zero, recompute or precision", key)};
  }
}

}  // namespace

void register_search(CLI::App& app, int& rc) {
  auto a = std::make_shared<SearchArgs>();
  auto* cmd = app.add_subcommand("search", "Search parallel layouts and techniques for the fastest (or cheapest) configuration");
  cmd->add_option("--gpu", a->gpu, "GPU profile name or YAML file")->capture_default_str();
  cmd->add_option("--model", a->model, "Model name, YAML file or HF config.json")->capture_default_str();
  cmd->add_option("--gpus", a->gpus, "Number of GPUs")->capture_default_str();
  cmd->add_option("--objective", a->objective, "time | cost | mfu")->capture_default_str();
  cmd->add_option("--top", a->top, "Configurations to show")->capture_default_str();
  cmd->add_option("--fix", a->fix, "Pin a dimension: tp=8, pp=4, dp=.., cp=.., micro_batch=.., vpp=.., zero=.., recompute=.., precision=..");
  cmd->add_option("--shard", a->shard, "i/N: evaluate slice i of N (write JSON, combine with --merge)");
  cmd->add_option("--merge", a->merge, "Combine shard JSON files instead of searching");
  cmd->add_option("--threads", a->threads, "Worker threads (default: all cores)");
  cmd->add_option("--format", a->format, "table | json | csv")->capture_default_str();
  cmd->add_option("--output,-o", a->output, "Write to FILE (atomically)");
  a->plan.add_to(*cmd, false);
  cmd->callback([a, &rc] {
    rc = guarded([&] {
      const Format f = parse_format(a->format);
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
        const std::string text = f == Format::kJson ? report::search_json(merged, first["query"]).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"
                                 : f == Format::kCsv ? report::search_csv(merged)
                                                     : report::search_table(merged, first["query"]);
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
      std::string text;
      if (f == Format::kJson || !a->shard.empty()) text = report::search_json(result, query).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
      else if (f == Format::kCsv) text = report::search_csv(result);
      else text = report::search_table(result, query);
      write_output(a->output, text);
      return result.top.empty() ? kExitInfeasible : kExitOk;
    });
  });
}

}  // namespace ridgeline::cli
