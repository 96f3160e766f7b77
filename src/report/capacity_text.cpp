#include "ridgeline/report/capacity_text.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>

#include "ridgeline/units/units.hpp"

namespace ridgeline::report::text {

using namespace ridgeline::units;

namespace {

std::string pct_plain(double v) { return fmt::format("{:.1f}%", v); }

/// A layout's days as the tables print them ("12.3"), as a range: "11.0–14.5".
std::string day_number(double d) { return fmt::format("{:.1f}", d); }
std::string day_range(const Range& r) { return r.valid ? range(r.lo, r.hi, day_number) : ""; }
std::string usd_range(const Range& r) { return r.valid ? range(r.lo, r.hi, usd) : ""; }

std::string tokens_note(const CapacityView& v) {
  if (v.plan.tokens_source == "budget") return "what the budget buys at the predicted step time";
  if (v.plan.tokens_source == "plan") return "as asked";
  if (v.plan.tokens_source == "per_billion_tokens") return "per 1B tokens: a fine-tune has no compute-optimal length";
  if (v.plan.tokens_source == "dataset_epoch") return "one epoch of the dataset";
  return "Chinchilla: 20 tokens per parameter";
}

}  // namespace

std::string usd(double v) {
  if (!std::isfinite(v)) return "unknown";
  if (std::fabs(v) < 1000) return fmt::format("${:.2f}", v);
  return fmt::format("${}", format_count(v));
}

std::string flop_count(double f) {
  if (!(std::fabs(f) >= 1e21) || !std::isfinite(f)) return format_flops(f);
  const int e = static_cast<int>(std::floor(std::log10(std::fabs(f))));
  return fmt::format("{:.2f}e{} FLOP", f / std::pow(10.0, e), e);
}

std::string days(double d) {
  if (!std::isfinite(d)) return "unknown";
  if (d < 1) return fmt::format("{:.1f} hours", d * 24);
  return fmt::format("{:.1f} days", d);
}

std::string tokens_per_s(double v) { return format_count(v) + " tokens/s"; }

namespace {

/// Where the leading number of a formatted figure ends ("690 ms" -> 3); 0
/// when it does not start with one ("$3.10M", "n/a").
size_t number_end(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.' || (i == 0 && s[i] == '-')))
    ++i;
  return i > 0 && std::isdigit(static_cast<unsigned char>(s[i - 1])) ? i : 0;
}

}  // namespace

std::string range(double lo, double hi, std::string (*format)(double)) {
  const std::string a = format(lo), b = format(hi);
  const size_t na = number_end(a), nb = number_end(b);
  if (na > 0 && nb > 0 && a.substr(na) == b.substr(nb)) return a.substr(0, na) + "–" + b;
  return a + "–" + b;
}

std::string level(double l) { return fmt::format("{:g}%", l * 100); }

std::string wrap(const std::string& line, size_t width, const std::string& indent) {
  // Spacing inside a line is kept; a line breaks at the last space that
  // leaves it at most `width` columns, past the continuation indent.
  std::string out, rest = line;
  for (;;) {
    size_t col = 0, cut = std::string::npos;
    for (size_t i = 0; i < rest.size(); ++i) {
      if ((rest[i] & 0xC0) == 0x80) continue;
      if (col > width) break;
      if (rest[i] == ' ' && i > indent.size() && col <= width) cut = i;
      ++col;
    }
    if (col <= width || cut == std::string::npos) break;
    std::string head = rest.substr(0, cut);
    while (!head.empty() && head.back() == ' ') head.pop_back();
    const size_t next = rest.find_first_not_of(' ', cut);
    if (head.empty() || next == std::string::npos) break;
    out += head + "\n";
    rest = indent + rest.substr(next);
  }
  return out + rest + "\n";
}

void drop_columns(Table& t, const std::vector<std::string>& heads) {
  for (size_t c = t.head.size(); c-- > 0;) {
    if (std::find(heads.begin(), heads.end(), t.head[c]) == heads.end()) continue;
    t.head.erase(t.head.begin() + static_cast<std::ptrdiff_t>(c));
    if (c < t.numeric.size()) t.numeric.erase(t.numeric.begin() + static_cast<std::ptrdiff_t>(c));
    for (auto& r : t.rows)
      if (c < r.size()) r.erase(r.begin() + static_cast<std::ptrdiff_t>(c));
  }
}

std::string fit_width(const std::string& text, size_t width) {
  const auto cols = [](const std::string& s) {
    return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
  };
  // A table: a paragraph whose first line (its head) has four or more gaps
  // of two or more spaces between its words. Its rows are left whole.
  const auto is_table_head = [](const std::string& l) {
    int gaps = 0;
    const size_t start = l.find_first_not_of(' ');
    for (size_t i = start; i != std::string::npos && i + 1 < l.size(); ++i)
      if (l[i] == ' ' && l[i + 1] == ' ' && (i == 0 || l[i - 1] != ' ')) ++gaps;
    return gaps >= 4;
  };
  std::string out;
  bool table = false, paragraph_start = true;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = std::min(text.find('\n', pos), text.size());
    const std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    const bool blank = line.find_first_not_of(' ') == std::string::npos;
    if (paragraph_start && !blank) table = is_table_head(line);
    paragraph_start = blank;
    // A command line stays whole, so that it can be copied.
    if (table || cols(line) <= width || line.find("ridgeline predict ") != std::string::npos) {
      out += line + (nl < text.size() ? "\n" : "");
      continue;
    }
    // The value's column: after the indent, and after a label's run of two or more spaces.
    size_t at = line.find_first_not_of(' ');
    if (const size_t gap = line.find("  ", at); gap != std::string::npos && gap < width / 2)
      at = line.find_first_not_of(' ', gap);
    const size_t value_col =
        at == std::string::npos ? 2 : std::max<size_t>(2, std::min(cols(line.substr(0, at)), width / 2));
    std::string w = wrap(line, width, std::string(value_col, ' '));
    if (nl >= text.size()) w.pop_back();
    out += w;
  }
  return out;
}

std::string interval(const uncertainty::Interval& iv, const Range& r, std::string (*format)(double)) {
  if (!iv.valid() || !r.valid) return "";
  return fmt::format("{} interval {}", level(iv.level), range(r.lo, r.hi, format));
}

std::string interval_source(const uncertainty::Interval& iv) {
  if (!iv.valid()) return "none: " + iv.note;
  if (iv.anchored) return fmt::format("{}, {}: {}", level(iv.level), iv.pool, iv.note);
  std::string out = fmt::format("{}, from {}, {} validated runs", level(iv.level), iv.pool, iv.rows);
  if (iv.held_out_rows > 0)
    out += fmt::format("; held out of sample for {:.0f}% of {} runs", 100 * iv.held_out_covered, iv.held_out_rows);
  return out;
}

std::string fits_at_upper_bound(const uncertainty::MemoryInterval& m) {
  if (m.fits_high) return "yes";
  return m.fits_point ? "only at the point estimate" : "no";
}

std::string headline(const CapacityView& v) {
  const auto& a = v.answer;
  const std::string fit = !a.memory.fits                ? "Does not fit"
                          : a.memory_range.fits_high ? "Fits"
                                                     : "Fits at the point estimate only";
  const bool priced = std::isfinite(a.cost_usd);
  std::string s = fmt::format("{}: {} of {} per GPU; {} per step; MFU {}; {} and {} for {} tokens", fit,
                              format_bytes(a.memory.total), format_bytes(a.memory.capacity),
                              format_seconds(a.step_time_s), format_percent(a.mfu), days(a.days),
                              priced ? usd(a.cost_usd) : std::string("an unknown cost (the profile has no price)"),
                              format_count(a.tokens));
  if (a.interval.valid()) {
    if (v.plan.tokens_source == "budget")
      s += fmt::format(" ({} tokens)", interval(a.interval, a.tokens_range, format_count));
    else if (priced && a.cost_range.valid)
      s += fmt::format(" ({}, {})", interval(a.interval, a.days_range, days),
                       range(a.cost_range.lo, a.cost_range.hi, usd));
    else
      s += fmt::format(" ({})", interval(a.interval, a.days_range, days));
  }
  return s;
}

std::vector<Fact> question(const CapacityView& v) {
  const auto& g = v.gpu;
  std::string peaks;
  for (const auto& [p, f] : g.peaks) {
    if (p == "fp16" || p == "int8") continue;
    peaks += fmt::format("{}{} {}", peaks.empty() ? "" : ", ", p, format_flop_rate(f));
  }
  const auto& m = v.model;
  const auto& p = v.plan;
  std::vector<Fact> f;
  f.push_back({"GPU", fmt::format("{} ({})", g.name, g.id),
               fmt::format("{} HBM at {}; dense {}; {}; {}; profile {}", format_bytes(g.memory_bytes),
                           format_byte_rate(g.hbm_bytes_per_s), peaks,
                           g.price_known ? usd(g.price_per_gpu_hour_usd) + "/GPU-hour" : std::string("price unknown"),
                           g.tdp_known ? fmt::format("{:.0f} W", g.tdp_w) : std::string("TDP unknown"),
                           g.source_file)});
  if (!v.settings.empty()) f.push_back({"Settings", v.settings, "--set: applied to the files before they were read"});
  f.push_back({"Calibration", v.calibration.used ? "calibrated" : "not calibrated", v.calibration.status});
  if (v.calibration.runs_given)
    f.push_back({"Measured runs", v.calibration.runs_applied ? "applied" : "not applied", v.calibration.runs_line});
  f.push_back({"Model", fmt::format("{} ({})", m.name, m.id),
               fmt::format("{} parameters ({} trainable); {} layers, hidden {}, {} heads ({} KV), FFN {}, vocab {}; {}",
                           format_count(m.params), format_count(m.trainable_params), m.layers, m.hidden, m.heads,
                           m.kv_heads, m.ffn_hidden, m.vocab, m.architecture)});
  f.push_back({"Plan", p.summary,
               fmt::format("framework {}, frameworks/{}.yaml; micro-batch {}, global batch {} sequences of {} "
                           "tokens",
                           p.framework_name, p.framework_id, p.micro_batch, p.global_batch, p.seq_len)});
  f.push_back({"GPUs", std::to_string(p.gpus), v.layouts.present ? "layout: the best the search found" : ""});
  std::string tokens = tokens_note(v);
  if (p.tokens_source == "budget" && v.answer.interval.valid())
    tokens += "; " + interval(v.answer.interval, v.answer.tokens_range, format_count);
  f.push_back({"Training tokens", format_count(p.tokens), tokens});
  return f;
}

Table gpu_sources(const CapacityView& v) {
  Table t{{"field", "source"}, {}, {false, false}};
  for (const auto& s : v.gpu.sources) t.rows.push_back({s.field, s.text});
  return t;
}

Table residuals(const CapacityView& v) {
  Table t{{"class", "records", "median |error|", "p90 |error|"}, {}, {false, true, true, true}};
  for (const auto& r : v.calibration.residuals)
    t.rows.push_back({r.cls, std::to_string(r.records), pct_plain(r.median_abs_pct), pct_plain(r.p90_abs_pct)});
  return t;
}

std::vector<Fact> answer(const CapacityView& v) {
  const auto& a = v.answer;
  std::vector<Fact> f;
  // The same two parts of the exposed communication as the step chart
  // (CapacityView::step): the wait for collectives and the SM contention.
  std::string step_note = fmt::format("{} micro-batches; exposed communication {}", a.micro_batches,
                                      v.step.comm_exposed_s > 0 ? format_seconds(v.step.comm_exposed_s) : "none");
  if (a.comm_slowdown_s > 0)
    step_note += fmt::format(" + comm SM contention {} (overlapped NCCL kernels take SMs from the GEMMs) = {}",
                             format_seconds(a.comm_slowdown_s), format_seconds(a.exposed_comm_s));
  step_note += fmt::format(", pipeline bubble {}", a.bubble_s > 0 ? format_seconds(a.bubble_s) : "none");
  if (a.host_bound)
    step_note += fmt::format("; host-bound: {} of host dispatch per step, the GPU waits for the framework's "
                             "Python dispatch",
                             format_seconds(a.host_s));
  const auto& iv = a.interval;
  // A figure's interval first in its note, when there is one.
  const auto with = [](const std::string& interval, const std::string& note) {
    return interval.empty() ? note : interval + "; " + note;
  };
  f.push_back({"Step time", format_seconds(a.step_time_s),
               with(interval(iv, a.step_time_range, format_seconds), step_note)});
  f.push_back({"Throughput", tokens_per_s(a.tokens_per_s),
               with(interval(iv, a.tokens_per_s_range, tokens_per_s),
                    format_count(a.tokens_per_s_per_gpu) + " tokens/s per GPU")});
  // Against the spec-sheet bf16 peak (not the roofline's roof); against the
  // plan's own precision's peak only where that is another peak.
  const bool other_peak = std::abs(a.mfu_dtype - a.mfu) > 1e-9 * std::max(1.0, a.mfu);
  std::string bf16_peak;
  for (const auto& [name, flop_per_s] : v.gpu.peaks)
    if (name == "bf16") bf16_peak = fmt::format(" ({})", format_flop_rate(flop_per_s));
  f.push_back({"MFU", format_percent(a.mfu),
               with(interval(iv, a.mfu_range, format_percent),
                    fmt::format("of the spec-sheet dense bf16 peak{}{}; attention FLOPs {}", bf16_peak,
                                other_peak ? fmt::format(", {} of the {} peak", format_percent(a.mfu_dtype), a.precision)
                                           : std::string(),
                                a.flops_convention))});
  f.push_back({"HFU", format_percent(a.hfu), "model + recomputation FLOPs"});
  f.push_back({"Prediction interval", iv.valid() ? level(iv.level) : "none",
               iv.valid() ? fmt::format("from {}, {} validated runs (out-of-sample residuals, docs/accuracy.md){}{}{}",
                                        iv.pool, iv.rows, iv.fallback ? "; " + iv.note : std::string(),
                                        iv.widened.empty() ? std::string() : "; " + iv.widened,
                                        iv.calibrated ? "; " + iv.calibration_note : std::string())
                          : iv.note});
  const auto& m = a.memory;
  const auto& mr = a.memory_range;
  f.push_back({"Memory per GPU", format_bytes(m.total),
               fmt::format("range {}; fits at the upper bound: {}; of {} ({}); {}{}; allocated {}, reserved {} ({} "
                           "allocator reserve {})",
                           range(mr.lo, mr.hi, format_bytes), fits_at_upper_bound(mr),
                           format_bytes(m.capacity), format_percent(a.memory_fraction),
                           m.fits ? "fits" : "DOES NOT FIT",
                           m.peak_stage == "only"
                               ? std::string()
                               : fmt::format("; peak on the {} pipeline stage (first {}, last {})", m.peak_stage,
                                             format_bytes(m.first_stage.total), format_bytes(m.last_stage.total)),
                           format_bytes(m.allocated), format_bytes(m.reserved), v.plan.framework_id,
                           format_percent(m.allocator_reserve))});
  // With a budget the totals are the budget's; the tokens it buys vary instead.
  const bool budget = v.plan.tokens_source == "budget";
  const auto total = [&](const Range& r, std::string (*format)(double), const std::string& note) {
    if (budget && iv.valid()) return note.empty() ? std::string("fixed by the budget") : note + "; fixed by the budget";
    return note.empty() ? interval(iv, r, format) : with(interval(iv, r, format), note);
  };
  if (!std::isfinite(a.days) && std::isfinite(a.step_time_s)) {
    // Failures come faster than the run recovers (see Assumptions: Goodput).
    const std::string why = "failures come faster than the run recovers; see Goodput in the assumptions";
    f.push_back({"Wall clock", "never completes", why});
    f.push_back({"GPU-hours", "unknown", why});
    f.push_back({"Cost", "unknown", why});
    f.push_back({"Energy", "unknown", why});
    return f;
  }
  f.push_back({"Wall clock", days(a.days),
               total(a.days_range, days,
                     fmt::format("{} steps of {} tokens; ideal {}, goodput {} (checkpoints and interruptions)",
                                 format_count(a.steps), format_count(a.tokens_per_step), days(a.ideal_days),
                                 format_percent(a.goodput)))});
  f.push_back({"GPU-hours", format_count(a.gpu_hours), total(a.gpu_hours_range, format_count, "")});
  if (v.gpu.price_known)
    f.push_back({"Cost", usd(a.cost_usd),
                 total(a.cost_range, usd, fmt::format("at {} per GPU-hour", usd(v.gpu.price_per_gpu_hour_usd)))});
  else
    f.push_back({"Cost", "unknown", "the profile gives no price_per_gpu_hour (--set gpu.price_per_gpu_hour=... gives one)"});
  if (v.gpu.tdp_known)
    f.push_back({"Energy", format_count(a.energy_kwh) + " kWh", total(a.energy_range, format_count, "GPUs only")});
  else
    f.push_back({"Energy", "unknown", "the profile gives no tdp"});
  return f;
}

Table memory_breakdown(const CapacityView& v) {
  const auto& a = v.answer;
  const auto& m = a.memory;
  // Under pipeline parallelism a column per end stage, the peak one marked.
  std::vector<const memory::MemoryResult*> cols{&m};
  Table t{{"component", "bytes"}, {}, {false, true}};
  if (m.peak_stage != "only") {
    cols = {&a.first_stage, &a.last_stage};
    t.head = {"component", m.peak_stage == "first" ? "first stage (peak)" : "first stage",
              m.peak_stage == "last" ? "last stage (peak)" : "last stage"};
    t.numeric.push_back(true);
  }
  auto row = [&](std::string_view label, double memory::MemoryResult::*bytes) {
    std::vector<std::string> r{std::string(label)};
    for (const auto* c : cols) r.push_back(format_bytes(c->*bytes));
    t.rows.push_back(std::move(r));
  };
  for (const auto& c : memory::kMemoryCategories) row(c.label, c.bytes);
  row("total", &memory::MemoryResult::total);
  t.highlight = static_cast<int>(t.rows.size()) - 1;
  row("allocated", &memory::MemoryResult::allocated);
  row("reserved", &memory::MemoryResult::reserved);
  t.rows.push_back({"capacity", format_bytes(m.capacity)});
  t.rows.back().resize(t.head.size());
  return t;
}

Table techniques(const CapacityView& v) {
  Table t;
  for (const auto& k : v.vary_keys) {
    t.head.push_back(k);
    t.numeric.push_back(false);
  }
  if (v.techniques_searched) {
    t.head.push_back("its best layout");
    t.numeric.push_back(false);
  }
  const std::string lv = level(v.interval_level);
  for (const std::string& h : {std::string("step time"), lv + " interval", std::string("tokens/s"), std::string("MFU"),
                              std::string("HFU"), std::string("peak memory"), std::string("memory range"),
                              std::string(v.techniques_searched ? "a layout fits" : "fits"),
                              std::string("fits at the upper bound"), std::string("speed-up")}) {
    t.head.push_back(h);
    t.numeric.push_back(true);
  }
  for (const auto& r : v.techniques) {
    std::vector<std::string> c = r.settings;
    if (v.techniques_searched)
      c.push_back(r.any_layout_fits ? r.layout
                                    : fmt::format("none of {} layouts fits; figures at the report's layout",
                                                  format_count(static_cast<double>(r.layouts_evaluated))));
    c.push_back(format_seconds(r.step_time_s));
    c.push_back(r.step_time_range.valid ? range(r.step_time_range.lo, r.step_time_range.hi, format_seconds) : "");
    c.push_back(format_count(r.tokens_per_s));
    c.push_back(format_percent(r.mfu));
    c.push_back(format_percent(r.hfu));
    c.push_back(format_bytes(r.peak_memory_bytes));
    c.push_back(range(r.memory_range.lo, r.memory_range.hi, format_bytes));
    c.push_back(r.fits ? "yes" : "no");  // with a search: whether any layout fits
    c.push_back(fits_at_upper_bound(r.memory_range));
    c.push_back(fmt::format("{:.2f}x", r.speedup));
    t.rows.push_back(std::move(c));
  }
  t.highlight = v.best_technique;
  return t;
}

std::string best_technique(const CapacityView& v) {
  const std::string how = v.techniques_searched
                              ? "Each combination searched its own best layout (its recomputation and precision "
                                "fixed, the rest of the layout free). "
                              : "Every combination at the report's layout. ";
  if (v.best_technique < 0) return how + (v.techniques_searched ? "No combination fits with any layout." : "No combination fits in memory.");
  const auto& r = v.techniques[v.best_technique];
  return how + fmt::format("Fastest combination that fits: {} ({}){}: {} per step, MFU {}, {} per GPU, {:.2f}x the first row.",
                           r.label, fmt::join(v.vary_keys, " · "), r.layout.empty() ? "" : " at " + r.layout,
                           format_seconds(r.step_time_s), format_percent(r.mfu), format_bytes(r.peak_memory_bytes),
                           r.speedup);
}

Table layouts(const CapacityView& v) {
  const std::string lv = level(v.interval_level);
  Table t{{"#", "layout", "step time", "MFU", "memory/GPU", "tokens/s", "bubble", "days", "cost",
           "days, " + lv + " interval", "cost, " + lv + " interval"},
          {},
          {true, false, true, true, true, true, true, true, true, true, true}};
  for (const auto& r : v.layouts.top)
    t.rows.push_back({std::to_string(r.rank), r.label, format_seconds(r.step_time_s), format_percent(r.mfu),
                      format_bytes(r.memory_bytes), format_count(r.tokens_per_s), format_percent(r.bubble_fraction),
                      fmt::format("{:.1f}", r.days), usd(r.cost_usd), day_range(r.days_range),
                      usd_range(r.cost_range)});
  if (!v.layouts.top.empty()) t.highlight = 0;
  return t;
}

Table scaling(const CapacityView& v) {
  const std::string lv = level(v.interval_level);
  Table t{{"GPUs", "best layout", "step time", "MFU", "days", "cost", "days, " + lv + " interval",
           "cost, " + lv + " interval"},
          {},
          {true, false, true, true, true, true, true, true}};
  int i = 0;
  for (const auto& p : v.layouts.scaling) {
    if (p.feasible)
      t.rows.push_back({std::to_string(p.gpus), p.best.label, format_seconds(p.best.step_time_s),
                        format_percent(p.best.mfu), fmt::format("{:.1f}", p.best.days), usd(p.best.cost_usd),
                        day_range(p.best.days_range), usd_range(p.best.cost_range)});
    else
      t.rows.push_back({std::to_string(p.gpus), "no layout fits", "", "", "", "", "", ""});
    if (p.chosen) t.highlight = i;
    ++i;
  }
  return t;
}

std::vector<Fact> sizing(const CapacityView& v) {
  const auto& s = v.sizing;
  std::vector<Fact> f;
  if (!s.present) return f;
  f.push_back({"Budget", s.budget_kind == "usd" ? usd(s.budget_value) : format_count(s.budget_value) + " GPU-hours",
               s.budget_kind == "usd" ? fmt::format("{} GPU-hours at {} per GPU-hour", format_count(s.gpu_hours),
                                                    usd(v.gpu.price_per_gpu_hour_usd))
                                      : ""});
  f.push_back({"Achieved model FLOP/s per GPU", format_flop_rate(s.achieved_flop_per_s_per_gpu),
               "model FLOPs per step / step time / GPUs"});
  f.push_back({"Compute C", flop_count(s.compute_flop), "GPU-hours x 3600 s x achieved FLOP/s"});
  f.push_back({"Compute-optimal parameters N", format_count(s.optimal_params), "sqrt(C / 120)"});
  f.push_back({"Compute-optimal tokens D", format_count(s.optimal_tokens), "20 N"});
  f.push_back({"Chosen model", format_count(s.model_params) + " parameters",
               fmt::format("{:.2f}x the compute-optimal size", s.params_ratio)});
  f.push_back({"Tokens the budget buys", format_count(s.model_tokens),
               fmt::format("{:.1f} tokens per parameter", s.model_tokens_per_param)});
  return f;
}

namespace {

Table shares_table(const std::vector<TimeShare>& v, const char* what) {
  Table t{{what, "time per step", "share"}, {}, {false, true, true}};
  for (const auto& s : v) t.rows.push_back({s.name, format_seconds(s.time_s), format_percent(s.share)});
  return t;
}

}  // namespace

Table step_spent(const CapacityView& v) {
  const auto& s = v.step;
  Table t{{"the step, as spent", "time per step", "share of the step"}, {}, {false, true, true}};
  for (const auto& p : s.parts) t.rows.push_back({p.name, format_seconds(p.time_s), format_percent(p.share)});
  t.rows.push_back({"step", format_seconds(s.step_time_s), format_percent(1.0)});
  t.highlight = static_cast<int>(t.rows.size()) - 1;
  return t;
}

Table hidden_comm(const CapacityView& v) {
  const auto& s = v.step;
  Table t{{"communication per step", "time per step", "share of the communication"}, {}, {false, true, true}};
  if (!(s.comm_total_s > 0)) return t;
  t.rows.push_back({"hidden behind compute (not part of the step)", format_seconds(s.comm_hidden_s),
                    format_percent(s.comm_hidden_share)});
  t.rows.push_back({"exposed (in the step)", format_seconds(s.comm_exposed_s),
                    format_percent(s.comm_exposed_share)});
  t.rows.push_back({"all communication kernels", format_seconds(s.comm_total_s), format_percent(1.0)});
  return t;
}

Table time_by_class(const CapacityView& v) { return step_spent(v); }
Table time_by_phase(const CapacityView& v) { return hidden_comm(v); }
Table kernel_time_by_phase(const CapacityView& v) { return shares_table(v.time_by_phase, "kernel time by phase"); }

Table top_kernels(const CapacityView& v, int n) {
  Table t{{"kernel", "phase", "class", "intensity (FLOP/B)", "achieved FLOP/s", "bound", "time per step", "share"},
          {},
          {false, false, false, true, true, false, true, true}};
  int i = 0;
  for (const auto& p : v.roofline.points) {
    if (i++ >= n) break;
    t.rows.push_back({p.name, p.phase, p.cls, fmt::format("{:.1f}", p.intensity), format_flop_rate(p.flop_per_s),
                      p.bound, format_seconds(p.time_s), format_percent(p.share)});
  }
  return t;
}

std::string roof_derivation(const CapacityView& v) {
  const auto& R = v.roofline;
  return fmt::format("roof = spec-sheet dense peak × {:.3f} (the {:.0f} MHz the kernels run at, of the {:.0f} MHz "
                     "boost) × {:.3f} (training-clock fraction) = × {:.3f}",
                     R.clock_ratio, R.clock_hz / 1e6, R.boost_clock_hz / 1e6, R.training_clock_frac, R.clock_scale);
}

Table roofs(const CapacityView& v) {
  Table t{{"precision", "spec-sheet dense peak", fmt::format("roof (× {:.3f})", v.roofline.clock_scale),
           "ridge point (FLOP/B)"},
          {},
          {false, true, true, true}};
  for (const auto& r : v.roofline.roofs)
    t.rows.push_back({r.precision, format_flop_rate(r.spec_peak_flop_per_s), format_flop_rate(r.peak_flop_per_s),
                      fmt::format("{:.0f}", r.ridge_intensity)});
  return t;
}

Table assumptions(const CapacityView& v) {
  Table t{{"assumption", "value", "source"}, {}, {false, false, false}};
  for (const auto& a : v.assumptions) t.rows.push_back({a.name, a.value, a.source});
  return t;
}

}  // namespace ridgeline::report::text
