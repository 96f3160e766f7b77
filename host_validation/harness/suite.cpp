#include "harness/suite.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "harness/cpuinfo.hpp"
#include "harness/timer.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::host_bench {

Suite::Suite(const HostMicrobenchOptions& o, spec::MeasurementSet& set) : opt_(o), set_(set) {
  samples_ = o.samples > 0 ? o.samples : (o.quick ? 10 : 20);
  warmup_ = o.quick ? 1 : 2;
  double flush = o.flush_bytes;
  if (flush <= 0) {
    const double llc = host_info().llc_bytes;
    flush = std::clamp(2.0 * llc, 32.0 * units::kMiB, (o.quick ? 64.0 : 256.0) * units::kMiB);
  }
  flush_.assign(static_cast<size_t>(flush / sizeof(std::uint64_t)), 1);
}

bool Suite::wants(spec::MeasurementClass cls) const {
  return opt_.classes.empty() || std::find(opt_.classes.begin(), opt_.classes.end(), cls) != opt_.classes.end();
}

void Suite::flush() {
  std::uint64_t sum = 0;
  for (size_t i = 0; i < flush_.size(); i += 8) sum += flush_[i];
  flush_[0] = sum & 1;  // a store the compiler cannot drop
  keep(flush_.data());
}

void Suite::run(std::vector<Case>& cases) {
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

void Suite::add(spec::MeasurementRecord r, const Timing& t, const Check& check) {
  r.median_s = t.median_s;
  r.min_s = t.min_s;
  r.samples = t.samples;
  r.check = check.verdict();
  if (opt_.progress) {
    std::string rate;
    if (r.flops > 0 && spec::measurement_class_info(r.cls).compute_bound)
      rate = units::format_flop_rate(r.flops / r.median_s);
    else if (r.bytes > 0)
      rate = units::format_byte_rate(r.bytes / r.median_s);
    else if (r.launches > 0)
      rate = units::format_seconds(r.median_s / r.launches) + " per call";
    opt_.progress(fmt::format("{:<36} {:>10}  {:>14}  {}", r.name, units::format_seconds(r.median_s), rate, r.check));
  }
  set_.records.push_back(std::move(r));
}

}  // namespace ridgeline::host_bench
