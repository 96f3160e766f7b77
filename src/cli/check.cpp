// ridgeline list and ridgeline check.
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <utility>

#include "commands.hpp"
#include "common.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/measurements.hpp"
#include "ridgeline/spec/published.hpp"
#include "ridgeline/spec/yaml_reader.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::cli {

void register_list(CLI::App& app, int& rc) {
  auto what = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("list", "List the shipped GPU profiles, models or training frameworks");
  cmd->add_option("what", *what, "gpus | models | frameworks")->required();
  cmd->callback([what, &rc] {
    rc = guarded([&] {
      if (*what != "gpus" && *what != "models" && *what != "frameworks")
        throw UsageError{"list", fmt::format("expected gpus, models or frameworks, got \"{}\"", *what)};
      if (*what == "frameworks") {
        for (const auto& f : spec::frameworks())
          std::cout << fmt::format("{:<12} {:<52} fusion {:<8} {} attention, {} cross-entropy\n", f.id, f.name,
                                   spec::to_string(f.fusion), spec::to_string(f.attention),
                                   f.fused_cross_entropy ? "fused" : "eager");
        return kExitOk;
      }
      if (*what == "gpus") {
        for (const auto& n : list_names("hardware_profiles")) {
          auto hw = resolve_gpu(n);
          std::cout << fmt::format("{:<16} {:<28} {:>9}  {:>10}  bf16 {:>14}{}\n", n, hw.name,
                                   units::format_bytes(hw.memory_bytes), units::format_byte_rate(hw.hbm_bytes_per_s),
                                   units::format_flop_rate(hw.peak(spec::Peak::kBf16)),
                                   hw.calibration.present ? "  (calibrated)" : "");
        }
      } else {
        for (const auto& n : list_names("models")) {
          auto m = resolve_model(n);
          auto pc = spec::count_params(m);
          std::cout << fmt::format("{:<18} {:<22} {:>8} params  L={:<3} h={:<5} heads={}/{} vocab={}\n", n, m.name,
                                   units::format_count(pc.total), m.layers, m.hidden, m.heads, m.kv_heads, m.vocab);
        }
      }
      return kExitOk;
    });
  });
}

namespace {

enum class SpecKind { kHardware, kModel, kPlan, kHfConfig, kMeasurements, kPublished };

std::string_view describe(SpecKind k) {
  switch (k) {
    case SpecKind::kHardware: return "hardware profile";
    case SpecKind::kModel: return "model";
    case SpecKind::kPlan: return "training plan";
    case SpecKind::kHfConfig: return "Hugging Face config";
    case SpecKind::kMeasurements: return "measurement file";
    case SpecKind::kPublished: return "published-measurements file";
  }
  return "file";
}

/// What a spec file is: from its folder when it sits in one of the shipped
/// folders, else from its top-level keys. A file that does not parse is
/// checked as what its extension suggests, so its syntax error is reported.
SpecKind spec_kind(const std::string& path) {
  const bool json = path.ends_with(".json");
  if (path.find("hardware_profiles/") != std::string::npos) return SpecKind::kHardware;
  if (path.find("models/") != std::string::npos && !json) return SpecKind::kModel;
  if (path.find("plans/") != std::string::npos) return SpecKind::kPlan;
  YAML::Node root;
  try {
    root = spec::load_yaml_file(path);
  } catch (const support::SpecError&) {
    return json ? SpecKind::kHfConfig : SpecKind::kPlan;
  }
  if (!root.IsMap()) return json ? SpecKind::kHfConfig : SpecKind::kPlan;
  auto has = [&](const char* key) { return static_cast<bool>(std::as_const(root)[key]); };
  if (has("schema")) return SpecKind::kMeasurements;
  if (has("rows")) return SpecKind::kPublished;
  if (json || has("model_type") || has("architectures")) return SpecKind::kHfConfig;
  for (const char* key : {"compute", "memory", "interconnect", "power", "price_per_gpu_hour", "sources", "calibration"})
    if (has(key)) return SpecKind::kHardware;
  for (const char* key : {"layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "moe"})
    if (has(key)) return SpecKind::kModel;
  return SpecKind::kPlan;
}

}  // namespace

void register_check(CLI::App& app, int& rc) {
  auto files = std::make_shared<std::vector<std::string>>();
  auto* cmd = app.add_subcommand(
      "check", "Validate hardware profiles, models, plans, Hugging Face configs and measurement files");
  cmd->add_option("files", *files,
                  "Files to check; the kind comes from the folder (hardware_profiles/, models/, plans/) or, "
                  "elsewhere, from the top-level keys")
      ->required();
  cmd->callback([files, &rc] {
    rc = guarded([&] {
      int bad = 0;
      for (const auto& f : *files) {
        const SpecKind kind = spec_kind(f);
        try {
          switch (kind) {
            case SpecKind::kHardware: spec::load_hardware(f); break;
            case SpecKind::kModel: spec::load_model(f); break;
            case SpecKind::kPlan: spec::load_plan(f); break;
            case SpecKind::kHfConfig: spec::load_hf_config(f); break;
            case SpecKind::kMeasurements: spec::load_measurements(f); break;
            case SpecKind::kPublished: spec::load_published(f); break;
          }
          std::cout << f << ": ok (" << describe(kind) << ")\n";
        } catch (const support::SpecError& e) {
          for (const auto& d : e.diagnostics()) std::cerr << d.format() << "\n";
          ++bad;
        }
      }
      return bad ? kExitBadInput : kExitOk;
    });
  });
}

}  // namespace ridgeline::cli
