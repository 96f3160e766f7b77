// Training plan: batch, sequence, techniques and parallelism, from a plan YAML
// and/or CLI flags. Plain data. Every technique value has one spelling, shared
// by YAML and flags (parse_* below), so errors read the same from both.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ridgeline::spec {

/// kNvfp4: linear layers in NVFP4 (Blackwell; techniques/precision.cpp).
enum class Precision : std::uint8_t { kFp32, kTf32, kFp16, kBf16, kFp8, kNvfp4 };
/// How fp8 linear layers are scaled, after Transformer Engine's recipes:
/// delayed (DelayedScaling: per-tensor scales from an amax history),
/// tensorwise (Float8CurrentScaling: per-tensor scales from the tensor's own
/// amax), blockwise (Float8BlockScaling: DeepSeek-V3 1x128 / 128x128 scales)
/// and mxfp8 (MXFP8BlockScaling: OCP MX, an E8M0 scale per 32 elements);
/// and torchao's rowwise (Float8LinearRecipeName.ROWWISE: an fp32 scale per
/// row of each GEMM operand, from that row's own amax) and
/// rowwise_with_gw_hp (ROWWISE_WITH_GW_HP: rowwise for the output and
/// input-gradient GEMMs, the weight-gradient GEMM in 16 bits).
enum class Fp8Recipe : std::uint8_t { kDelayed, kTensorwise, kBlockwise, kMxfp8, kRowwise, kRowwiseGwHp };
/// kOp: per-op selective checkpointing (torchtitan's selective_ac_option
/// "op"): every second matmul of a layer and every non-matmul op is
/// recomputed; the other matmuls' and the fused attention's outputs saved.
enum class RecomputeKind : std::uint8_t { kNone, kSelective, kFull, kEvery, kSqrt, kOp };
/// The attention core's implementation: naive (separate QK^T, softmax, PV
/// kernels with the s x s scores in HBM), FlashAttention 1/2/3 (Dao et al.
/// 2022, Dao 2023, Shah et al. 2024), cuDNN's fused SDPA (cudnn), the
/// Triton fused-attention tutorial kernel (triton: warpgroup MMA on Hopper)
/// and a Triton FlashAttention built by the pre-MLIR Triton compiler
/// (triton_legacy: mma.sync on every GPU; llm-foundry's attn_impl triton
/// through v0.3).
enum class AttentionKind : std::uint8_t { kNaive, kFlash, kFlash2, kFlash3, kCudnn, kTriton, kTritonLegacy };
inline constexpr int kAttentionKindCount = 7;
enum class Fusion : std::uint8_t { kEager, kFused, kCompiled, kXla };
enum class OptimizerKind : std::uint8_t { kSgd, kAdam, kAdamW, kAdafactor, kCame, kSophia, kLion, kAdam8bit, kMuon };
enum class FinetuneMode : std::uint8_t { kFull, kLora, kQlora };
enum class AttentionFlops : std::uint8_t { kCausal, kFull };
/// fp32 master weights (mixed precision, Micikevicius et al. 2018); the
/// fp32 master as its low 16 bits beside the bf16 weight, which holds the
/// high 16 (remainder: Apex DistributedFusedAdam store_param_remainders,
/// NeMo's choice for a bf16 model with an fp32 optimizer); or none: "pure
/// bf16", the optimizer updates the 16-bit weights and keeps its full
/// states in their dtype (torch.optim creates them with zeros_like(param)).
enum class MasterWeights : std::uint8_t { kFp32, kRemainder, kNone };
/// Gradients accumulated and reduced at the working precision, or in fp32
/// main gradients (Megatron-LM's accumulate_allreduce_grads_in_fp32).
enum class MainGrads : std::uint8_t { kWorking, kFp32 };
/// The dtype of an optimizer's full-size states (Adam's moments, momentum,
/// Sophia's Hessian estimate): auto = fp32 with master weights, the weights'
/// dtype without (torch.optim's zeros_like(param)); or given: bf16 as
/// DeepSeek-V3 trained (report Sec. 3.3.3: "BF16 ... to track the first and
/// second moments in the AdamW optimizer") and Megatron-Core's
/// --use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype
/// bf16 do, or fp32, or fp16 (2 bytes, as bf16).
enum class StateDtype : std::uint8_t { kAuto, kFp32, kBf16, kFp16 };
/// The loss over the logits: fused = one kernel over the 16-bit logits
/// (Megatron's --cross-entropy-loss-fusion, flash-attn's xentropy, a compiled
/// loss); eager = the fp32 chain (upcast, max / log-softmax, nll) that saves
/// an fp32 copy of the logits for the backward; chunked = fused over token
/// chunks, each chunk's logit gradient formed and consumed before the next
/// (torchtune CEWithChunkedOutputLoss: 8 chunks of 16-bit logits, each
/// upcast inside a compiled loss), so one chunk's gradient is alive at once.
enum class CrossEntropy : std::uint8_t { kFused, kEager, kChunked };
/// How an eager plan's RMSNorm runs: composite = the model code's chain of
/// PyTorch ops (Hugging Face LlamaRMSNorm: upcast, pow, mean, rsqrt, two
/// multiplies, six kernels); native = torch.nn.RMSNorm's one CUDA kernel
/// (aten::_fused_rms_norm, pytorch#153666; older PyTorch releases ran the
/// composite chain), at the framework's norm rate; fused =
/// a tuned kernel (Transformer Engine, Apex, Liger). Above the eager level
/// the norm is always one tuned kernel.
enum class RmsNormImpl : std::uint8_t { kComposite, kNative, kFused };
/// Where a part of the model state lives between steps: on the GPU (none)
/// or in host memory (cpu). NVMe (ZeRO-Infinity) is not modelled.
enum class OffloadDevice : std::uint8_t { kNone, kCpu };
/// How an MoE layer's tokens reach their experts across EP ranks:
///  - alltoall: Megatron-Core's MoEAlltoAllTokenDispatcher
///    (--moe-token-dispatcher-type alltoall): one NCCL all-to-all, each
///    token-expert pair a row of its own, at the activations' width;
///  - deepep: DeepEP's node-aware kernels (DeepSeek-V3 report Sec. 3.2.2;
///    Megatron-Core --moe-token-dispatcher-type flex --moe-enable-deepep):
///    a token crosses the network once per destination node, to the GPU
///    of its own local index there, which forwards it over NVLink to the
///    GPUs holding its experts; the combine reduces within the node first.
enum class MoeDispatcher : std::uint8_t { kAllToAll, kDeepEp };

/// Pipeline schedule.
///  - k1f1b: one-forward-one-backward (Narayanan et al. 2021), interleaved
///    when parallel.virtual_stages > 1; bubble (p - 1) / (v m) of the ideal.
///  - kDualPipe: DeepSeek-V3's bidirectional schedule (technical report,
///    arXiv 2412.19437, Sec. 3.2.1 and Table 2; github deepseek-ai/DualPipe):
///    micro-batches enter from both ends, each GPU holds two mirrored stages
///    (i and p - 1 - i: parameters x2), a forward chunk runs overlapped with
///    another micro-batch's backward chunk, and the bubble is
///    (p/2 - 1)(F&B + B - 3W); activations of p + 1 micro-batches in flight.
enum class PpSchedule : std::uint8_t { k1f1b, kDualPipe };

/// CPU offload (techniques/offload.hpp has the costs).
///  - optimizer: ZeRO-Offload (Ren et al. 2021; DeepSpeed
///    zero_optimization.offload_optimizer, Megatron-Core
///    --optimizer-cpu-offload): the fp32 master weights, the optimizer state
///    and an fp32 gradient copy live in host memory, CPU Adam updates them,
///    the gradient shard goes device-to-host and the updated 16-bit
///    parameter shard host-to-device every step.
///  - params: ZeRO-Infinity's parameter offload (Rajbhandari et al. 2021;
///    DeepSpeed offload_param, ZeRO-3 only): the 16-bit parameter shard lives
///    in host memory too and is fetched before each layer's forward and
///    backward.
///  - activations: the layers' saved activations (what the forward keeps
///    for the backward: every saved tensor, or under full recomputation the
///    layers' checkpointed inputs) copied to pinned host memory on a side
///    stream as the forward saves them and back as the backward needs them
///    (torchtune enable_activation_offloading: OffloadActivations,
///    torchtune/training/_activation_offloading.py); the LM head's are kept.
///    Not model state: any() leaves it out.
struct OffloadSpec {
  OffloadDevice optimizer = OffloadDevice::kNone;
  OffloadDevice params = OffloadDevice::kNone;
  OffloadDevice activations = OffloadDevice::kNone;
  bool optimizer_on_cpu() const { return optimizer == OffloadDevice::kCpu; }
  bool params_on_cpu() const { return params == OffloadDevice::kCpu; }
  bool activations_on_cpu() const { return activations == OffloadDevice::kCpu; }
  /// Model state offloaded (optimizer or parameters).
  bool any() const { return optimizer_on_cpu() || params_on_cpu(); }
};

/// Mixture-of-experts routing: the busiest expert sets the expert GEMMs' time.
struct MoePlan {
  double capacity_factor = 0;  // tokens an expert takes, x its even share; 0 = dropless (no limit)
  double imbalance = 1;        // the busiest expert's tokens / the even share (>= 1)
  MoeDispatcher dispatcher = MoeDispatcher::kAllToAll;
  /// The shared expert runs on its own stream beside the dispatch and
  /// combine all-to-alls (Megatron-Core --moe-shared-expert-overlap).
  bool shared_expert_overlap = false;
};

/// What selective recomputation recomputes (Megatron-Core's
/// --recompute-modules, megatron/core/transformer/transformer_config.py
/// `recompute_modules`), as a bit mask. core_attn, mlp and shared_experts
/// are normal checkpoints (the module's input kept, the whole module run
/// again before its backward); layernorm, mla_up_proj and moe_act discard
/// their output after its consumer ran and rebuild it before the backward
/// (CheckpointWithoutOutput, "output-discarding checkpointing").
enum RecomputeModule : std::uint8_t {
  kRecomputeCoreAttn = 1,       // the attention core (Megatron's default)
  kRecomputeMoeAct = 2,         // the routed experts' activation (SwiGLU)
  kRecomputeLayernorm = 4,      // the separate input and pre-MLP norms
  kRecomputeMlaUpProj = 8,      // latent attention's up-projections and RoPE
  kRecomputeMlp = 16,           // a dense MLP
  kRecomputeSharedExperts = 32  // an MoE layer's shared expert
};

struct Recompute {
  RecomputeKind kind = RecomputeKind::kNone;
  int every_k = 0;  // kEvery: checkpoint every k-th layer's input, recompute the others
  /// kFull only: recompute the first K layers of each pipeline stage and keep
  /// the others' activations (Megatron-LM --recompute-method block
  /// --recompute-num-layers K, spelt "block:K"); 0 = every layer.
  int block_layers = 0;
  /// kSelective only: the RecomputeModule bits ("selective" alone: the
  /// attention core, Megatron-Core's default ["core_attn"]).
  std::uint8_t modules = kRecomputeCoreAttn;
  bool operator==(const Recompute&) const = default;
};

struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::kAdamW;
  bool momentum = true;        // sgd
  bool first_moment = false;   // adafactor
  int hessian_interval = 10;   // sophia: Hessian estimate every k steps
  /// Each parameter stepped in its gradient's post-accumulate hook during
  /// the backward, its gradient freed at once (torchtune optimizer_in_bwd,
  /// PyTorch's register_post_accumulate_grad_hook recipe): the gradients
  /// held are one tensor's, not the model's. One micro-batch per step.
  bool in_backward = false;
  /// bitsandbytes' paged optimizers (PagedAdamW, PagedAdamW8bit, PagedLion):
  /// the state in CUDA unified memory, outside PyTorch's allocator; the
  /// driver keeps it on the GPU while it fits beside the rest and pages the
  /// excess to and from the host.
  bool paged = false;
  StateDtype state_dtype = StateDtype::kAuto;
};

/// LoRA target matrices, as a bit mask.
enum LoraTarget : std::uint8_t {
  kTargetQ = 1, kTargetK = 2, kTargetV = 4, kTargetO = 8, kTargetGate = 16, kTargetUp = 32, kTargetDown = 64
};

struct FinetuneSpec {
  FinetuneMode mode = FinetuneMode::kFull;
  int rank = 8;
  std::uint8_t targets = kTargetQ | kTargetV;
};

struct ParallelSpec {
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int cp = 1;
  int ep = 1;
  bool sp = false;  // sequence parallelism with TP
  int zero = 0;     // 0..3
  int virtual_stages = 1;  // interleaved 1F1B when > 1 (Narayanan et al. 2021)
  PpSchedule pp_schedule = PpSchedule::k1f1b;
  bool tp_comm_overlap = false;
  /// ZeRO-1/2 parameter all-gather overlapped with the next step's forward
  /// (Megatron --overlap-param-gather); also on where the framework does it
  /// by default (spec::overlap_param_gather_of).
  bool overlap_param_gather = false;
  /// MoE dispatch and combine all-to-alls run beside another micro-batch's
  /// compute (Megatron-Core overlap_moe_expert_parallel_comm, 1F1B A2A
  /// overlap; DeepSeek-V3's DualPipe), instead of in line with their layer.
  bool ep_comm_overlap = false;
  /// Uneven pipeline stages: layers of the first and of the last stage
  /// (Megatron-LM --decoder-first-pipeline-num-layers /
  /// --decoder-last-pipeline-num-layers); 0 = an even share. The stages
  /// between split the remaining layers evenly (stage_layers below).
  int first_stage_layers = 0;
  int last_stage_layers = 0;
  /// The data-parallel gradient reduction runs after the backward, on the
  /// compute stream, instead of bucket by bucket beside it (Megatron-LM
  /// without --overlap-grad-reduce; DeepSpeed ZeRO-1/2 without overlap_comm).
  /// false (the default): overlapped with the last micro-batch's backward.
  bool grad_reduce_exposed = false;
  /// dp x tp x pp x cp in 64 bits (flags can ask for more GPUs than an int holds).
  long long gpus() const {
    return static_cast<long long>(dp) * tp * pp * cp;
  }
};

struct PlanSpec {
  std::string source_file;
  /// The training framework: an index into spec::frameworks() (framework.hpp);
  /// 0 = megatron. Setting it sets attention and fusion to the framework's
  /// defaults unless the plan gives them.
  std::uint8_t framework = 0;
  /// Whether the plan named its framework (YAML, flag, --set or an imported
  /// launch config); if not, framework 0 is assumed, and the plan's summary
  /// says so where the assumption is doubtful (spec::framework_assumed).
  bool framework_given = false;
  bool attention_given = false, fusion_given = false;
  /// Whether the plan gave main_grads; if not, the framework's default for
  /// the precision (spec::main_grads_of; apply_framework_defaults shows it).
  bool main_grads_given = false;
  /// Whether the plan gave parallel.sp (YAML, flag, --set or an imported
  /// launch config); if not, apply_framework_defaults may turn it on.
  bool sp_given = false;
  int micro_batch = 1;
  int global_batch = 0;  // 0 = micro_batch * dp (one micro-batch per step)
  int seq_len = 0;       // 0 = model's max_seq_len
  /// Sequences packed from documents of this many tokens, each attending
  /// only within itself (flash-attn varlen / Transformer Engine THD with
  /// cu_seqlens, flex-attention block-causal masks): a fused attention
  /// kernel runs seq / packed_doc_len documents per sequence. 0 = one
  /// document per sequence (techniques::apply_attention).
  int packed_doc_len = 0;
  Precision precision = Precision::kBf16;
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;
  /// fp8: the trained linear weights held only as their quantized copies
  /// (Transformer Engine fp8_model_init; NeMo fp8_params), the optimizer
  /// keeping the higher-precision master.
  bool fp8_primary_weights = false;
  /// fp8 (blockwise): DeepSeek-V3's low-precision activation storage
  /// (technical report Sec. 3.3.2): the SwiGLU inputs saved in fp8 with
  /// 1x128 scales, and the attention output saved once in the 12-bit E5M6
  /// format for both the attention backward and the output projection's
  /// weight gradient (techniques::apply_precision).
  bool fp8_activation_storage = false;
  double skipped_step_rate = 0.001;  // fp16: fraction of steps skipped on overflow
  Recompute recompute;
  AttentionKind attention = AttentionKind::kFlash2;
  Fusion fusion = Fusion::kFused;
  bool cuda_graphs = false;
  OptimizerSpec optimizer;
  FinetuneSpec finetune;
  ParallelSpec parallel;
  double tokens = 0.0;  // tokens to train on; 0 = 20 per parameter (Chinchilla)
  AttentionFlops attention_flops = AttentionFlops::kCausal;
  /// Average draw as a fraction of TDP, for energy; 0 = not given: the power
  /// model (engine::training_totals: idle to TDP by the compute-bound share).
  double power_utilization = 0.0;
  /// Goodput (engine::training_totals); each 0 (or < 0) means not given.
  double failure_rate_per_gpu_hour = -1;  // < 0: the profile's, else engine::kLlama3FailuresPerGpuHour
  double checkpoint_bandwidth_bytes_per_s = 0;  // aggregate; 0: engine::kCheckpointBytesPerSPerGpu x GPUs
  double restart_s = 0;                   // 0: engine::kDefaultRestartS
  double checkpoint_interval_s = 0;       // compute between checkpoints; 0: Young/Daly
  double pue = 1.0;                       // facility power / IT power; 1 = the GPUs' energy only
  double grid_carbon_g_per_kwh = -1;      // < 0: not given (no emissions)
  /// Board power limit in watts (nvidia-smi -pl); 0 = the profile's TDP.
  /// Lowers the sustained clock (spec::clock_at_power).
  double power_limit_w = 0.0;
  MasterWeights master_weights = MasterWeights::kFp32;
  MainGrads main_grads = MainGrads::kWorking;
  /// Whether the plan gave cross_entropy; if not, the framework's at the
  /// plan's fusion level (spec::cross_entropy_of; apply_framework_defaults shows it).
  bool cross_entropy_given = false;
  CrossEntropy cross_entropy = CrossEntropy::kFused;
  /// A gated MLP's gate and up projections as one GEMM whose halves eager
  /// PyTorch reads as strided views (FrameworkSpec::fused_gate_up): given by
  /// the plan (the model code's own layout, gate_up: fused or separate), or
  /// the framework's (spec::fused_gate_up_of); read only when given.
  bool gate_up_given = false;
  bool fused_gate_up = false;
  /// An eager plan's RMSNorm (RmsNormImpl): given by the plan (the model
  /// code's own), or the framework's (spec::rms_norm_of); read only when given.
  bool rms_norm_given = false;
  RmsNormImpl rms_norm = RmsNormImpl::kComposite;
  MoePlan moe;
  /// CPU offload of the optimizer (and parameters); a step-level choice, so
  /// not part of MicrobatchPlan (the micro-batch graph does not change).
  OffloadSpec offload;

  /// The global batch in sequences: as given, or one micro-batch per DP rank
  /// (64-bit: flags can ask for more than an int holds).
  long long effective_global_batch() const {
    return global_batch > 0 ? global_batch : static_cast<long long>(micro_batch) * parallel.dp;
  }
};

/// The part of a plan one micro-batch's step graph depends on: the per-
/// micro-batch passes (graph/build.cpp, techniques/) take this type, so they
/// cannot read the data-parallel layout (DP degree, ZeRO stage, virtual
/// stages, global batch), and a search may reuse one micro-batch graph across
/// every layout that shares it. Converts implicitly from a PlanSpec.
struct MicrobatchPlan {
  struct Parallel {
    int tp = 1, pp = 1, cp = 1, ep = 1;
    bool sp = false, tp_comm_overlap = false, ep_comm_overlap = false;
    int first_stage_layers = 0, last_stage_layers = 0;  // uneven stages: the graph holds the busiest stage's layers
  };
  int micro_batch = 1;
  int seq_len = 0;
  int packed_doc_len = 0;  // PlanSpec::packed_doc_len
  std::uint8_t framework = 0;  // spec::framework(): fused kernels, TP overlap
  bool attention_given = false;  // else the framework's default on the GPU (spec::attention_on)
  bool main_grads_given = false;  // else the framework's default (spec::main_grads_of)
  Precision precision = Precision::kBf16;
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;
  bool fp8_primary_weights = false;  // PlanSpec::fp8_primary_weights
  bool fp8_activation_storage = false;  // PlanSpec::fp8_activation_storage
  Recompute recompute;
  AttentionKind attention = AttentionKind::kFlash2;
  Fusion fusion = Fusion::kFused;
  bool cuda_graphs = false;  // launch cost of every kernel
  OptimizerSpec optimizer;  // Sophia's Hessian estimate is a micro-batch's forward and backward
  FinetuneSpec finetune;
  AttentionFlops attention_flops = AttentionFlops::kCausal;
  Parallel parallel;
  MasterWeights master_weights = MasterWeights::kFp32;  // the precision policy reads them
  MainGrads main_grads = MainGrads::kWorking;
  bool cross_entropy_given = false;  // else the framework's (spec::cross_entropy_of)
  CrossEntropy cross_entropy = CrossEntropy::kFused;
  bool gate_up_given = false;  // else the framework's (spec::fused_gate_up_of)
  bool fused_gate_up = false;
  bool rms_norm_given = false;  // else the framework's (spec::rms_norm_of)
  RmsNormImpl rms_norm = RmsNormImpl::kComposite;
  MoePlan moe;  // expert GEMM shapes

  MicrobatchPlan() = default;
  MicrobatchPlan(const PlanSpec& p)  // NOLINT(google-explicit-constructor): a plan is its micro-batch part
      : micro_batch(p.micro_batch), seq_len(p.seq_len), packed_doc_len(p.packed_doc_len), framework(p.framework),
        attention_given(p.attention_given), main_grads_given(p.main_grads_given),
        precision(p.precision), fp8_recipe(p.fp8_recipe), fp8_primary_weights(p.fp8_primary_weights),
        fp8_activation_storage(p.fp8_activation_storage),
        recompute(p.recompute), attention(p.attention), fusion(p.fusion), cuda_graphs(p.cuda_graphs),
        optimizer(p.optimizer),
        finetune(p.finetune), attention_flops(p.attention_flops),
        parallel{p.parallel.tp,
                 p.parallel.pp,
                 p.parallel.cp,
                 p.parallel.ep,
                 p.parallel.sp,
                 p.parallel.tp_comm_overlap,
                 p.parallel.ep_comm_overlap,
                 p.parallel.first_stage_layers,
                 p.parallel.last_stage_layers},
        master_weights(p.master_weights), main_grads(p.main_grads), cross_entropy_given(p.cross_entropy_given),
        cross_entropy(p.cross_entropy), gate_up_given(p.gate_up_given), fused_gate_up(p.fused_gate_up),
        rms_norm_given(p.rms_norm_given), rms_norm(p.rms_norm), moe(p.moe) {}
};

/// Why packed documents of `doc_len` tokens cannot fill a sequence of
/// `seq_len` ("" when they can: 0, or at most the sequence), worded for
/// every place that checks it (the plan file, the flag, check_plan).
std::string packed_docs_problem(int doc_len, int seq_len);

/// Decoder layers on pipeline stage `stage` (0-based) of `pp`: the first
/// and last stages' given counts (0 = even share), the stages between
/// splitting the rest evenly. Even split: ceil(layers / pp) on every stage
/// (engine::check_plan requires pp | layers). 0 when the counts do not add up.
int stage_layers(int layers, int pp, int first, int last, int stage);
/// The most decoder layers any stage holds: the slowest stage, which sets
/// the pipeline's pace.
int max_stage_layers(int layers, int pp, int first, int last);
/// The multi-token-prediction blocks (DeepSeek-V3 Sec. 2.2) the micro-batch
/// graph times: `mtp` (the model's) where the last stage, which holds them
/// beside its own layers, is the busiest (its layers and the blocks at
/// least max_stage_layers; without PP always), else 0 (graph::build_forward).
int timed_mtp_layers(int layers, int mtp, int pp, int first, int last);
/// "" when the uneven-stage counts split `layers` over `pp` stages, else the
/// problem ("126 layers less the first stage's 7 and the last stage's 7
/// leave 112, which 14 middle stages do not divide").
std::string check_stage_layers(int layers, int pp, int first, int last);
/// Where PP does not divide the layers: "; uneven stages do: --first-stage-layers 10 (then 11 on each of
/// the other 2)", the first stage's count closest to layers / PP (fewer on a tie: the first stage also
/// holds the embedding) that leaves the other stages an equal whole share; "" when none does.
std::string stage_split_hint(int layers, int pp);

/// The training framework's defaults for what the plan did not give:
/// sequence parallelism with TP > 1 where the framework turns it on with TP
/// (FrameworkSpec::sequence_parallel_with_tp). The plan-building layer (CLI
/// flags, plan YAML) calls it; PlanSpec's own default stays off, so plans
/// built elsewhere (published validation rows, search) are as they state.
void apply_framework_defaults(PlanSpec& p);

// One spelling for every value, shared by the YAML loader and the CLI.
std::optional<Precision> parse_precision(std::string_view s);
/// Megatron-Core's recompute_modules words joined by '+', ',' or ' ' as a
/// RecomputeModule mask; nullopt for an unknown word ("moe": the whole MoE
/// layer, its all-to-alls included, is not modelled).
std::optional<std::uint8_t> parse_recompute_modules(std::string_view s);
std::string recompute_modules_to_string(std::uint8_t mask, std::string_view sep);
std::optional<Recompute> parse_recompute(std::string_view s);  // none|selective[:M+M..]|full|every:K|block:K|sqrt
std::optional<AttentionKind> parse_attention(std::string_view s);
std::optional<Fusion> parse_fusion(std::string_view s);
std::optional<OptimizerKind> parse_optimizer(std::string_view s);
std::optional<FinetuneMode> parse_finetune(std::string_view s);
std::optional<AttentionFlops> parse_attention_flops(std::string_view s);
std::optional<std::uint8_t> parse_lora_targets(std::string_view s);  // "q,v" or "all"
std::optional<Fp8Recipe> parse_fp8_recipe(std::string_view s);
std::optional<MasterWeights> parse_master_weights(std::string_view s);
std::optional<MainGrads> parse_main_grads(std::string_view s);
std::optional<CrossEntropy> parse_cross_entropy(std::string_view s);
std::optional<RmsNormImpl> parse_rms_norm(std::string_view s);
std::optional<OffloadDevice> parse_offload_device(std::string_view s);
std::optional<MoeDispatcher> parse_moe_dispatcher(std::string_view s);
std::optional<PpSchedule> parse_pp_schedule(std::string_view s);
std::optional<StateDtype> parse_state_dtype(std::string_view s);

std::string to_string(Precision p);
std::string to_string(const Recompute& r);
std::string to_string(AttentionKind a);
std::string to_string(Fusion f);
std::string to_string(OptimizerKind o);
std::string to_string(FinetuneMode f);
std::string to_string(AttentionFlops a);
/// The same word as static text (to_string's, without a copy).
std::string_view name(AttentionFlops a);
std::string lora_targets_to_string(std::uint8_t mask);
std::string to_string(Fp8Recipe r);
std::string to_string(MasterWeights w);
std::string to_string(MainGrads g);
std::string to_string(CrossEntropy c);
std::string to_string(RmsNormImpl r);
std::string to_string(OffloadDevice d);
std::string to_string(MoeDispatcher d);
std::string to_string(PpSchedule s);
std::string to_string(StateDtype s);

/// The accepted words, for "expected one of ..." messages.
std::string precision_choices();
std::string recompute_choices();
std::string attention_choices();
std::string fusion_choices();
std::string optimizer_choices();
std::string finetune_choices();
std::string fp8_recipe_choices();
std::string attention_flops_choices();
std::string lora_target_choices();
std::string master_weights_choices();
std::string main_grads_choices();
std::string cross_entropy_choices();
std::string rms_norm_choices();
std::string offload_device_choices();
std::string moe_dispatcher_choices();
std::string pp_schedule_choices();
std::string state_dtype_choices();

/// Sets one plan field from "key=value" text (compare --vary, search --fix):
/// any field of spec/plan_fields.hpp by its setting key (tp, lora_rank, seq,
/// vpp, ...) or YAML key. Returns "" on success, else the message
/// ("KEY: expected one of ...", "unknown setting ...").
std::string apply_setting(PlanSpec& p, std::string_view key, std::string_view value);
const std::vector<std::string>& setting_keys();

/// Loads a plan YAML over the defaults. Throws support::SpecError.
PlanSpec load_plan(const std::string& path);

}  // namespace ridgeline::spec
