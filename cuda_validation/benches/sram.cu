// Shared-memory (SRAM) bandwidth. Every block fills 48 KiB of shared memory,
// then `reps` times reads each element and writes it back, warp by warp
// over consecutive addresses (conflict-free: each warp request covers whole
// 128-byte rows). One full wave of blocks runs (as many per SM as fit), so
// every SM works for the whole kernel.
//
// bytes = shared-memory bytes moved in the loop: 2 (read + write) x 48 KiB x
// reps x blocks; elements = bytes / 4 (fp32 words). No HBM traffic to speak
// of. Two access widths: 4-byte (LDS/STS.32) and 16-byte (LDS/STS.128).

#include "benches/bench_util.cuh"
#include "benches/benches.hpp"

#include <string>
#include <type_traits>

namespace ridgeline::cuda_bench {

namespace {

constexpr int kThreads = 256;
constexpr int kSmemBytes = 48 * 1024;

__device__ inline float scale_add(float v) { return v * 0.999f + 0.001f; }
__device__ inline float4 scale_add(float4 v) {
  return make_float4(scale_add(v.x), scale_add(v.y), scale_add(v.z), scale_add(v.w));
}
__device__ inline float lane_sum(float v) { return v; }
__device__ inline float lane_sum(float4 v) { return v.x + v.y + v.z + v.w; }

template <typename V>
__global__ void __launch_bounds__(kThreads) smem_rw_kernel(int reps, float* sink) {
  constexpr int kCount = kSmemBytes / static_cast<int>(sizeof(V));
  constexpr int kPerThread = kCount / kThreads;
  static_assert(kCount % kThreads == 0, "shared buffer must divide evenly among threads");
  extern __shared__ float4 smem_raw[];
  V* smem = reinterpret_cast<V*>(smem_raw);

#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    float x = static_cast<float>(threadIdx.x + j) * 1e-3f;
    if constexpr (std::is_same_v<V, float4>)
      smem[threadIdx.x + j * kThreads] = make_float4(x, x + 1.0f, x + 2.0f, x + 3.0f);
    else
      smem[threadIdx.x + j * kThreads] = x;
  }
  __syncthreads();

  float acc = 0.0f;
  for (int r = 0; r < reps; ++r) {
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      int idx = threadIdx.x + j * kThreads;  // consecutive across the warp: no bank conflicts
      V v = smem[idx];
      acc += lane_sum(v);
      smem[idx] = scale_add(v);
    }
    // Compiler barrier: every repetition really loads and stores shared memory.
    asm volatile("" ::: "memory");
  }
  if (acc == -1.0f) sink[blockIdx.x * kThreads + threadIdx.x] = acc;  // keeps `acc` (never true)
}

template <typename V>
void sram_case(Suite& suite, const char* width_label) {
  std::string name = std::string("sram_rw_") + width_label + "_48KiB";
  suite.run_case(name, [&] {
    auto kernel = smem_rw_kernel<V>;
    int blocks_per_sm = 0;
    RIDGELINE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kThreads, kSmemBytes));
    if (blocks_per_sm == 0) throw Skip("48 KiB of shared memory per block does not fit");
    int blocks = blocks_per_sm * suite.device().sm_count;
    DeviceBuffer sink(static_cast<std::size_t>(blocks) * kThreads * sizeof(float));

    // About 2 ms at 128 B/clock/SM (the Ampere/Hopper shared-memory peak).
    double bytes_per_rep = 2.0 * kSmemBytes * blocks;
    double peak_bytes_per_s = 128.0 * suite.device().sm_count * suite.device().clock_hz;
    int reps = static_cast<int>(std::min(100000.0, std::max(100.0, 2e-3 * peak_bytes_per_s / bytes_per_rep)));

    auto run = [&](cudaStream_t stream) {
      kernel<<<blocks, kThreads, kSmemBytes, stream>>>(reps, sink.as<float>());
      RIDGELINE_CUDA_CHECK_LAUNCH();
    };
    TimingOptions options = suite.default_options();
    options.flush_l2 = false;  // nothing read from HBM
    Timing timing = suite.time(run, options);

    Record r;
    r.name = name;
    r.cls = spec::MeasurementClass::kSram;
    r.dtype = "fp32";
    r.bytes = bytes_per_rep * reps;
    r.elements = static_cast<std::int64_t>(r.bytes / 4.0);
    r.algorithm = "blocks=" + std::to_string(blocks) + " threads=" + std::to_string(kThreads) +
                  " smem_per_block=" + std::to_string(kSmemBytes) + " reps=" + std::to_string(reps);
    suite.add(r, timing);
  });
}

}  // namespace

void run_sram(Suite& suite) {
  sram_case<float4>(suite, "f32x4");
  sram_case<float>(suite, "f32");
}

}  // namespace ridgeline::cuda_bench
