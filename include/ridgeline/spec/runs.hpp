// Measured runs: the user's own training runs, each a GPU, a model, a plan
// and what was measured (a step time or a throughput, optionally peak
// memory), or the framework's own log to read it from (run_logs.hpp).
// `ridgeline calibrate --runs FILE` fits a GPU + framework stack's step-time
// scale and allocator reserve to them (calibrate/runs.hpp). YAML:
//
//   runs:
//     - name: pilot-8xh100
//       gpu: h100_sxm                # profile name or file
//       model: llama3_8b             # name, model YAML or HF config.json
//       plan: "--framework torchtitan --dp 8 --zero 3 --seq 8192 --global-batch 64 --recompute op"
//       measured:
//         tokens_per_s_per_gpu: 5762 # or step_time_s, or tokens_per_s (the whole job's)
//         peak_memory_gib: 61.3      # optional: torch.cuda.max_memory_reserved
//         memory_kind: reserved      # or allocated (max_memory_allocated)
//       source: "torchtitan log, 2026-11-02"
//
// `plan_file:` (a plan YAML, a torchtitan .toml, a DeepSpeed .json or a file
// of Megatron-LM arguments) may stand for or sit under `plan:` (predict's
// --plan / --from-* and its flags); `log: FILE` with `log_format:`
// (detected when absent) stands for `measured:`'s time, and its peak memory
// unless `measured:` gives one. A CSV file (FILE.csv) has the same fields as
// columns, `measured:`'s without the prefix; an empty cell is absent.
// Relative file names (gpu, model, plan_file, log) are read from the runs
// file's folder when a file is there. Times in seconds, memory in GiB (the
// field names say so), rates in tokens per second.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/support/diagnostics.hpp"

namespace ridgeline::spec {

/// What a peak-memory figure measured: PyTorch's caching allocator's peak
/// reserved bytes (torch.cuda.max_memory_reserved) or its peak allocated
/// bytes (max_memory_allocated: the tensors alone, no allocator reserve).
enum class MemoryKind : std::uint8_t { kReserved, kAllocated };
std::string_view name(MemoryKind k);  // "reserved", "allocated"

/// The log formats run_logs.hpp reads.
enum class LogFormat : std::uint8_t { kTorchtitan, kMegatron, kHfTrainerState, kKineto };
std::string_view name(LogFormat f);  // "torchtitan", "megatron", "hf_trainer_state", "kineto"
std::optional<LogFormat> parse_log_format(std::string_view s);
std::string log_format_choices();  // "torchtitan, megatron, hf_trainer_state, kineto"

/// What one run measured: one rate (a step time, tokens/s per GPU, the whole
/// job's tokens/s) and optionally peak memory per GPU. 0 = not given.
struct RunMeasurement {
  double step_time_s = 0;
  double tokens_per_s_per_gpu = 0;
  double tokens_per_s = 0;
  double peak_memory_bytes = 0;
  MemoryKind memory_kind = MemoryKind::kReserved;
  /// How a log reader made the figures ("median of 9 entries (steps 20-100);
  /// warm-up skipped: steps 1, 10"); "" when given in the file.
  std::string basis;
  bool has_time() const { return step_time_s > 0 || tokens_per_s_per_gpu > 0 || tokens_per_s > 0; }
};

struct RunSpec {
  std::string name;
  std::string gpu;        // a profile name, or a file path (resolved against the runs file's folder)
  std::string model;      // a model name, YAML, config.json or folder (likewise)
  std::string plan;       // predict's plan flags, as one string ("--dp 8 --zero 3")
  std::string plan_file;  // a plan YAML or a launch config; "" = none
  std::string log;        // a framework log or profiler trace; "" = none
  std::optional<LogFormat> log_format;  // nullopt: detected
  std::string source;
  RunMeasurement measured;
  /// Where the run and its fields are (for what only the command line can
  /// check: a GPU or model name, the plan's flags); `field` is the run's
  /// dotted path ("runs[0]"; a CSV row's is "row 3").
  std::string field;
  support::SourceLoc loc, gpu_loc, model_loc, plan_loc, plan_file_loc;
};

struct RunsSpec {
  std::string file;
  std::vector<RunSpec> runs;
};

/// Reads a runs file (YAML, or CSV when the name ends in .csv) and every
/// run's log (run_logs.hpp). Throws support::SpecError: the runs file's
/// problems located and collected (unknown keys or columns with a
/// did-you-mean), then a log's, located in the log.
RunsSpec load_runs(const std::string& path);

/// The field names of a run, in table order: the CSV columns
/// (`measured:`'s without the prefix).
std::vector<std::string> run_field_names();

}  // namespace ridgeline::spec
