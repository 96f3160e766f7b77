// Memory model: peak bytes on one GPU (the first pipeline stage, which holds
// the most micro-batches in flight).
//
//   weights + gradients + master weights + optimizer state   (by dtype, ZeRO stage)
// + activations = in_flight * (saved tensors per micro-batch) + recompute working set
// + buffers (fp32 logits, logit gradients, ZeRO-3 gathered layers)
// + workspace (CUDA context, cuBLAS/NCCL workspaces)
// + fragmentation allowance (kFragmentationFrac of activations and buffers)
//
// Saved tensors come from the step graph, so every technique changes them by
// construction. Units: bytes.
#pragma once

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

/// What the memory model reads from a step graph (so a sweep can reuse it
/// across layouts that share the graph).
struct GraphFacts {
  double layer_saved = 0;   // saved bytes of one decoder layer per micro-batch
  double other_saved = 0;   // saved bytes outside the layers (embedding, head, loss)
  double fp8_linear_params = 0;  // linear-layer weights that get fp8 copies
  double saved_layer_fraction = 1, checkpointed_layers = 0, checkpoint_bytes_per_layer = 0;
  double recompute_working = 0, logits_transient = 0, tokens = 0, act_bytes = 2, layers = 0;
};
GraphFacts facts(const graph::Graph& g);

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
