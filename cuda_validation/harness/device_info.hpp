// What the measurement file's header says about the GPU and its software:
// name, SMs, peak clocks (Hz), memory (bytes), L2 size (bytes), compute
// capability, driver and runtime versions (CUDA's integer form, e.g. 13000).
#pragma once

#include <cstddef>
#include <string>

namespace ridgeline::cuda_bench {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int sm_count = 0;
  int cc_major = 0;
  int cc_minor = 0;
  double clock_hz = 0.0;         // peak SM clock (cudaDevAttrClockRate)
  double memory_clock_hz = 0.0;  // peak memory clock (cudaDevAttrMemoryClockRate)
  int memory_bus_bits = 0;
  double memory_bytes = 0.0;
  std::size_t l2_bytes = 0;
  std::size_t max_smem_per_block_optin_bytes = 0;
  std::size_t smem_per_sm_bytes = 0;
  int max_threads_per_sm = 0;
  int driver_version = 0;
  int runtime_version = 0;

  /// Compute capability as one number, e.g. 90 for sm_90.
  int cc() const { return cc_major * 10 + cc_minor; }
};

/// Queries device `ordinal` (which must exist).
DeviceInfo query_device(int ordinal);

/// One line for stderr: name, SMs, clocks, memory, L2, CC, versions.
std::string describe(const DeviceInfo& info);

}  // namespace ridgeline::cuda_bench
