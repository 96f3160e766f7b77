// Memory model: peak bytes on one GPU (the first pipeline stage, which holds
// the most micro-batches in flight).
//
//   weights + gradients + master weights + optimizer state   (by dtype, ZeRO stage)
// + activations = in_flight * (saved tensors per micro-batch) + recompute working set
// + buffers (fp32 logits, logit gradients, ZeRO-3 gathered layers, fp8 scaling state)
// + workspace (CUDA context, cuBLAS/NCCL workspaces)
// + fragmentation allowance (kFragmentationFrac of activations and buffers)
//
// Saved tensors come from the step graph, so every technique changes them by
// construction. Units: bytes.
#pragma once

#include <iterator>
#include <string_view>

#include "ridgeline/graph/graph.hpp"
#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/model.hpp"
#include "ridgeline/spec/plan.hpp"

namespace ridgeline::memory {

/// CUDA context + cuBLAS workspace + allocator reserve on a single GPU
/// (PyTorch on H100: ~0.5 GiB context, 32 MiB cuBLAS workspace, caching slack).
inline constexpr double kWorkspaceBytes = 0.75 * 1024 * 1024 * 1024;
/// NCCL communicator buffers when any collective runs.
inline constexpr double kNcclBytes = 0.5 * 1024 * 1024 * 1024;
/// Fragmentation of the caching allocator over transient tensors.
inline constexpr double kFragmentationFrac = 0.05;

struct MemoryResult {
  double weights = 0, gradients = 0, master_weights = 0, optimizer = 0;
  double activations = 0, buffers = 0, workspace = 0, fragmentation = 0;
  double total = 0, capacity = 0;
  bool fits = false;
  // Detail.
  double activations_per_layer = 0;     // saved per layer per micro-batch (before recomputation drops them)
  double activations_per_microbatch = 0;
  double in_flight_microbatches = 1;
  double recompute_working = 0;
};

/// The categories of MemoryResult, each once: the label every view prints
/// and the key every JSON view writes. They sum to MemoryResult::total.
struct MemoryCategory {
  std::string_view label;     // "master weights"
  std::string_view json_key;  // "master_weights_bytes"
  double MemoryResult::*bytes;
};
inline constexpr MemoryCategory kMemoryCategories[] = {
    {"weights", "weights_bytes", &MemoryResult::weights},
    {"gradients", "gradients_bytes", &MemoryResult::gradients},
    {"master weights", "master_weights_bytes", &MemoryResult::master_weights},
    {"optimizer state", "optimizer_bytes", &MemoryResult::optimizer},
    {"activations", "activations_bytes", &MemoryResult::activations},
    {"buffers", "buffers_bytes", &MemoryResult::buffers},
    {"workspace", "workspace_bytes", &MemoryResult::workspace},
    {"fragmentation", "fragmentation_bytes", &MemoryResult::fragmentation},
};
inline constexpr int kMemoryCategoryCount = 8;
static_assert(std::size(kMemoryCategories) == kMemoryCategoryCount);

/// What the memory model reads from a step graph (so a sweep can reuse it
/// across layouts that share the graph).
struct GraphFacts {
  double layer_saved = 0;   // saved bytes of one decoder layer per micro-batch (before recomputation frees them)
  double layer_alive = 0;   // of which alive until backward (Kernel::saved_fraction)
  double other_saved = 0;   // saved bytes outside the layers (embedding, head, loss)
  double fp8_linear_params = 0;  // linear-layer weights that get fp8 (or NVFP4) copies
  double fp8_linears = 0;        // quantized linear layers (an expert counts once), 3 scaled tensors each
  double recompute_working = 0;  // one recomputed segment's saved tensors
  double logits_transient = 0;   // the largest forward workspace (an eager loss's fp32 logits)
  double tokens = 0, act_bytes = 2, layers = 0;
};
GraphFacts facts(const graph::Graph& g);

/// Model state on one GPU: weights, gradients, fp32 master weights and
/// optimizer state, each by the plan's precision policy (spec/precision.hpp)
/// and sharded by its ZeRO stage (Rajbhandari et al. 2020: stage 1 shards the
/// optimizer state and masters, 2 also the gradients, 3 also the weights).
/// `fp8_linear_params` adds the quantized weight copies the step graph keeps
/// (row-wise and transposed, spec::QuantRecipe::weight_bytes_per_elem each
/// with their block scales; 0 without fp8); with 0 the total is a lower bound on every plan's peak memory,
/// which is what the search prunes with.
struct ModelState {
  double weights = 0, gradients = 0, master_weights = 0, optimizer = 0;
  double total() const { return weights + gradients + master_weights + optimizer; }
};
ModelState model_state(const spec::ModelSpec& m, const spec::PlanSpec& p, double fp8_linear_params = 0);

/// Micro-batches whose activations the first pipeline stage holds at once.
double in_flight_microbatches(const spec::PlanSpec& p, double micro_batches);

MemoryResult estimate(const GraphFacts& f, const spec::ModelSpec& m, const spec::PlanSpec& p,
                      const spec::HardwareSpec& hw, double micro_batches);
inline MemoryResult estimate(const graph::Graph& g, const spec::ModelSpec& m, const spec::PlanSpec& p,
                             const spec::HardwareSpec& hw, double micro_batches) {
  return estimate(facts(g), m, p, hw, micro_batches);
}

/// Saved bytes of one decoder layer's forward kernels (per micro-batch).
double layer_saved_bytes(const graph::Graph& g);

}  // namespace ridgeline::memory
