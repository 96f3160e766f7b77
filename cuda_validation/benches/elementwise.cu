// Elementwise chains, unfused vs fused: bias add, GELU (tanh approximation)
// and dropout (p = 0.1, hash-based keep mask, 1-byte mask written for the
// backward pass) on a bf16 tensor of N elements with hidden size 4096:
//   unfused: y = x + bias; g = gelu(y); out, mask = dropout(g)   (3 kernels)
//   fused:   out, mask = dropout(gelu(x + bias))                 (1 kernel)
// Math in fp32; 8 elements (16 bytes) per thread per step.
//
// FLOP per element: bias 1 + GELU 8 + dropout 1 = 10 (both variants).
// Bytes: unfused 2N+2H+2N (bias) + 2N+2N (GELU) + 2N+2N+N (dropout) = 13N + 2H;
// fused 2N + 2H + 2N + N = 5N + 2H (H = 4096 bias elements).

#include "benches/bench_util.cuh"
#include "benches/benches.hpp"

#include <cmath>
#include <string>

namespace ridgeline::cuda_bench {

namespace {

constexpr int kHidden = 4096;
constexpr int kThreads = 256;
constexpr float kDropP = 0.1f;
constexpr std::uint32_t kDropSeed = 0x5eedu;

/// 32-bit integer hash ("lowbias32", C. Wellons); the dropout RNG.
__host__ __device__ inline std::uint32_t lowbias32(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

/// Element i is kept when its 24-bit uniform draw is >= p.
__host__ __device__ inline bool dropout_keep(std::uint32_t i) {
  std::uint32_t h = lowbias32(i * 0x9E3779B9u + kDropSeed);
  return static_cast<float>(h >> 8) * (1.0f / 16777216.0f) >= kDropP;
}

__device__ inline float tanh_approx(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/// GELU, tanh form (Hendrycks & Gimpel 2016): 0.5 y (1 + tanh(sqrt(2/pi) (y + 0.044715 y^3))).
__device__ inline float gelu(float y) {
  const float k = 0.7978845608028654f;
  return 0.5f * y * (1.0f + tanh_approx(k * (y + 0.044715f * y * y * y)));
}

float gelu_host(float y) {
  const double k = 0.7978845608028654;
  double yd = y;
  return static_cast<float>(0.5 * yd * (1.0 + std::tanh(k * (yd + 0.044715 * yd * yd * yd))));
}

/// Dropout of 8 values starting at element 8i: scales kept ones by 1/(1-p), returns the 8 mask bytes.
__device__ inline uint2 dropout8(float v[8], std::size_t i) {
  const float scale = 1.0f / (1.0f - kDropP);
  std::uint32_t mask[2] = {0, 0};
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    bool keep = dropout_keep(static_cast<std::uint32_t>(8 * i + e));
    v[e] = keep ? v[e] * scale : 0.0f;
    mask[e / 4] |= static_cast<std::uint32_t>(keep) << (8 * (e % 4));
  }
  return make_uint2(mask[0], mask[1]);
}

__global__ void bias_add_kernel(const uint4* __restrict__ x, const uint4* __restrict__ bias, uint4* __restrict__ y,
                                std::size_t n8) {
  std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n8; i += stride) {
    float v[8], b[8];
    unpack_bf16x8(x[i], v);
    unpack_bf16x8(bias[i % (kHidden / 8)], b);
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] += b[e];
    y[i] = pack_bf16x8(v);
  }
}

__global__ void gelu_kernel(const uint4* __restrict__ y, uint4* __restrict__ g, std::size_t n8) {
  std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n8; i += stride) {
    float v[8];
    unpack_bf16x8(y[i], v);
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = gelu(v[e]);
    g[i] = pack_bf16x8(v);
  }
}

__global__ void dropout_kernel(const uint4* __restrict__ g, uint4* __restrict__ out, uint2* __restrict__ mask,
                               std::size_t n8) {
  std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n8; i += stride) {
    float v[8];
    unpack_bf16x8(g[i], v);
    mask[i] = dropout8(v, i);
    out[i] = pack_bf16x8(v);
  }
}

// Bias, GELU and dropout in fp32 with a single rounding to bf16 at the end.
__global__ void fused_kernel(const uint4* __restrict__ x, const uint4* __restrict__ bias, uint4* __restrict__ out,
                             uint2* __restrict__ mask, std::size_t n8) {
  std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n8; i += stride) {
    float v[8], b[8];
    unpack_bf16x8(x[i], v);
    unpack_bf16x8(bias[i % (kHidden / 8)], b);
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = gelu(v[e] + b[e]);
    mask[i] = dropout8(v, i);
    out[i] = pack_bf16x8(v);
  }
}

void elementwise_case(Suite& suite, std::int64_t n) {
  std::string label = "bf16_" + std::to_string(n);
  suite.run_case("elementwise_" + label, [&] {
    std::size_t count = static_cast<std::size_t>(n), n8 = count / 8;
    DeviceBuffer x(count * 2), bias(kHidden * 2), y(count * 2), g(count * 2), out_u(count * 2), mask_u(count),
        out_f(count * 2), mask_f(count);
    fill_uniform(x.as<__nv_bfloat16>(), count, 31, -3.0f, 3.0f, suite.stream());
    fill_uniform(bias.as<__nv_bfloat16>(), kHidden, 32, -1.0f, 1.0f, suite.stream());
    unsigned grid = grid_for(suite, static_cast<std::int64_t>(n8), kThreads);

    auto unfused = [&](cudaStream_t stream) {
      bias_add_kernel<<<grid, kThreads, 0, stream>>>(x.as<uint4>(), bias.as<uint4>(), y.as<uint4>(), n8);
      RIDGELINE_CUDA_CHECK_LAUNCH();
      gelu_kernel<<<grid, kThreads, 0, stream>>>(y.as<uint4>(), g.as<uint4>(), n8);
      RIDGELINE_CUDA_CHECK_LAUNCH();
      dropout_kernel<<<grid, kThreads, 0, stream>>>(g.as<uint4>(), out_u.as<uint4>(), mask_u.as<uint2>(), n8);
      RIDGELINE_CUDA_CHECK_LAUNCH();
    };
    auto fused = [&](cudaStream_t stream) {
      fused_kernel<<<grid, kThreads, 0, stream>>>(x.as<uint4>(), bias.as<uint4>(), out_f.as<uint4>(),
                                                  mask_f.as<uint2>(), n8);
      RIDGELINE_CUDA_CHECK_LAUNCH();
    };
    Timing t_unfused = suite.time(unfused);
    Timing t_fused = suite.time(fused);

    // Host reference on 256 sampled elements, in double from the bf16 inputs.
    std::vector<std::int64_t> idx = sample_indices(n, 256, 4);
    std::vector<std::int64_t> bias_idx(idx.size());
    for (std::size_t i = 0; i < idx.size(); ++i) bias_idx[i] = idx[i] % kHidden;
    cudaStream_t st = suite.stream();
    std::vector<float> hx = gather_to_host(x.as<__nv_bfloat16>(), idx, st);
    std::vector<float> hb = gather_to_host(bias.as<__nv_bfloat16>(), bias_idx, st);
    std::vector<float> hu = gather_to_host(out_u.as<__nv_bfloat16>(), idx, st);
    std::vector<float> hf = gather_to_host(out_f.as<__nv_bfloat16>(), idx, st);
    std::vector<float> mu = gather_to_host(mask_u.as<std::uint8_t>(), idx, st);
    std::vector<float> mf = gather_to_host(mask_f.as<std::uint8_t>(), idx, st);
    CheckResult check_u, check_f;
    for (std::size_t i = 0; i < idx.size(); ++i) {
      bool keep = dropout_keep(static_cast<std::uint32_t>(idx[i]));
      double want = keep ? gelu_host(hx[i] + hb[i]) / (1.0 - kDropP) : 0.0;
      // bf16 roundings (3 unfused, 1 fused) and tanh.approx (~2^-11): within 2^-7 of the magnitudes.
      double allowed = 0x1p-7 * (std::fabs(want) + std::fabs(hx[i]) + std::fabs(hb[i])) + 1e-3;
      check_u.compare(hu[i], want, allowed);
      check_f.compare(hf[i], want, allowed);
      check_u.compare(mu[i], keep ? 1.0 : 0.0, 0.0);
      check_f.compare(mf[i], keep ? 1.0 : 0.0, 0.0);
    }

    double nd = static_cast<double>(n);
    Record r;
    r.dtype = "bf16";
    r.elements = n;
    r.flops = 10.0 * nd;
    r.algorithm = "grid=" + std::to_string(grid) + " threads=" + std::to_string(kThreads) + " vec=8";
    Record ru = r;
    ru.name = "elementwise_unfused_" + label;
    ru.cls = spec::MeasurementClass::kElementwiseUnfused;
    ru.bytes = 13.0 * nd + 2.0 * kHidden;
    ru.launches = 3;
    suite.add(ru, t_unfused, check_u);
    Record rf = r;
    rf.name = "elementwise_fused_" + label;
    rf.cls = spec::MeasurementClass::kElementwiseFused;
    rf.bytes = 5.0 * nd + 2.0 * kHidden;
    rf.launches = 1;
    suite.add(rf, t_fused, check_f);
  });
}

}  // namespace

void run_elementwise(Suite& suite) {
  // Full: 2^20 .. 2^28 elements (2 MiB .. 512 MiB per bf16 tensor); quick: every other size to 2^26.
  for (int log2_n = 20; log2_n <= (suite.quick() ? 26 : 28); log2_n += suite.quick() ? 2 : 1)
    elementwise_case(suite, std::int64_t{1} << log2_n);
}

}  // namespace ridgeline::cuda_bench
