// Row-wise bf16 kernels (fp32 math), shared by softmax.cu, layernorm.cu and
// the naive attention in attention.cu. A row of `cols` elements is held in
// registers by kThreadsPerRow threads, 8 elements (16 bytes) per load, so
// each element is read from HBM once and written once:
//   cols <= 1024: one warp per row, four rows per block;
//   cols >= 2048: one block of up to 512 threads per row.
// Supported cols: 256, 512, 1024, 2048, 4096, 8192, 16384.
#pragma once

#include "benches/bench_util.cuh"

#include <cstdint>
#include <string>
#include <vector>

namespace ridgeline::cuda_bench {

/// Reduces `x` over the kThreadsPerRow threads of a row (power of two; > 32 means the whole block).
template <int kThreadsPerRow, typename Op>
__device__ inline float row_reduce(float x, Op op) {
  constexpr int kWarpWidth = kThreadsPerRow < 32 ? kThreadsPerRow : 32;
#pragma unroll
  for (int offset = kWarpWidth / 2; offset > 0; offset /= 2) x = op(x, __shfl_xor_sync(0xffffffffu, x, offset));
  if constexpr (kThreadsPerRow > 32) {
    constexpr int kWarps = kThreadsPerRow / 32;
    __shared__ float partial[kWarps];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __syncthreads();  // earlier readers of `partial` are done
    if (lane == 0) partial[warp] = x;
    __syncthreads();
    x = partial[lane % kWarps];
#pragma unroll
    for (int offset = kWarps / 2; offset > 0; offset /= 2) x = op(x, __shfl_xor_sync(0xffffffffu, x, offset));
  }
  return x;
}

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};

/// out = softmax(scale * in) along each row.
template <int kThreadsPerRow, int kRowsPerBlock, int kVecs>
__global__ void __launch_bounds__(kThreadsPerRow* kRowsPerBlock)
    softmax_kernel(const uint4* __restrict__ in, uint4* __restrict__ out, std::int64_t rows, float scale) {
  static_assert(kThreadsPerRow <= 32 || kRowsPerBlock == 1, "block-wide rows need one row per block");
  constexpr int kVecsPerRow = kThreadsPerRow * kVecs;
  const int lane = threadIdx.x % kThreadsPerRow;
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kThreadsPerRow;
  if (row >= rows) return;  // whole rows (warps or the block) leave together
  const uint4* src = in + row * kVecsPerRow;
  uint4* dst = out + row * kVecsPerRow;

  const float scale_log2 = scale * 1.4426950408889634f;  // exp(x) = exp2(x log2 e)
  float v[kVecs * 8];
  float m = -INFINITY;
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    unpack_bf16x8(src[j * kThreadsPerRow + lane], v + 8 * j);
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      v[8 * j + e] *= scale_log2;
      m = fmaxf(m, v[8 * j + e]);
    }
  }
  m = row_reduce<kThreadsPerRow>(m, MaxOp{});
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < kVecs * 8; ++i) {
    v[i] = exp2f(v[i] - m);
    sum += v[i];
  }
  sum = row_reduce<kThreadsPerRow>(sum, SumOp{});
  const float inv = 1.0f / sum;
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    float o[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) o[e] = v[8 * j + e] * inv;
    dst[j * kThreadsPerRow + lane] = pack_bf16x8(o);
  }
}

/// LayerNorm along each row (Ba et al. 2016): y = (x - mean) / sqrt(var + eps) * gamma + beta,
/// two-pass variance from registers; also writes mean and rstd (fp32), as training saves them.
template <int kThreadsPerRow, int kRowsPerBlock, int kVecs>
__global__ void __launch_bounds__(kThreadsPerRow* kRowsPerBlock)
    layernorm_kernel(const uint4* __restrict__ in, const uint4* __restrict__ gamma, const uint4* __restrict__ beta,
                     uint4* __restrict__ out, float* __restrict__ mean_out, float* __restrict__ rstd_out,
                     std::int64_t rows, float eps) {
  static_assert(kThreadsPerRow <= 32 || kRowsPerBlock == 1, "block-wide rows need one row per block");
  constexpr int kVecsPerRow = kThreadsPerRow * kVecs;
  constexpr float kInvCols = 1.0f / (kVecsPerRow * 8);
  const int lane = threadIdx.x % kThreadsPerRow;
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kThreadsPerRow;
  if (row >= rows) return;
  const uint4* src = in + row * kVecsPerRow;
  uint4* dst = out + row * kVecsPerRow;

  float v[kVecs * 8];
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    unpack_bf16x8(src[j * kThreadsPerRow + lane], v + 8 * j);
#pragma unroll
    for (int e = 0; e < 8; ++e) sum += v[8 * j + e];
  }
  const float mean = row_reduce<kThreadsPerRow>(sum, SumOp{}) * kInvCols;
  float sq = 0.0f;
#pragma unroll
  for (int i = 0; i < kVecs * 8; ++i) {
    v[i] -= mean;
    sq += v[i] * v[i];
  }
  const float rstd = rsqrtf(row_reduce<kThreadsPerRow>(sq, SumOp{}) * kInvCols + eps);
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    float g[8], b[8], o[8];
    unpack_bf16x8(gamma[j * kThreadsPerRow + lane], g);
    unpack_bf16x8(beta[j * kThreadsPerRow + lane], b);
#pragma unroll
    for (int e = 0; e < 8; ++e) o[e] = v[8 * j + e] * rstd * g[e] + b[e];
    dst[j * kThreadsPerRow + lane] = pack_bf16x8(o);
  }
  if (lane == 0) {
    mean_out[row] = mean;
    rstd_out[row] = rstd;
  }
}

/// Calls f.template operator()<kThreadsPerRow, kRowsPerBlock, kVecs>() for `cols`; false if unsupported.
template <typename F>
bool dispatch_row_config(int cols, F&& f) {
  switch (cols) {
    case 256: f.template operator()<32, 4, 1>(); return true;
    case 512: f.template operator()<32, 4, 2>(); return true;
    case 1024: f.template operator()<32, 4, 4>(); return true;
    case 2048: f.template operator()<128, 1, 2>(); return true;
    case 4096: f.template operator()<256, 1, 2>(); return true;
    case 8192: f.template operator()<512, 1, 2>(); return true;
    case 16384: f.template operator()<512, 1, 4>(); return true;
    default: return false;
  }
}

struct SoftmaxLaunch {
  const void* in;
  void* out;
  std::int64_t rows;
  float scale;
  cudaStream_t stream;
  template <int T, int R, int V>
  void operator()() const {
    unsigned blocks = static_cast<unsigned>((rows + R - 1) / R);
    softmax_kernel<T, R, V><<<blocks, T * R, 0, stream>>>(static_cast<const uint4*>(in), static_cast<uint4*>(out),
                                                           rows, scale);
  }
};

/// Launches the softmax kernel for bf16 rows x cols (contiguous rows; `in` and `out` must not overlap);
/// false if `cols` is unsupported.
inline bool launch_softmax(const void* in, void* out, std::int64_t rows, int cols, float scale, cudaStream_t stream) {
  return dispatch_row_config(cols, SoftmaxLaunch{in, out, rows, scale, stream});
}

struct RowConfigLabel {
  std::string* label;
  template <int T, int R, int V>
  void operator()() const {
    *label = "threads_per_row=" + std::to_string(T) + " rows_per_block=" + std::to_string(R) +
             " elements_per_thread=" + std::to_string(8 * V);
  }
};

/// Describes the launch configuration for `cols` ("threads_per_row=.. rows_per_block=.. elements_per_thread=..").
inline std::string row_config_label(int cols) {
  std::string label = "unsupported";
  dispatch_row_config(cols, RowConfigLabel{&label});
  return label;
}

/// The row-wise benchmarks' shapes (softmax.cu, layernorm.cu): each row length
/// at each total size (quick: 128 MiB of bf16; else 64 MiB and 256 MiB), as
/// run_case(suite, rows, cols).
template <typename Case>
void for_each_row_shape(Suite& suite, Case run_case) {
  const int kCols[] = {256, 1024, 4096, 8192, 16384};
  std::vector<std::int64_t> elements;
  if (suite.quick())
    elements = {std::int64_t{1} << 26};
  else
    elements = {std::int64_t{1} << 25, std::int64_t{1} << 27};
  for (std::int64_t n : elements)
    for (int cols : kCols) run_case(suite, n / cols, cols);
}

}  // namespace ridgeline::cuda_bench
