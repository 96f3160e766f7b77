// LayerNorm forward, bf16 in and out, fp32 math (rowwise.cuh): rows x cols
// with cols in {256, 1024, 4096, 8192, 16384} and rows chosen so the tensor
// is 64 MiB and 256 MiB (quick: 128 MiB). eps = 1e-5; gamma and beta bf16;
// mean and rstd written per row in fp32, as a training forward pass saves them.
//
// FLOP: 8 per element (mean, centre, square, sum, scale by rstd, gamma, beta).
// Bytes: 4 x rows x cols (x in, y out) + 4 x cols (gamma, beta) + 8 x rows
// (mean, rstd). Check: four whole rows against a float64 host LayerNorm.

#include "benches/benches.hpp"
#include "benches/rowwise.cuh"

#include <cmath>
#include <string>

namespace ridgeline::cuda_bench {

namespace {

constexpr float kEps = 1e-5f;

struct LayerNormLaunch {
  const DeviceBuffer *in, *gamma, *beta, *out, *mean, *rstd;
  std::int64_t rows;
  cudaStream_t stream;
  template <int T, int R, int V>
  void operator()() const {
    unsigned blocks = static_cast<unsigned>((rows + R - 1) / R);
    layernorm_kernel<T, R, V><<<blocks, T * R, 0, stream>>>(in->as<uint4>(), gamma->as<uint4>(), beta->as<uint4>(),
                                                             out->as<uint4>(), mean->as<float>(), rstd->as<float>(),
                                                             rows, kEps);
  }
};

void layernorm_case(Suite& suite, std::int64_t rows, int cols) {
  std::string name = "layernorm_bf16_" + std::to_string(rows) + "x" + std::to_string(cols);
  suite.run_case(name, [&] {
    std::size_t n = static_cast<std::size_t>(rows) * cols;
    DeviceBuffer in(n * 2), out(n * 2), gamma(cols * 2), beta(cols * 2), mean(rows * 4), rstd(rows * 4);
    fill_uniform(in.as<__nv_bfloat16>(), n, 51, -2.0f, 3.0f, suite.stream());
    fill_uniform(gamma.as<__nv_bfloat16>(), cols, 52, 0.5f, 1.5f, suite.stream());
    fill_uniform(beta.as<__nv_bfloat16>(), cols, 53, -0.5f, 0.5f, suite.stream());

    auto run = [&](cudaStream_t stream) {
      if (!dispatch_row_config(cols, LayerNormLaunch{&in, &gamma, &beta, &out, &mean, &rstd, rows, stream}))
        throw Skip("unsupported column count");
      RIDGELINE_CUDA_CHECK_LAUNCH();
    };
    Timing timing = suite.time(run);

    CheckResult check;
    std::vector<std::int64_t> cidx = index_range(0, cols);
    std::vector<float> g = gather_to_host(gamma.as<__nv_bfloat16>(), cidx, suite.stream());
    std::vector<float> b = gather_to_host(beta.as<__nv_bfloat16>(), cidx, suite.stream());
    for (std::int64_t row : sample_indices(rows, 4, 6)) {
      std::vector<std::int64_t> idx = index_range(row * cols, cols);
      std::vector<float> x = gather_to_host(in.as<__nv_bfloat16>(), idx, suite.stream());
      std::vector<float> y = gather_to_host(out.as<__nv_bfloat16>(), idx, suite.stream());
      std::vector<float> mr = gather_to_host(mean.as<float>(), {row}, suite.stream());
      std::vector<float> rr = gather_to_host(rstd.as<float>(), {row}, suite.stream());
      double mu = 0.0, var = 0.0;
      for (float v : x) mu += v;
      mu /= cols;
      for (float v : x) var += (v - mu) * (v - mu);
      var /= cols;
      double rs = 1.0 / std::sqrt(var + kEps);
      check.compare(mr[0], mu, 1e-4);
      check.compare(rr[0], rs, 1e-4 * rs);
      for (int c = 0; c < cols; ++c) {
        double z = (x[c] - mu) * rs;
        double want = z * g[c] + b[c];
        // bf16 output rounding (2^-9 relative) plus fp32 statistics.
        check.compare(y[c], want, 0x1p-7 * std::fabs(want) + 0x1p-12 * (std::fabs(z * g[c]) + std::fabs(b[c])) + 1e-6);
      }
    }

    double nd = static_cast<double>(n);
    Record r;
    r.name = name;
    r.cls = spec::MeasurementClass::kLayernorm;
    r.dtype = "bf16";
    r.m = rows;
    r.n = cols;
    r.elements = static_cast<std::int64_t>(n);
    r.flops = 8.0 * nd;
    r.bytes = 4.0 * nd + 4.0 * cols + 8.0 * static_cast<double>(rows);
    r.algorithm = row_config_label(cols);
    suite.add(r, timing, check);
  });
}

}  // namespace

void run_layernorm(Suite& suite) { for_each_row_shape(suite, layernorm_case); }

}  // namespace ridgeline::cuda_bench
