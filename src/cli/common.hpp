// Shared command-line plumbing: resolving --gpu/--model names, plan flags,
// atomic output, diagnostics and exit codes. Only src/cli prints or exits.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/model.hpp"
#include "ridgeline/spec/plan.hpp"
#include "ridgeline/support/diagnostics.hpp"
#include "plan_flags.hpp"

namespace ridgeline::cli {

/// Exit codes (STYLE.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitInfeasible = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInternal = 3;

/// Raised by the CLI for bad flags; printed as "error: --flag: message".
struct UsageError {
  std::string flag;
  std::string message;
};

/// Directory holding hardware_profiles/ and models/.
std::string data_dir();
std::vector<std::string> list_names(const std::string& subdir);

/// A name under hardware_profiles/ or a YAML file; `sets` are the --set
/// values (overrides.hpp): those aimed at gpu.* are applied to the profile's
/// fields before it is read, validated as the YAML field would be.
spec::HardwareSpec resolve_gpu(const std::string& name_or_file, const std::vector<std::string>& sets = {});
/// A name under models/, a YAML file, or a Hugging Face config.json; `sets`
/// aimed at model.* are applied as for resolve_gpu.
spec::ModelSpec resolve_model(const std::string& name_or_file, const std::vector<std::string>& sets = {});

/// Applies one technique assignment "key=value" (compare --vary, search --fix).
void apply_setting(spec::PlanSpec& p, const std::string& key, const std::string& value, const std::string& flag);

/// Writes `text` to `path` atomically (temp file + rename); "-" or "" means stdout.
/// An existing file at `path` is replaced (docs/errors.md, "Output files").
void write_output(const std::string& path, const std::string& text);

/// Runs a command body, mapping errors to messages and exit codes.
int guarded(const std::function<int()>& body);

/// "error: parallel.tp (--tp): TP 3 does not divide 32 attention heads".
std::string problem_line(const engine::Problem& p);

/// --interval-level on `app` (predict, compare, search, report): the nominal
/// level of the prediction intervals, default uncertainty::kDefaultLevel.
/// Call check_interval_level in the callback.
void add_interval_level(CLI::App& app, double& level);
/// A UsageError for --interval-level outside [0.5, 0.99].
void check_interval_level(double level);

enum class Format { kTable, kJson, kCsv };
Format parse_format(const std::string& s);

}  // namespace ridgeline::cli
