// The prior on a stack's step-time scale, and the distance a new plan lies
// from the runs a scale was fitted on (calibrate --runs, --calibration,
// validate-published --anchored).
//
// Empirical Bayes, normal-normal in log space. With r = ln(measured /
// predicted) of one of a stack's runs:
//   ln(scale) ~ N(0, tau^2)               the shipped model is the prior
//   r_i = ln(scale) + e_i, e_i ~ N(0, s^2) each run's own scatter
// so that, over K runs, the posterior of ln(scale) is normal with
//   mean = sum(r) / (K + s^2 / tau^2)     (weight K / (K + s^2/tau^2) on mean(r))
//   sd   = 1 / sqrt(1 / tau^2 + K / s^2)
// (Gelman et al., Bayesian Data Analysis, 3rd ed., sec. 2.5: a normal mean
// with known variance). tau and sigma_w come from the out-of-sample residuals
// of the published end-to-end rows (validation/residuals.json), one source
// being one publication's runs on one GPU generation:
//   sigma_w^2 = the pooled within-source variance, sum of squares about each
//               source's mean over (rows - sources) degrees of freedom;
//   tau^2     = the variance of the sources' mean residuals less what their
//               own scatter puts there, mean(sigma_w^2 / n_g), floored at 0
//               (the method of moments of a one-way random-effects model:
//               the spread of true per-source offsets the model leaves).
// s, the scatter the runs are weighed with: the runs' own sample standard
// deviation once there are three or more (two degrees of freedom to measure
// it: a stack's own runs, measured alike, may agree closer than a published
// source's do, and runs that agree exactly give their factor back); from one
// or two runs, sigma_w (one degree of freedom leaves a standard deviation
// uncertain by 71%, 1/sqrt(2(n-1))).
//
// Distance: within a source, two runs' residuals differ more the further
// apart their plans are. Over every pair of runs of one source (its group
// left out where asked), half the squared difference of their residuals
// against d, the doublings between their GPU counts plus those between
// their model sizes, is fitted by least squares to c_source + beta d (a
// linear semivariogram, Cressie, Statistics for Spatial Data, 1993, sec.
// 2.3, with a nugget c of each source's own: the within-source, or
// fixed-effects, slope). beta, floored at 0, is the variance a plan adds per
// doubling it lies beyond the calibration runs' range.
#pragma once

#include <string_view>
#include <vector>

#include "ridgeline/uncertainty/interval.hpp"

namespace ridgeline::uncertainty {

/// The prior on ln(scale), from the published end-to-end residuals.
struct ScalePrior {
  double tau = 0;      // sd of the true per-source offsets
  double sigma_w = 0;  // pooled within-source sd
  int sources = 0, rows = 0;
  /// Two sources and a degree of freedom within them: both spreads estimated.
  bool valid() const { return sources >= 2 && rows > sources; }
};

/// The prior from the end-to-end rows of `rows`, those of `exclude_group` left out.
ScalePrior scale_prior(const std::vector<Residual>& rows, std::string_view exclude_group = {});

/// The posterior of ln(scale) from K runs' ln(measured / predicted).
struct ScalePosterior {
  double log_mean = 0;  // posterior mean of ln(scale)
  double sd = 0;        // posterior sd of ln(scale)
  double weight = 1;    // the weight on mean(r): K / (K + s^2 / tau^2)
  double s = 0;         // the scatter the runs were weighed with
  bool own_scatter = false;  // s is the runs' own sample sd (three or more runs)
};

/// The posterior from K runs whose ln(measured / predicted) sum to `sum_r`
/// with sample sd `sample_sd` (0 for one run). Without a valid prior: the
/// runs alone, weight 1 (the geometric mean), sd s / sqrt(K).
ScalePosterior scale_posterior(const ScalePrior& prior, int k, double sum_r, double sample_sd);

/// The variance a plan adds per doubling of distance from the runs (beta),
/// from within-source pairs of `rows` (`exclude_group` left out).
struct DistanceGrowth {
  double beta = 0;
  int pairs = 0;
};
DistanceGrowth distance_growth(const std::vector<Residual>& rows, std::string_view exclude_group = {});

/// Doublings between two runs' plans: of GPU count plus of total parameters
/// (a parameter count of 0 is not known and adds nothing).
double run_distance(double gpus_a, double params_a, double gpus_b, double params_b);

}  // namespace ridgeline::uncertainty
