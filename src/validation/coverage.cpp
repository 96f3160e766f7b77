#include "ridgeline/validation/coverage.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "ridgeline/spec/framework.hpp"

namespace ridgeline::validation {

std::vector<uncertainty::Residual> residuals_of(const std::vector<PublishedResult>& rows) {
  std::vector<uncertainty::Residual> out;
  for (const auto& r : rows) {
    if (!r.predicted || (!r.run && !r.kernel) || !r.pooled) continue;
    const Comparison& c = r.primary;
    if (!(c.measured > 0) || !(c.predicted > 0)) continue;
    uncertainty::Residual x;
    x.id = r.id;
    x.group = r.group;
    x.kernel = !r.run.has_value();
    if (r.run) x.run = *r.run;
    if (r.kernel) x.kernel_traits = *r.kernel;
    x.log_residual = c.higher_is_faster ? std::log(c.measured / c.predicted) : std::log(c.predicted / c.measured);
    out.push_back(std::move(x));
  }
  return out;
}

namespace {

CoverageLine line_of(const std::string& name, const std::vector<const uncertainty::Residual*>& rows,
                     const uncertainty::IntervalModel& model, const std::vector<double>& levels) {
  CoverageLine l;
  l.name = name;
  l.rows = static_cast<int>(rows.size());
  for (double level : levels) {
    int in = 0, fell = 0;
    std::vector<double> widths;
    for (const auto* x : rows) {
      const uncertainty::Interval iv = x->kernel ? model.kernel_interval(x->kernel_traits, level, x->group)
                                                 : model.run_interval(x->run, level, x->group);
      if (!iv.valid()) continue;  // no interval: not covered
      const double ratio = std::exp(-x->log_residual);  // measured / predicted time
      if (ratio >= iv.lo * (1 - 1e-12) && ratio <= iv.hi * (1 + 1e-12)) ++in;
      if (iv.fallback) ++fell;
      widths.push_back((iv.hi - iv.lo) * 100);
    }
    l.covered.push_back(rows.empty() ? 0.0 : static_cast<double>(in) / rows.size());
    l.median_width_pct.push_back(percentile(widths, 0.5));
    l.fallbacks.push_back(fell);
  }
  return l;
}

}  // namespace

CoverageReport coverage_of(const std::vector<uncertainty::Residual>& residuals, const std::vector<double>& levels) {
  const uncertainty::IntervalModel model(residuals);
  CoverageReport rep;
  rep.levels = levels;
  auto select = [&](const std::function<bool(const uncertainty::Residual&)>& in) {
    std::vector<const uncertainty::Residual*> v;
    for (const auto& x : residuals)
      if (in(x)) v.push_back(&x);
    return v;
  };
  rep.overall = line_of("all rows", select([](const auto&) { return true; }), model, levels);
  rep.end_to_end = line_of("all end-to-end", select([](const auto& x) { return !x.kernel; }), model, levels);
  for (std::size_t f = 0; f < spec::frameworks().size(); ++f) {
    auto v = select([f](const auto& x) { return !x.kernel && x.run.framework == f; });
    if (!v.empty()) rep.by_framework.push_back(line_of(spec::frameworks()[f].id, v, model, levels));
  }
  for (int g = 0; g < spec::kGenerationCount; ++g) {
    const auto gen = static_cast<spec::Generation>(g);
    auto v = select([gen](const auto& x) { return !x.kernel && x.run.generation == gen; });
    if (!v.empty()) rep.by_generation.push_back(line_of(std::string(spec::name(gen)), v, model, levels));
  }
  // Per source group: a group is the unseen source each of its rows stands
  // for, so a pool that holds overall but fails one group is what a user of
  // a stack like it would meet.
  std::vector<std::string> groups;
  for (const auto& x : residuals)
    if (!x.kernel && std::find(groups.begin(), groups.end(), x.group) == groups.end()) groups.push_back(x.group);
  for (const auto& g : groups)
    rep.by_group.push_back(
        line_of(g, select([&g](const auto& x) { return !x.kernel && x.group == g; }), model, levels));
  rep.kernels = line_of("all kernels", select([](const auto& x) { return x.kernel; }), model, levels);
  for (auto k : {uncertainty::KernelKind::kGemm, uncertainty::KernelKind::kAttention}) {
    auto v = select([k](const auto& x) { return x.kernel && x.kernel_traits.kind == k; });
    if (!v.empty()) rep.by_kernel_kind.push_back(line_of(std::string(uncertainty::name(k)), v, model, levels));
  }
  return rep;
}

}  // namespace ridgeline::validation
