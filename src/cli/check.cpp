// ridgeline list and ridgeline check.
#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <optional>
#include <utility>

#include "commands.hpp"
#include "common.hpp"
#include "overrides.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/launch_config.hpp"
#include "ridgeline/spec/measurements.hpp"
#include "ridgeline/spec/published.hpp"
#include "ridgeline/spec/runs.hpp"
#include "ridgeline/spec/stack_calibration.hpp"
#include "ridgeline/spec/yaml_reader.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::cli {

namespace {

/// "  (private: /opt/gpus/h100_sxm.yaml, replaces the shipped one)" or "".
std::string private_note(const SpecEntry& e) {
  if (!e.private_file) return "";
  return fmt::format("  (private: {}{})", e.path, e.replaces.empty() ? "" : ", replaces the shipped one");
}

}  // namespace

void register_list(Commands& commands, int& rc) {
  auto what = std::make_shared<std::string>();
  auto* cmd = commands.add("list", "List the shipped GPU profiles, models or training frameworks");
  if (!cmd) return;
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
        for (const auto& e : gpu_entries()) {
          auto hw = spec::load_hardware(e.path);
          std::cout << fmt::format("{:<16} {:<28} {:>9}  {:>10}  bf16 {:>14}{}{}\n", e.id, hw.name,
                                   units::format_bytes(hw.memory_bytes), units::format_byte_rate(hw.hbm_bytes_per_s),
                                   units::format_flop_rate(hw.peak(spec::Peak::kBf16)),
                                   hw.calibration.present ? "  (calibrated)" : "", private_note(e));
        }
      } else {
        for (const auto& e : model_entries()) {
          auto m = spec::load_model(e.path);
          auto pc = spec::count_params(m);
          std::cout << fmt::format("{:<18} {:<22} {:>8} params  L={:<3} h={:<5} heads={}/{} vocab={}{}\n", e.id,
                                   m.name, units::format_count(pc.total), m.layers, m.hidden, m.heads, m.kv_heads,
                                   m.vocab, private_note(e));
        }
      }
      return kExitOk;
    });
  });
}

namespace {

enum class SpecKind {
  kHardware,
  kModel,
  kPlan,
  kHfConfig,
  kMeasurements,
  kPublished,
  kRuns,
  kStackCalibration,
  kMegatron,
  kTorchtitan,
  kDeepSpeed,
  kFramework
};

std::string_view describe(SpecKind k) {
  switch (k) {
    case SpecKind::kHardware: return "hardware profile";
    case SpecKind::kModel: return "model";
    case SpecKind::kPlan: return "training plan";
    case SpecKind::kHfConfig: return "Hugging Face config";
    case SpecKind::kMeasurements: return "measurement file";
    case SpecKind::kPublished: return "published-measurements file";
    case SpecKind::kRuns: return "measured-runs file";
    case SpecKind::kStackCalibration: return "stack calibration";
    case SpecKind::kMegatron: return "Megatron-LM launch script";
    case SpecKind::kTorchtitan: return "torchtitan config";
    case SpecKind::kDeepSpeed: return "DeepSpeed config";
    case SpecKind::kFramework: return "framework profile";
  }
  return "file";
}

/// What a spec file is: from its folder when it sits in one of the shipped
/// folders, else from its top-level keys. A file that does not parse is
/// checked as what its extension suggests, so its syntax error is reported.
SpecKind spec_kind(const std::string& path) {
  const bool json = path.ends_with(".json");
  // Launch configs, as --from-megatron, --from-torchtitan and --from-deepspeed read them.
  if (path.ends_with(".sh")) return SpecKind::kMegatron;
  if (path.ends_with(".toml")) return SpecKind::kTorchtitan;
  if (path.find("hardware_profiles/") != std::string::npos) return SpecKind::kHardware;
  if (path.find("frameworks/") != std::string::npos && !json) return SpecKind::kFramework;
  if (path.find("models/") != std::string::npos && !json) return SpecKind::kModel;
  if (path.find("plans/") != std::string::npos && !json) return SpecKind::kPlan;
  if (path.ends_with(".csv")) return SpecKind::kRuns;
  spec::YamlNode root;
  try {
    root = spec::load_yaml_file(path);
  } catch (const support::SpecError&) {
    return json ? SpecKind::kHfConfig : SpecKind::kPlan;
  }
  if (!root.IsMap()) return json ? SpecKind::kHfConfig : SpecKind::kPlan;
  auto has = [&](const char* key) { return root[key].IsDefined(); };
  if (has("schema") && root["schema"].Scalar() == spec::kStackCalibrationSchema) return SpecKind::kStackCalibration;
  if (has("schema")) return SpecKind::kMeasurements;
  if (has("runs")) return SpecKind::kRuns;
  if (has("rows")) return SpecKind::kPublished;
  for (const char* key : {"zero_optimization", "train_batch_size", "train_micro_batch_size_per_gpu"})
    if (json && has(key)) return SpecKind::kDeepSpeed;
  if (json || has("model_type") || has("architectures")) return SpecKind::kHfConfig;
  for (const char* key : {"compute", "memory", "interconnect", "power", "price_per_gpu_hour", "sources", "calibration"})
    if (has(key)) return SpecKind::kHardware;
  for (const char* key : {"layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "moe"})
    if (has(key)) return SpecKind::kModel;
  return SpecKind::kPlan;
}

/// What `check --verbose` understood of a GPU profile: the figures the cost
/// model reads, and the ridge point of each peak (peak / HBM bandwidth, the
/// arithmetic intensity above which a kernel is compute-bound).
std::string describe_gpu(const spec::HardwareSpec& hw) {
  std::string out = fmt::format("  {} ({}, {})\n", hw.name, spec::name(hw.generation), hw.vendor);
  out += fmt::format("  memory        {}, HBM {}\n", units::format_bytes(hw.memory_bytes),
                     units::format_byte_rate(hw.hbm_bytes_per_s));
  for (int i = 0; i < spec::kPeakCount; ++i) {
    const double peak = hw.peak_flop_per_s[i];
    if (!(peak > 0)) continue;
    // int8 counts integer operations (TOP/s), the others floating-point ones.
    const bool ops = i == static_cast<int>(spec::Peak::kInt8);
    const std::string rate = ops ? fmt::format("{:.1f} TOP/s", peak / 1e12) : units::format_flop_rate(peak);
    const std::string ridge = hw.hbm_bytes_per_s > 0
                                  ? fmt::format("ridge {:.1f} {}/byte", peak / hw.hbm_bytes_per_s, ops ? "OP" : "FLOP")
                                  : "";
    out += fmt::format("  peak {:<8} {:<14} {}\n", spec::kPeakNames[i], rate, ridge);
  }
  const auto& ic = hw.interconnect;
  out += fmt::format("  interconnect  {} GPUs a node, {} within, {} between nodes (per GPU, one direction)\n",
                     ic.gpus_per_node,
                     ic.intra_node_bytes_per_s > 0 ? units::format_byte_rate(ic.intra_node_bytes_per_s) : "unknown",
                     ic.inter_node_bytes_per_s > 0 ? units::format_byte_rate(ic.inter_node_bytes_per_s) : "unknown");
  out += fmt::format("  price         {}\n", hw.has_price() ? fmt::format("{:.2f} USD per GPU-hour", hw.price_per_gpu_hour_usd)
                                                          : "unknown (no price_per_gpu_hour: cost is unknown)");
  out += fmt::format("  TDP           {}\n", hw.has_tdp() ? fmt::format("{:g} W", hw.tdp_w)
                                                        : "unknown (no power.tdp: energy is unknown)");
  out += fmt::format("  calibration   {}\n", hw.calibration.present ? "fitted (" + hw.calibration.measurements + ")"
                                                                    : "none (documented default efficiencies)");
  return out;
}

/// What `check --verbose` understood of a model: the architecture the graph
/// is built from and its exact parameter count (spec::count_params).
std::string describe_model(const spec::ModelSpec& m) {
  const auto pc = spec::count_params(m);
  std::string out = fmt::format("  {}{}\n", m.name, m.hub_id.empty() ? "" : " (" + m.hub_id + ")");
  out += fmt::format("  parameters    {} ({:.0f})", units::format_count(pc.total), pc.total);
  if (m.is_moe()) out += fmt::format(", {} active per token", units::format_count(pc.active));
  out += "\n";
  if (m.mtp_layers > 0)
    out += fmt::format("  MTP           {} module{}, {} ({:.0f}) more; embedding and head shared\n", m.mtp_layers,
                       m.mtp_layers > 1 ? "s" : "", units::format_count(pc.mtp), pc.mtp);
  out += fmt::format("  layers        {}\n", m.layers);
  out += fmt::format("  hidden        {}\n", m.hidden);
  if (m.is_mla())
    out += fmt::format("  heads         {}, latent attention: query rank {}, key/value rank {}, query/key head {} "
                       "({} + {} rotary), value head {}\n", m.heads, m.mla.q_lora_rank, m.mla.kv_lora_rank,
                       m.head_dim, m.mla.qk_nope_head_dim, m.mla.qk_rope_head_dim, m.mla.v_head_dim);
  else
    out += fmt::format("  heads         {} query, {} key/value, head dim {}\n", m.heads, m.kv_heads, m.head_dim);
  out += fmt::format("  MLP           {} {}{}\n", spec::name(m.activation), m.ffn_hidden, m.is_moe() ? " per expert" : "");
  out += fmt::format("  experts       {}\n", m.is_moe() ? fmt::format("{}, {} per token", m.moe.experts, m.moe.top_k)
                                                        : std::string("none (dense)"));
  if (m.moe.shared_ffn > 0) out += fmt::format("  shared        an always-active expert of width {}\n", m.moe.shared_ffn);
  if (m.moe.dense_layers > 0)
    out += fmt::format("  dense layers  the first {}, MLP width {}\n", m.moe.dense_layers, m.moe.dense_ffn);
  out += fmt::format("  vocab         {}{}\n", m.vocab, m.tied_embeddings ? " (tied embeddings)" : "");
  out += fmt::format("  sequence      up to {}, {} positions, {}{}\n", m.max_seq_len, spec::name(m.position),
                     spec::name(m.norm), m.bias ? ", biases" : "");
  for (const auto& n : m.notes) out += fmt::format("  note          {}\n", n);
  return out;
}

}  // namespace

void register_check(Commands& commands, int& rc) {
  struct CheckArgs {
    std::vector<std::string> files;
    std::vector<std::string> sets;
    bool verbose = false;
  };
  auto a = std::make_shared<CheckArgs>();
  auto* cmd = commands.add(
      "check", "Validate hardware profiles, models, plans, framework profiles, launch configs, Hugging Face configs, "
               "measurement, measured-runs and stack calibration files, or every such file in a folder");
  if (!cmd) return;
  cmd->add_option("files", a->files,
                  "Files to check; the kind comes from the folder (hardware_profiles/, models/, plans/, frameworks/) or, "
                  "elsewhere, from the top-level keys. A Hugging Face model folder is checked as its config.json, "
                  "any other folder as every .yaml, .yml, .json, .csv, .toml (torchtitan) and .sh (Megatron-LM) file "
                  "directly in it; "
                  "a name that is no file is looked up as --gpu, then as --model, would")
      ->required();
  cmd->add_flag("--verbose,-v", a->verbose,
                "Print what was understood: a model's parameter count, layers, hidden size, heads and experts; a "
                "GPU's peaks per precision, HBM bandwidth, ridge points, price and TDP");
  cmd->add_option("--set", a->sets,
                  "FIELD=VALUE (repeatable): check a profile or model with gpu.FIELD or model.FIELD overridden, as "
                  "predict --set would read it")
      ->type_name("FIELD=VALUE")
      ->allow_extra_args(false);  // one value a --set: the files that follow are files
  cmd->callback([a, &rc] {
    rc = guarded([&] {
      const auto gpu_sets = field_overrides(a->sets, SetTarget::kGpu);
      const auto model_sets = field_overrides(a->sets, SetTarget::kModel);
      // A folder: a Hugging Face model folder is its config.json; any other
      // folder is every input file directly in it, in name order.
      std::vector<std::string> names;
      for (const auto& name : a->files) {
        namespace fs = std::filesystem;
        if (!fs::is_directory(name) || fs::exists(fs::path(name) / "config.json")) {
          names.push_back(name);
          continue;
        }
        std::vector<std::string> inside;
        for (const auto& e : fs::directory_iterator(name)) {
          const std::string ext = e.path().extension().string();
          if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml" || ext == ".json" || ext == ".csv" ||
                                      ext == ".toml" || ext == ".sh"))
            inside.push_back(e.path().string());
        }
        if (inside.empty())
          throw UsageError{"check", fmt::format("'{}' is a folder with no .yaml, .yml, .json, .csv, .toml or .sh file in it", name)};
        std::sort(inside.begin(), inside.end());
        names.insert(names.end(), inside.begin(), inside.end());
      }
      int bad = 0;
      for (const auto& name : names) {
        std::string f = name;
        if (std::filesystem::is_directory(f) && std::filesystem::exists(std::filesystem::path(f) / "config.json"))
          f = (std::filesystem::path(f) / "config.json").string();
        else if (!std::filesystem::exists(f) && !f.ends_with(".yaml") && !f.ends_with(".json")) {
          // A GPU name first (a Hub id has a '/', so is a model's), then a model name.
          bool found = false;
          std::optional<UsageError> gpu_error;
          if (name.find('/') == std::string::npos) {
            try {
              f = resolve_gpu_path(name);
              found = true;
            } catch (const UsageError& e) {
              gpu_error = e;
            }
          }
          if (!found && name.find('/') != std::string::npos) f = resolve_model_path(name);
          if (!found && name.find('/') == std::string::npos) {
            try {
              f = resolve_model_path(name);
            } catch (const UsageError&) {
              // A GPU name that is ambiguous says so; an unknown one is neither kind's.
              if (gpu_error && !gpu_error->message.starts_with("unknown")) throw *gpu_error;
              throw UsageError{"check", fmt::format("'{}' is not a file, nor the name of a GPU profile or a model "
                                                    "(ridgeline list gpus, ridgeline list models)", name)};
            }
          }
        }
        const SpecKind kind = spec_kind(f);
        try {
          std::string understood;
          switch (kind) {
            case SpecKind::kHardware: understood = describe_gpu(spec::load_hardware_with_overrides(f, gpu_sets)); break;
            case SpecKind::kModel: understood = describe_model(spec::load_model_with_overrides(f, model_sets)); break;
            case SpecKind::kPlan: spec::load_plan(f); break;
            case SpecKind::kHfConfig: understood = describe_model(spec::load_hf_config_with_overrides(f, model_sets)); break;
            case SpecKind::kMeasurements: spec::load_measurements(f); break;
            case SpecKind::kPublished: spec::load_published(f); break;
            // A runs file's fields and logs; its GPUs, models and plans are calibrate --runs's to check.
            case SpecKind::kRuns: spec::load_runs(f); break;
            case SpecKind::kStackCalibration: spec::load_stack_calibration(f); break;
            case SpecKind::kMegatron: spec::import_megatron(f); break;
            case SpecKind::kTorchtitan: spec::import_torchtitan(f); break;
            case SpecKind::kDeepSpeed: spec::import_deepspeed(f); break;
            case SpecKind::kFramework: spec::load_framework(f); break;
          }
          std::cout << f << ": ok (" << describe(kind) << ")\n";
          if (a->verbose) std::cout << understood;
        } catch (const support::SpecError& e) {
          for (const auto& d : e.diagnostics()) std::cerr << d.format() << "\n" << d.excerpt();
          ++bad;
        }
      }
      return bad ? kExitBadInput : kExitOk;
    });
  });
}

}  // namespace ridgeline::cli
