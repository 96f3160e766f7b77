// Cost model: the time of one kernel and of one collective (NCCL's
// algorithms and protocols over the profile's links), on one GPU profile at
// its sustained clock. Units: seconds, FLOP, bytes.
//
//   t = max(compute, hbm_bytes / (hbm_bw * eff_mem(class)) + hbm_latency,
//           sram_bytes / sram_bw) + launches * launch_overhead
//
// compute, by class:
//  - GEMM: the best of the output tiles that fit the SM's shared memory
//    (64x64 .. 256x128), each as data-parallel waves over the SMs, split-K
//    when too few tiles fill the SMs, or stream-K (Hopper and later); a tile
//    costs 2 tm tn (K + k0) FLOP at the per-SM sustained peak x main-loop
//    efficiency x 1 / (1 + lambda (1/tm + 1/tn)); plus the kernel's fill and
//    drain latency. Split-K adds its fp32 partial sums to the HBM bytes.
//  - Fused attention: blocks = batch x heads x ceil(q_len / Br) in waves
//    over the SMs; a block runs its key tiles (all of them, or up to the
//    diagonal when causal) plus a fixed prologue/epilogue; a key tile costs
//    its MMAs (4 Br Bc d forward, 10 Br Bc d backward) at the
//    implementation's MMA efficiency plus its non-overlapped softmax work
//    (exponentials at the special-function rate).
//  - Anything else: FLOPs at the non-tensor (fp32) rate.
// A kernel is labelled by its dominant term (compute, memory, sram,
// latency); arithmetic intensity is FLOP per HBM byte, and the ridge point is
// peak / bandwidth. Every default and its basis: default_efficiency and
// resolve in cost.cpp, and docs/accuracy.md.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "ridgeline/graph/graph.hpp"
#include "ridgeline/spec/hardware.hpp"

namespace ridgeline::cost {

/// Documented defaults, used where a profile has no calibration block.
/// Basis for each in efficiency.cpp.
spec::EfficiencySpec default_efficiency(const spec::HardwareSpec& hw);

/// Everything the per-kernel cost needs, resolved once per GPU.
struct CostParams {
  /// Dense peaks at the sustained clock (spec::clock_at_power at the power
  /// limit) — the spec-sheet peaks are quoted at the boost clock.
  std::array<double, spec::kPeakCount> peak_flop_per_s{};
  /// peak_flop_per_s = the spec sheet's peak x clock_scale, and
  /// clock_scale = clock_ratio x training_clock_frac (what a report shows as
  /// the roof's derivation).
  double clock_scale = 1;
  double clock_ratio = 1;          // sustained (or locked) clock at the power limit / boost clock
  double training_clock_frac = 1;  // training_clock_fraction() for a training run, else 1
  // GEMM (see gemm_cost in cost.cpp).
  /// Main-loop efficiency per Peak: the fraction of the sustained peak a
  /// tile's K loop issues MMAs at, before tile, wave and K-tail effects.
  std::array<double, spec::kPeakCount> gemm_frac{};
  double tile_m = 0, tile_n = 0;  // > 0: one fixed output tile (calibrated); 0: the best of kGemmTiles
  double gemm_k0 = 0;       // a tile's prologue + epilogue, in K steps at the 16-bit rate
  double gemm_lambda = 0;   // per-tile operand-feed overhead, in tile rows: efficiency 1 / (1 + lambda (1/tm + 1/tn))
  double gemm_latency_s = 0;  // a GEMM kernel's pipeline fill and drain
  bool stream_k = false;    // the library splits work across SMs without wave quantization (Hopper and later)
  /// cuBLAS launches persistent GEMMs, one CTA per SM (Hopper and later):
  /// a collective holding SMs splits them into two waves (gemm_overlap_loss).
  bool persistent_gemm = false;
  double smem_per_sm = 0;   // bytes; which tiles fit (two pipeline stages)
  // Fused attention, per spec::AttentionKind (see attention_cost).
  /// MMA efficiency of the implementation's main loop (mma.sync on a GPU with
  /// asynchronous MMA included), as a fraction of the sustained peak.
  std::array<double, spec::kAttentionKindCount> attention_frac{};
  /// Non-MMA work per score element that does not overlap the MMAs (exp,
  /// rescaling, masking), in exponentials.
  std::array<double, spec::kAttentionKindCount> attention_softmax{};
  double mma_flop_per_exp = 256;   // per SM per clock: tensor FLOP / special-function (exp) results
  /// FlashAttention-1's per-step exchange of the warps' fp32 partial
  /// products through shared memory, in multiples of its bytes at the
  /// banks' peak rate (attention_compute_s).
  double fa1_exchange_cost = 1;
  double attention_block_iters = 1;  // a block's prologue + epilogue, in main-loop iterations
  /// Backward main-loop MMA efficiency relative to the forward's, per spec::AttentionKind.
  std::array<double, spec::kAttentionKindCount> attention_bwd_frac{};
  // Memory-bound kernels.
  std::array<double, spec::kKernelClassCount> mem_frac{};  // hbm_frac x class multiplier
  /// A framework's own kernels (graph::kImplFramework) stream at this
  /// fraction of a tuned kernel's rate (mem_frac), per class: elementwise
  /// and norm below 1, the other classes 1.
  std::array<double, spec::kKernelClassCount> framework_mem_frac{};
  double sms = 1;
  double hbm_bytes_per_s = 1;
  double hbm_latency_s = 0;
  double l2_bytes = 0;
  double sram_bytes_per_s = 0;
  double launch_s = 0;
  double graph_launch_s = 0;  // per kernel under CUDA graphs
  double vector_flop_per_s = 1;  // non-tensor rate for pointwise math
  // Collectives (collective_cost below; every default's basis in resolve).
  int gpus_per_node = 8;
  /// Per GPU, one direction: the NVLink / xGMI / PCIe link and the GPU's
  /// share of the node's NICs; latencies per step of the Simple protocol.
  double intra_bytes_per_s = 0, intra_latency_s = 0;
  double inter_bytes_per_s = 0, inter_latency_s = 0;
  double comm_frac = 0.8;   // Simple protocol's bus bandwidth / link bandwidth, inside a node
  double net_frac = 0.95;   // the same through the NICs
  double nvls_frac = 0;     // NVLS bus efficiency relative to comm_frac (NCCL nvlsEfficiency); 0 = no NVLS
  double comm_channels = 0;  // channels (one thread block, one SM each) of a ring or tree collective
  double nvls_channels = 0;  // of an NVLS one
  bool calibrated = false;
  /// Identifies this resolution for the per-shape GEMM cache (a new value
  /// every resolve(); a copy shares it, as it shares every parameter).
  std::uint64_t id = 0;
};

/// How a profile is resolved into cost parameters.
struct ResolveOptions {
  bool use_calibration = true;  // the profile's calibration block, when it has one
  /// Board power limit in watts (nvidia-smi -pl); 0 = the profile's TDP. The
  /// sustained clock, and with it every tensor and vector peak, follows
  /// spec::clock_at_power.
  double power_limit_w = 0;
  /// A locked graphics clock in hertz (nvidia-smi -lgc, as benchmark papers
  /// fix it): replaces the sustained clock; 0 = not locked.
  double locked_clock_hz = 0;
  /// Leave-one-group-out: defaults fitted on this published-row group
  /// (e.g. "mamf", "flashattention3_paper") take their prior (the value
  /// from the literature, before the fit) instead; empty = all fitted.
  std::string_view without_group;
  /// A training run (hours at steady temperature and power) rather than a
  /// kernel benchmark (seconds): the tensor and vector peaks follow the
  /// clock such a run holds, training_clock_fraction() of the benchmarks'.
  bool training_run = false;
};

/// The clock a long training run holds as a fraction of the sustained clock
/// short kernel benchmarks measure (GPUs throttle further once the die and
/// its leakage reach steady state under continuous load). Fitted on the
/// published end-to-end groups, one vote each: per group, the fraction that
/// zeroes its median speed error; the default is their median, and a group
/// left out (opt.without_group) is left out of the median.
double training_clock_fraction(const ResolveOptions& opt);

/// Resolves a profile (with its calibration block when present and `use_calibration`).
CostParams resolve(const spec::HardwareSpec& hw, const ResolveOptions& opt);
inline CostParams resolve(const spec::HardwareSpec& hw, bool use_calibration = true) {
  ResolveOptions o;
  o.use_calibration = use_calibration;
  return resolve(hw, o);
}

enum class Bound : std::uint8_t { kCompute, kMemory, kSram, kLatency, kNetwork };
std::string_view name(Bound b);

struct KernelCost {
  double time_s = 0;  // one instance
  double compute_s = 0, memory_s = 0, sram_s = 0, launch_s = 0;
  Bound bound = Bound::kMemory;
  // How the compute term was formed (GEMMs and fused attention; 0 otherwise):
  // the chosen output tile (attention: Br x Bc), the K split (1 = none), the
  // thread blocks and the waves they run in over the SMs, and the fraction of
  // the sustained dense peak the main loop is costed at, with its basis.
  double tile_m = 0, tile_n = 0, split_k = 0, blocks = 0, waves = 0;
  double efficiency = 0;
  std::string_view basis;
  /// Collectives: the fraction of the GPU's SMs the communication kernel
  /// holds while it runs (its channels / SMs; NCCL's thread blocks do not
  /// share an SM). Compute overlapping it runs on the rest.
  double sm_fraction = 0;
  /// The fraction of an overlapped GEMM's throughput the collective costs:
  /// sm_fraction where GEMMs launch a grid of tiles that fills the SMs left
  /// free wave by wave; on GPUs whose cuBLAS GEMMs are persistent (one CTA
  /// per SM, Hopper and Blackwell) the CTAs that find their SM held wait for
  /// a second wave, so the GEMM takes 1 / waves of its time alone, waves =
  /// ceil(1 / (1 - sm_fraction)): 0.5 for any NCCL kernel of under half the
  /// SMs (pytorch#143988: FSDP on H100, "the matmuls take 2x as long ...
  /// when they are overlapped with a NCCL kernel").
  double gemm_overlap_loss = 0;
};

struct KernelCache;

/// A kernel's time on `c`. With a cache (the caller's, one per thread), a
/// GEMM's or attention's compute time and a collective's cost are kept by
/// shape and taken from it when the same shape comes again under the same
/// CostParams (CostParams::id): a search costs the same few shapes for every
/// layout. Without one every kernel is costed afresh; the time is the same.
KernelCost cost_kernel(const graph::Kernel& k, const CostParams& c, bool cuda_graphs, KernelCache* cache = nullptr);

/// Bytes each GPU sends for a collective over n ranks of an S-byte buffer
/// (ring algorithms): all-reduce 2 (n-1)/n S; all-gather, reduce-scatter and
/// all-to-all (n-1)/n S; p2p S.
double collective_bytes_per_gpu(graph::Collective kind, double bytes, double n);

/// NCCL's algorithms and protocols (NCCL docs, "Algorithms"; src/graph/tuning.cc).
/// kDeepEp: DeepEP's node-aware all-to-all (graph::Collective::kNodeAllToAll).
enum class CommAlgorithm : std::uint8_t { kRing, kTree, kNvls, kNvlsTree, kDeepEp };
enum class CommProtocol : std::uint8_t { kLL, kLL128, kSimple };
std::string_view name(CommAlgorithm a);
std::string_view name(CommProtocol p);

/// The cost of one collective and how NCCL would run it.
struct CollectiveCost {
  double time_s = 0;
  CommAlgorithm algorithm = CommAlgorithm::kRing;
  CommProtocol protocol = CommProtocol::kSimple;
  double channels = 0;     // thread blocks the kernel launches (one SM each)
  double sm_fraction = 0;  // channels / SMs
};

/// Costs already formed (cost_kernel's cache): two-way tables of GEMM
/// and attention compute times by shape, and of collective costs by kind,
/// size and group, each entry tagged with the CostParams id it was formed
/// under (0 = empty: a zero-initialised cache holds nothing). Fixed size, so
/// using it never allocates. Owned by whoever loops over evaluations (a
/// search worker's engine::CostMemo, engine::Workspace), one per thread.
struct KernelCache {
  struct Shape {
    std::uint64_t id = 0;
    double m = 0, n = 0, k = 0, batch = 0, flops = 0;
    spec::Dtype dtype{};
    std::uint32_t tag = 0;
    double compute_s = 0, extra = 0;
    // What the cost keeps of the tile search (KernelCost's fields of that name).
    double tile_m = 0, tile_n = 0, split_k = 0, blocks = 0, waves = 0, efficiency = 0;
    std::string_view basis;
  };
  struct Collective {
    std::uint64_t id = 0;
    graph::Collective kind{};
    double bytes = 0, n = 0, span = 0, link_bytes = 0;
    CollectiveCost cost{0, {}, {}, 0, 0};
    double gemm_loss = 0;  // what a GEMM beside NCCL's channels loses (cost_kernel)
  };
  std::array<Shape, 256> shapes{};
  std::array<Collective, 128> collectives{};
};

/// Time of a collective over n ranks spanning `span` consecutive ranks: the
/// fastest of NCCL's algorithms x protocols that apply, each
///   t = latency + max(link_bytes / (link_bw x eff), nic_bytes / (nic_bw x eff_net))
/// The group has g ranks in each of N nodes (g = n, N = 1 when the span
/// fits a node; else g = gpus_per_node / stride). Per GPU and direction:
///  - ring: all-reduce moves 2 (n-1)/n S, the others (n-1)/n S; a share
///    (g-1)/g over the link and 1/g through the GPU's NIC (the node's g NICs
///    carry the ring's crossings); 2 (n-1) steps (all-reduce) or n-1, of
///    which 2 (N-1) or N-1 cross nodes;
///  - tree (all-reduce across nodes; NCCL's double binary tree): 2 S, the
///    same (g-1)/g and 1/g shares, 2 (g-1) link steps and 2 ceil(log2 N)
///    network steps, at 0.92 of the ring's rate;
///  - NVLS (`nvls` profiles, one node): NVSwitch reduces and multicasts:
///    all-reduce (n+1)/n S, all-gather and reduce-scatter S over the link,
///    at comm_frac x nvls_frac; one fixed 25 us latency, no base. Across
///    nodes (all-reduce) NVLSTree: NVLS over the node's g GPUs, (g+1)/g S,
///    and a tree between nodes, 2 S / g per NIC, 2 ceil(log2 N) network steps;
///  - protocols: Simple (the profile's step latency, full rate), LL128
///    (0.92 of the rate, steps at 0.56 / 0.29 of Simple's over the link /
///    network) and LL (0.25 of the rate, steps at 0.18 / 0.19), plus a call's
///    base latency 8.4 / 14 / 6.6 us; NVLS is Simple only.
/// So achieved bus bandwidth rises with S from latency-bound to the
/// sustained rate. all-to-all: (g-1)/n S over the link, (n-g)/n S through the
/// NIC, n-1 steps; p2p: S, one step. Node-aware all-to-all (DeepEP,
/// kNodeAllToAll): `bytes` through each GPU's NIC and `link_bytes` over its
/// NVLink as the caller gives them, the two paths pipelined (the slower
/// sets the time), N-1 network and g-1 link steps, Simple protocol, on the
/// 20 SMs DeepSeek-V3 gives it (report Sec. 3.2.2: "only 20 SMs are
/// sufficient to fully utilize the bandwidths of IB and NVLink").
CollectiveCost collective_cost(graph::Collective kind, double bytes, double n, double span, const CostParams& c,
                               double link_bytes = 0);
inline double collective_time(graph::Collective kind, double bytes, double n, double span, const CostParams& c) {
  return collective_cost(kind, bytes, n, span, c).time_s;
}
/// Achieved bus bandwidth as nccl-tests reports it: collective_bytes_per_gpu / time.
double collective_bus_bytes_per_s(graph::Collective kind, double bytes, double n, double span, const CostParams& c);

/// Ridge point (FLOP/byte) of a precision: peak / HBM bandwidth.
double ridge_point(const CostParams& c, spec::Peak p);

}  // namespace ridgeline::cost
