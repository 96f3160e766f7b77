// GEMM: Eigen C = A B (column-major, one thread), fp32 and fp64, over
// squares and shapes that are not multiples of the tile sizes. FLOP = 2 m n k;
// bytes = A, B and C once (the minimum traffic).
#include <Eigen/Dense>
#include <cmath>
#include <fmt/format.h>
#include <memory>
#include <type_traits>

#include "benches/benches.hpp"
#include "harness/cpuinfo.hpp"
#include "harness/random.hpp"
#include "harness/suite.hpp"
#include "harness/timer.hpp"

namespace ridgeline::host_bench {

namespace {

template <class T>
Case gemm_case(int m, int n, int k, const char* dtype) {
  using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  struct Data {
    Mat A, B, C;
  };
  auto d = std::make_shared<Data>(Data{Mat(m, k), Mat(k, n), Mat(m, n)});
  fill_uniform(d->A.data(), d->A.size(), 11, -1, 1);
  fill_uniform(d->B.data(), d->B.size(), 12, -1, 1);
  d->C.setZero();
  Case c;
  c.run = [d] {
    d->C.noalias() = d->A * d->B;
    keep(d->C.data());
  };
  // Sampled entries against a long double dot product; rounding grows at most
  // like k ulps of sum |a b| (fp32 2^-24 x k <= 2^-13 for k <= 2048).
  c.check = [d, m, n, k](Check& check) {
    const double rel = std::is_same_v<T, float> ? 0x1p-12 : 0x1p-40;
    for (size_t s : sample_indices(static_cast<size_t>(m) * n, 64, 13)) {
      const int i = static_cast<int>(s % m), j = static_cast<int>(s / m);
      long double want = 0, mag = 0;
      for (int l = 0; l < k; ++l) {
        want += static_cast<long double>(d->A(i, l)) * d->B(l, j);
        mag += std::fabs(static_cast<long double>(d->A(i, l)) * d->B(l, j));
      }
      check.compare(d->C(i, j), static_cast<double>(want), rel * static_cast<double>(mag) + 1e-30);
    }
  };
  spec::MeasurementRecord& r = c.record;
  r.name = fmt::format("gemm_{}_{}x{}x{}", dtype, m, n, k);
  r.cls = spec::MeasurementClass::kGemm;
  r.dtype = dtype;
  r.m = m;
  r.n = n;
  r.k = k;
  r.batch = 1;
  r.flops = 2.0 * m * n * static_cast<double>(k);
  r.bytes = (static_cast<double>(m) * k + static_cast<double>(k) * n + static_cast<double>(m) * n) * sizeof(T);
  r.algorithm = fmt::format("Eigen {}.{}.{} C = A B, column-major, {}, 1 thread", EIGEN_WORLD_VERSION,
                            EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION, simd_name());
  return c;
}

}  // namespace

void run_gemm(Suite& b) {
  if (!b.wants(spec::MeasurementClass::kGemm)) return;
  struct Shape {
    int m, n, k;
    bool quick;
  };
  // Squares to compute-bound, plus shapes that are not multiples of 128 or 256
  // (tile quantization) and thin ones (LoRA-like). 64^3 is in the full suite
  // only: after a cache flush it takes twice its compute time (DRAM latency
  // while packing A and B, ~15 us), which max(compute, memory) cannot express,
  // and with few records the fit would explain it by tile padding instead.
  const Shape shapes[] = {{64, 64, 64, false},     {128, 128, 128, true},     {256, 256, 256, true},
                          {384, 384, 384, true},   {512, 512, 512, true},     {1024, 1024, 1024, false},
                          {200, 1000, 300, true},  {96, 768, 384, true},      {128, 2048, 256, true},
                          {1000, 200, 64, true},   {320, 320, 960, true},     {1536, 512, 768, false},
                          {2048, 16, 1024, false}, {777, 333, 555, false}};
  std::vector<Case> cases;
  for (const Shape& s : shapes)
    if (!b.quick() || s.quick) cases.push_back(gemm_case<float>(s.m, s.n, s.k, "fp32"));
  for (const Shape& s : shapes) {
    if (b.quick() && !s.quick) continue;
    if (s.m * static_cast<double>(s.n) * s.k > 4e8) continue;  // fp64 runs at half the rate: keep it short
    cases.push_back(gemm_case<double>(s.m, s.n, s.k, "fp64"));
  }
  b.run(cases);
}

}  // namespace ridgeline::host_bench
