#include "harness/device_info.hpp"

#include "harness/check.hpp"

#include <cstdio>

namespace ridgeline::cuda_bench {

namespace {

int attribute(cudaDeviceAttr attr, int ordinal) {
  int value = 0;
  RIDGELINE_CUDA_CHECK(cudaDeviceGetAttribute(&value, attr, ordinal));
  return value;
}

}  // namespace

DeviceInfo query_device(int ordinal) {
  cudaDeviceProp prop{};
  RIDGELINE_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
  DeviceInfo info;
  info.ordinal = ordinal;
  info.name = prop.name;
  info.sm_count = attribute(cudaDevAttrMultiProcessorCount, ordinal);
  info.cc_major = attribute(cudaDevAttrComputeCapabilityMajor, ordinal);
  info.cc_minor = attribute(cudaDevAttrComputeCapabilityMinor, ordinal);
  info.clock_hz = 1e3 * attribute(cudaDevAttrClockRate, ordinal);  // attribute is in kHz
  info.memory_clock_hz = 1e3 * attribute(cudaDevAttrMemoryClockRate, ordinal);
  info.memory_bus_bits = attribute(cudaDevAttrGlobalMemoryBusWidth, ordinal);
  info.memory_bytes = static_cast<double>(prop.totalGlobalMem);
  info.l2_bytes = static_cast<std::size_t>(attribute(cudaDevAttrL2CacheSize, ordinal));
  info.max_smem_per_block_optin_bytes =
      static_cast<std::size_t>(attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, ordinal));
  info.smem_per_sm_bytes =
      static_cast<std::size_t>(attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor, ordinal));
  info.max_threads_per_sm = attribute(cudaDevAttrMaxThreadsPerMultiProcessor, ordinal);
  RIDGELINE_CUDA_CHECK(cudaDriverGetVersion(&info.driver_version));
  RIDGELINE_CUDA_CHECK(cudaRuntimeGetVersion(&info.runtime_version));
  return info;
}

std::string describe(const DeviceInfo& info) {
  char line[512];
  std::snprintf(line, sizeof line,
                "%s (sm_%d%d): %d SMs, SM clock %.0f MHz, memory clock %.0f MHz x %d bit, "
                "%.1f GiB, L2 %.1f MiB, driver %d, runtime %d",
                info.name.c_str(), info.cc_major, info.cc_minor, info.sm_count, info.clock_hz / 1e6,
                info.memory_clock_hz / 1e6, info.memory_bus_bits, info.memory_bytes / (1024.0 * 1024.0 * 1024.0),
                static_cast<double>(info.l2_bytes) / (1024.0 * 1024.0), info.driver_version, info.runtime_version);
  return line;
}

}  // namespace ridgeline::cuda_bench
