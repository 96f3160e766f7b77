#include "ridgeline/report/validation_view.hpp"
#include "ridgeline/report/json_number.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <string_view>

namespace ridgeline::report {

namespace {

using nlohmann::json;
using validation::LeaveOneOutReport;
using validation::PublishedReport;
using validation::PublishedResult;

std::string signed_pct(double v) { return fmt::format("{:+.1f}%", v); }
std::string abs_pct(double v) { return fmt::format("{:.1f}%", v); }

std::string value(double v, const std::string& unit) {
  if (unit == "fraction") return fmt::format("{:.3f}", v);
  return fmt::format("{:.4g} {}", v, unit);
}

std::string pad(const std::string& s, size_t w, bool right = false) {
  if (s.size() >= w) return s;
  return right ? std::string(w - s.size(), ' ') + s : s + std::string(w - s.size(), ' ');
}

/// A plain-text table: columns padded to their widest cell; `right` marks numeric columns.
std::string text_table(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows,
                       const std::vector<bool>& right) {
  std::vector<size_t> w(head.size());
  for (size_t c = 0; c < head.size(); ++c) w[c] = head[c].size();
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size() && c < w.size(); ++c) w[c] = std::max(w[c], r[c].size());
  auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (size_t c = 0; c < r.size(); ++c) {
      s += pad(r[c], c + 1 == r.size() && !right[c] ? 0 : w[c], right[c]);
      if (c + 1 < r.size()) s += "  ";
    }
    return s + "\n";
  };
  std::string out = line(head);
  for (const auto& r : rows) out += line(r);
  return out;
}

std::vector<std::string> stats_cells(const std::string& name, const validation::ErrorStats& s) {
  const bool any = s.predicted > 0;
  return {name,
          std::to_string(s.rows),
          std::to_string(s.predicted),
          std::to_string(s.skipped),
          any ? abs_pct(s.median_abs_pct) : "-",
          any ? abs_pct(s.p90_abs_pct) : "-",
          any ? signed_pct(s.median_speed_pct) : "-"};
}

std::string headline(const PublishedReport& r) {
  std::string s = fmt::format("{} rows{}: {} predicted, {} skipped", r.overall.rows,
                              r.group_filter.empty() ? "" : fmt::format(" of group {}", r.group_filter),
                              r.overall.predicted, r.overall.skipped);
  if (r.overall.predicted > 0)
    s += fmt::format("; median |error| {}, p90 {}", abs_pct(r.overall.median_abs_pct), abs_pct(r.overall.p90_abs_pct));
  if (!r.fit_without_group.empty())
    s += fmt::format(" (defaults fitted on group {} at their priors)", r.fit_without_group);
  return s;
}

/// The subset rows: "group / subset" and its statistics.
std::vector<std::vector<std::string>> subset_cells(const PublishedReport& r) {
  std::vector<std::vector<std::string>> t;
  for (const auto& s : r.by_subset) t.push_back(stats_cells(s.group + " / " + s.subset, s.stats));
  return t;
}

constexpr const char* kSubsetNote =
    "the predicted rows of groups that span several GPU profiles or precisions, split by profile and precision "
    "(the plan's precision or the kernel's dtype)";

constexpr const char* kFrameworkNote =
    "the end-to-end rows by the training framework their source ran, a profile in frameworks/; each row's "
    "assumptions say which and why; kernel-level rows run under none";

constexpr const char* kGenerationNote = "the end-to-end rows by the GPU generation of their hardware profile";

constexpr const char* kLeaveOneOutDefinition =
    "in-sample: every cost-model default as fitted; left out: the group's rows predicted with every default "
    "fitted on that group's own rows at its prior (the value from the literature before the fit)";

constexpr const char* kErrorDefinition =
    "error = (predicted - measured) / measured; speed bias = median signed error of the predicted speed "
    "(+ = Ridgeline predicts faster than measured); median and p90 of |error| by linear interpolation";

constexpr const char* kMemoryNote =
    "the end-to-end rows that state a measured peak memory per GPU, beside the memory model's peak of the kind the "
    "source measured (reserved = predicted allocated x (1 + the framework's allocator reserve); allocated = the "
    "tensors alone); error = (predicted - measured) / measured; bias = median signed error (+ = Ridgeline predicts "
    "more memory than measured)";

/// The memory section's per-row lines: id, group, profile, framework, kind, measured, predicted, error, fits.
std::vector<std::vector<std::string>> memory_cells(const PublishedReport& r) {
  std::vector<std::vector<std::string>> t;
  for (const auto& x : r.results) {
    if (!x.memory_measured) continue;
    if (!x.memory) {
      t.push_back({x.id, x.group, x.profile.empty() ? "-" : x.profile, x.framework.empty() ? "-" : x.framework, "-",
                   "-", "-", "skipped", "-"});
      continue;
    }
    const auto& c = *x.memory;
    t.push_back({x.id, x.group, x.profile, x.framework, x.memory_kind, fmt::format("{:.1f} GiB", c.measured),
                 fmt::format("{:.1f} GiB", c.predicted), signed_pct(c.error_pct), x.fits ? "yes" : "no"});
  }
  return t;
}

const std::vector<std::string> kMemoryHead = {"id", "group", "profile", "framework", "kind",
                                              "measured", "predicted", "error", "fits"};
const std::vector<bool> kMemoryRight = {false, false, false, false, false, true, true, true, false};

/// "8 rows state a peak: 8 compared; median |error| 12.3%, p90 30.1%, bias +4.0%; 1 predicted not to fit".
std::string memory_summary(const validation::MemoryStats& m) {
  std::string s = fmt::format("{} row{} state{} a peak: {} compared", m.stats.rows, m.stats.rows == 1 ? "" : "s",
                              m.stats.rows == 1 ? "s" : "", m.stats.predicted);
  if (m.stats.predicted > 0)
    s += fmt::format("; median |error| {}, p90 {}, bias {}; {} predicted not to fit", abs_pct(m.stats.median_abs_pct),
                     abs_pct(m.stats.p90_abs_pct), signed_pct(m.median_error_pct), m.not_fitting);
  return s;
}

std::string render_table(const PublishedReport& r, bool show_skipped) {
  std::string out = fmt::format("Ridgeline vs published measurements: {}\n{}\n{}\n\n", r.file, headline(r),
                                kErrorDefinition);
  std::vector<std::vector<std::string>> rows;
  bool any_unfit = false;
  for (const auto& x : r.results) {
    if (!x.predicted) continue;
    const auto& c = x.primary;
    any_unfit |= !x.fits;
    rows.push_back({x.id, x.group, x.profile, x.framework.empty() ? "-" : x.framework, c.quantity,
                    value(c.measured, c.unit), value(c.predicted, c.unit), signed_pct(c.error_pct) + (x.fits ? "" : " *")});
  }
  out += text_table({"id", "group", "profile", "framework", "quantity", "measured", "predicted", "error"}, rows,
                    {false, false, false, false, false, true, true, true});
  if (any_unfit) out += "* Ridgeline's memory model says this run does not fit, though the source ran it\n";
  if (show_skipped) {
    std::vector<std::vector<std::string>> sk;
    for (const auto& x : r.results)
      if (!x.predicted) sk.push_back({x.id, x.group, x.skip_reason});
    out += "\nSkipped rows\n" + text_table({"id", "group", "reason"}, sk, {false, false, false});
  }
  auto stats = [&](const std::string& title, const char* col, const std::vector<validation::NamedStats>& v,
                   const validation::ErrorStats& all) {
    std::vector<std::vector<std::string>> t;
    for (const auto& g : v) t.push_back(stats_cells(g.name, g.stats));
    t.push_back(stats_cells("all", all));
    return fmt::format("\n{}\n", title) +
           text_table({col, "rows", "predicted", "skipped", "median |err|", "p90 |err|", "speed bias"}, t,
                      {false, true, true, true, true, true, true});
  };
  out += stats("By group", "group", r.by_group, r.overall);
  if (!r.by_subset.empty())
    out += fmt::format("\nBy group and subset ({})\n", kSubsetNote) +
           text_table({"group / subset", "rows", "predicted", "skipped", "median |err|", "p90 |err|", "speed bias"},
                      subset_cells(r), {false, true, true, true, true, true, true});
  out += stats("By category", "category", r.by_category, r.overall);
  if (!r.by_framework.empty()) {
    out += stats(fmt::format("By framework ({})", kFrameworkNote), "framework", r.by_framework, r.end_to_end);
    out += stats(fmt::format("By GPU generation ({})", kGenerationNote), "generation", r.by_generation,
                 r.end_to_end);
  }
  if (r.memory.stats.rows > 0)
    out += fmt::format("\nPeak memory ({})\n{}\n", kMemoryNote, memory_summary(r.memory)) +
           text_table(kMemoryHead, memory_cells(r), kMemoryRight);
  if (!r.skip_reasons.empty()) {
    std::vector<std::vector<std::string>> t;
    for (const auto& [reason, n] : r.skip_reasons) t.push_back({std::to_string(n), reason});
    out += "\nSkip reasons\n" + text_table({"rows", "reason"}, t, {true, false});
  }
  if (!show_skipped && r.overall.skipped > 0)
    out += "(--show-skipped lists each skipped row; --format json or csv gives every row with its reason)\n";
  return out;
}

json comparison_json(const validation::Comparison& c) {
  return {{"quantity", c.quantity},     {"unit", c.unit},
          {"measured", json_number(c.measured)}, {"predicted", json_number(c.predicted)},
          {"error_pct", json_number(c.error_pct)}, {"speed_error_pct", json_number(c.speed_error_pct())},
          {"higher_is_faster", c.higher_is_faster}};
}

json stats_json(const validation::ErrorStats& s) {
  return {{"rows", s.rows},
          {"predicted", s.predicted},
          {"skipped", s.skipped},
          {"median_abs_error_pct", s.predicted ? json_number(s.median_abs_pct) : json(nullptr)},
          {"p90_abs_error_pct", s.predicted ? json_number(s.p90_abs_pct) : json(nullptr)},
          {"median_speed_error_pct", s.predicted ? json_number(s.median_speed_pct) : json(nullptr)}};
}

/// Named statistics as a JSON array, each object's name under `key`.
json named_json(const std::vector<validation::NamedStats>& v, const char* key) {
  json a = json::array();
  for (const auto& g : v) {
    json s = stats_json(g.stats);
    s[key] = g.name;
    a.push_back(std::move(s));
  }
  return a;
}

std::string render_json(const PublishedReport& r) {
  json j;
  j["file"] = r.file;
  j["group"] = r.group_filter.empty() ? json(nullptr) : json(r.group_filter);
  j["error_definition"] = kErrorDefinition;
  j["summary"] = stats_json(r.overall);
  j["summary"]["predicted_not_fitting"] = r.predicted_not_fitting;
  j["by_group"] = named_json(r.by_group, "group");
  j["fit_without_group"] = r.fit_without_group.empty() ? json(nullptr) : json(r.fit_without_group);
  j["by_subset"] = json::array();
  for (const auto& g : r.by_subset) {
    json s = stats_json(g.stats);
    s["group"] = g.group;
    s["subset"] = g.subset;
    j["by_subset"].push_back(s);
  }
  j["by_category"] = named_json(r.by_category, "category");
  j["end_to_end"] = stats_json(r.end_to_end);
  j["by_framework"] = named_json(r.by_framework, "framework");
  j["by_generation"] = named_json(r.by_generation, "generation");
  j["memory"] = stats_json(r.memory.stats);
  j["memory"].erase("median_speed_error_pct");
  j["memory"]["median_error_pct"] = r.memory.stats.predicted ? json_number(r.memory.median_error_pct) : json(nullptr);
  j["memory"]["predicted_not_fitting"] = r.memory.not_fitting;
  j["memory"]["definition"] = kMemoryNote;
  j["skip_reasons"] = json::array();
  for (const auto& [reason, n] : r.skip_reasons) j["skip_reasons"].push_back({{"reason", reason}, {"rows", n}});
  j["rows"] = json::array();
  for (const auto& x : r.results) {
    json o = {{"id", x.id},
              {"group", x.group},
              {"category", std::string(spec::name(x.category))},
              {"gpu", x.gpu},
              {"profile", x.profile.empty() ? json(nullptr) : json(x.profile)},
              {"generation", x.generation.empty() ? json(nullptr) : json(x.generation)},
              {"framework", x.framework.empty() ? json(nullptr) : json(x.framework)},
              {"subset", x.subset()},
              {"status", x.predicted ? "predicted" : "skipped"}};
    if (x.predicted) {
      o["comparison"] = comparison_json(x.primary);
      o["secondary"] = json::array();
      for (const auto& c : x.secondary) o["secondary"].push_back(comparison_json(c));
      o["fits"] = x.fits;
      if (x.memory) {
        o["memory"] = comparison_json(*x.memory);
        o["memory"].erase("speed_error_pct");
        o["memory"].erase("higher_is_faster");
        o["memory"]["memory_kind"] = x.memory_kind;
      }
      o["config"] = x.config;
      o["assumptions"] = x.assumptions;
    } else {
      o["reason"] = x.skip_reason;
    }
    j["rows"].push_back(std::move(o));
  }
  // Invalid UTF-8 in a row's text is replaced, not an internal error.
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string render_csv(const PublishedReport& r) {
  std::string out =
      "id,group,category,gpu,profile,status,quantity,unit,measured,predicted,error_pct,speed_error_pct,fits,precision,"
      "framework,generation,reason,memory_kind,memory_measured_gib,memory_predicted_gib,memory_error_pct\n";
  for (const auto& x : r.results) {
    std::vector<std::string> c = {x.id, x.group, std::string(spec::name(x.category)), x.gpu, x.profile,
                                  x.predicted ? "predicted" : "skipped"};
    if (x.predicted) {
      const auto& p = x.primary;
      c.insert(c.end(), {p.quantity, p.unit, fmt::format("{}", p.measured), fmt::format("{:.6g}", p.predicted),
                         fmt::format("{:.2f}", p.error_pct), fmt::format("{:.2f}", p.speed_error_pct()),
                         x.fits ? "true" : "false", x.precision, x.framework, x.generation, ""});
    } else {
      c.insert(c.end(), {"", "", "", "", "", "", "", "", x.framework, x.generation, x.skip_reason});
    }
    if (x.memory)
      c.insert(c.end(), {x.memory_kind, fmt::format("{}", x.memory->measured), fmt::format("{:.6g}", x.memory->predicted),
                         fmt::format("{:.2f}", x.memory->error_pct)});
    else
      c.insert(c.end(), {"", "", "", ""});
    for (size_t i = 0; i < c.size(); ++i) {
      if (i) out += ',';
      out += csv_cell(c[i]);
    }
    out += "\n";
  }
  return out;
}

std::string md_table(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows,
                     const std::vector<bool>& right) {
  std::string out = "|";
  for (const auto& h : head) out += " " + h + " |";
  out += "\n|";
  for (size_t c = 0; c < head.size(); ++c) out += right[c] ? "---:|" : "---|";
  out += "\n";
  for (const auto& r : rows) {
    out += "|";
    for (const auto& cell : r) out += " " + cell + " |";
    out += "\n";
  }
  return out;
}

/// A note as a sentence: its first letter capitalized.
std::string sentence(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

std::string render_markdown(const PublishedReport& r) {
  std::string out = fmt::format(
      "Ridgeline's predictions checked against published measurements (`{}`): {}.\n\n"
      "Error = (predicted - measured) / measured, on the quantity each source prints (step time, tokens/s, "
      "TFLOP/s, bandwidth, launch overhead), under the source's own FLOP convention. *Speed bias* is the median "
      "signed error of the predicted speed: + means Ridgeline predicts faster than measured. Median and p90 of "
      "|error| by linear interpolation. Some kernel-level rows also set Ridgeline's default efficiencies (MAMF "
      "GEMM throughput, gpu-benches launch overhead, STREAM/BabelStream bandwidth), and the end-to-end groups set "
      "the clock a training run holds: for those the in-sample error shows consistency, and the "
      "leave-one-group-out table shows how each group is predicted without its own fit. Each end-to-end row runs "
      "under the framework its source used (`frameworks/`; the row's assumptions say which and why).\n\n",
      r.file, headline(r));
  const std::vector<std::string> head = {"", "rows", "predicted", "skipped", "median abs error", "p90 abs error",
                                         "speed bias"};
  const std::vector<bool> right = {false, true, true, true, true, true, true};
  auto table = [&](const char* col, const std::vector<validation::NamedStats>& v, const validation::ErrorStats& all) {
    std::vector<std::vector<std::string>> t;
    for (const auto& g : v) t.push_back(stats_cells(g.name, g.stats));
    t.push_back(stats_cells("**all**", all));
    auto h = head;
    h[0] = col;
    return md_table(h, t, right);
  };
  out += "### By group\n\n" + table("group", r.by_group, r.overall) + "\n";
  if (!r.by_subset.empty()) {
    auto h = head;
    h[0] = "group / subset";
    out += fmt::format("### By group and subset\n\n{}.\n\n", sentence(kSubsetNote)) +
           md_table(h, subset_cells(r), right) + "\n";
  }
  out += "### By category\n\n" + table("category", r.by_category, r.overall) + "\n";
  if (!r.by_framework.empty()) {
    out += fmt::format("### By framework\n\n{}.\n\n", sentence(kFrameworkNote)) +
           table("framework", r.by_framework, r.end_to_end) + "\n";
    out += fmt::format("### By GPU generation\n\n{}.\n\n", sentence(kGenerationNote)) +
           table("generation", r.by_generation, r.end_to_end) + "\n";
  }
  if (r.memory.stats.rows > 0)
    out += fmt::format("### Peak memory\n\n{}: {}.\n\n", sentence(kMemoryNote), memory_summary(r.memory)) +
           md_table(kMemoryHead, memory_cells(r), kMemoryRight) + "\n";
  if (r.predicted_not_fitting > 0)
    out += fmt::format("Ridgeline's memory model says {} of the predicted runs do not fit, though their sources ran "
                       "them (`fits: false` in `--format json`).\n\n",
                       r.predicted_not_fitting);
  if (!r.skip_reasons.empty()) {
    std::vector<std::vector<std::string>> t;
    for (const auto& [reason, n] : r.skip_reasons) t.push_back({std::to_string(n), reason});
    out += "### Why rows were skipped\n\n" + md_table({"rows", "reason"}, t, {true, false}) + "\n";
  }
  return out;
}

constexpr const char* kCoverageDefinition =
    "each row's interval drawn from the other groups' out-of-sample residuals only (its own group left out of "
    "every pool, as an unseen run's would be); covered = the measured value lies inside; width = (high - low) / "
    "point estimate";

/// The coverage lines in table order: end-to-end (all, by framework, by
/// generation, by source group), then kernels (all, by kind), each with its
/// section's name.
std::vector<std::pair<std::string, const validation::CoverageLine*>> coverage_lines(
    const validation::CoverageReport& c) {
  std::vector<std::pair<std::string, const validation::CoverageLine*>> v;
  v.push_back({"all", &c.overall});
  v.push_back({"end-to-end", &c.end_to_end});
  for (const auto& l : c.by_framework) v.push_back({"framework", &l});
  for (const auto& l : c.by_generation) v.push_back({"generation", &l});
  for (const auto& l : c.by_group) v.push_back({"group", &l});
  if (c.kernels.rows > 0) {
    v.push_back({"kernels", &c.kernels});
    for (const auto& l : c.by_kernel_kind) v.push_back({"kernel kind", &l});
  }
  return v;
}

std::vector<std::string> coverage_head(const validation::CoverageReport& c) {
  std::vector<std::string> h = {"pool", "rows"};
  for (double lv : c.levels) {
    h.push_back(fmt::format("{:.0f}%: covered", lv * 100));
    h.push_back("median width");
  }
  return h;
}

std::vector<std::vector<std::string>> coverage_cells(const validation::CoverageReport& c, bool bold_all) {
  std::vector<std::vector<std::string>> t;
  for (const auto& [section, l] : coverage_lines(c)) {
    const bool all = section == "all" || section == "end-to-end" || section == "kernels";
    std::vector<std::string> r = {all && bold_all ? "**" + l->name + "**" : (all ? l->name : section + " " + l->name),
                                  std::to_string(l->rows)};
    for (size_t i = 0; i < c.levels.size(); ++i) {
      r.push_back(abs_pct(l->covered[i] * 100));
      r.push_back(abs_pct(l->median_width_pct[i]));
    }
    t.push_back(std::move(r));
  }
  return t;
}

std::string render_coverage_table(const validation::CoverageReport& c) {
  std::vector<bool> right(2 + 2 * c.levels.size(), true);
  right[0] = false;
  return fmt::format("\nPrediction-interval coverage, leave one group out ({})\n", kCoverageDefinition) +
         text_table(coverage_head(c), coverage_cells(c, false), right);
}

std::string render_coverage_markdown(const validation::CoverageReport& c) {
  std::vector<bool> right(2 + 2 * c.levels.size(), true);
  right[0] = false;
  return fmt::format(
             "### Prediction-interval coverage\n\n"
             "Nominal against empirical coverage of the prediction intervals (method: docs/accuracy_basis.md, "
             "\"Prediction intervals\"). Each row's interval is drawn from the other groups' out-of-sample "
             "residuals only: its own group is left out of every pool, as an unseen run's would be. *Covered*: the "
             "share of rows whose measured value lies inside; *median width*: (high - low) / point estimate. The "
             "end-to-end rows by framework, by GPU generation and by source group (a group is the unseen source "
             "each of its rows stands for; a source whose rows are kept out of the pools, `interval_pool: false`, "
             "has no line).\n\n") +
         md_table(coverage_head(c), coverage_cells(c, true), right) + "\n";
}

json coverage_json(const validation::CoverageReport& c) {
  json a = json::array();
  for (const auto& [section, l] : coverage_lines(c)) {
    json o = {{"section", section}, {"name", l->name}, {"rows", l->rows}, {"levels", json::array()}};
    for (size_t i = 0; i < c.levels.size(); ++i)
      o["levels"].push_back({{"level", c.levels[i]},
                             {"covered", json_number(l->covered[i])},
                             {"median_width_pct", json_number(l->median_width_pct[i])},
                             {"fallbacks", l->fallbacks[i]}});
    a.push_back(std::move(o));
  }
  return a;
}

/// One leave-one-group-out line: rows, predicted, then median |err|, p90 and
/// speed bias in-sample and left out.
std::vector<std::string> logo_cells(const std::string& name, const validation::ErrorStats& in,
                                    const validation::ErrorStats& out) {
  std::vector<std::string> c = {name, std::to_string(in.rows),
                                in.predicted == out.predicted
                                    ? std::to_string(in.predicted)
                                    : fmt::format("{} ({} left out)", in.predicted, out.predicted)};
  for (const auto* s : {&in, &out}) {
    const bool any = s->predicted > 0;
    c.push_back(any ? abs_pct(s->median_abs_pct) : "-");
    c.push_back(any ? abs_pct(s->p90_abs_pct) : "-");
    c.push_back(any ? signed_pct(s->median_speed_pct) : "-");
  }
  return c;
}

std::vector<std::vector<std::string>> logo_rows(const std::vector<validation::LeaveOneOutGroup>& lines,
                                                const validation::LeaveOneOutGroup& total, const std::string& all) {
  std::vector<std::vector<std::string>> t;
  for (const auto& g : lines) t.push_back(logo_cells(g.group, g.in_sample, g.left_out));
  t.push_back(logo_cells(all, total.in_sample, total.left_out));
  return t;
}

/// Every row pooled, as the "all" line of the per-group table.
validation::LeaveOneOutGroup logo_all(const LeaveOneOutReport& r) { return {"all", r.in_sample, r.left_out}; }

/// The leave-one-group-out tables: per group (every row), then per framework
/// and per GPU generation (end-to-end rows), each with its "all" line; a
/// table as `render(first column, title, note, rows)` draws it (the first
/// table has no title).
template <class Render>
std::string logo_tables(const LeaveOneOutReport& r, const std::string& all, Render render) {
  std::string out = render("group", "", "", logo_rows(r.groups, logo_all(r), all));
  if (r.by_framework.empty()) return out;
  out += render("framework", "By framework", kFrameworkNote, logo_rows(r.by_framework, r.end_to_end, all));
  out += render("generation", "By GPU generation", kGenerationNote, logo_rows(r.by_generation, r.end_to_end, all));
  return out;
}

const std::vector<bool> kLogoRight = {false, true, true, true, true, true, true, true, true};

std::string render_logo_table(const LeaveOneOutReport& r, const validation::CoverageReport& cov) {
  std::string out = fmt::format("Ridgeline vs published measurements, leave one group out: {}{}\n{}\n{}\n\n", r.file,
                                r.group_filter.empty() ? "" : fmt::format(" (group {})", r.group_filter),
                                kLeaveOneOutDefinition, kErrorDefinition);
  return out + logo_tables(r, "all", [](const char* col, std::string_view title, std::string_view note,
                                       const auto& rows) {
           return (title.empty() ? std::string() : fmt::format("\n{} ({})\n", title, note)) +
                  text_table({col, "rows", "predicted", "in-sample median |err|", "p90", "speed bias",
                              "left-out median |err|", "p90", "speed bias"},
                             rows, kLogoRight);
         }) + render_coverage_table(cov);
}

std::string render_logo_json(const LeaveOneOutReport& r, const validation::CoverageReport& cov) {
  json j;
  j["file"] = r.file;
  j["group"] = r.group_filter.empty() ? json(nullptr) : json(r.group_filter);
  j["definition"] = kLeaveOneOutDefinition;
  j["error_definition"] = kErrorDefinition;
  auto both = [](const validation::LeaveOneOutGroup& g) {
    return json{{"in_sample", stats_json(g.in_sample)}, {"left_out", stats_json(g.left_out)}};
  };
  auto lines = [&](const std::vector<validation::LeaveOneOutGroup>& v, const char* key) {
    json a = json::array();
    for (const auto& g : v) {
      json o = both(g);
      o[key] = g.group;
      a.push_back(std::move(o));
    }
    return a;
  };
  j["groups"] = lines(r.groups, "group");
  j["all"] = both(logo_all(r));
  j["end_to_end"] = both(r.end_to_end);
  j["by_framework"] = lines(r.by_framework, "framework");
  j["by_generation"] = lines(r.by_generation, "generation");
  j["coverage"] = coverage_json(cov);
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string render_logo_csv(const LeaveOneOutReport& r) {
  std::string out =
      "group,rows,predicted,left_out_predicted,in_sample_median_abs_error_pct,in_sample_p90_abs_error_pct,"
      "in_sample_median_speed_error_pct,left_out_median_abs_error_pct,left_out_p90_abs_error_pct,"
      "left_out_median_speed_error_pct\n";
  auto line = [&](const std::string& name, const validation::ErrorStats& in, const validation::ErrorStats& lo) {
    auto f = [](const validation::ErrorStats& s, double v) { return s.predicted ? fmt::format("{:.2f}", v) : ""; };
    out += fmt::format("{},{},{},{},{},{},{},{},{},{}\n", csv_cell(name), in.rows, in.predicted, lo.predicted,
                       f(in, in.median_abs_pct), f(in, in.p90_abs_pct), f(in, in.median_speed_pct),
                       f(lo, lo.median_abs_pct), f(lo, lo.p90_abs_pct), f(lo, lo.median_speed_pct));
  };
  for (const auto& g : r.groups) line(g.group, g.in_sample, g.left_out);
  line("all", r.in_sample, r.left_out);
  return out;
}

std::string render_logo_markdown(const LeaveOneOutReport& r, const validation::CoverageReport& cov) {
  std::string out = fmt::format(
      "### Leave one group out\n\n"
      "Each group's rows predicted twice: in-sample, with every cost-model default as fitted, and left out, with "
      "the defaults fitted on that group's own rows at their priors (the values from the literature before the "
      "fit). A group no default was fitted on predicts the same both ways; the gap elsewhere is how much of its "
      "in-sample accuracy the fit bought. **all** pools every group's rows; in the tables by framework and by GPU "
      "generation, every group's end-to-end rows.\n\n");
  return out + logo_tables(r, "**all**", [](const char* col, std::string_view title, std::string_view note,
                                           const auto& rows) {
           const std::string head =
               title.empty() ? "" : fmt::format("#### {}\n\n{}.\n\n", title, sentence(std::string(note)));
           return head +
                  md_table({col, "rows", "predicted", "in-sample median abs error", "in-sample p90",
                            "in-sample speed bias", "left-out median abs error", "left-out p90",
                            "left-out speed bias"},
                           rows, kLogoRight) +
                  "\n";
         }) + render_coverage_markdown(cov);
}

constexpr std::string_view kAnchoredDefinition =
    "each stack (group, GPU profile, framework) calibrated on K of its own end-to-end runs, as `calibrate --runs` "
    "does for a pilot: the K with the fewest GPUs (then the first by id) set the stack's step-time scale (their "
    "measured / predicted times weighed against the prior of the published sources' offsets, tau and sigma_w from "
    "the residuals with the group left out); the stack's other runs are predicted with it. Base predictions with "
    "each group's own fits left out. Figures over those other runs, unanchored beside anchored; in 80%: the share "
    "measured inside their anchored 80% interval";

std::vector<std::vector<std::string>> anchored_rows(const validation::AnchoredReport& r, const std::string& all) {
  std::vector<std::vector<std::string>> t;
  auto cells = [](const std::string& name, const validation::AnchoredGroup& g) {
    std::vector<std::string> c = {name, std::to_string(g.stacks), std::to_string(g.anchors),
                                  std::to_string(g.anchored.predicted)};
    for (const auto* s : {&g.unanchored, &g.anchored}) {
      const bool any = s->predicted > 0;
      c.push_back(any ? abs_pct(s->median_abs_pct) : "-");
      c.push_back(any ? abs_pct(s->p90_abs_pct) : "-");
      c.push_back(any ? signed_pct(s->median_speed_pct) : "-");
    }
    c.push_back(g.interval_rows > 0 ? fmt::format("{:.0f}%", 100.0 * g.interval_covered / g.interval_rows) : "-");
    return c;
  };
  for (const auto& g : r.groups) t.push_back(cells(g.name, g));
  t.push_back(cells(all, r.all));
  return t;
}

}  // namespace

std::string render_published(const PublishedReport& r, const std::string& format, bool show_skipped) {
  if (format == "markdown") return render_markdown(r);
  if (format == "json") return render_json(r);
  if (format == "csv") return render_csv(r);
  return render_table(r, show_skipped);
}

std::string render_anchored(const validation::AnchoredReport& r, const std::string& file, const std::string& f) {
  const std::vector<bool> right = {false, true, true, true, true, true, true, true, true, true, true};
  if (f == "json") {
    json j;
    j["file"] = file;
    j["k"] = r.k;
    j["definition"] = kAnchoredDefinition;
    auto one = [](const validation::AnchoredGroup& g) {
      return json{{"stacks", g.stacks},
                  {"anchors", g.anchors},
                  {"unanchored", stats_json(g.unanchored)},
                  {"anchored", stats_json(g.anchored)},
                  {"anchored_interval_80", {{"rows", g.interval_rows}, {"covered", g.interval_covered}}}};
    };
    j["groups"] = json::array();
    for (const auto& g : r.groups) {
      json o = one(g);
      o["group"] = g.name;
      j["groups"].push_back(std::move(o));
    }
    j["all"] = one(r.all);
    return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  }
  if (f == "markdown")
    return fmt::format("### Anchored on {} run{} per stack\n\n{}.\n\n", r.k, r.k == 1 ? "" : "s",
                       sentence(std::string(kAnchoredDefinition))) +
           md_table({"group", "stacks", "anchors", "predicted", "unanchored median abs error", "unanchored p90",
                     "unanchored speed bias", "anchored median abs error", "anchored p90", "anchored speed bias",
                     "in anchored 80% interval"},
                    anchored_rows(r, "**all**"), right) +
           "\n";
  return fmt::format("Ridgeline vs published measurements, anchored on {} run{} per stack: {}\n{}\n{}\n\n", r.k,
                     r.k == 1 ? "" : "s", file, kAnchoredDefinition, kErrorDefinition) +
         "Columns: median |err|, p90 |err| and median speed bias, unanchored, then anchored.\n" +
         text_table({"group", "stacks", "anchors", "predicted", "unanchored", "p90", "bias", "anchored", "p90", "bias",
                     "in 80%"},
                    anchored_rows(r, "all"), right);
}


std::string render_leave_one_group_out(const LeaveOneOutReport& r, const validation::CoverageReport& cov,
                                       const std::string& format) {
  if (format == "markdown") return render_logo_markdown(r, cov);
  if (format == "json") return render_logo_json(r, cov);
  if (format == "csv") return render_logo_csv(r);
  return render_logo_table(r, cov);
}

}  // namespace ridgeline::report
