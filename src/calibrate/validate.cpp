#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <random>
#include <utility>

#include "ridgeline/calibrate/calibrate.hpp"

namespace ridgeline::calibrate {

namespace {

/// A (class, dtype) group; groups go in name order, class first.
using GroupKey = std::pair<spec::MeasurementClass, std::string>;
struct GroupKeyLess {
  bool operator()(const GroupKey& a, const GroupKey& b) const {
    if (a.first != b.first) return spec::MeasurementClassNameLess{}(a.first, b.first);
    return a.second < b.second;
  }
};

GroupStats stats(std::optional<spec::MeasurementClass> cls, const std::string& dtype,
                 const std::vector<RecordError>& errs) {
  GroupStats g;
  g.cls = cls;
  g.dtype = dtype;
  g.records = static_cast<int>(errs.size());
  std::vector<double> cal, def;
  for (const auto& e : errs) {
    cal.push_back(e.error_pct);
    def.push_back(e.default_error_pct);
  }
  g.median_abs_pct = percentile_abs(cal, 0.5);
  g.p90_abs_pct = percentile_abs(cal, 0.9);
  g.default_median_abs_pct = percentile_abs(def, 0.5);
  g.default_p90_abs_pct = percentile_abs(def, 0.9);
  return g;
}

}  // namespace

ValidationReport validate(const spec::MeasurementSet& set, const spec::HardwareSpec& hw, double holdout_frac,
                          std::uint64_t seed) {
  if (!(holdout_frac >= 0.0 && holdout_frac < 1.0))
    throw support::SpecError({}, "holdout", fmt::format("expected a fraction from 0 to below 1, got {}", holdout_frac));
  ValidationReport rep;
  rep.device = set.header.device;
  rep.profile = hw.source_file.empty() ? hw.name : hw.source_file;
  rep.measurements = set.source_file;
  rep.holdout_frac = holdout_frac;
  rep.seed = seed;
  rep.in_sample = holdout_frac == 0.0;

  // Deterministic split: groups (class, dtype) in name order, each shuffled by
  // Fisher-Yates driven by one mt19937_64 (whose output the standard fixes).
  std::map<GroupKey, std::vector<size_t>, GroupKeyLess> groups;
  for (size_t i = 0; i < set.records.size(); ++i) {
    const auto& r = set.records[i];
    if (r.check == "fail" || r.throttled || !(r.median_s > 0)) continue;  // as fit leaves them out
    groups[{r.cls, r.dtype}].push_back(i);
  }
  std::mt19937_64 gen(seed);
  std::vector<bool> held(set.records.size(), false);
  for (auto& [key, idx] : groups) {
    for (size_t i = idx.size(); i > 1; --i) std::swap(idx[i - 1], idx[gen() % i]);
    const int n = static_cast<int>(idx.size());
    int k = static_cast<int>(std::lround(holdout_frac * n));
    k = std::clamp(k, 0, std::max(0, n - min_fit_records(key.first, key.second)));
    for (int j = 0; j < k; ++j) held[idx[j]] = true;
  }

  spec::MeasurementSet train;
  train.source_file = set.source_file;
  train.header = set.header;
  std::vector<const spec::MeasurementRecord*> test;
  for (size_t i = 0; i < set.records.size(); ++i) {
    const auto& r = set.records[i];
    if (held[i]) {
      test.push_back(&r);
    } else {
      train.records.push_back(r);
      if (rep.in_sample && r.check != "fail" && !r.throttled && r.median_s > 0) test.push_back(&r);
    }
  }
  rep.fit = fit(train, hw);
  rep.train_records = rep.fit.records_used;
  rep.test_records = static_cast<int>(test.size());

  const RecordModel calibrated = record_model(hw, &rep.fit.efficiency);
  const RecordModel uncalibrated = record_model(hw, nullptr);
  std::map<GroupKey, std::vector<RecordError>, GroupKeyLess> by_group;
  for (const auto* r : test) {
    RecordError e;
    e.name = r->name;
    e.cls = r->cls;
    e.dtype = r->dtype;
    e.measured_s = r->median_s;
    e.predicted_s = predict_record(*r, calibrated);
    e.error_pct = error_pct(e.predicted_s, e.measured_s);
    e.default_predicted_s = predict_record(*r, uncalibrated);
    e.default_error_pct = error_pct(e.default_predicted_s, e.measured_s);
    rep.records.push_back(e);
    by_group[{e.cls, e.dtype}].push_back(e);
  }
  for (const auto& [key, errs] : by_group) rep.groups.push_back(stats(key.first, key.second, errs));
  rep.overall = stats(std::nullopt, "", rep.records);
  rep.worst = rep.records;
  std::stable_sort(rep.worst.begin(), rep.worst.end(), [](const RecordError& a, const RecordError& b) {
    return std::fabs(a.error_pct) > std::fabs(b.error_pct);
  });
  if (rep.worst.size() > 10) rep.worst.resize(10);
  return rep;
}

std::vector<spec::HeldoutResidual> heldout_residuals(const ValidationReport& r) {
  std::vector<spec::HeldoutResidual> out;
  if (r.in_sample) return out;
  std::vector<std::string> classes;
  for (const auto& e : r.records) {
    const std::string c(spec::name(e.cls));
    if (std::find(classes.begin(), classes.end(), c) == classes.end()) classes.push_back(c);
  }
  for (const auto& c : classes) {
    std::vector<double> v;
    for (const auto& e : r.records)
      if (spec::name(e.cls) == c && e.measured_s > 0 && e.predicted_s > 0) v.push_back(std::log(e.predicted_s / e.measured_s));
    if (v.size() < 2) continue;
    double m = 0;
    for (double x : v) m += x;
    m /= v.size();
    double ss = 0;
    for (double x : v) ss += (x - m) * (x - m);
    out.push_back({c, static_cast<int>(v.size()), m, std::sqrt(ss / (v.size() - 1))});
  }
  return out;
}

}  // namespace ridgeline::calibrate
