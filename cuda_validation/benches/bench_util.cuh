// Helpers for the benchmark files: sampled indices for correctness checks,
// copying sampled device elements to the host (as float), launch geometry for
// grid-stride kernels, and bf16 vector packing.
#pragma once

#include "harness/buffer.hpp"
#include "harness/check.hpp"
#include "harness/kernels.cuh"
#include "harness/suite.hpp"

#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ridgeline::cuda_bench {

/// `count` indices in [0, n): the first and last element and hashed ones between.
inline std::vector<std::int64_t> sample_indices(std::int64_t n, int count, std::uint64_t seed) {
  std::vector<std::int64_t> out;
  if (n <= 0) return out;
  out.push_back(0);
  if (n > 1) out.push_back(n - 1);
  for (int i = 0; static_cast<int>(out.size()) < count && i < count; ++i) {
    std::uint64_t r = (static_cast<std::uint64_t>(hash_u32(seed, 2 * i)) << 32) | hash_u32(seed, 2 * i + 1);
    out.push_back(static_cast<std::int64_t>(r % static_cast<std::uint64_t>(n)));
  }
  return out;
}

/// Host copy of src[index[j]] as float.
template <typename T>
std::vector<float> gather_to_host(const T* src, const std::vector<std::int64_t>& index, cudaStream_t stream) {
  std::vector<float> out(index.size());
  if (index.empty()) return out;
  DeviceBuffer d_index(index.size() * sizeof(std::int64_t));
  DeviceBuffer d_out(index.size() * sizeof(float));
  RIDGELINE_CUDA_CHECK(cudaMemcpyAsync(d_index.get(), index.data(), d_index.bytes(), cudaMemcpyHostToDevice, stream));
  gather_as_float(src, d_index.as<std::int64_t>(), d_out.as<float>(), static_cast<int>(index.size()), stream);
  RIDGELINE_CUDA_CHECK(cudaMemcpyAsync(out.data(), d_out.get(), d_out.bytes(), cudaMemcpyDeviceToHost, stream));
  RIDGELINE_CUDA_CHECK(cudaStreamSynchronize(stream));
  return out;
}

/// Indices [first, first + count).
inline std::vector<std::int64_t> index_range(std::int64_t first, std::int64_t count) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) out[static_cast<std::size_t>(i)] = first + i;
  return out;
}

/// Blocks for a grid-stride kernel over `work_items` with `threads` per block:
/// enough to fill every SM, no more than the work needs.
inline unsigned grid_for(const Suite& suite, std::int64_t work_items, int threads) {
  std::int64_t needed = (work_items + threads - 1) / threads;
  std::int64_t full = static_cast<std::int64_t>(suite.device().sm_count) *
                      std::max(1, suite.device().max_threads_per_sm / threads);
  return static_cast<unsigned>(std::max<std::int64_t>(1, std::min(needed, full)));
}

/// Eight bf16 values travel as one 16-byte vector (element 0 in the low half of .x).
__device__ inline void unpack_bf16x8(uint4 v, float out[8]) {
  const std::uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    out[2 * e] = __uint_as_float(w[e] << 16);
    out[2 * e + 1] = __uint_as_float(w[e] & 0xffff0000u);
  }
}

__device__ inline std::uint32_t pack_bf16x2(float lo, float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);  // one cvt.rn.bf16x2.f32
  return *reinterpret_cast<const std::uint32_t*>(&h);
}

__device__ inline uint4 pack_bf16x8(const float in[8]) {
  return make_uint4(pack_bf16x2(in[0], in[1]), pack_bf16x2(in[2], in[3]), pack_bf16x2(in[4], in[5]),
                    pack_bf16x2(in[6], in[7]));
}

}  // namespace ridgeline::cuda_bench
