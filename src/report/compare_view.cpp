#include "ridgeline/report/compare_view.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "ridgeline/report/capacity_text.hpp"
#include "ridgeline/report/prediction_view.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::report {

namespace {

using nlohmann::json;

/// "1.10–1.45 s"; "" without an interval.
std::string time_cell(const uncertainty::Interval& iv, double t_s) {
  return iv.valid() ? text::range(iv.time_lo(t_s), iv.time_hi(t_s), units::format_seconds) : "";
}
std::string rate_cell(const uncertainty::Interval& iv, double v) {
  return iv.valid() ? text::range(iv.rate_lo(v), iv.rate_hi(v), units::format_count) : "";
}

/// [lo, hi]; null without an interval.
json pair_or_null(const uncertainty::Interval& iv, double lo, double hi) {
  if (!iv.valid() || !std::isfinite(lo) || !std::isfinite(hi)) return nullptr;
  return json::array({lo, hi});
}

/// An interval's end for CSV: empty without one.
std::string csv_end(const uncertainty::Interval& iv, double x) { return iv.valid() ? fmt::format("{}", x) : ""; }

}  // namespace

size_t columns(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

const search::RankedRow& ranked_row(const std::vector<search::RankedRow>& rows, size_t i) {
  static const search::RankedRow kNone;
  return i < rows.size() ? rows[i] : kNone;
}

std::string standing_marker(search::Standing s) {
  switch (s) {
    case search::Standing::kBest: return "best";
    case search::Standing::kIndistinguishable: return "≈ best";
    case search::Standing::kDistinguishable: return "slower";
    case search::Standing::kUnknown: return "?";
    case search::Standing::kDoesNotFit: return "-";
  }
  return "?";
}

std::string ranking_legend(const std::vector<search::RankedRow>& rows, double level) {
  if (rows.empty()) return "";
  const std::string l = text::level(level);
  bool unknown = false, unfit = false;
  for (const auto& r : rows) {
    unknown = unknown || r.standing == search::Standing::kUnknown;
    unfit = unfit || r.standing == search::Standing::kDoesNotFit;
  }
  std::string o = "best: the fastest configuration that fits\n";
  o += fmt::format("≈ best: not distinguishable from the best at {0}: the two {0} step-time intervals overlap\n", l);
  o += fmt::format("slower: its {} step-time interval lies wholly above the best's", l);
  if (unknown) o += "; ?: no interval to tell by";
  if (unfit) o += "; -: does not fit";
  o += "\n";
  // The pools, in the order the rows first use them.
  std::vector<const uncertainty::Interval*> pools;
  for (const auto& r : rows)
    if (r.time.valid() && std::none_of(pools.begin(), pools.end(), [&](auto* p) { return p->pool == r.time.pool; }))
      pools.push_back(&r.time);
  if (pools.empty()) return o + fmt::format("no {} intervals: {}\n", l, rows.front().time.note);
  o += fmt::format("{} intervals from the out-of-sample residuals of validated runs (docs/accuracy.md): ", l);
  for (size_t i = 0; i < pools.size(); ++i)
    o += fmt::format("{}{} ({} runs{})", i ? "; " : "", pools[i]->pool, pools[i]->rows,
                     pools[i]->fallback
                         ? fmt::format("; a fallback: fewer than {} validated runs like these", uncertainty::kMinPoolRows)
                         : std::string());
  return o + "\n";
}

void add_ranked_json(json& e, const search::RankedRow& r, double time_s, double tokens_per_s, const char* time_key) {
  const auto& iv = r.time;
  e["interval"] = {{"level", iv.level}, {"pool", iv.pool}, {"rows", iv.rows}, {"fallback", iv.fallback},
                   {"note", iv.note}};
  e[std::string(time_key) + "_interval"] = pair_or_null(iv, iv.time_lo(time_s), iv.time_hi(time_s));
  e["tokens_per_s_interval"] = pair_or_null(iv, iv.rate_lo(tokens_per_s), iv.rate_hi(tokens_per_s));
  e["best"] = r.standing == search::Standing::kBest;
  e["standing"] = std::string(search::name(r.standing));
  const int d = search::distinguishable(r.standing);
  e["distinguishable_from_best"] = d < 0 ? json(nullptr) : json(d == 1);
}

std::string compare_table(const std::vector<search::Variation>& vars, const std::vector<search::CompareRow>& rows,
                          const search::CompareIntervals& iv) {
  using namespace units;
  const std::string l = text::level(iv.level);
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> head;
  for (const auto& v : vars) head.push_back(v.key);
  for (const std::string& h : {std::string("step time"), l + " step time", std::string("tokens/s"), l + " tokens/s",
                               std::string("MFU"), std::string("HFU"), std::string("peak memory"), std::string("fits"),
                               std::string("speed-up"), std::string("memory saved"), std::string("vs best")})
    head.push_back(h);
  cells.push_back(head);
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const auto& x = ranked_row(iv.rows, i);
    std::vector<std::string> c = r.values;
    const auto& p = r.pred;
    c.push_back(format_seconds(p.step.time_s));
    c.push_back(time_cell(x.time, p.step.time_s));
    c.push_back(format_count(p.step.tokens_per_s));
    c.push_back(rate_cell(x.time, p.step.tokens_per_s));
    c.push_back(format_percent(p.step.mfu));
    c.push_back(format_percent(p.step.hfu));
    c.push_back(format_bytes(p.memory.total));
    c.push_back(p.memory.fits ? "yes" : "NO");
    c.push_back(fmt::format("{:.2f}x", r.speedup));
    c.push_back(fmt::format("{}{}", r.memory_saved >= 0 ? "" : "-", format_bytes(std::abs(r.memory_saved))));
    c.push_back(standing_marker(x.standing));
    cells.push_back(c);
  }
  // Names (the variations' values) and the marker read left-aligned; figures right-aligned.
  const auto left = [&](size_t col) { return col < vars.size() || col + 1 == head.size(); };
  std::vector<size_t> width(head.size(), 0);
  for (const auto& row : cells)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], columns(row[i]));
  std::string out;
  for (size_t r = 0; r < cells.size(); ++r) {
    std::string line = " ";
    for (size_t i = 0; i < cells[r].size(); ++i) {
      const auto& s = cells[r][i];
      const std::string padding(width[i] - columns(s), ' ');
      line += ' ';
      line += left(i) ? s : padding;
      line += left(i) ? padding : s;
      line += ' ';
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
    if (r == 0) {
      std::string rule = " ";
      for (size_t i = 0; i < width.size(); ++i) {
        rule += ' ';
        rule.append(width[i], '-');
        rule += ' ';
      }
      out += rule.substr(0, rule.size() - 1) + "\n";
    }
  }
  return out + "\n" + ranking_legend(iv.rows, iv.level);
}

json compare_json(const std::vector<search::Variation>& vars, const std::vector<search::CompareRow>& rows,
                  const spec::ModelSpec& model, const search::CompareIntervals& iv) {
  json j;
  j["schema"] = "ridgeline.compare/1";
  j["vary"] = json::object();
  for (const auto& v : vars) j["vary"][v.key] = v.values;
  j["interval_level"] = iv.level;
  j["best_row"] = iv.best < 0 ? json(nullptr) : json(iv.best);  // index into rows: the fastest that fits
  j["rows"] = json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    json e;
    for (size_t k = 0; k < vars.size(); ++k) e["settings"][vars[k].key] = r.values[k];
    e["plan"] = report::plan_json(r.plan, model);
    e["status"] = std::string(engine::name(r.pred.status));
    e["step_time_s"] = r.pred.step.time_s;
    e["tokens_per_s"] = r.pred.step.tokens_per_s;
    e["mfu"] = r.pred.step.mfu;
    e["hfu"] = r.pred.step.hfu;
    e["peak_memory_bytes"] = r.pred.memory.total;
    e["capacity_bytes"] = r.pred.memory.capacity;
    e["fits"] = r.pred.memory.fits;
    e["speedup"] = r.speedup;
    e["memory_saved_bytes"] = r.memory_saved;
    e["memory"] = report::memory_json(r.pred.memory);
    add_ranked_json(e, ranked_row(iv.rows, i), r.pred.step.time_s, r.pred.step.tokens_per_s, "step_time_s");
    j["rows"].push_back(std::move(e));
  }
  return j;
}

std::string compare_csv(const std::vector<search::Variation>& vars, const std::vector<search::CompareRow>& rows,
                        const search::CompareIntervals& iv) {
  std::string o;
  for (const auto& v : vars) o += v.key + ",";
  o += "status,step_time_s,step_time_lo_s,step_time_hi_s,tokens_per_s,tokens_per_s_lo,tokens_per_s_hi,mfu,hfu,"
       "peak_memory_bytes,fits,speedup,memory_saved_bytes,standing,distinguishable_from_best\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const auto& x = ranked_row(iv.rows, i);
    const auto& s = r.pred.step;
    for (const auto& v : r.values) o += v + ",";
    const int d = search::distinguishable(x.standing);
    o += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", engine::name(r.pred.status), s.time_s,
                     csv_end(x.time, x.time.time_lo(s.time_s)), csv_end(x.time, x.time.time_hi(s.time_s)),
                     s.tokens_per_s, csv_end(x.time, x.time.rate_lo(s.tokens_per_s)),
                     csv_end(x.time, x.time.rate_hi(s.tokens_per_s)), s.mfu, s.hfu, r.pred.memory.total,
                     r.pred.memory.fits, r.speedup, r.memory_saved, search::name(x.standing),
                     d < 0 ? "" : (d == 1 ? "true" : "false"));
  }
  return o;
}

}  // namespace ridgeline::report
