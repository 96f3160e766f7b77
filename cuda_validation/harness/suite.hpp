// The suite's shared state and its output. A benchmark file (benches/*.cu)
// runs its cases through Suite::run_case, times them with Suite::time and
// hands each result to Suite::add as a Record: one record of the measurement
// file "ridgeline.measurements/1" (docs/measurements.md). Units: seconds,
// bytes, FLOP.
#pragma once

#include "harness/device_info.hpp"
#include "harness/timer.hpp"
#include "ridgeline/spec/measurement_class.hpp"

#include <cublasLt.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace ridgeline::cuda_bench {

struct Record {
  std::string name;
  spec::MeasurementClass cls = spec::MeasurementClass::kHbmCopy;
  std::string dtype;  // fp32, tf32, fp16, bf16, fp8_e4m3
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  std::int64_t elements = 0;
  double flops = 0.0;  // FLOP per run
  double bytes = 0.0;  // minimum HBM bytes per run (shared-memory bytes for class sram)
  std::int64_t launches = 1;
  double median_s = 0.0;
  double min_s = 0.0;
  double p90_s = 0.0;
  int samples = 0;
  int repetitions = 1;  // runs per timed sample (short runs are batched)
  bool causal = false;  // attention records
  std::string algorithm;
  std::string check = "none";  // pass, fail, none
  DeviceState state;           // NVML clocks, power, throttle reasons during the samples
};

/// Thrown when a failed call left the device unusable; the suite stops.
class DeviceLost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Thrown before the next case once a stop was requested (SIGTERM from a time
/// limit, SIGINT): the suite stops and the file keeps what was measured.
class Stopped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Async-signal-safe: sets a flag that Suite::run_case reads.
void request_stop() noexcept;
bool stop_requested() noexcept;

/// Outcome of a correctness check on a sample of outputs.
struct CheckResult {
  int compared = 0;
  int failed = 0;
  double worst_ratio = 0.0;    // largest |got - want| / tolerance
  double worst_error = 0.0;    // |got - want| at that element
  double worst_allowed = 0.0;  // tolerance at that element
  void compare(double got, double want, double allowed);
  /// Folds another check in (a record that must pass two checks).
  void merge(const CheckResult& other);
  const char* verdict() const { return compared == 0 ? "none" : failed == 0 ? "pass" : "fail"; }
};

class Suite {
 public:
  Suite(const DeviceInfo& device, bool quick);
  ~Suite();
  Suite(const Suite&) = delete;
  Suite& operator=(const Suite&) = delete;

  const DeviceInfo& device() const { return device_; }
  bool quick() const { return quick_; }
  cudaStream_t stream() const { return stream_; }
  /// Measurement classes to keep (empty: all); `add` drops the others.
  void set_class_filter(std::vector<spec::MeasurementClass> classes) { class_filter_ = std::move(classes); }
  bool wants(spec::MeasurementClass cls) const;

  /// Fewest timed samples per case: 10 in --quick, 20 otherwise (more until
  /// the minimum time and the noise criterion are met: timer.hpp).
  int samples() const { return quick_ ? 10 : 20; }
  NvmlMonitor& monitor() { return *monitor_; }

  /// Shared cuBLASLt handle and its 32 MiB workspace (created on first use).
  cublasLtHandle_t lt_handle();
  void* lt_workspace();
  static constexpr std::size_t kLtWorkspaceBytes = 32u << 20;

  /// Times `run` (one run of the case, enqueued on the given stream).
  Timing time(const std::function<void(cudaStream_t)>& run, TimingOptions options);
  Timing time(const std::function<void(cudaStream_t)>& run) { return time(run, default_options()); }
  TimingOptions default_options() const;

  /// Runs one case: a Skip is reported and the suite goes on; a CudaError
  /// marks the case failed, and throws DeviceLost if the device is unusable.
  /// Throws Stopped, before running it, once a stop was requested.
  void run_case(const std::string& name, const std::function<void()>& body);

  /// Called after each stored record (main rewrites the file, so a run cut
  /// short keeps every record measured).
  void set_on_record(std::function<void(const std::vector<Record>&)> f) { on_record_ = std::move(f); }

  /// Stores a finished record (timing filled in) and prints a progress line.
  void add(Record record, const Timing& timing, const CheckResult& check);
  void add(Record record, const Timing& timing);

  void skip(const std::string& name, const std::string& reason);
  /// Prints a progress line "[  12.3 s] text" to stderr.
  void progress(const std::string& text) const;

  const std::vector<Record>& records() const { return records_; }
  int skipped() const { return skipped_; }
  int failed() const { return failed_; }
  int check_failures() const { return check_failures_; }

 private:
  DeviceInfo device_;
  bool quick_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<NvmlMonitor> monitor_;
  std::unique_ptr<L2Flusher> flusher_;
  std::unique_ptr<StreamGate> gate_;
  std::unique_ptr<EventTimer> timer_;
  cublasLtHandle_t lt_ = nullptr;
  void* lt_workspace_ = nullptr;
  std::vector<Record> records_;
  std::vector<spec::MeasurementClass> class_filter_;
  std::function<void(const std::vector<Record>&)> on_record_;
  int skipped_ = 0;
  int failed_ = 0;
  int check_failures_ = 0;
  double start_s_ = 0.0;
};

/// Scales for progress lines: "1.52 ms", "723.4 TFLOP/s", "3.21 TB/s", "64 MiB".
std::string format_seconds(double s);
std::string format_bytes(double bytes);

}  // namespace ridgeline::cuda_bench
