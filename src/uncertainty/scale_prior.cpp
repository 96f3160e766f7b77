#include "ridgeline/uncertainty/scale_prior.hpp"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>
#include <utility>

namespace ridgeline::uncertainty {

namespace {

/// One source of end-to-end residuals: a group's runs on one GPU generation
/// (as interval.cpp's pools count sources).
struct Source {
  std::string_view group;
  spec::Generation generation;
  std::vector<const Residual*> rows;
};

std::vector<Source> sources_of(const std::vector<Residual>& rows, std::string_view exclude) {
  std::vector<Source> out;
  for (const auto& x : rows) {
    if (x.kernel || (!exclude.empty() && x.group == exclude)) continue;
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const Source& s) { return s.group == x.group && s.generation == x.run.generation; });
    if (it == out.end()) it = out.insert(out.end(), Source{x.group, x.run.generation, {}});
    it->rows.push_back(&x);
  }
  return out;
}

}  // namespace

ScalePrior scale_prior(const std::vector<Residual>& rows, std::string_view exclude_group) {
  ScalePrior p;
  const auto sources = sources_of(rows, exclude_group);
  std::vector<double> means;
  double ss = 0, inv_n = 0;
  for (const auto& s : sources) {
    double sum = 0;
    for (const Residual* x : s.rows) sum += x->log_residual;
    const double m = sum / static_cast<double>(s.rows.size());
    for (const Residual* x : s.rows) ss += (x->log_residual - m) * (x->log_residual - m);
    means.push_back(m);
    inv_n += 1.0 / static_cast<double>(s.rows.size());
    p.rows += static_cast<int>(s.rows.size());
  }
  p.sources = static_cast<int>(sources.size());
  if (!p.valid()) return p;
  const double within_var = ss / (p.rows - p.sources);
  double mm = 0;
  for (double m : means) mm += m;
  mm /= p.sources;
  double var_means = 0;
  for (double m : means) var_means += (m - mm) * (m - mm);
  var_means /= p.sources - 1;
  p.sigma_w = std::sqrt(within_var);
  p.tau = std::sqrt(std::max(0.0, var_means - within_var * inv_n / p.sources));
  return p;
}

ScalePosterior scale_posterior(const ScalePrior& prior, int k, double sum_r, double sample_sd) {
  ScalePosterior q;
  if (k <= 0) return q;
  const double n = k;
  q.own_scatter = k >= 3 || !prior.valid();
  q.s = q.own_scatter ? sample_sd : prior.sigma_w;
  if (!prior.valid() || q.s <= 0) {  // the runs alone (or runs that agree exactly): their mean
    q.weight = 1;
    q.log_mean = sum_r / n;
    q.sd = q.s / std::sqrt(n);
    return q;
  }
  if (prior.tau <= 0) {  // no per-source offset left to find: the prior holds
    q.weight = 0;
    q.log_mean = 0;
    q.sd = 0;
    return q;
  }
  const double ratio = q.s * q.s / (prior.tau * prior.tau);
  q.weight = n / (n + ratio);
  q.log_mean = sum_r / (n + ratio);
  q.sd = 1 / std::sqrt(1 / (prior.tau * prior.tau) + n / (q.s * q.s));
  return q;
}

double run_distance(double gpus_a, double params_a, double gpus_b, double params_b) {
  double d = 0;
  if (gpus_a > 0 && gpus_b > 0) d += std::abs(std::log2(gpus_a / gpus_b));
  if (params_a > 0 && params_b > 0) d += std::abs(std::log2(params_a / params_b));
  return d;
}

DistanceGrowth distance_growth(const std::vector<Residual>& rows, std::string_view exclude_group) {
  // The pairs are O(rows^2) within each source: kept per residual set and
  // group left out (the residual file does not change during a run).
  struct Memo {
    std::size_t n;
    double checksum;
    std::string exclude;
    DistanceGrowth g;
  };
  static std::mutex mutex;
  static std::vector<Memo> memo;
  double checksum = 0;
  for (const auto& x : rows) checksum += x.log_residual + 1e-3 * static_cast<double>(x.run.gpus);
  {
    std::lock_guard lock(mutex);
    for (const auto& m : memo)
      if (m.n == rows.size() && m.checksum == checksum && m.exclude == exclude_group) return m.g;
  }
  DistanceGrowth g;
  // Least squares of y = (r_i - r_j)^2 / 2 on d over every within-source
  // pair, each source its own intercept (its own nugget): one slope from the
  // pairs' deviations about their source's means. A pooled fit would take
  // the sources' differing scatter for growth with distance (a source of
  // far-apart runs that agree well pulls the slope down).
  double num = 0, den = 0;
  for (const auto& s : sources_of(rows, exclude_group)) {
    std::vector<std::pair<double, double>> pairs;
    for (size_t i = 0; i < s.rows.size(); ++i)
      for (size_t j = i + 1; j < s.rows.size(); ++j) {
        const Residual& a = *s.rows[i];
        const Residual& b = *s.rows[j];
        const double d = run_distance(static_cast<double>(a.run.gpus), a.run.params,
                                      static_cast<double>(b.run.gpus), b.run.params);
        pairs.emplace_back(d, 0.5 * (a.log_residual - b.log_residual) * (a.log_residual - b.log_residual));
      }
    if (pairs.empty()) continue;
    double md = 0, my = 0;
    for (const auto& [d, y] : pairs) md += d, my += y;
    md /= static_cast<double>(pairs.size()), my /= static_cast<double>(pairs.size());
    for (const auto& [d, y] : pairs) num += (d - md) * (y - my), den += (d - md) * (d - md);
    g.pairs += static_cast<int>(pairs.size());
  }
  if (den > 0) g.beta = std::max(0.0, num / den);
  std::lock_guard lock(mutex);
  memo.push_back({rows.size(), checksum, std::string(exclude_group), g});
  return g;
}

}  // namespace ridgeline::uncertainty
