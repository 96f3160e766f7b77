#include "ridgeline/report/search_view.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "ridgeline/report/capacity_text.hpp"
#include "ridgeline/report/compare_view.hpp"
#include "ridgeline/report/prediction_view.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::report {

using nlohmann::json;

namespace {

constexpr const char* kSchema = "ridgeline.search/2";

/// What a candidate's interval is drawn from, by name, so that a merge draws
/// the same interval again.
json traits_json(const uncertainty::RunTraits& t) {
  return {{"framework", spec::framework(t.framework).id}, {"generation", std::string(spec::name(t.generation))},
          {"gpus", t.gpus}, {"params", whole_json(t.params)}, {"dominant", std::string(uncertainty::name(t.dominant))}};
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

/// A layout's fields; fp8_recipe only under fp8; first_stage_layers and last_stage_layers only when
/// set (0, an even share, is the default a reader assumes).
json layout_json(const search::Layout& l) {
  json j = {{"tp", l.tp},
          {"pp", l.pp},
          {"dp", l.dp},
          {"cp", l.cp},
          {"ep", l.ep},
          {"micro_batch", l.micro_batch},
          {"vpp", l.vpp},
          {"zero", l.zero},
          {"sp", l.sp},
          {"recompute", spec::to_string(l.recompute)},
          {"precision", spec::to_string(l.precision)},
          {"framework", spec::framework(l.framework).id},
          {"tp_comm_overlap", l.tp_overlap},
          {"offload_optimizer", spec::to_string(l.offload.optimizer)},
          {"offload_params", spec::to_string(l.offload.params)}};
  // A recipe only where the layout runs fp8: a bf16 row has none.
  if (l.precision == spec::Precision::kFp8) j["fp8_recipe"] = spec::to_string(l.fp8_recipe);
  if (l.first_stage_layers > 0) j["first_stage_layers"] = l.first_stage_layers;
  if (l.last_stage_layers > 0) j["last_stage_layers"] = l.last_stage_layers;
  // A dispatcher only where tokens leave their GPU (EP > 1).
  if (l.ep > 1) j["moe_dispatcher"] = spec::to_string(l.dispatcher);
  return j;
}

/// "" or what is wrong.
std::string layout_from_json(const json& e, search::Layout& l) {
  l.tp = e.at("tp");
  l.pp = e.at("pp");
  l.dp = e.at("dp");
  l.cp = e.at("cp");
  l.ep = e.value("ep", 1);
  l.micro_batch = e.at("micro_batch");
  l.vpp = e.at("vpp");
  l.zero = e.at("zero");
  l.sp = e.at("sp");
  auto rec = spec::parse_recompute(e.at("recompute").get<std::string>());
  auto prec = spec::parse_precision(e.at("precision").get<std::string>());
  auto fw = spec::find_framework(e.value("framework", std::string("megatron")));
  if (!rec || !prec || !fw) return "unknown recompute, precision or framework in a top entry";
  l.recompute = *rec;
  l.precision = *prec;
  l.framework = *fw;
  l.tp_overlap = e.value("tp_comm_overlap", false);
  const auto recipe = spec::parse_fp8_recipe(e.value("fp8_recipe", std::string("delayed")));
  if (!recipe) return "unknown fp8_recipe in a top entry";
  l.fp8_recipe = *recipe;
  const auto opt = spec::parse_offload_device(e.value("offload_optimizer", std::string("none")));
  const auto par = spec::parse_offload_device(e.value("offload_params", std::string("none")));
  if (!opt || !par) return "unknown offload_optimizer or offload_params in a top entry";
  l.offload = {*opt, *par};
  l.first_stage_layers = e.value("first_stage_layers", 0);
  l.last_stage_layers = e.value("last_stage_layers", 0);
  const auto disp = spec::parse_moe_dispatcher(e.value("moe_dispatcher", std::string("alltoall")));
  if (!disp) return "unknown moe_dispatcher in a top entry";
  l.dispatcher = *disp;
  return "";
}

bool price_known(const json& q) {
  return q.is_object() && q.contains("price_per_gpu_hour_usd") && q["price_per_gpu_hour_usd"].is_number() &&
         q["price_per_gpu_hour_usd"].get<double>() > 0;
}

bool searched(const json& q, const char* dim) {
  if (!q.is_object() || !q.contains("searched")) return false;
  for (const auto& s : q["searched"])
    if (s == dim) return true;
  return false;
}

std::string percent_text(double frac) { return fmt::format("{:g}%", frac * 100); }

bool uneven(const search::Layout& l) { return l.first_stage_layers > 0 || l.last_stage_layers > 0; }

/// Whether the rows show their stage split: when stages were searched or a
/// row's stages are uneven.
bool stages_shown(const search::SearchResult& r, const json& q) {
  return searched(q, "stages") ||
         std::any_of(r.top.begin(), r.top.end(), [](const auto& c) { return uneven(c.layout); });
}

/// The rows as cells, shared by the text and Markdown tables.
text::Table rows_table(const search::SearchResult& r, const json& q, const search::SearchIntervals& iv,
                       bool wide = true) {
  using namespace units;
  text::Table t;
  const std::string l = text::level(iv.level);
  const bool ep = q.value("moe", false) || searched(q, "ep") ||
                  std::any_of(r.top.begin(), r.top.end(), [](const auto& c) { return c.layout.ep > 1; });
  const bool fw = searched(q, "framework");
  const bool recipe = searched(q, "fp8_recipe");
  const bool ovl = searched(q, "tp_overlap") ||
                   std::any_of(r.top.begin(), r.top.end(), [](const auto& c) { return c.layout.tp_overlap; });
  const bool off = searched(q, "offload") ||
                   std::any_of(r.top.begin(), r.top.end(), [](const auto& c) { return c.layout.offload.any(); });
  const bool stages = stages_shown(r, q);
  const bool disp = searched(q, "dispatcher");
  const bool ties = std::any_of(r.top.begin(), r.top.end(), [](const auto& c) { return !c.equivalent.empty(); });
  const bool known = price_known(q);
  auto col = [&](std::string h, bool numeric) {
    t.head.push_back(std::move(h));
    t.numeric.push_back(numeric);
  };
  col("#", true);
  col("TP", true);
  col("PP", true);
  if (stages) col("stages", false);
  col("DP", true);
  col("CP", true);
  if (ep) col("EP", true);
  col("SP", false);
  if (ovl) col("TP ovl", false);
  col("mb", true);
  col("v", true);
  col("ZeRO", true);
  col("recompute", false);
  col("prec", false);
  if (off) col("offload", false);
  if (fw) col("framework", false);
  if (disp) col("dispatch", false);
  col("step", true);
  col(l + " step", true);
  col("MFU", true);
  if (ep) col("a2a", true);  // the MoE all-to-alls per step, hidden or not
  col("mem/GPU", true);
  col("tokens/s", true);
  if (wide) col(l + " tokens/s", true);
  col("days", true);
  if (known) col("cost", true);  // without a price the header says so, not every row
  col("vs best", false);
  if (ties) col("equivalent", false);
  for (size_t i = 0; i < r.top.size(); ++i) {
    const auto& c = r.top[i];
    const auto& y = c.layout;
    const auto& x = ranked_row(iv.top, i);
    const auto& iv_t = x.time;
    std::vector<std::string> row = {std::to_string(i + 1), std::to_string(y.tp), std::to_string(y.pp)};
    if (stages) row.push_back(search::stages_text(y));
    row.push_back(std::to_string(y.dp));
    row.push_back(std::to_string(y.cp));
    if (ep) row.push_back(std::to_string(y.ep));
    row.push_back(y.sp ? "on" : "off");
    if (ovl) row.push_back(y.tp_overlap ? "on" : "off");
    row.push_back(std::to_string(y.micro_batch));
    row.push_back(std::to_string(y.vpp));
    row.push_back(std::to_string(y.zero));
    row.push_back(spec::to_string(y.recompute));
    std::string precision = spec::to_string(y.precision);
    if (recipe && y.precision == spec::Precision::kFp8) {
      precision += ' ';
      precision += spec::to_string(y.fp8_recipe);
    }
    row.push_back(std::move(precision));
    if (off)
      row.push_back(y.offload.params_on_cpu() ? (y.offload.optimizer_on_cpu() ? "opt+params" : "params")
                                              : y.offload.optimizer_on_cpu() ? "optimizer" : "none");
    if (fw) row.push_back(spec::framework(y.framework).id);
    if (disp) row.push_back(y.ep > 1 ? spec::to_string(y.dispatcher) : "-");
    row.push_back(format_seconds(c.step_time_s));
    row.push_back(iv_t.valid() ? text::range(iv_t.time_lo(c.step_time_s), iv_t.time_hi(c.step_time_s), format_seconds)
                               : "");
    row.push_back(format_percent(c.mfu));
    if (ep) row.push_back(c.all_to_all_s > 0 ? format_seconds(c.all_to_all_s) : std::string("-"));
    row.push_back(format_bytes(c.memory_bytes));
    row.push_back(format_count(c.tokens_per_s));
    if (wide)
      row.push_back(iv_t.valid() ? text::range(iv_t.rate_lo(c.tokens_per_s), iv_t.rate_hi(c.tokens_per_s), format_count)
                                 : "");
    row.push_back(c.completes ? fmt::format("{:.1f}", c.days) : std::string("never"));
    if (known) row.push_back(cost_text(c.cost_usd, known));
    row.push_back(standing_marker(x.standing));
    if (ties) row.push_back(search::tie_text(c));
    t.rows.push_back(std::move(row));
  }
  return t;
}

}  // namespace

/// A table of cells, padded by terminal columns (the interval cells hold "–").
std::string plain_table(const text::Table& t) {
  std::vector<size_t> w(t.head.size(), 0);
  for (size_t i = 0; i < t.head.size(); ++i) w[i] = columns(t.head[i]);
  for (const auto& row : t.rows)
    for (size_t i = 0; i < row.size(); ++i) w[i] = std::max(w[i], columns(row[i]));
  auto line = [&](const std::vector<std::string>& cells) {
    std::string o = " ";
    for (size_t i = 0; i < cells.size(); ++i) {
      const std::string pad(w[i] - columns(cells[i]), ' ');
      const bool last = i + 1 == cells.size();
      o += ' ';
      if (t.numeric[i]) o += pad;
      o += cells[i];
      if (!t.numeric[i] && !last) o += pad;
    }
    while (o.back() == ' ') o.pop_back();  // a row whose last cells are empty
    return o + "\n";
  };
  std::string o = line(t.head);
  for (const auto& row : t.rows) o += line(row);
  return o;
}

namespace {

/// A Markdown table (pipes escaped).
std::string markdown(const text::Table& t) {
  auto cell = [](const std::string& s) {
    std::string o;
    for (char c : s) o += c == '|' ? std::string("\\|") : std::string(1, c == '\n' ? ' ' : c);
    return o;
  };
  std::string o = "|";
  for (const auto& h : t.head) {
    o += ' ';
    o += cell(h);
    o += " |";
  }
  o += "\n|";
  for (size_t i = 0; i < t.head.size(); ++i) o += t.numeric[i] ? "---:|" : "---|";
  o += "\n";
  for (const auto& row : t.rows) {
    o += "|";
    for (const auto& c : row) {
      o += ' ';
      o += cell(c);
      o += " |";
    }
    o += "\n";
  }
  return o;
}

std::string counts_line(const search::SearchResult& r) {
  using units::format_whole;
  const auto& n = r.counts;
  return fmt::format("{} configurations enumerated, {} pruned ({} invalid, {} by memory: model state alone over the "
                     "limit), {} evaluated, {} over memory; {} graphs; {:.2f} s on {} thread{} ({} evaluated/s)",
                     format_whole(n.enumerated), format_whole(n.pruned),
                     format_whole(n.shape + n.batch + n.redundant + n.plan), format_whole(n.state),
                     format_whole(n.evaluated), format_whole(n.infeasible), format_whole(n.graphs), r.seconds,
                     r.threads, r.threads == 1 ? "" : "s",
                     units::format_count(r.seconds > 0 ? n.evaluated / r.seconds : 0));
}

std::string csv_quote(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

std::string layout_label(const search::Layout& l, bool ep, bool fw) {
  std::string o = fmt::format("TP{} PP{}{} DP{} CP{}", l.tp, l.pp,
                              uneven(l) ? " (stages " + search::stages_text(l) + ")" : "", l.dp, l.cp);
  if (ep) o += fmt::format(" EP{}", l.ep);
  o += fmt::format("{} mb{} v{} ZeRO-{} {} {}", l.sp ? " +SP" : "", l.micro_batch, l.vpp, l.zero,
                   spec::to_string(l.recompute), spec::to_string(l.precision));
  if (fw) o += " " + spec::framework(l.framework).id;
  return o;
}

}  // namespace

std::string cost_text(double usd, bool known) { return known ? text::usd(usd) : "unknown"; }

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

json search_query_json(const search::SearchSpec& s, const spec::ModelSpec& m, const spec::HardwareSpec& hw,
                       const spec::PlanSpec& base, const SearchQueryExtras& x) {
  json fixed = json::array();
  for (const auto& [k, v] : x.fixed) fixed.push_back({{"dimension", k}, {"value", v}});
  json q = {{"gpu", hw.id},
          {"gpu_name", hw.name},
          {"model", m.id},
          {"model_name", m.name},
          {"gpus", s.gpus},
          {"global_batch", s.global_batch},
          {"seq_len", graph::seq_len(m, base)},
          {"objective", search::to_string(s.objective)},
          {"shard", fmt::format("{}/{}", s.shard_index, s.shard_count)},
          {"searched", x.searched},
          {"fixed", fixed},
          {"set", x.sets},
          {"set_summary", x.sets_summary},
          {"headroom", s.headroom},
          {"capacity_bytes", whole_json(hw.memory_bytes)},
          {"price_per_gpu_hour_usd", hw.price_per_gpu_hour_usd > 0 ? json(hw.price_per_gpu_hour_usd) : json(nullptr)},
          {"tokens", base.tokens > 0 ? json(base.tokens) : json(nullptr)},
          {"tokens_source", std::string(engine::name(engine::tokens_basis(base)))},
          {"moe", m.is_moe()},
          {"heads", m.heads},
          {"layers", m.layers},
          {"framework", spec::framework(base.framework).id}};
  if (x.calibration) {
    q["calibration"] = calibration_json(calibration_use(x.calibration, hw, base));
    if (s.frameworks.size() > 1)  // the base plan's framework stands for the rows on it only
      q["calibration"]["line"] = q["calibration"].value("line", "") + " (rows on another framework: by their own stack)";
  }
  return q;
}

std::string tokens_basis_line(const json& q) {
  const std::string from = q.value("tokens_source", "");
  if (from == "plan" && q.value("tokens", json()).is_number())
    return fmt::format("days and cost: for {} tokens (--tokens)", units::format_count(q["tokens"].get<double>()));
  if (from == "per_billion_tokens")
    return "days and cost: per 1B tokens for a fine-tune (it has no compute-optimal length; --tokens sets the run)";
  if (from == "chinchilla_20_per_param")
    return "days and cost: for 20 tokens per parameter (Chinchilla; --tokens sets the run)";
  return "";
}

std::vector<std::string> search_header(const json& q) {
  std::vector<std::string> o;
  if (!q.is_object()) return o;
  o.push_back(fmt::format("{} on {} x {}, global batch {}, sequence {}; objective {}", q.value("model_name", ""),
                          q.value("gpus", 0), q.value("gpu_name", ""), q.value("global_batch", 0),
                          q.value("seq_len", 0), q.value("objective", "")));
  if (q.contains("searched")) {
    std::string s, f;
    for (const auto& d : q["searched"]) s += (s.empty() ? "" : ", ") + d.get<std::string>();
    for (const auto& d : q.value("fixed", json::array()))
      f += (f.empty() ? "" : ", ") + d.value("dimension", "") + " " + d.value("value", "");
    o.push_back(fmt::format("searched: {}; fixed: {}", s.empty() ? "nothing" : s, f.empty() ? "nothing" : f));
  }
  if (const auto sets = q.value("set_summary", ""); !sets.empty()) o.push_back(sets);
  if (q.contains("calibration") && q["calibration"].is_object()) o.push_back(q["calibration"].value("line", ""));
  if (const auto b = tokens_basis_line(q); !b.empty()) o.push_back(b);
  if (q.contains("gpu_name") && !price_known(q))
    o.push_back("cost: not shown, the profile has no price per GPU-hour (--price USD sets one)");
  if (q.contains("headroom")) {
    const double h = q["headroom"].get<double>(), cap = q.value("capacity_bytes", 0.0);
    o.push_back(fmt::format("memory headroom {}: a layout qualifies when its peak memory's upper end is at most {} of "
                            "{}",
                            percent_text(h), units::format_bytes(cap * (1 - h)), units::format_bytes(cap)));
  }
  return o;
}

std::vector<std::string> why_nothing_qualifies(const search::SearchResult& r, const json& q) {
  using units::format_whole;
  const auto& n = r.counts;
  std::vector<std::string> o;
  o.push_back(fmt::format("no configuration qualifies; {} layouts:", format_whole(n.enumerated)));
  if (n.shape > 0) {
    std::string why =
        n.shape == n.enumerated
            ? fmt::format("{} GPUs has no TP x PP x DP x CP factorisation with TP | {} heads, PP | {} layers and "
                          "CP | sequence {}{}",
                          q.value("gpus", 0), q.value("heads", 0), q.value("layers", 0), q.value("seq_len", 0),
                          q.value("fixed", json::array()).empty() ? "" : " at the fixed values")
            : "TP x PP x CP does not divide the GPU count, or TP, PP, CP or EP does not divide the heads, layers, "
              "sequence or experts";
    o.push_back(fmt::format("  {} do not divide ({})", format_whole(n.shape), why));
  }
  if (n.batch > 0)
    o.push_back(fmt::format("  {} have a global batch of {} that is not a multiple of micro-batch x DP",
                            format_whole(n.batch), q.value("global_batch", 0)));
  if (n.redundant > 0)
    o.push_back(fmt::format("  {} repeat another layout (ZeRO with nothing to shard) or have no whole interleaved "
                            "chunks",
                            format_whole(n.redundant)));
  if (n.plan > 0)
    o.push_back(fmt::format("  {} are refused by the plan checks{}", format_whole(n.plan),
                            r.first_problem.field.empty()
                                ? ""
                                : fmt::format(" (first: {}: {})", r.first_problem.field, r.first_problem.message)));
  const double h = q.value("headroom", search::kDefaultHeadroom), cap = q.value("capacity_bytes", 0.0);
  if (n.state > 0)
    o.push_back(fmt::format("  {} cannot hold the model state alone (weights, gradients, optimizer) in {}{}",
                            format_whole(n.state), units::format_bytes(cap * (1 - h)),
                            r.state_min_gpus > 0
                                ? fmt::format("; model state alone needs >= {} GPUs at ZeRO-3", r.state_min_gpus)
                                : ""));
  if (n.over_memory > 0)
    o.push_back(fmt::format("  {} exceed memory with {} headroom (peak memory's upper end above {} of {})",
                            format_whole(n.over_memory), percent_text(h), units::format_bytes(cap * (1 - h)),
                            units::format_bytes(cap)));
  if ((n.over_memory > 0 || n.state > 0) && h > 0)
    o.push_back(fmt::format("  --headroom 0 lets a layout use the whole {} (the {} kept free is for what the model "
                            "of the tensors does not see: fragmentation, NCCL and cuBLAS workspaces, the CUDA context)",
                            units::format_bytes(cap), percent_text(h)));
  return o;
}

json search_json(const search::SearchResult& r, const json& query, const search::SearchIntervals& iv,
                 bool feasible_times) {
  json j;
  j["schema"] = kSchema;
  j["query"] = query;
  const auto& n = r.counts;
  j["counts"] = {{"enumerated", n.enumerated}, {"pruned", n.pruned},         {"evaluated", n.evaluated},
                 {"infeasible", n.infeasible}, {"graphs", n.graphs},         {"do_not_divide", n.shape},
                 {"batch", n.batch},           {"redundant", n.redundant},   {"plan_refused", n.plan},
                 {"model_state", n.state},     {"over_memory", n.over_memory}};
  j["seconds"] = r.seconds;
  j["threads"] = r.threads;
  j["evaluated_per_s"] = r.seconds > 0 ? n.evaluated / r.seconds : 0.0;
  j["interval_level"] = iv.level;
  const auto& w = iv.within;
  j["within_best_interval"] = {{"count", w.known ? json(w.count) : json(nullptr)},
                               {"of", w.of},
                               {"level", iv.level},
                               {"step_time_s_at_most", w.known ? json(w.time_hi_s) : json(nullptr)},
                               {"note", w.known ? std::string() : within_best_line(iv)}};
  if (r.top.empty()) {
    j["why_nothing_qualifies"] = why_nothing_qualifies(r, query);
    j["state_min_gpus"] = r.state_min_gpus > 0 ? json(r.state_min_gpus) : json(nullptr);
  }
  const bool known = price_known(query);
  j["top"] = json::array();
  for (size_t i = 0; i < r.top.size(); ++i) {
    const auto& c = r.top[i];
    json e = layout_json(c.layout);
    e["gpu"] = query.value("gpu", "");
    e["model"] = query.value("model", "");
    e["tokens"] = c.tokens;
    e["step_time_s"] = c.step_time_s;
    e["mfu"] = c.mfu;
    e["hfu"] = c.hfu;
    e["peak_memory_bytes"] = whole_json(c.memory_bytes);
    e["peak_memory_hi_bytes"] = whole_json(c.memory_hi_bytes);
    e["tokens_per_s"] = c.tokens_per_s;
    e["bubble_fraction"] = c.bubble_fraction;
    e["exposed_comm_s"] = c.exposed_comm_s;
    if (c.all_to_all_s > 0) e["all_to_all_s"] = c.all_to_all_s;
    // A run failures outpace never completes: no days, GPU-hours or cost.
    e["wall_clock_days"] = c.completes ? json(c.days) : json(nullptr);
    e["gpu_hours"] = c.completes ? json(c.gpu_hours) : json(nullptr);
    e["cost_usd"] = known && c.completes ? json(c.cost_usd) : json(nullptr);
    e["score"] = c.score;
    e["traits"] = traits_json(c.traits);
    e["equivalent"] = json::array();
    for (const auto& l : c.equivalent) e["equivalent"].push_back(layout_json(l));
    e["equivalent_text"] = search::tie_text(c);
    e["predict_command"] = c.predict_command;
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
    if (j.value("schema", "") != kSchema) {
      error = fmt::format("not a search result of this version (schema {})", kSchema);
      return r;
    }
    const auto& c = j.at("counts");
    auto& n = r.counts;
    n.enumerated = c.at("enumerated").get<std::uint64_t>();
    n.pruned = c.at("pruned").get<std::uint64_t>();
    n.evaluated = c.at("evaluated").get<std::uint64_t>();
    n.infeasible = c.at("infeasible").get<std::uint64_t>();
    n.graphs = c.value("graphs", std::uint64_t{0});
    n.shape = c.value("do_not_divide", std::uint64_t{0});
    n.batch = c.value("batch", std::uint64_t{0});
    n.redundant = c.value("redundant", std::uint64_t{0});
    n.plan = c.value("plan_refused", std::uint64_t{0});
    n.state = c.value("model_state", std::uint64_t{0});
    n.over_memory = c.value("over_memory", std::uint64_t{0});
    r.seconds = j.value("seconds", 0.0);
    if (j.contains("state_min_gpus") && j["state_min_gpus"].is_number()) r.state_min_gpus = j["state_min_gpus"];
    for (const auto& e : j.at("top")) {
      search::Candidate k;
      if (auto why = layout_from_json(e, k.layout); !why.empty()) {
        error = why;
        return r;
      }
      k.step_time_s = e.at("step_time_s");
      k.mfu = e.at("mfu");
      k.hfu = e.at("hfu");
      k.memory_bytes = e.at("peak_memory_bytes");
      k.memory_hi_bytes = e.value("peak_memory_hi_bytes", k.memory_bytes);
      k.tokens_per_s = e.at("tokens_per_s");
      k.bubble_fraction = e.value("bubble_fraction", 0.0);
      k.exposed_comm_s = e.value("exposed_comm_s", 0.0);
      k.all_to_all_s = e.value("all_to_all_s", 0.0);
      k.completes = !(e.contains("wall_clock_days") && e["wall_clock_days"].is_null());
      k.days = k.completes ? e.value("wall_clock_days", 0.0) : 0.0;
      k.gpu_hours = e.contains("gpu_hours") && e["gpu_hours"].is_number() ? e["gpu_hours"].get<double>() : 0.0;
      k.cost_usd = e.contains("cost_usd") && e["cost_usd"].is_number() ? e["cost_usd"].get<double>() : 0.0;
      k.tokens = e.value("tokens", 0.0);
      k.score = e.at("score");
      k.predict_command = e.value("predict_command", "");
      for (const auto& x : e.value("equivalent", json::array())) {
        search::Layout l;
        if (auto why = layout_from_json(x, l); !why.empty()) {
          error = why;
          return r;
        }
        k.equivalent.push_back(l);
      }
      if (auto why = traits_from_json(e.at("traits"), k.traits); !why.empty()) {
        error = why;
        return r;
      }
      r.top.push_back(k);
    }
    r.feasible_times_kept = j.contains("feasible_step_times_s");
    if (r.feasible_times_kept) {
      r.feasible_step_times_s = j.at("feasible_step_times_s").get<std::vector<double>>();
      const std::uint64_t feasible = n.evaluated - n.infeasible;
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

std::string search_table(const search::SearchResult& r, const json& q, const search::SearchIntervals& iv, bool wide) {
  std::string o;
  for (const auto& line : search_header(q)) o += line + "\n";
  o += counts_line(r) + "\n";
  if (r.top.empty()) {
    o += "\n";
    for (const auto& line : why_nothing_qualifies(r, q)) o += line + "\n";
    return o;
  }
  o += within_best_line(iv) + "\n\n";
  return o + plain_table(rows_table(r, q, iv, wide)) + "\n" + ranking_legend(iv.top, iv.level);
}

std::string search_markdown(const search::SearchResult& r, const json& q, const search::SearchIntervals& iv) {
  std::string o = "## Search\n\n";
  for (const auto& line : search_header(q)) o += "- " + line + "\n";
  o += "- " + counts_line(r) + "\n\n";
  if (r.top.empty()) {
    const auto why = why_nothing_qualifies(r, q);
    o += why.front() + "\n\n";
    for (size_t i = 1; i < why.size(); ++i) o += "- " + why[i].substr(2) + "\n";
    return o;
  }
  o += within_best_line(iv) + "\n\n" + markdown(rows_table(r, q, iv)) + "\n";
  const std::string legend = ranking_legend(iv.top, iv.level);
  return legend.empty() ? o : o + legend;
}

std::string search_csv(const search::SearchResult& r, const json& q, const search::SearchIntervals& iv) {
  // first_stage_layers, last_stage_layers (0 = an even share) only when the table shows stages.
  const bool stages = stages_shown(r, q);
  std::string o = std::string("rank,gpu,model,framework,tokens,tp,pp,") +
                  (stages ? "first_stage_layers,last_stage_layers," : "") +
                  "dp,cp,ep,micro_batch,vpp,zero,sp,recompute,precision,"
                  "step_time_s,step_time_lo_s,step_time_hi_s,mfu,hfu,peak_memory_bytes,tokens_per_s,tokens_per_s_lo,"
                  "tokens_per_s_hi,wall_clock_days,gpu_hours,cost_usd,standing,distinguishable_from_best,equivalent,"
                  "predict_command\n";
  const auto end = [](const uncertainty::Interval& t, double x) { return t.valid() ? fmt::format("{}", x) : ""; };
  const bool known = price_known(q);
  for (size_t i = 0; i < r.top.size(); ++i) {
    const auto& c = r.top[i];
    const auto& l = c.layout;
    const auto& x = ranked_row(iv.top, i);
    const auto& t = x.time;
    const int d = search::distinguishable(x.standing);
    o += fmt::format("{},{},{},{},{},{},{},", i + 1, q.value("gpu", ""), q.value("model", ""),
                     spec::framework(l.framework).id, c.tokens, l.tp, l.pp);
    if (stages) o += fmt::format("{},{},", l.first_stage_layers, l.last_stage_layers);
    o += fmt::format("{},{},{},{},{},{},{},{},{},", l.dp, l.cp, l.ep, l.micro_batch, l.vpp, l.zero, l.sp,
                     spec::to_string(l.recompute), spec::to_string(l.precision));
    o += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", c.step_time_s,
                     end(t, t.time_lo(c.step_time_s)), end(t, t.time_hi(c.step_time_s)), c.mfu, c.hfu, c.memory_bytes,
                     c.tokens_per_s, end(t, t.rate_lo(c.tokens_per_s)), end(t, t.rate_hi(c.tokens_per_s)), c.days,
                     c.gpu_hours, known ? fmt::format("{}", c.cost_usd) : "", search::name(x.standing),
                     d < 0 ? "" : (d == 1 ? "true" : "false"), csv_quote(search::tie_text(c)),
                     csv_quote(c.predict_command));
  }
  return o;
}

namespace {

/// tokens per US dollar: tokens/s x 3600 / (GPUs x price per GPU-hour).
double tokens_per_usd(const search::Candidate& c, const json& q) {
  return c.tokens_per_s * 3600.0 / (q.value("gpus", 1) * q["price_per_gpu_hour_usd"].get<double>());
}

}  // namespace

int gpu_scan_winner(const std::vector<GpuSearch>& runs, const GpuScan& scan) {
  if (scan.kind == GpuScan::kNone) return -1;
  int w = -1;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].result.top.empty()) continue;
    const auto& c = runs[i].result.top.front();
    if (w < 0) {
      w = static_cast<int>(i);
      continue;
    }
    const auto& b = runs[w].result.top.front();
    // Strictly better, so a tie keeps the earlier GPU.
    if (scan.by_cost && scan.kind == GpuScan::kDeadline ? c.cost_usd < b.cost_usd : c.days < b.days)
      w = static_cast<int>(i);
  }
  return w;
}

namespace {

/// The scan's answer: "deadline 30d: the cheapest is 512 x NVIDIA B200 SXM 180GB, 19.0 days, $1.16M".
std::string scan_answer(const std::vector<GpuSearch>& runs, const GpuScan& scan, int w) {
  const bool dl = scan.kind == GpuScan::kDeadline;
  const std::string ask = dl ? "deadline " + scan.limit_text : "budget " + scan.limit_text;
  if (w < 0)
    return fmt::format("{}: no GPU kind {} up to --max-gpus", ask, dl ? "finishes the run within it" : "runs within it");
  const auto& g = runs[w];
  const auto& c = g.result.top.front();
  return fmt::format("{}: the {} is {} x {} ({}), {:.1f} days, {}", ask,
                     dl && scan.by_cost ? "cheapest" : "fastest", g.query.value("gpus", 0),
                     g.query.value("gpu_name", ""), g.query.value("gpu", ""), c.days,
                     cost_text(c.cost_usd, price_known(g.query)));
}

}  // namespace

std::string gpu_table(const std::vector<GpuSearch>& runs_in, bool md, const GpuScan& scan, bool wide) {
  const bool scanning = scan.kind != GpuScan::kNone;
  // A scan's rows in the order of its answer (cheapest or fastest first), those without one last.
  std::vector<GpuSearch> runs = runs_in;
  if (scanning)
    std::stable_sort(runs.begin(), runs.end(), [&](const GpuSearch& a, const GpuSearch& b) {
      if (a.result.top.empty() || b.result.top.empty()) return !a.result.top.empty() && b.result.top.empty();
      const auto &x = a.result.top.front(), &y = b.result.top.front();
      return scan.by_cost && scan.kind == GpuScan::kDeadline ? x.cost_usd < y.cost_usd : x.days < y.days;
    });
  const int winner = gpu_scan_winner(runs, scan);
  text::Table t;
  // The step and tokens/s columns only with --wide: the rest keep to 120 columns.
  const bool all_columns = wide || md;
  t.head = {"gpu"};
  if (scanning) t.head.push_back("GPUs");
  t.head.push_back("best layout");
  if (all_columns) t.head.insert(t.head.end(), {"step", "tokens/s"});
  t.head.insert(t.head.end(), {"MFU", "mem/GPU", "days", "cost", "tokens/$"});
  t.numeric.assign(t.head.size(), true);
  t.numeric[0] = false;
  t.numeric[scanning ? 2 : 1] = false;
  std::string notes;
  for (const auto& g : runs) {
    const auto& q = g.query;
    std::vector<std::string> row = {q.value("gpu", "")};
    if (g.result.top.empty()) {
      if (scanning) row.push_back("");
      row.push_back(g.none.empty() ? "no configuration qualifies" : g.none);
      row.resize(t.head.size());
      t.rows.push_back(std::move(row));
      if (!g.none.empty()) continue;
      const auto why = why_nothing_qualifies(g.result, q);
      notes += q.value("gpu", "") + ": " + why.front() + "\n";
      for (size_t i = 1; i < why.size(); ++i) notes += why[i] + "\n";
      continue;
    }
    const auto& c = g.result.top.front();
    const bool known = price_known(q);
    if (scanning) row.push_back(std::to_string(q.value("gpus", 0)));
    row.push_back(layout_label(c.layout, q.value("moe", false), searched(q, "framework")));
    if (all_columns) row.insert(row.end(), {units::format_seconds(c.step_time_s), units::format_count(c.tokens_per_s)});
    row.insert(row.end(), {units::format_percent(c.mfu), units::format_bytes(c.memory_bytes),
                           fmt::format("{:.1f}", c.days), cost_text(c.cost_usd, known),
                           known ? units::format_count(tokens_per_usd(c, q)) : "unknown"});
    t.rows.push_back(std::move(row));
  }
  std::string o;
  if (scanning) o += (md ? "**" : "") + scan_answer(runs, scan, winner) + (md ? "**\n\n" : "\n");
  if (!runs.empty()) {
    auto head = search_header(runs.front().query);
    const auto& q0 = runs.front().query;
    head.front() = scanning ? fmt::format("{}, global batch {}, sequence {}; objective {}; per GPU kind, the {} "
                                          "count that {}",
                                          q0.value("model_name", ""), q0.value("global_batch", 0),
                                          q0.value("seq_len", 0), q0.value("objective", ""),
                                          scan.kind == GpuScan::kBudget ? "fastest"
                                          : scan.by_cost                ? "cheapest"
                                                                        : "fewest",
                                          scan.kind == GpuScan::kBudget ? "the budget buys" : "meets the deadline")
                            : fmt::format("{} on {} GPUs of each kind, global batch {}, sequence {}; objective {}; one "
                                          "best row per GPU",
                                          q0.value("model_name", ""), q0.value("gpus", 0), q0.value("global_batch", 0),
                                          q0.value("seq_len", 0), q0.value("objective", ""));
    // Capacities differ between the GPUs: the headroom as a fraction.
    if (head.back().starts_with("memory headroom"))
      head.back() = fmt::format("memory headroom {}: a layout qualifies when its peak memory's upper end is at most "
                                "{} of the GPU's capacity",
                                percent_text(q0.value("headroom", search::kDefaultHeadroom)),
                                percent_text(1 - q0.value("headroom", search::kDefaultHeadroom)));
    // A --calibration file: the GPUs whose rows it applied to (each GPU's query says).
    if (const json& c = q0.value("calibration", json()); c.is_object()) {
      std::string on;
      int applied = 0;
      for (const auto& g : runs)
        if (g.query.value("calibration", json()).value("applied", false))
          on += (applied++ ? ", " : "") + g.query.value("gpu", "");
      for (auto& h : head)
        if (h == c.value("line", ""))
          h = fmt::format("calibration {} ({} runs) applied to {} of {} GPUs{}", c.value("file", ""),
                          c.value("runs", json::array()).size(), applied, runs.size(),
                          applied ? " (" + on + ")" : "");
    }
    for (auto& h : head) o += (md ? "- " : "") + h + "\n";
    o += "\n";
  }
  o += md ? markdown(t) : plain_table(t);
  for (const auto& n : scan.notes) notes += text::wrap("note: " + n, 120, "  ");
  if (!notes.empty()) o += "\n" + notes;
  return o;
}

json gpu_json(const std::vector<GpuSearch>& runs, const GpuScan& scan) {
  json j;
  j["schema"] = kSchema;
  if (scan.kind != GpuScan::kNone) {
    const int w = gpu_scan_winner(runs, scan);
    j["scan"] = {{"kind", scan.kind == GpuScan::kDeadline ? "deadline" : "budget"},
                 {"limit", scan.limit_text},
                 {"by", scan.by_cost && scan.kind == GpuScan::kDeadline ? "cost" : "time"},
                 {"winner", w < 0 ? json(nullptr) : json(runs[w].query.value("gpu", ""))},
                 {"winner_gpus", w < 0 ? json(nullptr) : json(runs[w].query.value("gpus", 0))},
                 {"notes", scan.notes}};
  }
  j["gpus"] = json::array();
  for (const auto& g : runs) {
    const search::SearchIntervals none;
    json one = search_json(g.result, g.query, none);
    if (!g.none.empty()) one["none"] = g.none;
    if (!g.result.top.empty() && price_known(g.query))
      one["tokens_per_usd"] = tokens_per_usd(g.result.top.front(), g.query);
    else one["tokens_per_usd"] = nullptr;
    j["gpus"].push_back(std::move(one));
  }
  return j;
}

std::string gpu_csv(const std::vector<GpuSearch>& runs) {
  std::string o = "gpu,gpu_name,model,framework,tokens,tp,pp,dp,cp,ep,micro_batch,vpp,zero,sp,recompute,precision,"
                  "step_time_s,tokens_per_s,mfu,peak_memory_bytes,wall_clock_days,gpu_hours,cost_usd,tokens_per_usd,"
                  "predict_command\n";
  for (const auto& g : runs) {
    const auto& q = g.query;
    if (g.result.top.empty()) {
      o += fmt::format("{},{},{},,,,,,,,,,,,,,,,,,,,,,\n", q.value("gpu", ""), csv_quote(q.value("gpu_name", "")),
                       q.value("model", ""));
      continue;
    }
    const auto& c = g.result.top.front();
    const auto& l = c.layout;
    const bool known = price_known(q);
    o += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},", q.value("gpu", ""),
                     csv_quote(q.value("gpu_name", "")), q.value("model", ""), spec::framework(l.framework).id,
                     c.tokens, l.tp, l.pp, l.dp, l.cp, l.ep, l.micro_batch, l.vpp, l.zero, l.sp,
                     spec::to_string(l.recompute), spec::to_string(l.precision));
    o += fmt::format("{},{},{},{},{},{},{},{},{}\n", c.step_time_s, c.tokens_per_s, c.mfu, c.memory_bytes, c.days,
                     c.gpu_hours, known ? fmt::format("{}", c.cost_usd) : "",
                     known ? fmt::format("{}", tokens_per_usd(c, q)) : "", csv_quote(c.predict_command));
  }
  return o;
}

}  // namespace ridgeline::report
