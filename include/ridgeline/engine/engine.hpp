// Engine: the only orchestrator. evaluate() builds the step graph, runs the
// technique passes, costs every kernel, estimates memory and derives the
// metrics. It never prints; "does not fit" and "TP does not divide heads" are
// a Prediction::status, not an exception, so a sweep goes on.
// Units: seconds, FLOP, bytes; ratios as fractions.
#pragma once

#include <string>
#include <vector>

#include "ridgeline/cost/cost.hpp"
#include "ridgeline/graph/graph.hpp"
#include "ridgeline/memory/memory.hpp"
#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/model.hpp"
#include "ridgeline/spec/plan.hpp"

namespace ridgeline::engine {

enum class Status : std::uint8_t { kOk, kDoesNotFit, kInvalid };
std::string_view name(Status s);

/// Why a plan is invalid: the plan field (as in YAML, e.g. "parallel.tp") and a message.
struct Problem {
  std::string field;
  std::string message;
};

struct StepResult {
  double time_s = 0;
  double tokens_per_step = 0;
  double tokens_per_s = 0;
  double model_flops = 0;       // per step, whole job
  double recompute_flops = 0;   // per step, whole job
  double hardware_flops = 0;    // per step, whole job, everything executed
  double mfu = 0;               // model FLOPs / (time * dense bf16 peak * GPUs)
  double mfu_dtype = 0;         // against the peak of the precision used
  double hfu = 0;               // (model + recompute FLOPs) / (time * bf16 peak * GPUs)
  double micro_batches = 1;     // per data-parallel rank per step
  double microbatch_time_s = 0; // one micro-batch's forward+backward on one GPU
  double compute_time_s = 0;    // sum of kernel times over the step
  double exposed_comm_s = 0;
  double bubble_s = 0;
  double optimizer_s = 0;
  double bubble_fraction = 0;   // of the ideal (bubble-free) time
  double host_s = 0;            // per step: the host's dispatch time (the GPU waits when it exceeds the kernels')
  bool host_bound = false;      // a micro-batch's dispatch outlasts its kernels
  double comm_slowdown_s = 0;   // per step: compute slowed by the SMs overlapped collectives occupy
  long long gpus = 1;
  std::string flops_convention;  // "causal" or "full"
};

/// Where a run's token count comes from: the plan's `tokens`; Chinchilla's
/// 20 tokens per parameter (Hoffmann et al. 2022), the pre-training default;
/// one billion tokens, the default of a fine-tune (LoRA, QLoRA), whose length
/// is its data set's and has no compute-optimal default, so the totals are a
/// rate per 1B tokens; or one epoch of a data set (`predict --dataset-tokens`).
enum class TokensBasis : std::uint8_t { kPlan, kChinchilla, kPerBillion, kDataset };
/// "plan", "chinchilla_20_per_param", "per_billion_tokens", "dataset_epoch" (the JSON's training.tokens_source).
std::string_view name(TokensBasis b);

struct TrainingTotals {
  double tokens = 0;
  TokensBasis basis = TokensBasis::kChinchilla;
  bool tokens_default = true;  // basis == kChinchilla (kept for the capacity view)
  double steps = 0;
  double wall_s = 0;
  double gpu_hours = 0;
  double cost_usd = 0;
  double energy_kwh = 0;
  double power_utilization = 0;
};

struct KernelResult {
  std::string_view name;
  spec::Phase phase;
  spec::KernelClass cls;
  spec::Dtype dtype;
  double count = 0;        // per step
  double flops = 0;        // per instance
  double hbm_bytes = 0;    // per instance
  double intensity = 0;
  cost::Bound bound;
  double time_s = 0;       // per step, all instances
  double share = 0;        // of step compute time
  graph::GemmShape gemm;
};

struct Prediction {
  Status status = Status::kOk;
  Problem problem;
  StepResult step;
  memory::MemoryResult memory;
  TrainingTotals totals;
  spec::ParamCounts params;
  double trainable_params = 0;
  std::vector<KernelResult> kernels;  // filled when EvalOptions::keep_kernels
  // Time by class and by phase (seconds per step).
  std::array<double, spec::kKernelClassCount> time_by_class{};
  std::array<double, spec::kPhaseCount> time_by_phase{};
  bool calibrated = false;
};

struct EvalOptions {
  bool keep_kernels = true;
  bool use_calibration = true;
  /// Leave-one-group-out validation: see cost::ResolveOptions::without_group.
  std::string_view fit_without_group;
};

/// The cost parameters a plan runs under on `hw`: the profile (calibrated
/// when opt.use_calibration) at the plan's power limit.
cost::CostParams resolve_for(const spec::HardwareSpec& hw, const spec::PlanSpec& p, const EvalOptions& opt);

/// Checks a plan against the model and GPU (divisibility, fp8 support, batch).
/// Returns an empty Problem when valid.
Problem check_plan(const spec::ModelSpec& m, const spec::PlanSpec& p, const spec::HardwareSpec& hw);

/// One micro-batch's costed graph, summed: everything a step needs that does
/// not depend on the data-parallel layout (DP degree, ZeRO stage, virtual
/// stages, global batch): a function of spec::MicrobatchPlan. A sweep
/// computes it once per distinct micro-batch plan. Times in seconds and
/// FLOPs per micro-batch on one GPU unless a name says per step.
struct MicrobatchSummary {
  double t_fwd = 0, t_bwd = 0, t_rec = 0;  // kernel time by phase
  double t_step_fixed = 0;                 // per-step kernels of the graph (fp8 weight casts, Hessian estimate)
  double exposed_comm_s = 0;               // communication nothing hides
  double overlappable_comm_s = 0;          // communication that hides behind `window_s`
  double overlappable_comm_sm_s = 0;       // its time x the fraction of the SMs it occupies
  double window_s = 0;                     // GEMM + attention time communication can hide behind
  double host_s = 0;                       // CPU time dispatching the micro-batch's kernels (framework)
  double model_flop = 0, recompute_flop = 0, hardware_flop = 0;  // of this GPU's shard (all its layers)
  std::array<double, spec::kKernelClassCount> class_s{}, class_step_s{};
  std::array<double, spec::kPhaseCount> phase_s{}, phase_step_s{};
  memory::GraphFacts facts;
};

/// Scratch one evaluation reuses, owned by the caller (one per thread): the
/// micro-batch graph, the layout-dependent step kernels and the summary.
/// After the first evaluation of a model, evaluate_into allocates nothing.
struct Workspace {
  graph::Graph microbatch;
  graph::Graph step;
  MicrobatchSummary summary;
};

/// Evaluates one configuration (allocates its own workspace: for one-off
/// predictions; loops use evaluate_into).
Prediction evaluate(const spec::ModelSpec& m, const spec::PlanSpec& p, const spec::HardwareSpec& hw,
                    const EvalOptions& opt = {});

/// Same, into `out` with the caller's workspace and costs resolved once (cost::resolve).
void evaluate_into(Prediction& out, Workspace& ws, const spec::ModelSpec& m, const spec::PlanSpec& p,
                   const spec::HardwareSpec& hw, const cost::CostParams& c, const EvalOptions& opt);

/// Builds and costs one micro-batch graph into `s` (and kernel rows into `out`
/// when `out` is given; `mb` scales their per-step counts).
void summarize_microbatch(MicrobatchSummary& s, graph::Graph& g, const spec::ModelSpec& m,
                          const spec::MicrobatchPlan& p, const spec::HardwareSpec& hw, const cost::CostParams& c,
                          Prediction* out, double mb);

/// Completes a prediction from a micro-batch summary: DP/ZeRO collectives and
/// the optimizer step (built into `step_graph`), pipeline bubble, memory,
/// metrics and training totals. `out.status`/`problem` must already be set ok.
void finish(Prediction& out, const MicrobatchSummary& s, graph::Graph& step_graph, const spec::ModelSpec& m,
            const spec::PlanSpec& p, const spec::HardwareSpec& hw, const cost::CostParams& c,
            const EvalOptions& opt);

/// Micro-batches per step per data-parallel rank.
double micro_batches(const spec::PlanSpec& p);

}  // namespace ridgeline::engine
