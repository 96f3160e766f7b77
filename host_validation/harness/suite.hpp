// The suite's shared state and its output. A benchmark file (benches/*.cpp)
// builds its cases (what one run does, how to check what it left, the record
// it produces) and hands them to Suite::run, which times them and adds one
// record of the measurement file "ridgeline.measurements/1"
// (docs/measurements.md) per case. Units: seconds, bytes, FLOP.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "host_microbench.hpp"
#include "ridgeline/spec/measurements.hpp"

namespace ridgeline::host_bench {

/// Outcome of a correctness check: every compared value within its tolerance.
struct Check {
  int compared = 0;
  int failed = 0;
  void compare(double got, double want, double allowed) {
    ++compared;
    if (!(std::fabs(got - want) <= allowed)) ++failed;
  }
  std::string verdict() const { return compared == 0 ? "none" : failed == 0 ? "pass" : "fail"; }
};

/// One benchmark case: what it measures, how to run it once, and how to check
/// what the last run left.
struct Case {
  spec::MeasurementRecord record;  // everything but the timing and the check verdict
  std::function<void()> run;
  std::function<void(Check&)> check;  // may be empty
  bool flush = true;                  // flush the cache before each sample
};

class Suite {
 public:
  Suite(const HostMicrobenchOptions& o, spec::MeasurementSet& set);

  bool wants(spec::MeasurementClass cls) const;
  bool quick() const { return opt_.quick; }

  /// Reads one word of every cache line of a buffer larger than the last-level
  /// cache: what the next sample touches comes from DRAM, and dirty lines the
  /// previous sample left are written back now rather than during it.
  void flush();

  /// Times every case in rounds: round r takes sample r of each case in turn,
  /// so a disturbance (another process, a clock change) costs every case a
  /// sample or two, which the median discards, instead of swallowing all the
  /// samples of one case. A case's check runs right after its last sample,
  /// on what that run left. Empties `cases`.
  void run(std::vector<Case>& cases);

 private:
  struct Timing {
    double median_s = 0;
    double min_s = 0;
    int samples = 0;
  };
  /// Stores a finished record and reports a progress line.
  void add(spec::MeasurementRecord r, const Timing& t, const Check& check);

  const HostMicrobenchOptions& opt_;
  spec::MeasurementSet& set_;
  int samples_ = 10;
  int warmup_ = 1;
  std::vector<std::uint64_t> flush_;
};

}  // namespace ridgeline::host_bench
