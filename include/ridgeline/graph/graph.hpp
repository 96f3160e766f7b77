// Step graph: one training step of one GPU as a flat list of kernels.
//
// A Kernel is plain data: what it computes (FLOPs, GEMM shape), what it moves
// through HBM (bytes read and written), what it keeps for backward (saved
// bytes), how often it runs per micro-batch (count: identical layers are one
// kernel with count = layers), and how many launches it takes. build() emits
// the forward pass of the eager model (every op its own kernel, naive
// attention, 16- or 32-bit activations); technique passes (techniques/) then
// rewrite the list, and derive_backward() appends the backward kernels.
// Units: FLOP, bytes, per single instance of the kernel.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "ridgeline/spec/kinds.hpp"
#include "ridgeline/spec/model.hpp"
#include "ridgeline/spec/plan.hpp"

namespace ridgeline::graph {

using spec::Dtype;
using spec::KernelClass;
using spec::Phase;

/// Which logical operation a kernel implements; passes select kernels by op.
enum class Op : std::uint8_t {
  kEmbed, kNorm1, kQkv, kQkvBias, kRope, kQk, kScale, kMask, kSoftmax, kAttnDropout, kPv, kFlashAttn,
  kOut, kOutBias, kDropout1, kResidual1, kNorm2, kUp, kUpBias, kAct, kGateMul, kDown, kDownBias, kDropout2,
  kResidual2, kRouter, kDispatch, kCombine, kFinalNorm, kLmHead, kLoss, kCast, kAmax, kDequant, kLoraA, kLoraB,
  kOptimizer, kGradUnscale, kCollective, kP2p, kFused, kOther,
  // Multi-head latent attention (spec::MlaSpec): the query down- and
  // up-projections (or the one query projection), the key/value ones, the
  // latents' RMSNorm, the per-head K assembly; the shared expert's output add.
  kQDown, kQUp, kKvDown, kKvUp, kLatentNorm, kKvConcat, kSharedAdd
};

/// Fusion groups: kernels a hand-written fused kernel merges (level "fused").
enum class FuseGroup : std::uint8_t {
  kNone, kNorm1, kNorm2, kFinalNorm, kQkvBiasRope, kSoftmax, kBiasDropoutAdd1, kBiasAct, kBiasDropoutAdd2, kLoss
};

enum KernelFlags : std::uint16_t {
  kPointwise = 1,      // streaming op that torch.compile / XLA can fuse into a chain
  kHasWeight = 2,      // GEMM with a weight matrix (gets a weight-gradient GEMM)
  kFrozen = 4,         // weight is frozen (LoRA/QLoRA base): no weight gradient
  kAttnCore = 8,       // attention core (QK^T .. PV): selective recomputation target
  kLayer = 16,         // inside a decoder layer (count = layers on this GPU)
  kPerStep = 32,       // runs once per step, not per micro-batch (optimizer, DP all-reduce)
  kOverlapped = 64,    // communication that overlaps with compute
  kFp8Gemm = 128,      // GEMM executed in fp8
  kLossInPlace = 256,  // eager loss whose fp32 upcast is itself saved (no separate fp32 workspace)
  kCausal = 512,       // fused attention with a causal mask
  kNextForward = 1024,  // per-step communication overlapped with the next step's first forward
  // How an overlapped collective shares the GPU with the compute beside it
  // (cost::cost_kernel); none of the three: NCCL channels beside cuBLAS GEMMs.
  kCommCopyEngine = 2048,     // copy-engine ring exchange (TE userbuffers ring_exchange): no SMs
  kCommUserbuffers = 4096,    // TE userbuffers on comm.sms SMs, the GEMM's grid sized to the rest
  kBesideAttention = 8192,    // NCCL send/recv beside attention kernels, not persistent GEMMs
  kSharedExpert = 16384,      // an MoE layer's shared expert (its kernels; their backward keeps the flag)
  // Communication on the main stream while the shared expert runs on its
  // own (Megatron-Core --moe-shared-expert-overlap): hidden behind the
  // shared expert's kernels of the same phase only.
  kBesideSharedExpert = 32768,
};

/// Kernel::impl of an elementwise or norm kernel. kImplFramework: the
/// framework's own kernel (PyTorch's eager TensorIterator over a strided or
/// broadcast operand, its native norm kernels, TorchScript-fused ops such as
/// Megatron's bias_swiglu), which streams at about half the HBM rate
/// (cost::CostParams::framework_mem_frac); kImplTuned: a kernel that streams
/// at the hardware's rate, generated for the chain (torch.compile's and
/// XLA's codegen, Liger's Triton kernels), hand-written (BabelStream), or
/// PyTorch's vectorized loop over contiguous operands.
inline constexpr std::uint8_t kImplFramework = 0;
inline constexpr std::uint8_t kImplTuned = 1;

/// Collective operations. Eight bytes wide: CollectiveSpec then holds no
/// padding (Kernel's cost inputs compare bytewise).
/// kNodeAllToAll: DeepEP's node-aware all-to-all (spec::MoeDispatcher::kDeepEp),
/// whose bytes through the NIC and over NVLink the caller gives (they
/// depend on the routing, not only on the group).
enum class Collective : std::uint64_t { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kP2p, kNodeAllToAll };

struct GemmShape {
  double m = 0, n = 0, k = 0, batch = 1;
};

/// A fused attention kernel's problem: `batch` sequences of `q_len` queries
/// against `kv_len` keys, `heads` query heads sharing `kv_heads` K/V heads
/// (GQA), head dimension `head_dim`; causal masks keys after the query.
/// `v_head_dim` is V's (and O's) head dimension where it differs from
/// Q's and K's (multi-head latent attention: d_qk = nope + rope, d_v); 0 = head_dim.
struct AttentionShape {
  double batch = 0, heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, head_dim = 0;
  bool causal = true;
  double v_head_dim = 0;
  /// Causal sliding window: a query sees the `window` keys up to itself; 0 = none.
  double window = 0;
};

/// What a communication kernel (collective or p2p) moves, and over whom.
struct CollectiveSpec {
  Collective kind = Collective::kAllReduce;
  double bytes = 0;  // the full buffer S per instance
  double group = 0;  // ranks in the group
  double span = 0;   // consecutive ranks the group spans (selects the intra- or inter-node link)
  double sms = 0;    // kCommUserbuffers: the SMs the communication kernel holds
  double link_bytes = 0;  // kNodeAllToAll: bytes each GPU sends over NVLink (`bytes`: through its NIC)
};

struct Kernel {
  std::string_view name;
  Op op = Op::kOther;
  Phase phase = Phase::kForward;
  KernelClass cls = KernelClass::kElementwise;
  Dtype dtype = Dtype::kBf16;
  FuseGroup group = FuseGroup::kNone;
  /// The implementation: for a fused attention kernel its spec::AttentionKind;
  /// for an elementwise or norm kernel kImplFramework or kImplTuned (the
  /// cost model's memory efficiency differs between them).
  std::uint8_t impl = 0;
  std::uint16_t flags = 0;
  /// GEMMs: the product's shape. Fused attention (cls kAttention): {q_len,
  /// kv_len, head_dim, batch x heads}, causal in kCausal; with a distinct V
  /// head dimension, head_dim is the mean of Q's and V's (the FLOPs per tile) (the cost model's
  /// tiles and waves need no more; kept in these four numbers so a kernel
  /// stays small to copy).
  GemmShape gemm;
  CollectiveSpec comm;       // collectives and p2p
  double flops = 0;          // hardware FLOPs per instance
  double model_flops = 0;    // FLOPs credited to MFU per instance (causal attention halved, ...)
  double read_bytes = 0;     // HBM bytes read per instance
  double write_bytes = 0;    // HBM bytes written per instance
  double chain_bytes = 0;    // part of write_bytes the next kernel of its chain reads
  double sram_bytes = 0;     // bytes through shared memory (fused attention)
  double launches = 1;       // kernel launches per instance
  double weight_params = 0;  // weight elements a GEMM multiplies by (for fp8 casts, LoRA, dequant)
  // The fields above, from `name`, are what the cost model reads (one
  // block without padding: engine::same_cost_inputs compares it bytewise);
  // those below it does not.
  double count = 1;          // instances per micro-batch (or per step when kPerStep)
  double saved_bytes = 0;    // bytes kept for backward per instance
  double saved_core_bytes = 0;  // of which attention-core internals (s^2 scores...), dropped by selective recompute
  /// Of the instances' saved tensors, the fraction alive at once: forward
  /// kernels 1 unless recomputation frees them (0; the layer input keeps
  /// checkpoints / layers); a recompute-phase kernel holds what it rebuilds
  /// for segment / layers of its instances (the working set of one segment).
  double saved_fraction = 1;
  double workspace_bytes = 0;  // alive only while the kernel runs (an eager loss's fp32 logits)

  bool has(KernelFlags f) const { return (flags & f) != 0; }
  double hbm_bytes() const { return read_bytes + write_bytes; }
  /// Arithmetic intensity: FLOP per HBM byte (0 without HBM traffic).
  double intensity() const { return hbm_bytes() > 0 ? flops / hbm_bytes() : 0.0; }
};

/// The backward of a forward kernel before its op's own rule: the same
/// kernel in the backward phase, keeping nothing (no saved, workspace or
/// chained bytes), at twice the forward's FLOPs and model FLOPs.
Kernel backward_copy(const Kernel& f);

/// One GPU's micro-batch (or step) as kernels, and the shape facts the passes share.
struct Graph {
  std::vector<Kernel> kernels;
  int layers = 0;        // decoder layers on this GPU
  /// Of `layers`, the model's multi-token-prediction blocks the graph times
  /// (spec::timed_mtp_layers: the last stage's, where it is the busiest).
  int mtp_layers = 0;
  /// Of `layers`, an MoE model's dense first layers (spec::MoeSpec::dense_layers)
  /// on this GPU: their MLP kernels count these, the routed and shared
  /// experts' count the rest; 0 for a dense model (its MLP counts `layers`).
  int dense_layers = 0;
  double tokens = 0;     // tokens per micro-batch on this GPU (b * s / cp)
  double act_bytes = 2;  // bytes per activation element
  /// Quantized copies each fp8 (NVFP4) linear weight keeps (techniques::apply_precision): 2, or 1 where one serves both.
  double fp8_weight_copies = 2;
  /// Whether the fp8 linears' weight-gradient GEMMs run in the 16-bit dtype
  /// `fp8_wgrad_dtype` on 16-bit operands (torchao ROWWISE_WITH_GW_HP; set by
  /// techniques::apply_precision, read by derive_backward).
  bool fp8_wgrad_16bit = false;
  spec::Dtype fp8_wgrad_dtype = spec::Dtype::kBf16;
  /// Bytes of Q, K and V one fused-attention instance saves for its
  /// backward (techniques::apply_attention; 0 without a fused kernel): what
  /// recomputing latent attention's up-projections frees.
  double attention_qkv_bytes = 0;
  /// The loss's logit gradient formed this many token chunks at a time
  /// (techniques::apply_fusion: spec::CrossEntropy::kChunked, 8), else 1.
  double logit_grad_chunks = 1;

  /// The index of the forward fused-attention kernel (the last one), or
  /// kernels.size() when there is none.
  size_t forward_flash() const;
};

/// Forward kernels of the eager model for one micro-batch on one GPU.
/// Uses plan.micro_batch, seq_len, precision (activation width) and parallel
/// (tp, cp, pp shard shapes; collectives are added by the parallel pass).
void build_forward(const spec::ModelSpec& model, const spec::MicrobatchPlan& plan, Graph& g);

/// Appends backward kernels derived from the forward ones (GEMM: input- and
/// weight-gradient GEMMs of equal FLOPs; no weight gradient for frozen
/// weights; memory-bound ops: read saved + grad, write grad; fused attention:
/// 2.5x forward FLOPs).
void derive_backward(Graph& g);

/// Sums over a graph (per micro-batch unless stated).
struct GraphTotals {
  double flops = 0, model_flops = 0, recompute_flops = 0, hbm_bytes = 0, saved_bytes = 0, launches = 0;
};
GraphTotals totals(const Graph& g);

/// Resolved sequence length (plan's, or the model's max).
int seq_len(const spec::ModelSpec& model, const spec::MicrobatchPlan& plan);

}  // namespace ridgeline::graph
