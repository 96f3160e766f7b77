// Framework execution profiles (frameworks/NAME.yaml): how one training
// stack runs a step. The same model on the same GPUs runs at different speed
// and memory under Megatron-LM, torchtitan, PyTorch FSDP (llm-foundry /
// Composer), DeepSpeed and a Hugging Face Trainer because they fuse
// different kernels, dispatch ops from the host at different cost, move
// parameters and gradients at different times, and keep different
// caching-allocator reserves. Every behaviour a file declares carries its
// source in the file.
//
// A plan names its framework by index into frameworks() (PlanSpec::framework,
// a small integer, so plans copy without allocating); index 0 is always
// megatron, the default. The indices come from the listing of
// data_dir()/frameworks, on first use; each profile is read the first time it
// is asked for (a plan needs one), all of them only by frameworks().
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/model.hpp"
#include "ridgeline/spec/plan.hpp"

namespace ridgeline::spec {

/// How parameters and gradients move between data-parallel ranks.
///  - kDdp: replicated parameters; one gradient all-reduce per step
///    (DistributedDataParallel with no_sync under gradient accumulation).
///  - kDistributedOptimizer: Megatron's distributed optimizer: gradients
///    reduce-scattered in buckets overlapped with the last micro-batch's
///    backward, parameters all-gathered after the step (overlapped with the
///    next forward); ZeRO-1 in effect.
///  - kFsdp1 / kFsdp2: FULL_SHARD: parameters all-gathered per FSDP unit in
///    forward and again in backward, gradients reduce-scattered per unit
///    (FSDP2: per-parameter sharding, same volumes).
///  - kZero: DeepSpeed ZeRO by the plan's stage.
enum class ParamSharding : std::uint8_t { kDdp, kDistributedOptimizer, kFsdp1, kFsdp2, kZero };

/// The attention kernel a framework picks on one GPU generation, where it
/// differs from the framework's default (frameworks/NAME.yaml
/// attention.by_generation).
struct AttentionOnGeneration {
  Generation generation = Generation::kHopper;
  AttentionKind kind = AttentionKind::kFlash2;
};

/// A recompute policy under the framework's own name.
struct RecomputeName {
  std::string name;   // the framework's word ("selective", "op", "full")
  std::string maps_to;  // Ridgeline's spelling (parse_recompute): "selective", "op", "full", "every:K"
};

struct FrameworkSpec {
  std::string id;           // file stem: "megatron"
  std::string name;         // "Megatron-LM (Megatron-Core + Transformer Engine)"
  std::string source_file;
  // Kernels.
  Fusion fusion = Fusion::kFused;                    // default fusion level
  AttentionKind attention = AttentionKind::kFlash2;  // default attention kernel
  /// The default kernel on the generations where the framework picks another
  /// (Transformer Engine prefers cuDNN fused attention on Hopper and later).
  std::vector<AttentionOnGeneration> attention_by_generation;
  /// The default attention kernel on GPUs of generation `g`.
  AttentionKind attention_on(Generation g) const;
  /// The loss: true = one fused kernel over the logits (Megatron's
  /// vocab-parallel cross-entropy, Liger); false = eager PyTorch under
  /// autocast: fp32 upcast, log_softmax, nll, and their backward.
  bool fused_cross_entropy = true;
  /// The loss under torch.compile (fusion: compiled): true = compiled with
  /// the model, so Inductor fuses the fp32 upcast into the softmax
  /// reduction and keeps no fp32 copy of the logits (frameworks/NAME.yaml
  /// cross_entropy.compiled; absent: as `value`).
  bool fused_cross_entropy_compiled = true;
  /// An eager loss computed in place on its fp32 upcast, which is what it
  /// saves for the backward (Megatron's vocab_parallel_cross_entropy): no
  /// second fp32 copy (frameworks/NAME.yaml cross_entropy.in_place).
  bool cross_entropy_in_place = false;
  /// The loss over token chunks (CrossEntropy::kChunked) is offered
  /// (frameworks/NAME.yaml cross_entropy.chunked; absent: no).
  bool chunked_cross_entropy = false;
  /// Training metrics evaluated on each micro-batch's logits after its
  /// backward, without gradients (frameworks/NAME.yaml train_metrics;
  /// absent: 0): each one eager cross-entropy under autocast (fp32 upcast,
  /// log_softmax, nll) over the 16-bit logits. Composer computes its
  /// model's train_metrics every micro-batch (trainer.py
  /// _eval_train_metrics); llm-foundry's MPT has two,
  /// LanguageCrossEntropy and LanguagePerplexity.
  int train_metrics = 0;
  /// A gated MLP's gate and up projections as one GEMM whose output the
  /// activation reads as two chunk views, strided (Megatron-Core's
  /// linear_fc1 of twice the FFN width, torch.chunk in the activation),
  /// rather than two GEMMs writing contiguous outputs (torchtitan's w1 and
  /// w3, Hugging Face's gate_proj and up_proj) (frameworks/NAME.yaml
  /// gate_up; absent: separate). Eager PyTorch vectorizes an elementwise
  /// kernel only over contiguous operands (techniques::apply_fusion).
  bool fused_gate_up = false;
  /// RMSNorm at the eager level (frameworks/NAME.yaml rms_norm; absent:
  /// composite): the model code's own op chain, torch.nn.RMSNorm's native
  /// kernel, or a tuned one (spec::RmsNormImpl).
  RmsNormImpl eager_rms_norm = RmsNormImpl::kComposite;
  /// The gradients do not outlive the step (frameworks/NAME.yaml gradients:
  /// freed_each_step; absent: persistent): the optimizer's zero_grad sets
  /// them to None (PyTorch >= 2.0's default), so a step of one micro-batch
  /// allocates each as its backward forms it, while the saved activations
  /// are freed; persistent: a gradient buffer allocated once (Megatron's
  /// main_grad buffers, DeepSpeed's and DDP's buckets) holds every gradient
  /// throughout (memory::stage_memory).
  bool grads_freed_each_step = false;
  // Host.
  /// CPU time to dispatch one launched kernel (Python, autograd, hooks);
  /// the GPU idles when the kernels it runs are shorter.
  double dispatch_s = 0;
  double dispatch_compiled_s = 0;  // under torch.compile (fusion: compiled)
  // Parameters and gradients.
  ParamSharding sharding = ParamSharding::kDistributedOptimizer;
  /// Gradients reduced after every micro-batch's backward under gradient
  /// accumulation (FSDP without no_sync; DeepSpeed ZeRO >= 2,
  /// DeepSpeed#2252) rather than once per step.
  bool grad_reduce_per_microbatch = false;
  /// Bytes per element of the gradient reduction; 0 = the working precision
  /// (Composer's FSDP mixed_precision DEFAULT reduces in fp32: 4).
  double reduce_bytes = 0;
  /// Under pipeline parallelism (PP > 1) with sharded parameters (ZeRO-3 /
  /// FSDP FULL_SHARD): the parameters stay gathered across the step's
  /// micro-batches instead of being resharded after each forward, so each
  /// GPU holds its stage's whole 16-bit weights and gathers them once per
  /// step (frameworks/NAME.yaml pp_params: unsharded; absent: sharded;
  /// torchtitan's reshard_after_forward policy "default").
  bool pp_params_unsharded = false;
  /// Under pipeline parallelism with sharded gradients (ZeRO >= 2): the
  /// gradients accumulate unsharded, in the reduce dtype (reduce_bytes),
  /// across the step's micro-batches and are reduce-scattered once, in the
  /// last micro-batch's backward (frameworks/NAME.yaml pp_grads: unsharded;
  /// absent: sharded; PyTorch's pipeline stage turns FSDP's gradient sync
  /// off for every backward but the last).
  bool pp_grads_unsharded = false;
  /// fp32 main gradients by default when the working precision is bf16
  /// (fp8 and nvfp4 layers run inside a bf16 model): Megatron-LM sets
  /// accumulate_allreduce_grads_in_fp32 for --bf16 (frameworks/NAME.yaml
  /// main_grads: fp32_with_bf16; absent: working).
  bool fp32_main_grads_with_bf16 = false;
  /// The ZeRO-1/2 parameter all-gather after the optimizer step runs beside
  /// the next step's forward by default (frameworks/NAME.yaml
  /// overlap_param_gather; absent: false, the gather is exposed).
  bool overlap_param_gather = false;
  /// How --tp-comm-overlap runs the TP collectives it hides
  /// (frameworks/NAME.yaml tp_overlap_mechanism; absent: nccl, 0): 0 = NCCL
  /// collectives beside the GEMMs; > 0 = Transformer Engine userbuffers, the
  /// SMs its pipeline and bulk communication kernels hold (TE's default
  /// num_sm 16), the all-gathers in front of a GEMM by copy-engine ring
  /// exchange (TE's ring_exchange method, use_ce).
  double tp_overlap_comm_sms = 0;
  /// A context-parallel ring's merge of its steps' partial results
  /// (frameworks/NAME.yaml cp_merge; absent: Transformer Engine's 6, 6, 1,
  /// 3): HBM bytes per attention-output element per ring step forward (the
  /// step's output rescaled by its log-sum-exp and added into the running
  /// output), bytes per Q, K and V gradient element per step backward (each
  /// step's dQ, dK and dV added into their accumulators), and the kernels a
  /// step launches for each. Every step is costed alike, the first too.
  /// Under --fusion compiled the forward's (cp_merge.compiled; absent: the
  /// same): torch.compile fusing an eager merge's elementwise chain.
  double cp_merge_forward_bytes = 6, cp_merge_backward_bytes = 6;
  int cp_merge_forward_kernels = 1, cp_merge_backward_kernels = 3;
  double cp_merge_forward_bytes_compiled = 6;
  int cp_merge_forward_kernels_compiled = 1;
  /// ZeRO-3 parameter fetch granularity (frameworks/NAME.yaml zero3_fetch;
  /// absent: 0, one all-gather per FSDP unit, a decoder layer, as FSDP
  /// flattens a unit's parameters): > 0 = per module, DeepSpeed's
  /// stage3_prefetch_bucket_size in elements. Each weight tensor of at least
  /// a bucket is gathered by its own call, smaller ones coalesced up to a
  /// bucket (spec::zero3_gathers_per_layer).
  double zero3_fetch_bucket_elements = 0;
  /// Pipeline p2p sends and receives overlapped with the chunks' compute
  /// under the interleaved schedule (Megatron-Core overlap_p2p_comm,
  /// frameworks/NAME.yaml pp_p2p_overlap: interleaved; absent: never).
  bool pp_p2p_overlap_interleaved = false;
  /// Fraction of tensor-parallel communication that --tp-comm-overlap hides.
  double tp_overlap_hidden = 0;
  /// The column-parallel linears' backward TP collectives run asynchronously
  /// beside their GEMMs (frameworks/NAME.yaml tp_backward_overlap; absent:
  /// false): the input-gradient all-reduce beside the weight-gradient GEMM,
  /// with SP the input re-gather beside the input-gradient GEMM and the
  /// input-gradient reduce-scatter beside the weight-gradient GEMM
  /// (Megatron's LinearWithGradAccumulationAndAsyncCommunication). The
  /// row-parallel linears' backward gather (SP) stays exposed.
  bool tp_backward_overlap = false;
  // Memory.
  /// Caching allocator: peak reserved = peak allocated x (1 + reserve).
  double allocator_reserve = 0.05;
  // Recompute policies offered, under the framework's names.
  std::vector<RecomputeName> recompute;
  std::vector<RecomputeKind> recompute_kinds;  // recompute's maps_to, parsed (one per entry)
  /// Sequence parallelism whenever TP > 1, unless the plan says otherwise
  /// (frameworks/NAME.yaml sequence_parallel: with_tp; spec::apply_framework_defaults).
  bool sequence_parallel_with_tp = false;
  // Refusals.
  bool refuses_zero2_with_pp = false;          // DeepSpeed, Megatron: ZeRO-2/3 with pipeline parallelism
  std::string zero2_with_pp_why;               // why, in the framework's words (refuses.zero2_with_pp_why)
  /// TP that does not divide the KV heads (query groups): torchtitan's TP
  /// shards the KV heads (refuses.tp_beyond_kv_heads; absent: false, the
  /// KV heads replicated over the TP ranks beyond them).
  bool refuses_tp_beyond_kv_heads = false;
  /// No tensor parallelism (TP > 1) or no pipeline parallelism (PP > 1) at
  /// all: the Hugging Face Trainer (refuses.tensor_parallel,
  /// refuses.pipeline_parallel; absent: false), and why
  /// (refuses.model_parallel_why).
  bool refuses_tp = false;
  bool refuses_pp = false;
  std::string model_parallel_why;
  bool interleave_needs_divisible_microbatches = false;  // Megatron: micro-batches % PP == 0
  /// Layers that PP (x virtual stages) does not divide: Megatron refuses them
  /// without --decoder-first/last-pipeline-num-layers; torchtitan and
  /// DeepSpeed split any count, the first stages taking one layer more
  /// (refuses.indivisible_layers; absent: true). The busiest GPU then holds
  /// ceil(layers / PP) layers (spec::stage_layers).
  bool refuses_indivisible_layers = true;
  /// CPU offload the framework offers (frameworks/NAME.yaml `offload:`;
  /// absent: none): the optimizer (DeepSpeed ZeRO-Offload, Megatron-Core
  /// --optimizer-cpu-offload) and the parameters (DeepSpeed ZeRO-3 offload_param).
  bool offload_optimizer = false;
  bool offload_params = false;
  /// Activation offloading (offload.activations; `offload: activations:`,
  /// absent: no): torchtune's enable_activation_offloading.
  bool offload_activations = false;
  /// Optimizer memory savers the training loop offers (frameworks/NAME.yaml
  /// optimizer_in_backward:, paged_optimizer:; absent: no): each parameter
  /// stepped in its gradient hook (torchtitan early_step_in_backward,
  /// torchtune optimizer_in_bwd), and bitsandbytes' paged optimizers.
  bool optimizer_in_backward = false;
  bool paged_optimizer = false;
};

/// Every framework profile, megatron first, then by id; reads each file not
/// yet read. Throws support::SpecError when a file is malformed or megatron
/// is missing.
const std::vector<FrameworkSpec>& frameworks();
namespace detail {
/// The profiles already read, by index (constant-initialised, so no guard on
/// first use): the evaluation's passes ask for the plan's framework a few
/// dozen times each, and one acquire load inline answers.
extern std::atomic<const FrameworkSpec*> frameworks_read[256];
const FrameworkSpec& read_framework(std::uint8_t index);
}  // namespace detail

/// A plan's framework (index into frameworks(); out of range = megatron);
/// reads its file on first use, from any thread. Throws support::SpecError
/// when that file is malformed.
inline const FrameworkSpec& framework(std::uint8_t index) {
  if (const FrameworkSpec* f = detail::frameworks_read[index].load(std::memory_order_acquire)) return *f;
  return detail::read_framework(index);
}
/// Index of the framework with this id (the file stem); nullopt when there is
/// none. Reads no profile.
std::optional<std::uint8_t> find_framework(std::string_view id);
/// How many profiles there are (frameworks().size()), without reading them.
std::size_t framework_count();
/// The id of framework `index` (framework(index).id), without reading it.
const std::string& framework_id(std::uint8_t index);
/// "deepspeed, fsdp, hf, megatron, torchtitan".
std::string framework_choices();

/// A recompute policy by the framework's own name ("activation_checkpointing",
/// "selective_layer:4" for a "selective_layer:K" entry); nullopt when the
/// framework has no such name.
std::optional<Recompute> framework_recompute(const FrameworkSpec& f, std::string_view name);

/// Whether the framework offers the fp8 recipe to a search or the advisor:
/// rowwise and rowwise_with_gw_hp are torchao's Float8Linear recipes, which torchtitan's float8
/// converter applies (job_config.py, 238fa99, line 738) as do FSDP2 scripts
/// that call torchao's convert_to_float8_training; Transformer Engine's
/// recipes (Megatron-LM --fp8-recipe: transformer_config.py, d98e8a6, line
/// 594) have no rowwise one. The others are offered everywhere, as before.
inline bool offers_fp8_recipe(const FrameworkSpec& f, Fp8Recipe r) {
  return (r != Fp8Recipe::kRowwise && r != Fp8Recipe::kRowwiseGwHp) || f.id == "torchtitan" || f.id == "fsdp";
}

/// The attention kernel a plan runs on GPUs of generation `g`: the plan's
/// when it gives one, else its framework's default there
/// (FrameworkSpec::attention_on).
AttentionKind attention_on(const MicrobatchPlan& p, Generation g);
/// Sets the plan's attention to attention_on(p, g), so that what the plan
/// shows is what the engine runs on that GPU; a given attention stays.
void apply_generation_defaults(PlanSpec& p, Generation g);

/// The main gradients a plan keeps: the plan's when it gives them, else its
/// framework's default for its precision (FrameworkSpec::fp32_main_grads_with_bf16).
inline MainGrads main_grads_of(const MicrobatchPlan& p) {
  if (p.main_grads_given) return p.main_grads;
  const bool bf16 = p.precision == Precision::kBf16 || p.precision == Precision::kFp8 || p.precision == Precision::kNvfp4;
  return bf16 && framework(p.framework).fp32_main_grads_with_bf16 ? MainGrads::kFp32 : MainGrads::kWorking;
}
/// The plan's loss: as given, else the framework's at the plan's fusion level
/// (FrameworkSpec::fused_cross_entropy, fused_cross_entropy_compiled).
CrossEntropy cross_entropy_of(const MicrobatchPlan& p);
/// Whether the plan's gated MLP fuses its gate and up projections: as
/// given (plan gate_up), else the framework's (FrameworkSpec::fused_gate_up).
inline bool fused_gate_up_of(const MicrobatchPlan& p) {
  return p.gate_up_given ? p.fused_gate_up : framework(p.framework).fused_gate_up;
}
/// The plan's RMSNorm: one tuned kernel above the eager level (compiled,
/// fused and XLA plans fuse the chain); at the eager level as given (plan
/// rms_norm), else the framework's (FrameworkSpec::eager_rms_norm).
inline RmsNormImpl rms_norm_of(const MicrobatchPlan& p) {
  if (p.fusion != Fusion::kEager) return RmsNormImpl::kFused;
  return p.rms_norm_given ? p.rms_norm : framework(p.framework).eager_rms_norm;
}

/// Whether a plan's ZeRO-1/2 parameter all-gather overlaps the next forward:
/// the plan asks for it or its framework does it by default.
bool overlap_param_gather_of(const PlanSpec& p);

/// All-gather calls per decoder layer and pass of a ZeRO-3 parameter fetch:
/// 1 for a framework that gathers a layer as one unit; per module (DeepSpeed)
/// each local weight tensor (fused QKV, output projection, FC1 (gate and up
/// fused), FC2; each expert's FC1 and FC2) of at least a bucket is one call,
/// the smaller ones coalesced into ceil(elements / bucket) calls.
double zero3_gathers_per_layer(const FrameworkSpec& f, const ModelSpec& m, int tp, int ep);

/// Reads one framework profile. Throws support::SpecError.
FrameworkSpec load_framework(const std::string& path);

/// Where the shipped data folders (hardware_profiles/, models/, frameworks/)
/// are: $RIDGELINE_DATA_DIR, else the working directory when it holds them,
/// else the source tree the binary was built from.
std::string data_dir();

}  // namespace ridgeline::spec
