#include "ridgeline/search/compare.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace ridgeline::search {

std::string parse_variation(const std::string& text, Variation& out) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 >= text.size())
    return fmt::format("expected key=value[,value...] such as recompute=none,full, got \"{}\"", text);
  out.key = text.substr(0, eq);
  out.values.clear();
  std::string rest = text.substr(eq + 1);
  size_t pos = 0;
  while (pos <= rest.size()) {
    const auto comma = rest.find(',', pos);
    std::string v = rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (v.empty()) return fmt::format("empty value in \"{}\"", text);
    out.values.push_back(v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  // Validate each value now, so the error names it before anything runs.
  for (const auto& v : out.values) {
    spec::PlanSpec probe;
    if (auto e = spec::apply_setting(probe, out.key, v); !e.empty()) return e;
  }
  return "";
}

std::vector<CompareRow> compare(const spec::ModelSpec& m, const spec::PlanSpec& base, const spec::HardwareSpec& hw,
                                const std::vector<Variation>& vars, bool use_calibration, std::string& error) {
  std::vector<CompareRow> rows;
  size_t total = 1;
  for (const auto& v : vars) total *= std::max<size_t>(1, v.values.size());
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  opt.use_calibration = use_calibration;
  for (size_t idx = 0; idx < total; ++idx) {
    CompareRow row;
    row.plan = base;
    size_t rem = idx;
    // First variation varies slowest.
    std::vector<size_t> pick(vars.size());
    for (size_t i = vars.size(); i-- > 0;) {
      pick[i] = rem % vars[i].values.size();
      rem /= vars[i].values.size();
    }
    for (size_t i = 0; i < vars.size(); ++i) {
      const auto& val = vars[i].values[pick[i]];
      if (auto e = spec::apply_setting(row.plan, vars[i].key, val); !e.empty()) {
        error = e;
        return {};
      }
      row.values.push_back(val);
    }
    row.pred = engine::evaluate(m, row.plan, hw, opt);
    if (row.pred.status == engine::Status::kInvalid) {
      std::string combo;
      for (size_t i = 0; i < vars.size(); ++i) combo += fmt::format("{}{}={}", i ? " " : "", vars[i].key, row.values[i]);
      error = fmt::format("{}: {}: {}", combo, row.pred.problem.field, row.pred.problem.message);
      return {};
    }
    rows.push_back(std::move(row));
  }
  if (!rows.empty()) {
    const double t0 = rows.front().pred.step.time_s, m0 = rows.front().pred.memory.total;
    for (auto& r : rows) {
      r.speedup = t0 / r.pred.step.time_s;
      r.memory_saved = m0 - r.pred.memory.total;
    }
  }
  return rows;
}

void sort_rows(std::vector<CompareRow>& rows, SortKey key) {
  if (key == SortKey::kNone || rows.size() < 2) return;
  std::stable_sort(rows.begin() + 1, rows.end(), [key](const CompareRow& a, const CompareRow& b) {
    switch (key) {
      case SortKey::kTime: return a.pred.step.time_s < b.pred.step.time_s;
      case SortKey::kMemory: return a.pred.memory.total < b.pred.memory.total;
      case SortKey::kMfu: return a.pred.step.mfu > b.pred.step.mfu;
      default: return false;
    }
  });
}

}  // namespace ridgeline::search
