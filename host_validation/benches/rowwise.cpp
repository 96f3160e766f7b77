// Row-wise: softmax (row max, exp and sum, scale) and layernorm (two-pass
// mean and variance), fp32, rows of 256 to 16384. Bytes: x read, y written
// (plus gamma, beta, mean and rstd for layernorm).
#include "benches/rowwise.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <memory>
#include <vector>

#include "benches/benches.hpp"
#include "harness/random.hpp"
#include "harness/suite.hpp"
#include "harness/timer.hpp"

namespace ridgeline::host_bench {

void softmax_rows(const float* in, float* out, size_t rows, size_t cols, float scale) {
  for (size_t r = 0; r < rows; ++r) {
    const float* x = in + r * cols;
    float* y = out + r * cols;
    float m = -std::numeric_limits<float>::infinity();
    for (size_t c = 0; c < cols; ++c) m = std::max(m, x[c]);
    float sum = 0;
    for (size_t c = 0; c < cols; ++c) {
      y[c] = std::exp((x[c] - m) * scale);
      sum += y[c];
    }
    const float inv = 1.0f / sum;
    for (size_t c = 0; c < cols; ++c) y[c] *= inv;
  }
}

void run_rowwise(Suite& b) {
  const bool softmax = b.wants(spec::MeasurementClass::kSoftmax);
  const bool layernorm = b.wants(spec::MeasurementClass::kLayernorm);
  if (!softmax && !layernorm) return;
  const std::vector<int> cols_list = {256, 1024, 4096, 16384};
  const std::vector<int> sizes = b.quick() ? std::vector<int>{22} : std::vector<int>{22, 24};
  // One input and one output array (the largest size); every case uses their front.
  const size_t max_n = size_t{1} << sizes.back();
  std::vector<float> x(max_n), y(max_n, 0.f);
  fill_uniform(x.data(), max_n, 41, -4, 4);
  const float* xp = x.data();
  float* yp = y.data();
  std::vector<Case> cases;
  for (int lg : sizes) {
    const size_t n = size_t{1} << lg;
    for (int cols_i : cols_list) {
      const size_t cols = static_cast<size_t>(cols_i), rows = n / cols;
      const std::string tag = fmt::format("{}x{}", rows, cols);
      if (softmax) {
        Case c;
        c.run = [=] {
          softmax_rows(xp, yp, rows, cols, 1.0f);
          keep(yp);
        };
        c.check = [=](Check& check) {
          for (size_t row : sample_indices(rows, 4, 42)) {
            const float* xr = xp + row * cols;
            double m = -INFINITY, sum = 0;
            for (size_t k = 0; k < cols; ++k) m = std::max(m, static_cast<double>(xr[k]));
            for (size_t k = 0; k < cols; ++k) sum += std::exp(xr[k] - m);
            for (size_t k = 0; k < cols; ++k) {
              const double want = std::exp(xr[k] - m) / sum;
              check.compare(yp[row * cols + k], want, 1e-5 * want + 1e-12);  // fp32 exp and sum: ~cols ulps
            }
          }
        };
        spec::MeasurementRecord& r = c.record;
        r.name = "softmax_" + tag;
        r.cls = spec::MeasurementClass::kSoftmax;
        r.dtype = "fp32";
        r.m = static_cast<double>(rows);
        r.n = static_cast<double>(cols);
        r.elements = static_cast<double>(n);
        r.flops = 5.0 * static_cast<double>(n);
        r.bytes = 8.0 * static_cast<double>(n);  // read x, write y (fp32)
        r.algorithm = "row max, exp and sum, scale; std::exp, fp32";
        cases.push_back(std::move(c));
      }
      if (layernorm) {
        struct Params {
          std::vector<float> gamma, beta, mean, rstd;
        };
        auto pr = std::make_shared<Params>(
            Params{std::vector<float>(cols), std::vector<float>(cols), std::vector<float>(rows), std::vector<float>(rows)});
        fill_uniform(pr->gamma.data(), cols, 43, 0.5, 1.5);
        fill_uniform(pr->beta.data(), cols, 44, -0.5, 0.5);
        constexpr float kEps = 1e-5f;
        Case c;
        c.run = [=] {
          const float* gamma = pr->gamma.data();
          const float* beta = pr->beta.data();
          for (size_t r = 0; r < rows; ++r) {
            const float* xr = xp + r * cols;
            float* yr = yp + r * cols;
            float s = 0;
            for (size_t k = 0; k < cols; ++k) s += xr[k];
            const float mu = s / static_cast<float>(cols);
            float v = 0;
            for (size_t k = 0; k < cols; ++k) v += (xr[k] - mu) * (xr[k] - mu);
            const float rs = 1.0f / std::sqrt(v / static_cast<float>(cols) + kEps);
            for (size_t k = 0; k < cols; ++k) yr[k] = (xr[k] - mu) * rs * gamma[k] + beta[k];
            pr->mean[r] = mu;
            pr->rstd[r] = rs;
          }
          keep(yp);
        };
        c.check = [=](Check& check) {
          for (size_t row : sample_indices(rows, 4, 45)) {
            const float* xr = xp + row * cols;
            double mu = 0, var = 0;
            for (size_t k = 0; k < cols; ++k) mu += xr[k];
            mu /= static_cast<double>(cols);
            for (size_t k = 0; k < cols; ++k) var += (xr[k] - mu) * (xr[k] - mu);
            var /= static_cast<double>(cols);
            const double rs = 1.0 / std::sqrt(var + kEps);
            check.compare(pr->mean[row], mu, 1e-4);
            check.compare(pr->rstd[row], rs, 1e-4 * rs);
            for (size_t k = 0; k < cols; ++k) {
              const double z = (xr[k] - mu) * rs;
              const double want = z * pr->gamma[k] + pr->beta[k];
              check.compare(yp[row * cols + k], want,
                            1e-4 * (std::fabs(z * pr->gamma[k]) + std::fabs(pr->beta[k])) + 1e-6);
            }
          }
        };
        spec::MeasurementRecord& r = c.record;
        r.name = "layernorm_" + tag;
        r.cls = spec::MeasurementClass::kLayernorm;
        r.dtype = "fp32";
        r.m = static_cast<double>(rows);
        r.n = static_cast<double>(cols);
        r.elements = static_cast<double>(n);
        r.flops = 8.0 * static_cast<double>(n);
        // x read, y written; gamma and beta read; mean and rstd written (fp32).
        r.bytes = 8.0 * static_cast<double>(n) + 8.0 * static_cast<double>(cols) + 8.0 * static_cast<double>(rows);
        r.algorithm = "two-pass mean and variance per row, fp32";
        cases.push_back(std::move(c));
      }
    }
  }
  b.run(cases);
}

}  // namespace ridgeline::host_bench
