// Prediction intervals where predict and report show a figure. Each expected
// bound comes from the definition (include/ridgeline/uncertainty/interval.hpp),
// computed here from the shipped residuals rather than pasted from an output,
// so the tests hold whenever validation/residuals.json is regenerated:
//   - a time or a total proportional to it (days, GPU-hours, cost, energy) is
//     expected in [t lo, t hi]; a rate (tokens/s, MFU) in [v / hi, v / lo];
//     lo <= 1 <= hi, so the interval holds the point estimate;
//   - a higher level widens the interval or leaves it as it is (z grows with
//     the level; the bounds are mu -+ z s, widened to hold 0);
//   - peak memory's range is memory_interval's, the same at every level, and
//     "fits at the upper bound" compares its upper end with the capacity;
//   - without residuals no interval is drawn, and every view says why
//     instead of printing a number.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ridgeline/report/capacity_text.hpp"
#include "ridgeline/report/capacity_view.hpp"
#include "ridgeline/report/prediction_view.hpp"
#include "ridgeline/report/svg.hpp"
#include "ridgeline/search/compare.hpp"
#include "ridgeline/uncertainty/interval.hpp"
#include "ridgeline/units/units.hpp"
#include "test_support.hpp"

using namespace ridgeline;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

/// Llama-3-8B on 8 H100s, ZeRO-3: fits, one micro-batch per GPU.
spec::PlanSpec zero3_plan() {
  spec::PlanSpec p = test::plan(1, 4096);
  p.parallel.dp = 8;
  p.parallel.zero = 3;
  p.global_batch = 8;
  return p;
}

struct Case {
  spec::HardwareSpec gpu = test::gpu("h100_sxm");
  spec::ModelSpec model = test::model("llama3_8b");
  spec::PlanSpec plan = zero3_plan();
  engine::Prediction pred;
  Case() { pred = engine::evaluate(model, plan, gpu); }
  report::Inputs inputs(double level = uncertainty::kDefaultLevel,
                        const uncertainty::IntervalModel* m = nullptr) const {
    return report::Inputs{&gpu, &model, &plan, level, m};
  }
  uncertainty::Interval interval(double level = uncertainty::kDefaultLevel) const {
    return uncertainty::shipped().run_interval(uncertainty::traits_of(pred, plan, gpu), level);
  }
};

/// [lo, hi] of a JSON pair.
std::pair<double, double> pair_of(const json& j) {
  REQUIRE(j.is_array());
  REQUIRE(j.size() == 2);
  return {j[0].get<double>(), j[1].get<double>()};
}

/// Every number in `j` is finite (NaN and infinity never reach a document).
void check_finite(const json& j, const std::string& path = "") {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) check_finite(it.value(), path + "." + it.key());
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) check_finite(j[i], path + "[" + std::to_string(i) + "]");
  } else if (j.is_number()) {
    CAPTURE(path);
    CHECK(std::isfinite(j.get<double>()));
  }
}

bool has_nan_or_inf(const std::string& s) {
  for (const char* w : {"nan", "NaN", "inf", "Inf"})
    if (s.find(w) != std::string::npos) return true;
  return false;
}

using ridgeline::test::slurp;

}  // namespace

TEST_CASE("intervals: the shipped residuals give every prediction an interval that holds its point") {
  REQUIRE_FALSE(uncertainty::shipped().empty());
  const Case c;
  const auto iv = c.interval();
  REQUIRE(iv.valid());
  CHECK(iv.lo <= 1);
  CHECK(iv.hi >= 1);
  CHECK(iv.rows >= uncertainty::kMinPoolRows);
}

TEST_CASE("intervals: predict JSON bounds are the point times the shipped interval's factors") {
  const Case c;
  const auto iv = c.interval();
  const json j = report::prediction_json(c.pred, c.inputs());
  const auto& s = c.pred.step;
  const auto [t_lo, t_hi] = pair_of(j["step"]["step_time_s_interval"]);
  CHECK(t_lo == doctest::Approx(s.time_s * iv.lo));
  CHECK(t_hi == doctest::Approx(s.time_s * iv.hi));
  CHECK(t_lo <= s.time_s);
  CHECK(t_hi >= s.time_s);
  const auto [r_lo, r_hi] = pair_of(j["step"]["tokens_per_s_interval"]);
  CHECK(r_lo == doctest::Approx(s.tokens_per_s / iv.hi));
  CHECK(r_hi == doctest::Approx(s.tokens_per_s / iv.lo));
  const auto [m_lo, m_hi] = pair_of(j["step"]["mfu_interval"]);
  CHECK(m_lo == doctest::Approx(s.mfu / iv.hi));
  CHECK(m_hi == doctest::Approx(s.mfu / iv.lo));
  CHECK(m_lo <= s.mfu);
  CHECK(m_hi >= s.mfu);
  // The run's totals are steps x step time: they scale with it.
  const auto& t = c.pred.totals;
  const auto [d_lo, d_hi] = pair_of(j["training"]["wall_clock_days_interval"]);
  CHECK(d_lo == doctest::Approx(t.wall_s / 86400.0 * iv.lo));
  CHECK(d_hi == doctest::Approx(t.wall_s / 86400.0 * iv.hi));
  const auto [c_lo, c_hi] = pair_of(j["training"]["cost_usd_interval"]);
  CHECK(c_lo == doctest::Approx(t.cost_usd * iv.lo));
  CHECK(c_hi == doctest::Approx(t.cost_usd * iv.hi));
  CHECK(pair_of(j["training"]["gpu_hours_interval"]).second == doctest::Approx(t.gpu_hours * iv.hi));
  CHECK(pair_of(j["training"]["energy_kwh_interval"]).first == doctest::Approx(t.energy_kwh * iv.lo));
  // The interval says where it came from.
  const auto& k = j["interval"];
  CHECK(k["level"].get<double>() == uncertainty::kDefaultLevel);
  CHECK(k["pool"] == iv.pool);
  CHECK(k["rows"] == iv.rows);
  CHECK(k["fallback"] == iv.fallback);
  CHECK(k["note"] == iv.note);
  // Peak memory: the allocator's range, and fits judged at its upper end too.
  const auto mi = uncertainty::memory_interval(c.pred.memory);
  const auto [b_lo, b_hi] = pair_of(j["memory"]["peak_memory_bytes_interval"]);
  CHECK(b_lo == std::llround(mi.lo));  // whole bytes
  CHECK(b_hi == std::llround(mi.hi));
  CHECK(b_lo <= c.pred.memory.total);
  CHECK(b_hi >= c.pred.memory.total);
  CHECK(j["memory"]["fits_at_upper_bound"] == (mi.hi <= c.pred.memory.capacity));
  CHECK(j["memory"]["interval_basis"] == mi.basis);
  check_finite(j);
}

TEST_CASE("intervals: a GEMM or attention kernel has the kernel pools' interval; other kernels none") {
  const Case c;
  const auto in = c.inputs();
  const json j = report::prediction_json(c.pred, in);
  int gemm = 0, other = 0;
  for (const auto& k : j["kernels"]) {
    const std::string cls = k["class"];
    if (cls == "gemm" || cls == "attention") {
      uncertainty::KernelTraits t;
      t.kind = cls == "gemm" ? uncertainty::KernelKind::kGemm : uncertainty::KernelKind::kAttention;
      t.generation = c.gpu.generation;
      REQUIRE(spec::parse_dtype(k["dtype"].get<std::string>()));
      t.dtype = *spec::parse_dtype(k["dtype"].get<std::string>());
      const auto iv = uncertainty::shipped().kernel_interval(t, uncertainty::kDefaultLevel);
      REQUIRE(iv.valid());
      const auto [lo, hi] = pair_of(k["time_s_interval"]);
      CHECK(lo == doctest::Approx(k["time_s"].get<double>() * iv.lo));
      CHECK(hi == doctest::Approx(k["time_s"].get<double>() * iv.hi));
      ++gemm;
    } else {
      CHECK(k["time_s_interval"].is_null());
      ++other;
    }
  }
  CHECK(gemm > 0);
  CHECK(other > 0);
  // The CSV: the same bounds as its last two columns, empty where there are none.
  const std::string csv = report::kernels_csv(c.pred, in);
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);
  CHECK(line == "name,phase,class,dtype,count,flops,hbm_bytes,intensity,bound,time_s,share,time_lo_s,time_hi_s");
  int with = 0, without = 0;
  while (std::getline(lines, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) cells.push_back(cell);
    if (line.back() == ',') cells.push_back("");
    REQUIRE(cells.size() == 13);
    if (cells[2] == "gemm" || cells[2] == "attention") {
      CHECK(std::stod(cells[11]) <= std::stod(cells[9]));
      CHECK(std::stod(cells[12]) >= std::stod(cells[9]));
      ++with;
    } else {
      CHECK(cells[11].empty());
      CHECK(cells[12].empty());
      ++without;
    }
  }
  CHECK(with > 0);
  CHECK(without > 0);
  CHECK_FALSE(has_nan_or_inf(csv));
}

TEST_CASE("intervals: a higher level gives a wider or equal interval, and memory's range does not move") {
  const Case c;
  double lo = 2, hi = 0;
  json previous;
  for (double level : {0.5, 0.8, 0.9, 0.95, 0.99}) {
    CAPTURE(level);
    const json j = report::prediction_json(c.pred, c.inputs(level));
    CHECK(j["interval"]["level"].get<double>() == level);
    const auto [t_lo, t_hi] = pair_of(j["step"]["step_time_s_interval"]);
    CHECK(t_lo <= lo * c.pred.step.time_s * (1 + 1e-12));
    CHECK(t_hi >= hi * c.pred.step.time_s * (1 - 1e-12));
    lo = t_lo / c.pred.step.time_s;
    hi = t_hi / c.pred.step.time_s;
    if (!previous.is_null()) CHECK(j["memory"]["peak_memory_bytes_interval"] == previous["memory"]["peak_memory_bytes_interval"]);
    previous = j;
  }
  CHECK(hi > lo);
}

TEST_CASE("intervals: the predict table shows each figure's interval, its pool and memory's margin") {
  const Case c;
  const auto iv = c.interval();
  const std::string t = report::prediction_table(c.pred, c.inputs());
  using namespace units;
  const auto& s = c.pred.step;
  CAPTURE(t);
  CHECK(t.find("step time          " + format_seconds(s.time_s) + "   80% interval " +
               report::text::range(s.time_s * iv.lo, s.time_s * iv.hi, format_seconds)) != std::string::npos);
  CHECK(t.find(format_count(s.tokens_per_s) + " tokens/s   80% interval " +
               report::text::range(s.tokens_per_s / iv.hi, s.tokens_per_s / iv.lo, report::text::tokens_per_s)) !=
        std::string::npos);
  CHECK(t.find(format_percent(s.mfu) + " of the dense bf16 peak (989 TFLOP/s)   80% interval " +
               report::text::range(s.mfu / iv.hi, s.mfu / iv.lo, format_percent)) != std::string::npos);
  CHECK(t.find(fmt::format("  interval           80%, from {}, {} validated runs; held out of sample for {:.0f}% of "
                           "{} runs\n",
                           iv.pool, iv.rows, 100 * iv.held_out_covered, iv.held_out_rows)) != std::string::npos);
  const auto mi = uncertainty::memory_interval(c.pred.memory);
  CHECK(t.find("  memory range       " + report::text::range(mi.lo, mi.hi, format_bytes) +
               "   fits at the upper bound: " + (mi.fits_high ? "yes" : "only at the point estimate") + "\n") !=
        std::string::npos);
  CHECK(t.find("80% interval: ") != std::string::npos);  // the run's totals
  CHECK_FALSE(has_nan_or_inf(t));
}

TEST_CASE("intervals: a range writes a shared unit once") {
  using namespace units;
  CHECK(report::text::range(0.690, 0.910, format_seconds) == "690–910 ms");
  CHECK(report::text::range(0.00095, 0.0012, format_seconds) == "950 us–1.20 ms");
  CHECK(report::text::range(0.351, 0.463, format_percent) == "35.1–46.3%");
  CHECK(report::text::range(3.1e6, 4.1e6, report::text::usd) == "$3.10M–$4.10M");
  CHECK(report::text::range(11.04, 14.46, report::text::days) == "11.0–14.5 days");
  CHECK(report::text::level(0.8) == "80%");
  CHECK(report::text::level(0.975) == "97.5%");
  uncertainty::MemoryInterval m;
  m.fits_point = m.fits_high = true;
  CHECK(report::text::fits_at_upper_bound(m) == "yes");
  m.fits_high = false;
  CHECK(report::text::fits_at_upper_bound(m) == "only at the point estimate");
  m.fits_point = false;
  CHECK(report::text::fits_at_upper_bound(m) == "no");
}

TEST_CASE("intervals: without residuals no interval is drawn, and the views say why") {
  const Case c;
  const uncertainty::IntervalModel none;
  const auto in = c.inputs(0.8, &none);
  const json j = report::prediction_json(c.pred, in);
  CHECK(j["step"]["step_time_s_interval"].is_null());
  CHECK(j["step"]["mfu_interval"].is_null());
  CHECK(j["training"]["cost_usd_interval"].is_null());
  CHECK(j["interval"]["rows"] == 0);
  const std::string note = j["interval"]["note"];
  CHECK(note.find("no residuals to draw an interval from") == 0);
  // Memory's range needs no residuals.
  CHECK(j["memory"]["peak_memory_bytes_interval"].is_array());
  check_finite(j);
  const std::string t = report::prediction_table(c.pred, in);
  CHECK(t.find("% interval") == std::string::npos);
  CHECK(t.find("  interval           none: " + note + "\n") != std::string::npos);
  CHECK(t.find("memory range") != std::string::npos);
}

TEST_CASE("intervals: the capacity view bounds its answer, techniques and totals by the same definition") {
  const Case c;
  report::CapacityInputs in;
  in.gpu = &c.gpu;
  in.model = &c.model;
  in.plan = c.plan;
  in.prediction = c.pred;
  in.interval_level = 0.9;
  in.vary = {{"recompute", {"none", "full"}}};
  std::string error;
  in.compare_rows = search::compare(c.model, c.plan, c.gpu, in.vary, true, error);
  REQUIRE(error.empty());
  REQUIRE(in.compare_rows.size() == 2);
  const auto v = report::make_capacity_view(in);
  const auto iv = c.interval(0.9);
  const auto& a = v.answer;
  CHECK(v.interval_level == 0.9);
  CHECK(a.interval.pool == iv.pool);
  CHECK(a.step_time_range.lo == doctest::Approx(a.step_time_s * iv.lo));
  CHECK(a.step_time_range.hi == doctest::Approx(a.step_time_s * iv.hi));
  CHECK(a.mfu_range.lo == doctest::Approx(a.mfu / iv.hi));
  CHECK(a.days_range.hi == doctest::Approx(a.days * iv.hi));
  CHECK(a.cost_range.lo == doctest::Approx(a.cost_usd * iv.lo));
  CHECK(a.tokens_range.lo == a.tokens);  // no budget: the tokens are fixed
  for (size_t i = 0; i < v.techniques.size(); ++i) {
    CAPTURE(i);
    const auto& r = v.techniques[i];
    const auto& row = in.compare_rows[i];
    const auto riv = uncertainty::shipped().run_interval(uncertainty::traits_of(row.pred, row.plan, c.gpu), 0.9);
    CHECK(r.step_time_range.lo == doctest::Approx(r.step_time_s * riv.lo));
    CHECK(r.step_time_range.hi == doctest::Approx(r.step_time_s * riv.hi));
    CHECK(r.memory_range.hi == uncertainty::memory_interval(row.pred.memory).hi);
  }
  const json j = report::capacity_json(v);
  CHECK(j["interval_level"].get<double>() == 0.9);
  CHECK(pair_of(j["answer"]["step_time_s_interval"]).first == doctest::Approx(a.step_time_s * iv.lo));
  CHECK(pair_of(j["answer"]["days_interval"]).second == doctest::Approx(a.days * iv.hi));
  CHECK(pair_of(j["answer"]["memory"]["total_bytes_interval"]).second == std::round(a.memory_range.hi));  // whole bytes
  CHECK(j["answer"]["memory"]["fits_at_upper_bound"] == a.memory_range.fits_high);
  CHECK(pair_of(j["techniques"]["rows"][1]["peak_memory_bytes_interval"]).first == std::round(v.techniques[1].memory_range.lo));
  check_finite(j);
  // The printers: the answer's notes open with the interval, the headline has the run's range.
  const auto facts = report::text::answer(v);
  bool step = false, interval = false;
  for (const auto& f : facts) {
    if (f.label == "Step time")
      step = f.note.rfind("90% interval " + report::text::range(a.step_time_range.lo, a.step_time_range.hi,
                                                                 units::format_seconds),
                          0) == 0;
    if (f.label == "Prediction interval") interval = f.value == "90%" && f.note.find(iv.pool) != std::string::npos;
  }
  CHECK(step);
  CHECK(interval);
  CHECK(report::text::headline(v).find("(90% interval " +
                                       report::text::range(a.days_range.lo, a.days_range.hi, report::text::days)) !=
        std::string::npos);
}

TEST_CASE("intervals: with a budget the totals are the budget's and the tokens it buys vary") {
  const Case c;
  report::CapacityInputs in;
  in.gpu = &c.gpu;
  in.model = &c.model;
  in.plan = c.plan;
  in.prediction = c.pred;
  in.budget = {report::BudgetKind::kUsd, 10000};
  const auto v = report::make_capacity_view(in);
  const auto iv = c.interval();
  const auto& a = v.answer;
  // A slower step (t hi) buys fewer tokens: tokens / hi.
  CHECK(a.tokens_range.lo == doctest::Approx(a.tokens / iv.hi));
  CHECK(a.tokens_range.hi == doctest::Approx(a.tokens / iv.lo));
  CHECK(a.cost_range.lo == a.cost_usd);
  CHECK(a.cost_range.hi == a.cost_usd);
  CHECK(a.days_range.hi == a.days);
  CHECK(report::text::headline(v).find("(80% interval " + report::text::range(a.tokens_range.lo, a.tokens_range.hi,
                                                                              units::format_count) +
                                       " tokens)") != std::string::npos);
}

TEST_CASE("intervals: the charts draw error bars at the view's bounds, inside the chart") {
  const Case c;
  report::CapacityInputs in;
  in.gpu = &c.gpu;
  in.model = &c.model;
  in.plan = c.plan;
  in.prediction = c.pred;
  in.vary = {{"recompute", {"none", "selective", "full"}}};
  std::string error;
  in.compare_rows = search::compare(c.model, c.plan, c.gpu, in.vary, true, error);
  REQUIRE(error.empty());
  const auto v = report::make_capacity_view(in);
  // Attributes of each error bar: its data values and coordinates.
  const auto bars = [](const std::string& svg) {
    std::vector<std::map<std::string, double>> out;
    for (size_t b = svg.find("<line class=\"error-bar\""); b != std::string::npos;
         b = svg.find("<line class=\"error-bar\"", b + 1)) {
      const std::string tag = svg.substr(b, svg.find('>', b) - b);
      std::map<std::string, double> a;
      for (size_t q = tag.find("=\""); q != std::string::npos; q = tag.find("=\"", q + 1)) {
        size_t k = q;
        while (k > 0 && tag[k - 1] != ' ') --k;
        const size_t e = tag.find('"', q + 2);
        const std::string key = tag.substr(k, q - k), value = tag.substr(q + 2, e - q - 2);
        char* end = nullptr;
        const double x = std::strtod(value.c_str(), &end);
        if (!value.empty() && *end == '\0') a[key] = x;  // the numbers: coordinates and data values
      }
      out.push_back(a);
    }
    return out;
  };
  const auto view_box = [](const std::string& svg, double& w, double& h) {
    const size_t b = svg.find("viewBox=\"0 0 ") + 13;
    std::istringstream(svg.substr(b, svg.find('"', b) - b)) >> w >> h;
  };
  double w = 0, h = 0;
  const std::string mem = report::svg::memory(v);
  view_box(mem, w, h);
  const auto mb = bars(mem);
  REQUIRE(mb.size() == v.techniques.size());
  for (size_t i = 0; i < mb.size(); ++i) {
    CAPTURE(i);
    CHECK(mb[i].at("data-lo-bytes") == std::round(v.techniques[i].memory_range.lo));  // whole bytes, as the JSON
    CHECK(mb[i].at("data-hi-bytes") == std::round(v.techniques[i].memory_range.hi));
    for (const char* x : {"x1", "x2"}) CHECK((mb[i].at(x) >= 0 && mb[i].at(x) <= w));
    for (const char* y : {"y1", "y2"}) CHECK((mb[i].at(y) >= 0 && mb[i].at(y) <= h));
    CHECK(mb[i].at("x1") <= mb[i].at("x2"));
  }
  const std::string time = report::svg::time_breakdown(v);
  view_box(time, w, h);
  const auto tb = bars(time);
  REQUIRE(tb.size() == 1);
  CHECK(tb[0].at("data-lo-s") == v.answer.step_time_range.lo);
  CHECK(tb[0].at("data-hi-s") == v.answer.step_time_range.hi);
  CHECK(tb[0].at("data-level") == uncertainty::kDefaultLevel);
  for (const char* x : {"x1", "x2"}) CHECK((tb[0].at(x) >= 0 && tb[0].at(x) <= w));
  CHECK(time.find("data-interval=\"step\"") != std::string::npos);
  // Without residuals the time chart has no error bar and says so; memory keeps its range.
  const uncertainty::IntervalModel none;
  in.intervals = &none;
  const auto bare = report::make_capacity_view(in);
  const std::string time0 = report::svg::time_breakdown(bare);
  CHECK(bars(time0).empty());
  CHECK(time0.find("data-interval=\"none\"") != std::string::npos);
  CHECK(bars(report::svg::memory(bare)).size() == bare.techniques.size());
}

TEST_CASE("intervals: --interval-level on predict and report: the level asked for, or one exact line and exit 2") {
  const std::string base = "predict --gpu h100_sxm --model llama3_8b --seq 4096 --dp 8 --zero 3 --global-batch 8 ";
  const auto r = test::run_cli(base + "--format json --interval-level 0.9");
  REQUIRE(r.status == 0);
  const json j = json::parse(r.out);
  CHECK(j["interval"]["level"].get<double>() == 0.9);
  const Case c;  // the same plan
  REQUIRE(j["step"]["step_time_s"].get<double>() == doctest::Approx(c.pred.step.time_s));
  const auto iv = c.interval(0.9);
  CHECK(pair_of(j["step"]["step_time_s_interval"]).second == doctest::Approx(j["step"]["step_time_s"].get<double>() * iv.hi));
  const auto table = test::run_cli(base + "--interval-level 0.95");
  CHECK(table.status == 0);
  CHECK(table.out.find("95% interval") != std::string::npos);
  CHECK(table.out.find("  interval           95%, from ") != std::string::npos);
  const auto csv = test::run_cli(base + "--format csv --kernels");
  CHECK(csv.status == 0);
  CHECK(csv.out.rfind("name,phase,class,dtype,count,flops,hbm_bytes,intensity,bound,time_s,share,time_lo_s,time_hi_s\n",
                      0) == 0);
  for (const char* level : {"1.5", "0.3", "0.995"}) {
    CAPTURE(level);
    const auto bad = test::run_cli(base + "--interval-level " + level);
    CHECK(bad.status == 2);
    CHECK(bad.out.empty());
    CHECK(bad.err.rfind("error: --interval-level: expected a level from 0.5 to 0.99", 0) == 0);
    CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
  }
  CHECK(test::run_cli(base + "--interval-level 1.5").err ==
        "error: --interval-level: expected a level from 0.5 to 0.99 (0.8 = an 80% interval), got 1.5\n");
  // report: the same message, and no file written.
  const fs::path dir = fs::temp_directory_path() / ("ridgeline_interval_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto rep = test::run_cli("report --gpu h100_sxm --model llama3_8b --interval-level 1.5 --output " +
                                 (dir / "cap").string());
  CHECK(rep.status == 2);
  CHECK(rep.err == "error: --interval-level: expected a level from 0.5 to 0.99 (0.8 = an 80% interval), got 1.5\n");
  CHECK(fs::is_empty(dir));
  const auto ok = test::run_cli("report --gpu h100_sxm --model llama3_8b --seq 4096 --dp 8 --zero 3 --global-batch 8 "
                                "--interval-level 0.9 --output " + (dir / "cap").string());
  CHECK(ok.status == 0);
  const json doc = json::parse(slurp(dir / "cap.json"));
  CHECK(doc["interval_level"].get<double>() == 0.9);
  CHECK(doc["answer"]["interval"]["level"].get<double>() == 0.9);
  CHECK(doc["command"].get<std::string>().find("--interval-level 0.9") != std::string::npos);
  CHECK(slurp(dir / "cap.md").find("90% interval") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("intervals: a plan whose comparable pool is too thin says which pool it fell back to") {
  // GPUs with few or no published end-to-end runs of their own: one of them
  // falls back (found from the shipped residuals, not assumed).
  std::string args;
  json doc;
  for (const char* id : {"rtx_5090", "l4", "rtx_4090", "mi300x", "a10", "b200"}) {
    const std::string a = std::string("predict --gpu ") + id + " --model llama3_8b --seq 2048 --finetune lora";
    const auto r = test::run_cli(a + " --format json");
    if (r.status > 1) continue;
    doc = json::parse(r.out);
    if (doc["interval"]["rows"].get<int>() > 0 && doc["interval"]["fallback"].get<bool>()) {
      args = a;
      break;
    }
  }
  REQUIRE_MESSAGE(!args.empty(), "no shipped GPU falls back any more: pick a rarer one");
  CAPTURE(args);
  const auto& iv = doc["interval"];
  const std::string note = iv["note"];
  CHECK(note.find("fewer than 20 validated training runs from two or more sources like this one") == 0);
  CHECK(note.find(iv["pool"].get<std::string>()) != std::string::npos);
  const auto r = test::run_cli(args + " --wide");  // the lines whole, not wrapped at 120 columns
  CHECK(r.status <= 1);
  CHECK(r.out.find(fmt::format("  interval           80%, from {}, {} validated runs; held out of sample for {:.0f}% "
                               "of {} runs\n{}{}\n",
                               iv["pool"].get<std::string>(), iv["rows"].get<int>(),
                               100 * iv["held_out_covered"].get<double>(), iv["held_out_rows"].get<int>(),
                               std::string(21, ' '), note)) != std::string::npos);
}

TEST_CASE("intervals: a calibrated profile's held-out records set the kernels' interval, and the views say so") {
  // A profile calibrated with held-out GEMM records: log_mean 0, log_sd 0.05
  // over 30 records. Its GEMM kernels' interval is then theirs:
  //   [e^(-z sd), e^(z sd)] with z = the normal quantile at (1 + 0.8) / 2
  // (random_effects_bounds with mu 0 and no between-source part).
  const fs::path dir = fs::temp_directory_path() / ("ridgeline_interval_cal_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path profile = dir / "h100_calibrated.yaml";
  std::ofstream(profile) << slurp(fs::path(RIDGELINE_SOURCE_DIR) / "hardware_profiles/h100_sxm.yaml")
                         << "calibration:\n"
                            "  measurements: cuda_validation/results/h100.json\n"
                            "  device: NVIDIA H100 80GB HBM3\n"
                            "  date: \"2025-01-01\"\n"
                            "  gemm_efficiency:\n"
                            "    bf16: 0.75\n"
                            "  heldout_fraction: 0.2\n"
                            "  heldout:\n"
                            "    - {class: gemm, records: 30, log_mean: 0, log_sd: 0.05}\n";
  const Case c;
  const auto gpu = spec::load_hardware(profile.string());
  const auto pred = engine::evaluate(c.model, c.plan, gpu);
  REQUIRE(pred.calibrated);
  const report::Inputs in{&gpu, &c.model, &c.plan, 0.8, nullptr};
  const json j = report::prediction_json(pred, in);
  CHECK(j["interval"]["calibrated"] == true);
  const std::string note = j["interval"]["calibration_note"];
  CHECK(note.rfind("calibrated on cuda_validation/results/h100.json", 0) == 0);
  const double z = uncertainty::normal_quantile(0.9);
  bool gemm = false;
  for (const auto& k : j["kernels"]) {
    if (k["class"] != "gemm" || k["dtype"] != "bf16") continue;
    const auto [lo, hi] = pair_of(k["time_s_interval"]);
    CHECK(lo == doctest::Approx(k["time_s"].get<double>() * std::exp(-z * 0.05)));
    CHECK(hi == doctest::Approx(k["time_s"].get<double>() * std::exp(z * 0.05)));
    gemm = true;
  }
  CHECK(gemm);
  const std::string t = report::prediction_table(pred, in);
  CHECK(t.find(std::string(21, ' ') + note + "\n") != std::string::npos);
  fs::remove_all(dir);
}
