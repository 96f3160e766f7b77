#include <doctest/doctest.h>

#include "ridgeline/cost/cost.hpp"
#include "test_support.hpp"

using namespace ridgeline;

namespace {

graph::Kernel gemm(double m, double n, double k, spec::Dtype dt) {
  graph::Kernel g;
  g.cls = spec::KernelClass::kGemm;
  g.dtype = dt;
  g.gemm = {m, n, k, 1};
  g.flops = 2 * m * n * k;
  const double e = spec::bytes_per_element(dt);
  g.read_bytes = (m * k + k * n) * e;
  g.write_bytes = m * n * e;
  return g;
}

graph::Kernel layernorm(double tokens, double h) {
  graph::Kernel k;
  k.cls = spec::KernelClass::kNorm;
  k.read_bytes = tokens * h * 2;
  k.write_bytes = tokens * h * 2;
  k.flops = 8 * tokens * h;
  return k;
}

}  // namespace

TEST_CASE("cost: an 8192^3 bf16 GEMM is compute-bound and a LayerNorm memory-bound on H100") {
  const auto hw = test::gpu("h100_sxm");
  const auto c = cost::resolve(hw);
  const auto g = cost::cost_kernel(gemm(8192, 8192, 8192, spec::Dtype::kBf16), c, false);
  CHECK(g.bound == cost::Bound::kCompute);
  // Intensity 2 n^3 / (3 n^2 * 2 bytes) = n / 3 = 2731 FLOP/B, far above the
  // ridge point 989.4e12 / 3.35e12 = 295 FLOP/B (spec sheet).
  CHECK(g.intensity == doctest::Approx(8192.0 / 3));
  CHECK(cost::ridge_point(c, spec::Peak::kBf16) == doctest::Approx(989.4 / 3.35));
  // 8192 is a multiple of the 128-tile: no quantization loss; time = FLOP / (peak x 0.80) + launch.
  CHECK(g.compute_s == doctest::Approx(2 * 8192.0 * 8192 * 8192 / (989.4e12 * 0.80)).epsilon(0.02));
  const auto ln = cost::cost_kernel(layernorm(8192, 4096), c, false);
  CHECK(ln.bound == cost::Bound::kMemory);
  CHECK(ln.intensity == doctest::Approx(8.0 / 4));  // 8 FLOP per 4 bytes moved
}

TEST_CASE("cost: fp8 doubles a compute-bound GEMM's speed on H100; fp32 runs at the non-tensor peak") {
  const auto c = cost::resolve(test::gpu("h100_sxm"));
  const double bf16 = cost::cost_kernel(gemm(8192, 8192, 8192, spec::Dtype::kBf16), c, false).compute_s;
  const double fp8 = cost::cost_kernel(gemm(8192, 8192, 8192, spec::Dtype::kFp8E4M3), c, false).compute_s;
  const double fp32 = cost::cost_kernel(gemm(8192, 8192, 8192, spec::Dtype::kFp32), c, false).compute_s;
  // Uncalibrated defaults: the peak ratio (whitepaper Table 1: 1978.9 / 989.4 = 2.0)
  // times the achievable fractions measured by MAMF (fp8 0.72, bf16 0.80): 1.8x.
  CHECK(bf16 / fp8 == doctest::Approx(1978.9 / 989.4 * 0.72 / 0.80));
  // At equal efficiency (a calibration that measured both alike) exactly the spec-sheet ratio, 2x.
  auto hw = test::gpu("h100_sxm");
  hw.calibration.present = true;
  hw.calibration.efficiency.gemm_frac[static_cast<int>(spec::Peak::kFp8)] = 0.8;
  hw.calibration.efficiency.gemm_frac[static_cast<int>(spec::Peak::kBf16)] = 0.8;
  const auto cal = cost::resolve(hw);
  CHECK(cost::cost_kernel(gemm(8192, 8192, 8192, spec::Dtype::kBf16), cal, false).compute_s /
            cost::cost_kernel(gemm(8192, 8192, 8192, spec::Dtype::kFp8E4M3), cal, false).compute_s ==
        doctest::Approx(1978.9 / 989.4));
  CHECK(fp32 / bf16 == doctest::Approx(989.4 / 66.9));    // fp32 66.9 TFLOP/s non-tensor
  CHECK(spec::bytes_per_element(spec::Dtype::kFp8E4M3) == 1);
  CHECK(spec::bytes_per_element(spec::Dtype::kBf16) == 2);
  CHECK(spec::bytes_per_element(spec::Dtype::kFp32) == 4);
}

TEST_CASE("cost: wave quantization — one tile more than a full wave costs a second wave") {
  const auto c = cost::resolve(test::gpu("h100_sxm"));  // 132 SMs, 128 x 128 tiles
  const double full = cost::cost_kernel(gemm(128 * 132, 128, 4096, spec::Dtype::kBf16), c, false).compute_s;
  const double spill = cost::cost_kernel(gemm(128 * 133, 128, 4096, spec::Dtype::kBf16), c, false).compute_s;
  CHECK(spill == doctest::Approx(2 * full));
}

TEST_CASE("cost: time never rises when bandwidth or peak rise") {
  auto hw = test::gpu("a100_sxm_80gb");
  const graph::Kernel ks[] = {gemm(4096, 4096, 4096, spec::Dtype::kBf16), gemm(64, 4096, 4096, spec::Dtype::kBf16),
                              layernorm(4096, 4096)};
  for (const auto& k : ks) {
    double prev = 1e30;
    for (double scale : {0.5, 1.0, 2.0, 4.0}) {
      auto h2 = hw;
      h2.hbm_bytes_per_s *= scale;
      for (auto& p : h2.peak_flop_per_s) p *= scale;
      const double t = cost::cost_kernel(k, cost::resolve(h2), false).time_s;
      CHECK(t <= prev);
      prev = t;
    }
  }
}

TEST_CASE("cost: ring all-reduce moves 2 (n - 1) / n S per GPU") {
  const double S = 1e9;
  CHECK(cost::collective_bytes_per_gpu(graph::Collective::kAllReduce, S, 8) == doctest::Approx(2.0 * 7 / 8 * S));
  CHECK(cost::collective_bytes_per_gpu(graph::Collective::kAllGather, S, 8) == doctest::Approx(7.0 / 8 * S));
  CHECK(cost::collective_bytes_per_gpu(graph::Collective::kReduceScatter, S, 4) == doctest::Approx(3.0 / 4 * S));
  const auto c = cost::resolve(test::gpu("h100_sxm"));
  // Alpha-beta, inside a node: 2 (n-1) alpha + 2 (n-1)/n S / (450 GB/s x 0.8).
  const double t = cost::collective_time(graph::Collective::kAllReduce, S, 8, 8, c);
  CHECK(t == doctest::Approx(std::min(14 * 3e-6 + 1.75e9 / (450e9 * 0.8), 6 * 3e-6 + 2e9 / (450e9 * 0.8))));
  // Crossing nodes uses the slower network.
  CHECK(cost::collective_time(graph::Collective::kAllReduce, S, 16, 16, c) > t);
}
