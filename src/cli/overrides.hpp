// --set FIELD=VALUE: any field of the GPU profile (gpu.FIELD, the profile's
// YAML path: gpu.memory.hbm_bandwidth, gpu.price_per_gpu_hour), of the model
// (model.FIELD: model.layers) or of the plan (plan.FIELD or a plan setting
// key: plan.micro_batch, tp) from the command line, validated as the YAML
// field is, and named in every output's header. compare --vary takes the
// same FIELD keys for hardware co-design sweeps.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/spec/field_override.hpp"
#include "ridgeline/spec/plan.hpp"

namespace ridgeline::cli {

enum class SetTarget { kGpu, kModel, kPlan };

struct Setting {
  SetTarget target = SetTarget::kPlan;
  std::string field;  // the path inside its file, without the gpu./model./plan. prefix
  std::string value;  // as given (quotes removed)
  std::string text;   // "gpu.memory.hbm_bandwidth=4.8 TB/s", as the header prints it
};

/// Parses one --set value; throws UsageError{"--set", ...} for text without
/// '=' or an unknown target.
Setting parse_setting(std::string_view text);
std::vector<Setting> parse_settings(const std::vector<std::string>& texts);

/// The settings aimed at `target` (gpu.* or model.*) as loader overrides,
/// each labelled "--set gpu.FIELD" for its diagnostics; empty without any.
std::vector<spec::FieldOverride> field_overrides(const std::vector<std::string>& sets, SetTarget target);

/// Whether a --vary key is a --set field (gpu.*, model.*, plan.*).
bool is_set_key(std::string_view key);

/// Applies the plan.* settings to a plan (spec::apply_setting); throws
/// UsageError{"--set", "plan.FIELD: message"}.
void apply_plan_settings(spec::PlanSpec& p, const std::vector<std::string>& sets);

/// "set gpu.memory.hbm_bandwidth=4.8 TB/s, model.layers=40" or "" for none:
/// the header line every planning command prints when --set was given.
std::string settings_summary(const std::vector<std::string>& sets);

}  // namespace ridgeline::cli
