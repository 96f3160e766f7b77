#include "ridgeline/calibrate/host_microbench.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <time.h>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <memory>
#include <limits>
#include <random>
#include <unistd.h>

#include "ridgeline/units/units.hpp"

namespace ridgeline::calibrate {

namespace {

/// This thread's CPU time: time the OS gives to other processes (a shared,
/// busy machine) is not counted; on an idle machine it equals wall time.
double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

/// Makes the compiler assume `p`'s memory is read: keeps a result alive.
inline void keep(const void* p) { asm volatile("" : : "r"(p) : "memory"); }

/// An empty out-of-line call: the host's "empty kernel".
__attribute__((noinline)) void empty_call() { asm volatile(""); }

struct Timing {
  double median_s = 0;
  double min_s = 0;
  int samples = 0;
};

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Outcome of a correctness check: every compared value within its tolerance.
struct Check {
  int compared = 0;
  int failed = 0;
  void compare(double got, double want, double allowed) {
    ++compared;
    if (!(std::fabs(got - want) <= allowed)) ++failed;
  }
  std::string verdict() const { return compared == 0 ? "none" : failed == 0 ? "pass" : "fail"; }
};

std::string simd_name() {
  std::string s = Eigen::SimdInstructionSetsInUse();
  return s.empty() ? std::string("no SIMD") : s;
}

/// One benchmark case: what it measures, how to run it once, and how to check
/// what the last run left.
struct Case {
  spec::MeasurementRecord record;  // everything but the timing and the check verdict
  std::function<void()> run;
  std::function<void(Check&)> check;  // may be empty
  bool flush = true;                  // flush the cache before each sample
};

class Bench {
 public:
  Bench(const HostMicrobenchOptions& o, spec::MeasurementSet& set) : opt_(o), set_(set) {
    samples_ = o.samples > 0 ? o.samples : (o.quick ? 10 : 20);
    warmup_ = o.quick ? 1 : 2;
    double flush = o.flush_bytes;
    if (flush <= 0) {
      const double llc = host_info().llc_bytes;
      flush = std::clamp(2.0 * llc, 32.0 * units::kMiB, (o.quick ? 64.0 : 256.0) * units::kMiB);
    }
    flush_.assign(static_cast<size_t>(flush / sizeof(std::uint64_t)), 1);
  }

  bool wants(const std::string& cls) const {
    return opt_.classes.empty() || std::find(opt_.classes.begin(), opt_.classes.end(), cls) != opt_.classes.end();
  }
  bool quick() const { return opt_.quick; }

  /// Reads one word of every cache line of a buffer larger than the last-level
  /// cache: what the next sample touches comes from DRAM, and dirty lines the
  /// previous sample left are written back now rather than during it.
  void flush() {
    std::uint64_t sum = 0;
    for (size_t i = 0; i < flush_.size(); i += 8) sum += flush_[i];
    flush_[0] = sum & 1;  // a store the compiler cannot drop
    keep(flush_.data());
  }

  /// Times every case in rounds: round r takes sample r of each case in turn,
  /// so a disturbance (another process, a clock change) costs every case a
  /// sample or two, which the median discards, instead of swallowing all the
  /// samples of one case. A case's check runs right after its last sample,
  /// on what that run left.
  void run(std::vector<Case>& cases) {
    for (auto& c : cases)
      for (int i = 0; i < warmup_; ++i) c.run();
    std::vector<std::vector<double>> t(cases.size());
    std::vector<Check> checks(cases.size());
    for (int s = 0; s < samples_; ++s)
      for (size_t i = 0; i < cases.size(); ++i) {
        if (cases[i].flush) flush();
        const double t0 = thread_seconds();
        cases[i].run();
        t[i].push_back(thread_seconds() - t0);
        if (s == samples_ - 1 && cases[i].check) cases[i].check(checks[i]);
      }
    for (size_t i = 0; i < cases.size(); ++i) {
      Timing r;
      r.median_s = median_of(t[i]);
      r.min_s = *std::min_element(t[i].begin(), t[i].end());
      r.samples = samples_;
      add(cases[i].record, r, checks[i]);
    }
    cases.clear();
  }

  void add(spec::MeasurementRecord r, const Timing& t, const Check& check) {
    r.median_s = t.median_s;
    r.min_s = t.min_s;
    r.samples = t.samples;
    r.check = check.verdict();
    if (opt_.progress) {
      std::string rate;
      if (r.flops > 0 && (r.cls == "gemm" || r.cls.starts_with("attention")))
        rate = units::format_flop_rate(r.flops / r.median_s);
      else if (r.bytes > 0)
        rate = units::format_byte_rate(r.bytes / r.median_s);
      else if (r.launches > 0)
        rate = units::format_seconds(r.median_s / r.launches) + " per call";
      opt_.progress(fmt::format("{:<36} {:>10}  {:>14}  {}", r.name, units::format_seconds(r.median_s), rate, r.check));
    }
    set_.records.push_back(std::move(r));
  }

 private:
  const HostMicrobenchOptions& opt_;
  spec::MeasurementSet& set_;
  int samples_ = 10;
  int warmup_ = 1;
  std::vector<std::uint64_t> flush_;
};

template <class T>
void fill_uniform(T* p, size_t n, std::uint32_t seed, double lo, double hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<T>(d(gen));
}

std::vector<size_t> sample_indices(size_t n, size_t count, std::uint32_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<size_t> idx(std::min(n, count));
  for (auto& i : idx) i = static_cast<size_t>(gen() % n);
  return idx;
}

// --- GEMM -------------------------------------------------------------------

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
  r.cls = "gemm";
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

void run_gemm(Bench& b) {
  if (!b.wants("gemm")) return;
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

// --- Streaming (STREAM copy and triad) -----------------------------------------

void run_stream(Bench& b) {
  const bool copy = b.wants("hbm_copy"), triad = b.wants("hbm_triad");
  if (!copy && !triad) return;
  const int max_log2 = b.quick() ? 26 : 28;  // 1 MiB to 64 MiB quick, to 256 MiB full
  // Every size uses the front of the same three arrays.
  const size_t max_n = (size_t{1} << max_log2) / sizeof(float);
  std::vector<float> a(max_n, 0.0f), x(max_n), y(max_n);  // a written once: no first-touch faults while timed
  fill_uniform(x.data(), max_n, 21, -1, 1);
  fill_uniform(y.data(), max_n, 22, -1, 1);
  std::vector<Case> cases;
  for (int lg = 20; lg <= max_log2; ++lg) {
    const size_t size = size_t{1} << lg;
    const size_t n = size / sizeof(float);
    const std::string tag = fmt::format("{}MiB", size >> 20);
    float* dst = a.data();
    const float* p = x.data();
    const float* q = y.data();
    if (copy) {
      Case c;
      c.run = [=] {
        for (size_t i = 0; i < n; ++i) dst[i] = p[i];
        keep(dst);
      };
      c.check = [=](Check& check) {
        for (size_t i : sample_indices(n, 256, 23)) check.compare(dst[i], p[i], 0.0);
      };
      spec::MeasurementRecord& r = c.record;
      r.name = "hbm_copy_" + tag;
      r.cls = "hbm_copy";
      r.dtype = "fp32";
      r.elements = static_cast<double>(n);
      r.bytes = 2.0 * static_cast<double>(size);
      r.algorithm = "a[i] = b[i], fp32, one loop (STREAM Copy counting: 2 x size)";
      cases.push_back(std::move(c));
    }
    if (triad) {
      Case c;
      c.run = [=] {
        for (size_t i = 0; i < n; ++i) dst[i] = p[i] + 3.0f * q[i];
        keep(dst);
      };
      c.check = [=](Check& check) {
        for (size_t i : sample_indices(n, 256, 24)) {
          const double want = static_cast<double>(p[i]) + 3.0 * q[i];
          check.compare(dst[i], want, 1e-6 * (std::fabs(p[i]) + 3.0 * std::fabs(q[i])));
        }
      };
      spec::MeasurementRecord& r = c.record;
      r.name = "hbm_triad_" + tag;
      r.cls = "hbm_triad";
      r.dtype = "fp32";
      r.elements = static_cast<double>(n);
      r.flops = 2.0 * static_cast<double>(n);
      r.bytes = 3.0 * static_cast<double>(size);
      r.algorithm = "a[i] = b[i] + s c[i], fp32, one loop (STREAM Triad counting: 3 x size)";
      cases.push_back(std::move(c));
    }
  }
  b.run(cases);
}

// --- Elementwise chain: bias + GELU + dropout -----------------------------------

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

void run_elementwise(Bench& b) {
  const bool unfused = b.wants("elementwise_unfused"), fused = b.wants("elementwise_fused");
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
      c.record.cls = "elementwise_unfused";
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
      c.record.cls = "elementwise_fused";
      c.record.bytes = 9.0 * nd + 4.0 * kBiasLen;  // x read, out and mask written
      c.record.launches = 1;
      c.record.algorithm = "one loop (bias add, GELU tanh form with Pade tanh, hash dropout p=0.1), fp32";
      cases.push_back(std::move(c));
    }
  }
  b.run(cases);
}

// --- Row-wise: softmax and layernorm ---------------------------------------------

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

void run_rowwise(Bench& b) {
  const bool softmax = b.wants("softmax"), layernorm = b.wants("layernorm");
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
        r.cls = "softmax";
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
        r.cls = "layernorm";
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

// --- Attention ---------------------------------------------------------------------

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Naive: S = Q K^T (Eigen), P = softmax(scale S) row by row, O = P V (Eigen).
void attention_naive(const float* q, const float* k, const float* v, float* o, float* s, int bh, int seq, int d,
                     float scale) {
  const size_t head = static_cast<size_t>(seq) * d;
  for (int h = 0; h < bh; ++h) {
    Eigen::Map<const RowMat> Q(q + h * head, seq, d), K(k + h * head, seq, d), V(v + h * head, seq, d);
    Eigen::Map<RowMat> S(s, seq, seq), O(o + h * head, seq, d);
    S.noalias() = Q * K.transpose();
    softmax_rows(s, s, static_cast<size_t>(seq), static_cast<size_t>(seq), scale);
    O.noalias() = S * V;
  }
}

constexpr int kBlockQ = 64;
constexpr int kBlockK = 64;

/// Tiled attention with an online softmax (FlashAttention forward, Dao et al.
/// 2022), plain C++: per block of kBlockQ queries, keys and values stream
/// through in tiles of kBlockK; running max m, running sum l and the output
/// accumulator are rescaled as each tile arrives; S never reaches memory.
void attention_flash(const float* q, const float* k, const float* v, float* o, int bh, int seq, int d, float scale) {
  const size_t head = static_cast<size_t>(seq) * d;
  std::vector<float> kt(static_cast<size_t>(d) * kBlockK), sc(kBlockK), acc(static_cast<size_t>(kBlockQ) * d);
  float m_run[kBlockQ], l_run[kBlockQ];
  for (int h = 0; h < bh; ++h) {
    const float* Q = q + h * head;
    const float* K = k + h * head;
    const float* V = v + h * head;
    float* O = o + h * head;
    for (int q0 = 0; q0 < seq; q0 += kBlockQ) {
      const int rows = std::min(kBlockQ, seq - q0);
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int i = 0; i < rows; ++i) {
        m_run[i] = -std::numeric_limits<float>::infinity();
        l_run[i] = 0;
      }
      for (int k0 = 0; k0 < seq; k0 += kBlockK) {
        const int cols = std::min(kBlockK, seq - k0);
        for (int j = 0; j < cols; ++j)
          for (int c = 0; c < d; ++c) kt[static_cast<size_t>(c) * kBlockK + j] = K[static_cast<size_t>(k0 + j) * d + c];
        for (int i = 0; i < rows; ++i) {
          const float* qi = Q + static_cast<size_t>(q0 + i) * d;
          float* s = sc.data();
          for (int j = 0; j < cols; ++j) s[j] = 0;
          for (int c = 0; c < d; ++c) {
            const float qv = qi[c] * scale;
            const float* kr = kt.data() + static_cast<size_t>(c) * kBlockK;
            for (int j = 0; j < cols; ++j) s[j] += qv * kr[j];
          }
          float m_new = m_run[i];
          for (int j = 0; j < cols; ++j) m_new = std::max(m_new, s[j]);
          const float corr = std::exp(m_run[i] - m_new);
          float sum = 0;
          for (int j = 0; j < cols; ++j) {
            s[j] = std::exp(s[j] - m_new);
            sum += s[j];
          }
          l_run[i] = l_run[i] * corr + sum;
          m_run[i] = m_new;
          float* a = acc.data() + static_cast<size_t>(i) * d;
          for (int c = 0; c < d; ++c) a[c] *= corr;
          for (int j = 0; j < cols; ++j) {
            const float p = s[j];
            const float* vr = V + static_cast<size_t>(k0 + j) * d;
            for (int c = 0; c < d; ++c) a[c] += p * vr[c];
          }
        }
      }
      for (int i = 0; i < rows; ++i) {
        const float inv = 1.0f / l_run[i];
        const float* a = acc.data() + static_cast<size_t>(i) * d;
        float* oi = O + static_cast<size_t>(q0 + i) * d;
        for (int c = 0; c < d; ++c) oi[c] = a[c] * inv;
      }
    }
  }
}

void attention_cases(std::vector<Case>& cases, bool naive, bool flash, int bh, int seq, int d) {
  const size_t qkv = static_cast<size_t>(bh) * seq * d;
  struct Data {
    std::vector<float> q, k, v, o_naive, o_flash, s;
  };
  auto dp = std::make_shared<Data>(Data{std::vector<float>(qkv), std::vector<float>(qkv), std::vector<float>(qkv),
                                        std::vector<float>(qkv, 0.f), std::vector<float>(qkv, 0.f),
                                        std::vector<float>(static_cast<size_t>(seq) * seq)});
  // |q.k| / sqrt(d) has a standard deviation near 4/3: the softmax is neither flat nor one-hot.
  fill_uniform(dp->q.data(), qkv, 51, -2, 2);
  fill_uniform(dp->k.data(), qkv, 52, -2, 2);
  fill_uniform(dp->v.data(), qkv, 53, -1, 1);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  auto run_naive = [dp, bh, seq, d, scale] {
    attention_naive(dp->q.data(), dp->k.data(), dp->v.data(), dp->o_naive.data(), dp->s.data(), bh, seq, d, scale);
    keep(dp->o_naive.data());
  };
  run_naive();  // the flash check's second opinion, even when naive is not timed
  // Four query rows of the last head against a double reference. Outputs are
  // averages of values in [-1, 1]; fp32 accumulation over seq terms stays within 1e-4.
  auto check_rows = [dp, bh, seq, d, scale](Check& check, const std::vector<float>& out) {
    const size_t off = static_cast<size_t>(bh - 1) * seq * d;
    const auto& q = dp->q;
    const auto& k = dp->k;
    const auto& v = dp->v;
    for (size_t row : sample_indices(static_cast<size_t>(seq), 4, 54)) {
      std::vector<double> sr(seq);
      double m = -INFINITY, sum = 0;
      for (int j = 0; j < seq; ++j) {
        double dot = 0;
        for (int c = 0; c < d; ++c)
          dot += static_cast<double>(q[off + row * d + c]) * k[off + static_cast<size_t>(j) * d + c];
        sr[j] = dot * scale;
        m = std::max(m, sr[j]);
      }
      for (int j = 0; j < seq; ++j) sum += sr[j] = std::exp(sr[j] - m);
      for (int c = 0; c < d; ++c) {
        double want = 0;
        for (int j = 0; j < seq; ++j) want += sr[j] / sum * v[off + static_cast<size_t>(j) * d + c];
        check.compare(out[off + row * d + c], want, 1e-4);
      }
    }
  };
  const double sd = seq, dd = d, bhd = bh;
  spec::MeasurementRecord base;
  base.dtype = "fp32";
  base.m = seq;
  base.n = d;
  base.k = seq;
  base.batch = bh;
  base.flops = 4.0 * sd * sd * dd * bhd;  // the two GEMMs (FlashAttention's convention), non-causal
  const std::string tag = fmt::format("s{}_d{}_bh{}", seq, d, bh);
  if (naive) {
    Case c;
    c.run = run_naive;
    c.check = [=](Check& check) { check_rows(check, dp->o_naive); };
    c.record = base;
    c.record.name = "attention_naive_" + tag;
    c.record.cls = "attention_naive";
    // Q, K, V read and O written; S written, read and P written by softmax, P read (fp32).
    c.record.bytes = 16.0 * sd * dd * bhd + 16.0 * sd * sd * bhd;
    c.record.launches = 3;
    c.record.algorithm = "Eigen S = Q K^T, row softmax (std::exp), Eigen O = P V; per head; non-causal";
    cases.push_back(std::move(c));
  }
  if (flash) {
    Case c;
    c.run = [dp, bh, seq, d, scale] {
      attention_flash(dp->q.data(), dp->k.data(), dp->v.data(), dp->o_flash.data(), bh, seq, d, scale);
      keep(dp->o_flash.data());
    };
    c.check = [=](Check& check) {
      check_rows(check, dp->o_flash);
      for (size_t i = 0; i < qkv; ++i) check.compare(dp->o_flash[i], dp->o_naive[i], 1e-4);  // every output
    };
    c.record = base;
    c.record.name = "attention_flash_" + tag;
    c.record.cls = "attention_flash";
    c.record.bytes = 16.0 * sd * dd * bhd;  // Q, K, V read, O written (fp32)
    c.record.launches = 1;
    c.record.algorithm = fmt::format("tiled online softmax, plain C++, Br={} Bc={}; non-causal", kBlockQ, kBlockK);
    cases.push_back(std::move(c));
  }
}

void run_attention(Bench& b) {
  const bool naive = b.wants("attention_naive"), flash = b.wants("attention_flash");
  if (!naive && !flash) return;
  std::vector<Case> cases;
  if (b.quick()) {
    for (int seq : {128, 256, 384, 512}) attention_cases(cases, naive, flash, 2, seq, 64);
  } else {
    for (int seq : {128, 256, 512, 1024, 2048}) attention_cases(cases, naive, flash, 4, seq, 64);
    for (int seq : {256, 1024}) attention_cases(cases, naive, flash, 4, seq, 128);
  }
  b.run(cases);
}

// --- Launch --------------------------------------------------------------------------

void run_launch(Bench& b) {
  if (!b.wants("launch")) return;
  std::vector<Case> cases;
  for (int calls : {10000, 100000, 1000000}) {
    Case c;
    c.run = [calls] {
      void (*volatile fn)() = empty_call;
      for (int i = 0; i < calls; ++i) fn();
    };
    c.flush = false;  // no data
    spec::MeasurementRecord& r = c.record;
    r.name = fmt::format("launch_empty_x{}", calls);
    r.cls = "launch";
    r.dtype = "fp32";  // no data; the schema wants a dtype
    r.launches = calls;
    r.algorithm = "empty out-of-line function called through a volatile pointer";
    cases.push_back(std::move(c));
  }
  b.run(cases);
}

/// The core's clock while it runs: a chain of dependent integer adds retires
/// one add per cycle on every x86 and Arm core, so adds / second = hertz
/// (the fastest of `reps` runs; /proc/cpuinfo shows a VM's nominal clock).
double measure_clock_hz(int reps) {
  double best = 0;
  for (int rep = 0; rep < reps; ++rep) {
    std::uint64_t x = 1;
    constexpr std::uint64_t kIters = 20'000'000;
    const double t0 = thread_seconds();
    for (std::uint64_t i = 0; i < kIters; ++i) {
      // Eight dependent adds; the empty asm stops the compiler merging them.
      x += i; asm volatile("" : "+r"(x));
      x += i; asm volatile("" : "+r"(x));
      x += i; asm volatile("" : "+r"(x));
      x += i; asm volatile("" : "+r"(x));
      x += i; asm volatile("" : "+r"(x));
      x += i; asm volatile("" : "+r"(x));
      x += i; asm volatile("" : "+r"(x));
      x += i; asm volatile("" : "+r"(x));
    }
    const double dt = thread_seconds() - t0;
    keep(&x);
    if (dt > 0) best = std::max(best, 8.0 * static_cast<double>(kIters) / dt);
  }
  return best;
}

std::string utc_now_iso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

}  // namespace

HostInfo host_info() {
  HostInfo h;
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 1));
    if (key == "model name" && h.cpu_name.empty()) h.cpu_name = value;
    if (key == "cpu MHz" && h.clock_hz == 0) {
      try {
        h.clock_hz = std::stod(value) * 1e6;
      } catch (...) {
      }
    }
  }
  if (h.cpu_name.empty()) h.cpu_name = "unknown CPU";
  h.cores_online = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) h.memory_bytes = static_cast<double>(pages) * static_cast<double>(page);
#ifdef _SC_LEVEL3_CACHE_SIZE
  long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (llc > 0) h.llc_bytes = static_cast<double>(llc);
#endif
  h.fp32_lanes = Eigen::internal::packet_traits<float>::size;
#ifdef EIGEN_VECTORIZE_FMA
  h.fma = true;
#endif
  return h;
}

spec::MeasurementSet run_host_microbench(const HostMicrobenchOptions& options) {
  Eigen::setNbThreads(1);
  const HostInfo info = host_info();
  spec::MeasurementSet set;
  auto& h = set.header;
  h.schema = spec::kMeasurementSchema;
  h.backend = "host";
  h.device = info.cpu_name + " (host, 1 core)";
  h.sm_count = 1;
  const double measured_clock = measure_clock_hz(options.quick ? 3 : 5);
  h.clock_hz = measured_clock > 0.2e9 && measured_clock < 10e9 ? measured_clock : info.clock_hz;
  h.memory_bytes = info.memory_bytes;
  h.runtime_version = fmt::format("Eigen {}.{}.{} ({})", EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION,
                                  EIGEN_MINOR_VERSION, simd_name());
  h.date = utc_now_iso8601();
  h.tool_version = RIDGELINE_VERSION;
  h.quick = options.quick;
  Bench b(options, set);
  run_launch(b);
  run_stream(b);
  run_gemm(b);
  run_elementwise(b);
  run_rowwise(b);
  run_attention(b);
  return set;
}

spec::HardwareSpec host_profile(const spec::MeasurementSet& set) {
  const HostInfo info = host_info();
  spec::HardwareSpec hw;
  hw.id = "host";
  hw.name = set.header.device.empty() ? info.cpu_name + " (host, 1 core)" : set.header.device;
  hw.vendor = "host";
  hw.architecture = fmt::format("host CPU, {} fp32 SIMD lanes{} ({})", info.fp32_lanes, info.fma ? ", FMA" : "",
                                simd_name());
  const double cores = std::max(1, set.header.sm_count);
  double best_copy = 0, best_gemm = 0, launch = 0;
  std::vector<double> per_call;
  for (const auto& r : set.records) {
    if (r.check == "fail") continue;
    if (r.cls == "hbm_copy" && r.bytes > 0) best_copy = std::max(best_copy, r.bytes / r.median_s);
    if (r.cls == "gemm" && r.dtype == "fp32") best_gemm = std::max(best_gemm, r.flops / r.median_s);
    if (r.cls == "launch" && r.launches > 0) per_call.push_back(r.median_s / r.launches);
  }
  if (!per_call.empty()) launch = median_of(per_call);
  const double clock = set.header.clock_hz > 0 ? set.header.clock_hz : info.clock_hz;
  // Two multiply-adds per lane per cycle: two FMA pipes (x86 since Haswell and
  // Zen 1, Arm Neoverse), or Zen's two FMUL and two FADD pipes without FMA.
  // Intel cores without FMA do half: the fitted GEMM fraction then halves.
  const double isa_peak = cores * clock * info.fp32_lanes * 4.0;
  const bool measured_peak = best_gemm > isa_peak;
  const bool no_peak = std::max(isa_peak, best_gemm) <= 0;
  const double peak = no_peak ? 1e9 : std::max(isa_peak, best_gemm);

  hw.memory_bytes = set.header.memory_bytes > 0 ? set.header.memory_bytes : info.memory_bytes;
  hw.hbm_bytes_per_s = best_copy > 0 ? best_copy : 10e9;
  hw.l2_bytes = info.llc_bytes;
  hw.sm_count = static_cast<int>(cores);
  hw.clock_hz = clock;
  hw.peak_flop_per_s[static_cast<int>(spec::Peak::kFp32)] = peak;
  hw.peak_flop_per_s[static_cast<int>(spec::Peak::kBf16)] = peak;
  hw.launch_overhead_s = launch;
  hw.interconnect.gpus_per_node = 1;

  const std::string from = set.source_file.empty() ? std::string("this run") : set.source_file;
  hw.sources["memory.capacity"] = "physical RAM (sysconf _SC_PHYS_PAGES x _SC_PAGESIZE)";
  hw.sources["memory.hbm_bandwidth"] =
      best_copy > 0 ? fmt::format("measured: best hbm_copy record of {} (one core, STREAM counting 2 x size)", from)
                    : "assumption: no hbm_copy record; 10 GB/s placeholder";
  if (hw.l2_bytes > 0) hw.sources["memory.l2_cache"] = "last-level cache as the OS reports it (sysconf)";
  hw.sources["compute.sm_count"] = "cores used by the host microbenchmarks (single-threaded: the profile is per core)";
  if (clock > 0)
    hw.sources["compute.boost_clock"] = fmt::format(
        "measured: a chain of dependent integer adds (one per cycle), fastest of several runs; /proc/cpuinfo "
        "'cpu MHz' says {:.3g} GHz",
        info.clock_hz / 1e9);
  hw.sources["compute.peak.fp32"] =
      no_peak ? "assumption: 1 GFLOP/s placeholder (no fp32 GEMM measured and no clock readable)"
      : measured_peak
          ? fmt::format("measured: best fp32 GEMM of {} ({}), above the estimate of {} ({} core x {:.3g} GHz x "
                        "{} fp32 lanes x 4 FLOP per lane per cycle)",
                        from, units::format_flop_rate(best_gemm), units::format_flop_rate(isa_peak),
                        static_cast<int>(cores), clock / 1e9, info.fp32_lanes)
          : fmt::format("derived: {} core x {:.3g} GHz x {} fp32 lanes ({}) x 4 FLOP per lane per cycle (two "
                        "multiply-adds per cycle: two FMA pipes, or AMD Zen's two FMUL and two FADD pipes; Intel "
                        "cores without FMA do half)",
                        static_cast<int>(cores), clock / 1e9, info.fp32_lanes, simd_name());
  hw.sources["compute.peak.bf16"] = "set equal to fp32: the host has no bf16 units; the loader requires a bf16 peak";
  hw.sources["compute.launch_overhead"] =
      per_call.empty() ? "none measured" : fmt::format("measured: median empty out-of-line call of {}", from);
  return hw;
}

std::string hardware_yaml(const spec::HardwareSpec& hw) {
  auto q = [](const std::string& s) {  // YAML double-quoted: quotes, backslashes and control characters escaped
    std::string out = "\"";
    for (char c : s) {
      const unsigned char u = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        out.push_back('\\');
        out.push_back(c);
      } else if (u < 0x20 || u == 0x7f) {
        out += fmt::format("\\x{:02x}", u);
      } else {
        out.push_back(c);
      }
    }
    return out + "\"";
  };
  // Enough digits that reading back changes nothing that matters (4 significant).
  auto num = [](double v) { return fmt::format("{:.4g}", v); };
  std::string y;
  y += fmt::format("# Hardware profile: {}. Written by ridgeline microbench --host --profile-output.\n", hw.name);
  y += "# One CPU core as a \"GPU\": every figure says under sources: how it was obtained.\n";
  y += fmt::format("name: {}\n", q(hw.name));
  y += fmt::format("vendor: {}\n", hw.vendor.empty() ? "host" : hw.vendor);
  if (!hw.architecture.empty()) y += fmt::format("architecture: {}\n", q(hw.architecture));
  y += "memory:\n";
  y += fmt::format("  capacity: {} GiB\n", num(hw.memory_bytes / units::kGiB));
  y += fmt::format("  hbm_bandwidth: {} GB/s\n", num(hw.hbm_bytes_per_s / 1e9));
  if (hw.l2_bytes > 0) y += fmt::format("  l2_cache: {} MiB\n", num(hw.l2_bytes / units::kMiB));
  y += "compute:\n";
  y += fmt::format("  sm_count: {}\n", hw.sm_count);
  if (hw.clock_hz > 0) y += fmt::format("  boost_clock: {} GHz\n", num(hw.clock_hz / 1e9));
  if (hw.smem_per_sm_bytes > 0) y += fmt::format("  smem_per_sm: {} KiB\n", num(hw.smem_per_sm_bytes / units::kKiB));
  if (hw.sram_bytes_per_s > 0) y += fmt::format("  sram_bandwidth: {} GB/s\n", num(hw.sram_bytes_per_s / 1e9));
  y += "  peak:\n";
  for (int i = 0; i < spec::kPeakCount; ++i)
    if (hw.peak_flop_per_s[i] > 0)
      y += fmt::format("    {}: {} GFLOP/s\n", spec::kPeakNames[i], num(hw.peak_flop_per_s[i] / 1e9));
  if (hw.launch_overhead_s > 0) y += fmt::format("  launch_overhead: {} ns\n", num(hw.launch_overhead_s * 1e9));
  y += "interconnect:\n";
  y += fmt::format("  gpus_per_node: {}\n", hw.interconnect.gpus_per_node);
  if (!hw.sources.empty()) {
    y += "sources:\n";
    for (const auto& [k, v] : hw.sources) y += fmt::format("  {}: {}\n", k, q(v));
  }
  return y;
}

}  // namespace ridgeline::calibrate
