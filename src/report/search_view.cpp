#include "ridgeline/report/search_view.hpp"

#include <fmt/format.h>

#include "ridgeline/units/units.hpp"

namespace ridgeline::report {

using nlohmann::json;

nlohmann::json search_query_json(const search::SearchSpec& s, const spec::ModelSpec& m, const spec::HardwareSpec& hw,
                                 const spec::PlanSpec& base) {
  return {{"gpu", hw.id},           {"gpu_name", hw.name},
          {"model", m.id},          {"model_name", m.name},
          {"gpus", s.gpus},         {"global_batch", s.global_batch},
          {"seq_len", graph::seq_len(m, base)},
          {"objective", search::to_string(s.objective)},
          {"shard", fmt::format("{}/{}", s.shard_index, s.shard_count)}};
}

json search_json(const search::SearchResult& r, const json& query) {
  json j;
  j["schema"] = "ridgeline.search/1";
  j["query"] = query;
  j["counts"] = {{"enumerated", r.counts.enumerated}, {"pruned", r.counts.pruned}, {"evaluated", r.counts.evaluated},
                 {"infeasible", r.counts.infeasible}, {"graphs", r.counts.graphs}};
  j["seconds"] = r.seconds;
  j["threads"] = r.threads;
  j["evaluated_per_s"] = r.seconds > 0 ? r.counts.evaluated / r.seconds : 0.0;
  j["top"] = json::array();
  for (const auto& c : r.top) {
    const auto& l = c.layout;
    j["top"].push_back({{"tp", l.tp}, {"pp", l.pp}, {"dp", l.dp}, {"cp", l.cp}, {"micro_batch", l.micro_batch},
                        {"vpp", l.vpp}, {"zero", l.zero}, {"sp", l.sp},
                        {"recompute", spec::to_string(l.recompute)}, {"precision", spec::to_string(l.precision)},
                        {"step_time_s", c.step_time_s}, {"mfu", c.mfu}, {"hfu", c.hfu},
                        {"memory_bytes", c.memory_bytes}, {"tokens_per_s", c.tokens_per_s},
                        {"bubble_fraction", c.bubble_fraction}, {"exposed_comm_s", c.exposed_comm_s},
                        {"days", c.days}, {"gpu_hours", c.gpu_hours}, {"cost_usd", c.cost_usd}, {"score", c.score}});
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
      r.top.push_back(k);
    }
  } catch (const std::exception& e) {
    error = std::string("malformed search result: ") + e.what();
  }
  return r;
}

std::string search_table(const search::SearchResult& r, const json& q) {
  using namespace units;
  std::string o;
  if (q.is_object())
    o += fmt::format("{} on {} x {}, global batch {}, sequence {}; objective {}\n", q.value("model_name", ""),
                     q.value("gpus", 0), q.value("gpu_name", ""), q.value("global_batch", 0), q.value("seq_len", 0),
                     q.value("objective", ""));
  o += fmt::format("{} configurations enumerated, {} pruned (invalid or cannot fit), {} evaluated, {} infeasible; "
                   "{} graphs; {:.2f} s on {} threads ({} evaluated/s)\n\n",
                   r.counts.enumerated, r.counts.pruned, r.counts.evaluated, r.counts.infeasible, r.counts.graphs,
                   r.seconds, r.threads, format_count(r.seconds > 0 ? r.counts.evaluated / r.seconds : 0));
  if (r.top.empty()) {
    o += "no configuration fits\n";
    return o;
  }
  o += fmt::format("  {:>3} {:>3} {:>3} {:>5} {:>3} {:>3} {:>3} {:>4} {:<10} {:<5} {:>10} {:>6} {:>10} {:>10} {:>8} {:>10}\n",
                   "#", "TP", "PP", "DP", "CP", "mb", "v", "ZeRO", "recompute", "prec", "step", "MFU", "mem/GPU",
                   "tokens/s", "days", "cost");
  int rank = 0;
  for (const auto& c : r.top) {
    const auto& l = c.layout;
    o += fmt::format("  {:>3} {:>3} {:>3} {:>5} {:>3} {:>3} {:>3} {:>4} {:<10} {:<5} {:>10} {:>6} {:>10} {:>10} {:>8.1f} {:>10}\n",
                     ++rank, l.tp, l.pp, l.dp, l.cp, l.micro_batch, l.vpp, l.zero, spec::to_string(l.recompute),
                     spec::to_string(l.precision), format_seconds(c.step_time_s), format_percent(c.mfu),
                     format_bytes(c.memory_bytes), format_count(c.tokens_per_s), c.days,
                     "$" + format_count(c.cost_usd));
  }
  return o;
}

std::string search_csv(const search::SearchResult& r) {
  std::string o = "rank,tp,pp,dp,cp,micro_batch,vpp,zero,sp,recompute,precision,step_time_s,mfu,hfu,memory_bytes,"
                  "tokens_per_s,days,gpu_hours,cost_usd\n";
  int rank = 0;
  for (const auto& c : r.top) {
    const auto& l = c.layout;
    o += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", ++rank, l.tp, l.pp, l.dp, l.cp,
                     l.micro_batch, l.vpp, l.zero, l.sp, spec::to_string(l.recompute), spec::to_string(l.precision),
                     c.step_time_s, c.mfu, c.hfu, c.memory_bytes, c.tokens_per_s, c.days, c.gpu_hours, c.cost_usd);
  }
  return o;
}

}  // namespace ridgeline::report
