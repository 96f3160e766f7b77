// Hardware profile: one GPU and the cluster around it, as parsed from
// hardware_profiles/NAME.yaml. Plain data, SI units (bytes, seconds, FLOP/s,
// bytes/s, hertz, watts, USD per GPU-hour).
#pragma once

#include <array>
#include <map>
#include <string>
#include <vector>

#include "ridgeline/spec/kinds.hpp"

namespace ridgeline::spec {

/// Cost-model efficiencies. Without a calibration block the documented
/// defaults of cost/efficiency.hpp apply; `calibrate` writes fitted ones.
struct EfficiencySpec {
  /// Fraction of the dense peak a large GEMM reaches, per Peak.
  std::array<double, kPeakCount> gemm_frac{};
  /// Output tile a GEMM kernel computes per thread block (tile quantization).
  double gemm_tile_m = 128.0;
  double gemm_tile_n = 128.0;
  /// Fixed work of a GEMM tile beyond its K loop (prologue, pipeline fill,
  /// epilogue writing C), in units of K: a tile costs 2 tm tn (K + k0) FLOP.
  double gemm_k0 = -1.0;  // < 0 = default
  /// Fraction of the dense peak a fused attention kernel reaches.
  double attention_frac = 0.0;
  /// Fraction of HBM bandwidth reached by a large streaming kernel.
  double hbm_frac = 0.0;
  /// Fixed time of a memory-bound kernel beyond its streaming time (ramp-up,
  /// tail, DRAM latency); makes small transfers reach less bandwidth.
  double hbm_latency_s = 0.0;
  /// Per-class multiplier on hbm_frac (norms and softmax reach less than a copy).
  std::array<double, kKernelClassCount> class_mem_frac{};
  /// Host-side launch overhead per kernel.
  double launch_overhead_s = 0.0;
  /// Fraction of link bandwidth collectives reach (NCCL bus bandwidth / link).
  double comm_frac = 0.0;
};

struct CalibrationResidual {
  std::string cls;
  int records = 0;
  double median_abs_pct = 0.0;
  double p90_abs_pct = 0.0;
};

struct CalibrationSpec {
  bool present = false;
  std::string measurements;  // file the fit was made from
  std::string device;
  std::string date;
  EfficiencySpec efficiency;
  std::vector<CalibrationResidual> residuals;
};

struct InterconnectSpec {
  int gpus_per_node = 8;
  double intra_node_bytes_per_s = 0.0;  // per GPU, one direction (NVLink / xGMI)
  double intra_node_latency_s = 0.0;
  double inter_node_bytes_per_s = 0.0;  // per GPU, one direction (InfiniBand / RoCE)
  double inter_node_latency_s = 0.0;
};

struct HardwareSpec {
  std::string id;           // file stem, e.g. "h100_sxm"
  std::string name;         // "NVIDIA H100 SXM5 80GB"
  std::string vendor;       // "nvidia", "amd", "host"
  std::string architecture;
  std::string source_file;

  double memory_bytes = 0.0;
  double hbm_bytes_per_s = 0.0;
  double l2_bytes = 0.0;
  int sm_count = 0;
  double clock_hz = 0.0;
  double smem_per_sm_bytes = 0.0;
  double sram_bytes_per_s = 0.0;  // aggregate over all SMs
  /// Dense peak per Peak (FLOP/s); 0 = not supported (e.g. fp8 on A100).
  std::array<double, kPeakCount> peak_flop_per_s{};
  double launch_overhead_s = 0.0;  // 0 = default

  InterconnectSpec interconnect;
  double tdp_w = 0.0;
  double price_per_gpu_hour_usd = 0.0;

  std::map<std::string, std::string> sources;  // field path -> where the figure comes from
  CalibrationSpec calibration;

  double peak(Peak p) const { return peak_flop_per_s[static_cast<int>(p)]; }
  bool supports(Peak p) const { return peak(p) > 0.0; }
};

/// Loads and validates a profile; throws support::SpecError with every problem found.
HardwareSpec load_hardware(const std::string& path);

}  // namespace ridgeline::spec
