#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include "commands.hpp"
#include "common.hpp"
#include "overrides.hpp"
#include "ridgeline/report/capacity_view.hpp"
#include "ridgeline/report/search_view.hpp"
#include "ridgeline/search/interval_ranking.hpp"
#include "ridgeline/search/search.hpp"
#include "ridgeline/spec/framework.hpp"
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
  std::string search;
  std::string headroom = "5%";
  int explain = 0;
  std::string deadline, budget;
  int max_gpus = 4096;
  std::string shard;
  std::vector<std::string> merge;
  int threads = 0;
  std::string format = "table";
  std::string output;
  double interval_level = uncertainty::kDefaultLevel;
  PlanFlags plan;
};

using search::Dim;

/// The plan field behind each searched dimension (by Dim), and a second one
/// for a dimension over two fields ("" for none): either, given, fixes it.
/// Block recomputation is a value of the recompute field (block:K), so
/// --recompute fixes it as well as the recompute dimension.
constexpr std::string_view kDimKey[search::kDimCount] = {
    "parallel.tp",   "parallel.pp", "parallel.dp", "parallel.cp", "parallel.ep", "micro_batch",
    "parallel.virtual_stages", "parallel.zero", "recompute", "precision", "framework", "parallel.tp_comm_overlap",
    "fp8.recipe", "offload.optimizer", "recompute", "parallel.first_stage_layers"};
constexpr std::string_view kDimAlsoKey[search::kDimCount] = {
    "", "", "", "", "", "", "", "", "", "", "", "", "", "offload.params", "", "parallel.last_stage_layers"};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep))
    if (!cur.empty()) out.push_back(cur);
  return out;
}

/// --fix key=value: read into the plan as the plan reads it; returns the dimension it pins.
Dim apply_fix(spec::PlanSpec& base, const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos) throw UsageError{"--fix", fmt::format("expected key=value such as tp=8, got \"{}\"", text)};
  const std::string key = text.substr(0, eq), value = text.substr(eq + 1);
  const spec::PlanField* f = spec::find_plan_field(key);
  int d = -1;
  for (int i = 0; f && i < search::kDimCount && d < 0; ++i)  // recompute: the recompute dimension first
    if (kDimKey[i] == f->key || kDimAlsoKey[i] == f->key) d = i;
  if (d < 0)
    throw UsageError{"--fix", fmt::format("unknown key '{}'; expected tp, pp, dp, cp, ep, micro_batch, vpp, zero, "
                                          "recompute, precision, framework, tp_comm_overlap, fp8_recipe, "
                                          "offload_optimizer, offload_params, first_stage_layers or "
                                          "last_stage_layers", key)};
  if (auto e = spec::set_field(*f, base, value); !e.empty()) throw UsageError{"--fix", fmt::format("{}: {}", key, e)};
  return static_cast<Dim>(d);
}

/// The number at the start of `t` into `v`; how many characters it took (0: none).
size_t number_prefix(const std::string& t, double& v) {
  size_t used = 0;
  try {
    v = std::stod(t, &used);
  } catch (...) {
    used = 0;
  }
  return used;
}

double parse_headroom(const std::string& t) {
  double v = -1;
  size_t used = number_prefix(t, v);
  const bool pct = used > 0 && used + 1 == t.size() && t.back() == '%';
  if (used == 0 || (!pct && used != t.size()) || !std::isfinite(v) || (!pct && v > 1))
    throw UsageError{"--headroom", fmt::format("expected a percentage such as 10%, got \"{}\"", t)};
  const double frac = pct ? v / 100 : v;
  if (!(frac >= 0 && frac < 0.9))
    throw UsageError{"--headroom", fmt::format("expected 0% to under 90%, got \"{}\"", t)};
  return frac;
}

/// "14d", "36h" -> seconds.
double parse_deadline(const std::string& t) {
  double v = 0;
  size_t used = number_prefix(t, v);
  const char unit = used > 0 && used + 1 == t.size() ? t.back() : 0;
  if ((unit != 'd' && unit != 'h') || !(v > 0) || !std::isfinite(v))
    throw UsageError{"--deadline", fmt::format("expected a duration such as 14d or 36h, got \"{}\"", t)};
  return v * (unit == 'd' ? 86400.0 : 3600.0);
}

/// "2M", "500K", "$1.5M", "250000" -> USD.
double parse_budget(std::string t) {
  if (!t.empty() && t.front() == '$') t.erase(0, 1);
  double v = 0;
  size_t used = number_prefix(t, v);
  double scale = 1;
  if (used > 0 && used + 1 == t.size() && (t.back() == 'K' || t.back() == 'k')) scale = 1e3;
  else if (used > 0 && used + 1 == t.size() && t.back() == 'M') scale = 1e6;
  else if (used != t.size()) used = 0;
  if (used == 0 || !(v > 0) || !std::isfinite(v))
    throw UsageError{"--budget", fmt::format("expected US dollars such as 2M or 500K, got \"{}\"", t)};
  return v * scale;
}

/// What the flags ask of one search on `hw`: the pins, the searched
/// dimensions and the header's lists.
struct Configured {
  search::SearchSpec spec;
  report::SearchQueryExtras extras;
};

Configured configure(const SearchArgs& a, const spec::PlanSpec& base, const std::set<int>& fixed_by_fix,
                     const spec::ModelSpec& m, const spec::HardwareSpec& hw, int gpus) {
  Configured c;
  search::SearchSpec& s = c.spec;
  s.gpus = gpus;
  s.top = a.top;
  s.threads = a.threads;
  s.global_batch = base.global_batch;
  s.headroom = parse_headroom(a.headroom);
  if (a.objective == "time") s.objective = search::Objective::kTime;
  else if (a.objective == "cost") s.objective = search::Objective::kCost;
  else if (a.objective == "mfu") s.objective = search::Objective::kMfu;
  else throw UsageError{"--objective", fmt::format("expected one of time, cost, mfu, got \"{}\"", a.objective)};
  // A bare list searches exactly those dimensions; +name and -name add to
  // and take from the defaults (the two forms do not mix).
  std::set<int> listed, plus, minus;
  for (const auto& word : split(a.search, ',')) {
    const char sign = !word.empty() && (word[0] == '+' || word[0] == '-') ? word[0] : '\0';
    const std::string w = sign ? word.substr(1) : word;
    const auto d = search::parse_dim(w);
    if (!d) throw UsageError{"--search", fmt::format("unknown dimension '{}'; expected {}", w, search::dim_choices())};
    (sign == '+' ? plus : sign == '-' ? minus : listed).insert(static_cast<int>(*d));
  }
  if (!listed.empty() && (!plus.empty() || !minus.empty()))
    throw UsageError{"--search", "either list exactly the dimensions to search (tp,pp,zero) or change the defaults "
                                 "(+precision,-zero), not both"};
  if (minus.count(static_cast<int>(Dim::kDp)))
    throw UsageError{"--search", "dp is what the GPU count leaves; give --dp to fix it"};
  if (!a.search.empty() && listed.empty() && plus.empty() && minus.empty())
    throw UsageError{"--search", fmt::format("expected a list such as tp,pp,zero; one of {}", search::dim_choices())};
  for (int i = 0; i < search::kDimCount; ++i) {
    const Dim d = static_cast<Dim>(i);
    // Offload and stages are each one dimension over two plan fields:
    // either flag fixes it. The recompute field fixes recompute_layers too.
    const bool given = a.plan.given(kDimKey[i]) || fixed_by_fix.count(i) ||
                       (!kDimAlsoKey[i].empty() && a.plan.given(kDimAlsoKey[i])) ||
                       (d == Dim::kRecomputeLayers && fixed_by_fix.count(static_cast<int>(Dim::kRecompute)));
    if (given && (listed.count(i) || plus.count(i))) {
      const bool by_fix = fixed_by_fix.count(i) ||
                          (d == Dim::kRecomputeLayers && fixed_by_fix.count(static_cast<int>(Dim::kRecompute)));
      const auto* f = spec::find_plan_field(
          !kDimAlsoKey[i].empty() && !a.plan.given(kDimKey[i]) ? kDimAlsoKey[i] : kDimKey[i]);
      throw UsageError{"--search", fmt::format("{} is fixed by {}; leave it out of --search or drop the flag",
                                               search::name(d), by_fix ? std::string("--fix") : "--" + std::string(f->flag))};
    }
    bool searched = false;
    if (!given) {
      const bool by_default = d != Dim::kPrecision && d != Dim::kFramework && d != Dim::kTpOverlap &&
                              d != Dim::kFp8Recipe && d != Dim::kOffload && d != Dim::kRecomputeLayers &&
                              d != Dim::kStages && (d != Dim::kEp || m.is_moe());
      if (d == Dim::kDp) searched = true;  // what the GPU count leaves, unless given
      else if (!listed.empty()) searched = listed.count(i) > 0;
      else searched = (by_default || plus.count(i)) && !minus.count(i);
    }
    if (d == Dim::kEp && !m.is_moe() && !given) searched = false;
    if (searched) {
      c.extras.searched.emplace_back(search::name(d));
      if (d == Dim::kPrecision) s.precision = search::searchable_precisions(hw, base);
      if (d == Dim::kFramework)
        for (size_t k = 0; k < spec::framework_count(); ++k) s.frameworks.push_back(static_cast<std::uint8_t>(k));
      if (d == Dim::kTpOverlap) s.tp_overlap = {false, true};
      if (d == Dim::kFp8Recipe) s.fp8_recipe = search::searchable_fp8_recipes(m, hw, base);
      if (d == Dim::kOffload) s.offload = search::searchable_offloads();
      if (d == Dim::kRecomputeLayers) s.block_quarters = search::searchable_block_quarters();
      if (d == Dim::kStages) s.stages = search::searchable_stage_trims();
      continue;
    }
    const auto& q = base.parallel;
    std::string value;
    switch (d) {
      case Dim::kTp: s.tp = q.tp; value = std::to_string(q.tp); break;
      case Dim::kPp: s.pp = q.pp; value = std::to_string(q.pp); break;
      case Dim::kDp: s.dp = q.dp; value = std::to_string(q.dp); break;
      case Dim::kCp: s.cp = q.cp; value = std::to_string(q.cp); break;
      case Dim::kEp: s.ep = q.ep; value = std::to_string(q.ep); break;
      case Dim::kMicroBatch: s.micro_batch = base.micro_batch; value = std::to_string(base.micro_batch); break;
      case Dim::kVpp: s.vpp = q.virtual_stages; value = std::to_string(q.virtual_stages); break;
      case Dim::kZero: s.zero = q.zero; value = std::to_string(q.zero); break;
      case Dim::kRecompute: s.recompute = {base.recompute}; value = spec::to_string(base.recompute); break;
      case Dim::kPrecision: s.precision = {base.precision}; value = spec::to_string(base.precision); break;
      case Dim::kFramework: s.frameworks = {base.framework}; value = spec::framework(base.framework).id; break;
      case Dim::kTpOverlap:
        s.tp_overlap = {q.tp_comm_overlap};
        value = q.tp_comm_overlap ? "on" : "off";
        break;
      case Dim::kFp8Recipe:
        s.fp8_recipe = {base.fp8_recipe};
        value = spec::to_string(base.fp8_recipe);
        break;
      case Dim::kOffload:
        s.offload = {base.offload};
        value = search::offload_text(base.offload);
        break;
      case Dim::kRecomputeLayers:
        continue;  // the plan's recompute (the recompute dimension says it)
      case Dim::kStages: {
        // The base plan's split, as given (run() reads it when s.stages is empty).
        search::Layout l;
        l.first_stage_layers = q.first_stage_layers;
        l.last_stage_layers = q.last_stage_layers;
        value = search::stages_text(l);
        break;
      }
    }
    if ((d == Dim::kTpOverlap || d == Dim::kFp8Recipe || d == Dim::kOffload || d == Dim::kStages) && !given)
      continue;  // the plan's setting, unless asked for
    if (d == Dim::kEp && !m.is_moe() && !given) continue;  // nothing to say for a dense model
    c.extras.fixed.emplace_back(search::name(d), value);
  }
  if (a.plan.given("parallel.sp")) {
    s.sp = base.parallel.sp ? 1 : 0;
    c.extras.fixed.emplace_back("sp", base.parallel.sp ? "on" : "off");
  }
  c.extras.sets = a.plan.sets;
  c.extras.sets_summary = settings_summary(a.plan.sets);
  c.extras.calibration = a.plan.stack_calibration();
  if (!a.shard.empty()) {
    int i = -1, n = -1;
    char slash = 0;
    std::istringstream is(a.shard);
    if (!(is >> i >> slash >> n) || slash != '/' || n < 1 || i < 0 || i >= n || !is.eof())
      throw UsageError{"--shard", fmt::format("expected i/N with 0 <= i < N, got \"{}\"", a.shard)};
    s.shard_index = i;
    s.shard_count = n;
  }
  if (auto pr = search::check_fixed(s, m, base); !pr.field.empty()) {
    for (int i = 0; i < search::kDimCount; ++i)
      if (fixed_by_fix.count(i) && pr.field == "--" + std::string(search::name(static_cast<Dim>(i))))
        pr.field = "--fix " + std::string(search::name(static_cast<Dim>(i)));
    throw UsageError{pr.field, pr.message};
  }
  // A fixed precision (or another technique) the GPU cannot run is an
  // impossible request, whatever the layout.
  spec::PlanSpec probe = base;
  probe.parallel = {};
  probe.micro_batch = 1;
  probe.global_batch = 0;
  if (auto pr = engine::check_plan(m, probe, hw);
      pr.field == "precision" || pr.field == "fp8.recipe" || pr.field == "attention" || pr.field == "finetune.rank" ||
      pr.field == "framework") {
    const auto* f = spec::find_plan_field(pr.field);
    throw UsageError{f && !f->flag.empty() ? "--" + std::string(f->flag) : pr.field, pr.message};
  }
  return c;
}

/// Runs one search and fills each row's predict command.
search::SearchResult run_one(const SearchArgs& a, const Configured& c, const spec::ModelSpec& m,
                             const spec::PlanSpec& base, const spec::HardwareSpec& hw, const std::string& gpu_name) {
  auto r = search::run(c.spec, m, base, hw, !a.plan.no_calibration);
  for (auto& cand : r.top)
    cand.predict_command = predict_command(gpu_name, a.model, a.plan, search::plan_for(base, cand.layout, c.spec.global_batch));
  return r;
}

/// GPU counts a --deadline or --budget search tries, ascending: 1, 2, 4, the
/// multiples of 8 to 512, of 64 to 4096, then powers of two, up to `max`.
std::vector<int> gpu_counts(int max) {
  std::vector<int> n;
  for (int g : {1, 2, 4}) n.push_back(g);
  for (int g = 8; g <= 512; g += 8) n.push_back(g);
  for (int g = 576; g <= 4096; g += 64) n.push_back(g);
  for (long long g = 8192; g <= (1LL << 20); g *= 2) n.push_back(static_cast<int>(g));
  n.erase(std::remove_if(n.begin(), n.end(), [max](int g) { return g > max; }), n.end());
  return n;
}

std::string dump(const nlohmann::json& j) { return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"; }

/// Exit status of a search that found nothing: 1 when something did not fit
/// in memory, 2 when no layout was even possible (an impossible request).
int nothing_status(const search::SearchResult& r) {
  return r.counts.state + r.counts.over_memory > 0 ? kExitInfeasible : kExitBadInput;
}

}  // namespace

void register_search(Commands& commands, int& rc) {
  auto a = std::make_shared<SearchArgs>();
  auto* cmd = commands.add(
      "search",
      "Search parallel layouts and techniques for the fastest (or cheapest) configuration; a plan flag given is "
      "fixed, a dimension is searched only when not given");
  if (!cmd) return;
  cmd->add_option("--gpu", a->gpu, "GPU profile name or YAML file; a comma list (h100_sxm,h200,b200) searches each "
                                   "and prints one best row per GPU")
      ->capture_default_str();
  cmd->add_option("--model", a->model, "Model name, YAML file or HF config.json")->capture_default_str();
  cmd->add_option("--gpus", a->gpus, "Number of GPUs")->capture_default_str();
  cmd->add_option("--objective", a->objective, "time | cost | mfu")->capture_default_str();
  cmd->add_option("--top", a->top, "Rows to show (exact ties are one row; each with its prediction interval, marked "
                                   "against the best)")
      ->capture_default_str();
  cmd->add_option("--search", a->search,
                  "Search exactly these dimensions (tp,pp,dp,cp,ep,mb,vpp,zero,recompute,precision,framework,"
                  "tp_overlap,fp8_recipe,offload,recompute_layers,stages); the rest take the plan's values (dp, "
                  "unless given, is what the GPU count leaves). +NAME and -NAME change the defaults instead: "
                  "--search +precision,+framework,-zero. Default: all but precision, framework, tp_overlap, "
                  "fp8_recipe, offload, recompute_layers and stages (ep for MoE models only). offload tries none, the "
                  "optimizer (ZeRO-Offload) and the optimizer with the parameters (ZeRO-Infinity) on the CPU; "
                  "recompute_layers has full recomputation also try block:K, K = 1/4, 1/2 and 3/4 of a stage's "
                  "layers (--recompute-method block); stages tries, with PP > 1, the last stage, both end stages and "
                  "the first stage lighter than an even share, each by the fewest layers that leave the other "
                  "stages an even share")
      ->type_name("LIST");
  cmd->add_option("--fix", a->fix, "Pin a dimension, as giving its flag does: tp=8, pp=4, dp=.., cp=.., ep=.., "
                                   "micro_batch=.., vpp=.., zero=.., recompute=.., precision=.., framework=.., "
                                   "tp_comm_overlap=true|false, fp8_recipe=.., offload_optimizer=.., offload_params=.., "
                                   "first_stage_layers=.., last_stage_layers=..");
  cmd->add_option("--headroom", a->headroom,
                  "Memory left free: a layout qualifies when its peak memory's upper end is at most capacity x (1 - "
                  "headroom)")
      ->capture_default_str();
  cmd->add_option("--explain", a->explain, "Print the `ridgeline predict` command line that reproduces row N");
  cmd->add_option("--deadline", a->deadline,
                  "Find the fewest GPUs (with --objective cost, the cheapest count) whose run of the plan's tokens "
                  "finishes within this time: 14d, 36h");
  cmd->add_option("--budget", a->budget, "Find the fastest GPU count whose run costs at most this many US dollars: "
                                         "2M, 500K");
  cmd->add_option("--max-gpus", a->max_gpus, "The largest GPU count --deadline and --budget try")->capture_default_str();
  cmd->add_option("--shard", a->shard,
                  "i/N: evaluate slice i of N (write JSON with every feasible step time, combine with --merge)");
  cmd->add_option("--merge", a->merge, "Combine shard JSON files instead of searching");
  cmd->add_option("--threads", a->threads, "Worker threads (default: all cores)");
  cmd->add_option("--format", a->format, "table | json | csv | markdown")->capture_default_str();
  cmd->add_option("--output,-o", a->output, "Write to FILE (atomically)");
  add_interval_level(*cmd, a->interval_level);
  a->plan.add_to(*cmd);
  cmd->callback([a, &rc] {
    rc = guarded([&] {
      const bool md = a->format == "markdown";
      const Format f = md ? Format::kTable : parse_format(a->format);
      check_interval_level(a->interval_level);
      if (a->top < 1) throw UsageError{"--top", "expected at least 1"};
      // A fine-tune without --tokens is priced per 1B tokens (engine::TokensBasis::kPerBillion).
      bool per_billion = false;
      const auto render = [&](const search::SearchResult& r, const nlohmann::json& q,
                              const search::SearchIntervals& iv) {
        if (f == Format::kJson) return dump(report::search_json(r, q, iv));
        if (f == Format::kCsv) return report::search_csv(r, q, iv);
        std::string text = md ? report::search_markdown(r, q, iv) : report::search_table(r, q, iv);
        if (per_billion)
          text += "days and cost: per 1B tokens for a fine-tune (it has no compute-optimal length; --tokens sets the "
                  "run)\n";
        if (a->explain > 0) {
          if (a->explain > static_cast<int>(r.top.size()))
            throw UsageError{"--explain", fmt::format("row {} does not exist; the search shows {} rows", a->explain,
                                                      r.top.size())};
          const auto& cmdline = r.top[a->explain - 1].predict_command;
          text += fmt::format("\nrow {} as a predict command:\n{}{}{}\n", a->explain, md ? "\n```\n" : "  ", cmdline,
                              md ? "\n```" : "");
        }
        return text;
      };
      if (a->explain < 0) throw UsageError{"--explain", "expected a row number from 1"};
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
        write_output(a->output, render(merged, first["query"], iv));
        return merged.top.empty() ? nothing_status(merged) : kExitOk;
      }
      const auto gpu_names = split(a->gpu, ',');
      if (gpu_names.empty()) throw UsageError{"--gpu", "expected a GPU profile name"};
      auto model = resolve_model(a->model, a->plan.sets);
      auto base = a->plan.build(model);
      per_billion = base.finetune.mode != spec::FinetuneMode::kFull && base.tokens <= 0;
      if (a->plan.print_plan) {
        write_output(a->output, spec::describe_plan(base, a->plan.imported));
        return kExitOk;
      }
      base.source_file.clear();
      std::set<int> fixed_by_fix;
      for (const auto& fx : a->fix) fixed_by_fix.insert(static_cast<int>(apply_fix(base, fx)));
      if (base.global_batch > 0 && base.micro_batch > base.global_batch)
        throw UsageError{"--fix", fmt::format("micro-batch {} exceeds the global batch {}", base.micro_batch,
                                              base.global_batch)};
      if (!a->deadline.empty() && !a->budget.empty())
        throw UsageError{"--deadline", "cannot be combined with --budget: ask for one"};
      const bool scan = !a->deadline.empty() || !a->budget.empty();
      if ((gpu_names.size() > 1 || scan) && (!a->shard.empty()))
        throw UsageError{"--shard", "cannot be combined with a GPU list, --deadline or --budget"};
      if (a->max_gpus < 1) throw UsageError{"--max-gpus", "expected at least 1"};

      if (gpu_names.size() > 1) {
        std::vector<report::GpuSearch> runs;
        bool any = false;
        for (const auto& name : gpu_names) {
          auto gpu = resolve_gpu(name, a->plan.sets);
          a->plan.calibrate(gpu);
          auto c = configure(*a, base, fixed_by_fix, model, gpu, a->gpus);
          c.spec.top = 1;
          auto r = run_one(*a, c, model, base, gpu, name);
          any = any || !r.top.empty();
          runs.push_back({report::search_query_json(c.spec, model, gpu, base, c.extras), std::move(r)});
        }
        const std::string text = f == Format::kJson  ? dump(report::gpu_json(runs))
                                 : f == Format::kCsv ? report::gpu_csv(runs)
                                                     : report::gpu_table(runs, md);
        write_output(a->output, text);
        return any ? kExitOk : kExitInfeasible;
      }

      auto gpu = resolve_gpu(gpu_names.front(), a->plan.sets);
      a->plan.calibrate(gpu);
      if (scan) {
        const bool deadline = !a->deadline.empty();
        const double limit_s = deadline ? parse_deadline(a->deadline) : 0;
        const double usd = deadline ? 0 : parse_budget(a->budget);
        if (!deadline && gpu.price_per_gpu_hour_usd <= 0)
          throw UsageError{"--budget", fmt::format("{} has no price per GPU-hour; set one with --set "
                                                   "gpu.price_per_gpu_hour=2.10",
                                                   gpu.name)};
        // The budget in GPU-hours, as the report's budget mode reads it.
        const double budget_hours = deadline ? 0 : report::budget_gpu_hours({report::BudgetKind::kUsd, usd}, gpu);
        int best_n = 0, tried = 0;
        search::SearchResult best;
        search::SearchSpec best_spec;
        report::SearchQueryExtras best_extras;
        double fastest_days = -1;
        int fastest_n = 0;
        for (int n : gpu_counts(a->max_gpus)) {
          Configured c;
          try {
            c = configure(*a, base, fixed_by_fix, model, gpu, n);
          } catch (const UsageError&) {
            continue;  // fixed values that do not divide this count
          }
          ++tried;
          auto r = run_one(*a, c, model, base, gpu, gpu_names.front());
          if (r.top.empty()) continue;
          const auto& t = r.top.front();
          if (!t.completes) continue;  // failures outpace recovery at this count: no finite days
          if (fastest_days < 0 || t.days < fastest_days) fastest_days = t.days, fastest_n = n;
          const bool ok = deadline ? t.days * 86400.0 <= limit_s : t.gpu_hours <= budget_hours;
          if (!ok) continue;
          const bool better = best_n == 0 ||
                              (deadline ? (a->objective == "cost" && t.cost_usd < best.top.front().cost_usd)
                                        : t.days < best.top.front().days);
          if (better) best_n = n, best = std::move(r), best_spec = c.spec, best_extras = c.extras;
          if (deadline && a->objective != "cost") break;  // ascending: the first is the fewest
        }
        if (tried == 0)
          throw UsageError{"--gpus", "the fixed values divide no GPU count up to --max-gpus"};
        std::string head;
        if (best_n == 0) {
          head = deadline ? fmt::format("no GPU count up to {} finishes the run within {}", a->max_gpus, a->deadline)
                          : fmt::format("no GPU count up to {} runs within the ${} budget", a->max_gpus,
                                        units::format_count(usd));
          if (fastest_n > 0)
            head += fmt::format(" (the fastest, {} GPUs, takes {:.1f} days)", fastest_n, fastest_days);
          std::cout << head << "\n";
          return kExitInfeasible;
        }
        const auto& t = best.top.front();
        head = deadline ? fmt::format("deadline {}: {} {} GPUs, {:.1f} days, {}", a->deadline,
                                      a->objective == "cost" ? "cheapest is" : "fewest is", best_n, t.days,
                                      report::cost_text(t.cost_usd, gpu.price_per_gpu_hour_usd > 0))
                        : fmt::format("budget ${}: fastest within it is {} GPUs, {:.1f} days, {}",
                                      units::format_count(usd), best_n, t.days, report::cost_text(t.cost_usd, true));
        const auto query = report::search_query_json(best_spec, model, gpu, base, best_extras);
        const auto iv = search::search_intervals(best, uncertainty::shipped(), a->interval_level);
        std::string text = render(best, query, iv);
        if (f == Format::kTable) text = head + "\n" + text;
        write_output(a->output, text);
        return kExitOk;
      }

      auto c = configure(*a, base, fixed_by_fix, model, gpu, a->gpus);
      auto result = run_one(*a, c, model, base, gpu, gpu_names.front());
      const auto query = report::search_query_json(c.spec, model, gpu, base, c.extras);
      const auto iv = search::search_intervals(result, uncertainty::shipped(), a->interval_level);
      const std::string text =
          !a->shard.empty() ? dump(report::search_json(result, query, iv, true)) : render(result, query, iv);
      write_output(a->output, text);
      return result.top.empty() ? nothing_status(result) : kExitOk;
    });
  });
}

}  // namespace ridgeline::cli
