// The prior on a stack's step-time scale and the distance growth
// (include/ridgeline/uncertainty/scale_prior.hpp): each expectation worked
// by hand in the comments from the formulas there.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ridgeline/calibrate/runs.hpp"
#include "ridgeline/uncertainty/scale_prior.hpp"

using namespace ridgeline;
using uncertainty::Residual;

namespace {

Residual run(std::string group, spec::Generation gen, double r, long long gpus = 8, double params = 8e9) {
  Residual x;
  x.id = group + std::to_string(r);
  x.group = std::move(group);
  x.run.generation = gen;
  x.run.gpus = gpus;
  x.run.params = params;
  x.log_residual = r;
  return x;
}

}  // namespace

TEST_CASE("scale prior: tau and sigma_w by the method of moments over sources (group + generation)") {
  using spec::Generation;
  std::vector<Residual> rows = {
      run("a", Generation::kAmpere, 0.1),  run("a", Generation::kAmpere, 0.2),
      run("b", Generation::kAmpere, -0.1), run("b", Generation::kAmpere, 0.0), run("b", Generation::kAmpere, 0.1),
      run("b", Generation::kHopper, 0.3),  run("b", Generation::kHopper, 0.5),  // b on Hopper: a source of its own
      run("x", Generation::kAmpere, 9.0),  // left out below
  };
  Residual kernel = run("k", Generation::kAmpere, 5.0);
  kernel.kernel = true;  // kernel rows are no training runs: never counted
  rows.push_back(kernel);
  const auto p = uncertainty::scale_prior(rows, "x");
  CHECK(p.sources == 3);
  CHECK(p.rows == 7);
  // Within: sums of squares 0.005 + 0.02 + 0.02 = 0.045 over 7 - 3 = 4 degrees of freedom: 0.01125.
  CHECK(p.sigma_w == doctest::Approx(std::sqrt(0.01125)).epsilon(1e-12));
  // Means 0.15, 0, 0.4: their sample variance 0.0408333; less 0.01125 x mean(1/2, 1/3, 1/2) = 0.005:
  // tau^2 = 0.0358333.
  CHECK(p.tau == doctest::Approx(std::sqrt(0.0408333333333333 - 0.005)).epsilon(1e-9));
  // Sources that agree closer than their own scatter explains: tau floored at 0.
  const std::vector<Residual> close = {run("a", Generation::kAmpere, 0.1), run("a", Generation::kAmpere, -0.1),
                                       run("b", Generation::kAmpere, 0.1), run("b", Generation::kAmpere, -0.1)};
  CHECK(uncertainty::scale_prior(close).tau == 0);
  CHECK_FALSE(uncertainty::scale_prior({run("a", Generation::kAmpere, 0.1)}).valid());
}

TEST_CASE("scale posterior: hand-computed, its limits, and the runs' own scatter from three runs") {
  uncertainty::ScalePrior prior;
  prior.tau = 0.05, prior.sigma_w = 0.06, prior.sources = 6, prior.rows = 200;
  // Two runs, ln 1.1 and ln 1.2, weighed with sigma_w: s^2 / tau^2 = 0.0036 / 0.0025 = 1.44;
  // weight 2 / 3.44 = 0.5813953; mean (0.0953102 + 0.1823216) / 3.44 = 0.0807069;
  // sd 1 / sqrt(1 / 0.0025 + 2 / 0.0036) = 1 / sqrt(955.5556) = 0.0323498.
  const double r1 = std::log(1.1), r2 = std::log(1.2);
  auto p = uncertainty::scale_posterior(prior, 2, r1 + r2, 0.0615);
  CHECK_FALSE(p.own_scatter);
  CHECK(p.weight == doctest::Approx(0.5813953488372093).epsilon(1e-12));
  CHECK(p.log_mean == doctest::Approx(0.08070690017391849).epsilon(1e-12));
  CHECK(p.sd == doctest::Approx(0.03234983196103153).epsilon(1e-12));
  // Many runs: the prior's pull fades, the geometric mean comes back (1000 runs of sd 0.06 at x 1.15:
  // weight 1000 / 1001.44, within 0.2% of ln 1.15).
  p = uncertainty::scale_posterior(prior, 1000, 1000 * std::log(1.15), 0.06);
  CHECK(p.own_scatter);
  CHECK(std::exp(p.log_mean) == doctest::Approx(1.15).epsilon(0.001));
  CHECK(p.weight == doctest::Approx(1000 / 1001.44).epsilon(1e-12));
  // Three runs that agree exactly: their own scatter 0, weight 1, the factor itself.
  p = uncertainty::scale_posterior(prior, 3, 3 * std::log(1.15), 0.0);
  CHECK(p.weight == 1);
  CHECK(std::exp(p.log_mean) == doctest::Approx(1.15).epsilon(1e-12));
  CHECK(p.sd == 0);
  // No prior: the geometric mean, as calibrate --runs fitted before.
  p = uncertainty::scale_posterior({}, 2, r1 + r2, 0.0615);
  CHECK(p.weight == 1);
  CHECK(p.log_mean == doctest::Approx((r1 + r2) / 2).epsilon(1e-12));
}

TEST_CASE("calibrate --runs fit: one run weighted against the prior, the note says by how much") {
  uncertainty::ScalePrior prior;
  prior.tau = 0.05, prior.sigma_w = 0.06, prior.sources = 6, prior.rows = 200;
  calibrate::RunPoint a;
  a.name = "a";
  a.gpu = "h100_sxm";
  a.predicted_step_s = 10;
  a.measured_step_s = 11;
  const auto cal = calibrate::fit_runs({a}, "runs.yaml", &prior);
  // One run: weight 1 / (1 + 1.44) = 0.4098361; scale exp(ln 1.1 / 2.44) = exp(0.0390616).
  CHECK(cal.stacks[0].correction.time_scale == doctest::Approx(std::exp(std::log(1.1) / 2.44)).epsilon(1e-12));
  CHECK(cal.stacks[0].time_note.find("weighted 0.41 against the prior, the shipped model (scale 1): tau 0.050, "
                                     "sigma_w 0.060") != std::string::npos);
}

TEST_CASE("distance growth: least squares of half squared differences on doublings, within sources only") {
  using spec::Generation;
  // Source a: 8, 16, 64 GPUs at 0, 0.1, 0.3: pairs (d 1, 0.005), (d 3, 0.045), (d 2, 0.02); about their
  // means (2, 0.0233333): sum of d deviations squared 2, of cross products 0.04.
  // Source b: 8, 8, 32 GPUs at 0.5, 0.7, 0.6: pairs (d 0, 0.02), (d 2, 0.005), (d 2, 0.005); means
  // (4/3, 0.01): squares 24/9, cross products -0.02. Across sources: no pair.
  // beta = (0.04 - 0.02) / (2 + 24/9) = 0.0042857 (a pooled fit, one intercept, would give 0.00625).
  const std::vector<Residual> rows = {run("a", Generation::kAmpere, 0.0, 8), run("a", Generation::kAmpere, 0.1, 16),
                                      run("a", Generation::kAmpere, 0.3, 64), run("b", Generation::kAmpere, 0.5, 8),
                                      run("b", Generation::kAmpere, 0.7, 8),  run("b", Generation::kAmpere, 0.6, 32)};
  const auto g = uncertainty::distance_growth(rows);
  CHECK(g.pairs == 6);
  CHECK(g.beta == doctest::Approx(0.02 / (2 + 24.0 / 9)).epsilon(1e-9));
  // A model size change counts as its doublings: 8B -> 70B is log2(8.75) = 3.129.
  CHECK(uncertainty::run_distance(8, 8e9, 32, 70e9) == doctest::Approx(2 + std::log2(8.75)).epsilon(1e-12));
  CHECK(uncertainty::run_distance(8, 0, 8, 70e9) == 0);  // a size not known adds nothing
}
