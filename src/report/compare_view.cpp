#include "ridgeline/report/compare_view.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "ridgeline/report/prediction_view.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::report {

std::string compare_table(const std::vector<search::Variation>& vars, const std::vector<search::CompareRow>& rows) {
  using namespace units;
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> head;
  for (const auto& v : vars) head.push_back(v.key);
  for (const char* h : {"step time", "tokens/s", "MFU", "HFU", "peak memory", "fits", "speed-up", "memory saved"})
    head.push_back(h);
  cells.push_back(head);
  for (const auto& r : rows) {
    std::vector<std::string> c = r.values;
    const auto& p = r.pred;
    c.push_back(format_seconds(p.step.time_s));
    c.push_back(format_count(p.step.tokens_per_s));
    c.push_back(format_percent(p.step.mfu));
    c.push_back(format_percent(p.step.hfu));
    c.push_back(format_bytes(p.memory.total));
    c.push_back(p.memory.fits ? "yes" : "NO");
    c.push_back(fmt::format("{:.2f}x", r.speedup));
    c.push_back(fmt::format("{}{}", r.memory_saved >= 0 ? "" : "-", format_bytes(std::abs(r.memory_saved))));
    cells.push_back(c);
  }
  std::vector<size_t> width(head.size(), 0);
  for (const auto& row : cells)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  std::string out;
  for (size_t r = 0; r < cells.size(); ++r) {
    out += " ";
    for (size_t i = 0; i < cells[r].size(); ++i) {
      const bool left = i < vars.size();
      const auto& s = cells[r][i];
      const std::string padding(width[i] - s.size(), ' ');
      out += ' ';
      out += left ? s : padding;
      out += left ? padding : s;
      out += ' ';
    }
    out += "\n";
    if (r == 0) {
      out += " ";
      for (size_t i = 0; i < width.size(); ++i) {
        out += ' ';
        out.append(width[i], '-');
        out += ' ';
      }
      out += "\n";
    }
  }
  return out;
}

nlohmann::json compare_json(const std::vector<search::Variation>& vars, const std::vector<search::CompareRow>& rows,
                            const spec::ModelSpec& model) {
  nlohmann::json j;
  j["schema"] = "ridgeline.compare/1";
  j["vary"] = nlohmann::json::object();
  for (const auto& v : vars) j["vary"][v.key] = v.values;
  j["rows"] = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json e;
    for (size_t i = 0; i < vars.size(); ++i) e["settings"][vars[i].key] = r.values[i];
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
    j["rows"].push_back(std::move(e));
  }
  return j;
}

}  // namespace ridgeline::report
