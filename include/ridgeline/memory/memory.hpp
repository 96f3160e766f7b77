// Memory model: peak bytes on one GPU, the peak over pipeline stages. The
// stages are not alike: the first holds the embedding and the most
// micro-batches in flight (1F1B: p), the last the final norm, LM head,
// logits and loss with one micro-batch in flight; without PP one GPU holds all.
//
//   weights + gradients + master weights + optimizer state   (by dtype, ZeRO stage, stage's parameters)
// + activations = in_flight * (saved tensors per micro-batch) + recompute working set
//                 (the last stage: its head's saved tensors once; offload.activations:
//                 one layer's, the rest in host memory)
// + buffers (last stage: fp32 logits, logit gradients; ZeRO-3 gathered layers,
//            fp8 scaling state, context parallelism's K/V receive buffers)
//   = allocated (torch.cuda.max_memory_allocated)
// + fragmentation = allocated x the framework's allocator_reserve, or a calibrated stack's (reserved -
//   allocated of PyTorch's caching allocator; spec::FrameworkSpec)
// + workspace (CUDA context, cuBLAS/NCCL workspaces, outside the allocator)
//
// Saved tensors come from the step graph, so every technique changes them by
// construction. Units: bytes.
#pragma once

#include <iterator>
#include <cstdint>
#include <string_view>

#include "ridgeline/graph/graph.hpp"
#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/model.hpp"
#include "ridgeline/spec/plan.hpp"
#include "ridgeline/techniques/params.hpp"

namespace ridgeline::memory {

/// CUDA context + cuBLAS workspace on a single GPU (PyTorch on H100: ~0.5
/// GiB context, 32 MiB cuBLAS workspace, the rest kernels' own workspaces).
inline constexpr double kWorkspaceBytes = 0.75 * 1024 * 1024 * 1024;
/// NCCL communicator buffers when any collective runs.
inline constexpr double kNcclBytes = 0.5 * 1024 * 1024 * 1024;

/// One end stage of the pipeline (or the only one).
struct StageMemory {
  double weights = 0, gradients = 0, master_weights = 0, optimizer = 0;
  double host = 0;  // CPU offload: model state in host memory (ModelState::host)
  double paged = 0;  // paged optimizer state in unified memory (ModelState::paged), not in allocated
  double activations = 0, buffers = 0;
  /// Activation offloading (offload.activations): the layers' saved
  /// activations in pinned host memory (in host), not in activations.
  double offloaded_activations = 0;
  /// When in the backward the peak falls (stage_memory): "head" (the loss's
  /// and LM head's backward: their tensors and the logits), "layer" (the
  /// layers' backward: the saved activations, with a recomputed layer's
  /// working set), "end" (every gradient formed, where the framework frees
  /// them each step), "metrics" (the framework's training metrics after the
  /// backward: every gradient formed, the logits and a metric's fp32 copies).
  std::string_view phase = "head";
  double allocated = 0;  // the above: what the caching allocator hands out at the peak
  double total = 0;      // allocated + allocator reserve + workspace
  double in_flight_microbatches = 1;  // micro-batches whose layer activations the stage holds
  double layers = 0;                  // decoder layers on the stage
};

struct MemoryResult {
  double weights = 0, gradients = 0, master_weights = 0, optimizer = 0;
  double activations = 0, buffers = 0, workspace = 0, fragmentation = 0;
  double total = 0, capacity = 0;
  bool fits = false;  // total (reserved + workspace) <= capacity, and host_fits
  /// CPU offload: model state in host memory per GPU (the largest over the
  /// pipeline stages), the host memory per GPU (spec::HostSpec), and whether
  /// the one fits in the other (true without offload). Not part of total.
  double host_bytes = 0, host_capacity = 0;
  bool host_fits = true;
  /// Paged optimizer state (optimizer.paged): bytes per GPU in CUDA unified
  /// memory, outside PyTorch's allocator and total; of it, what does not fit
  /// beside the rest (capacity - total) lives on the host and crosses the
  /// host link both ways every step. host_fits counts that part too.
  double paged_bytes = 0, paged_to_host = 0;
  /// Activation offloading (offload.activations): the peak stage's saved
  /// activations per micro-batch held in host memory (in host_bytes), which
  /// cross the host link to the host in the forward and back in the backward.
  double offloaded_activations = 0;
  /// Peak allocated (weights .. buffers: torch.cuda.max_memory_allocated) and
  /// peak reserved = allocated x (1 + allocator reserve) (max_memory_reserved).
  double allocated = 0, reserved = 0;
  double allocator_reserve = 0;  // reserved / allocated - 1: the framework's, or a calibrated stack's
  /// The stage the categories above describe: "only" (no PP), "first" or
  /// "last" (the larger of the two end stages), or "middle" (uneven stages:
  /// stage 1, when it holds more than either end).
  std::string_view peak_stage = "only";
  /// When in the backward the peak stage peaks (StageMemory::phase).
  std::string_view peak_phase = "head";
  StageMemory first_stage, last_stage;  // without PP both are the only stage
  StageMemory middle_stage;  // uneven stages over PP > 2 only (else zero)
  // Detail.
  double activations_per_layer = 0;     // saved per layer per micro-batch (before recomputation drops them)
  double activations_per_microbatch = 0;  // of the peak stage
  double in_flight_microbatches = 1;      // of the peak stage
  double recompute_working = 0;
  double cp_kv_buffers = 0;  // context parallelism: K/V chunks in flight (in buffers)
};

/// Sets r's categories from one pipeline stage's: the model state,
/// activations and buffers, allocated, and the allocator reserve on top of it
/// (reserved = allocated x (1 + r.allocator_reserve)).
void set_stage(MemoryResult& r, const StageMemory& s);

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
  double first_saved = 0;   // saved outside the layers on the first stage (the embedding's token ids)
  double last_saved = 0;    // saved outside the layers on the last stage (final norm, LM head, loss)
  /// Linear-layer weights that get fp8 (or NVFP4) copies: one decoder
  /// layer's (an MoE model's dense-layer and expert linears by their share of
  /// the layers) and those outside the layers (the MTP projection: the last
  /// stage's). A stage holds its layers' and, the last, the others.
  double fp8_layer_params = 0, fp8_end_params = 0;
  double fp8_weight_copies = 2;  // quantized copies of each such weight (graph::Graph::fp8_weight_copies)
  double fp8_linears = 0;        // quantized linear layers (an expert counts once), 3 scaled tensors each
  double recompute_working = 0;  // one recomputed segment's saved tensors
  double logits_transient = 0;   // the largest forward workspace (an eager loss's fp32 logits; last stage)
  double tokens = 0, act_bytes = 2, layers = 0;
  double logit_grad_chunks = 1;  // graph::Graph::logit_grad_chunks
  double mtp_layers = 0;  // of `layers`, MTP blocks (graph::Graph::mtp_layers)
};
GraphFacts facts(const graph::Graph& g);

/// Model state on one GPU: weights, gradients, fp32 master weights and
/// optimizer state, each by the plan's precision policy (spec/precision.hpp)
/// and sharded by its ZeRO stage (Rajbhandari et al. 2020: stage 1 shards the
/// optimizer state and masters, 2 also the gradients, 3 also the weights).
/// `fp8` adds the quantized weight copies the step graph keeps (row-wise and
/// transposed, or one where one serves both, spec::QuantRecipe::
/// weight_bytes_per_elem each with their block scales; none without fp8);
/// a frozen base's fp8 linear weights are those copies alone
/// (spec::PrecisionPolicy::frozen_fp8_primary). Without them (fp8.params 0)
/// the total is a lower bound on every plan's peak memory, which is what the
/// search prunes with: a frozen fp8 base's linear weights then count one
/// quantized copy each.
///
/// CPU offload (spec::OffloadSpec) moves state to the host (`host`, not
/// part of total(), the GPU's): with the optimizer offloaded, the master
/// weights, the optimizer state and an fp32 gradient copy, 4 + 8 + 4 = 16
/// bytes per parameter under Adam, sharded as ZeRO shards them (DeepSpeed's
/// memory docs: "16b for fp32: 4b params, 4b grads, 4b momentum and 4b
/// variance per parameter"); under ZeRO >= 2 the GPU keeps no gradient shard
/// either (the docs' GPU memory with cpu_offload under ZeRO-2: 2 x params,
/// the 16-bit weights). With the parameters offloaded (ZeRO-3), the 16-bit
/// weight shard too (the docs' 18 bytes: "+2b for fp16 params"); the
/// gathered layers stay in the GPU's ZeRO-3 buffers. The docs' 1.5 buffer
/// factor and pinned staging buffers are not counted.
/// The quantized linear weights of a step graph (GraphFacts): how many
/// parameters, and how many quantized copies of each are kept.
struct QuantizedWeights {
  double params = 0;
  double copies = 2;
};
struct ModelState {
  double weights = 0, gradients = 0, master_weights = 0, optimizer = 0;
  double host = 0;
  double paged = 0;  // optimizer state in unified memory (optimizer.paged): not in total()
  double total() const { return weights + gradients + master_weights + optimizer; }
};
/// `stage`: whose parameters (techniques::local_params); the default,
/// the larger end stage, is the search's bound (<= the peak over stages).
ModelState model_state(const spec::ModelSpec& m, const spec::PlanSpec& p, const QuantizedWeights& fp8 = {},
                       techniques::PipelineStage stage = techniques::PipelineStage::kLargest);
/// The same with the stage's parameters given (techniques::local_params(m, p, stage)).
ModelState model_state(const spec::PlanSpec& p, const techniques::LocalParams& lp, const QuantizedWeights& fp8 = {});

/// Micro-batches whose layer activations a pipeline stage holds at once
/// (first stage by default), at most `micro_batches`:
///  - 1F1B (Narayanan et al. 2021): stage i holds p - i, the first p, the last 1;
///  - interleaved with v chunks per GPU (Megatron-LM's schedule: rank r
///    warms up 2 (p - r - 1) + (v - 1) p chunk forwards, then one more):
///    the first p + (p - 1) / v (Korthikanti et al. 2022, Sec. 4.2.3),
///    the last ((v - 1) p + 1) / v, in whole-stage units.
double in_flight_microbatches(const spec::PlanSpec& p, double micro_batches,
                              techniques::PipelineStage stage = techniques::PipelineStage::kFirst);

/// The model state of each pipeline stage an estimate reads: model_state
/// of the first, the last and (uneven stages over PP > 2) a middle stage's
/// parameters, with the graph's fp8 linear parameters. It reads the plan's
/// parallel degrees, precision, optimizer, ZeRO and offload, not the
/// virtual stages or the recomputation: a search forms it once per stage
/// split, ZeRO stage and offload of the graphs that differ only in
/// recomputation.
struct StageStates {
  ModelState first, last, middle;
};
StageStates stage_states(const GraphFacts& f, const spec::PlanSpec& p, const techniques::StageParams& sp);

/// Into `r` (every field set), with `sp`, techniques::stage_params of the
/// plan, given (a search's layouts of one graph share them): a loop's
/// estimate, without a copy. estimate() forms them. `states`:
/// stage_states(f, p, sp) when the caller has them; nullptr: formed here.
void estimate_into(MemoryResult& r, const GraphFacts& f, const spec::ModelSpec& m, const spec::PlanSpec& p,
                   const spec::HardwareSpec& hw, double micro_batches, const techniques::StageParams& sp,
                   const StageStates* states = nullptr);
MemoryResult estimate(const GraphFacts& f, const spec::ModelSpec& m, const spec::PlanSpec& p,
                      const spec::HardwareSpec& hw, double micro_batches);
inline MemoryResult estimate(const graph::Graph& g, const spec::ModelSpec& m, const spec::PlanSpec& p,
                             const spec::HardwareSpec& hw, double micro_batches) {
  return estimate(facts(g), m, p, hw, micro_batches);
}

/// Saved bytes of one decoder layer's forward kernels (per micro-batch).
double layer_saved_bytes(const graph::Graph& g);

/// The upper end of a prediction's peak-memory interval: the framework's
/// allocator reserve twice over, max(allocated x (1 + 2 x reserve) +
/// workspace, total) (uncertainty::memory_interval(m).hi, without its text).
double upper_bytes(const MemoryResult& m);

/// The memory left free by default for what no model of the tensors sees
/// (search::kDefaultHeadroom's reasons): a fraction of capacity.
inline constexpr double kDefaultHeadroom = 0.05;

/// The one rule for whether a plan fits, shared by predict, compare, search
/// and advise:
///   fits         upper_bytes(m) <= capacity x (1 - headroom), and host_fits
///   tight        only the point estimate fits (m.fits: total <= capacity)
///   does not fit otherwise
enum class Fit : std::uint8_t { kFits, kTight, kDoesNotFit };
Fit fit(const MemoryResult& m, double headroom = kDefaultHeadroom);
/// "yes", "tight", "no".
std::string_view fit_word(Fit f);

}  // namespace ridgeline::memory
