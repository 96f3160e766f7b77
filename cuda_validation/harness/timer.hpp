// Timing hygiene, after nvbench:
//   - warm-up runs first (module load, cuBLASLt kernel selection, clocks up);
//   - before each cold sample, L2 is flushed by writing a buffer of twice the
//     L2 size, so the sample reads its inputs from HBM;
//   - the stream is held by a spinning one-thread kernel while the sample's
//     work is enqueued and released afterwards, so CUDA events time the GPU
//     work and not the host's launch latency (off for launch benchmarks);
//   - median and min over many samples are reported, in seconds.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace ridgeline::cuda_bench {

struct TimingOptions {
  int warmup = 2;
  int samples = 20;
  bool flush_l2 = true;     // cold samples
  bool hold_stream = true;  // enqueue behind the stream gate
};

struct Timing {
  double median_s = 0.0;
  double min_s = 0.0;
  int samples = 0;
};

/// Median of `values` (mean of the two middle ones for an even count); 0 when empty.
double median(std::vector<double> values);

/// Writes a buffer of 2 x L2 size to evict whatever the previous run left in L2.
class L2Flusher {
 public:
  explicit L2Flusher(std::size_t l2_bytes);
  ~L2Flusher();
  L2Flusher(const L2Flusher&) = delete;
  L2Flusher& operator=(const L2Flusher&) = delete;
  void flush(cudaStream_t stream);

 private:
  void* buffer_ = nullptr;
  std::size_t bytes_ = 0;
  int round_ = 0;
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
  EventTimer(L2Flusher& flusher, StreamGate& gate, cudaStream_t stream);
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  Timing measure(const std::function<void(cudaStream_t)>& run, const TimingOptions& options);

 private:
  L2Flusher& flusher_;
  StreamGate& gate_;
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

}  // namespace ridgeline::cuda_bench
