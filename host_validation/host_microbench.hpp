// Host microbenchmarks: the measurement classes of cuda_validation/, run on
// this CPU, so calibration and validation work on real measurements on any
// machine. Everything runs on ONE core (Eigen::setNbThreads(1), plain loops),
// and the host profile describes that one core: sm_count = 1, peak = one
// core's, bandwidth = what one core streams from DRAM.
//
// Each case: warm-up runs, then `samples` timed runs, each preceded by a
// cache flush (reading a buffer larger than the last-level cache, so every
// sample starts from DRAM) and timed on the thread's CPU clock (time the OS
// gives other processes on a shared machine is not counted); median and min
// are recorded, with a correctness check against a reference ("pass"/"fail").
// Units: seconds, bytes, FLOP (FLOP and bytes per run, as in
// docs/measurements.md).
//
// The library's entry point (this header) is what `ridgeline microbench
// --host` calls; harness/ holds the timer, the CPU reader and the suite,
// benches/ one file per benchmark.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "harness/cpuinfo.hpp"
#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/measurement_class.hpp"
#include "ridgeline/spec/measurements.hpp"

namespace ridgeline::host_bench {

struct HostMicrobenchOptions {
  /// Fewer sizes and 10 samples: about 10 s of CPU time on one core (the test suite runs it).
  bool quick = false;
  /// Timed samples per case; 0 = 10 (quick) or 20.
  int samples = 0;
  /// Measurement classes to run (empty: all).
  std::vector<spec::MeasurementClass> classes;
  /// Flush buffer size in bytes; 0 = twice the last-level cache, clamped to 32..256 MiB.
  double flush_bytes = 0;
  /// Called with one line per finished record (the CLI prints it).
  std::function<void(const std::string&)> progress;
};

/// Runs the host suite: gemm (Eigen, fp32 and fp64), hbm_copy and hbm_triad
/// (STREAM counting: 2x and 3x the array size), elementwise_unfused and
/// elementwise_fused (bias + GELU + dropout as three loops or one), softmax
/// and layernorm over row lengths, attention_naive (Eigen QK^T, softmax,
/// Eigen PV) and attention_flash (tiled online softmax), and launch (an
/// empty out-of-line call, the host's analogue of an empty kernel).
spec::MeasurementSet run_host_microbench(const HostMicrobenchOptions& options);

/// A host "GPU" profile (vendor and generation "host") for one core, from measurements made
/// by run_host_microbench:
///   peak fp32 = max(clock x fp32 lanes x 4 FLOP/lane/cycle (two multiply-adds
///               per lane per cycle), best measured fp32 GEMM rate), the clock
///               measured by a chain of dependent integer adds;
///   bf16 = fp32 (the loader requires a bf16 peak; the host has no bf16 units);
///   hbm_bandwidth = best measured hbm_copy bandwidth (STREAM counting);
///   launch_overhead = measured empty call; sm_count = 1; memory = RAM.
/// Every figure gets a `sources` entry saying how it was obtained. Written
/// with spec::to_yaml (spec/hardware_yaml.hpp).
spec::HardwareSpec host_profile(const spec::MeasurementSet& set);

}  // namespace ridgeline::host_bench
