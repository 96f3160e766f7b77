#include "harness/timer.hpp"

#include "harness/check.hpp"
#include "harness/kernels.cuh"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

namespace ridgeline::cuda_bench {

namespace {

constexpr std::uint64_t kGateTimeoutNs = 10'000'000'000ull;

double now_s() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

}  // namespace

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double pos = q * static_cast<double>(values.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(values.size() - 1, lo + 1);
  return values[lo] + (pos - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

L2Flusher::L2Flusher(std::size_t l2_bytes) : bytes_(2 * std::max<std::size_t>(l2_bytes, 1u << 20)) {
  bytes_ = (bytes_ + 15) / 16 * 16;
  RIDGELINE_CUDA_CHECK(cudaMalloc(&buffer_, bytes_));
  RIDGELINE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&sink_), sizeof(unsigned)));
  RIDGELINE_CUDA_CHECK(cudaMemset(buffer_, 1, bytes_));
  RIDGELINE_CUDA_CHECK(cudaDeviceSynchronize());
}

L2Flusher::~L2Flusher() {
  if (buffer_ != nullptr) (void)cudaFree(buffer_);
  if (sink_ != nullptr) (void)cudaFree(sink_);
}

void L2Flusher::flush(cudaStream_t stream) {
  // Reading leaves clean lines in L2: the next sample evicts them without
  // writing anything back. The dirty lines of the previous sample are written
  // back now, before its successor starts; the sync makes sure of that.
  launch_l2_flush_read(static_cast<const uint4*>(buffer_), bytes_ / 16, sink_, stream);
  RIDGELINE_CUDA_CHECK_LAUNCH();
  RIDGELINE_CUDA_CHECK(cudaStreamSynchronize(stream));
}

StreamGate::StreamGate() {
  int* host = nullptr;
  RIDGELINE_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host), sizeof(int), cudaHostAllocMapped));
  flag_ = host;
  *flag_ = 1;
  void* device = nullptr;
  RIDGELINE_CUDA_CHECK(cudaHostGetDevicePointer(&device, host, 0));
  device_flag_ = static_cast<volatile int*>(device);
}

StreamGate::~StreamGate() {
  if (held_) release();
  if (flag_ != nullptr) (void)cudaFreeHost(const_cast<int*>(flag_));
}

void StreamGate::hold(cudaStream_t stream) {
  *flag_ = 0;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  launch_block_stream(device_flag_, kGateTimeoutNs, stream);
  held_ = true;
}

void StreamGate::release() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (*flag_ == 2 && !timed_out_) {
    timed_out_ = true;
    std::fprintf(stderr,
                 "warning: stream gate timed out (the host enqueued for over 10 s); "
                 "affected samples include host launch time\n");
  }
  *flag_ = 1;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  held_ = false;
}

EventTimer::EventTimer(L2Flusher& flusher, StreamGate& gate, NvmlMonitor& monitor, cudaStream_t stream)
    : flusher_(flusher), gate_(gate), monitor_(monitor), stream_(stream) {
  RIDGELINE_CUDA_CHECK(cudaEventCreate(&start_));
  RIDGELINE_CUDA_CHECK(cudaEventCreate(&stop_));
}

EventTimer::~EventTimer() {
  if (start_ != nullptr) (void)cudaEventDestroy(start_);
  if (stop_ != nullptr) (void)cudaEventDestroy(stop_);
}

double EventTimer::sample(const std::function<void(cudaStream_t)>& run, const TimingOptions& options, int reps) {
  if (options.flush_l2) flusher_.flush(stream_);
  if (options.hold_stream) gate_.hold(stream_);
  try {
    RIDGELINE_CUDA_CHECK(cudaEventRecord(start_, stream_));
    for (int r = 0; r < reps; ++r) run(stream_);
    RIDGELINE_CUDA_CHECK(cudaEventRecord(stop_, stream_));
  } catch (...) {
    if (options.hold_stream) gate_.release();  // never leave the stream spinning
    throw;
  }
  if (options.hold_stream) gate_.release();
  monitor_.sample();  // while the work runs (for all but the shortest samples)
  RIDGELINE_CUDA_CHECK(cudaEventSynchronize(stop_));
  float ms = 0.0f;
  RIDGELINE_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return 1e-3 * static_cast<double>(ms);
}

Timing EventTimer::measure(const std::function<void(cudaStream_t)>& run, const TimingOptions& options) {
  const double start_wall = now_s();
  for (int i = 0; i < options.warmup; ++i) run(stream_);
  RIDGELINE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  monitor_.begin();

  // One sample decides the batch: a short run is repeated to fill kBatchTargetS.
  int reps = 1;
  const double first = sample(run, options, 1);
  if (options.batch_short && first < kShortRunS)
    reps = std::clamp(static_cast<int>(std::ceil(kBatchTargetS / std::max(first, 1e-7))), 1, kMaxRepetitions);

  std::vector<double> per_run_s;
  if (reps == 1) per_run_s.push_back(first);
  double total_s = reps == 1 ? first : 0.0;
  for (;;) {
    const int n = static_cast<int>(per_run_s.size());
    if (n >= options.max_samples) break;
    if (n >= options.min_samples && total_s >= options.min_time_s) {
      const double med = median(per_run_s);
      if (med > 0 && (quantile(per_run_s, 0.9) - med) / med <= options.max_noise) break;
    }
    if (n >= 3 && now_s() - start_wall > options.max_wall_s) break;
    const double t = sample(run, options, reps);
    total_s += t;
    per_run_s.push_back(t / reps);
  }
  Timing t;
  t.samples = static_cast<int>(per_run_s.size());
  t.repetitions = reps;
  t.median_s = median(per_run_s);
  t.min_s = *std::min_element(per_run_s.begin(), per_run_s.end());
  t.p90_s = std::max(t.median_s, quantile(per_run_s, 0.9));
  t.state = monitor_.end();
  return t;
}

}  // namespace ridgeline::cuda_bench
