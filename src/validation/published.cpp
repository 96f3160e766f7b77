#include "ridgeline/validation/published.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>

#include "ridgeline/validation/mapping.hpp"
#include "ridgeline/validation/predict.hpp"

namespace ridgeline::validation {

namespace {

/// The GPU's name as printed, without the parenthesised detail.
std::string short_gpu(std::string_view s) {
  const size_t cut = s.find_first_of("(,");
  std::string out(cut == std::string_view::npos ? s : s.substr(0, cut));
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

/// One row's result, predicted or skipped.
PublishedResult predict(const spec::PublishedRow& row, const ProfileSet& profiles, const PredictOptions& opt) {
  PublishedResult r;
  r.id = row.id;
  r.group = row.group;
  r.category = row.category;
  r.gpu = row.hardware.text("gpu");
  auto skipped = [&](Skip s) {
    r.skip_reason = std::move(s.reason);
    return r;
  };
  if (auto why = out_of_scope(row)) return skipped(*why);
  if (r.gpu.empty()) return skipped(missing("hardware", "gpu"));
  const spec::HardwareSpec* hw = profiles.for_gpu(r.gpu);
  if (!hw) return skipped(Skip{fmt::format("no shipped profile for GPU '{}'", short_gpu(r.gpu))});
  r.profile = hw->id;
  auto p = predict_row(row, *hw, opt);
  if (!p) return skipped(p.skip());
  if (!std::isfinite(p->primary.predicted) || p->primary.predicted <= 0)
    return skipped(Skip{fmt::format("prediction of {} is not a positive number", p->primary.quantity)});
  r.predicted = true;
  r.primary = std::move(p->primary);
  r.secondary = std::move(p->secondary);
  r.config = std::move(p->config);
  r.assumptions = std::move(p->assumptions);
  r.fits = p->fits;
  r.precision = std::move(p->precision);
  return r;
}

}  // namespace

std::string PublishedResult::subset() const {
  std::string s = profile.empty() ? short_gpu(gpu) : profile;
  if (!precision.empty()) s += " " + precision;
  return s;
}

ErrorStats summarize(const std::vector<const PublishedResult*>& rows) {
  std::vector<const Comparison*> predicted;
  for (const auto* r : rows)
    if (r->predicted) predicted.push_back(&r->primary);
  return summarize(static_cast<int>(rows.size()), predicted);
}

PublishedReport validate_published(const spec::PublishedFile& file, const ProfileSet& profiles,
                                   const PublishedOptions& opt) {
  PublishedReport rep;
  rep.file = file.path;
  rep.group_filter = opt.group;
  rep.fit_without_group = opt.fit_without_group;
  // The view in po refers to opt.fit_without_group, alive for the whole loop.
  PredictOptions po;
  po.use_calibration = opt.use_calibration;
  po.fit_without_group = opt.fit_without_group;
  for (const auto& row : file.rows)
    if (opt.group.empty() || row.group == opt.group) rep.results.push_back(predict(row, profiles, po));
  std::vector<const PublishedResult*> all;
  std::vector<std::string> groups;
  std::map<std::string, int> reasons;
  for (const auto& r : rep.results) {
    all.push_back(&r);
    if (std::find(groups.begin(), groups.end(), r.group) == groups.end()) groups.push_back(r.group);
    if (!r.predicted) ++reasons[r.skip_reason];
    if (r.predicted && !r.fits) ++rep.predicted_not_fitting;
  }
  rep.overall = summarize(all);
  for (const auto& g : groups) {
    std::vector<const PublishedResult*> v;
    for (const auto* r : all)
      if (r->group == g) v.push_back(r);
    rep.by_group.push_back({g, summarize(v)});
    // Subsets of the predicted rows only: a skipped row has no precision to file it under.
    std::vector<std::string> subsets;
    for (const auto* r : v)
      if (r->predicted && std::find(subsets.begin(), subsets.end(), r->subset()) == subsets.end())
        subsets.push_back(r->subset());
    if (subsets.size() < 2) continue;
    for (const auto& sub : subsets) {
      std::vector<const PublishedResult*> in;
      for (const auto* r : v)
        if (r->predicted && r->subset() == sub) in.push_back(r);
      rep.by_subset.push_back({g, sub, summarize(in)});
    }
  }
  for (const spec::PublishedCategory cat : spec::published_categories()) {
    std::vector<const PublishedResult*> v;
    for (const auto* r : all)
      if (r->category == cat) v.push_back(r);
    if (!v.empty()) rep.by_category.push_back({std::string(spec::name(cat)), summarize(v)});
  }
  rep.skip_reasons.assign(reasons.begin(), reasons.end());
  std::stable_sort(rep.skip_reasons.begin(), rep.skip_reasons.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return rep;
}

PublishedReport validate_published(const spec::PublishedFile& file, const PublishedOptions& opt) {
  return validate_published(file, ProfileSet::load(opt.profiles_dir), opt);
}

LeaveOneOutReport leave_one_group_out(const spec::PublishedFile& file, const ProfileSet& profiles,
                                      const PublishedOptions& opt) {
  PublishedOptions all = opt;
  all.fit_without_group.clear();
  const PublishedReport in = validate_published(file, profiles, all);
  LeaveOneOutReport out;
  out.file = in.file;
  out.group_filter = opt.group;
  std::vector<PublishedResult> in_rows, out_rows;  // the groups with predicted rows, pooled
  for (const auto& g : in.by_group) {
    if (g.stats.predicted == 0) continue;
    for (const auto& r : in.results)
      if (r.group == g.name) in_rows.push_back(r);
    PublishedOptions o = opt;
    o.group = g.name;
    o.fit_without_group = g.name;  // owned by o for the whole evaluation
    PublishedReport left = validate_published(file, profiles, o);
    out.groups.push_back({g.name, g.stats, left.overall});
    for (auto& r : left.results) out_rows.push_back(std::move(r));
  }
  auto pooled = [](const std::vector<PublishedResult>& v) {
    std::vector<const PublishedResult*> p;
    for (const auto& r : v) p.push_back(&r);
    return summarize(p);
  };
  out.in_sample = pooled(in_rows);
  out.left_out = pooled(out_rows);
  return out;
}

LeaveOneOutReport leave_one_group_out(const spec::PublishedFile& file, const PublishedOptions& opt) {
  return leave_one_group_out(file, ProfileSet::load(opt.profiles_dir), opt);
}

}  // namespace ridgeline::validation
