// Capacity-planning report: the question (GPU profile with its sources, model,
// plan, calibration), the answer (one engine::Prediction), a technique
// comparison (search::compare rows), the best layouts and how they scale
// (search::run at a few GPU counts), compute-optimal sizing for a budget
// (Chinchilla) and the assumptions behind every figure. Every predicted time,
// rate and total comes with its prediction interval (uncertainty::Interval
// at CapacityInputs::interval_level), and peak memory with its range
// (uncertainty::memory_interval).
//
// CapacityView is the report model: make_capacity_view() reads engine, compare
// and search results into it, and the Markdown, HTML (with its SVG charts) and
// JSON printers read only it, so the three show the same facts. Units as
// everywhere: seconds, bytes, FLOP, FLOP/s, USD, kWh; ratios as fractions.
#pragma once

#include <memory>

#include "ridgeline/advise/advise.hpp"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/report/calibration_view.hpp"
#include "ridgeline/search/compare.hpp"
#include "ridgeline/search/search.hpp"
#include "ridgeline/uncertainty/interval.hpp"

namespace ridgeline::report {

/// How much training the question asks for, when it is a budget.
enum class BudgetKind : std::uint8_t { kNone, kGpuHours, kUsd };

struct Budget {
  BudgetKind kind = BudgetKind::kNone;
  double value = 0;  // GPU-hours or USD
};

/// GPU-hours a budget buys: H itself, or D / price per GPU-hour (0 when the
/// profile has no price).
double budget_gpu_hours(const Budget& b, const spec::HardwareSpec& hw);

/// Tokens a budget of `gpu_hours` trains the predicted configuration on:
/// steps = gpu_hours / (step time x GPUs / 3600), tokens = steps x tokens per step.
double tokens_for_gpu_hours(const engine::Prediction& p, double gpu_hours);

/// One search at one GPU count (the scaling chart).
struct ScalingRun {
  int gpus = 0;
  search::SearchResult result;
  /// The traits of result.top.front() (the caller evaluates it); none: no interval.
  std::optional<uncertainty::RunTraits> best_traits;
};

/// A technique combination's own layout search (search::run with the
/// combination's recompute and precision fixed, its attention and fusion in
/// the base plan): the row of the technique grid it belongs to, the best
/// layout that fits (when any does) and its prediction.
struct TechniqueSearch {
  bool searched = false;         // false: the row stays at the report's layout
  std::string problem;           // why no search could run ("" when it ran)
  search::SearchResult result;   // result.top.front() is the best layout, when any fits
  spec::PlanSpec plan;           // the best layout's plan (valid when result.top is not empty)
  engine::Prediction pred;       // its prediction
};

/// Everything the report is built from: the caller runs the engine, compare
/// and search; the view only reads them.
struct CapacityInputs {
  const spec::HardwareSpec* gpu = nullptr;
  const spec::ModelSpec* model = nullptr;
  spec::PlanSpec plan;              // the plan of `prediction` (the best layout when searched)
  engine::Prediction prediction;    // with kernels kept
  bool use_calibration = true;
  /// --calibration's file (nullptr: none); the stacks it fitted on `gpu` are attached to it.
  const spec::StackCalibrationSpec* stack_calibration = nullptr;
  std::vector<search::Variation> vary;
  std::vector<search::CompareRow> compare_rows;
  /// One per compare row when the report searched layouts (each technique
  /// combination re-searched); empty: every row is at the report's layout.
  std::vector<TechniqueSearch> technique_searches;
  bool searched = false;
  search::SearchSpec search_spec;
  search::SearchResult search;      // at search_spec.gpus
  std::vector<ScalingRun> scaling;  // ascending GPU counts, including search_spec.gpus
  Budget budget;
  std::string command;              // the command line, for the reader to rerun
  double interval_level = uncertainty::kDefaultLevel;
  const uncertainty::IntervalModel* intervals = nullptr;  // nullptr: uncertainty::shipped()
  /// The traits of each search.top candidate, in order (the caller evaluates
  /// them); shorter: the rest have no interval.
  std::vector<uncertainty::RunTraits> top_traits;
  /// Memory headroom the plan must leave free, as a fraction of capacity
  /// (0: none; the memory chart draws its line when > 0).
  double headroom_frac = 0;
  /// "set gpu.price_per_gpu_hour=2.10, model.layers=40" (cli settings_summary) or "".
  std::string settings;
};

/// A figure's prediction interval: the measured value is expected in
/// [lo, hi] at the interval's level. Not `valid` when no interval could be
/// drawn (the interval's note says why).
struct Range {
  bool valid = false;
  double lo = 0, hi = 0;
};
/// A time or a total proportional to it (days, GPU-hours, cost, energy):
/// [t x lo, t x hi].
Range time_range(const uncertainty::Interval& iv, double t);
/// A rate (tokens/s, MFU, tokens per budget): [v / hi, v / lo].
Range rate_range(const uncertainty::Interval& iv, double v);

struct SourceLine {
  std::string field;
  std::string text;
};

struct Residual {
  std::string cls;
  int records = 0;
  double median_abs_pct = 0, p90_abs_pct = 0;  // percent, as the calibration block stores them
};

struct GpuFacts {
  std::string id, name, architecture;
  std::string source_file;  // the profile as it was read ("hardware_profiles/h100_sxm.yaml", a user's file)
  /// Price and TDP: NaN when the profile has none (cost and energy are then unknown, never $0).
  double memory_bytes = 0, hbm_bytes_per_s = 0, price_per_gpu_hour_usd = 0, tdp_w = 0;
  bool price_known = false, tdp_known = false;
  std::vector<std::pair<std::string, double>> peaks;  // precision -> dense FLOP/s, supported ones
  std::vector<SourceLine> sources;
};

struct CalibrationFacts {
  bool present = false;  // the profile has a calibration block
  bool used = false;     // and the prediction used it
  std::string status;    // one sentence
  std::string measurements, device, date;
  std::vector<Residual> residuals;
  /// --calibration (a stack fitted to measured runs): its use for the
  /// answer's plan (calibration_view.hpp); runs_given false without one.
  bool runs_given = false;
  bool runs_applied = false;
  std::string runs_line;
  nlohmann::json runs_json;
};

struct ModelFacts {
  std::string id, name, source_file;
  double params = 0, active_params = 0, trainable_params = 0;
  int layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn_hidden = 0, vocab = 0;
  std::string architecture;  // "swiglu, rmsnorm, rope"
};

struct PlanFacts {
  std::string summary;  // spec::plan_summary
  std::string framework_id, framework_name;  // spec::FrameworkSpec: "megatron", "Megatron-LM (...)"
  nlohmann::json plan;  // report::plan_json
  long long gpus = 1, global_batch = 1;
  int micro_batch = 1, seq_len = 0;
  double tokens = 0;
  std::string tokens_source;  // "plan", "chinchilla_20_per_param", "budget"
};

/// The answer: one configuration's prediction.
struct Answer {
  std::string status;  // ok, does_not_fit
  double step_time_s = 0, tokens_per_s = 0, tokens_per_s_per_gpu = 0;
  double mfu = 0, mfu_dtype = 0, hfu = 0;
  std::string precision;          // the precision mfu_dtype is quoted against
  double model_flops_per_step = 0, achieved_flop_per_s_per_gpu = 0;
  double compute_time_s = 0, exposed_comm_s = 0, bubble_s = 0, bubble_fraction = 0;
  double host_s = 0;           // per step: the host's dispatch time
  bool host_bound = false;     // a micro-batch's dispatch outlasts its kernels
  double comm_slowdown_s = 0;  // per step: compute slowed by the SMs overlapped collectives occupy
  double micro_batches = 1;
  std::string flops_convention;
  memory::MemoryResult memory;  // the peak stage's
  /// Under pipeline parallelism (memory.peak_stage != "only"): the end
  /// stages by category (report::stage_memory).
  memory::MemoryResult first_stage, last_stage;
  double memory_fraction = 0;  // peak memory / capacity
  double tokens_per_step = 0;
  /// cost_usd is NaN when the profile has no price, energy_kwh when it has no TDP.
  double tokens = 0, steps = 0, days = 0, gpu_hours = 0, cost_usd = 0, energy_kwh = 0;
  /// The wall clock without interruptions or checkpoints, and goodput = ideal / expected (engine::TrainingTotals).
  double ideal_days = 0, goodput = 1;
  /// The step time's prediction interval and the figures it bounds. With a
  /// budget the run's days, GPU-hours, cost and energy are the budget's (a
  /// range of one point) and the tokens it buys vary instead; without one
  /// the tokens are fixed and the totals vary with the step time.
  uncertainty::Interval interval;
  Range step_time_range, tokens_per_s_range, mfu_range, tokens_range;
  Range days_range, gpu_hours_range, cost_range, energy_range;
  uncertainty::MemoryInterval memory_range;  // the peak stage's
};

/// A technique row's memory: the categories of memory::kMemoryCategories.
using MemorySegments = memory::MemoryResult;

struct TechniqueRow {
  std::vector<std::string> settings;  // one per CapacityView::vary_keys
  std::string label;                  // "selective · bf16 · flash2 · fused"
  /// Re-searched (CapacityView::techniques_searched): the best layout of this
  /// combination ("TP2 PP1 DP4 ..."), or "" when no layout fits; the figures
  /// below are that layout's. When no layout fits, they are the report's
  /// layout's (what the combination needs there).
  std::string layout;
  /// The layout its figures are of, without what the label already says:
  /// "TP4 PP1 DP32 CP4 +SP ZeRO-2 mb2" (the combination's best layout, or
  /// the report's layout where none fits or none was searched).
  std::string layout_brief;
  bool any_layout_fits = false;
  std::uint64_t layouts_evaluated = 0, layouts_pruned = 0;
  std::string status;
  double step_time_s = 0, tokens_per_s = 0, mfu = 0, hfu = 0, peak_memory_bytes = 0, speedup = 1;
  double memory_saved_bytes = 0;
  bool fits = false;
  bool best = false;  // the fastest configuration that fits
  MemorySegments memory;
  uncertainty::Interval interval;  // of its step time
  Range step_time_range;
  uncertainty::MemoryInterval memory_range;
};

struct LayoutRow {
  int rank = 0;
  int tp = 1, pp = 1, dp = 1, cp = 1, micro_batch = 1, vpp = 1, zero = 0;
  bool sp = false;
  std::string recompute, precision, label;  // label: "TP8 PP4 DP16 mb1 ZeRO-1 selective bf16"
  double step_time_s = 0, mfu = 0, hfu = 0, memory_bytes = 0, tokens_per_s = 0, bubble_fraction = 0;
  double exposed_comm_s = 0, days = 0, gpu_hours = 0, cost_usd = 0;
  uncertainty::Interval interval;  // of its step time; not valid without traits
  Range step_time_range, mfu_range, days_range, cost_range;
};

struct ScalingPoint {
  int gpus = 0;
  bool feasible = false;
  bool chosen = false;  // the GPU count asked for
  LayoutRow best;
};

struct LayoutsFacts {
  bool present = false;
  int gpus = 0, global_batch = 0;
  std::string objective;
  search::SearchCounts counts;
  std::vector<LayoutRow> top;
  std::vector<ScalingPoint> scaling;
};

/// Chinchilla (Hoffmann et al. 2022): C = 6 N D and D = 20 N, so N = sqrt(C / 120).
struct Sizing {
  bool present = false;
  std::string budget_kind;  // "gpu_hours" or "usd"
  double budget_value = 0;
  double gpu_hours = 0;                    // the budget in GPU-hours
  double achieved_flop_per_s_per_gpu = 0;  // model FLOPs per step / step time / GPUs
  double compute_flop = 0;                 // C = GPU-hours x 3600 x achieved FLOP/s
  double optimal_params = 0, optimal_tokens = 0;
  double model_params = 0;
  double model_tokens = 0;         // what the budget trains the chosen model on
  double model_tokens_per_param = 0;
  double params_ratio = 0;         // chosen model / compute-optimal
  std::string verdict;
};

struct RoofLine {
  std::string precision;
  /// The roof the kernels are costed against: spec_peak_flop_per_s x
  /// Roofline::clock_scale.
  double peak_flop_per_s = 0;
  double spec_peak_flop_per_s = 0;  // the spec sheet's dense peak, at the boost clock
  double ridge_intensity = 0;  // FLOP/byte: peak / HBM bandwidth
};

struct RooflinePoint {
  std::string name, phase, cls, dtype, bound;
  double intensity = 0;       // FLOP per HBM byte
  double flop_per_s = 0;      // achieved on one GPU: FLOPs x count / time
  double time_s = 0, share = 0, hbm_bytes = 0, flops = 0, count = 0;
};

struct Roofline {
  double hbm_bytes_per_s = 0;
  /// The roofs' derivation (cost::resolve): spec peak x clock_ratio x
  /// training_clock_frac = spec peak x clock_scale.
  double boost_clock_hz = 0, clock_hz = 0;  // the spec sheet's boost; the clock the kernels run at
  double power_limit_w = 0;                 // the plan's (0: the profile's TDP)
  double clock_ratio = 1, training_clock_frac = 1, clock_scale = 1;
  std::vector<RoofLine> roofs;
  std::vector<RooflinePoint> points;  // by time, longest first
  int omitted = 0;                    // kernels without FLOPs or HBM traffic (communication, ...)
};

struct TimeShare {
  std::string name;
  double time_s = 0;
  double share = 0;  // of the sum over the breakdown
};

/// One bar of the step as it is spent: the parts add up to the step time.
struct StepPart {
  std::string name;  // "gemm", "exposed communication", "pipeline bubble", ...
  std::string kind;  // "compute", "exposed_comm", "comm_contention", "bubble", "host_wait", "skipped_steps"
  double time_s = 0;
  double share = 0;  // of the step time
};

/// Where the step time goes, as spent: kernel classes that compute, then
/// exposed communication (collectives the step waits for), the compute
/// slowed by the SMs overlapped collectives occupy, the pipeline bubble, the
/// host's dispatch when the GPU waits for it, and fp16 steps redone after an
/// overflow. Communication hidden behind compute is separate: it is not part
/// of the step.
///   hidden = all communication kernel time - (exposed - contention)
struct StepSpent {
  double step_time_s = 0;
  std::vector<StepPart> parts;  // in the order above; compute by time, longest first; non-zero only
  double comm_total_s = 0;      // every collective and p2p kernel of the step
  double comm_exposed_s = 0;    // of which the step waits for
  double comm_hidden_s = 0;     // of which overlaps compute (not in the step)
  double comm_hidden_share = 0, comm_exposed_share = 0;  // of comm_total_s (0 without communication)
};

struct Assumption {
  std::string name, value, source;
};

struct CapacityView {
  std::string title;
  double interval_level = uncertainty::kDefaultLevel;
  std::string command;
  std::string version;
  GpuFacts gpu;
  CalibrationFacts calibration;
  ModelFacts model;
  PlanFacts plan;
  Answer answer;
  std::vector<std::string> vary_keys;
  std::vector<TechniqueRow> techniques;
  int best_technique = -1;  // index into techniques; -1 when none fits
  /// Each combination searched its own best layout (a report with --gpus).
  bool techniques_searched = false;
  double headroom_frac = 0;   // CapacityInputs::headroom_frac
  std::string settings;       // CapacityInputs::settings
  StepSpent step;
  LayoutsFacts layouts;
  Sizing sizing;
  Roofline roofline;
  std::vector<TimeShare> time_by_class;  // longest first, non-zero only
  std::vector<TimeShare> time_by_phase;
  std::vector<Assumption> assumptions;
  /// `ridgeline advise` on the answer's plan (the "What to change" section);
  /// set by the caller after make_capacity_view, null when not asked for.
  std::shared_ptr<const advise::Advice> advice;
};

CapacityView make_capacity_view(const CapacityInputs& in);

/// The JSON document ("ridgeline.capacity/1"): every figure the Markdown and HTML show.
nlohmann::json capacity_json(const CapacityView& v);

/// "TP8 PP4 DP16 mb1 v1 ZeRO-1 +SP selective bf16".
std::string layout_label(const search::Layout& l);

}  // namespace ridgeline::report
