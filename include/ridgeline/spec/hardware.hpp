// Hardware profile: one GPU and the cluster around it, as parsed from
// hardware_profiles/NAME.yaml. Plain data, SI units (bytes, seconds, FLOP/s,
// bytes/s, hertz, watts, USD per GPU-hour).
//
// What the GPU can do beyond its figures (fp8 tensor cores, Hopper's wgmma,
// which FlashAttention kernel runs) follows from its typed `generation`,
// through one table (generation_info); no code reads capabilities from the
// free-text `name` or `architecture`.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/spec/field_override.hpp"
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

/// The held-out records of one measurement class (`ridgeline calibrate
/// --holdout`): the fit made on the rest, the log-residuals ln(predicted /
/// measured time) of these. Prediction intervals of a calibrated profile's
/// kernels are drawn from them (uncertainty/interval.hpp).
struct HeldoutResidual {
  std::string cls;  // a measurement class ("gemm", "attention_flash")
  int records = 0;
  double log_mean = 0.0;
  double log_sd = 0.0;
};

struct CalibrationSpec {
  bool present = false;
  std::string measurements;  // file the fit was made from
  std::string device;
  std::string date;
  EfficiencySpec efficiency;
  std::vector<CalibrationResidual> residuals;
  double heldout_fraction = 0.0;  // of the records held out for `heldout` (0: none)
  std::vector<HeldoutResidual> heldout;
  /// The held-out statistics of class `cls`, or nullptr.
  const HeldoutResidual* heldout_of(std::string_view cls) const {
    for (const auto& h : heldout)
      if (h.cls == cls) return &h;
    return nullptr;
  }
};

/// One GPU + framework stack's correction fitted to whole measured runs
/// (`ridgeline calibrate --runs`; spec/stack_calibration.hpp reads and
/// writes the file): a scale on the predicted step time and, when the runs
/// gave peak memory, the allocator's reserve in place of the framework's.
/// The CLI attaches the stacks of a calibration file whose `gpu` is this
/// profile's id (`--calibration`); the engine applies the one of the
/// plan's framework (HardwareSpec::stack_for).
struct StackCorrection {
  std::string gpu;         // the profile id the runs ran on ("h100_sxm")
  std::string gpu_name;    // its name, for readers
  std::uint8_t framework = 0;  // index into spec::frameworks()
  std::vector<std::string> runs;  // the runs' names, in file order
  /// Step time: measured = predicted x time_scale. time_log_sd: the sample
  /// standard deviation of the runs' ln(measured / predicted) (0 with one
  /// run); time_runs: how many runs gave a time.
  double time_scale = 1.0;
  double time_log_sd = 0.0;
  int time_runs = 0;
  /// The GPU counts and total parameter counts the timed runs span (0 = not
  /// recorded): a plan beyond them has its anchored interval widened
  /// (uncertainty::IntervalModel::run_interval).
  double gpus_lo = 0, gpus_hi = 0, params_lo = 0, params_hi = 0;
  /// Peak reserved = peak allocated x (1 + allocator_reserve); < 0 when no
  /// run gave reserved memory (the framework's reserve stays). memory_runs:
  /// how many runs gave it; reserve_log_sd: the sample standard deviation of
  /// their ln(measured / predicted reserved) (0 with one run).
  double allocator_reserve = -1.0;
  double reserve_prior = 0.0;  // the framework's, which the fit started from
  double reserve_log_sd = 0.0;
  int memory_runs = 0;
  bool has_reserve() const { return allocator_reserve >= 0.0; }
};

/// The fabric around a GPU. The latencies are per algorithm step of NCCL's
/// Simple protocol (NCCL src/graph/tuning.cc hwLat: NVLink 3.4 us, PCIe
/// 5.7 us, network 14 us); cost::collective_time derives the LL and LL128
/// protocols' from them. A field left out (false, 0) keeps the plain
/// two-tier model: ring or tree over the link the group's span selects.
struct InterconnectSpec {
  int gpus_per_node = 8;
  double intra_node_bytes_per_s = 0.0;  // per GPU, one direction (NVLink / xGMI)
  double intra_node_latency_s = 0.0;
  double inter_node_bytes_per_s = 0.0;  // per GPU, one direction (InfiniBand / RoCE)
  double inter_node_latency_s = 0.0;
  /// The node's GPUs meet in NVSwitch (any subset at the full per-GPU NVLink bandwidth).
  bool nvswitch = false;
  /// NVLink SHARP: NVSwitch reduces and multicasts (third-generation
  /// NVSwitch, Hopper and later); needs `nvswitch`.
  bool nvls = false;
  /// Scale-out NICs per node and one NIC's bandwidth (one direction); 0 =
  /// not stated. Together they give the per-GPU share, nic x min(nics, gpus) / gpus,
  /// which inter_node_bandwidth must then equal.
  int nics_per_node = 0;
  double nic_bytes_per_s = 0.0;
  /// NIC i of every node on one rail (leaf switch): one NIC per GPU, so
  /// needs nics_per_node >= gpus_per_node.
  bool rail_optimized = false;
  /// NCCL/RCCL channels (one thread block, so one SM or CU, each) a ring or
  /// tree collective runs on; 0 = the default of cost::resolve.
  int comm_channels = 0;
};

/// The host around one GPU, for CPU offload (the profile's optional `host:`
/// section; spec::PlanSpec::offload). Every figure is per GPU; a figure the
/// profile does not state keeps its default below, each a conservative one.
///
/// Host memory per GPU: DGX A100 (320 GB) has 1 TB of system memory for 8
/// GPUs (16 x 64 GiB DIMMs, NVIDIA DGX A100 datasheet): 128 GiB.
inline constexpr double kDefaultHostMemoryBytes = 1024.0 * 1024 * 1024 * 1024 / 8;
/// Host link per GPU per direction: PCIe Gen4 x16, 16 GT/s x 16 lanes with
/// 128b/130b coding = 31.5 GB/s; pinned cudaMemcpy reaches about 25 GB/s of
/// it (CUDA bandwidthTest on A100 hosts).
inline constexpr double kDefaultHostLinkBytesPerS = 25e9;
/// CPU Adam (DeepSpeedCPUAdam), parameters updated per second by one GPU's
/// share of the host's cores. Ren et al. 2021 (ZeRO-Offload), Table 3:
/// CPU-Adam updates 10 billion parameters in 2.57 s on a DGX-2 host (two
/// 24-core Xeon Platinum 8168, AVX-512): 3.89e9 parameters/s, 81e6 per core.
/// A DGX-2 GPU's share is 1/16 of it (3 of 48 cores): 0.243e9 parameters/s.
inline constexpr double kCpuAdamParamsPerSPerCore = 10e9 / 2.57 / 48;
inline constexpr double kDefaultCpuAdamParamsPerS = 10e9 / 2.57 / 16;

struct HostSpec {
  double memory_bytes = kDefaultHostMemoryBytes;           // host memory per GPU
  double link_bytes_per_s = kDefaultHostLinkBytesPerS;     // GPU <-> host, one direction
  double cpu_adam_params_per_s = kDefaultCpuAdamParamsPerS;  // CPU Adam on the GPU's share of the cores
  /// Which figures the profile states (the others are the defaults above).
  bool memory_stated = false, link_stated = false, cpu_adam_stated = false;
};

enum class Vendor : std::uint8_t { kNvidia, kAmd, kHost };

/// A GPU generation (the profile's `generation:`). kHost is the host backend's
/// "GPU" (one CPU core, host_validation/): no tensor cores. kBlackwell is the
/// data-center part (sm_100/sm_103: B200, B300, GB200, GB300); kRtxBlackwell
/// the GeForce/RTX part (sm_120: RTX 5090), which has no tcgen05.
enum class Generation : std::uint8_t {
  kAmpere, kAda, kHopper, kBlackwell, kRtxBlackwell, kCdna2, kCdna3, kCdna4, kHost
};
inline constexpr int kGenerationCount = 9;

/// What a generation has, each from its vendor's architecture documents:
///  - fp8 tensor cores: Ada (Ada whitepaper, 4th-gen tensor cores), Hopper
///    (H100 whitepaper, Transformer Engine), Blackwell (B200 datasheet), RTX
///    Blackwell (RTX Blackwell whitepaper, RTX 5090 FP8 419 TFLOP/s), CDNA 3
///    (MI300 ISA / CDNA 3 whitepaper), CDNA 4 (AMD ROCm Compute Profiler
///    data-type table: FP8/BF8 GEMM on CDNA3 and CDNA4); not Ampere (A100
///    whitepaper: fp16, bf16, tf32, int8 only), not CDNA 2 (same ROCm table:
///    no FP8 GEMM on CDNA2; MI250X product page lists no FP8).
///  - fp4 tensor cores (a dense FP4 peak, Peak::kFp4): Blackwell (NVIDIA
///    Blackwell datasheet: NVFP4, sparse | dense per GPU), RTX Blackwell (RTX
///    Blackwell whitepaper: FP4 1,676 dense on RTX 5090), CDNA 4 (MI355X
///    product page: MXFP4 10.1 PFLOP/s); no earlier generation has an FP4
///    tensor path (Hopper and CDNA 3 stop at fp8: H100 whitepaper, MI325X page).
///  - wgmma: warpgroup-level asynchronous MMA with TMA loads, sm_90a only (PTX
///    ISA, wgmma.mma_async); Blackwell replaces it with tcgen05.mma (sm_100a).
///  - async MMA: tensor cores fed by an asynchronous, block-wide MMA (Hopper's
///    wgmma, Blackwell's tcgen05); a kernel built on warp-level mma.sync
///    (FlashAttention-2) reaches a smaller fraction of their peak. RTX
///    Blackwell (sm_120) has neither wgmma nor tcgen05 or tensor memory
///    (CUTLASS Blackwell documentation, supported-GPU table): its tensor cores
///    are fed by warp-level mma.sync, as Ampere's and Ada's.
///  - FlashAttention-3: written for wgmma and TMA on Hopper (Shah et al. 2024,
///    Sec. 3); on any other GPU the same plan runs FlashAttention-2.
///  - fp8 GEMMs in every operand layout (not only TN): data-center Blackwell
///    (Transformer Engine, transformer_engine/pytorch/utils.py:657-663
///    is_non_tn_fp8_gemm_supported: compute capability 10.x, 11.x or >= 13;
///    not sm_120, RTX Blackwell). Elsewhere an fp8 GEMM that needs a
///    transposed operand (dgrad's weight, wgrad's input) reads a transposed copy.
struct GenerationInfo {
  std::string_view word;
  Generation generation;
  Vendor vendor;
  bool fp8_tensor_cores;
  bool fp4_tensor_cores;
  bool wgmma;
  bool async_mma;
  bool flash_attention_3;
  bool fp8_non_tn_gemm;
};

/// The row of a generation (the one table behind parse, print and capabilities).
const GenerationInfo& generation_info(Generation g);
std::optional<Generation> parse_generation(std::string_view s);
std::string_view name(Generation g);
/// "ampere, ada, hopper, blackwell, rtx_blackwell, cdna2, cdna3, cdna4, host",
/// for "expected one of" messages.
std::string generation_choices();

std::optional<Vendor> parse_vendor(std::string_view s);
std::string_view name(Vendor v);
std::string vendor_choices();

/// A GPU name as sources print it, normalised for matching against a
/// profile's `aliases`: anything from the first '(' or ',' dropped, upper
/// case, spaces and underscores as dashes, outer dashes trimmed, and an
/// "NVIDIA-", "AMD-", "INSTINCT-" or "GEFORCE-" prefix removed (in that order):
/// "NVIDIA A100-SXM4-80GB (400W), NVLink" -> "A100-SXM4-80GB".
std::string normalize_gpu_name(std::string_view s);

struct HardwareSpec {
  std::string id;           // file stem, e.g. "h100_sxm"
  std::string name;         // "NVIDIA H100 SXM5 80GB"
  std::string vendor;       // "nvidia", "amd", "host" (a word of parse_vendor)
  std::string architecture;  // free text for readers; capabilities come from `generation`
  /// Built in code (the host backend) unless a profile says otherwise; a
  /// profile must state it.
  Generation generation = Generation::kHost;
  /// Names sources print for this part, as written in the profile; they
  /// match by normalize_gpu_name (validation/ maps published rows with them).
  std::vector<std::string> aliases;
  std::string source_file;

  double memory_bytes = 0.0;
  double hbm_bytes_per_s = 0.0;
  double l2_bytes = 0.0;
  int sm_count = 0;
  double clock_hz = 0.0;  // boost clock, the one the dense peaks are quoted at
  /// The clock tensor-core work sustains under load at the profile's TDP
  /// (`compute.sustained_clock`; the boost clock when the profile gives none).
  /// 0 < sustained_clock_hz <= clock_hz.
  double sustained_clock_hz = 0.0;
  /// Exponentials (MUFU.EX2) the special-function units issue per SM per
  /// clock (`compute.exp_per_sm_clock`): 16 on every NVIDIA part from sm_50
  /// to sm_100 (CUDA C Programming Guide, arithmetic instruction throughput),
  /// 32 on Blackwell Ultra, which doubles it. Prices a softmax's exponentials.
  double exp_per_sm_clock = 16.0;
  double smem_per_sm_bytes = 0.0;
  double sram_bytes_per_s = 0.0;  // aggregate over all SMs
  /// Dense peak per Peak (FLOP/s); 0 = not supported (e.g. fp8 on A100).
  std::array<double, kPeakCount> peak_flop_per_s{};
  double launch_overhead_s = 0.0;  // 0 = default

  InterconnectSpec interconnect;
  HostSpec host;
  /// Board power (`power.tdp`) and rental price (`price_per_gpu_hour`), both
  /// optional: 0 means the profile does not say, and a view shows energy or
  /// cost as "unknown" (never 0 W or $0.00) for a value <= 0.
  double tdp_w = 0.0;
  double price_per_gpu_hour_usd = 0.0;
  bool has_tdp() const { return tdp_w > 0.0; }
  bool has_price() const { return price_per_gpu_hour_usd > 0.0; }
  /// Board power with the GPU clocked but no kernel compute-bound
  /// (`power.idle`); 0 = not stated: engine::kIdlePowerFraction of the TDP.
  double idle_w = 0.0;
  /// Unexpected job interruptions per GPU-hour
  /// (`reliability.failure_rate_per_gpu_hour`); 0 = not stated:
  /// engine::kLlama3FailuresPerGpuHour.
  double failure_rate_per_gpu_hour = 0.0;

  std::map<std::string, std::string> sources;  // field path -> where the figure comes from
  CalibrationSpec calibration;
  /// Stack corrections from whole measured runs on this profile, one per
  /// framework (--calibration; empty otherwise).
  std::vector<StackCorrection> stacks;
  /// The stack correction of `framework` on this profile, or nullptr.
  const StackCorrection* stack_for(std::uint8_t framework) const {
    for (const auto& s : stacks)
      if (s.framework == framework) return &s;
    return nullptr;
  }

  double peak(Peak p) const { return peak_flop_per_s[static_cast<int>(p)]; }
  bool supports(Peak p) const { return peak(p) > 0.0; }

  // Capabilities, from the generation (GenerationInfo says why each holds).
  const GenerationInfo& generation_facts() const { return generation_info(generation); }
  bool is_amd() const { return generation_facts().vendor == Vendor::kAmd; }
  bool has_fp8() const { return generation_facts().fp8_tensor_cores; }
  bool has_fp4() const { return generation_facts().fp4_tensor_cores; }
  bool has_wgmma() const { return generation_facts().wgmma; }
  bool has_async_mma() const { return generation_facts().async_mma; }
  bool has_fa3() const { return generation_facts().flash_attention_3; }
};

/// The clock tensor-core work sustains at a board power of `power_w` watts:
///   f(P) = min(f_boost, f_sustained * (P / P_tdp)^(1/3))
/// Dynamic power is P ~ C * f * V^2, and within the DVFS range the voltage
/// the clock needs rises about linearly with the clock (V ~ f), so P ~ f^3
/// and f ~ P^(1/3). The reference point is the profile's TDP, at which the
/// sustained clock is observed; no power lifts the clock above boost.
/// power_w <= 0 (no limit given), or a profile without a TDP: the sustained
/// clock. A spec built in code without a sustained clock uses clock_hz.
double clock_at_power(const HardwareSpec& hw, double power_w);

/// Loads and validates a profile; throws support::SpecError with every problem
/// found. `generation` is required; `vendor`, when given, must be the
/// generation's (and is the generation's when left out); an fp8 peak is given
/// exactly when the generation has fp8 tensor cores, and an fp4 peak exactly
/// when it has fp4 tensor cores; `compute.sustained_clock`, when given, is at
/// most `compute.boost_clock` (and is the boost clock when left out); two
/// aliases of one profile may not normalise to the same name.
HardwareSpec load_hardware(const std::string& path);
/// load_hardware with `overrides` (--set gpu.FIELD=VALUE) replacing or adding
/// fields before the profile is read, so each is validated as the field in
/// the file; a problem with one is reported under its label, without a file
/// position (field_override.hpp). A name of its own, so that load_hardware
/// stays one function (callers pass it as a function pointer).
HardwareSpec load_hardware_with_overrides(const std::string& path, std::span<const FieldOverride> overrides);

}  // namespace ridgeline::spec
