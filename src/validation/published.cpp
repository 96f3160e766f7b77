#include "ridgeline/validation/published.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <map>

#include "ridgeline/calibrate/runs.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/uncertainty/interval.hpp"
#include "ridgeline/uncertainty/scale_prior.hpp"
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
  r.memory_measured = row.category == spec::PublishedCategory::kEndToEndTraining && row.measured.has("peak_memory_gib");
  r.pooled = spec::parse_published_bool(row.source.text("interval_pool")).value_or(true);
  if (row.category == spec::PublishedCategory::kEndToEndTraining)
    r.framework = spec::framework(framework_of(row).index).id;
  auto skipped = [&](Skip s) {
    r.skip_reason = std::move(s.reason);
    return r;
  };
  if (auto why = out_of_scope(row)) return skipped(*why);
  if (r.gpu.empty()) return skipped(missing("hardware", "gpu"));
  const spec::HardwareSpec* hw = profiles.for_gpu(r.gpu);
  if (!hw) return skipped(Skip{fmt::format("no shipped profile for GPU '{}'", short_gpu(r.gpu))});
  r.profile = hw->id;
  r.generation = std::string(spec::name(hw->generation));
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
  r.memory = std::move(p->memory);
  r.memory_kind = std::move(p->memory_kind);
  r.precision = std::move(p->precision);
  r.run = p->run;
  r.kernel = p->kernel;
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

MemoryStats summarize_memory(const std::vector<const PublishedResult*>& rows) {
  MemoryStats m;
  std::vector<const Comparison*> compared;
  std::vector<double> signed_pct;
  int measured = 0;
  for (const auto* r : rows) {
    if (!r->memory_measured) continue;
    ++measured;
    if (!r->memory) continue;
    compared.push_back(&*r->memory);
    signed_pct.push_back(r->memory->error_pct);
    if (!r->fits) ++m.not_fitting;
  }
  m.stats = summarize(measured, compared);
  m.median_error_pct = percentile(std::move(signed_pct), 0.5);
  return m;
}

std::vector<NamedStats> split_by(const std::vector<const PublishedResult*>& rows,
                                 std::string (*key)(const PublishedResult&), const std::vector<std::string>& order) {
  std::vector<std::string> present, names;
  for (const auto* r : rows)
    if (std::string k = key(*r); !k.empty() && std::find(present.begin(), present.end(), k) == present.end())
      present.push_back(std::move(k));
  for (const auto& k : order)
    if (std::find(present.begin(), present.end(), k) != present.end()) names.push_back(k);
  for (const auto& k : present)
    if (std::find(names.begin(), names.end(), k) == names.end()) names.push_back(k);
  std::vector<NamedStats> out;
  for (const auto& name : names) {
    std::vector<const PublishedResult*> in;
    for (const auto* r : rows)
      if (key(*r) == name) in.push_back(r);
    out.push_back({name, summarize(in)});
  }
  return out;
}

namespace {

bool end_to_end(const PublishedResult& r) { return r.category == spec::PublishedCategory::kEndToEndTraining; }

ErrorStats summarize_end_to_end(const std::vector<const PublishedResult*>& rows) {
  std::vector<const PublishedResult*> v;
  for (const auto* r : rows)
    if (end_to_end(*r)) v.push_back(r);
  return summarize(v);
}

}  // namespace

std::vector<NamedStats> split_by_framework(const std::vector<const PublishedResult*>& rows) {
  std::vector<std::string> order;
  for (const auto& f : spec::frameworks()) order.push_back(f.id);
  return split_by(
      rows, [](const PublishedResult& r) { return end_to_end(r) ? r.framework : std::string(); }, order);
}

std::vector<NamedStats> split_by_generation(const std::vector<const PublishedResult*>& rows) {
  std::vector<std::string> order;
  for (int g = 0; g < spec::kGenerationCount; ++g) order.emplace_back(spec::name(static_cast<spec::Generation>(g)));
  return split_by(
      rows,
      [](const PublishedResult& r) {
        if (!end_to_end(r)) return std::string();
        return r.generation.empty() ? std::string("no profile") : r.generation;
      },
      order);
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
  po.models_dir = (std::filesystem::path(opt.profiles_dir).parent_path() / "models").string();
  for (const auto& row : file.rows)
    if (opt.group.empty() || row.group == opt.group) rep.results.push_back(predict(row, profiles, po));
  std::vector<const PublishedResult*> all;
  std::map<std::string, int> reasons;
  for (const auto& r : rep.results) {
    all.push_back(&r);
    if (!r.predicted) ++reasons[r.skip_reason];
    if (r.predicted && !r.fits) ++rep.predicted_not_fitting;
  }
  rep.overall = summarize(all);
  rep.by_group = split_by(all, [](const PublishedResult& r) { return r.group; });
  for (const auto& g : rep.by_group) {
    std::vector<const PublishedResult*> v;
    for (const auto* r : all)
      if (r->group == g.name) v.push_back(r);
    // Subsets of the predicted rows only: a skipped row has no precision to file it under.
    const auto subsets =
        split_by(v, [](const PublishedResult& r) { return r.predicted ? r.subset() : std::string(); });
    if (subsets.size() < 2) continue;
    for (const auto& sub : subsets) rep.by_subset.push_back({g.name, sub.name, sub.stats});
  }
  rep.by_category = split_by(
      all, [](const PublishedResult& r) { return std::string(spec::name(r.category)); },
      spec::published_category_names());
  rep.end_to_end = summarize_end_to_end(all);
  rep.by_framework = split_by_framework(all);
  rep.by_generation = split_by_generation(all);
  rep.memory = summarize_memory(all);
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
  auto pointers = [](const std::vector<PublishedResult>& v) {
    std::vector<const PublishedResult*> p;
    for (const auto& r : v) p.push_back(&r);
    return p;
  };
  const auto in_p = pointers(in_rows), out_p = pointers(out_rows);
  out.in_sample = summarize(in_p);
  out.left_out = summarize(out_p);
  out.end_to_end = {std::string(spec::name(spec::PublishedCategory::kEndToEndTraining)), summarize_end_to_end(in_p),
                    summarize_end_to_end(out_p)};
  // The same rows both ways, so the same lines: each in-sample line beside its left-out one.
  auto beside = [&](std::vector<NamedStats> (*split)(const std::vector<const PublishedResult*>&)) {
    const auto in = split(in_p), left = split(out_p);
    std::vector<LeaveOneOutGroup> lines;
    for (const auto& i : in)
      for (const auto& o : left)
        if (o.name == i.name) lines.push_back({i.name, i.stats, o.stats});
    return lines;
  };
  out.by_framework = beside(split_by_framework);
  out.by_generation = beside(split_by_generation);
  out.left_out_rows = std::move(out_rows);
  return out;
}

LeaveOneOutReport leave_one_group_out(const spec::PublishedFile& file, const PublishedOptions& opt) {
  return leave_one_group_out(file, ProfileSet::load(opt.profiles_dir), opt);
}

AnchoredReport anchored(const std::vector<PublishedResult>& rows, int k, const uncertainty::IntervalModel& model) {
  AnchoredReport out;
  out.k = std::max(1, k);
  // The stacks, in order of first appearance.
  struct Stack {
    std::string group, profile, framework;
    std::vector<const PublishedResult*> runs;
  };
  std::vector<Stack> stacks;
  for (const auto& r : rows) {
    if (!r.predicted || r.category != spec::PublishedCategory::kEndToEndTraining || !r.run) continue;
    auto it = std::find_if(stacks.begin(), stacks.end(), [&](const Stack& s) {
      return s.group == r.group && s.profile == r.profile && s.framework == r.framework;
    });
    if (it == stacks.end()) it = stacks.insert(stacks.end(), Stack{r.group, r.profile, r.framework, {}});
    it->runs.push_back(&r);
  }
  // Each group's other runs, unanchored and anchored (owned here: the
  // statistics take pointers).
  struct Kept {
    std::vector<Comparison> plain, anchored;
    int stacks = 0, anchors = 0, interval_rows = 0, interval_covered = 0;
  };
  std::vector<std::string> order;
  std::map<std::string, Kept> by_group;
  Kept all;
  for (auto& s : stacks) {
    if (static_cast<int>(s.runs.size()) <= out.k) continue;
    std::stable_sort(s.runs.begin(), s.runs.end(), [](const PublishedResult* a, const PublishedResult* b) {
      return a->run->gpus != b->run->gpus ? a->run->gpus < b->run->gpus : a->id < b->id;
    });
    // The stack's scale as calibrate --runs fits it (calibrate::fit_runs):
    // the anchors' times, a rate's as its inverse (only ratios matter).
    std::vector<calibrate::RunPoint> anchors;
    for (int i = 0; i < out.k; ++i) {
      const Comparison& c = s.runs[i]->primary;
      calibrate::RunPoint pt;
      pt.name = s.runs[i]->id;
      pt.gpu = s.profile;
      pt.predicted_step_s = c.higher_is_faster ? 1 / c.predicted : c.predicted;
      pt.measured_step_s = c.higher_is_faster ? 1 / c.measured : c.measured;
      pt.gpus = static_cast<double>(s.runs[i]->run->gpus);
      pt.params = s.runs[i]->run->params;
      anchors.push_back(std::move(pt));
    }
    // The prior from the published residuals with this group's own left out.
    const uncertainty::ScalePrior prior = uncertainty::scale_prior(model.rows(), s.group);
    const spec::StackCorrection fitted =
        calibrate::fit_runs(anchors, "", prior.valid() ? &prior : nullptr).stacks.front().correction;
    const double scale = fitted.time_scale;
    if (std::find(order.begin(), order.end(), s.group) == order.end()) order.push_back(s.group);
    Kept& g = by_group[s.group];
    for (Kept* x : {&g, &all}) ++x->stacks, x->anchors += out.k;
    for (size_t i = out.k; i < s.runs.size(); ++i) {
      const Comparison& c = s.runs[i]->primary;
      // The stack's time scale multiplies the predicted time (divides a rate).
      const double scaled = c.higher_is_faster ? c.predicted / scale : c.predicted * scale;
      const Comparison a = compare(c.quantity, c.unit, c.measured, scaled, c.higher_is_faster);
      for (Kept* x : {&g, &all}) x->plain.push_back(c), x->anchored.push_back(a);
      // The anchored 80% interval, drawn with the group's own residuals left out.
      uncertainty::RunTraits t = *s.runs[i]->run;
      t.stack = &fitted;
      t.calibration = nullptr;  // the profiles the rows were predicted with may be gone
      const uncertainty::Interval iv = model.run_interval(t, uncertainty::kDefaultLevel, s.group);
      if (!iv.valid()) continue;
      const double time_pred = c.higher_is_faster ? 1 / scaled : scaled;
      const double time_meas = c.higher_is_faster ? 1 / c.measured : c.measured;
      const bool inside = time_meas >= iv.time_lo(time_pred) && time_meas <= iv.time_hi(time_pred);
      for (Kept* x : {&g, &all}) ++x->interval_rows, x->interval_covered += inside ? 1 : 0;
    }
  }
  auto stats = [](const std::vector<Comparison>& v) {
    std::vector<const Comparison*> p;
    for (const auto& c : v) p.push_back(&c);
    return summarize(static_cast<int>(v.size()), p);
  };
  auto fill = [&](AnchoredGroup& o, const std::string& name, const Kept& x) {
    o.name = name;
    o.stacks = x.stacks;
    o.anchors = x.anchors;
    o.unanchored = stats(x.plain);
    o.anchored = stats(x.anchored);
    o.interval_rows = x.interval_rows;
    o.interval_covered = x.interval_covered;
  };
  for (const auto& name : order) fill(out.groups.emplace_back(), name, by_group[name]);
  fill(out.all, "all", all);
  return out;
}

}  // namespace ridgeline::validation
