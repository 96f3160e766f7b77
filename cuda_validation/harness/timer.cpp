#include "harness/timer.hpp"

#include "harness/check.hpp"
#include "harness/kernels.cuh"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <vector>

namespace ridgeline::cuda_bench {

namespace {
constexpr std::uint64_t kGateTimeoutNs = 10'000'000'000ull;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

L2Flusher::L2Flusher(std::size_t l2_bytes) : bytes_(2 * std::max<std::size_t>(l2_bytes, 1u << 20)) {
  RIDGELINE_CUDA_CHECK(cudaMalloc(&buffer_, bytes_));
}

L2Flusher::~L2Flusher() {
  if (buffer_ != nullptr) (void)cudaFree(buffer_);
}

void L2Flusher::flush(cudaStream_t stream) {
  RIDGELINE_CUDA_CHECK(cudaMemsetAsync(buffer_, round_++ & 0xff, bytes_, stream));
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

EventTimer::EventTimer(L2Flusher& flusher, StreamGate& gate, cudaStream_t stream)
    : flusher_(flusher), gate_(gate), stream_(stream) {
  RIDGELINE_CUDA_CHECK(cudaEventCreate(&start_));
  RIDGELINE_CUDA_CHECK(cudaEventCreate(&stop_));
}

EventTimer::~EventTimer() {
  if (start_ != nullptr) (void)cudaEventDestroy(start_);
  if (stop_ != nullptr) (void)cudaEventDestroy(stop_);
}

Timing EventTimer::measure(const std::function<void(cudaStream_t)>& run, const TimingOptions& options) {
  for (int i = 0; i < options.warmup; ++i) run(stream_);
  RIDGELINE_CUDA_CHECK(cudaStreamSynchronize(stream_));

  std::vector<double> times_s;
  times_s.reserve(static_cast<std::size_t>(options.samples));
  for (int i = 0; i < options.samples; ++i) {
    if (options.flush_l2) flusher_.flush(stream_);
    if (options.hold_stream) gate_.hold(stream_);
    try {
      RIDGELINE_CUDA_CHECK(cudaEventRecord(start_, stream_));
      run(stream_);
      RIDGELINE_CUDA_CHECK(cudaEventRecord(stop_, stream_));
    } catch (...) {
      if (options.hold_stream) gate_.release();  // never leave the stream spinning
      throw;
    }
    if (options.hold_stream) gate_.release();
    RIDGELINE_CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0.0f;
    RIDGELINE_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    times_s.push_back(1e-3 * static_cast<double>(ms));
  }
  Timing t;
  t.samples = static_cast<int>(times_s.size());
  t.median_s = median(times_s);
  t.min_s = times_s.empty() ? 0.0 : *std::min_element(times_s.begin(), times_s.end());
  return t;
}

}  // namespace ridgeline::cuda_bench
