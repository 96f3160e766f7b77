// HBM and L2 bandwidth: STREAM-style copy (a = b) and triad (a = b + s * c)
// on fp32 arrays, with 16-byte (float4) grid-stride kernels. Bytes per run:
// copy 2 x size, triad 3 x size (each array read or written once; McCalpin's
// STREAM counting). FLOP: triad 2 per element, copy 0.
//
// HBM (hbm_copy, hbm_triad): arrays of at least 4x the L2 size, cold (L2
// flushed before each sample), so L2 hits are a small part of the traffic.
// L2 (l2_copy, l2_triad): all arrays together at most half the L2, warm (no
// flush: the previous sample left them there), so the traffic is L2's. Sizes
// in between are measured by neither: they mix the two.

#include "benches/bench_util.cuh"
#include "benches/benches.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace ridgeline::cuda_bench {

namespace {

__global__ void copy_kernel(const float4* __restrict__ src, float4* __restrict__ dst, std::size_t n4) {
  std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n4; i += stride)
    dst[i] = src[i];
}

__global__ void triad_kernel(float4* __restrict__ a, const float4* __restrict__ b, const float4* __restrict__ c,
                             float s, std::size_t n4) {
  std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n4; i += stride) {
    float4 x = b[i];
    float4 y = c[i];
    a[i] = make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w);
  }
}

constexpr int kThreads = 256;
constexpr float kTriadScalar = 3.0f;

std::string size_label(std::size_t bytes) { return std::to_string(bytes >> 20) + "MiB"; }

/// Whether arrays of `bytes` are measured as HBM (cold) or L2 (warm) traffic.
enum class Level { kHbm, kL2 };

TimingOptions level_options(const Suite& suite, Level level) {
  TimingOptions options = suite.default_options();
  options.flush_l2 = level == Level::kHbm;
  return options;
}

void copy_case(Suite& suite, std::size_t bytes, Level level) {
  std::string name = std::string(level == Level::kHbm ? "hbm" : "l2") + "_copy_fp32_" + size_label(bytes);
  suite.run_case(name, [&] {
    std::size_t n = bytes / sizeof(float);
    DeviceBuffer src(bytes), dst(bytes);
    fill_uniform(src.as<float>(), n, 11, -1.0f, 1.0f, suite.stream());
    unsigned grid = grid_for(suite, static_cast<std::int64_t>(n / 4), kThreads);
    auto run = [&](cudaStream_t stream) {
      copy_kernel<<<grid, kThreads, 0, stream>>>(src.as<float4>(), dst.as<float4>(), n / 4);
      RIDGELINE_CUDA_CHECK_LAUNCH();
    };
    Timing timing = suite.time(run, level_options(suite, level));

    std::vector<std::int64_t> idx = sample_indices(static_cast<std::int64_t>(n), 256, 1);
    std::vector<float> want = gather_to_host(src.as<float>(), idx, suite.stream());
    std::vector<float> got = gather_to_host(dst.as<float>(), idx, suite.stream());
    CheckResult check;
    for (std::size_t i = 0; i < idx.size(); ++i) check.compare(got[i], want[i], 0.0);

    Record r;
    r.name = name;
    r.cls = level == Level::kHbm ? spec::MeasurementClass::kHbmCopy : spec::MeasurementClass::kL2Copy;
    r.dtype = "fp32";
    r.elements = static_cast<std::int64_t>(n);
    r.bytes = 2.0 * static_cast<double>(bytes);
    r.algorithm = "grid=" + std::to_string(grid) + " threads=" + std::to_string(kThreads) + " float4";
    suite.add(r, timing, check);
  });
}

void triad_case(Suite& suite, std::size_t bytes, Level level) {
  std::string name = std::string(level == Level::kHbm ? "hbm" : "l2") + "_triad_fp32_" + size_label(bytes);
  suite.run_case(name, [&] {
    std::size_t n = bytes / sizeof(float);
    DeviceBuffer a(bytes), b(bytes), c(bytes);
    fill_uniform(b.as<float>(), n, 12, -1.0f, 1.0f, suite.stream());
    fill_uniform(c.as<float>(), n, 13, -1.0f, 1.0f, suite.stream());
    unsigned grid = grid_for(suite, static_cast<std::int64_t>(n / 4), kThreads);
    auto run = [&](cudaStream_t stream) {
      triad_kernel<<<grid, kThreads, 0, stream>>>(a.as<float4>(), b.as<float4>(), c.as<float4>(), kTriadScalar,
                                                  n / 4);
      RIDGELINE_CUDA_CHECK_LAUNCH();
    };
    Timing timing = suite.time(run, level_options(suite, level));

    std::vector<std::int64_t> idx = sample_indices(static_cast<std::int64_t>(n), 256, 2);
    std::vector<float> hb = gather_to_host(b.as<float>(), idx, suite.stream());
    std::vector<float> hc = gather_to_host(c.as<float>(), idx, suite.stream());
    std::vector<float> ha = gather_to_host(a.as<float>(), idx, suite.stream());
    CheckResult check;
    for (std::size_t i = 0; i < idx.size(); ++i) {
      double want = static_cast<double>(hb[i]) + kTriadScalar * static_cast<double>(hc[i]);
      // One rounding (fused multiply-add) or two: within 2 ulp of the larger term.
      double allowed = 2.5e-7 * (std::fabs(hb[i]) + std::fabs(kTriadScalar * hc[i]));
      check.compare(ha[i], want, allowed);
    }

    Record r;
    r.name = name;
    r.cls = level == Level::kHbm ? spec::MeasurementClass::kHbmTriad : spec::MeasurementClass::kL2Triad;
    r.dtype = "fp32";
    r.elements = static_cast<std::int64_t>(n);
    r.flops = 2.0 * static_cast<double>(n);
    r.bytes = 3.0 * static_cast<double>(bytes);
    r.algorithm = "grid=" + std::to_string(grid) + " threads=" + std::to_string(kThreads) + " float4";
    suite.add(r, timing, check);
  });
}

}  // namespace

void run_hbm(Suite& suite) {
  const std::size_t l2 = std::max<std::size_t>(suite.device().l2_bytes, 1u << 20);
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  // HBM: every power of two from the first at or above 4 x L2 (256 MiB on a
  // 50 MiB L2) to 4 GiB per array; quick: up to 2 GiB.
  std::size_t first = kMiB;
  while (first < 4 * l2) first *= 2;
  const std::size_t last = (suite.quick() ? std::size_t{2} : std::size_t{4}) << 30;
  std::vector<std::size_t> hbm;
  for (std::size_t b = first; b <= last; b *= 2) hbm.push_back(b);
  // L2: powers of two from 1 MiB while every array of the case fits in half the L2.
  auto l2_sizes = [&](int arrays) {
    std::vector<std::size_t> v;
    for (std::size_t b = kMiB; arrays * b <= l2 / 2; b *= 2) v.push_back(b);
    return v;
  };
  if (suite.wants(spec::MeasurementClass::kHbmCopy))
    for (std::size_t bytes : hbm) copy_case(suite, bytes, Level::kHbm);
  if (suite.wants(spec::MeasurementClass::kHbmTriad))
    for (std::size_t bytes : hbm) triad_case(suite, bytes, Level::kHbm);
  if (suite.wants(spec::MeasurementClass::kL2Copy))
    for (std::size_t bytes : l2_sizes(2)) copy_case(suite, bytes, Level::kL2);
  if (suite.wants(spec::MeasurementClass::kL2Triad))
    for (std::size_t bytes : l2_sizes(3)) triad_case(suite, bytes, Level::kL2);
}

}  // namespace ridgeline::cuda_bench
