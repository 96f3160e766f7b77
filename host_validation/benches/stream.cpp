// Streaming: STREAM Copy (a[i] = b[i]) and Triad (a[i] = b[i] + s c[i]),
// fp32, one loop, every power of two from 1 MiB; bytes by STREAM counting
// (2 and 3 x the array size).
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <vector>

#include "benches/benches.hpp"
#include "harness/random.hpp"
#include "harness/suite.hpp"
#include "harness/timer.hpp"

namespace ridgeline::host_bench {

void run_stream(Suite& b) {
  const bool copy = b.wants(spec::MeasurementClass::kHbmCopy);
  const bool triad = b.wants(spec::MeasurementClass::kHbmTriad);
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
      r.cls = spec::MeasurementClass::kHbmCopy;
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
      r.cls = spec::MeasurementClass::kHbmTriad;
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

}  // namespace ridgeline::host_bench
