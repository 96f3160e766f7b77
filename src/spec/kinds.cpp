#include "ridgeline/spec/kinds.hpp"

namespace ridgeline::spec {

namespace {
constexpr std::array<std::string_view, kDtypeCount> kDtypeNames = {"fp32", "tf32", "fp16", "bf16",
                                                                   "fp8_e4m3", "fp8_e5m2", "int8", "nf4", "nvfp4"};
constexpr std::array<std::string_view, kPhaseCount> kPhaseNames = {"forward", "backward", "recompute", "optimizer",
                                                                   "communication"};
}  // namespace

std::string_view name(Dtype t) { return kDtypeNames[static_cast<int>(t)]; }
std::string_view name(Peak p) { return kPeakNames[static_cast<int>(p)]; }
std::string_view name(KernelClass c) { return kKernelClassNames[static_cast<int>(c)]; }
std::string_view name(Phase p) { return kPhaseNames[static_cast<int>(p)]; }

std::optional<Dtype> parse_dtype(std::string_view s) {
  for (int i = 0; i < kDtypeCount; ++i)
    if (kDtypeNames[i] == s) return static_cast<Dtype>(i);
  if (s == "fp8") return Dtype::kFp8E4M3;
  return std::nullopt;
}

std::optional<Peak> parse_peak(std::string_view s) {
  for (int i = 0; i < kPeakCount; ++i)
    if (kPeakNames[i] == s) return static_cast<Peak>(i);
  return std::nullopt;
}

std::optional<KernelClass> parse_kernel_class(std::string_view s) {
  for (int i = 0; i < kKernelClassCount; ++i)
    if (kKernelClassNames[i] == s) return static_cast<KernelClass>(i);
  return std::nullopt;
}

}  // namespace ridgeline::spec
