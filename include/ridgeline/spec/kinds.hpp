// Kinds shared by every stage: element types and kernel classes, with their
// names as they appear in YAML, flags and JSON.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ridgeline::spec {

/// Element type of a tensor or the math mode of a kernel.
/// kFp4: NVFP4 (E2M1 elements, one E4M3 scale per 16 elements, Blackwell's
/// block-scaled tensor-core format; NVIDIA Blackwell datasheet / PTX ISA
/// tcgen05.mma kind::mxf4nvf4).
enum class Dtype : std::uint8_t { kFp32, kTf32, kFp16, kBf16, kFp8E4M3, kFp8E5M2, kInt8, kNf4, kFp4 };
inline constexpr int kDtypeCount = 9;

/// Bytes per element (NF4 packs two per byte; its block constants are counted by the pass that uses it).
constexpr double bytes_per_element(Dtype t) {
  switch (t) {
    case Dtype::kFp32: case Dtype::kTf32: return 4.0;
    case Dtype::kFp16: case Dtype::kBf16: return 2.0;
    case Dtype::kFp8E4M3: case Dtype::kFp8E5M2: case Dtype::kInt8: return 1.0;
    case Dtype::kNf4: return 0.5;
    case Dtype::kFp4: return 0.5 + 1.0 / 16.0;  // 4-bit element + one 1-byte scale per 16
  }
  return 4.0;
}

/// Which dense peak of a GPU a math mode runs at.
enum class Peak : std::uint8_t { kFp32, kTf32, kFp16, kBf16, kFp8, kInt8, kFp4 };
inline constexpr int kPeakCount = 7;

constexpr Peak peak_of(Dtype t) {
  switch (t) {
    case Dtype::kFp32: return Peak::kFp32;
    case Dtype::kTf32: return Peak::kTf32;
    case Dtype::kFp16: return Peak::kFp16;
    case Dtype::kBf16: return Peak::kBf16;
    case Dtype::kFp8E4M3: case Dtype::kFp8E5M2: return Peak::kFp8;
    case Dtype::kInt8: return Peak::kInt8;
    case Dtype::kNf4: return Peak::kBf16;  // dequantized to 16-bit before the GEMM
    case Dtype::kFp4: return Peak::kFp4;
  }
  return Peak::kFp32;
}

/// What a kernel does; the cost model has one efficiency per class.
enum class KernelClass : std::uint8_t {
  kGemm, kAttention, kElementwise, kReduction, kNorm, kSoftmax, kEmbedding, kLoss, kOptimizer, kCollective, kP2p, kCast
};
inline constexpr int kKernelClassCount = 12;

enum class Phase : std::uint8_t { kForward, kBackward, kRecompute, kOptimizer, kCommunication };
inline constexpr int kPhaseCount = 5;

std::string_view name(Dtype t);
std::string_view name(Peak p);
std::string_view name(KernelClass c);
std::string_view name(Phase p);

std::optional<Dtype> parse_dtype(std::string_view s);
std::optional<Peak> parse_peak(std::string_view s);
std::optional<KernelClass> parse_kernel_class(std::string_view s);

inline constexpr std::array<std::string_view, kPeakCount> kPeakNames = {"fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp4"};
inline constexpr std::array<std::string_view, kKernelClassCount> kKernelClassNames = {
    "gemm", "attention", "elementwise", "reduction", "norm", "softmax", "embedding", "loss", "optimizer", "collective",
    "p2p", "cast"};

}  // namespace ridgeline::spec
