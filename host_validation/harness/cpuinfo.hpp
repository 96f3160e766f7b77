// What this process knows about the CPU it runs on: /proc/cpuinfo, sysconf,
// the SIMD width Eigen was compiled for, and the clock as measured. Units:
// hertz, bytes.
#pragma once

#include <string>

namespace ridgeline::host_bench {

struct HostInfo {
  std::string cpu_name;      // /proc/cpuinfo "model name"
  int cores_online = 1;
  double clock_hz = 0;       // /proc/cpuinfo "cpu MHz" (0 when unreadable)
  double memory_bytes = 0;   // physical RAM
  double llc_bytes = 0;      // last-level cache as the OS reports it (0 when unknown)
  int fp32_lanes = 1;        // SIMD width Eigen was compiled for, in fp32 elements
  bool fma = false;          // compiled with FMA
};
HostInfo host_info();

/// Eigen's SIMD instruction sets in use ("SSE, SSE2"), or "no SIMD".
std::string simd_name();

/// The core's clock while it runs: a chain of dependent integer adds retires
/// one add per cycle on every x86 and Arm core, so adds / second = hertz
/// (the fastest of `reps` runs; /proc/cpuinfo shows a VM's nominal clock).
double measure_clock_hz(int reps);

}  // namespace ridgeline::host_bench
