#include "ridgeline/search/compare.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <fmt/format.h>

namespace ridgeline::search {

namespace {

/// A value without the quotes around it ("3.35 TB/s" -> 3.35 TB/s).
std::string unquoted(std::string v) {
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) return v.substr(1, v.size() - 2);
  return v;
}

/// The plan setting a key names: "plan.FIELD" is FIELD.
std::string_view plan_key(std::string_view key) { return key.starts_with("plan.") ? key.substr(5) : key; }

}  // namespace

bool is_subject_key(std::string_view key) {
  return key == "gpu" || key == "model" || key.starts_with("gpu.") || key.starts_with("model.");
}

std::string parse_variation(const std::string& text, Variation& out) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 >= text.size())
    return fmt::format("expected key=value[,value...] such as recompute=none,full, got \"{}\"", text);
  out.key = text.substr(0, eq);
  out.values.clear();
  // Split at the commas outside quotes.
  std::string v;
  char quote = 0;
  const auto flush = [&]() -> bool {
    if (v.empty()) return false;
    out.values.push_back(unquoted(v));
    if (out.values.back().empty()) return false;
    v.clear();
    return true;
  };
  for (size_t i = eq + 1; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == ',') {
      if (!flush()) return fmt::format("empty value in \"{}\"", text);
      continue;
    }
    v += c;
  }
  if (quote) return fmt::format("unmatched {} in \"{}\"", quote, text);
  if (!flush()) return fmt::format("empty value in \"{}\"", text);
  if (is_subject_key(out.key)) return "";
  // Validate each plan value now, so the error names it before anything runs.
  for (const auto& value : out.values) {
    spec::PlanSpec probe;
    if (auto e = spec::apply_setting(probe, plan_key(out.key), value); !e.empty()) return e;
  }
  return "";
}

std::vector<CompareRow> compare(const std::vector<Variation>& vars, const Resolve& resolve, bool use_calibration,
                                std::string& error) {
  std::vector<CompareRow> rows;
  size_t total = 1;
  for (const auto& v : vars) total *= std::max<size_t>(1, v.values.size());
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  opt.use_calibration = use_calibration;
  for (size_t idx = 0; idx < total; ++idx) {
    CompareRow row;
    size_t rem = idx;
    // First variation varies slowest.
    std::vector<size_t> pick(vars.size());
    for (size_t i = vars.size(); i-- > 0;) {
      pick[i] = rem % vars[i].values.size();
      rem /= vars[i].values.size();
    }
    for (size_t i = 0; i < vars.size(); ++i) row.values.push_back(vars[i].values[pick[i]]);
    Subject s = resolve(row.values);
    row.gpu = std::move(s.gpu);
    row.model = std::move(s.model);
    row.plan = std::move(s.plan);
    for (size_t i = 0; i < vars.size(); ++i) {
      if (is_subject_key(vars[i].key)) continue;
      if (auto e = spec::apply_setting(row.plan, plan_key(vars[i].key), row.values[i]); !e.empty()) {
        error = fmt::format("{}={}: {}", vars[i].key, row.values[i], e);
        return {};
      }
    }
    row.pred = engine::evaluate(*row.model, row.plan, *row.gpu, opt);
    rows.push_back(std::move(row));
  }
  if (!rows.empty() && rows.front().pred.status != engine::Status::kInvalid) {
    const auto& b = rows.front().pred;
    for (auto& r : rows) {
      if (r.pred.status == engine::Status::kInvalid || !(b.step.tokens_per_s > 0)) continue;
      r.compared = true;
      r.speedup = r.pred.step.tokens_per_s / b.step.tokens_per_s;
      r.memory_saved = b.memory.total - r.pred.memory.total;
    }
  }
  return rows;
}

std::vector<CompareRow> compare(const spec::ModelSpec& m, const spec::PlanSpec& base, const spec::HardwareSpec& hw,
                                const std::vector<Variation>& vars, bool use_calibration, std::string& error) {
  const Subject s{std::make_shared<const spec::HardwareSpec>(hw), std::make_shared<const spec::ModelSpec>(m), base};
  return compare(vars, [&s](const std::vector<std::string>&) { return s; }, use_calibration, error);
}

double cost_per_token_usd(const CompareRow& r) {
  const auto& t = r.pred.totals;
  if (!r.gpu || !r.gpu->has_price() || !(t.tokens > 0) || !std::isfinite(t.cost_usd) || !(t.cost_usd > 0))
    return std::numeric_limits<double>::infinity();
  return t.cost_usd / t.tokens;
}

void sort_rows(std::vector<CompareRow>& rows, SortKey key) {
  if (key == SortKey::kNone || rows.size() < 2) return;
  std::stable_sort(rows.begin() + 1, rows.end(), [key](const CompareRow& a, const CompareRow& b) {
    const bool ia = a.pred.status == engine::Status::kInvalid, ib = b.pred.status == engine::Status::kInvalid;
    if (ia || ib) return !ia && ib;
    switch (key) {
      case SortKey::kTime: return a.pred.step.time_s < b.pred.step.time_s;
      case SortKey::kMemory: return a.pred.memory.total < b.pred.memory.total;
      case SortKey::kMfu: return a.pred.step.mfu > b.pred.step.mfu;
      case SortKey::kCost: return cost_per_token_usd(a) < cost_per_token_usd(b);
      default: return false;
    }
  });
}

}  // namespace ridgeline::search
