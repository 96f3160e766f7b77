// Views of a Prediction: what to show (JSON document, table rows, CSV) for
// `predict`. The JSON is the contract for scripts (schema
// "ridgeline.prediction/2", documented field by field in docs/json.md, with
// docs/schemas/prediction.schema.json); the table and the Markdown
// (markdown.hpp) are for people and show the same lines (prediction_summary,
// prediction_kernels, prediction_memory, training_lines). Views read,
// printers format.
//
// Every view shows the prediction's intervals beside the point estimates:
// the step time's (uncertainty::IntervalModel::run_interval; a rate such as
// tokens/s or MFU takes its inverse, and the run's days, GPU-hours, cost and
// energy scale with the step time), peak memory's range
// (uncertainty::memory_interval) and, per GEMM and attention kernel, the
// kernel pools' interval (kernel_interval).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/report/calibration_view.hpp"
#include "ridgeline/report/capacity_text.hpp"
#include "ridgeline/uncertainty/interval.hpp"

namespace ridgeline::report {

/// `predict --micro-batch max`: the largest micro-batch that is valid and
/// fits, and why the next one does not.
struct MicroBatchMax {
  int max = 0;                  // 0: not even a micro-batch of 1 fits
  int next = 0;                 // the next micro-batch tried; 0 when there is none (then `why`)
  bool next_fits_not = false;   // `next` is valid and does not fit (next_peak_bytes of capacity_bytes)
  double next_peak_bytes = 0;
  double capacity_bytes = 0;
  std::string why;              // otherwise: why `next` (or any larger) cannot run
};
/// "micro-batch max: 6 (7 does not fit: needs 81.2 GiB of 80.0 GiB)".
std::string micro_batch_max_line(const MicroBatchMax& x);

struct Inputs {
  const spec::HardwareSpec* gpu = nullptr;
  const spec::ModelSpec* model = nullptr;
  const spec::PlanSpec* plan = nullptr;
  double interval_level = uncertainty::kDefaultLevel;  // 0.5 to 0.99
  const uncertainty::IntervalModel* intervals = nullptr;  // nullptr: uncertainty::shipped()
  const MicroBatchMax* micro_batch_max = nullptr;          // set by `predict --micro-batch max`
  /// --calibration's file (nullptr: none): the header and the JSON say
  /// whether it applied (calibration_view.hpp).
  const spec::StackCalibrationSpec* calibration = nullptr;
};

/// The peaks MFU is quoted against: the dense peak of the precision the
/// GEMMs run in (the plan's `precision`) and the dense bf16 peak.
struct MfuPeaks {
  std::string precision;            // "bf16", "fp8", ...
  double precision_flop_per_s = 0;  // its dense peak
  double bf16_flop_per_s = 0;
  bool other = false;               // precision is not bf16: both figures are shown
};
MfuPeaks mfu_peaks(const engine::Prediction& pred, const Inputs& in);

/// The intervals of one prediction: the step time's (invalid, with a note,
/// without a GPU and a plan or without residuals) and peak memory's range.
struct PredictionIntervals {
  uncertainty::Interval step;
  uncertainty::MemoryInterval memory;
};
PredictionIntervals prediction_intervals(const engine::Prediction& pred, const Inputs& in);

/// The interval of one kernel's time: the kernel pools' for a GEMM or a fused
/// attention kernel on in.gpu (the profile's held-out records when `pred`
/// used its calibration); invalid (rows 0) for every other kernel.
uncertainty::Interval kernel_interval(const engine::KernelResult& k, const engine::Prediction& pred, const Inputs& in);

/// Plan summary as JSON (every technique and parallel degree; the YAML's
/// parallel.virtual_stages is `parallel.vpp`, the name every schema uses).
/// A whole count (bytes, parameters, kernel instances, micro-batches) as a
/// JSON integer, rounded; null when not finite.
nlohmann::json whole_json(double v);
nlohmann::json plan_json(const spec::PlanSpec& p, const spec::ModelSpec& m);
/// A training-step interval's provenance as JSON (predict, report, search,
/// compare): its level, pool, fallback, calibration, widening and held-out coverage.
nlohmann::json interval_json(const uncertainty::Interval& iv);
/// The memory categories (memory::kMemoryCategories) by their JSON keys, in whole bytes.
nlohmann::json memory_json(const memory::MemoryResult& m);

/// One pipeline stage of `m` (m.first_stage or m.last_stage) as a
/// MemoryResult: its categories, with fragmentation = allocated x
/// m.allocator_reserve and m's workspace, and its allocated, reserved and
/// total; so a view shows a stage as it shows the peak.
memory::MemoryResult stage_memory(const memory::MemoryResult& m, const memory::StageMemory& s);
/// A stage (stage_memory) as JSON: its categories (memory_json) with
/// total_bytes, allocated_bytes, reserved_bytes and in_flight_microbatches.
nlohmann::json stage_json(const memory::MemoryResult& stage);

/// The full prediction document ("ridgeline.prediction/2"; docs/json.md).
/// An invalid plan is {schema, status: "invalid", problem: {field, message}}.
nlohmann::json prediction_json(const engine::Prediction& pred, const Inputs& in, int top_kernels = -1);

/// One line of the summary: a label ("step time", "MFU"; "" continues the
/// line above) and its text.
struct SummaryLine {
  std::string label;
  std::string text;
};
/// The summary: step time, throughput, MFU (against the precision's peak and
/// the dense bf16 peak, both named), interval, HFU, communication, memory.
std::vector<SummaryLine> prediction_summary(const engine::Prediction& pred, const Inputs& in);
/// The kernels by time, the first `top_kernels` (all when negative).
/// Without `wide`, no FLOP/B column (the FLOPs over the bytes beside it), so
/// the table keeps to 120 columns.
text::Table prediction_kernels(const engine::Prediction& pred, int top_kernels, bool wide = true);
/// Memory per GPU by category, with each one's share "of capacity".
text::Table prediction_memory(const engine::Prediction& pred);
/// The run's totals: "training run: 160B tokens (Chinchilla: ...) -> 305,176
/// steps, 17.9 days, ..." (or "per 1B tokens" for a fine-tune without
/// --tokens, "one epoch" with --dataset-tokens) and the interval's line.
std::vector<std::string> training_lines(const engine::Prediction& pred, const Inputs& in);

/// Terminal table: summary, top kernels by time, memory breakdown, totals.
std::string prediction_table(const engine::Prediction& pred, const Inputs& in, int top_kernels = 12,
                             bool wide = true);

/// CSV: a header and one summary row (gpu, model, framework, tokens,
/// step_time_s, tokens_per_s, mfu, peak_memory_bytes, fits, wall_clock_days,
/// gpu_hours, cost_usd, ...: docs/json.md).
std::string prediction_csv(const engine::Prediction& pred, const Inputs& in = {});

/// CSV: one row per kernel (name, phase, class, dtype, count, flops, hbm_bytes, intensity, bound, time_s, share,
/// time_lo_s, time_hi_s); the last two are kernel_interval's ends, empty where it has none (`predict --kernels`).
std::string kernels_csv(const engine::Prediction& pred, const Inputs& in = {});

}  // namespace ridgeline::report
