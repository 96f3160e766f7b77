#include "ridgeline/uncertainty/interval.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cctype>
#include <filesystem>
#include <functional>
#include <span>
#include <fmt/format.h>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/memory/memory.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/json_reader.hpp"
#include "ridgeline/spec/plan.hpp"
#include "ridgeline/spec/yaml_reader.hpp"
#include "ridgeline/uncertainty/scale_prior.hpp"

namespace ridgeline::uncertainty {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kDominantNames[] = {"compute", "attention", "memory-bound", "communication"};
constexpr std::string_view kGpuBuckets[] = {"1 GPU", "2-8 GPUs", "9-64 GPUs", "65-512 GPUs", "over 512 GPUs"};
constexpr std::string_view kSizeBuckets[] = {"under 2B", "2-20B", "20-100B", "over 100B"};

std::string generation_word(spec::Generation g) {
  std::string s(spec::name(g));
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

}  // namespace

std::string_view name(Dominant d) { return kDominantNames[static_cast<int>(d)]; }

bool parse_dominant(std::string_view s, Dominant& out) {
  for (int i = 0; i < kDominantCount; ++i)
    if (s == kDominantNames[i]) {
      out = static_cast<Dominant>(i);
      return true;
    }
  return false;
}

std::string_view name(KernelKind k) { return k == KernelKind::kGemm ? "gemm" : "attention"; }

std::string_view calibration_class(KernelKind k) { return k == KernelKind::kGemm ? "gemm" : "attention_flash"; }

int gpu_bucket(long long gpus) {
  if (gpus <= 1) return 0;
  if (gpus <= 8) return 1;
  if (gpus <= 64) return 2;
  if (gpus <= 512) return 3;
  return 4;
}

int size_bucket(double params) {
  if (params < 2e9) return 0;
  if (params < 20e9) return 1;
  if (params < 100e9) return 2;
  return 3;
}

std::string_view gpu_bucket_name(int b) { return kGpuBuckets[std::clamp(b, 0, 4)]; }
std::string_view size_bucket_name(int b) { return kSizeBuckets[std::clamp(b, 0, 3)]; }

RunTraits traits_of(const engine::Prediction& p, const spec::PlanSpec& plan, const spec::HardwareSpec& hw) {
  RunTraits t;
  t.framework = plan.framework;
  t.generation = hw.generation;
  t.gpus = p.step.gpus;
  t.params = p.params.total;
  if (p.calibrated && hw.calibration.present && hw.calibration.heldout_of("gemm")) t.calibration = &hw.calibration;
  t.stack = hw.stack_for(plan.framework);
  using spec::KernelClass;
  const auto cls = [&](KernelClass c) { return p.time_by_class[static_cast<int>(c)]; };
  double memory_bound = 0;
  for (int c = 0; c < spec::kKernelClassCount; ++c) {
    const auto k = static_cast<KernelClass>(c);
    if (k != KernelClass::kGemm && k != KernelClass::kAttention && k != KernelClass::kCollective &&
        k != KernelClass::kP2p)
      memory_bound += p.time_by_class[c];
  }
  const double terms[] = {cls(KernelClass::kGemm), cls(KernelClass::kAttention), memory_bound, p.step.exposed_comm_s};
  t.dominant = static_cast<Dominant>(std::max_element(std::begin(terms), std::end(terms)) - std::begin(terms));
  return t;
}

bool valid_level(double level, std::string& message) {
  if (std::isfinite(level) && level >= 0.5 && level <= 0.99) return true;
  message = fmt::format("expected a level from 0.5 to 0.99 (0.8 = an 80% interval), got {}", level);
  return false;
}

double normal_quantile(double p) {
  // Bisection on the CDF 0.5 erfc(-z / sqrt 2): 80 halvings of [-40, 40] reach double precision.
  double lo = -40, hi = 40;
  for (int i = 0; i < 80; ++i) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

void random_effects_bounds(double mu, double s_within, double s_between, double level, double& r_lo, double& r_hi) {
  const double half = normal_quantile(0.5 + level / 2) * std::sqrt(s_within * s_within + s_between * s_between);
  r_lo = std::min(0.0, mu - half);
  r_hi = std::max(0.0, mu + half);
}

namespace {

/// The continued fraction of the regularized incomplete beta function
/// I_x(a, b) (Press et al., Numerical Recipes, 3rd ed., sec. 6.4: betacf,
/// evaluated by the modified Lentz method), converging for x < (a+1)/(a+b+2).
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300, kEps = 1e-16;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::abs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 500; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    if (std::abs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    if (std::abs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::abs(del - 1) < kEps) break;
  }
  return h;
}

/// I_x(a, b), the regularized incomplete beta function.
double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front =
      std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(a, b, x) / a;
  return 1 - front * beta_continued_fraction(b, a, 1 - x) / b;
}

}  // namespace

double student_t_quantile(double p, double nu) {
  // Bisection on the CDF, from the incomplete beta function (Abramowitz &
  // Stegun 26.7.1: P(T <= t) = 1 - I_{nu/(nu+t^2)}(nu/2, 1/2) / 2 for t >= 0).
  // Closed forms for one and two degrees of freedom (two and three sources).
  if (nu == 1) return std::tan(M_PI * (p - 0.5));
  if (nu == 2) return (2 * p - 1) / std::sqrt(2 * p * (1 - p));
  auto cdf = [nu](double t) {
    const double tail = 0.5 * incomplete_beta(nu / 2, 0.5, nu / (nu + t * t));
    return t >= 0 ? 1 - tail : tail;
  };
  double lo = -1e3, hi = 1e3;
  for (int i = 0; i < 64; ++i) {
    const double mid = 0.5 * (lo + hi);
    (cdf(mid) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

IntervalModel::IntervalModel(std::vector<Residual> rows, std::string source)
    : rows_(std::move(rows)), source_(std::move(source)) {}

namespace {

/// A pool: a predicate over the rows and its name.
struct PoolSpec {
  std::string name;
  std::function<bool(const Residual&)> in;
};

/// Per-source means and the pooled within-source variance of `rows`.
struct SourceSpread {
  std::vector<double> means;
  double within_var = 0;
  int rows = 0;
};

/// A source of residuals: one publication's runs on one GPU generation (its
/// A100 and its H100 tables were run on other clusters, in other software
/// eras, and are offset each their own way: llm-foundry's H100 rows by +11%
/// where its A100 rows sit at 0); a kernel row's source is its group.
struct SourceKey {
  std::string_view group;
  int generation = -1;
  bool operator==(const SourceKey&) const = default;
};
SourceKey source_of(const Residual& x) {
  return {x.group, x.kernel ? -1 : static_cast<int>(x.run.generation)};
}

template <class In>
SourceSpread spread_of(const std::vector<Residual>& rows, std::string_view exclude, In in) {
  std::vector<SourceKey> groups;
  std::vector<double> sum, sq;
  std::vector<int> n;
  SourceSpread s;
  for (const auto& x : rows) {
    if ((!exclude.empty() && x.group == exclude) || !in(x)) continue;
    const SourceKey key = source_of(x);
    size_t g = std::find(groups.begin(), groups.end(), key) - groups.begin();
    if (g == groups.size()) {
      groups.push_back(key);
      sum.push_back(0);
      sq.push_back(0);
      n.push_back(0);
    }
    sum[g] += x.log_residual;
    sq[g] += x.log_residual * x.log_residual;
    ++n[g];
    ++s.rows;
  }
  double ss = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    const double m = sum[g] / n[g];
    s.means.push_back(m);
    ss += std::max(0.0, sq[g] - n[g] * m * m);
  }
  const int dof = s.rows - static_cast<int>(groups.size());
  s.within_var = dof > 0 ? ss / dof : 0.0;
  return s;
}

double mean(const std::vector<double>& v) {
  double t = 0;
  for (double x : v) t += x;
  return v.empty() ? 0.0 : t / v.size();
}

/// The sample standard deviation of `v`; 0 for fewer than two values.
double sample_sd(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / (v.size() - 1));
}

/// The pool an interval draws on: the first of `pools` with kMinPoolRows
/// rows (index -1: none), its mu and s_w, and s_b over every row of `kind`.
struct PoolFit {
  int index = -1;
  int rows = 0;
  int sources = 0;  // the source means s_b is estimated from
  double mu = 0, s_within = 0, s_between = 0;
  double sd() const { return std::sqrt(s_within * s_within + s_between * s_between); }
  /// A new source's offset predicted from `sources` source means: Student's
  /// t with sources - 1 degrees of freedom, scaled by s_b sqrt(1 + 1/k)
  /// (the prediction interval of a new draw from a normal sample of k), put
  /// in terms of the normal quantile the bounds take: s_b becomes
  /// s_b sqrt(1 + 1/k) t_{k-1}(q) / z(q), q = (1 + level) / 2.
  /// `t_quantile(p, nu)` gives Student's t quantile (the model's memo of it).
  template <class TQuantile>
  void predict_new_source(double level, TQuantile t_quantile) {
    if (sources < 2 || s_between <= 0) return;
    const double q = 0.5 + level / 2, k = sources;
    s_between *= std::sqrt(1 + 1 / k) * t_quantile(q, k - 1) / normal_quantile(q);
  }
};

template <class Kind>
PoolFit fit_pool(const std::vector<Residual>& rows, const std::vector<PoolSpec>& pools, Kind kind,
                 std::string_view exclude) {
  PoolFit f;
  for (size_t i = 0; i < pools.size(); ++i) {
    const SourceSpread s = spread_of(rows, exclude, pools[i].in);
    if (s.rows < kMinPoolRows || s.means.size() < kMinPoolSources) continue;
    f.index = static_cast<int>(i);
    f.rows = s.rows;
    f.mu = mean(s.means);
    f.s_within = std::sqrt(s.within_var);
    const SourceSpread all = spread_of(rows, exclude, kind);
    f.s_between = sample_sd(all.means);
    f.sources = static_cast<int>(all.means.size());
    return f;
  }
  return f;
}

/// iv's time factors at iv.level for log-residuals of centre mu and spread sd.
void set_bounds(Interval& iv, double mu, double sd) {
  double lo = 0, hi = 0;
  random_effects_bounds(mu, sd, 0.0, iv.level, lo, hi);
  // measured = predicted / e^r: a residual above 0 (predicted too slow) lowers the time.
  iv.lo = std::exp(-hi);
  iv.hi = std::exp(-lo);
}

/// No interval: the residual file was not there to read.
Interval no_residuals(double level) {
  Interval iv;
  iv.level = level;
  iv.note = "no residuals to draw an interval from (" + shipped_path() + " not found)";
  return iv;
}

/// The interval at `level` of centre mu and spread sd in log space, drawn on pool `f` of `pools`.
Interval make_interval(const PoolFit& f, double mu, double sd, const std::vector<PoolSpec>& pools, double level,
                       std::string_view what) {
  Interval iv;
  iv.level = level;
  if (f.index < 0) {
    iv.note = fmt::format("fewer than {} validated {} to draw an interval from", kMinPoolRows, what);
    return iv;
  }
  set_bounds(iv, mu, sd);
  iv.log_sd = sd;
  iv.log_sd_within = std::min(sd, f.s_within);
  iv.pool = pools[f.index].name;
  iv.rows = f.rows;
  if (f.index > 0) {
    iv.fallback = true;
    iv.note = fmt::format("fewer than {} validated {} like this one ({}): interval from {}, {} rows", kMinPoolRows,
                          what, pools.front().name, iv.pool, iv.rows);
  }
  return iv;
}

/// The kernel pools from the most specific: kind + generation + dtype (when
/// `with_dtype`), kind + generation, kind, every kernel row.
std::vector<PoolSpec> kernel_pools(const KernelTraits& k, bool with_dtype) {
  const std::string gen = generation_word(k.generation);
  const auto same_kg = [k](const Residual& x) {
    return x.kernel && x.kernel_traits.kind == k.kind && x.kernel_traits.generation == k.generation;
  };
  std::vector<PoolSpec> pools = {
      {fmt::format("{} {} kernels on {}", spec::name(k.dtype), name(k.kind), gen),
       [=](const Residual& x) { return same_kg(x) && x.kernel_traits.dtype == k.dtype; }},
      {fmt::format("{} kernels on {}", name(k.kind), gen), same_kg},
      {fmt::format("all {} kernels", name(k.kind)),
       [k](const Residual& x) { return x.kernel && x.kernel_traits.kind == k.kind; }},
      {"all GEMM and attention kernels", [](const Residual& x) { return x.kernel; }},
  };
  if (!with_dtype) pools.erase(pools.begin());
  return pools;
}

}  // namespace

/// What a run pool counts, in the fallback note ("fewer than 20 validated ...").
constexpr std::string_view kRunsWhat = "training runs from two or more sources";

namespace {

/// The log-space variance a plan outside what was validated adds (the top of
/// interval.hpp), and why, in words.
struct Widening {
  double var = 0;
  std::string why;
};

/// The spread across sources of each source's least-squares slope of the
/// residual per doubling of `x` (GPUs or parameters); sources whose
/// training runs span under one doubling, or hold under 3 runs, have no
/// slope to give. 0 from fewer than two slopes.
template <class X>
double slope_spread(const std::vector<Residual>& rows, std::string_view exclude, X x) {
  std::vector<SourceKey> keys;
  for (const auto& r : rows)
    if (!r.kernel && r.group != exclude && std::find(keys.begin(), keys.end(), source_of(r)) == keys.end())
      keys.push_back(source_of(r));
  std::vector<double> slopes;
  for (const SourceKey& k : keys) {
    double n = 0, sx = 0, sy = 0, lo = 1e300, hi = -1e300;
    for (const auto& r : rows)
      if (!r.kernel && source_of(r) == k) {
        const double v = std::log2(x(r));
        n += 1, sx += v, sy += r.log_residual, lo = std::min(lo, v), hi = std::max(hi, v);
      }
    if (n < 3 || hi - lo < 1) continue;
    double sxx = 0, sxy = 0;
    for (const auto& r : rows)
      if (!r.kernel && source_of(r) == k) {
        const double v = std::log2(x(r)) - sx / n;
        sxx += v * v, sxy += v * (r.log_residual - sy / n);
      }
    slopes.push_back(sxy / sxx);
  }
  return sample_sd(slopes);
}

/// GPU counts and total parameters a set of runs spans (0: not known).
struct RunRange {
  double gpus_lo = 0, gpus_hi = 0, params_lo = 0, params_hi = 0;
};

/// The variance a plan beyond `range` adds: for a GPU count or a model size
/// d doublings beyond the nearest end, (sigma d)^2, sigma the published
/// sources' slope spread per doubling (slope_spread; the top of
/// interval.hpp). `what` names the range in the reason ("validated").
Widening beyond_range(const std::vector<Residual>& rows, const RunTraits& t, std::string_view exclude,
                      const RunRange& range, std::string_view what) {
  Widening w;
  auto beyond = [](double v, double lo, double hi) {
    return hi <= 0 || v <= 0 ? 0.0 : v > hi ? std::log2(v / hi) : v < lo ? std::log2(lo / v) : 0.0;
  };
  const double g = static_cast<double>(std::max(1LL, t.gpus));
  if (const double d = beyond(g, range.gpus_lo, range.gpus_hi); d > 0) {
    const double k = slope_spread(rows, exclude, [](const Residual& r) { return static_cast<double>(r.run.gpus); });
    if (k > 0) {
      w.var += k * k * d * d;
      w.why = fmt::format("{} GPUs is {:.1f} doublings outside the {} {}-{}: + {:.3f} per doubling", t.gpus, d, what,
                          range.gpus_lo, range.gpus_hi, k);
    }
  }
  if (const double d = beyond(t.params, range.params_lo, range.params_hi); d > 0) {
    const double k = slope_spread(rows, exclude, [](const Residual& r) { return std::max(1.0, r.run.params); });
    if (k > 0) {
      w.var += k * k * d * d;
      w.why += fmt::format("{}{:.3g}B parameters is {:.1f} doublings outside the {} {:.3g}-{:.3g}B: + {:.3f} per "
                           "doubling",
                           w.why.empty() ? "" : "; ", t.params / 1e9, d, what, range.params_lo / 1e9,
                           range.params_hi / 1e9, k);
    }
  }
  return w;
}

Widening out_of_range(const std::vector<Residual>& rows, const RunTraits& t, std::string_view exclude,
                      double s_between) {
  Widening w;
  bool framework = false, generation = false;
  double gpus_lo = 1e300, gpus_hi = 0, params_lo = 1e300, params_hi = 0;
  for (const auto& r : rows) {
    if (r.kernel || r.group == exclude) continue;
    framework |= r.run.framework == t.framework;
    generation |= r.run.generation == t.generation;
    gpus_lo = std::min(gpus_lo, static_cast<double>(r.run.gpus)), gpus_hi = std::max(gpus_hi, static_cast<double>(r.run.gpus));
    if (r.run.params > 0) params_lo = std::min(params_lo, r.run.params), params_hi = std::max(params_hi, r.run.params);
  }
  if (gpus_hi <= 0) return w;
  auto add = [&](double var, std::string why) {
    if (var <= 0) return;
    w.var += var;
    w.why += (w.why.empty() ? "" : "; ") + why;
  };
  if (!framework)
    add(s_between * s_between,
        fmt::format("framework {} has no validated runs: one more source's offset (sd {:.3f})",
                    spec::framework(t.framework).id, s_between));
  if (!generation)
    add(s_between * s_between, fmt::format("no validated runs on {}: one more source's offset (sd {:.3f})",
                                           generation_word(t.generation), s_between));
  const Widening far = beyond_range(rows, t, exclude, {gpus_lo, gpus_hi, params_lo, params_hi}, "validated");
  if (far.var > 0) add(far.var, far.why);
  if (!w.why.empty()) w.why = fmt::format("widened (sd +{:.3f}): {}", std::sqrt(w.var), w.why);
  return w;
}

}  // namespace

Interval IntervalModel::run_interval_unrated(const RunTraits& t, double level, std::string_view exclude_group) const {
  if (rows_.empty()) return no_residuals(level);
  const auto& fw = spec::framework(t.framework);
  const std::string gen = generation_word(t.generation);
  const int gb = gpu_bucket(t.gpus), sb = size_bucket(t.params);
  const auto same_fg = [t](const Residual& x) {
    return !x.kernel && x.run.framework == t.framework && x.run.generation == t.generation;
  };
  const auto same_fgd = [=](const Residual& x) { return same_fg(x) && x.run.dominant == t.dominant; };
  const std::string fg = fmt::format("{} on {}", fw.id, gen);
  const std::string_view dn = name(t.dominant);  // "memory-bound" says it already
  const std::string fgd = fmt::format("{}, {}{}", fg, dn, dn.ends_with("-bound") ? "" : "-bound");
  std::vector<PoolSpec> pools = {
      {fmt::format("{}, {}, {} parameters", fgd, gpu_bucket_name(gb), size_bucket_name(sb)),
       [=](const Residual& x) {
         return same_fgd(x) && gpu_bucket(x.run.gpus) == gb && size_bucket(x.run.params) == sb;
       }},
      {fmt::format("{}, {}", fgd, gpu_bucket_name(gb)),
       [=](const Residual& x) { return same_fgd(x) && gpu_bucket(x.run.gpus) == gb; }},
      {fgd, same_fgd},
      {fg, same_fg},
      {fmt::format("all {} runs", gen),
       [t](const Residual& x) { return !x.kernel && x.run.generation == t.generation; }},
      {"all end-to-end runs", [](const Residual& x) { return !x.kernel; }},
  };
  const auto is_run = [](const Residual& x) { return !x.kernel; };
  // Training runs come from a handful of sources (frameworks, clusters,
  // software eras), each with an offset of its own: a new run's offset is
  // predicted from those few source means (PoolFit::predict_new_source).
  // Out of sample the 80% interval holds 77% of end-to-end runs (2026-12-07;
  // the normal quantile alone had held 62% when this was introduced;
  // docs/accuracy.md). Kernel pools keep the normal quantile: their sources
  // are one kernel family each (out of sample their 80% interval holds 79%).
  // A training-run pool centres the interval on the mean of its sources'
  // offsets: one source's offset is its own (its software era, its cluster),
  // not the stack's, so a run pool needs kMinPoolSources of them.
  PoolFit f = fit_pool(rows_, pools, is_run, exclude_group);
  const Widening wide = f.index >= 0 ? out_of_range(rows_, t, exclude_group, f.s_between) : Widening{};
  f.predict_new_source(level, [this](double p, double nu) { return t_quantile(p, nu); });
  const auto* held = t.calibration ? t.calibration->heldout_of("gemm") : nullptr;
  if (!held || f.index < 0) {
    Interval iv = make_interval(f, f.mu, std::sqrt(f.sd() * f.sd() + wide.var), pools, level, kRunsWhat);
    iv.widened = wide.why;
    return iv;
  }
  // Calibrated: the published GEMM kernels' spread on this generation stands
  // for the kernel-level part of the runs' spread; the profile's held-out
  // GEMM records replace it. What is left (communication, framework, clock)
  // stays.
  KernelTraits k;
  k.kind = KernelKind::kGemm;
  k.generation = t.generation;
  const auto kpools = kernel_pools(k, false);
  const PoolFit kf = fit_pool(rows_, kpools, [](const Residual& x) { return x.kernel; }, exclude_group);
  const double total = f.sd(), kernel = kf.index >= 0 ? std::min(kf.sd(), total) : 0.0;
  const double rest = std::sqrt(std::max(0.0, total * total - kernel * kernel));
  Interval iv =
      make_interval(f, f.mu, std::sqrt(rest * rest + held->log_sd * held->log_sd + wide.var), pools, level, kRunsWhat);
  iv.widened = wide.why;
  iv.calibrated = true;
  iv.calibration_note = fmt::format(
      "calibrated on {}: the kernel-level spread (sd {:.3f}, published GEMM kernels {}) replaced by the held-out "
      "GEMM records' (sd {:.3f}, {} records); communication, framework and clock effects (sd {:.3f}) stay",
      t.calibration->measurements.empty() ? "measurements" : t.calibration->measurements, kernel,
      kf.index >= 0 ? kpools[kf.index].name : "none", held->log_sd, held->records, rest);
  return iv;
}

Interval IntervalModel::kernel_interval_unrated(const KernelTraits& k, double level,
                                                std::string_view exclude_group) const {
  if (rows_.empty()) return no_residuals(level);
  const std::vector<PoolSpec> pools = kernel_pools(k, true);
  const PoolFit f = fit_pool(rows_, pools, [](const Residual& x) { return x.kernel; }, exclude_group);
  const auto* held = k.calibration ? k.calibration->heldout_of(calibration_class(k.kind)) : nullptr;
  if (!held) return make_interval(f, f.mu, f.sd(), pools, level, "kernels");
  // Calibrated: the profile's own held-out records of the class, on this very GPU.
  Interval iv;
  iv.level = level;
  set_bounds(iv, held->log_mean, held->log_sd);
  iv.pool = fmt::format("the calibration's held-out {} records ({})", held->cls,
                        k.calibration->measurements.empty() ? "measurements" : k.calibration->measurements);
  iv.rows = held->records;
  iv.calibrated = true;
  iv.calibration_note = fmt::format(
      "calibrated: the interval of this GPU's own held-out {} records (sd {:.3f}) replaces the published "
      "kernels' ({})",
      held->cls, held->log_sd, f.index >= 0 ? fmt::format("sd {:.3f}, {}", f.sd(), pools[f.index].name) : "none");
  return iv;
}

double IntervalModel::t_quantile(double p, double nu) const {
  // A command asks for one level and a few source counts: each answer is kept.
  {
    std::lock_guard lock(memo_->mutex);
    for (const auto& t : memo_->quantiles)
      if (t.p == p && t.nu == nu) return t.t;
  }
  const double t = student_t_quantile(p, nu);
  std::lock_guard lock(memo_->mutex);
  memo_->quantiles.push_back({p, nu, t});
  return t;
}

IntervalModel::Coverage IntervalModel::held_out_coverage(double level, bool kernels) const {
  {
    std::lock_guard lock(memo_->mutex);
    for (const auto& e : memo_->entries)
      if (e.level == level && e.kernels == kernels) return e.coverage;
  }
  Coverage c;
  int held = 0;
  // Rows of one source with the same pool keys (framework, generation, what
  // dominates, GPU-count and size buckets; kernels: kind, generation, dtype)
  // get the same interval: each is drawn once.
  struct Drawn {
    std::string_view group;
    std::array<long long, 5> key;
    Interval iv;
  };
  std::vector<Drawn> drawn;
  for (const auto& x : rows_) {
    if (x.kernel != kernels) continue;
    const std::array<long long, 5> key =
        kernels ? std::array<long long, 5>{static_cast<long long>(x.kernel_traits.kind),
                                           static_cast<long long>(x.kernel_traits.generation),
                                           static_cast<long long>(x.kernel_traits.dtype), 0, 0}
                : std::array<long long, 5>{x.run.framework, static_cast<long long>(x.run.generation),
                                           static_cast<long long>(x.run.dominant), gpu_bucket(x.run.gpus),
                                           size_bucket(x.run.params)};
    auto it = std::find_if(drawn.begin(), drawn.end(),
                           [&](const Drawn& d) { return d.group == x.group && d.key == key; });
    if (it == drawn.end()) {
      drawn.push_back({x.group, key,
                       kernels ? kernel_interval_unrated(x.kernel_traits, level, x.group)
                               : run_interval_unrated(x.run, level, x.group)});
      it = drawn.end() - 1;
    }
    const Interval& iv = it->iv;
    if (!iv.valid()) continue;
    ++c.rows;
    // measured time = predicted time x e^-r: inside when lo <= e^-r <= hi.
    const double ratio = std::exp(-x.log_residual);
    if (ratio >= iv.lo && ratio <= iv.hi) ++held;
  }
  c.covered = c.rows > 0 ? static_cast<double>(held) / c.rows : 0.0;
  std::lock_guard lock(memo_->mutex);
  memo_->entries.push_back({level, kernels, c});
  return c;
}

Interval IntervalModel::rated(Interval iv, bool kernels, std::string_view exclude_group) const {
  // A row's own left-out interval (inside the coverage count) is not rated.
  if (iv.valid() && exclude_group.empty()) {
    const Coverage c = held_out_coverage(iv.level, kernels);
    iv.held_out_covered = c.covered, iv.held_out_rows = c.rows;
  }
  return iv;
}

Interval IntervalModel::run_interval(const RunTraits& t, double level, std::string_view exclude_group) const {
  if (t.stack && t.stack->time_runs > 0) return anchored_interval(t, level, exclude_group);
  return rated(run_interval_unrated(t, level, exclude_group), false, exclude_group);
}

Interval IntervalModel::anchored_interval(const RunTraits& t, double level, std::string_view exclude_group) const {
  const spec::StackCorrection& s = *t.stack;
  RunTraits u = t;
  u.stack = nullptr;
  const Interval base = run_interval_unrated(u, level, exclude_group);
  const int n = s.time_runs;
  const double q = 0.5 + level / 2, z = normal_quantile(q);
  std::string names;
  for (size_t i = 0; i < s.runs.size(); ++i) names += (i ? ", " : "") + s.runs[i];
  Interval iv;
  iv.level = level;
  iv.anchored = true;
  iv.rows = n;
  iv.pool = fmt::format("anchored on {} run{} ({})", n, n == 1 ? "" : "s", names);
  const ScalePrior prior = scale_prior(rows_, exclude_group);
  double var = 0;  // log-space variance of a new run's ln(measured / calibrated prediction)
  if (prior.valid()) {
    // The scale's posterior (scale_prior.hpp) and a new run's own scatter:
    // the runs' spread from three runs on, never below a published source's.
    const ScalePosterior post = scale_posterior(prior, n, 0.0, s.time_log_sd);
    const double s_new = post.own_scatter ? std::max(s.time_log_sd, prior.sigma_w) : prior.sigma_w;
    var = post.sd * post.sd + s_new * s_new;
    iv.note = fmt::format("the scale's posterior sd {:.3f} (runs weighted {:.2f} against the prior: tau {:.3f}, "
                          "sigma_w {:.3f}) with a new run's scatter, sd {:.3f} ({})",
                          post.sd, post.weight, prior.tau, prior.sigma_w, s_new,
                          post.own_scatter && s.time_log_sd > prior.sigma_w ? "the runs' own"
                                                                           : "a published source's within-source");
  } else if (n >= 2) {
    const double floor = base.valid() ? base.log_sd_within : 0.0;
    const double widen = std::sqrt(1.0 + 1.0 / n);
    double half = 0;
    if (s.time_log_sd >= floor) {
      half = t_quantile(q, n - 1) * s.time_log_sd * widen;
      iv.note = fmt::format("the runs' spread of ln(measured / predicted) (sd {:.3f}) x sqrt(1 + 1/{}), Student's t "
                            "with {} degrees of freedom",
                            s.time_log_sd, n, n - 1);
    } else {
      half = z * floor * widen;
      iv.note = fmt::format("the runs agree closer (sd {:.3f}) than one published source's runs do: their "
                            "within-source spread (sd {:.3f}, {}) x sqrt(1 + 1/{})",
                            s.time_log_sd, floor, base.pool, n);
    }
    var = (half / z) * (half / z);
  } else if (base.valid()) {
    var = base.log_sd * base.log_sd;
    iv.note = fmt::format("one run has no spread of its own: the unanchored interval's (sd {:.3f}, {}) about the "
                          "calibrated point",
                          base.log_sd, base.pool);
  } else {
    iv.rows = 0;  // nothing to draw a spread from
    iv.note = "one run has no spread of its own, and there is no unanchored interval: " + base.note;
    return iv;
  }
  // Beyond the runs' GPU counts or model sizes: the variance within-source
  // pairs of published runs grow by per doubling apart (scale_prior.hpp);
  // without a prior, the published sources' slope spread (beyond_range).
  if (prior.valid()) {
    auto beyond = [](double v, double lo, double hi) {
      return hi <= 0 || v <= 0 ? 0.0 : v > hi ? std::log2(v / hi) : v < lo ? std::log2(lo / v) : 0.0;
    };
    const double dg = beyond(static_cast<double>(std::max(1LL, t.gpus)), s.gpus_lo, s.gpus_hi);
    const double dp = beyond(t.params, s.params_lo, s.params_hi);
    const DistanceGrowth growth = distance_growth(rows_, exclude_group);
    if (dg + dp > 0 && growth.beta > 0) {
      const double add = growth.beta * (dg + dp);
      var += add;
      iv.widened = fmt::format("widened (sd +{:.3f}): {:.1f} doublings of GPU count and {:.1f} of model size beyond "
                               "the calibration runs', + {:.5f} variance per doubling (within-source pairs of "
                               "published runs)",
                               std::sqrt(add), dg, dp, growth.beta);
    }
  } else {
    const Widening far = beyond_range(rows_, t, exclude_group, {s.gpus_lo, s.gpus_hi, s.params_lo, s.params_hi},
                                      "calibration runs'");
    if (far.var > 0) {
      var += far.var;
      iv.widened = fmt::format("widened (sd +{:.3f}): {}", std::sqrt(far.var), far.why);
    }
  }
  const double half = z * std::sqrt(var);
  iv.lo = std::exp(-half);
  iv.hi = std::exp(half);
  iv.log_sd = half / z;
  iv.log_sd_within = base.valid() ? std::min(iv.log_sd, base.log_sd_within) : iv.log_sd;
  return iv;
}

Interval IntervalModel::kernel_interval(const KernelTraits& k, double level, std::string_view exclude_group) const {
  return rated(kernel_interval_unrated(k, level, exclude_group), true, exclude_group);
}

// ---- the residual file ------------------------------------------------------

// JSON, one row per line: the strict located reader (spec/json_reader.hpp)
// reads the 375 rows in about a millisecond, where a YAML parse took 60 ms,
// more than the whole of a typical `search` (every planning command reads it).
std::string write_residuals(const std::vector<Residual>& rows, std::string_view published_file) {
  const auto q = [](std::string_view t) {  // ids, groups and paths are plain ASCII; escape what JSON needs
    std::string o = "\"";
    for (char c : t) {
      if (c == '"' || c == '\\') o += '\\';
      o += c;
    }
    return o + "\"";
  };
  std::string out = fmt::format(
      "{{\n"
      "  \"note\": \"Generated by scripts/accuracy_table.sh; do not edit by hand. Out-of-sample residuals of "
      "Ridgeline's predictions of {}: every predicted end-to-end, GEMM and attention row, predicted with the "
      "cost-model defaults fitted on its own group left out (validate-published --leave-one-group-out). "
      "log_residual = ln(predicted time / measured time); a throughput's is ln(measured / predicted). Prediction "
      "intervals are drawn from these (include/ridgeline/uncertainty/interval.hpp, docs/accuracy.md).\",\n"
      "  \"source\": {},\n"
      "  \"rows\": [\n",
      published_file, q(published_file));
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    out += fmt::format("    {{\"id\": {}, \"group\": {}, ", q(r.id), q(r.group));
    if (r.kernel) {
      out += fmt::format("\"kind\": \"{}\", \"generation\": \"{}\", \"dtype\": \"{}\"", name(r.kernel_traits.kind),
                         spec::name(r.kernel_traits.generation), spec::name(r.kernel_traits.dtype));
    } else {
      out += fmt::format("\"kind\": \"training\", \"framework\": \"{}\", \"generation\": \"{}\", \"gpus\": {}, "
                         "\"params\": {:.4g}, \"dominant\": \"{}\"",
                         spec::framework_id(r.run.framework), spec::name(r.run.generation), r.run.gpus,
                         r.run.params, name(r.run.dominant));
    }
    out += fmt::format(", \"log_residual\": {:.6f}}}{}\n", r.log_residual, i + 1 < rows.size() ? "," : "");
  }
  out += "  ]\n}\n";
  return out;
}

namespace {

/// A row's kind: 0 a training run, 1 a GEMM, 2 an attention kernel.
std::optional<int> parse_row_kind(std::string_view s) {
  if (s == "training") return 0;
  if (s == "gemm") return 1;
  if (s == "attention") return 2;
  return std::nullopt;
}

std::optional<Dominant> parse_dominant_word(std::string_view s) {
  Dominant x;
  if (parse_dominant(s, x)) return x;
  return std::nullopt;
}

// The bounds a row's numbers are read within.
constexpr long long kMaxGpus = 1LL << 24;
constexpr double kMaxParams = 1e15;
constexpr double kMaxAbsLogResidual = 10;

/// The fields of a row, as write_residuals writes them.
constexpr std::string_view kRowFields[] = {"id",   "group",  "kind",     "framework", "generation",
                                           "gpus", "params", "dominant", "dtype",     "log_residual"};

/// One row of the residual file as a Residual; every error located at its field.
Residual read_fields(spec::JsonMapReader& m, const std::string& framework_choices) {
  // A word read through `parse`; an unknown one is an error listing `choices`.
  auto word = [&m](const std::string& key, auto parse,
                   std::string_view choices) -> decltype(parse(std::string_view{})) {
    const auto s = m.string(key, true);
    if (!s) return std::nullopt;
    auto v = parse(*s);
    if (!v) m.error_at(key, fmt::format("expected one of {}, got \"{}\"", choices, *s));
    return v;
  };
  Residual r;
  if (auto s = m.string("id", true)) r.id = std::move(*s);
  if (auto s = m.string("group", true)) r.group = std::move(*s);
  const auto kind = word("kind", parse_row_kind, "training, gemm, attention");
  if (auto g = word("generation", spec::parse_generation, "ampere, ada, hopper, blackwell, ...")) {
    r.run.generation = *g;
    r.kernel_traits.generation = *g;
  }
  if (kind && *kind > 0) {
    r.kernel = true;
    r.kernel_traits.kind = *kind == 1 ? KernelKind::kGemm : KernelKind::kAttention;
    if (auto t = word("dtype", spec::parse_dtype, "fp32, tf32, fp16, bf16, fp8_e4m3, ...")) r.kernel_traits.dtype = *t;
  } else if (kind) {
    if (auto f = word("framework", spec::find_framework, framework_choices)) r.run.framework = *f;
    if (auto n = m.integer("gpus", true, 1, kMaxGpus)) r.run.gpus = *n;
    if (auto p = m.number("params", true, 1, kMaxParams)) r.run.params = *p;
    if (auto dom = word("dominant", parse_dominant_word, "compute, attention, memory-bound, communication"))
      r.run.dominant = *dom;
  }
  if (auto v = m.number("log_residual", true, -kMaxAbsLogResidual, kMaxAbsLogResidual)) r.log_residual = *v;
  return r;
}

/// Keys of `object` that no reader asks for are errors, as in the YAML files.
void reject_unknown(const spec::JsonValue& object, std::span<const std::string_view> known,
                    spec::JsonMapReader& m) {
  for (const auto& mem : object.members) {
    if (std::find(known.begin(), known.end(), mem.key) != known.end()) continue;
    std::vector<std::string> names(known.begin(), known.end());
    const std::string guess = support::closest_match(mem.key, names);
    m.error_at(mem.key, guess.empty() ? fmt::format("unknown key '{}'", mem.key)
                                      : fmt::format("unknown key '{}'; did you mean '{}'?", mem.key, guess));
  }
}

}  // namespace

IntervalModel load_residuals(const std::string& path) {
  // The rows are read as the parser reaches them (load_json_file_streaming),
  // into `row_diags`; the file's own fields are checked once it is read, and
  // their errors come first, as the file lists them.
  support::DiagnosticList row_diags;
  std::vector<Residual> rows;
  const std::string framework_choices = spec::framework_choices();
  auto read_row = [&](const spec::JsonValue& row, std::size_t i) {
    spec::JsonMapReader m(row, fmt::format("rows[{}]", i), row_diags);
    if (!m.valid()) return;
    reject_unknown(row, kRowFields, m);
    Residual r = read_fields(m, framework_choices);
    m.finish();
    rows.push_back(std::move(r));
  };
  const spec::JsonValue root = spec::load_json_file_streaming(path, "rows", read_row);
  support::DiagnosticList d;
  spec::JsonMapReader top(root, "", d);
  std::string source;
  if (top.valid()) {
    static constexpr std::string_view kFileFields[] = {"note", "source", "rows"};
    reject_unknown(root, kFileFields, top);
    (void)top.string("note");
    if (auto s = top.string("source", true)) source = *s;
    const spec::JsonValue* seq = root.find("rows");
    if (!seq) {
      top.error_at("rows", "missing required field 'rows'");
    } else if (seq->kind != spec::JsonValue::Kind::kArray) {
      top.error_at("rows", "expected a list");
    }
    top.finish();
  }
  for (const support::Diagnostic& e : row_diags.items()) d.add(e);
  d.throw_if_errors();
  return IntervalModel(std::move(rows), source);
}

std::string shipped_path() { return (fs::path(spec::data_dir()) / "validation" / "residuals.json").string(); }

const IntervalModel& shipped() {
  static const IntervalModel model = [] {
    const std::string p = shipped_path();
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) return IntervalModel();
    return load_residuals(p);
  }();
  return model;
}

MemoryInterval memory_interval(const memory::MemoryResult& m) {
  MemoryInterval iv;
  iv.lo = m.allocated + m.workspace;
  iv.point = m.total;
  iv.hi = m.allocated * (1 + 2 * m.allocator_reserve) + m.workspace;
  iv.hi = std::max(iv.hi, iv.point);
  iv.lo = std::min(iv.lo, iv.point);
  iv.fits_point = iv.point <= m.capacity;
  iv.fits_high = iv.hi <= m.capacity;
  iv.basis = fmt::format(
      "the allocator's spread (the published peak-memory rows are too few to draw residuals from), from the "
      "tensors alone (allocated) to twice the framework's {:.0f}% reserve",
      m.allocator_reserve * 100);
  return iv;
}

}  // namespace ridgeline::uncertainty
