#include "harness/cpuinfo.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cstdint>
#include <fstream>
#include <unistd.h>

#include "harness/timer.hpp"

namespace ridgeline::host_bench {

namespace {

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

}  // namespace

HostInfo host_info() {
  HostInfo h;
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 1));
    if (key == "model name" && h.cpu_name.empty()) h.cpu_name = value;
    if (key == "cpu MHz" && h.clock_hz == 0) {
      try {
        h.clock_hz = std::stod(value) * 1e6;
      } catch (...) {
      }
    }
  }
  if (h.cpu_name.empty()) h.cpu_name = "unknown CPU";
  h.cores_online = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) h.memory_bytes = static_cast<double>(pages) * static_cast<double>(page);
#ifdef _SC_LEVEL3_CACHE_SIZE
  long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (llc > 0) h.llc_bytes = static_cast<double>(llc);
#endif
  h.fp32_lanes = Eigen::internal::packet_traits<float>::size;
#ifdef EIGEN_VECTORIZE_FMA
  h.fma = true;
#endif
  return h;
}

std::string simd_name() {
  std::string s = Eigen::SimdInstructionSetsInUse();
  return s.empty() ? std::string("no SIMD") : s;
}

double measure_clock_hz(int reps) {
  double best = 0;
  for (int rep = 0; rep < reps; ++rep) {
    std::uint64_t x = 1;
    constexpr std::uint64_t kIters = 20'000'000;
    const double t0 = thread_seconds();
    for (std::uint64_t i = 0; i < kIters; ++i) {
      // Eight dependent adds; the empty asm stops the compiler merging them.
      x += i; asm volatile("" : "+r"(x));
      x += i; asm volatile("" : "+r"(x));
      x += i; asm volatile("" : "+r"(x));
      x += i; asm volatile("" : "+r"(x));
      x += i; asm volatile("" : "+r"(x));
      x += i; asm volatile("" : "+r"(x));
      x += i; asm volatile("" : "+r"(x));
      x += i; asm volatile("" : "+r"(x));
    }
    const double dt = thread_seconds() - t0;
    keep(&x);
    if (dt > 0) best = std::max(best, 8.0 * static_cast<double>(kIters) / dt);
  }
  return best;
}

}  // namespace ridgeline::host_bench
