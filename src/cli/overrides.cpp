#include "overrides.hpp"

#include <fmt/format.h>

#include "common.hpp"

namespace ridgeline::cli {

Setting parse_setting(std::string_view text) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0)
    throw UsageError{"--set", fmt::format("expected FIELD=VALUE such as gpu.price_per_gpu_hour=2.10, got \"{}\"", text)};
  Setting s;
  std::string key(text.substr(0, eq));
  s.value = std::string(text.substr(eq + 1));
  if (s.value.size() >= 2 && (s.value.front() == '"' || s.value.front() == '\'') && s.value.back() == s.value.front())
    s.value = s.value.substr(1, s.value.size() - 2);
  s.text = key + "=" + s.value;
  if (key.starts_with("gpu.")) s.target = SetTarget::kGpu, s.field = key.substr(4);
  else if (key.starts_with("model.")) s.target = SetTarget::kModel, s.field = key.substr(6);
  else if (key.starts_with("plan.")) s.target = SetTarget::kPlan, s.field = key.substr(5);
  else s.target = SetTarget::kPlan, s.field = key;
  if (s.field.empty()) throw UsageError{"--set", fmt::format("\"{}\" names no field", text)};
  return s;
}

std::vector<Setting> parse_settings(const std::vector<std::string>& texts) {
  std::vector<Setting> out;
  out.reserve(texts.size());
  for (const auto& t : texts) out.push_back(parse_setting(t));
  return out;
}

std::vector<spec::FieldOverride> field_overrides(const std::vector<std::string>& sets, SetTarget target) {
  std::vector<spec::FieldOverride> out;
  for (const auto& t : sets) {
    Setting s = parse_setting(t);
    if (s.target != target) continue;
    const char* prefix = target == SetTarget::kGpu ? "gpu." : "model.";
    out.push_back({s.field, std::move(s.value), "--set " + std::string(prefix) + s.field});
  }
  return out;
}

bool is_set_key(std::string_view key) {
  return key.starts_with("gpu.") || key.starts_with("model.") || key.starts_with("plan.");
}

void apply_plan_settings(spec::PlanSpec& p, const std::vector<std::string>& sets) {
  for (const auto& s : parse_settings(sets)) {
    if (s.target != SetTarget::kPlan) continue;
    if (auto e = spec::apply_setting(p, s.field, s.value); !e.empty()) throw UsageError{"--set", e};
  }
}

std::string settings_summary(const std::vector<std::string>& sets) {
  if (sets.empty()) return "";
  std::string out = "set ";
  for (size_t i = 0; i < sets.size(); ++i) out += (i ? ", " : "") + parse_setting(sets[i]).text;
  return out;
}

}  // namespace ridgeline::cli
