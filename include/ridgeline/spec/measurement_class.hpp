// Measurement classes: what one microbenchmark record measures (the "class"
// of a record in a measurement file, docs/measurements.md), with what the
// rest of the program does with each class. One word table drives parsing,
// printing and the list of known classes in error messages; a new class is
// one new row.
//
// Header-only and standard-library-only (C++17): cuda_validation/, which
// nvcc compiles as C++17 and which does not link ridgeline_core, includes it
// too. No units: this header classifies, it does not measure.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ridgeline::spec {

enum class MeasurementClass : std::uint8_t {
  kHbmCopy,
  kHbmTriad,
  kL2Copy,
  kL2Triad,
  kSram,
  kGemm,
  kElementwiseUnfused,
  kElementwiseFused,
  kSoftmax,
  kLayernorm,
  kAttentionNaive,
  kAttentionFlash,
  kAttentionCudaCore,
  kAttentionSdpa,
  kLaunch,
  kLaunchHost,
  kLaunchGraph,
};
inline constexpr int kMeasurementClassCount = 17;

/// What a record's shape fields mean, and which of them must be set.
enum class RecordShape : std::uint8_t {
  kElements,   // streaming kernels: elements
  kRowsCols,   // row-wise kernels: m = rows, n = columns
  kGemm,       // m, n, k > 0 and batch
  kAttention,  // m = sequence > 0, n = head dim > 0, k = keys, batch = batch x heads
  kLaunches,   // no data: launches >= 1 empty kernels (or calls), timed together
};

/// The calibration parameter a class's records determine (calibrate/calibrate.hpp).
enum class MeasurementFit : std::uint8_t {
  kNothing,          // predicted and validated, fits nothing
  kLaunchOverhead,   // launch_overhead; one record suffices (each averages thousands of launches)
  kHbm,              // hbm_efficiency and hbm_latency
  kClassEfficiency,  // class_efficiency.<kernel class>: a multiplier on hbm_efficiency
  kGemm,             // gemm_efficiency.<peak> and gemm_tile
  kAttention,        // attention_efficiency
};

struct MeasurementClassInfo {
  MeasurementClass cls;
  std::string_view name;  // as written in measurement files and on command lines
  RecordShape shape;
  MeasurementFit fits;
  /// Its FLOPs are its work: a rate describing it is FLOP/s (GEMM, attention), not bytes/s.
  bool compute_bound;
  /// The only backend whose files may hold it ("" = any). attention_flash is
  /// the host's tiled kernel, whose FLOPs run on the SIMD units the host
  /// profile's peak describes; on a GPU the same algorithm on CUDA cores is
  /// attention_cuda_core, and a GPU file naming attention_flash (written
  /// before the two were told apart) would fit the tensor-core efficiency
  /// from CUDA-core time, so the loader refuses it.
  std::string_view only_backend;
};

/// The word table, in the order of the enum (and of "known: ..." lists).
inline constexpr std::array<MeasurementClassInfo, kMeasurementClassCount> kMeasurementClasses = {{
    {MeasurementClass::kHbmCopy, "hbm_copy", RecordShape::kElements, MeasurementFit::kHbm, false, ""},
    {MeasurementClass::kHbmTriad, "hbm_triad", RecordShape::kElements, MeasurementFit::kHbm, false, ""},
    // Arrays that fit in L2 (at most half of it), timed warm: L2 bandwidth, which no profile states.
    {MeasurementClass::kL2Copy, "l2_copy", RecordShape::kElements, MeasurementFit::kNothing, false, ""},
    {MeasurementClass::kL2Triad, "l2_triad", RecordShape::kElements, MeasurementFit::kNothing, false, ""},
    {MeasurementClass::kSram, "sram", RecordShape::kElements, MeasurementFit::kNothing, false, ""},
    {MeasurementClass::kGemm, "gemm", RecordShape::kGemm, MeasurementFit::kGemm, true, ""},
    {MeasurementClass::kElementwiseUnfused, "elementwise_unfused", RecordShape::kElements,
     MeasurementFit::kClassEfficiency, false, ""},
    {MeasurementClass::kElementwiseFused, "elementwise_fused", RecordShape::kElements,
     MeasurementFit::kClassEfficiency, false, ""},
    {MeasurementClass::kSoftmax, "softmax", RecordShape::kRowsCols, MeasurementFit::kClassEfficiency, false, ""},
    {MeasurementClass::kLayernorm, "layernorm", RecordShape::kRowsCols, MeasurementFit::kClassEfficiency, false, ""},
    {MeasurementClass::kAttentionNaive, "attention_naive", RecordShape::kAttention, MeasurementFit::kNothing, true,
     ""},
    // The host backend's tiled attention (SIMD fp32: the host profile's peak).
    {MeasurementClass::kAttentionFlash, "attention_flash", RecordShape::kAttention, MeasurementFit::kAttention, true,
     "host"},
    // A tiled online-softmax kernel on a GPU's CUDA cores (no tensor cores): priced
    // against the fp32 peak and reported, never fitted against a tensor-core peak.
    {MeasurementClass::kAttentionCudaCore, "attention_cuda_core", RecordShape::kAttention, MeasurementFit::kNothing,
     true, ""},
    // Fused tensor-core attention as PyTorch's scaled_dot_product_attention runs it
    // (FlashAttention-2 or cuDNN backend): what calibrates attention_efficiency on a GPU.
    {MeasurementClass::kAttentionSdpa, "attention_sdpa", RecordShape::kAttention, MeasurementFit::kAttention, true,
     ""},
    // Back-to-back kernels as the device runs them (CUDA: queued behind a gate, the
    // GPU-side gap; host: an empty call): the per-launch cost the engine adds.
    {MeasurementClass::kLaunch, "launch", RecordShape::kLaunches, MeasurementFit::kLaunchOverhead, false, ""},
    // The host thread's launch path included: the rate one thread can issue tiny kernels.
    {MeasurementClass::kLaunchHost, "launch_host", RecordShape::kLaunches, MeasurementFit::kNothing, false, ""},
    {MeasurementClass::kLaunchGraph, "launch_graph", RecordShape::kLaunches, MeasurementFit::kNothing, false, ""},
}};

constexpr bool measurement_table_in_enum_order() {
  for (int i = 0; i < kMeasurementClassCount; ++i)
    if (static_cast<int>(kMeasurementClasses[static_cast<std::size_t>(i)].cls) != i) return false;
  return true;
}
static_assert(measurement_table_in_enum_order(), "kMeasurementClasses rows must follow the enum's order");

constexpr const MeasurementClassInfo& measurement_class_info(MeasurementClass c) {
  return kMeasurementClasses[static_cast<std::size_t>(c)];
}

constexpr std::string_view name(MeasurementClass c) { return measurement_class_info(c).name; }

constexpr std::optional<MeasurementClass> parse_measurement_class(std::string_view s) {
  for (const MeasurementClassInfo& i : kMeasurementClasses)
    if (i.name == s) return i.cls;
  return std::nullopt;
}

/// Whether calibration fits a parameter from the class's records.
constexpr bool fits_a_parameter(MeasurementClass c) {
  return measurement_class_info(c).fits != MeasurementFit::kNothing;
}

/// "hbm_copy, hbm_triad, ..., launch_graph": the known classes, for error messages.
inline std::string measurement_class_list() {
  std::string s;
  for (const MeasurementClassInfo& i : kMeasurementClasses) {
    if (!s.empty()) s += ", ";
    s += i.name;
  }
  return s;
}

/// Orders classes by name: the order of per-class reports, residuals and the
/// held-out split (which draws from one seeded generator, class by class).
struct MeasurementClassNameLess {
  constexpr bool operator()(MeasurementClass a, MeasurementClass b) const { return name(a) < name(b); }
};

}  // namespace ridgeline::spec
