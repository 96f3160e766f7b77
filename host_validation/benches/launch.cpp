// Launch: an empty out-of-line call through a volatile pointer, 10^4 to 10^6
// times per sample, the host's analogue of an empty kernel. launches = the
// calls in one sample; median_s covers all of them; flops = bytes = 0.
#include <fmt/format.h>

#include "benches/benches.hpp"
#include "harness/suite.hpp"

namespace ridgeline::host_bench {

namespace {

/// An empty out-of-line call: the host's "empty kernel".
__attribute__((noinline)) void empty_call() { asm volatile(""); }

}  // namespace

void run_launch(Suite& b) {
  if (!b.wants(spec::MeasurementClass::kLaunch)) return;
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
    r.cls = spec::MeasurementClass::kLaunch;
    r.dtype = "fp32";  // no data; the schema wants a dtype
    r.launches = calls;
    r.algorithm = "empty out-of-line function called through a volatile pointer";
    cases.push_back(std::move(c));
  }
  b.run(cases);
}

}  // namespace ridgeline::host_bench
