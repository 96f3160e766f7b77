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
PublishedResult predict(const spec::PublishedRow& row, const ProfileSet& profiles, bool use_calibration) {
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
  auto p = predict_row(row, *hw, use_calibration);
  if (!p) return skipped(p.skip());
  if (!std::isfinite(p->primary.predicted) || p->primary.predicted <= 0)
    return skipped(Skip{fmt::format("prediction of {} is not a positive number", p->primary.quantity)});
  r.predicted = true;
  r.primary = std::move(p->primary);
  r.secondary = std::move(p->secondary);
  r.config = std::move(p->config);
  r.assumptions = std::move(p->assumptions);
  r.fits = p->fits;
  return r;
}

}  // namespace

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
  for (const auto& row : file.rows)
    if (opt.group.empty() || row.group == opt.group) rep.results.push_back(predict(row, profiles, opt.use_calibration));
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

}  // namespace ridgeline::validation
