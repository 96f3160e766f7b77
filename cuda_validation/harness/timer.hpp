// Timing hygiene, after nvbench:
//   - warm-up runs first (module load, cuBLASLt kernel selection, clocks up);
//   - before each cold sample, L2 is flushed by reading a buffer of twice the
//     L2 size (clean lines: no write-back of the flush's own data during the
//     sample), and the host waits for the flush to finish;
//   - the stream is held by a spinning one-thread kernel while the sample's
//     work is enqueued and released afterwards, so CUDA events time the GPU
//     work and not the host's launch latency (off for launch benchmarks);
//   - a run shorter than kShortRunS is timed as a batch of back-to-back
//     repetitions per event pair (the first cold, the rest warm), and the
//     sample divided by the repetitions;
//   - samples are taken until at least min_samples are in, their total is at
//     least min_time_s and the relative spread (p90 - median) / median is at
//     most max_noise, or until max_samples or max_wall_s;
//   - min, median and p90 per run are reported, in seconds, with the device's
//     clocks, power and throttle reasons read during the samples (NVML).
#pragma once

#include "harness/nvml_monitor.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace ridgeline::cuda_bench {

/// Runs shorter than this are batched (an event pair's resolution is about
/// 0.5 us, and the gap between two queued kernels 1-2 us).
inline constexpr double kShortRunS = 50e-6;
/// A batch of short runs lasts at least this long...
inline constexpr double kBatchTargetS = 100e-6;
/// ...but holds at most this many repetitions: with up to 3 kernels per run,
/// 64 x 3 = 192 launches stay well inside the launch queue behind the gate.
inline constexpr int kMaxRepetitions = 64;

struct TimingOptions {
  int warmup = 2;
  int min_samples = 10;
  int max_samples = 500;
  double min_time_s = 0.02;  // total measured GPU time before stopping
  double max_noise = 0.03;   // (p90 - median) / median at which sampling may stop
  double max_wall_s = 2.0;   // wall-clock cap per case, warm-up included
  bool flush_l2 = true;      // cold samples
  bool hold_stream = true;   // enqueue behind the stream gate
  bool batch_short = true;   // batch runs shorter than kShortRunS
};

struct Timing {
  double median_s = 0.0;  // per run
  double min_s = 0.0;
  double p90_s = 0.0;
  int samples = 0;
  int repetitions = 1;  // runs per sample
  DeviceState state;    // clocks, power and throttle reasons during the samples
};

/// Median of `values` (mean of the two middle ones for an even count); 0 when empty.
double median(std::vector<double> values);
/// The q-quantile (0..1) by linear interpolation between order statistics; 0 when empty.
double quantile(std::vector<double> values, double q);

/// Evicts L2 by reading a buffer of 2 x L2 size (filled once), then waits for it.
class L2Flusher {
 public:
  explicit L2Flusher(std::size_t l2_bytes);
  ~L2Flusher();
  L2Flusher(const L2Flusher&) = delete;
  L2Flusher& operator=(const L2Flusher&) = delete;
  void flush(cudaStream_t stream);

 private:
  void* buffer_ = nullptr;
  unsigned* sink_ = nullptr;
  std::size_t bytes_ = 0;
};

/// Holds a stream until the host releases it (nvbench's "blocking kernel").
class StreamGate {
 public:
  StreamGate();
  ~StreamGate();
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;
  void hold(cudaStream_t stream);
  void release();
  /// True once any hold timed out (the host took over 10 s to release it).
  bool timed_out() const { return timed_out_; }

 private:
  volatile int* flag_ = nullptr;  // mapped pinned host memory
  volatile int* device_flag_ = nullptr;
  bool held_ = false;
  bool timed_out_ = false;
};

/// CUDA-event timer over `run`, which enqueues one run of the benchmark on the stream.
class EventTimer {
 public:
  EventTimer(L2Flusher& flusher, StreamGate& gate, NvmlMonitor& monitor, cudaStream_t stream);
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  Timing measure(const std::function<void(cudaStream_t)>& run, const TimingOptions& options);

 private:
  /// One sample of `reps` runs; seconds for all of them.
  double sample(const std::function<void(cudaStream_t)>& run, const TimingOptions& options, int reps);

  L2Flusher& flusher_;
  StreamGate& gate_;
  NvmlMonitor& monitor_;
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

}  // namespace ridgeline::cuda_bench
