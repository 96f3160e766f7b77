#include "ridgeline/report/compare_view.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "ridgeline/report/capacity_text.hpp"
#include "ridgeline/report/prediction_view.hpp"
#include "ridgeline/spec/framework.hpp"
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


}  // namespace

size_t columns(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

const search::RankedRow& ranked_row(const std::vector<search::RankedRow>& rows, size_t i) {
  static const search::RankedRow kNone;
  return i < rows.size() ? rows[i] : kNone;
}

std::string standing_marker(search::Standing s, search::SortKey by) {
  switch (s) {
    case search::Standing::kBest: return "best";
    case search::Standing::kIndistinguishable: return "≈ best";
    case search::Standing::kDistinguishable:
      return by == search::SortKey::kCost     ? "costlier"
             : by == search::SortKey::kMfu    ? "lower MFU"
             : by == search::SortKey::kMemory ? "more memory"
                                              : "slower";
    case search::Standing::kUnknown: return "?";
    case search::Standing::kDoesNotFit: return "-";
  }
  return "?";
}

/// What "tight" means, when a row is (memory::fit, the rule search and
/// advise use as well).
std::string fits_legend(const std::vector<search::CompareRow>& rows) {
  const bool tight = std::any_of(rows.begin(), rows.end(), [](const search::CompareRow& r) {
    return r.pred.status != engine::Status::kInvalid && memory::fit(r.pred.memory) == memory::Fit::kTight;
  });
  if (!tight) return "";
  return fmt::format("fits: yes when peak memory's upper end is at most {} of capacity ({} headroom, as search and "
                     "advise ask); tight when only the point estimate fits\n",
                     units::format_percent(1 - memory::kDefaultHeadroom),
                     units::format_percent(memory::kDefaultHeadroom));
}

/// What the wall clock and cost columns are for: the plan's tokens, or, when
/// they were not given, Chinchilla's 20 per parameter (pre-training) or 1B
/// tokens (a fine-tune has no compute-optimal length; engine::TokensBasis).
std::string tokens_legend(const std::vector<search::CompareRow>& rows) {
  bool chinchilla = false, per_billion = false;
  for (const auto& r : rows) {
    if (r.pred.status == engine::Status::kInvalid) continue;
    chinchilla |= r.pred.totals.basis == engine::TokensBasis::kChinchilla;
    per_billion |= r.pred.totals.basis == engine::TokensBasis::kPerBillion;
  }
  std::string o;
  // The plan's --tokens, when every valid row runs that many.
  double planned = -1;
  for (const auto& r : rows) {
    if (r.pred.status == engine::Status::kInvalid || r.pred.totals.basis != engine::TokensBasis::kPlan) continue;
    planned = planned < 0 || planned == r.pred.totals.tokens ? r.pred.totals.tokens : 0;
  }
  if (planned > 0) o += fmt::format("wall clock and cost: for {} tokens (--tokens)\n", units::format_count(planned));
  else if (planned == 0) o += "wall clock and cost: for each row's --tokens\n";
  if (chinchilla) o += "wall clock and cost: for 20 tokens per parameter (Chinchilla; --tokens sets the run)\n";
  if (per_billion)
    o += "wall clock and cost: per 1B tokens for a fine-tune (it has no compute-optimal length; --tokens sets the "
         "run)\n";
  return o;
}

std::string ranking_legend(const std::vector<search::RankedRow>& rows, double level, search::SortKey by) {
  if (rows.empty()) return "";
  const std::string l = text::level(level);
  bool unknown = false, unfit = false;
  for (const auto& r : rows) {
    unknown = unknown || r.standing == search::Standing::kUnknown;
    unfit = unfit || r.standing == search::Standing::kDoesNotFit;
  }
  std::string o;
  switch (by) {
    case search::SortKey::kCost:
      o = "best: the configuration that fits with the least cost per token (--sort cost)\n";
      o += fmt::format("≈ best: not distinguishable from the best at {0}: the two {0} cost intervals overlap (a cost "
                       "scales with its step time)\n",
                       l);
      o += fmt::format("costlier: its {} cost interval lies wholly above the best's", l);
      break;
    case search::SortKey::kMfu:
      o = "best: the configuration that fits with the highest MFU (--sort mfu)\n";
      o += fmt::format("≈ best: not distinguishable from the best at {0}: the two {0} MFU intervals overlap\n", l);
      o += fmt::format("lower MFU: its {} MFU interval lies wholly below the best's", l);
      break;
    case search::SortKey::kMemory:
      o = "best: the configuration that fits with the least peak memory (--sort memory)\n";
      o += "≈ best: the same peak memory as the best\n";
      o += "more memory: a higher peak memory than the best's";
      break;
    default:
      o = "best: the fastest configuration that fits\n";
      o += fmt::format("≈ best: not distinguishable from the best at {0}: the two {0} step-time intervals overlap\n",
                       l);
      o += fmt::format("slower: its {} step-time interval lies wholly above the best's", l);
  }
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

namespace {

bool invalid(const search::CompareRow& r) { return r.pred.status == engine::Status::kInvalid; }

/// "invalid: parallel.tp: TP 3 does not divide 32 attention heads".
std::string problem_text(const search::CompareRow& r) {
  return fmt::format("invalid: {}: {}", r.pred.problem.field, r.pred.problem.message);
}

/// The training framework's id ("megatron").
std::string framework_id(const search::CompareRow& r) { return std::string(spec::framework(r.plan.framework).id); }

/// The cost for the plan's tokens, or unknown (the profile has no price).
bool cost_known(const search::CompareRow& r) { return r.gpu && r.gpu->price_per_gpu_hour_usd > 0; }

/// The table's cells: the head, then per row its values and figures (only its values when invalid: the
/// problem takes the figures' place).
struct Cells {
  std::vector<std::string> head;
  std::vector<std::vector<std::string>> rows;
  size_t names = 0;  // leading columns that are names (the variations' values), left-aligned like the last
};

/// The columns the default table leaves to --wide, so that it keeps to 120
/// terminal columns: figures the others imply (HFU beside MFU, memory saved
/// beside peak memory, the intervals: the "vs best" column says what they
/// tell apart).
bool wide_only(const std::string& head, const std::string& level) {
  return head == "HFU" || head == "memory saved" || head == level + " tokens/s" || head == level + " step time";
}

Cells compare_cells(const std::vector<search::Variation>& vars, const std::vector<search::CompareRow>& rows,
                    const search::CompareIntervals& iv, bool wide = true) {
  using namespace units;
  const std::string l = text::level(iv.level);
  Cells out;
  out.names = vars.size();
  for (const auto& v : vars) out.head.push_back(v.key);
  // Where the rows' layouts differ in GPU count (a TP or PP varied at a
  // fixed DP), the count beside each row: its figures are for that many GPUs.
  const bool gpus_vary = std::any_of(rows.begin(), rows.end(), [&](const search::CompareRow& r) {
    return r.plan.parallel.gpus() != rows.front().plan.parallel.gpus();
  });
  if (gpus_vary) {
    out.head.push_back("GPUs");
    ++out.names;
  }
  for (const std::string& h :
       {std::string("step time"), l + " step time", std::string("tokens/s"), l + " tokens/s", std::string("MFU"),
        std::string("HFU"), std::string("peak memory"), std::string("fits"), std::string("speed-up (tokens/s)"),
        std::string("memory saved"), std::string("wall clock"), std::string("cost"), std::string("tokens/$"),
        std::string("vs best")})
    out.head.push_back(h);
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    std::vector<std::string> c = r.values;
    if (gpus_vary) c.push_back(std::to_string(r.plan.parallel.gpus()));
    if (invalid(r)) {
      out.rows.push_back(std::move(c));
      continue;
    }
    const auto& x = ranked_row(iv.rows, i);
    const auto& p = r.pred;
    c.push_back(format_seconds(p.step.time_s));
    c.push_back(time_cell(x.time, p.step.time_s));
    c.push_back(format_count(p.step.tokens_per_s));
    c.push_back(rate_cell(x.time, p.step.tokens_per_s));
    c.push_back(format_percent(p.step.mfu));
    c.push_back(format_percent(p.step.hfu));
    c.push_back(format_bytes(p.memory.total));
    const auto fit = memory::fit(p.memory);
    c.push_back(fit == memory::Fit::kDoesNotFit ? "NO" : std::string(memory::fit_word(fit)));
    c.push_back(r.compared ? fmt::format("{:.2f}x", r.speedup) : "-");
    c.push_back(r.compared ? fmt::format("{}{}", r.memory_saved >= 0 ? "" : "-", format_bytes(std::abs(r.memory_saved)))
                           : "-");
    c.push_back(text::days(p.totals.wall_s / 86400.0));
    c.push_back(cost_known(r) ? text::usd(p.totals.cost_usd) : "unknown");
    const double usd_per_token = search::cost_per_token_usd(r);
    c.push_back(std::isfinite(usd_per_token) ? format_count(1 / usd_per_token) : "unknown");
    c.push_back(standing_marker(x.standing, iv.by));
    out.rows.push_back(std::move(c));
  }
  if (!wide) {
    std::vector<bool> keep(out.head.size());
    for (size_t i = 0; i < keep.size(); ++i) keep[i] = !wide_only(out.head[i], l);
    const auto filter = [&](std::vector<std::string>& v) {
      std::vector<std::string> kept;
      for (size_t i = 0; i < v.size(); ++i)
        if (i >= keep.size() || keep[i]) kept.push_back(std::move(v[i]));
      v = std::move(kept);
    };
    filter(out.head);
    for (auto& row : out.rows) filter(row);
    for (auto& h : out.head)
      if (h == "speed-up (tokens/s)") h = "speed-up";  // the legend says of what
  }
  return out;
}

/// Whether a column reads left-aligned: names and the marker; figures right-aligned.
bool left_aligned(const Cells& c, size_t col) { return col < c.names || col + 1 == c.head.size(); }

/// A Markdown cell: '|' escaped.
std::string md_cell(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '|') o += '\\';
    o += ch;
  }
  return o;
}

/// A CSV field, quoted where it holds a comma, a quote or a line break (RFC 4180).
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string o = "\"";
  for (char ch : s) {
    if (ch == '"') o += '"';
    o += ch;
  }
  return o + "\"";
}

/// A figure for JSON: null where the row has none.
json num_or_null(bool known, double v) { return known && std::isfinite(v) ? json(v) : json(nullptr); }

/// A figure for CSV: empty where the row has none.
std::string csv_num(bool known, double v) { return known && std::isfinite(v) ? fmt::format("{}", v) : ""; }

/// The tokens a row's totals are for; unknown for an invalid row without a planned count.
double row_tokens(const search::CompareRow& r) { return invalid(r) ? r.plan.tokens : r.pred.totals.tokens; }

}  // namespace

std::string compare_header(const std::vector<search::CompareRow>& rows, const std::string& plan_summary,
                           const std::string& set_summary, const spec::StackCalibrationSpec* calibration) {
  if (rows.empty()) return "";
  const auto same = [&](auto get) {
    return std::all_of(rows.begin(), rows.end(), [&](const search::CompareRow& r) { return get(r) == get(rows[0]); });
  };
  const bool one_model = same([](const search::CompareRow& r) { return r.model->name; });
  const bool one_gpu = same([](const search::CompareRow& r) { return r.gpu->name; });
  const bool one_capacity = same([](const search::CompareRow& r) { return r.gpu->memory_bytes; });
  std::string o = fmt::format("{} on {}; base plan: {}", one_model ? rows[0].model->name : "Each row's model",
                              one_gpu ? rows[0].gpu->name : "each row's GPU", plan_summary);
  if (one_capacity) o += "; capacity " + units::format_bytes(rows[0].gpu->memory_bytes);
  o += "\n" + tokens_legend(rows);
  if (!set_summary.empty()) o += set_summary + "\n";
  if (calibration) {
    std::vector<CalibrationUse> uses;
    for (const auto& r : rows) uses.push_back(calibration_use(calibration, *r.gpu, r.plan));
    o += calibration_rows_line(uses) + "\n";
  }
  return o;
}

std::string compare_table(const std::vector<search::Variation>& vars, const std::vector<search::CompareRow>& rows,
                          const search::CompareIntervals& iv, bool wide) {
  const Cells cells = compare_cells(vars, rows, iv, wide);
  // Two spaces between columns with --wide, one by default (120 columns).
  const std::string pad_after = wide ? " " : "";
  std::vector<size_t> width(cells.head.size(), 0);
  for (size_t i = 0; i < cells.head.size(); ++i) width[i] = columns(cells.head[i]);
  for (const auto& row : cells.rows)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], columns(row[i]));
  const auto line_of = [&](const std::vector<std::string>& row) {
    std::string line = " ";
    for (size_t i = 0; i < row.size(); ++i) {
      const auto& s = row[i];
      const std::string padding(width[i] - columns(s), ' ');
      const bool left = left_aligned(cells, i);
      line += ' ';
      line += left ? s : padding;
      line += left ? padding : s;
      line += pad_after;
    }
    return line;
  };
  const auto trimmed = [](std::string s) {
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  std::string out = trimmed(line_of(cells.head));
  std::string rule = " ";
  for (size_t w : width) rule += " " + std::string(w, '-') + pad_after;
  out += (wide ? rule.substr(0, rule.size() - 1) : rule) + "\n";
  for (size_t r = 0; r < cells.rows.size(); ++r) {
    std::string line = line_of(cells.rows[r]);
    // An invalid row: its problem in place of the figures.
    if (invalid(rows[r])) line += " " + problem_text(rows[r]);
    out += trimmed(line);
  }
  return out + "\n" + ranking_legend(iv.rows, iv.level, iv.by) + fits_legend(rows) +
         (wide ? "" : "speed-up: tokens/s against the first row\n");
}

std::string compare_markdown(const std::vector<search::Variation>& vars, const std::vector<search::CompareRow>& rows,
                             const search::CompareIntervals& iv, const std::string& header) {
  const Cells cells = compare_cells(vars, rows, iv);
  std::string o;
  if (!header.empty()) o += header + "\n";
  const auto line = [](const std::vector<std::string>& row) {
    std::string s = "|";
    for (const auto& c : row) {
      s += ' ';
      s += md_cell(c);
      s += " |";
    }
    return s + "\n";
  };
  o += line(cells.head);
  std::string rule = "|";
  for (size_t i = 0; i < cells.head.size(); ++i) rule += left_aligned(cells, i) ? " :--- |" : " ---: |";
  o += rule + "\n";
  for (size_t r = 0; r < cells.rows.size(); ++r) {
    std::vector<std::string> row = cells.rows[r];
    if (invalid(rows[r])) {
      // The problem in the first figure's cell, the others empty: a pipe table has no spanning cells.
      row.push_back(problem_text(rows[r]));
      row.resize(cells.head.size());
    }
    o += line(row);
  }
  // The legend as a paragraph of lines (two trailing spaces: a line break).
  std::string legend = ranking_legend(iv.rows, iv.level, iv.by) + fits_legend(rows);
  if (!legend.empty()) {
    o += "\n";
    size_t pos = 0;
    while (pos < legend.size()) {
      const auto nl = legend.find('\n', pos);
      const std::string l = legend.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
      pos = nl == std::string::npos ? legend.size() : nl + 1;
      o += l + (pos < legend.size() ? "  \n" : "\n");
    }
  }
  return o;
}

json compare_json(const std::vector<search::Variation>& vars, const std::vector<search::CompareRow>& rows,
                  const search::CompareIntervals& iv, const std::vector<std::string>& sets,
                  const spec::StackCalibrationSpec* calibration) {
  json j;
  j["schema"] = "ridgeline.compare/2";
  j["vary"] = json::object();
  for (const auto& v : vars) j["vary"][v.key] = v.values;
  j["set"] = sets;
  j["interval_level"] = iv.level;
  j["best_row"] = iv.best < 0 ? json(nullptr) : json(iv.best);  // index into rows: the best that fits, by best_by
  j["best_by"] = iv.by == search::SortKey::kCost     ? "cost_per_token"
                 : iv.by == search::SortKey::kMfu    ? "mfu"
                 : iv.by == search::SortKey::kMemory ? "peak_memory"
                                                     : "time_per_token";
  j["rows"] = json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const bool ok = !invalid(r);
    json e;
    e["settings"] = json::object();
    for (size_t k = 0; k < vars.size(); ++k) e["settings"][vars[k].key] = r.values[k];
    e["gpu"] = r.gpu->id;
    e["gpu_name"] = r.gpu->name;
    e["model"] = r.model->id;
    e["model_name"] = r.model->name;
    e["framework"] = framework_id(r);
    e["tokens"] = num_or_null(row_tokens(r) > 0, row_tokens(r));
    e["tokens_source"] = ok ? json(std::string(engine::name(r.pred.totals.basis))) : json(nullptr);
    e["plan"] = report::plan_json(r.plan, *r.model);
    e["status"] = std::string(engine::name(r.pred.status));
    e["problem"] = ok ? json(nullptr) : json{{"field", r.pred.problem.field}, {"message", r.pred.problem.message}};
    if (calibration) e["calibration_applied"] = calibration_use(calibration, *r.gpu, r.plan).applied();
    const auto& s = r.pred.step;
    const auto& t = r.pred.totals;
    e["step_time_s"] = num_or_null(ok, s.time_s);
    e["tokens_per_s"] = num_or_null(ok, s.tokens_per_s);
    e["mfu"] = num_or_null(ok, s.mfu);
    e["hfu"] = num_or_null(ok, s.hfu);
    e["peak_memory_bytes"] = ok ? whole_json(r.pred.memory.total) : json(nullptr);
    e["capacity_bytes"] = whole_json(r.gpu->memory_bytes);
    e["fits"] = ok ? json(r.pred.memory.fits) : json(nullptr);
    e["speedup"] = num_or_null(r.compared, r.speedup);
    e["memory_saved_bytes"] = r.compared ? whole_json(r.memory_saved) : json(nullptr);
    e["wall_clock_days"] = num_or_null(ok, t.wall_s / 86400.0);
    e["gpu_hours"] = num_or_null(ok, t.gpu_hours);
    e["cost_usd"] = num_or_null(ok && cost_known(r), t.cost_usd);
    e["tokens_per_usd"] = num_or_null(ok && std::isfinite(search::cost_per_token_usd(r)),
                                      1 / search::cost_per_token_usd(r));
    e["memory"] = ok ? report::memory_json(r.pred.memory) : json(nullptr);
    if (ok) {
      add_ranked_json(e, ranked_row(iv.rows, i), s.time_s, s.tokens_per_s, "step_time_s");
    } else {
      e["interval"] = nullptr;
      e["step_time_s_interval"] = nullptr;
      e["tokens_per_s_interval"] = nullptr;
      e["best"] = false;
      e["standing"] = nullptr;
      e["distinguishable_from_best"] = nullptr;
    }
    j["rows"].push_back(std::move(e));
  }
  if (calibration && !rows.empty()) {
    json c = calibration_json(calibration_use(calibration, *rows[0].gpu, rows[0].plan));
    int applied = 0;
    for (const auto& r : rows) applied += calibration_use(calibration, *r.gpu, r.plan).applied();
    c["rows_applied"] = applied;
    std::vector<CalibrationUse> uses;
    for (const auto& r : rows) uses.push_back(calibration_use(calibration, *r.gpu, r.plan));
    c["line"] = calibration_rows_line(uses);
    j["calibration"] = std::move(c);
  }
  return j;
}

std::string compare_csv(const std::vector<search::Variation>& vars, const std::vector<search::CompareRow>& rows,
                        const search::CompareIntervals& iv) {
  std::string o;
  for (const auto& v : vars) o += csv_field(v.key) + ",";
  o += "gpu,model,framework,tokens,status,step_time_s,step_time_lo_s,step_time_hi_s,tokens_per_s,tokens_per_s_lo,"
       "tokens_per_s_hi,mfu,hfu,peak_memory_bytes,fits,speedup,memory_saved_bytes,wall_clock_days,gpu_hours,cost_usd,"
       "tokens_per_usd,standing,distinguishable_from_best,problem\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const bool ok = !invalid(r);
    const auto& x = ranked_row(iv.rows, i);
    const auto& s = r.pred.step;
    const auto& t = r.pred.totals;
    for (const auto& v : r.values) o += csv_field(v) + ",";
    const bool has_iv = ok && x.time.valid();
    const int d = ok ? search::distinguishable(x.standing) : -1;
    o += fmt::format("{},{},{},{},{},", csv_field(r.gpu->id), csv_field(r.model->id), csv_field(framework_id(r)),
                     csv_num(row_tokens(r) > 0, row_tokens(r)), engine::name(r.pred.status));
    o += fmt::format("{},{},{},{},{},{},{},{},{},{},", csv_num(ok, s.time_s),
                     csv_num(has_iv, x.time.time_lo(s.time_s)), csv_num(has_iv, x.time.time_hi(s.time_s)),
                     csv_num(ok, s.tokens_per_s), csv_num(has_iv, x.time.rate_lo(s.tokens_per_s)),
                     csv_num(has_iv, x.time.rate_hi(s.tokens_per_s)), csv_num(ok, s.mfu), csv_num(ok, s.hfu),
                     csv_num(ok, r.pred.memory.total), ok ? (r.pred.memory.fits ? "true" : "false") : "");
    const double usd_per_token = search::cost_per_token_usd(r);
    o += fmt::format("{},{},{},{},{},{},{},{},{}\n", csv_num(r.compared, r.speedup),
                     csv_num(r.compared, r.memory_saved), csv_num(ok, t.wall_s / 86400.0), csv_num(ok, t.gpu_hours),
                     csv_num(ok && cost_known(r), t.cost_usd), csv_num(ok && std::isfinite(usd_per_token), 1 / usd_per_token),
                     ok ? std::string(search::name(x.standing)) : std::string(),
                     d < 0 ? "" : (d == 1 ? "true" : "false"),
                     ok ? std::string() : csv_field(r.pred.problem.field + ": " + r.pred.problem.message));
  }
  return o;
}

}  // namespace ridgeline::report
