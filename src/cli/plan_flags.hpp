// The plan flags shared by predict, compare, search and report.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/launch_config.hpp"
#include "ridgeline/spec/model.hpp"
#include "ridgeline/spec/plan.hpp"
#include "ridgeline/spec/stack_calibration.hpp"

namespace ridgeline::cli {

/// Plan flags shared by predict, compare, search and report: one per field
/// of spec/plan_fields.hpp (same words, ranges and messages as a plan YAML),
/// the Megatron-LM spellings of the common ones (spec::megatron_aliases),
/// and a launch config to import (--from-megatron, --from-torchtitan,
/// --from-deepspeed). Precedence, lowest first: --plan, the imported launch
/// config, Megatron-spelt flags, Ridgeline's flags, --set; then the
/// framework's defaults for what none of them gave (SP with TP > 1 under
/// Megatron and torchtitan: spec::apply_framework_defaults).
struct PlanFlags {
  std::string plan_file;
  std::vector<std::optional<std::string>> values;  // by plan_fields() index: text as given
  std::vector<std::optional<bool>> switches;       // by plan_fields() index: boolean fields
  std::vector<std::optional<std::string>> megatron;  // by spec::megatron_aliases() index; "" for a switch
  std::optional<std::string> global_batch_tokens;
  std::string from_megatron, from_torchtitan, from_deepspeed;
  /// --print-plan: show what the flags and any imported launch config set, then stop.
  bool print_plan = false;
  bool no_calibration = false;
  /// --calibration FILE: a stack calibration (`calibrate --runs`), "" = none.
  std::string calibration;
  /// --price USD: a price per GPU-hour that replaces the profile's
  /// price_per_gpu_hour, as given ("" = the profile's).
  std::string price;
  /// --set FIELD=VALUE (repeatable, overrides.hpp), as given.
  std::vector<std::string> sets;
  /// What the last build() imported (kind "" when no launch config was given).
  mutable spec::ImportReport imported;
  /// Registers the flags on `app`.
  void add_to(CLI::App& app);
  /// Whether the flag of the field with this YAML key was given.
  bool given(std::string_view key) const;
  /// Plan file (if any), imported launch config and flags applied; throws UsageError or SpecError.
  spec::PlanSpec build(const spec::ModelSpec& model) const;
  /// Prints a warning line to stderr, once per process, for each flag that
  /// has no effect on plan `p`: --lora-rank or --lora-targets without a
  /// LoRA or QLoRA fine-tune, and (when `layout_fixed`: the command runs the
  /// plan's layout, not a search over layouts) ZeRO with one data-parallel
  /// rank to shard over. Nothing changes the plan or the exit status.
  void warn(const spec::PlanSpec& p, bool layout_fixed) const;
  /// The --calibration file, read on first use (nullptr when none was
  /// given); a UsageError with --no-calibration, whose predictions the
  /// runs were not fitted to.
  const spec::StackCalibrationSpec* stack_calibration() const;
  /// Puts the --calibration stacks fitted on `hw` into it (the engine
  /// applies the one of a plan's framework) and --price in place of its
  /// price per GPU-hour; nothing without the flags. A --price that is not a
  /// positive, finite number of US dollars is a UsageError.
  void calibrate(spec::HardwareSpec& hw) const;
  /// The --price value in US dollars per GPU-hour; nullopt when not given.
  std::optional<double> price_per_gpu_hour() const;
  /// What predict, advise and report start from: the GPU (its profile with
  /// --set, --calibration and --price applied), the model (with --set) and
  /// the plan built for them, with the GPU generation's defaults.
  struct Inputs {
    spec::HardwareSpec gpu;
    spec::ModelSpec model;
    spec::PlanSpec plan;
  };
  Inputs resolve(const std::string& gpu, const std::string& model) const;

 private:
  mutable std::shared_ptr<const spec::StackCalibrationSpec> stack_calibration_;
  mutable bool warned_ = false;
};


/// A token count as batch sizes are quoted: a whole number with an optional
/// binary suffix K, M or G (4M = 4 x 2^20 = 4194304) and an optional word
/// "tokens"; nullopt with `error` set otherwise.
std::optional<long long> parse_batch_tokens(std::string_view text, std::string& error);

/// A word as a shell reads it: as it is when it holds only safe characters, else in single quotes.
std::string shell_quote(const std::string& s);

/// The `ridgeline predict` command line that reproduces plan `p` on `gpu`:
/// every layout field stated (SP as --sp or --no-sp, whatever predict's
/// default), every other plan field that is not its default, and the gpu./model.
/// --set overrides of `flags`.
std::string predict_command(const std::string& gpu, const std::string& model, const PlanFlags& flags,
                            const spec::PlanSpec& p);

}  // namespace ridgeline::cli
