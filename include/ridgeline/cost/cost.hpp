// Cost model: the roofline time of one kernel and the alpha-beta time of one
// collective, on one GPU profile. Units: seconds, FLOP, bytes.
//
//   t = max(flop / (peak[dtype] * eff_compute),
//           hbm_bytes / (hbm_bw * eff_mem(class)) + hbm_latency,
//           sram_bytes / sram_bw)
//       + launches * launch_overhead
//
// GEMM compute time includes tile and wave quantization: tiles =
// ceil(M/tm) ceil(N/tn) batch, waves = ceil(tiles / SMs), and each wave costs
// tm tn K 2 FLOP per SM at the achievable per-SM rate. A kernel is labelled by
// its dominant term (compute, memory, sram, latency); arithmetic intensity is
// FLOP per HBM byte, and the ridge point is peak / bandwidth.
#pragma once

#include <array>
#include <string_view>

#include "ridgeline/graph/graph.hpp"
#include "ridgeline/spec/hardware.hpp"

namespace ridgeline::cost {

/// Documented defaults, used where a profile has no calibration block.
/// Basis for each in efficiency.cpp.
spec::EfficiencySpec default_efficiency(const spec::HardwareSpec& hw);

/// Everything the per-kernel cost needs, resolved once per GPU.
struct CostParams {
  std::array<double, spec::kPeakCount> peak_flop_per_s{};
  std::array<double, spec::kPeakCount> gemm_frac{};
  std::array<double, 4> attention_frac{};  // per spec::AttentionKind
  std::array<double, spec::kKernelClassCount> mem_frac{};  // hbm_frac x class multiplier
  double tile_m = 128, tile_n = 128, gemm_k0 = 0;
  double sms = 1;
  double hbm_bytes_per_s = 1;
  double hbm_latency_s = 0;
  double sram_bytes_per_s = 0;
  double launch_s = 0;
  double graph_launch_s = 0;  // per kernel under CUDA graphs
  double vector_flop_per_s = 1;  // non-tensor rate for pointwise math
  // Collectives.
  int gpus_per_node = 8;
  double intra_bytes_per_s = 0, intra_latency_s = 0;
  double inter_bytes_per_s = 0, inter_latency_s = 0;
  double comm_frac = 0.8;
  bool calibrated = false;
};

/// How a profile is resolved into cost parameters.
struct ResolveOptions {
  bool use_calibration = true;  // the profile's calibration block, when it has one
  /// Board power limit in watts (nvidia-smi -pl); 0 = the profile's TDP. The
  /// sustained clock, and with it every tensor and vector peak, follows
  /// spec::clock_at_power.
  double power_limit_w = 0;
  /// Leave-one-group-out: defaults fitted on this published-row group
  /// (e.g. "mamf", "flashattention3_paper") take their prior (the value
  /// from the literature, before the fit) instead; empty = all fitted.
  std::string_view without_group;
};

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
  double intensity = 0;  // FLOP per HBM byte
  Bound bound = Bound::kMemory;
  // How the compute term was formed (GEMMs and fused attention; 0 otherwise):
  // the chosen output tile (attention: Br x Bc), the K split (1 = none), the
  // thread blocks and the waves they run in over the SMs, and the fraction of
  // the sustained dense peak the main loop is costed at, with its basis.
  double tile_m = 0, tile_n = 0, split_k = 0, blocks = 0, waves = 0;
  double efficiency = 0;
  std::string_view basis;
};

KernelCost cost_kernel(const graph::Kernel& k, const CostParams& c, bool cuda_graphs);

/// Bytes each GPU sends for a collective over n ranks of an S-byte buffer
/// (ring algorithms): all-reduce 2 (n-1)/n S; all-gather, reduce-scatter and
/// all-to-all (n-1)/n S; p2p S.
double collective_bytes_per_gpu(graph::Collective kind, double bytes, double n);

/// Alpha-beta time of a collective: steps * latency + bytes_per_gpu / (link *
/// comm_frac), ring; all-reduce takes the faster of ring and tree (2 log2 n
/// latency steps). The link is NVLink when the group's span fits in a node.
double collective_time(graph::Collective kind, double bytes, double n, double span, const CostParams& c);

/// Ridge point (FLOP/byte) of a precision: peak / HBM bandwidth.
double ridge_point(const CostParams& c, spec::Peak p);

}  // namespace ridgeline::cost
