// The advisor: where a plan's step time goes against the ideal, and what to
// change, each change measured by evaluating the changed plan through the
// engine (never by a rule of thumb).
//
// The ideal step runs every forward and backward GEMM and attention kernel at
// the sustained tensor-core peak of its dtype (cost::CostParams at the plan's
// power limit and a training run's clock), and nothing else. The losses
// against it, which with the ideal sum to the predicted step time:
//   - GEMMs below the sustained peak: their time less their FLOPs at the
//     peak, of which tile/wave quantization is the compute term's idle part
//     of the last wave, compute x (1 - blocks / (waves x SMs));
//   - MoE load imbalance: the step less the same plan with balanced experts
//     (moe.imbalance 1), taken out of the GEMM loss;
//   - attention below the sustained peak, the same way;
//   - memory-bound kernels, by class (norms, element-wise, casts, softmax,
//     embedding, loss);
//   - recomputation: every kernel of the recompute phase;
//   - the optimizer step and the step's other once-per-step kernels;
//   - exposed communication, by collective and tier (intra-node or over the
//     network): a collective scheduled without overlap counts whole, the
//     overlapped ones share what their window did not hide;
//   - the pipeline bubble;
//   - host dispatch (the GPU waits on the CPU) and what remains (fp16's
//     skipped steps, rounding).
// Memory pressure is reported beside them: peak over capacity and the
// category that dominates.
//
// The changes tried (each a plan the engine evaluates at the same GPU count
// and global batch): TP x2 and /2, PP x2 and /2, CP x2 and /2 (DP absorbs
// the difference), interleaved stages, micro-batch x2 and /2, SP, TP
// communication overlap, every ZeRO stage, every fusion level (compiled =
// torch.compile), CUDA graphs, FlashAttention 2/3 and cuDNN attention, fp8
// and its recipes, every recomputation granularity, memory-saving
// optimizers, optimizer CPU offload where the framework has it, LoRA <->
// QLoRA for a fine-tune; for an MoE plan under EP whose all-to-alls take at
// least 1% of the step, DeepEP's dispatcher and, under Megatron where
// Megatron-Core takes it, the all-to-alls overlapped with another
// micro-batch (--overlap-moe-expert-parallel-comm); for an MoE plan that
// does not fit with the headroom, Megatron-Core's recompute modules that
// apply (moe_act; layernorm and mla_up_proj on latent attention). For a plan imported from a launch config, only the
// changes its framework offers, each worded as that file's edit; for a
// torchtitan config whose global batch follows its local batch (unset or
// -1), also the local batch x2 and /2 with the global batch it gives (the one
// change that does not keep the global batch: tokens per step differ, and
// the gain is still in tokens/s). A change addresses the loss
// category that fell the most between the two plans' decompositions.
// Suggestions that fit rank by tokens/s gained; memory suggestions rank by
// GiB freed, the ones that cost no time (under 0.5% of the step) first,
// then by GiB per % of step time lost, a change that alters the numerics
// (precision, optimizer, QLoRA) after one that does not at equal savings. Each list keeps the best change of each family (the best fp8
// recipe, the best ZeRO stage, ...). The top three compatible speed suggestions are applied together
// and evaluated, to show how they interact.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/launch_config.hpp"
#include "ridgeline/spec/model.hpp"
#include "ridgeline/spec/plan.hpp"
#include "ridgeline/uncertainty/interval.hpp"

namespace ridgeline::advise {

enum class LossKind : std::uint8_t {
  kGemm,
  kWaveQuantization,
  kMoeImbalance,
  kAttention,
  kMemoryBound,
  kRecompute,
  kOptimizer,
  kExposedComm,
  kBubble,
  kHost,
  kOther,
};
inline constexpr int kLossKindCount = 11;
/// "gemm_below_peak", "tile_wave_quantization", ... (the JSON's loss ids).
std::string_view id(LossKind k);
/// "GEMMs below the sustained peak", ... (the table's words).
std::string_view label(LossKind k);

/// One part of a loss: a kernel class, or a collective on a tier.
struct LossPart {
  std::string name;  // "norm", "tp_all_gather (intra-node)"
  double seconds = 0;
};

struct Loss {
  LossKind kind = LossKind::kOther;
  double seconds = 0;  // per step
  double share = 0;    // of the step time
  std::vector<LossPart> parts;  // largest first
};

/// A step's time as the ideal plus its losses (see the top of this file).
struct Decomposition {
  double step_s = 0;
  double ideal_s = 0;
  std::vector<Loss> losses;  // every kind, in LossKind order
  const Loss& of(LossKind k) const { return losses[static_cast<int>(k)]; }
  double ideal_share() const { return step_s > 0 ? ideal_s / step_s : 0.0; }
};

/// How close the plan is to its GPU's memory, and what fills it.
struct MemoryPressure {
  double peak_bytes = 0, capacity_bytes = 0;
  double fraction = 0;              // peak / capacity
  std::string_view dominant;        // memory::kMemoryCategories label
  double dominant_bytes = 0;
  bool fits = false;
};

/// One changed plan, evaluated.
struct Outcome {
  spec::PlanSpec plan;
  engine::Status status = engine::Status::kOk;
  std::string problem;      // status kInvalid: "parallel.tp: ..."
  double step_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  double peak_bytes = 0;
  bool fits = false;        // the point estimate of peak memory fits
  /// The upper end of peak memory's interval leaves Options::headroom free
  /// (as search qualifies a layout: search::memory_upper_bytes); a plan that
  /// fits without it is "tight".
  bool fits_headroom = false;
  uncertainty::Interval interval;  // on the step time
};

struct Suggestion {
  std::string change;       // in words: "TP 8 -> 4, DP 2 -> 4"
  /// The family of changes ("precision", "attention", "zero", "tp", ...):
  /// each list keeps its best member.
  std::string_view family;
  std::string flags;        // the predict flags that differ from the plan: "--tp 4 --dp 4"
  /// For a plan imported from a launch config: the change in that file's
  /// words (spec::launch_edit: "training.local_batch_size = 2"); "" otherwise.
  std::string edit;
  std::string predict_command;  // the whole `ridgeline predict` line of the changed plan (set by the CLI)
  std::vector<std::string> fields;  // the plan fields it changes (YAML keys)
  LossKind addresses = LossKind::kOther;
  double loss_s = 0, loss_share = 0;  // the base plan's loss it addresses
  Outcome outcome;
  double gain = 0;          // tokens/s over the plan's, less 1
  double time_change = 0;   // the changed plan's step time over the plan's, less 1
  double saved_s = 0;       // step time saved (every change keeps the global batch: the same tokens per step)
  double freed_bytes = 0;   // peak memory freed (negative: it needs more)
  std::string_view frees;   // the memory category that fell the most ("" when none fell)
  /// The change alters what the step computes, not only where and when
  /// (precision, optimizer, LoRA <-> QLoRA): changes_numerics(family).
  bool changes_numerics = false;
  /// The gain's interval at the level: where the ratio of the two plans'
  /// measured tokens/s is expected. Two plans on one stack share a source's
  /// offset, so when their intervals come from one pool only the within-
  /// source spread of each remains: log gain -+ z sqrt(sw_a^2 + sw_b^2);
  /// from different pools, the whole spreads. Invalid when either plan has none.
  bool gain_interval_known = false;
  double gain_lo = 0, gain_hi = 0;  // as gains (ratio - 1)
};

struct Combined {
  bool tried = false;
  std::vector<int> of;   // indices into Advice::speed
  std::string flags;
  std::string edit;             // in the imported launch config's words (Suggestion::edit)
  std::string predict_command;  // set by the CLI
  Outcome outcome;
  double gain = 0;
  double gain_if_independent = 0;  // the product of the parts' (1 + gain), less 1
};

struct Options {
  double level = uncertainty::kDefaultLevel;  // of every interval; 0 = none
  int top = 10;                                // suggestions kept per list
  double headroom = memory::kDefaultHeadroom;  // memory::fit's rule
  engine::EvalOptions eval;
  /// The launch config the plan was imported from (--from-torchtitan,
  /// --from-megatron, --from-deepspeed), or nullptr: each change is then
  /// worded as that file's edit and only the changes its framework offers
  /// are tried (spec::launch_edit).
  const spec::ImportReport* imported = nullptr;
};

struct Advice {
  Outcome base;
  engine::Prediction prediction;  // the plan's own, with its kernels
  Decomposition decomposition;
  MemoryPressure memory;
  std::vector<Suggestion> speed;   // fit, faster, by gain
  std::vector<Suggestion> memory_savers;  // free memory, by the rule above
  Combined combined;
  int evaluated = 0;     // changed plans the engine evaluated
  int invalid = 0;       // of them, plans the model or GPU cannot run
  /// Changes left out because the imported launch config's framework has
  /// no setting for them (Options::imported).
  int not_offered = 0;
  /// The imported file's format ("torchtitan TOML") and path; "" when the
  /// plan was not imported.
  std::string edit_language, edit_file;
};

/// The decomposition of a prediction made with its kernels (keep_kernels)
/// on cost parameters `c`; `balanced_s`, when > 0, is the step time of the
/// same plan with balanced experts (the MoE imbalance loss).
Decomposition decompose(const engine::Prediction& p, const cost::CostParams& c, int gpus_per_node,
                        double balanced_s = 0);

/// Evaluates the plan and every change (see the top of this file).
Advice advise(const spec::ModelSpec& m, const spec::PlanSpec& plan, const spec::HardwareSpec& hw,
              const Options& opt = {});

/// Whether a family of changes alters the numerics of training (another
/// precision, optimizer or quantized base, or a torchtitan local batch that
/// takes the global batch with it), not only the layout, schedule or
/// kernels: "precision", "optimizer", "finetune", "local_batch".
bool changes_numerics(std::string_view family);

/// A time cost below this fraction of the step counts as none when memory
/// savers are ranked: 0.5%, well inside every prediction interval (the
/// narrowest pool's 80% interval is several percent wide), so the model
/// cannot tell such a change from one that costs nothing.
inline constexpr double kNegligibleTimeCost = 0.005;

/// Ranks memory savers, best first: the changes that cost no time
/// (kNegligibleTimeCost) by GiB freed, then the rest by GiB freed per % of
/// step time lost; at equal or better savings a change that keeps the
/// numerics ranks before one that alters them.
void rank_memory_savers(std::vector<Suggestion>& v);

/// The flags that turn plan `from` into plan `to`: one per plan field whose
/// value differs, in plan_fields() order ("--tp 4 --dp 4", "--no-sp").
std::string flags_between(const spec::PlanSpec& from, const spec::PlanSpec& to);
/// The plan fields (YAML keys) whose values differ.
std::vector<std::string> fields_between(const spec::PlanSpec& from, const spec::PlanSpec& to);

}  // namespace ridgeline::advise
