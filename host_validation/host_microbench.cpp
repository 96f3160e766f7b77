#include "host_microbench.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <ctime>
#include <fmt/format.h>

#include "benches/benches.hpp"
#include "harness/suite.hpp"
#include "harness/timer.hpp"
#include "ridgeline/support/utc_time.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::host_bench {

spec::MeasurementSet run_host_microbench(const HostMicrobenchOptions& options) {
  Eigen::setNbThreads(1);
  const HostInfo info = host_info();
  spec::MeasurementSet set;
  auto& h = set.header;
  h.schema = spec::kMeasurementSchema;
  h.backend = "host";
  h.device = info.cpu_name + " (host, 1 core)";
  h.sm_count = 1;
  const double measured_clock = measure_clock_hz(options.quick ? 3 : 5);
  h.clock_hz = measured_clock > 0.2e9 && measured_clock < 10e9 ? measured_clock : info.clock_hz;
  h.memory_bytes = info.memory_bytes;
  h.runtime_version = fmt::format("Eigen {}.{}.{} ({})", EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION,
                                  EIGEN_MINOR_VERSION, simd_name());
  h.date = support::utc_now_iso8601();
  h.tool_version = RIDGELINE_VERSION;
  h.quick = options.quick;
  Suite b(options, set);
  run_launch(b);
  run_stream(b);
  run_gemm(b);
  run_elementwise(b);
  run_rowwise(b);
  run_attention(b);
  return set;
}

spec::HardwareSpec host_profile(const spec::MeasurementSet& set) {
  using spec::MeasurementClass;
  const HostInfo info = host_info();
  spec::HardwareSpec hw;
  hw.id = "host";
  hw.name = set.header.device.empty() ? info.cpu_name + " (host, 1 core)" : set.header.device;
  hw.vendor = "host";
  hw.generation = spec::Generation::kHost;
  hw.architecture = fmt::format("host CPU, {} fp32 SIMD lanes{} ({})", info.fp32_lanes, info.fma ? ", FMA" : "",
                                simd_name());
  const double cores = std::max(1, set.header.sm_count);
  double best_copy = 0, best_gemm = 0, launch = 0;
  std::vector<double> per_call;
  for (const auto& r : set.records) {
    if (r.check == "fail") continue;
    if (r.cls == MeasurementClass::kHbmCopy && r.bytes > 0) best_copy = std::max(best_copy, r.bytes / r.median_s);
    if (r.cls == MeasurementClass::kGemm && r.dtype == "fp32") best_gemm = std::max(best_gemm, r.flops / r.median_s);
    if (r.cls == MeasurementClass::kLaunch && r.launches > 0) per_call.push_back(r.median_s / r.launches);
  }
  if (!per_call.empty()) launch = median_of(per_call);
  const double clock = set.header.clock_hz > 0 ? set.header.clock_hz : info.clock_hz;
  // Two multiply-adds per lane per cycle: two FMA pipes (x86 since Haswell and
  // Zen 1, Arm Neoverse), or Zen's two FMUL and two FADD pipes without FMA.
  // Intel cores without FMA do half: the fitted GEMM fraction then halves.
  const double isa_peak = cores * clock * info.fp32_lanes * 4.0;
  const bool measured_peak = best_gemm > isa_peak;
  const bool no_peak = std::max(isa_peak, best_gemm) <= 0;
  const double peak = no_peak ? 1e9 : std::max(isa_peak, best_gemm);

  hw.memory_bytes = set.header.memory_bytes > 0 ? set.header.memory_bytes : info.memory_bytes;
  hw.hbm_bytes_per_s = best_copy > 0 ? best_copy : 10e9;
  hw.l2_bytes = info.llc_bytes;
  hw.sm_count = static_cast<int>(cores);
  hw.clock_hz = clock;
  hw.peak_flop_per_s[static_cast<int>(spec::Peak::kFp32)] = peak;
  hw.peak_flop_per_s[static_cast<int>(spec::Peak::kBf16)] = peak;
  hw.launch_overhead_s = launch;
  hw.interconnect.gpus_per_node = 1;

  const std::string from = set.source_file.empty() ? std::string("this run") : set.source_file;
  hw.sources["memory.capacity"] = "physical RAM (sysconf _SC_PHYS_PAGES x _SC_PAGESIZE)";
  hw.sources["memory.hbm_bandwidth"] =
      best_copy > 0 ? fmt::format("measured: best hbm_copy record of {} (one core, STREAM counting 2 x size)", from)
                    : "assumption: no hbm_copy record; 10 GB/s placeholder";
  if (hw.l2_bytes > 0) hw.sources["memory.l2_cache"] = "last-level cache as the OS reports it (sysconf)";
  hw.sources["compute.sm_count"] = "cores used by the host microbenchmarks (single-threaded: the profile is per core)";
  if (clock > 0)
    hw.sources["compute.boost_clock"] = fmt::format(
        "measured: a chain of dependent integer adds (one per cycle), fastest of several runs; /proc/cpuinfo "
        "'cpu MHz' says {:.3g} GHz",
        info.clock_hz / 1e9);
  hw.sources["compute.peak.fp32"] =
      no_peak ? "assumption: 1 GFLOP/s placeholder (no fp32 GEMM measured and no clock readable)"
      : measured_peak
          ? fmt::format("measured: best fp32 GEMM of {} ({}), above the estimate of {} ({} core x {:.3g} GHz x "
                        "{} fp32 lanes x 4 FLOP per lane per cycle)",
                        from, units::format_flop_rate(best_gemm), units::format_flop_rate(isa_peak),
                        static_cast<int>(cores), clock / 1e9, info.fp32_lanes)
          : fmt::format("derived: {} core x {:.3g} GHz x {} fp32 lanes ({}) x 4 FLOP per lane per cycle (two "
                        "multiply-adds per cycle: two FMA pipes, or AMD Zen's two FMUL and two FADD pipes; Intel "
                        "cores without FMA do half)",
                        static_cast<int>(cores), clock / 1e9, info.fp32_lanes, simd_name());
  hw.sources["compute.peak.bf16"] = "set equal to fp32: the host has no bf16 units; the loader requires a bf16 peak";
  hw.sources["compute.launch_overhead"] =
      per_call.empty() ? "none measured" : fmt::format("measured: median empty out-of-line call of {}", from);
  return hw;
}

}  // namespace ridgeline::host_bench
