// Parameters held by one GPU under a plan: how many, how many are trained,
// and the matrix shapes the factored optimizers (Adafactor, CAME) need.
// Counts are elements (not bytes).
#pragma once

#include "ridgeline/spec/model.hpp"
#include "ridgeline/spec/plan.hpp"

namespace ridgeline::techniques {

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
  double expert_weights = 0;     // of weights, MoE expert matrices (sharded by EP; 0 for dense models)
  double expert_trainable = 0;   // of trainable, expert matrices
};

/// The data-parallel groups ZeRO shards over and gradients are reduced in:
/// dense parameters are replicated over DP x CP ranks; an expert's
/// parameters only over the DP x CP / EP ranks that hold the same experts.
struct DataParallelGroups {
  double dense = 1;
  double expert = 1;
};
DataParallelGroups data_parallel_groups(const spec::PlanSpec& p);

/// First pipeline stage's view (embedding; the last stage's LM head when pp = 1,
/// or whichever of the two is larger when pp > 1).
LocalParams local_params(const spec::ModelSpec& m, const spec::PlanSpec& p);

/// LoRA adapter parameters added to one decoder layer (whole, un-sharded).
double lora_params_per_layer(const spec::ModelSpec& m, const spec::PlanSpec& p);

/// Optimizer state bytes per trainable parameter (factored optimizers: given
/// the matrix shapes, averaged over all trainable parameters).
double optimizer_state_bytes(const spec::OptimizerSpec& o, const LocalParams& lp);

}  // namespace ridgeline::techniques
