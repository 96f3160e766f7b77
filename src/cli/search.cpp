#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "commands.hpp"
#include "common.hpp"
#include "overrides.hpp"
#include "ridgeline/report/capacity_text.hpp"
#include "ridgeline/report/capacity_view.hpp"
#include "ridgeline/report/search_view.hpp"
#include "ridgeline/search/interval_ranking.hpp"
#include "ridgeline/search/search.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "ridgeline/support/text.hpp"
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
  bool wide = false;
  double interval_level = uncertainty::kDefaultLevel;
  PlanFlags plan;
};

using search::Dim;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep))
    if (!cur.empty()) out.push_back(cur);
  return out;
}

/// Whether setting plan field `key` fixes axis `a` (its key or its second key).
bool fixes(const search::Axis& a, std::string_view key) {
  return a.key == key || (!a.also_key.empty() && a.also_key == key);
}

/// --fix key=value: read into the plan as the plan reads it; returns the
/// plan field it sets (the key of a searchable axis).
std::string apply_fix(spec::PlanSpec& base, const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos) throw UsageError{"--fix", fmt::format("expected key=value such as tp=8, got \"{}\"", text)};
  const std::string key = text.substr(0, eq), value = text.substr(eq + 1);
  const spec::PlanField* f = spec::find_plan_field(key);
  const auto axes = search::axes();
  if (!f || std::none_of(axes.begin(), axes.end(), [&](const search::Axis& a) { return fixes(a, f->key); })) {
    // The axes' plan fields by their setting names, in --search's order.
    std::vector<std::string_view> names;
    for (int i = 0; i < search::kDimCount; ++i) {
      const search::Axis& a = search::axis(static_cast<Dim>(i));
      for (std::string_view k : {a.key, a.also_key}) {
        const spec::PlanField* g = k.empty() ? nullptr : spec::find_plan_field(k);
        const std::string_view n = !g ? std::string_view() : g->setting.empty() ? g->key : g->setting;
        if (!n.empty() && std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
      }
    }
    std::string list;
    for (size_t i = 0; i < names.size(); ++i)
      list += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + std::string(names[i]);
    throw UsageError{"--fix", fmt::format("unknown key '{}'; expected {}", key, list)};
  }
  if (auto e = spec::set_field(*f, base, value); !e.empty()) throw UsageError{"--fix", fmt::format("{}: {}", key, e)};
  return std::string(f->key);
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

Configured configure(const SearchArgs& a, const spec::PlanSpec& base, const std::set<std::string>& fixed_by_fix,
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
  // Each axis, in --search's order: searched, pinned by a flag or --fix, or
  // pinned to the plan's value (axis table: search::axes).
  for (int i = 0; i < search::kDimCount; ++i) {
    const Dim d = static_cast<Dim>(i);
    const search::Axis& x = search::axis(d);
    // An axis over two plan fields (offload, stages) is fixed by either;
    // one plan field fixes every axis over it (recompute: recompute_layers too).
    const bool by_flag = a.plan.given(x.key) || (!x.also_key.empty() && a.plan.given(x.also_key));
    const bool by_fix = fixed_by_fix.count(std::string(x.key)) ||
                        (!x.also_key.empty() && fixed_by_fix.count(std::string(x.also_key)));
    const bool given = by_flag || by_fix;
    if (given && (listed.count(i) || plus.count(i))) {
      const auto* f = spec::find_plan_field(!x.also_key.empty() && !a.plan.given(x.key) ? x.also_key : x.key);
      throw UsageError{"--search", fmt::format("{} is fixed by {}; leave it out of --search or drop the flag",
                                               x.name, by_fix ? std::string("--fix") : "--" + std::string(f->flag))};
    }
    const bool applies = !x.applies || x.applies(m);
    bool searched = false;
    if (!given && applies) {
      if (x.follows) searched = true;  // what the GPU count leaves, unless given
      else if (!listed.empty()) searched = listed.count(i) > 0;
      else searched = (x.by_default || plus.count(i)) && !minus.count(i);
    }
    if (searched) {
      c.extras.searched.emplace_back(x.name);
      if (x.search) x.search(s, m, hw, base);
      continue;
    }
    if (!x.pin) continue;  // pinned with the axis whose plan field it shares
    // Neither searched nor given: an axis the header leaves out keeps the
    // search's own default for it (the plan's setting).
    if (!x.shown_pinned && !given) continue;
    std::string value = x.pin(s, base);
    if (!applies && !given) continue;  // nothing to say (EP of a dense model)
    c.extras.fixed.emplace_back(x.name, std::move(value));
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
    for (const search::Axis& x : search::axes())
      if (fixed_by_fix.count(std::string(x.key)) && pr.field == "--" + std::string(x.name))
        pr.field = "--fix " + std::string(x.name);
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
                             const spec::PlanSpec& base, const spec::HardwareSpec& hw, const std::string& gpu_name,
                             search::Workspace* ws = nullptr) {
  auto r = search::run(c.spec, m, base, hw, !a.plan.no_calibration, ws);
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

/// What a --deadline or --budget search asks of one GPU kind.
struct Ask {
  bool deadline = false;
  double limit_s = 0;       // --deadline
  double usd = 0;           // --budget
  double budget_hours = 0;  // --budget in GPU-hours at the GPU's price
};

Ask parse_ask(const SearchArgs& a, const spec::HardwareSpec& gpu) {
  Ask k;
  k.deadline = !a.deadline.empty();
  k.limit_s = k.deadline ? parse_deadline(a.deadline) : 0;
  k.usd = k.deadline ? 0 : parse_budget(a.budget);
  if (!k.deadline && !gpu.has_price())
    throw UsageError{"--budget", fmt::format("{} has no price per GPU-hour; give one with --price 2.10", gpu.name)};
  // The budget in GPU-hours, as the report's budget mode reads it.
  k.budget_hours = k.deadline ? 0 : report::budget_gpu_hours({report::BudgetKind::kUsd, k.usd}, gpu);
  return k;
}

/// The fewest GPUs that could finish the run within `limit_s`: the run's
/// model FLOPs over limit_s x the GPU's highest dense peak (at fewer, the
/// MFU against that peak would exceed 100%, which no kernel's roofline
/// allows). 1 when the plan cannot be evaluated on one GPU.
int deadline_floor(const spec::ModelSpec& m, const spec::PlanSpec& base, const spec::HardwareSpec& hw,
                   double limit_s) {
  spec::PlanSpec one = base;
  one.parallel.tp = one.parallel.pp = one.parallel.dp = one.parallel.cp = one.parallel.ep = 1;
  one.parallel.virtual_stages = 1;
  one.parallel.first_stage_layers = one.parallel.last_stage_layers = 0;
  const auto pred = engine::evaluate(m, one, hw);
  double peak = 0;
  for (double x : hw.peak_flop_per_s) peak = std::max(peak, x);
  const auto& st = pred.step;
  if (pred.status == engine::Status::kInvalid || !(st.model_flops > 0) || !(st.tokens_per_step > 0) ||
      !(pred.totals.tokens > 0) || !(peak > 0))
    return 1;
  const double run_flops = st.model_flops / st.tokens_per_step * pred.totals.tokens;
  return static_cast<int>(std::min(1e9, std::floor(run_flops / (peak * limit_s))));
}

/// One GPU kind's --deadline or --budget scan over gpu_counts(--max-gpus).
struct Scan {
  int tried = 0;    // counts the fixed values divide
  int largest = 0;  // the largest of them
  int best_n = 0;   // the answer's count; 0: none meets the deadline or budget
  search::SearchResult best;
  Configured best_c;
  Configured last_c;  // the largest count's configuration
  double fastest_days = -1;
  int fastest_n = 0;
};

/// The deadline: the fewest GPUs that meet it (with --objective cost, the
/// cheapest); counts below deadline_floor are not tried. The budget: the
/// fastest count whose GPU-hours the budget buys. `top` rows for the answer.
Scan scan_counts(const SearchArgs& a, const Ask& ask, const spec::PlanSpec& base,
                 const std::set<std::string>& fixed_by_fix,
                 const spec::ModelSpec& m, const spec::HardwareSpec& gpu, const std::string& gpu_name, int top,
                 int threads = 0) {
  Scan s;
  search::Workspace ws;
  const int floor_n = ask.deadline ? deadline_floor(m, base, gpu, ask.limit_s) : 0;
  for (int n : gpu_counts(a.max_gpus)) {
    Configured c;
    try {
      c = configure(a, base, fixed_by_fix, m, gpu, n);
    } catch (const UsageError&) {
      continue;  // fixed values that do not divide this count
    }
    ++s.tried;
    s.largest = n;
    s.last_c = c;
    if (n < floor_n) continue;
    c.spec.top = top;
    if (threads > 0) c.spec.threads = threads;
    auto r = run_one(a, c, m, base, gpu, gpu_name, &ws);
    if (r.top.empty()) continue;
    const auto& t = r.top.front();
    if (!t.completes) continue;  // failures outpace recovery at this count: no finite days
    if (s.fastest_days < 0 || t.days < s.fastest_days) s.fastest_days = t.days, s.fastest_n = n;
    const bool ok = ask.deadline ? t.days * 86400.0 <= ask.limit_s : t.gpu_hours <= ask.budget_hours;
    if (!ok) continue;
    const bool better = s.best_n == 0 || (ask.deadline ? (a.objective == "cost" && t.cost_usd < s.best.top.front().cost_usd)
                                                       : t.days < s.best.top.front().days);
    if (better) s.best_n = n, s.best = std::move(r), s.best_c = c;
    if (ask.deadline && a.objective != "cost") break;  // ascending: the first is the fewest
  }
  return s;
}

/// "no GPU count up to 4096 finishes the run within 30d (the fastest, ...)".
std::string nothing_line(const SearchArgs& a, const Ask& ask, const Scan& s) {
  std::string o = ask.deadline ? fmt::format("no GPU count up to {} finishes the run within {}", a.max_gpus, a.deadline)
                               : fmt::format("no GPU count up to {} runs within the ${} budget", a.max_gpus,
                                             units::format_count(ask.usd));
  if (s.fastest_n > 0) o += fmt::format(" (the fastest, {} GPUs, takes {:.1f} days)", s.fastest_n, s.fastest_days);
  return o;
}

/// A note when --max-gpus bounds the answer: none found up to it, or the
/// answer is the largest count tried and a larger one might do better
/// (faster within a budget, cheaper within a deadline). "" otherwise.
std::string cap_note(const SearchArgs& a, const Ask& ask, const Scan& s) {
  if (a.max_gpus >= (1 << 20) || s.tried == 0) return "";
  if (s.best_n == 0) return fmt::format("--max-gpus {} bounds the search; a larger --max-gpus tries more GPUs", a.max_gpus);
  const bool bounded = s.best_n == s.largest && (!ask.deadline || a.objective == "cost");
  if (!bounded) return "";
  return fmt::format("the answer is at --max-gpus {} (the largest count tried); a larger --max-gpus may find a {} one",
                     a.max_gpus, ask.deadline ? "cheaper" : "faster");
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
                                   "and prints one best row per GPU; all: every GPU profile with a price (with "
                                   "--deadline or --budget: which GPU kind and count to rent)")
      ->capture_default_str();
  cmd->add_option("--model", a->model, "Model name, YAML file or HF config.json")->capture_default_str();
  cmd->add_option("--gpus", a->gpus, "Number of GPUs")->capture_default_str();
  cmd->add_option("--objective", a->objective, "time | cost | mfu")->capture_default_str();
  cmd->add_option("--top", a->top, "Rows to show (exact ties are one row; each with its prediction interval, marked "
                                   "against the best)")
      ->capture_default_str();
  // The dimensions and the defaults, from the axis table (search::axes).
  std::string all_dims, off_by_default;
  std::vector<std::string_view> off;
  for (int i = 0; i < search::kDimCount; ++i) {
    const search::Axis& x = search::axis(static_cast<Dim>(i));
    all_dims += (i ? "," : "") + std::string(x.name);
    if (!x.by_default && !x.follows) off.push_back(x.name);
  }
  off_by_default = support::join_and(off);
  cmd->add_option("--search", a->search,
                  "Search exactly these dimensions (" + all_dims + "); the rest take the plan's values (dp, "
                  "unless given, is what the GPU count leaves). +NAME and -NAME change the defaults instead: "
                  "--search +precision,+framework,-zero. Default: all but " + off_by_default +
                  " (ep for MoE models only). offload tries none, the "
                  "optimizer (ZeRO-Offload) and the optimizer with the parameters (ZeRO-Infinity) on the CPU; "
                  "recompute_layers has full recomputation also try block:K, K = 1/4, 1/2 and 3/4 of a stage's "
                  "layers (--recompute-method block); stages tries, with PP > 1, the last stage, both end stages and "
                  "the first stage lighter than an even share, each by the fewest layers that leave the other "
                  "stages an even share")
      ->type_name("LIST");
  cmd->add_option("--fix", a->fix, "Pin a dimension, as giving its flag does: tp=8, pp=4, dp=.., cp=.., ep=.., "
                                   "micro_batch=.., vpp=.., zero=.., recompute=.., precision=.., framework=.., "
                                   "tp_comm_overlap=true|false, fp8_recipe=.., offload_optimizer=.., offload_params=.., "
                                   "first_stage_layers=.., last_stage_layers=.., sp=true|false, moe_dispatcher=..");
  cmd->add_option("--headroom", a->headroom,
                  "Memory left free: a layout qualifies when its peak memory's upper end is at most capacity x (1 - "
                  "headroom); the default is the rule predict, compare and advise call \"fits\" (\"tight\": only "
                  "the point estimate fits)")
      ->capture_default_str();
  cmd->add_option("--explain", a->explain, "Print the `ridgeline predict` command line that reproduces row N");
  cmd->add_option("--deadline", a->deadline,
                  "Find the fewest GPUs (with --objective cost, the cheapest count) whose run of the plan's tokens "
                  "finishes within this time: 14d, 36h; with a GPU list or all, per GPU kind, and the fastest (the "
                  "cheapest) of them");
  cmd->add_option("--budget", a->budget, "Find the fastest GPU count whose run costs at most this many US dollars: "
                                         "2M, 500K; with a GPU list or all, per GPU kind, and the fastest of them");
  cmd->add_option("--max-gpus", a->max_gpus, "The largest GPU count --deadline and --budget try (a note says when it "
                                             "bounds the answer)")
      ->capture_default_str();
  cmd->add_flag("--wide", a->wide, "Show every column and leave long lines whole (by default the table keeps "
                                  "to 120 columns)");
  cmd->add_option("--shard", a->shard,
                  "i/N: evaluate slice i of N (write JSON with every feasible step time, combine with --merge)");
  cmd->add_option("--merge", a->merge, "Combine shard JSON files instead of searching");
  cmd->add_option("--threads", a->threads, "Worker threads (default: all cores)");
  add_format_and_output(*cmd, a->format, a->output, {Format::kTable, Format::kJson, Format::kCsv, Format::kMarkdown},
                        {}, "Write to FILE (atomically)");
  add_interval_level(*cmd, a->interval_level);
  a->plan.add_to(*cmd);
  cmd->callback([a, &rc] {
    rc = guarded([&] {
      const Format parsed = parse_format(a->format, {Format::kTable, Format::kJson, Format::kCsv, Format::kMarkdown});
      const bool md = parsed == Format::kMarkdown;
      const Format f = md ? Format::kTable : parsed;  // markdown: the table's rows, rendered as Markdown
      check_interval_level(a->interval_level);
      if (a->top < 1) throw UsageError{"--top", "expected at least 1"};
      const auto render = [&](const search::SearchResult& r, const nlohmann::json& q,
                              const search::SearchIntervals& iv) {
        if (f == Format::kJson) return dump(report::search_json(r, q, iv));
        if (f == Format::kCsv) return report::search_csv(r, q, iv);
        std::string text = md ? report::search_markdown(r, q, iv) : report::search_table(r, q, iv, a->wide);
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
        std::string text = render(merged, first["query"], iv);
        if (f == Format::kTable && !md && !a->wide) text = report::text::fit_width(text);
        write_output(a->output, text);
        return merged.top.empty() ? nothing_status(merged) : kExitOk;
      }
      auto gpu_names = split(a->gpu, ',');
      if (gpu_names.empty()) throw UsageError{"--gpu", "expected a GPU profile name"};
      // --gpu all: every GPU profile `list gpus` shows that has a price (with --price, every one).
      const bool all_gpus = gpu_names.size() == 1 && gpu_names.front() == "all";
      if (all_gpus) {
        gpu_names.clear();
        for (const auto& e : gpu_entries()) gpu_names.push_back(e.id);
      }
      auto model = resolve_model(a->model, a->plan.sets);
      auto base = a->plan.build(model);
      if (a->plan.print_plan) {
        write_output(a->output, spec::describe_plan(base, a->plan.imported));
        return kExitOk;
      }
      base.source_file.clear();
      std::set<std::string> fixed_by_fix;  // the plan fields --fix sets
      for (const auto& fx : a->fix) fixed_by_fix.insert(apply_fix(base, fx));
      if (base.global_batch > 0 && base.micro_batch > base.global_batch)
        throw UsageError{"--fix", fmt::format("micro-batch {} exceeds the global batch {}", base.micro_batch,
                                              base.global_batch)};
      if (!a->deadline.empty() && !a->budget.empty())
        throw UsageError{"--deadline", "cannot be combined with --budget: ask for one"};
      const bool scan = !a->deadline.empty() || !a->budget.empty();
      if ((gpu_names.size() > 1 || scan) && (!a->shard.empty()))
        throw UsageError{"--shard", "cannot be combined with a GPU list, --deadline or --budget"};
      if (a->max_gpus < 1) throw UsageError{"--max-gpus", "expected at least 1"};

      if (gpu_names.size() > 1 || all_gpus) {
        std::vector<report::GpuSearch> runs;
        std::vector<std::string> notes;
        bool any = false;
        std::vector<spec::HardwareSpec> gpus;
        std::vector<std::string> names;
        int unpriced = 0;
        for (const auto& name : gpu_names) {
          auto gpu = resolve_gpu(name, a->plan.sets);
          a->plan.calibrate(gpu);
          if (all_gpus && !gpu.has_price()) {
            ++unpriced;
            continue;
          }
          gpus.push_back(std::move(gpu));
          names.push_back(name);
        }
        if (!scan) {
          for (size_t i = 0; i < gpus.size(); ++i) {
            auto c = configure(*a, base, fixed_by_fix, model, gpus[i], a->gpus);
            c.spec.top = 1;
            auto r = run_one(*a, c, model, base, gpus[i], names[i]);
            any = any || !r.top.empty();
            runs.push_back({report::search_query_json(c.spec, model, gpus[i], base, c.extras), std::move(r), {}});
          }
        } else {
          std::vector<Ask> asks;
          for (const auto& gpu : gpus) asks.push_back(parse_ask(*a, gpu));
          // One GPU kind per worker, each search on its worker alone: a
          // search at one count is too small to share between threads.
          std::vector<Scan> scans(gpus.size());
          std::vector<std::exception_ptr> errors(gpus.size());
          std::atomic<size_t> next{0};
          const auto work = [&] {
            for (size_t i; (i = next.fetch_add(1)) < gpus.size();) {
              try {
                scans[i] = scan_counts(*a, asks[i], base, fixed_by_fix, model, gpus[i], names[i], 1, 1);
              } catch (...) {
                errors[i] = std::current_exception();
              }
            }
          };
          const int hw_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
          const size_t workers = std::min<size_t>(gpus.size(), static_cast<size_t>(a->threads > 0 ? a->threads
                                                                                                   : hw_threads));
          std::vector<std::thread> pool;
          for (size_t w = 1; w < workers; ++w) pool.emplace_back(work);
          work();
          for (auto& t : pool) t.join();
          for (const auto& e : errors)
            if (e) std::rethrow_exception(e);
          std::string none_at_cap;
          for (size_t i = 0; i < gpus.size(); ++i) {
            auto& s = scans[i];
            const auto& gpu = gpus[i];
            if (s.tried == 0) throw UsageError{"--gpus", "the fixed values divide no GPU count up to --max-gpus"};
            const auto note = cap_note(*a, asks[i], s);
            if (s.best_n == 0) {
              if (!note.empty()) none_at_cap += (none_at_cap.empty() ? "" : ", ") + gpu.id;
              runs.push_back({report::search_query_json(s.last_c.spec, model, gpu, base, s.last_c.extras),
                              search::SearchResult{},
                              s.fastest_n > 0 ? fmt::format("none; the fastest, {} GPUs, takes {:.1f} days",
                                                            s.fastest_n, s.fastest_days)
                                              : std::string("none completes")});
              continue;
            }
            if (!note.empty()) notes.push_back(gpu.id + ": " + note);
            any = true;
            runs.push_back({report::search_query_json(s.best_c.spec, model, gpu, base, s.best_c.extras),
                            std::move(s.best), {}});
          }
          if (!none_at_cap.empty())
            notes.push_back(fmt::format("no count up to --max-gpus {} {} on {}; a larger --max-gpus tries more GPUs",
                                        a->max_gpus, a->deadline.empty() ? "runs within the budget"
                                                                         : "meets the deadline",
                                        none_at_cap));
        }
        if (unpriced > 0)
          notes.push_back(fmt::format("{} GPU profile{} without a price left out (--price gives every profile one)",
                                      unpriced, unpriced == 1 ? "" : "s"));
        if (runs.empty())
          throw UsageError{"--gpu", "no GPU profile has a price per GPU-hour; give one with --price"};
        report::GpuScan scan_info;
        if (scan) {
          scan_info.kind = !a->deadline.empty() ? report::GpuScan::kDeadline : report::GpuScan::kBudget;
          scan_info.limit_text = !a->deadline.empty() ? a->deadline : "$" + units::format_count(parse_budget(a->budget));
          scan_info.by_cost = a->objective == "cost";
        }
        scan_info.notes = std::move(notes);
        const std::string text = f == Format::kJson  ? dump(report::gpu_json(runs, scan_info))
                                 : f == Format::kCsv ? report::gpu_csv(runs)
                                                     : report::gpu_table(runs, md, scan_info, a->wide);
        write_output(a->output, f == Format::kTable && !md && !a->wide ? report::text::fit_width(text) : text);
        return any ? kExitOk : kExitInfeasible;
      }

      auto gpu = resolve_gpu(gpu_names.front(), a->plan.sets);
      a->plan.calibrate(gpu);
      if (scan) {
        const Ask ask = parse_ask(*a, gpu);
        Scan s = scan_counts(*a, ask, base, fixed_by_fix, model, gpu, gpu_names.front(), a->top);
        if (s.tried == 0) throw UsageError{"--gpus", "the fixed values divide no GPU count up to --max-gpus"};
        if (s.best_n == 0) {
          std::cout << nothing_line(*a, ask, s) << "\n";
          if (const auto note = cap_note(*a, ask, s); !note.empty()) std::cout << "note: " << note << "\n";
          return kExitInfeasible;
        }
        const auto& t = s.best.top.front();
        std::string head =
            ask.deadline ? fmt::format("deadline {}: {} {} GPUs, {:.1f} days, {}", a->deadline,
                                       a->objective == "cost" ? "cheapest is" : "fewest is", s.best_n, t.days,
                                       report::cost_text(t.cost_usd, gpu.price_per_gpu_hour_usd > 0))
                         : fmt::format("budget ${}: fastest within it is {} GPUs, {:.1f} days, {}",
                                       units::format_count(ask.usd), s.best_n, t.days,
                                       report::cost_text(t.cost_usd, true));
        const auto query = report::search_query_json(s.best_c.spec, model, gpu, base, s.best_c.extras);
        const auto iv = search::search_intervals(s.best, uncertainty::shipped(), a->interval_level);
        std::string text = render(s.best, query, iv);
        if (const auto note = cap_note(*a, ask, s); !note.empty()) head += "\nnote: " + note;
        if (f == Format::kTable) text = head + "\n" + text;
        if (f == Format::kTable && !md && !a->wide) text = report::text::fit_width(text);
        write_output(a->output, text);
        return kExitOk;
      }

      auto c = configure(*a, base, fixed_by_fix, model, gpu, a->gpus);
      auto result = run_one(*a, c, model, base, gpu, gpu_names.front());
      const auto query = report::search_query_json(c.spec, model, gpu, base, c.extras);
      const auto iv = search::search_intervals(result, uncertainty::shipped(), a->interval_level);
      std::string text =
          !a->shard.empty() ? dump(report::search_json(result, query, iv, true)) : render(result, query, iv);
      if (a->shard.empty() && f == Format::kTable && !md && !a->wide) text = report::text::fit_width(text);
      write_output(a->output, text);
      return result.top.empty() ? nothing_status(result) : kExitOk;
    });
  });
}

}  // namespace ridgeline::cli
