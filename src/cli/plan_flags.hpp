// The plan flags shared by predict, compare, search and report.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/spec/model.hpp"
#include "ridgeline/spec/plan.hpp"

namespace ridgeline::cli {

/// Plan flags shared by predict, compare, search and report: one per field
/// of spec/plan_fields.hpp (same words, ranges and messages as a plan YAML).
struct PlanFlags {
  std::string plan_file;
  std::vector<std::optional<std::string>> values;  // by plan_fields() index: text as given
  std::vector<std::optional<bool>> switches;       // by plan_fields() index: boolean fields
  bool no_calibration = false;
  /// --set FIELD=VALUE (repeatable, overrides.hpp), as given.
  std::vector<std::string> sets;
  void add_to(CLI::App& app, bool with_parallel = true);
  /// Whether the flag of the field with this YAML key was given.
  bool given(std::string_view key) const;
  /// Plan file (if any) with the flags applied; throws UsageError or SpecError.
  spec::PlanSpec build(const spec::ModelSpec& model) const;
};

}  // namespace ridgeline::cli
