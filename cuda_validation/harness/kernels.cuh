// Device helpers shared by the benchmarks: a counter-based hash RNG, a
// uniform fill for every element type the suite uses, a gather of sampled
// elements (as float) for the correctness checks, and the stream-blocking
// kernel the event timer uses (see timer.hpp).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace ridgeline::cuda_bench {

/// 64 -> 32 bit mix (SplitMix64 finaliser, Steele et al. 2014); a counter-based
/// RNG: hash(seed, i) is element i's random word, on host and device alike.
__host__ __device__ inline std::uint32_t hash_u32(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<std::uint32_t>(z >> 32);
}

/// Uniform in [0, 1) with 24 random bits.
__host__ __device__ inline float hash_unit(std::uint64_t seed, std::uint64_t i) {
  return static_cast<float>(hash_u32(seed, i) >> 8) * (1.0f / 16777216.0f);
}

/// p[i] = lo + (hi - lo) * hash_unit(seed, i), converted to T (rounded to nearest).
/// T: float, __half, __nv_bfloat16, __nv_fp8_e4m3.
template <typename T>
void fill_uniform(T* p, std::size_t n, std::uint64_t seed, float lo, float hi, cudaStream_t stream);

/// out[j] = float(src[index[j]]) for j < count; `index` and `out` are device pointers.
template <typename T>
void gather_as_float(const T* src, const std::int64_t* index, float* out, int count, cudaStream_t stream);

/// Launches one thread that spins until *flag != 0 or `timeout_ns` pass
/// (then it writes 2 to *flag so the host can tell). `flag` is mapped host memory.
void launch_block_stream(volatile int* flag, std::uint64_t timeout_ns, cudaStream_t stream);

/// Reads n16 16-byte words of `p` (the L2 flush; see timer.hpp); writes
/// nothing unless their XOR is one particular value.
void launch_l2_flush_read(const uint4* p, std::size_t n16, unsigned* sink, cudaStream_t stream);

/// An empty kernel, for the launch-overhead benchmark.
void launch_empty(cudaStream_t stream);

}  // namespace ridgeline::cuda_bench
