// Elementwise chain: bias add, GELU and dropout as three loops over memory
// (elementwise_unfused, three "kernels") or one (elementwise_fused), fp32,
// rows of 1024 (the bias length). FLOP and bytes as cuda_validation counts them.
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <vector>

#include "benches/benches.hpp"
#include "harness/random.hpp"
#include "harness/suite.hpp"
#include "harness/timer.hpp"

namespace ridgeline::host_bench {

namespace {

constexpr std::uint32_t kBiasLen = 1024;  // hidden size the bias repeats over
constexpr float kDropP = 0.1f;

/// tanh by its [7/6] Pade approximant on x clamped to [-4.97, 4.97], where
/// it stays below 1: |error| < 1e-4 (largest near |x| = 4.8). The clamp is
/// (|x + c| - |x - c|) / 2: no comparisons, so the loops vectorize.
inline float tanh_pade(float x) {
  x = 0.5f * (std::fabs(x + 4.97f) - std::fabs(x - 4.97f));
  const float x2 = x * x;
  const float num = x * (135135.0f + x2 * (17325.0f + x2 * (378.0f + x2)));
  const float den = 135135.0f + x2 * (62370.0f + x2 * (3150.0f + 28.0f * x2));
  return num / den;
}

/// GELU, tanh form (Hendrycks and Gimpel 2016).
inline float gelu(float x) { return 0.5f * x * (1.0f + tanh_pade(0.7978845608f * (x + 0.044715f * x * x * x))); }

/// Dropout's keep decision for element i (1 or 0): a stateless integer hash
/// (as a counter-based generator would give), kept with probability 1 - p.
inline int keep_element(int i) {
  std::uint32_t h = static_cast<std::uint32_t>(i) * 0x9E3779B1u;
  h ^= h >> 15;
  h *= 0x85EBCA77u;
  h ^= h >> 13;
  return h >= static_cast<std::uint32_t>(kDropP * 4294967296.0);
}

constexpr int kRowLen = static_cast<int>(kBiasLen);  // rows of hidden size: the bias add vectorizes

/// Bias add, GELU and dropout as three loops over memory (three "kernels").
/// Free functions: pointers as parameters cannot be aliased by the byte
/// stores of the mask, so the loops vectorize.
void chain_unfused(const float* x, const float* bias, float* y, float* g, float* out, std::uint8_t* mask, int n,
                   float scale) {
  for (int r = 0; r < n; r += kRowLen)
    for (int j = 0; j < kRowLen; ++j) y[r + j] = x[r + j] + bias[j];
  keep(y);
  for (int i = 0; i < n; ++i) g[i] = gelu(y[i]);
  keep(g);
  for (int i = 0; i < n; ++i) {
    const int k = keep_element(i);
    mask[i] = static_cast<std::uint8_t>(k);
    out[i] = g[i] * (scale * static_cast<float>(k));
  }
  keep(out);
  keep(mask);
}

/// The same chain as one loop: x read once, out and mask written once.
void chain_fused(const float* x, const float* bias, float* out, std::uint8_t* mask, int n, float scale) {
  for (int r = 0; r < n; r += kRowLen)
    for (int j = 0; j < kRowLen; ++j) {
      const float v = gelu(x[r + j] + bias[j]);
      const int k = keep_element(r + j);
      mask[r + j] = static_cast<std::uint8_t>(k);
      out[r + j] = v * (scale * static_cast<float>(k));
    }
  keep(out);
  keep(mask);
}

}  // namespace

void run_elementwise(Suite& b) {
  const bool unfused = b.wants(spec::MeasurementClass::kElementwiseUnfused);
  const bool fused = b.wants(spec::MeasurementClass::kElementwiseFused);
  if (!unfused && !fused) return;
  const std::vector<int> sizes =
      b.quick() ? std::vector<int>{20, 21, 22, 23} : std::vector<int>{20, 21, 22, 23, 24, 25, 26};
  // Every size uses the front of the same arrays (element i's output does not depend on the size).
  const size_t max_n = size_t{1} << sizes.back();
  std::vector<float> x(max_n), bias(kBiasLen), y(max_n, 0.f), g(max_n, 0.f), out_u(max_n, 0.f), out_f(max_n, 0.f);
  std::vector<std::uint8_t> mask_u(max_n, 0), mask_f(max_n, 0);
  fill_uniform(x.data(), max_n, 31, -3, 3);
  fill_uniform(bias.data(), kBiasLen, 32, -0.5, 0.5);
  const float scale = 1.0f / (1.0f - kDropP);
  const float* xp = x.data();
  const float* bp = bias.data();
  float* yp = y.data();
  float* gp = g.data();
  float* up = out_u.data();
  float* fp = out_f.data();
  std::uint8_t* mu = mask_u.data();
  std::uint8_t* mf = mask_f.data();
  // Reference in double with the exact tanh: the Pade error (< 1e-4 on tanh)
  // moves GELU by at most 0.5 |x| 1e-4, scaled by 1/(1-p).
  auto check_output = [=](Check& check, size_t n, const float* out, const std::uint8_t* mask) {
    for (size_t i : sample_indices(n, 1024, 33)) {
      const double v = static_cast<double>(xp[i]) + bp[i & (kBiasLen - 1)];
      const double ge = 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
      const bool k = keep_element(static_cast<int>(i)) != 0;
      const double want = k ? ge / (1.0 - kDropP) : 0.0;
      check.compare(out[i], want, (0.5 * std::fabs(v) * 1e-4 + 1e-6) / (1.0 - kDropP));
      check.compare(mask[i], k ? 1.0 : 0.0, 0.0);
    }
  };
  std::vector<Case> cases;
  for (int lg : sizes) {
    const size_t n = size_t{1} << lg;
    const int n32 = static_cast<int>(n);
    const double nd = static_cast<double>(n);
    spec::MeasurementRecord base;
    base.dtype = "fp32";
    base.elements = nd;
    base.flops = 10.0 * nd;  // bias add 1, GELU ~8, dropout scale 1 (cuda_validation's count)
    const std::string tag = fmt::format("{}M", n >> 20);
    if (unfused) {
      Case c;
      c.run = [=] { chain_unfused(xp, bp, yp, gp, up, mu, n32, scale); };
      c.check = [=](Check& check) { check_output(check, n, up, mu); };
      c.record = base;
      c.record.name = "elementwise_unfused_" + tag;
      c.record.cls = spec::MeasurementClass::kElementwiseUnfused;
      // y = x + b (4n read, 4n write), g = gelu(y) (4n + 4n), out, mask = dropout(g) (4n read, 4n + n write).
      c.record.bytes = 25.0 * nd + 4.0 * kBiasLen;
      c.record.launches = 3;
      c.record.algorithm = "three loops (bias add, GELU tanh form with Pade tanh, hash dropout p=0.1), fp32";
      cases.push_back(std::move(c));
    }
    if (fused) {
      Case c;
      c.run = [=] { chain_fused(xp, bp, fp, mf, n32, scale); };
      c.check = [=](Check& check) {
        check_output(check, n, fp, mf);
        if (unfused)  // the same arithmetic in one loop: equal to the unfused chain
          for (size_t i : sample_indices(n, 1024, 34)) check.compare(fp[i], up[i], 1e-6 * std::fabs(up[i]) + 1e-7);
      };
      c.record = base;
      c.record.name = "elementwise_fused_" + tag;
      c.record.cls = spec::MeasurementClass::kElementwiseFused;
      c.record.bytes = 9.0 * nd + 4.0 * kBiasLen;  // x read, out and mask written
      c.record.launches = 1;
      c.record.algorithm = "one loop (bias add, GELU tanh form with Pade tanh, hash dropout p=0.1), fp32";
      cases.push_back(std::move(c));
    }
  }
  b.run(cases);
}

}  // namespace ridgeline::host_bench
