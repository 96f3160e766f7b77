#include "ridgeline/calibrate/runs.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "ridgeline/spec/framework.hpp"
#include "ridgeline/uncertainty/interval.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::calibrate {

namespace {

struct Moments {
  double mean = 0, sd = 0;  // sd: the sample standard deviation (n - 1); 0 for one value
};

Moments moments(const std::vector<double>& x) {
  Moments m;
  if (x.empty()) return m;
  for (double v : x) m.mean += v;
  m.mean /= static_cast<double>(x.size());
  if (x.size() < 2) return m;
  double ss = 0;
  for (double v : x) ss += (v - m.mean) * (v - m.mean);
  m.sd = std::sqrt(ss / static_cast<double>(x.size() - 1));
  return m;
}

/// The stack's GPU-count and model-size range.
void set_range(const std::vector<const RunPoint*>& runs, spec::StackCorrection& c) {
  for (const RunPoint* p : runs) {
    if (p->gpus > 0) {
      c.gpus_lo = c.gpus_lo > 0 ? std::min(c.gpus_lo, p->gpus) : p->gpus;
      c.gpus_hi = std::max(c.gpus_hi, p->gpus);
    }
    if (p->params > 0) {
      c.params_lo = c.params_lo > 0 ? std::min(c.params_lo, p->params) : p->params;
      c.params_hi = std::max(c.params_hi, p->params);
    }
  }
}

/// The time scale of one stack's runs, with its interval and note: the
/// posterior under `prior` (runs.hpp), or the runs' geometric mean and
/// t-interval without one.
void fit_time(const std::vector<const RunPoint*>& runs, spec::StackCalibrationEntry& e,
              const uncertainty::ScalePrior* prior) {
  std::vector<double> r;
  for (const RunPoint* p : runs) r.push_back(std::log(p->measured_step_s / p->predicted_step_s));
  const Moments m = moments(r);
  spec::StackCorrection& c = e.correction;
  c.time_scale = std::exp(m.mean);
  c.time_runs = static_cast<int>(r.size());
  c.time_log_sd = m.sd;
  set_range(runs, c);
  if (prior && prior->valid()) {
    const double n = static_cast<double>(r.size());
    const auto post = uncertainty::scale_posterior(*prior, c.time_runs, m.mean * n, m.sd);
    c.time_scale = std::exp(post.log_mean);
    const double half = uncertainty::normal_quantile(0.9) * post.sd;
    e.time_interval_lo = std::exp(post.log_mean - half);
    e.time_interval_hi = std::exp(post.log_mean + half);
    e.time_note = fmt::format(
        "{} run{} (geometric mean of measured / predicted {:.3f}) weighted {:.2f} against the prior, the shipped "
        "model (scale 1): tau {:.3f}, sigma_w {:.3f} ({} published sources, {} runs); the runs weighed with sd {:.3f} "
        "({}); posterior sd of ln(scale) {:.4f}, 80% interval on the scale {:.3f}-{:.3f}",
        r.size(), r.size() == 1 ? "" : "s", std::exp(m.mean), post.weight, prior->tau, prior->sigma_w,
        prior->sources, prior->rows, post.s, post.own_scatter ? "their own" : "sigma_w: under three runs",
        post.sd, e.time_interval_lo, e.time_interval_hi);
    return;
  }
  if (r.size() >= 2) {
    const double n = static_cast<double>(r.size());
    const double half = uncertainty::student_t_quantile(0.9, n - 1) * m.sd / std::sqrt(n);
    e.time_interval_lo = std::exp(m.mean - half);
    e.time_interval_hi = std::exp(m.mean + half);
    e.time_note = fmt::format("geometric mean of {} runs' measured / predicted step time; sd of ln(measured / "
                              "predicted) {:.4f}; 80% t-interval on the scale {:.3f}-{:.3f} ({} degrees of freedom)",
                              r.size(), m.sd, e.time_interval_lo, e.time_interval_hi, r.size() - 1);
  } else {
    e.time_note = "one run: the scale is its measured / predicted step time; one run has no spread of its own, so "
                  "its uncertainty is the unanchored interval's";
  }
}

/// The allocator reserve of one stack's runs, or why it keeps the prior.
void fit_reserve(const std::vector<const RunPoint*>& runs, spec::StackCalibrationEntry& e) {
  spec::StackCorrection& c = e.correction;
  c.reserve_prior = runs.front()->prior_reserve;
  const std::string fw = spec::framework_id(c.framework);
  std::vector<double> q, allocated_ratio;
  for (const RunPoint* p : runs) {
    if (p->measured_memory_bytes <= 0 || p->predicted_allocated_bytes <= 0) continue;
    const double ratio = p->measured_memory_bytes / p->predicted_allocated_bytes;
    if (p->memory_kind == spec::MemoryKind::kReserved) q.push_back(std::log(ratio));
    else allocated_ratio.push_back(ratio);
  }
  if (q.empty()) {
    e.reserve_note = fmt::format("kept at the prior, frameworks/{}.yaml's {:g}: ", fw, c.reserve_prior);
    if (allocated_ratio.empty()) {
      e.reserve_note += "no run gave peak memory";
    } else {
      const Moments a = moments(allocated_ratio);
      e.reserve_note += fmt::format(
          "the runs gave allocated memory (max_memory_allocated), which holds no allocator reserve (measured / "
          "predicted allocated: {:.3f}, {} run{})",
          a.mean, allocated_ratio.size(), allocated_ratio.size() == 1 ? "" : "s");
    }
    return;
  }
  const Moments m = moments(q);
  double rho = std::exp(m.mean) - 1;
  c.memory_runs = static_cast<int>(q.size());
  c.reserve_log_sd = m.sd;
  e.reserve_note = fmt::format("peak reserved / predicted allocated of {} run{}, geometric mean, less 1", q.size(),
                               q.size() == 1 ? "" : "s");
  if (q.size() >= 2) e.reserve_note += fmt::format("; sd of ln(measured / predicted reserved) {:.4f}", m.sd);
  else e.reserve_note += "; one run has no spread of its own";
  if (rho < 0) {
    e.reserve_note += fmt::format("; clamped at 0 from {:.3f}: the runs reserved less than the predicted allocated "
                                  "memory, which no reserve explains (the memory model is high for them)",
                                  rho);
    rho = 0;
  } else if (rho > 1) {
    e.reserve_note += fmt::format("; clamped at 1 from {:.3f}: more than the allocated memory again, which a reserve "
                                  "does not explain (the memory model is low for them)",
                                  rho);
    rho = 1;
  }
  c.allocator_reserve = rho;
}

/// Why the host dispatch and the exposed communication keep the framework
/// profile's values, from the runs' predicted shares of the step.
void hold_note(const std::vector<const RunPoint*>& runs, spec::StackCalibrationEntry& e) {
  const std::string fw = spec::framework_id(e.correction.framework);
  double comm_lo = 1, comm_hi = 0, host_hi = 0;
  int bound = 0;
  for (const RunPoint* p : runs) {
    comm_lo = std::min(comm_lo, p->comm_share);
    comm_hi = std::max(comm_hi, p->comm_share);
    host_hi = std::max(host_hi, p->host_share);
    bound += p->host_bound ? 1 : 0;
  }
  const auto pct = [](double x) { return fmt::format("{:.1f}%", 100 * x); };
  e.held_note = fmt::format(
      "host dispatch per op and the exposed share of communication kept at frameworks/{}.yaml's: a whole run's "
      "step time holds them together with the clock and the kernels' efficiency, in the step-time scale; ",
      fw);
  if (bound > 0)
    e.held_note += fmt::format("{} of {} run{} host-bound in the prediction (dispatch outlasting the kernels), whose "
                               "scale is then the host's as much as the GPU's; ",
                               bound, runs.size(), runs.size() == 1 ? "" : "s");
  else
    e.held_note += fmt::format("no run is host-bound in the prediction (dispatch behind the kernels, at most {} of a "
                               "step), so the runs carry nothing of it; ",
                               pct(host_hi));
  e.held_note += fmt::format("exposed communication {} of the predicted step", comm_lo == comm_hi
                                                                                   ? pct(comm_hi)
                                                                                   : pct(comm_lo) + " to " + pct(comm_hi));
  e.held_note += runs.size() >= 3 && comm_hi - comm_lo >= 0.10
                     ? ": runs that differ this much could tell it from the scale, a fit not made here"
                     : runs.size() >= 3 ? ", too alike across the runs to tell it from the scale"
                                        : ", from under three runs, which cannot tell it from the scale";
}

}  // namespace

spec::StackCalibrationSpec fit_runs(const std::vector<RunPoint>& runs, const std::string& runs_file,
                                    const uncertainty::ScalePrior* prior) {
  spec::StackCalibrationSpec out;
  out.runs_file = runs_file;
  std::vector<std::vector<const RunPoint*>> groups;
  for (const RunPoint& p : runs) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) {
      return g.front()->gpu == p.gpu && g.front()->framework == p.framework;
    });
    if (it == groups.end()) groups.push_back({&p});
    else it->push_back(&p);
  }
  for (const auto& g : groups) {
    spec::StackCalibrationEntry e;
    spec::StackCorrection& c = e.correction;
    c.gpu = g.front()->gpu;
    c.gpu_name = g.front()->gpu_name;
    c.framework = g.front()->framework;
    for (const RunPoint* p : g) {
      c.runs.push_back(p->name);
      spec::StackRunResidual x;
      x.run = p->name;
      x.predicted_step_s = p->predicted_step_s;
      x.measured_step_s = p->measured_step_s;
      x.predicted_reserved_bytes = p->predicted_allocated_bytes * (1 + p->prior_reserve);
      x.measured_memory_bytes = p->measured_memory_bytes;
      if (p->measured_memory_bytes > 0) x.memory_kind = std::string(spec::name(p->memory_kind));
      e.residuals.push_back(std::move(x));
    }
    fit_time(g, e, prior);
    fit_reserve(g, e);
    hold_note(g, e);
    out.stacks.push_back(std::move(e));
  }
  return out;
}

}  // namespace ridgeline::calibrate
