// Technique passes: each rewrites the step graph for one technique choice of
// the plan, so its effect on FLOPs, bytes, launches and saved tensors flows
// through the same cost and memory models. Order (techniques::apply_all):
//   attention -> fusion -> precision -> finetune -> derive_backward ->
//   recompute -> parallel -> hessian estimate (Sophia); per step: data parallel -> optimizer
// Each pass is a plain function of the graph and the specs; it can be tested alone.
#pragma once

#include "ridgeline/graph/graph.hpp"
#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/model.hpp"
#include "ridgeline/spec/plan.hpp"
#include "ridgeline/techniques/params.hpp"

namespace ridgeline::techniques {

/// Replaces the naive attention core with one fused (flash) kernel per layer.
/// IO model after FlashAttention (Dao et al. 2022, Thm. 2): query tiles of
/// B_r = min(ceil(M / (4 d e)), d) rows, M = shared memory per SM; K and V are
/// streamed through SRAM once per query tile (T_r = ceil(s / B_r) times) and
/// come from HBM once while the K/V of the heads in flight fit in L2.
void apply_attention(graph::Graph& g, const spec::ModelSpec& m, const spec::MicrobatchPlan& p,
                     const spec::HardwareSpec& hw);


/// Merges memory-bound kernels per the fusion level (eager: none; fused:
/// hand-written groups; compiled: every pointwise chain; xla: chains and GEMM
/// epilogues). A merged chain reads its external inputs once and writes its
/// final output (and any saved tensors) once: intermediates stay on chip.
void apply_fusion(graph::Graph& g, const spec::ModelSpec& m, const spec::MicrobatchPlan& p);
/// The framework's training metrics (spec::FrameworkSpec::train_metrics):
/// after each micro-batch's backward, that many eager cross-entropies over
/// the logits without gradients (graph::eager_cross_entropy_kernel), on the
/// stage that holds the LM head.
void apply_train_metrics(graph::Graph& g, const spec::MicrobatchPlan& p);
/// Eager PyTorch's LayerNorm backward with a trained weight: two kernels,
/// the input gradient's and the weight and bias gradients' column reduction,
/// each reading the output gradient and the saved input (PyTorch
/// aten/src/ATen/native/cuda/layer_norm_kernel.cu,
/// LayerNormBackwardKernelImplInternal: layer_norm_grad_input_kernel, then
/// GammaBetaBackwardCUDAKernel over dY, X, mean and rstd): five passes over
/// the activations instead of a fused kernel's three. A frozen norm (LoRA,
/// QLoRA) computes no weight gradient and runs the first kernel only.
void apply_eager_layer_norm_backward(graph::Graph& g, const spec::ModelSpec& m, const spec::MicrobatchPlan& p);

/// fp8 GEMMs with cast/amax kernels and weight copies; fp16 loss scaling.
/// `hw`: whether its fp8 GEMMs take a transposed operand as it is (Graph::fp8_weight_copies).
void apply_precision(graph::Graph& g, const spec::ModelSpec& m, const spec::MicrobatchPlan& p,
                     const spec::HardwareSpec& hw);

/// fp16 dynamic loss scaling (Micikevicius et al. 2018) skips the update of
/// a step whose gradients overflow: steps executed per step that counts,
/// 1 / (1 - skipped_step_rate) (1 for every other precision).
double executed_steps_per_step(const spec::PlanSpec& p);

/// LoRA/QLoRA: frozen base GEMMs (no weight gradient), adapter GEMMs, NF4 dequantization.
void apply_finetune(graph::Graph& g, const spec::ModelSpec& m, const spec::MicrobatchPlan& p);

/// Activation recomputation (after derive_backward): drops saved tensors,
/// adds recompute-phase copies of forward kernels.
void apply_recompute(graph::Graph& g, const spec::MicrobatchPlan& p);

/// Number of stored layer checkpoints for `every:K` / `sqrt` over L layers.
int checkpoint_count(const spec::Recompute& r, int layers);
/// Segment length K (layers recomputed together) for a recompute policy.
int segment_layers(const spec::Recompute& r, int layers);

/// The expected copies of one token an MoE layer's dispatch sends from its
/// GPU under DeepEP's node-aware all-to-all (spec::MoeDispatcher::kDeepEp),
/// over an EP group of `nodes` nodes with `per_node` of its ranks each:
///  - destination nodes D: under node-limited routing (n_group groups, a
///    token's experts from topk_group of them, the groups laid evenly over
///    the nodes, each chosen group receiving at least one of its experts)
///    the nodes the chosen groups touch, N (1 - C(n_group - q, M) / C(n_group, M))
///    with q = n_group / N groups a node, M = topk_group (a group wider than
///    a node: M N / n_group nodes); else top_k experts drawn uniformly,
///    N (1 - (1 - 1/N)^k); at most top_k and N;
///  - network: one copy for each destination node but the GPU's own,
///    D (N - 1) / N (the token goes once to the GPU of its local index there);
///  - NVLink: one copy for each destination GPU but the one it arrived at
///    (DeepEP sends a token to a rank once however many of its experts the
///    rank holds): in each of the D nodes, k / D experts of the node's E / N,
///    each GPU holding E / (N g), hit a GPU with probability
///    1 - C(E/N - E/(Ng), k/D) / C(E/N, k/D): D (g - 1) (1 - that miss).
/// DeepSeek-V3 on EP 64 over 8 nodes (8 groups, 4 chosen, top-8): D = 4,
/// 3.5 network copies, 4 x 7 x (1 - C(28,2)/C(32,2)) = 6.66 NVLink copies.
struct DispatchCopies {
  double nodes = 0;    // D
  double network = 0;  // copies through the GPU's NIC
  double link = 0;     // copies over its NVLink
};
DispatchCopies node_dispatch_copies(const spec::ModelSpec& m, double nodes, double per_node);

/// Tensor/sequence/context/expert parallel collectives (per micro-batch).
void apply_parallel(graph::Graph& g, const spec::ModelSpec& m, const spec::MicrobatchPlan& p,
                    const spec::HardwareSpec& hw);

/// Pipeline p2p, data parallel and ZeRO collectives (gradient reduction per
/// step; ZeRO-3 weight gathers and p2p per micro-batch): the kernels that
/// depend on DP, ZeRO and virtual stages.
/// `lp`: local_params(m, p), which the caller holds (finish reads it too).
void apply_data_parallel(graph::Graph& g, const spec::ModelSpec& m, const spec::PlanSpec& p, const LocalParams& lp);

/// Optimizer-step kernels (once per step) for the trainable parameters on this GPU.
void apply_optimizer(graph::Graph& g, const spec::PlanSpec& p, const LocalParams& lp);

/// Sophia's Hessian estimate every k steps: one more forward and backward of
/// a micro-batch, amortised as per-step kernels at count / k (runs last in
/// build_microbatch, over the compute kernels).
void apply_hessian_estimate(graph::Graph& g, const spec::MicrobatchPlan& p);

/// One micro-batch: build_forward, the per-micro-batch passes, derive_backward.
void build_microbatch(graph::Graph& g, const spec::ModelSpec& m, const spec::MicrobatchPlan& p,
                      const spec::HardwareSpec& hw);
/// build_microbatch in two parts: the base (build_forward, attention,
/// fusion, precision, fine-tuning, derive_backward), which reads nothing of
/// the plan's recomputation, so plans that differ only there share it; and
/// the rest (recomputation, the parallel collectives, the Hessian estimate),
/// applied to a copy of the base.
void build_microbatch_base(graph::Graph& g, const spec::ModelSpec& m, const spec::MicrobatchPlan& p,
                           const spec::HardwareSpec& hw);
void finish_microbatch(graph::Graph& g, const spec::ModelSpec& m, const spec::MicrobatchPlan& p,
                       const spec::HardwareSpec& hw);
/// The kernels that depend on the data-parallel layout: DP/ZeRO collectives and the optimizer step.
void append_step_kernels(graph::Graph& g, const spec::ModelSpec& m, const spec::PlanSpec& p);
/// The same with local_params(m, p) given.
void append_step_kernels(graph::Graph& g, const spec::ModelSpec& m, const spec::PlanSpec& p, const LocalParams& lp);
/// The whole step: build_microbatch then append_step_kernels.
void build_step(graph::Graph& g, const spec::ModelSpec& m, const spec::PlanSpec& p,
                const spec::HardwareSpec& hw);

}  // namespace ridgeline::techniques
