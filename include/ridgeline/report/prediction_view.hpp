// Views of a Prediction: what to show (JSON document, table rows) for
// `predict`. The JSON is the contract for scripts (fields documented in
// README.md); the table is for people. Views read, printers format.
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

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/uncertainty/interval.hpp"

namespace ridgeline::report {

struct Inputs {
  const spec::HardwareSpec* gpu = nullptr;
  const spec::ModelSpec* model = nullptr;
  const spec::PlanSpec* plan = nullptr;
  double interval_level = uncertainty::kDefaultLevel;  // 0.5 to 0.99
  const uncertainty::IntervalModel* intervals = nullptr;  // nullptr: uncertainty::shipped()
};

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

/// Plan summary as JSON (every technique and parallel degree).
nlohmann::json plan_json(const spec::PlanSpec& p, const spec::ModelSpec& m);
/// The memory categories (memory::kMemoryCategories) by their JSON keys.
nlohmann::json memory_json(const memory::MemoryResult& m);

/// One pipeline stage of `m` (m.first_stage or m.last_stage) as a
/// MemoryResult: its categories, with fragmentation = allocated x
/// m.allocator_reserve and m's workspace, and its allocated, reserved and
/// total; so a view shows a stage as it shows the peak.
memory::MemoryResult stage_memory(const memory::MemoryResult& m, const memory::StageMemory& s);
/// A stage (stage_memory) as JSON: its categories (memory_json) with
/// total_bytes, allocated_bytes, reserved_bytes and in_flight_microbatches.
nlohmann::json stage_json(const memory::MemoryResult& stage);

/// The full prediction document ("ridgeline.prediction/1").
nlohmann::json prediction_json(const engine::Prediction& pred, const Inputs& in, int top_kernels = -1);

/// Terminal table: summary, top kernels by time, memory breakdown, totals.
std::string prediction_table(const engine::Prediction& pred, const Inputs& in, int top_kernels = 12);

/// CSV: one row per kernel (name, phase, class, dtype, count, flops, hbm_bytes, intensity, bound, time_s, share,
/// time_lo_s, time_hi_s); the last two are kernel_interval's ends, empty where it has none.
std::string prediction_csv(const engine::Prediction& pred, const Inputs& in = {});

}  // namespace ridgeline::report
