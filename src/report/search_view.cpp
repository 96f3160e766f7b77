#include "ridgeline/report/search_view.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "ridgeline/report/capacity_text.hpp"
#include "ridgeline/report/compare_view.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::report {

using nlohmann::json;

namespace {

/// What a candidate's interval is drawn from, by name, so that a merge draws
/// the same interval again.
json traits_json(const uncertainty::RunTraits& t) {
  return {{"framework", spec::framework(t.framework).id}, {"generation", std::string(spec::name(t.generation))},
          {"gpus", t.gpus}, {"params", t.params}, {"dominant", std::string(uncertainty::name(t.dominant))}};
}

/// The traits of a top entry; "" or what is wrong.
std::string traits_from_json(const json& j, uncertainty::RunTraits& t) {
  const auto f = spec::find_framework(j.at("framework").get<std::string>());
  const auto g = spec::parse_generation(j.at("generation").get<std::string>());
  if (!f || !g || !uncertainty::parse_dominant(j.at("dominant").get<std::string>(), t.dominant))
    return "unknown framework, generation or dominant kernel class in a top entry's traits";
  t.framework = *f;
  t.generation = *g;
  t.gpus = j.at("gpus").get<long long>();
  t.params = j.at("params").get<double>();
  return "";
}

}  // namespace

std::string within_best_line(const search::SearchIntervals& iv) {
  const auto& w = iv.within;
  const std::string l = text::level(iv.level);
  if (w.known)
    return fmt::format("{} of {} feasible configurations lie within the best's {} interval (predicted step time "
                       "at most {}, its upper end)",
                       w.count, w.of, l, units::format_seconds(w.time_hi_s));
  if (iv.top.empty()) return fmt::format("0 of {} feasible configurations: nothing to rank", w.of);
  if (!iv.top.front().time.valid())
    return fmt::format("{} feasible configurations; the best has no {} interval: {}", w.of, l, iv.top.front().time.note);
  return fmt::format("{} feasible configurations; how many lie within the best's {} interval is unknown: a merged "
                     "part has no feasible_step_times_s (write each shard with --shard)",
                     w.of, l);
}

nlohmann::json search_query_json(const search::SearchSpec& s, const spec::ModelSpec& m, const spec::HardwareSpec& hw,
                                 const spec::PlanSpec& base) {
  return {{"gpu", hw.id},           {"gpu_name", hw.name},
          {"model", m.id},          {"model_name", m.name},
          {"gpus", s.gpus},         {"global_batch", s.global_batch},
          {"seq_len", graph::seq_len(m, base)},
          {"objective", search::to_string(s.objective)},
          {"shard", fmt::format("{}/{}", s.shard_index, s.shard_count)}};
}

json search_json(const search::SearchResult& r, const json& query, const search::SearchIntervals& iv,
                 bool feasible_times) {
  json j;
  j["schema"] = "ridgeline.search/1";
  j["query"] = query;
  j["counts"] = {{"enumerated", r.counts.enumerated}, {"pruned", r.counts.pruned}, {"evaluated", r.counts.evaluated},
                 {"infeasible", r.counts.infeasible}, {"graphs", r.counts.graphs}};
  j["seconds"] = r.seconds;
  j["threads"] = r.threads;
  j["evaluated_per_s"] = r.seconds > 0 ? r.counts.evaluated / r.seconds : 0.0;
  j["interval_level"] = iv.level;
  const auto& w = iv.within;
  j["within_best_interval"] = {{"count", w.known ? json(w.count) : json(nullptr)},
                               {"of", w.of},
                               {"level", iv.level},
                               {"step_time_s_at_most", w.known ? json(w.time_hi_s) : json(nullptr)},
                               {"note", w.known ? std::string() : within_best_line(iv)}};
  j["top"] = json::array();
  for (size_t i = 0; i < r.top.size(); ++i) {
    const auto& c = r.top[i];
    const auto& l = c.layout;
    json e = {{"tp", l.tp}, {"pp", l.pp}, {"dp", l.dp}, {"cp", l.cp}, {"micro_batch", l.micro_batch},
              {"vpp", l.vpp}, {"zero", l.zero}, {"sp", l.sp},
              {"recompute", spec::to_string(l.recompute)}, {"precision", spec::to_string(l.precision)},
              {"step_time_s", c.step_time_s}, {"mfu", c.mfu}, {"hfu", c.hfu},
              {"memory_bytes", c.memory_bytes}, {"tokens_per_s", c.tokens_per_s},
              {"bubble_fraction", c.bubble_fraction}, {"exposed_comm_s", c.exposed_comm_s},
              {"days", c.days}, {"gpu_hours", c.gpu_hours}, {"cost_usd", c.cost_usd}, {"score", c.score},
              {"traits", traits_json(c.traits)}};
    add_ranked_json(e, ranked_row(iv.top, i), c.step_time_s, c.tokens_per_s, "step_time_s");
    j["top"].push_back(std::move(e));
  }
  if (feasible_times) {
    auto times = r.feasible_step_times_s;
    std::sort(times.begin(), times.end());  // the same text however the threads split the work
    j["feasible_step_times_s"] = times;
  }
  return j;
}

search::SearchResult search_from_json(const json& j, std::string& error) {
  search::SearchResult r;
  try {
    if (j.value("schema", "") != "ridgeline.search/1") {
      error = "not a search result (schema ridgeline.search/1)";
      return r;
    }
    const auto& c = j.at("counts");
    r.counts = {c.at("enumerated").get<std::uint64_t>(), c.at("pruned").get<std::uint64_t>(),
                c.at("evaluated").get<std::uint64_t>(), c.at("infeasible").get<std::uint64_t>(),
                c.value("graphs", std::uint64_t{0})};
    r.seconds = j.value("seconds", 0.0);
    for (const auto& e : j.at("top")) {
      search::Candidate k;
      auto& l = k.layout;
      l.tp = e.at("tp");
      l.pp = e.at("pp");
      l.dp = e.at("dp");
      l.cp = e.at("cp");
      l.micro_batch = e.at("micro_batch");
      l.vpp = e.at("vpp");
      l.zero = e.at("zero");
      l.sp = e.at("sp");
      auto rec = spec::parse_recompute(e.at("recompute").get<std::string>());
      auto prec = spec::parse_precision(e.at("precision").get<std::string>());
      if (!rec || !prec) {
        error = "unknown recompute or precision in a top entry";
        return r;
      }
      l.recompute = *rec;
      l.precision = *prec;
      k.step_time_s = e.at("step_time_s");
      k.mfu = e.at("mfu");
      k.hfu = e.at("hfu");
      k.memory_bytes = e.at("memory_bytes");
      k.tokens_per_s = e.at("tokens_per_s");
      k.bubble_fraction = e.value("bubble_fraction", 0.0);
      k.exposed_comm_s = e.value("exposed_comm_s", 0.0);
      k.days = e.value("days", 0.0);
      k.gpu_hours = e.value("gpu_hours", 0.0);
      k.cost_usd = e.value("cost_usd", 0.0);
      k.score = e.at("score");
      if (auto why = traits_from_json(e.at("traits"), k.traits); !why.empty()) {
        error = why;
        return r;
      }
      r.top.push_back(k);
    }
    r.feasible_times_kept = j.contains("feasible_step_times_s");
    if (r.feasible_times_kept) {
      r.feasible_step_times_s = j.at("feasible_step_times_s").get<std::vector<double>>();
      const std::uint64_t feasible = r.counts.evaluated - r.counts.infeasible;
      if (r.feasible_step_times_s.size() != feasible) {
        error = fmt::format("feasible_step_times_s holds {} times; the counts say {} feasible configurations",
                            r.feasible_step_times_s.size(), feasible);
        return r;
      }
    }
  } catch (const std::exception& e) {
    error = std::string("malformed search result: ") + e.what();
  }
  return r;
}

std::string search_table(const search::SearchResult& r, const json& q, const search::SearchIntervals& iv) {
  using namespace units;
  std::string o;
  if (q.is_object())
    o += fmt::format("{} on {} x {}, global batch {}, sequence {}; objective {}\n", q.value("model_name", ""),
                     q.value("gpus", 0), q.value("gpu_name", ""), q.value("global_batch", 0), q.value("seq_len", 0),
                     q.value("objective", ""));
  o += fmt::format("{} configurations enumerated, {} pruned (invalid or cannot fit), {} evaluated, {} infeasible; "
                   "{} graphs; {:.2f} s on {} threads ({} evaluated/s)\n",
                   r.counts.enumerated, r.counts.pruned, r.counts.evaluated, r.counts.infeasible, r.counts.graphs,
                   r.seconds, r.threads, format_count(r.seconds > 0 ? r.counts.evaluated / r.seconds : 0));
  if (r.top.empty()) {
    o += "\nno configuration fits\n";
    return o;
  }
  o += within_best_line(iv) + "\n\n";
  // The interval columns hold "–" (three bytes, one column): padded by hand.
  const std::string l = text::level(iv.level);
  std::vector<std::string> step_iv, rate_iv;
  size_t step_w = columns(l + " step"), rate_w = columns(l + " tokens/s");
  for (size_t i = 0; i < r.top.size(); ++i) {
    const auto& t = ranked_row(iv.top, i).time;
    const auto& c = r.top[i];
    step_iv.push_back(t.valid() ? text::range(t.time_lo(c.step_time_s), t.time_hi(c.step_time_s), format_seconds) : "");
    rate_iv.push_back(t.valid() ? text::range(t.rate_lo(c.tokens_per_s), t.rate_hi(c.tokens_per_s), format_count) : "");
    step_w = std::max(step_w, columns(step_iv.back()));
    rate_w = std::max(rate_w, columns(rate_iv.back()));
  }
  const auto right = [](const std::string& s, size_t w) { return std::string(w - columns(s), ' ') + s; };
  o += fmt::format("  {:>3} {:>3} {:>3} {:>5} {:>3} {:>3} {:>3} {:>4} {:<10} {:<5} {:>10} {} {:>6} {:>10} {:>10} {} {:>8} "
                   "{:>10}  {}\n",
                   "#", "TP", "PP", "DP", "CP", "mb", "v", "ZeRO", "recompute", "prec", "step", right(l + " step", step_w),
                   "MFU", "mem/GPU", "tokens/s", right(l + " tokens/s", rate_w), "days", "cost", "vs best");
  for (size_t i = 0; i < r.top.size(); ++i) {
    const auto& c = r.top[i];
    const auto& y = c.layout;
    o += fmt::format("  {:>3} {:>3} {:>3} {:>5} {:>3} {:>3} {:>3} {:>4} {:<10} {:<5} {:>10} {} {:>6} {:>10} {:>10} {} "
                     "{:>8.1f} {:>10}  {}\n",
                     i + 1, y.tp, y.pp, y.dp, y.cp, y.micro_batch, y.vpp, y.zero, spec::to_string(y.recompute),
                     spec::to_string(y.precision), format_seconds(c.step_time_s), right(step_iv[i], step_w),
                     format_percent(c.mfu), format_bytes(c.memory_bytes), format_count(c.tokens_per_s),
                     right(rate_iv[i], rate_w), c.days, "$" + format_count(c.cost_usd),
                     standing_marker(ranked_row(iv.top, i).standing));
  }
  return o + "\n" + ranking_legend(iv.top, iv.level);
}

std::string search_csv(const search::SearchResult& r, const search::SearchIntervals& iv) {
  std::string o = "rank,tp,pp,dp,cp,micro_batch,vpp,zero,sp,recompute,precision,step_time_s,step_time_lo_s,"
                  "step_time_hi_s,mfu,hfu,memory_bytes,tokens_per_s,tokens_per_s_lo,tokens_per_s_hi,days,gpu_hours,"
                  "cost_usd,standing,distinguishable_from_best\n";
  const auto end = [](const uncertainty::Interval& t, double x) { return t.valid() ? fmt::format("{}", x) : ""; };
  for (size_t i = 0; i < r.top.size(); ++i) {
    const auto& c = r.top[i];
    const auto& l = c.layout;
    const auto& x = ranked_row(iv.top, i);
    const auto& t = x.time;
    const int d = search::distinguishable(x.standing);
    o += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", i + 1, l.tp, l.pp,
                     l.dp, l.cp, l.micro_batch, l.vpp, l.zero, l.sp, spec::to_string(l.recompute),
                     spec::to_string(l.precision), c.step_time_s, end(t, t.time_lo(c.step_time_s)),
                     end(t, t.time_hi(c.step_time_s)), c.mfu, c.hfu, c.memory_bytes, c.tokens_per_s,
                     end(t, t.rate_lo(c.tokens_per_s)), end(t, t.rate_hi(c.tokens_per_s)), c.days, c.gpu_hours,
                     c.cost_usd, search::name(x.standing), d < 0 ? "" : (d == 1 ? "true" : "false"));
  }
  return o;
}

}  // namespace ridgeline::report
