#include "plan_flags.hpp"

#include <fmt/format.h>

#include "common.hpp"
#include "overrides.hpp"
#include "ridgeline/spec/plan_fields.hpp"

namespace ridgeline::cli {

void PlanFlags::add_to(CLI::App& app, bool with_parallel) {
  const auto fields = spec::plan_fields();
  values.assign(fields.size(), std::nullopt);
  switches.assign(fields.size(), std::nullopt);
  app.add_option("--plan", plan_file, "Training plan YAML (flags override its fields)");
  static const spec::PlanSpec kDefault;
  for (size_t i = 0; i < fields.size(); ++i) {
    const auto& f = fields[i];
    if (f.flag.empty() || (!with_parallel && f.key.starts_with("parallel."))) continue;
    std::string help(f.help);
    if (f.type == spec::FieldType::kWord) help += ": " + f.choices();
    if (f.type == spec::FieldType::kInt) help += fmt::format(" ({:.0f}-{:.0f}", f.lo, f.hi);
    else help += " (";
    if (help.find("default") == std::string::npos)
      help += (help.back() == '(' ? "default " : ", default ") + spec::field_text(f, kDefault);
    help += ")";
    if (help.ends_with(" ()")) help.resize(help.size() - 3);
    const std::string flag = "--" + std::string(f.flag);
    if (f.type == spec::FieldType::kBool) {
      // A flag function runs only when the flag is given (CLI11 assigns an
      // optional<bool> flag target false even when it is absent, which would
      // override the plan file).
      app.add_flag_function(flag + ",!--no-" + std::string(f.flag),
                            [this, i](std::int64_t n) { switches[i] = n > 0; }, help);
      continue;
    }
    const char* type = f.type == spec::FieldType::kInt ? "N" : f.type == spec::FieldType::kWord ? "WORD" : "X";
    app.add_option(flag, values[i], help)->type_name(type);
  }
  app.add_flag("--no-calibration", no_calibration, "Ignore the profile's calibration block");
  app.add_option("--set", sets,
                 "FIELD=VALUE (repeatable): override a field of the GPU profile (gpu.memory.hbm_bandwidth=\"4.8 TB/s\"), "
                 "the model (model.layers=40) or the plan (plan.micro_batch=2), validated as in its YAML file")
      ->type_name("FIELD=VALUE");
}

bool PlanFlags::given(std::string_view key) const {
  const auto fields = spec::plan_fields();
  for (size_t i = 0; i < fields.size() && i < values.size(); ++i)
    if (fields[i].key == key) return values[i].has_value() || switches[i].has_value();
  return false;
}

spec::PlanSpec PlanFlags::build(const spec::ModelSpec& model) const {
  spec::PlanSpec p = plan_file.empty() ? spec::PlanSpec{} : spec::load_plan(plan_file);
  if (plan_file.empty()) p.seq_len = std::min(8192, model.max_seq_len);
  const auto fields = spec::plan_fields();
  for (size_t i = 0; i < fields.size() && i < values.size(); ++i) {
    const auto& f = fields[i];
    if (switches[i]) f.bool_ref(p) = *switches[i];
    if (!values[i]) continue;
    if (auto e = spec::set_field(f, p, *values[i]); !e.empty()) throw UsageError{"--" + std::string(f.flag), e};
  }
  apply_plan_settings(p, sets);
  if (p.global_batch > 0 && p.micro_batch > p.global_batch)
    throw UsageError{"--micro-batch", fmt::format("micro-batch {} exceeds the global batch {}", p.micro_batch,
                                                  p.global_batch)};
  return p;
}

}  // namespace ridgeline::cli
