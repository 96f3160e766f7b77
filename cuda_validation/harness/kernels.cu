#include "harness/check.hpp"
#include "harness/kernels.cuh"

namespace ridgeline::cuda_bench {

namespace {

template <typename T>
__device__ T from_float(float x) {
  return static_cast<T>(x);
}
template <>
__device__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float x) {
  return __nv_fp8_e4m3(x);
}

template <typename T>
__global__ void fill_uniform_kernel(T* p, std::size_t n, std::uint64_t seed, float lo, float scale) {
  std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    p[i] = from_float<T>(lo + scale * hash_unit(seed, i));
  }
}

template <typename T>
__global__ void gather_kernel(const T* src, const std::int64_t* index, float* out, int count) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < count) out[j] = static_cast<float>(src[index[j]]);
}

__global__ void block_stream_kernel(volatile int* flag, std::uint64_t timeout_ns) {
  std::uint64_t start;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  while (*flag == 0) {
    std::uint64_t now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > timeout_ns) {
      *flag = 2;
      break;
    }
  }
}

__global__ void empty_kernel() {}

// Reads every 16-byte word; the XOR goes to *sink only when it is a value no
// fill produces, so the loads cannot be optimised away and nothing is written.
__global__ void l2_flush_read_kernel(const uint4* __restrict__ p, std::size_t n16, unsigned* sink) {
  unsigned acc = 0;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n16; i += stride) {
    const uint4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9E3779B9u) *sink = acc;
}

}  // namespace

template <typename T>
void fill_uniform(T* p, std::size_t n, std::uint64_t seed, float lo, float hi, cudaStream_t stream) {
  if (n == 0) return;
  std::size_t blocks = (n + 255) / 256;
  if (blocks > 65536) blocks = 65536;
  fill_uniform_kernel<T><<<static_cast<unsigned>(blocks), 256, 0, stream>>>(p, n, seed, lo, hi - lo);
  RIDGELINE_CUDA_CHECK_LAUNCH();
}

template <typename T>
void gather_as_float(const T* src, const std::int64_t* index, float* out, int count, cudaStream_t stream) {
  if (count <= 0) return;
  gather_kernel<T><<<(count + 127) / 128, 128, 0, stream>>>(src, index, out, count);
  RIDGELINE_CUDA_CHECK_LAUNCH();
}

void launch_block_stream(volatile int* flag, std::uint64_t timeout_ns, cudaStream_t stream) {
  block_stream_kernel<<<1, 1, 0, stream>>>(flag, timeout_ns);
  RIDGELINE_CUDA_CHECK_LAUNCH();
}

void launch_l2_flush_read(const uint4* p, std::size_t n16, unsigned* sink, cudaStream_t stream) {
  l2_flush_read_kernel<<<1024, 256, 0, stream>>>(p, n16, sink);
}

void launch_empty(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
}

template void fill_uniform<float>(float*, std::size_t, std::uint64_t, float, float, cudaStream_t);
template void fill_uniform<__half>(__half*, std::size_t, std::uint64_t, float, float, cudaStream_t);
template void fill_uniform<__nv_bfloat16>(__nv_bfloat16*, std::size_t, std::uint64_t, float, float, cudaStream_t);
template void fill_uniform<__nv_fp8_e4m3>(__nv_fp8_e4m3*, std::size_t, std::uint64_t, float, float, cudaStream_t);

template void gather_as_float<float>(const float*, const std::int64_t*, float*, int, cudaStream_t);
template void gather_as_float<__half>(const __half*, const std::int64_t*, float*, int, cudaStream_t);
template void gather_as_float<__nv_bfloat16>(const __nv_bfloat16*, const std::int64_t*, float*, int, cudaStream_t);
template void gather_as_float<std::uint8_t>(const std::uint8_t*, const std::int64_t*, float*, int, cudaStream_t);

}  // namespace ridgeline::cuda_bench
