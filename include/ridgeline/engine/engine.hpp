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
#include "ridgeline/techniques/offload.hpp"

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
  /// Per step: the MoE dispatch and combine all-to-alls' own time, hidden or
  /// not (their exposed share is in exposed_comm_s); 0 without EP.
  double all_to_all_s = 0;
  double compute_bound_s = 0;   // per step: the kernels whose roofline is compute (training_totals' power)
  /// CPU offload (techniques::offload_cost): its bytes and seconds per step;
  /// offload.exposed_s is part of time_s. All zero without offload.
  techniques::OffloadCost offload;
  long long gpus = 1;
  std::string_view flops_convention;  // "causal" or "full" (spec::name: static text)
};

/// Where a run's token count comes from: the plan's `tokens`; Chinchilla's
/// 20 tokens per parameter (Hoffmann et al. 2022), the pre-training default;
/// one billion tokens, the default of a fine-tune (LoRA, QLoRA), whose length
/// is its data set's and has no compute-optimal default, so the totals are a
/// rate per 1B tokens; or one epoch of a data set (`predict --dataset-tokens`).
enum class TokensBasis : std::uint8_t { kPlan, kChinchilla, kPerBillion, kDataset };
/// "plan", "chinchilla_20_per_param", "per_billion_tokens", "dataset_epoch" (the JSON's training.tokens_source).
std::string_view name(TokensBasis b);
/// A plan's basis: its tokens when given; else per 1B tokens for a
/// fine-tune; else Chinchilla's 20 per parameter (never kDataset: predict
/// sets that itself).
TokensBasis tokens_basis(const spec::PlanSpec& p);

/// The run's defaults where neither plan nor profile gives a figure (each
/// overridable; docs/accuracy.md, "Goodput and energy").
/// Llama 3 (Dubey et al. 2024, "The Llama 3 Herd of Models", Sec. 3.3.4):
/// 419 unexpected interruptions in 54 days on 16,384 H100 GPUs,
///   419 / (54 x 24 x 16384) = 1.973e-5 per GPU-hour.
inline constexpr double kLlama3FailuresPerGpuHour = 419.0 / (54.0 * 24.0 * 16384.0);
/// Checkpoint storage: the job's share of Llama 3's Tectonic store, 2 TB/s
/// sustained for 16,384 GPUs (Sec. 3.3.1), 122 MB/s per GPU of the job.
inline constexpr double kCheckpointBytesPerSPerGpu = 2e12 / 16384.0;
/// Restart (reschedule, process start, NCCL init; the checkpoint read is
/// added at the write bandwidth): 10 minutes, the setup section timeout of
/// NVIDIA's fault-tolerance launcher (nvidia-resiliency-ext, as Megatron-Bridge
/// configures it: setup:600), between FlashRecovery's optimised 150 s on
/// 4,800 devices (Zhang et al. 2025) and a job-level reschedule's tens of minutes.
inline constexpr double kDefaultRestartS = 600.0;
/// Board power with the clocks up and no compute-bound kernel, where the
/// profile gives no power.idle: 11.5% of TDP (an H200 SXM measured at 80 W
/// idle of its 700 W; nvidia-smi shows 60-90 W on idle H100 SXM boards).
inline constexpr double kIdlePowerFraction = 0.115;

/// Expected wall clock of a run of ideal length T (no failures) that writes a
/// checkpoint of `write_s` every `interval_s` of compute and fails at rate
/// 1/M over its wall time, each failure losing on average half a segment and
/// a restart R (Young 1974; Daly 2006):
///   W = T (1 + delta / tau) / (1 - ((tau + delta) / 2 + R) / M),  goodput = T / W.
/// tau <= 0 picks Young/Daly's optimum sqrt(2 delta M). mtbf_s <= 0 means no
/// failures (W = T (1 + delta / tau) with a given tau, else T). A
/// denominator <= 0 never completes: completes = false, wall_s = goodput = 0.
struct Goodput {
  double wall_s = 0;
  double goodput = 0;
  double interval_s = 0;  // 0: no checkpoints (no failures and no interval given)
  double expected_failures = 0;
  bool completes = true;
};
Goodput expected_wall(double ideal_s, double write_s, double mtbf_s, double restart_s, double interval_s = 0);

struct TrainingTotals {
  double tokens = 0;
  TokensBasis basis = TokensBasis::kChinchilla;
  bool tokens_default = true;  // basis == kChinchilla (kept for the capacity view)
  double steps = 0;
  double ideal_wall_s = 0;     // steps x step time: no failures, no checkpoints
  /// Expected wall clock with checkpoint writes, lost work and restarts
  /// (expected_wall); 0 when the run never completes.
  double wall_s = 0;
  bool completes = true;       // false: failures come faster than the run recovers
  double goodput = 1;          // ideal_wall_s / wall_s; 0 when it never completes
  double failure_rate_per_gpu_hour = 0;
  double mtbf_s = 0;           // the job's: 1 / (rate x GPUs); 0 = no failures
  double checkpoint_bytes = 0; // weights + masters + optimizer state, once over the job
  double checkpoint_bandwidth_bytes_per_s = 0;  // aggregate
  double checkpoint_write_s = 0;
  double checkpoint_interval_s = 0;  // compute between checkpoints; 0 = none
  double restart_s = 0;        // per failure: restart + checkpoint read
  double expected_failures = 0;
  // From the expected wall clock (lost work burns GPU-hours too); 0 when it never completes.
  double gpu_hours = 0;
  double cost_usd = 0;
  double energy_kwh = 0;       // GPUs x power x wall x PUE
  double compute_bound_share = 0;  // of the step: time in compute-bound kernels / step time
  double power_w = 0;          // average draw per GPU
  double idle_w = 0;           // the model's floor: the profile's power.idle, else kIdlePowerFraction x TDP
  bool power_given = false;    // from the plan's power_utilization, not the model
  double power_utilization = 0;  // power_w / TDP
  double pue = 1;
  double carbon_kg = -1;       // kg CO2e at the plan's grid_carbon; < 0 = not given
};

/// The run's totals from a completed step: tokens, steps, the goodput-
/// adjusted wall clock, GPU-hours, cost and energy. Allocation-free (the
/// search calls it per plan through finish()).
///   checkpoint bytes = weights x weight bytes + trainable x (master + optimizer
///   state bytes), over the whole model once (a LoRA writes its adapters and
///   their state, not the frozen base); write time = bytes / aggregate bandwidth;
///   power per GPU P = P_idle + (TDP - P_idle) s, s = st.compute_bound_s / step_s,
///   unless the plan gives power_utilization (P = TDP x it);
///   energy = GPUs x P x wall x PUE.
/// `lp`: techniques::local_params of the plan (its model_* counts are the whole model's).
void training_totals(TrainingTotals& tt, const StepResult& st, const techniques::LocalParams& lp,
                     const spec::PlanSpec& p, const spec::HardwareSpec& hw);

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
  // How the cost model formed the time (cost::KernelCost), for the advisor's
  // loss decomposition: the compute term per step, the thread blocks and the
  // waves they run in (GEMMs and fused attention; 0 otherwise).
  double compute_s = 0;
  double blocks = 0, waves = 0;
  // Collectives and p2p: ranks in the group, the consecutive ranks it spans
  // (beyond a node's GPUs it crosses the network) and whether it is
  // scheduled to overlap compute (graph::kOverlapped).
  double comm_group = 0, comm_span = 0;
  bool overlapped = false;
  bool per_step = false;  // once per step (graph::kPerStep), not per micro-batch
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
  /// false: finish_time leaves Prediction::totals as they were; the search
  /// forms them (finish_totals) only for a layout it keeps.
  bool totals = true;
  bool use_calibration = true;
  /// Leave-one-group-out validation: see cost::ResolveOptions::without_group.
  std::string_view fit_without_group;
  /// The caller's cost cache (cost::cost_kernel), one per thread; nullptr:
  /// every kernel costed afresh (the same times).
  cost::KernelCache* cache = nullptr;
};

/// The cost parameters a plan runs under on `hw`: the profile (calibrated
/// when opt.use_calibration) at the plan's power limit.
cost::CostParams resolve_for(const spec::HardwareSpec& hw, const spec::PlanSpec& p, const EvalOptions& opt);

/// Checks a plan against the model and GPU (divisibility, fp8 support, batch).
/// Returns an empty Problem when valid.
Problem check_plan(const spec::ModelSpec& m, const spec::PlanSpec& p, const spec::HardwareSpec& hw);

/// Whether check_plan refuses the plan: the field of a problem (empty when
/// valid), without forming a message; allocation-free, for a loop that
/// checks many plans and reports one refusal (the search runs its two
/// halves, below). The framework's and
/// offload's refusals are looked for first, so for a plan with several
/// problems the field may not be the one check_plan names.
std::string_view check_plan_field(const spec::ModelSpec& m, const spec::PlanSpec& p, const spec::HardwareSpec& hw);

/// check_plan_field in two halves, for a search that varies a plan's step
/// fields (virtual stages, ZeRO stage, offload) over the layouts of one
/// graph: check_graph_field runs the checks that read none of them (once
/// per graph), check_step_field those that read one. A plan is refused by
/// check_plan_field exactly when one of the two refuses it.
std::string_view check_graph_field(const spec::ModelSpec& m, const spec::PlanSpec& p, const spec::HardwareSpec& hw);
std::string_view check_step_field(const spec::ModelSpec& m, const spec::PlanSpec& p, const spec::HardwareSpec& hw);

/// One micro-batch's costed graph, summed: everything a step needs that does
/// not depend on the data-parallel layout (DP degree, ZeRO stage, virtual
/// stages, global batch): a function of spec::MicrobatchPlan. A sweep
/// computes it once per distinct micro-batch plan. Times in seconds and
/// FLOPs per micro-batch on one GPU unless a name says per step.
/// The running sums of costed kernels (accumulated in graph order): what
/// finish() adds the layout's step kernels to, on a copy of these alone.
struct KernelSums {
  double t_fwd = 0, t_bwd = 0, t_rec = 0;  // kernel time by phase
  double t_wgrad = 0;  // of t_bwd, the weight-gradient GEMMs (DualPipe's W)
  double t_step_fixed = 0;                 // per-step kernels of the graph (fp8 weight casts, Hessian estimate)
  double exposed_comm_s = 0;               // communication nothing hides
  double all_to_all_s = 0;                 // the MoE dispatch and combine all-to-alls, hidden or not
  double overlappable_comm_s = 0;          // communication that hides behind `window_s`
  double overlappable_comm_sm_s = 0;       // its time x the fraction of the SMs it occupies
  double overlappable_comm_gemm_s = 0;     // its time x the share of an overlapped GEMM's throughput it costs
  double window_s = 0;                     // GEMM + attention time communication can hide behind
  double gemm_window_s = 0;                // the GEMMs' part of window_s
  /// Communication beside the shared expert (graph::kBesideSharedExpert)
  /// and the shared expert's own kernels it hides behind, forward [0] and
  /// backward [1]: as the overlappable sums, with the shared expert's time
  /// as the window.
  std::array<double, 2> beside_shared_comm_s{}, beside_shared_sm_s{}, beside_shared_gemm_s{};
  std::array<double, 2> shared_window_s{}, shared_gemm_window_s{};
  double host_s = 0;                       // CPU time dispatching the micro-batch's kernels (framework)
  double model_flop = 0, recompute_flop = 0, hardware_flop = 0;  // of this GPU's shard (all its layers)
  std::array<double, spec::kKernelClassCount> class_s{}, class_step_s{};
  std::array<double, spec::kPhaseCount> phase_s{}, phase_step_s{};
  double compute_bound_s = 0, compute_bound_step_s = 0;  // kernels whose roofline is compute (energy)
};
struct MicrobatchSummary : KernelSums {
  memory::GraphFacts facts;
  /// Each stage's parameters and the model's counts: what every layout of
  /// this graph shares (DP, ZeRO, virtual stages and offload leave them
  /// unchanged), formed with the graph rather than per layout.
  techniques::StageParams params;
  spec::ParamCounts model_params;
};

/// A layout's step kernels (techniques::append_step_kernels: pipeline p2p,
/// DP/ZeRO collectives, the optimizer step) and their costs, in graph order.
/// They read the micro-batch summary's graph facts and stage parameters, not
/// its kernels: layouts whose plans differ only in recomputation share them
/// (the search keeps one set per stage split, virtual stages, ZeRO and
/// offload of a work item).
struct StepKernels {
  graph::Graph graph;
  std::vector<cost::KernelCost> costs;
};

/// Builds and costs the step kernels of plan `p` on micro-batch summary `s`
/// (through the caller's cost cache when given).
void build_step_kernels(StepKernels& out, const MicrobatchSummary& s, const spec::ModelSpec& m,
                        const spec::PlanSpec& p, const cost::CostParams& c, cost::KernelCache* cache = nullptr);

/// Scratch one evaluation reuses, owned by the caller (one per thread): the
/// micro-batch graph, the layout-dependent step kernels and the summary.
/// After the first evaluation of a model, evaluate_into allocates nothing.
struct Workspace {
  graph::Graph microbatch;
  StepKernels step;
  MicrobatchSummary summary;
  cost::KernelCache cache;  // evaluate_into's, unless its options name another
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
                          Prediction* out, double mb, cost::KernelCache* cache = nullptr);

/// Completes a prediction from a micro-batch summary: DP/ZeRO collectives and
/// the optimizer step (built into `step`), pipeline bubble, memory,
/// metrics and training totals; the status from the memory (ok, or does
/// not fit). `out.problem` must already be empty (a plan check_plan accepts).
void finish(Prediction& out, const MicrobatchSummary& s, StepKernels& step, const spec::ModelSpec& m,
            const spec::PlanSpec& p, const spec::HardwareSpec& hw, const cost::CostParams& c,
            const EvalOptions& opt);

/// finish() in its two parts, which read nothing of each other:
/// finish_memory sets the memory, the parameter counts and the status (ok,
/// or does not fit); finish_time the step, the time by class and phase,
/// the kernel rows and the training totals (when opt.totals), from the
/// layout's step kernels (build_step_kernels). A search that drops a layout
/// on its memory completes the time of the others only.
/// `states`: memory::stage_states of the plan when the caller has them
/// (memory::estimate_into); nullptr: formed here.
void finish_memory(Prediction& out, const MicrobatchSummary& s, const spec::ModelSpec& m, const spec::PlanSpec& p,
                   const spec::HardwareSpec& hw, const memory::StageStates* states = nullptr);
void finish_time(Prediction& out, const MicrobatchSummary& s, const StepKernels& step, const spec::ModelSpec& m,
                 const spec::PlanSpec& p, const spec::HardwareSpec& hw, const EvalOptions& opt);
/// The training totals of a prediction finish_time completed (what it forms
/// when opt.totals).
void finish_totals(Prediction& out, const MicrobatchSummary& s, const spec::PlanSpec& p,
                   const spec::HardwareSpec& hw);

/// The time communication scheduled beside compute adds to it (finish()):
/// compute of length C beside a collective of length T holding a fraction f
/// of the SMs takes max(T, C + f T), so the collective adds max(T - C, f T).
/// A persistent GEMM beside it loses gemm_overlap_loss of its throughput
/// (two waves) rather than f. `comm_s`: the overlapped collectives' time;
/// `sm_s`, `gemm_s`: that time weighted by each one's cost::KernelCost
/// sm_fraction and gemm_overlap_loss; `window_s`: the GEMM and attention
/// time it hides behind, `gemm_window_s` the GEMMs' part of it.
double overlap_exposed_s(double comm_s, double sm_s, double gemm_s, double window_s, double gemm_window_s);

/// Micro-batches per step per data-parallel rank.
/// DualPipe's bubble (DeepSeek-V3 report, arXiv 2412.19437, Table 2;
/// github deepseek-ai/DualPipe README): (pp/2 - 1)(F&B + B - 3W), with F&B
/// a forward and a backward chunk run overlapped, B a full backward chunk,
/// W its weight-gradient part; 0 without PP.
double dualpipe_bubble_s(int pp, double f_and_b_s, double b_s, double w_s);
double micro_batches(const spec::PlanSpec& p);

}  // namespace ridgeline::engine
