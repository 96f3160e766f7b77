// Parameters held by one GPU under a plan: how many, how many are trained,
// and the matrix shapes the factored optimizers (Adafactor, CAME) and Muon need.
// Counts are elements (not bytes).
#pragma once

#include <algorithm>
#include <array>

#include "ridgeline/spec/model.hpp"
#include "ridgeline/spec/plan.hpp"
#include "ridgeline/spec/precision.hpp"

namespace ridgeline::techniques {

/// `count` trainable matrices of rows x cols elements each (one GPU's shard).
struct MatrixGroup {
  double rows = 0, cols = 0, count = 0;
};

/// The distinct trainable hidden-matrix shapes of one stage: attention (up
/// to five MLA projections), the dense MLP's two, the routed experts' two,
/// the shared expert's two, the router, the dense first layers' two, the
/// MTP module's projection.
inline constexpr int kMaxMatrixGroups = 14;

struct LocalParams {
  double weights = 0;            // parameters stored on this GPU (before ZeRO-3 sharding)
  double frozen = 0;             // of which frozen (LoRA/QLoRA base)
  double trainable = 0;          // trained on this GPU (before ZeRO sharding)
  double matrix_rows_cols = 0;   // sum of (rows + cols) over trainable matrices
  double matrix_elems = 0;       // elements of trainable matrices
  double tensors = 0;            // trainable parameter tensors (launches of an unfused optimizer)
  double model_total = 0;        // whole model
  double model_trainable = 0;    // whole model, trained
  double layers_local = 0;
  double largest_tensor = 0;     // elements of the largest trainable parameter tensor (embedding, head or a matrix)
  double expert_weights = 0;     // of weights, MoE expert matrices (sharded by EP; 0 for dense models)
  double expert_trainable = 0;   // of trainable, expert matrices
  /// Of weights, the decoder layers' linear matrices (QKV, output, MLP and
  /// expert matrices; no biases, norms or router): what QLoRA stores in NF4.
  double linear_weights = 0;
  double norm_weights = 0;       // of weights, norm weights (the layers'; the final norm on the last stage)
  /// Of trainable, the hidden 2-D matrices Muon orthogonalises: every
  /// trainable matrix but the embedding and the LM head (Jordan et al. 2024,
  /// github.com/KellerJordan/Muon README: "embeddings, classifier heads, and
  /// hidden gains/biases should be optimized using standard AdamW"; Liu et
  /// al. 2025, Moonlight, arXiv:2502.16982, keeps AdamW for the same);
  /// the router is a 2-D hidden matrix and is Muon's. Under LoRA the adapters.
  double hidden_matrix_elems = 0;
  double expert_hidden_matrix_elems = 0;  // of hidden_matrix_elems, the routed experts' (sharded by EP)
  /// The hidden matrices by shape (the first `matrix_groups` entries).
  std::array<MatrixGroup, kMaxMatrixGroups> matrices{};
  int matrix_groups = 0;
};

/// Which pipeline stage's parameters: the first holds the embedding, the
/// last the final norm and LM head (with tied embeddings under PP, Megatron
/// keeps a copy of the word embeddings there as the output layer); kLargest
/// is whichever of the two holds more. With PP = 1 every view is the whole model.
/// kMiddle: a stage between the ends (uneven stages: the busiest of them, stage 1).
enum class PipelineStage : std::uint8_t { kLargest, kFirst, kLast, kMiddle };

/// The data-parallel groups ZeRO shards over and gradients are reduced in:
/// dense parameters are replicated over DP x CP ranks; an expert's
/// parameters only over the DP x CP / EP ranks that hold the same experts.
struct DataParallelGroups {
  double dense = 1;
  double expert = 1;
};
inline DataParallelGroups data_parallel_groups(const spec::PlanSpec& p) {
  const auto& par = p.parallel;
  DataParallelGroups g;
  g.dense = std::max(1.0, static_cast<double>(par.dp) * par.cp);
  g.expert = std::max(1.0, g.dense / std::max(1, par.ep));
  return g;
}

/// What one GPU holds of `all` (of which `expert` is expert state) when ZeRO
/// stage `covered` or above shards it: dense state over the DP x CP ranks,
/// expert state over DP x CP / EP; below that stage, all of it. The memory
/// model and the optimizer step both shard through this.
inline double zero_shard(const spec::PlanSpec& p, const DataParallelGroups& g, int covered, double all,
                         double expert) {
  if (p.parallel.zero < covered) return all;
  return (all - expert) / g.dense + expert / g.expert;
}

/// One GPU's parameters on `stage`. Decoder layers are split by TP (experts
/// also by EP); when TP exceeds the KV heads each rank holds one whole KV
/// head (replicated), so its K and V projections are 2 h d, not 2 h g d / t.
LocalParams local_params(const spec::ModelSpec& m, const spec::PlanSpec& p,
                         PipelineStage stage = PipelineStage::kLargest);

/// Every stage's local_params under one plan: what all layouts of one
/// micro-batch graph share (DP, ZeRO, virtual stages and offload leave
/// them unchanged), formed once per graph (engine::MicrobatchSummary)
/// instead of once per layout and use. `last` is formed only under PP (with
/// PP = 1 the one stage is `first`; `last` is left as it was), `middle` only
/// where memory::estimate reads it (uneven stages over PP > 2) and is zero
/// otherwise.
struct StageParams {
  LocalParams first, last, middle;
  bool last_largest = false;  // the last stage holds more than the first (PP > 1)
  /// The end that holds more (local_params(..., kLargest)).
  const LocalParams& largest() const { return last_largest ? last : first; }
};
StageParams stage_params(const spec::ModelSpec& m, const spec::MicrobatchPlan& p);
/// stage_params written into `s` in place, with the model's counts already
/// formed (`pc`: spec::count_params(m)).
void stage_params_into(StageParams& s, const spec::ModelSpec& m, const spec::MicrobatchPlan& p,
                       const spec::ParamCounts& pc);

/// Bytes of the stage's weights as stored (spec::PrecisionPolicy::
/// stored_weight_bytes): a frozen base's decoder linear weights and norms
/// at their own widths (QLoRA: NF4 and fp32), the rest as trained. What the
/// model state holds and what ZeRO-3 / FSDP gathers and ZeRO-Infinity fetches.
double stored_weight_bytes(const spec::PrecisionPolicy& pol, const LocalParams& lp);

/// LoRA adapter parameters added to one decoder layer (whole, un-sharded).
double lora_params_per_layer(const spec::ModelSpec& m, const spec::FinetuneSpec& ft);
double lora_params_per_layer(const spec::ModelSpec& m, const spec::PlanSpec& p);

/// Optimizer state bytes per trainable parameter (factored optimizers: given
/// the matrix shapes, averaged over all trainable parameters). Full-size
/// states (Adam's moments, momentum, Sophia's Hessian) take
/// `state_elem_bytes` each (spec::PrecisionPolicy::state_elem_bytes: 4, or 2
/// in pure bf16); factored statistics and 8-bit states keep their own widths.
double optimizer_state_bytes(const spec::OptimizerSpec& o, const LocalParams& lp, double state_elem_bytes = 4);

}  // namespace ridgeline::techniques
