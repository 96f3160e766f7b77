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
/// The ids of gpu_entries() (subdir "hardware_profiles") or model_entries() ("models").
std::vector<std::string> list_names(const std::string& subdir);

/// One GPU profile or model file that --gpu or --model can name.
struct SpecEntry {
  std::string id;    // file stem: "h100_sxm"
  std::string path;
  bool private_file = false;  // from a folder of RIDGELINE_PROFILE_PATH / RIDGELINE_MODEL_PATH
  std::string replaces;       // the shipped file of the same id this one hides, or ""
};
/// The GPU profiles: every *.yaml in the folders of RIDGELINE_PROFILE_PATH
/// (colon-separated; a folder that does not exist is a UsageError), then the
/// shipped hardware_profiles/. They add to the shipped set; an id found twice
/// is the first folder's (a private profile wins over a shipped one of the
/// same name, and says so in `list gpus`). Sorted by id.
std::vector<SpecEntry> gpu_entries();
/// The models: RIDGELINE_MODEL_PATH's folders, then models/, as gpu_entries.
std::vector<SpecEntry> model_entries();

/// --gpu: a profile file (a path or NAME.yaml), else a profile id (exactly,
/// then ignoring case), else a name sources print for one (the profile's
/// `aliases` or `name`, compared by spec::normalize_gpu_name: "H100" is
/// h100_sxm). A name that fits several profiles is an error listing them; an
/// unknown one gets a did-you-mean. `sets` are the --set values
/// (overrides.hpp): those aimed at gpu.* are applied to the profile's fields
/// before it is read, validated as the YAML field would be.
spec::HardwareSpec resolve_gpu(const std::string& name_or_file, const std::vector<std::string>& sets = {});
/// --model: a YAML file, a Hugging Face config.json or a folder holding one
/// (named after the folder), else a model id (exactly, then ignoring case),
/// else a shipped model's Hub id ("meta-llama/Meta-Llama-3-8B") or display
/// name ("Llama-3-8B"), both ignoring case. `sets` aimed at model.* are
/// applied as for resolve_gpu (for a config.json, to its own keys).
spec::ModelSpec resolve_model(const std::string& name_or_file, const std::vector<std::string>& sets = {});
/// The file resolve_gpu / resolve_model would read for a name.
std::string resolve_gpu_path(const std::string& name_or_file);
std::string resolve_model_path(const std::string& name_or_file);

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
/// --gpu and --model with their defaults shown (predict, advise).
void add_gpu_and_model(CLI::App& app, std::string& gpu, std::string& model);
/// A UsageError for --interval-level outside [0.5, 0.99].
void check_interval_level(double level);

/// An output format, as its --format word.
enum class Format { kTable, kJson, kCsv, kMarkdown };
/// The help text of --output/-o for a command that writes one file.
inline constexpr std::string_view kOutputHelp = "Write to FILE instead of standard output (atomically)";
/// --format (one of `offered`, "table" by default; the help lists them, with
/// `format_note` after) and --output/-o on `app`: the registration every
/// command that prints a result shares.
void add_format_and_output(CLI::App& app, std::string& format, std::string& output,
                           std::initializer_list<Format> offered, std::string_view format_note = {},
                           std::string_view output_help = kOutputHelp);
/// The Format `s` names among `offered`; otherwise a UsageError on --format:
/// "expected one of table, json, ..., got "s"".
Format parse_format(const std::string& s, std::initializer_list<Format> offered);

}  // namespace ridgeline::cli
