#include "ridgeline/calibrate/calibrate.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <sstream>
#include <unistd.h>

#include "ridgeline/spec/hardware_yaml.hpp"
#include "ridgeline/spec/plan.hpp"
#include "ridgeline/spec/yaml_reader.hpp"

namespace ridgeline::calibrate {

using spec::Dtype;
using spec::KernelClass;
using spec::MeasurementClass;
using spec::MeasurementFit;
using spec::MeasurementRecord;

namespace {

constexpr int kcls(KernelClass c) { return static_cast<int>(c); }

graph::Kernel make_kernel(KernelClass cls, Dtype dt) {
  graph::Kernel k;
  k.name = "measurement";
  k.cls = cls;
  k.dtype = dt;
  k.impl = graph::kImplTuned;  // the microbenchmarks' kernels are hand-written (cuda_validation/, the host backend)
  return k;
}

/// A fused attention kernel (FlashAttention-2's costing) of the record's bytes and launches.
graph::Kernel fused_attention(const spec::MeasurementRecord& r, Dtype dt, double flops) {
  graph::Kernel k = make_kernel(KernelClass::kAttention, dt);
  k.impl = static_cast<std::uint8_t>(spec::AttentionKind::kFlash2);
  k.flops = flops;
  k.read_bytes = r.bytes;
  k.launches = r.launches;
  return k;
}

/// The record's dtype as a graph dtype; fp64 (host only) maps to fp32 and is flagged.
Dtype record_dtype(const std::string& s, bool& fp64) {
  fp64 = s == "fp64";
  if (fp64) return Dtype::kFp32;
  return spec::parse_dtype(s).value_or(Dtype::kFp32);
}

double element_bytes(const std::string& dtype) {
  bool fp64 = false;
  const Dtype dt = record_dtype(dtype, fp64);
  return fp64 ? 8.0 : spec::bytes_per_element(dt);
}

double time_of(const graph::Kernel& k, const cost::CostParams& c, bool graphs = false) {
  return cost::cost_kernel(k, c, graphs).time_s;
}

/// A streaming record split evenly over its launches (an unfused chain is
/// `launches` kernels moving bytes / launches each).
double streaming_time(const MeasurementRecord& r, KernelClass cls, Dtype dt, const cost::CostParams& c) {
  const double n = std::max(1.0, std::round(r.launches));
  graph::Kernel k = make_kernel(cls, dt);
  k.read_bytes = r.bytes / n;
  k.flops = r.flops / n;
  k.launches = 1;
  return n * time_of(k, c);
}

/// GEMM output tiles tried: squares (16 to 256: small ones model a CPU's
/// micro-kernels, which barely quantize) and the rectangular shapes cuBLAS
/// and CUTLASS kernels use most.
constexpr std::pair<double, double> kTileCandidates[] = {{128, 128}, {16, 16},  {32, 32},  {64, 64},  {256, 256},
                                                         {64, 128},  {128, 64}, {128, 256}, {256, 128}};

/// A tile's fixed work beyond its K loop (prologue, pipeline fill, epilogue),
/// in K steps: 0 (a CPU micro-kernel) to 512; the default 128 first.
constexpr double kK0Candidates[] = {128, 0, 16, 32, 64, 256, 512};

/// The kernel class a record is costed as (attention_naive: as the kernels
/// of its parts, the fused kernel's class here; launches and SRAM streams as
/// empty or SRAM-only elementwise kernels).
constexpr KernelClass costed_as(MeasurementClass c) {
  switch (c) {
    case MeasurementClass::kGemm: return KernelClass::kGemm;
    case MeasurementClass::kSoftmax: return KernelClass::kSoftmax;
    case MeasurementClass::kLayernorm: return KernelClass::kNorm;
    case MeasurementClass::kAttentionNaive:
    case MeasurementClass::kAttentionFlash:
    case MeasurementClass::kAttentionCudaCore:
    case MeasurementClass::kAttentionSdpa: return KernelClass::kAttention;
    case MeasurementClass::kHbmCopy:
    case MeasurementClass::kHbmTriad:
    case MeasurementClass::kL2Copy:
    case MeasurementClass::kL2Triad:
    case MeasurementClass::kSram:
    case MeasurementClass::kElementwiseUnfused:
    case MeasurementClass::kElementwiseFused:
    case MeasurementClass::kLaunch:
    case MeasurementClass::kLaunchHost:
    case MeasurementClass::kLaunchGraph: return KernelClass::kElementwise;
  }
  return KernelClass::kElementwise;
}

/// The parameter a class's records fit, as the too-few-records error names it
/// (GEMMs name theirs per dtype: gemm_efficiency.<peak>).
std::string fitted_parameter(MeasurementClass c) {
  switch (spec::measurement_class_info(c).fits) {
    case MeasurementFit::kNothing: return "";
    case MeasurementFit::kLaunchOverhead: return "launch_overhead";
    case MeasurementFit::kHbm: return "hbm_efficiency and hbm_latency";
    case MeasurementFit::kClassEfficiency: return fmt::format("class_efficiency.{}", spec::name(costed_as(c)));
    case MeasurementFit::kGemm: return "gemm_efficiency";
    case MeasurementFit::kAttention: return "attention_efficiency";
  }
  return "";
}

// --- Fitting helpers ------------------------------------------------------------

/// Minimises f over [lo, hi] (lo > 0): a log-spaced grid, then golden-section
/// search between the best grid point's neighbours. Ties keep the first
/// (smallest) point.
template <class F>
double minimize_1d(F&& f, double lo, double hi) {
  constexpr int kGrid = 64;
  const double llo = std::log(lo), lhi = std::log(hi);
  auto at = [&](int i) { return std::exp(llo + (lhi - llo) * i / (kGrid - 1)); };
  int best = 0;
  double best_v = f(at(0));
  for (int i = 1; i < kGrid; ++i) {
    const double v = f(at(i));
    if (v < best_v) {
      best_v = v;
      best = i;
    }
  }
  double a = std::log(at(std::max(0, best - 1))), b = std::log(at(std::min(kGrid - 1, best + 1)));
  const double g = (std::sqrt(5.0) - 1.0) / 2.0;
  double x1 = b - g * (b - a), x2 = a + g * (b - a);
  double f1 = f(std::exp(x1)), f2 = f(std::exp(x2));
  for (int it = 0; it < 40; ++it) {
    if (f1 < f2) {
      b = x2;
      x2 = x1;
      f2 = f1;
      x1 = b - g * (b - a);
      f1 = f(std::exp(x1));
    } else {
      a = x1;
      x1 = x2;
      f1 = f2;
      x2 = a + g * (b - a);
      f2 = f(std::exp(x2));
    }
  }
  const double x = std::exp(0.5 * (a + b));
  return f(x) <= best_v ? x : at(best);
}

using RecordList = std::vector<const MeasurementRecord*>;

/// Relative residual beyond which the loss grows linearly, not quadratically
/// (Huber 1964): one disturbed sample, or a shape the model cannot express
/// (a 64^3 GEMM dominated by call overhead), does not drag the fit off the rest.
constexpr double kHuberDelta = 0.10;

double huber(double r) {
  const double a = std::fabs(r);
  return a <= kHuberDelta ? 0.5 * r * r : kHuberDelta * (a - 0.5 * kHuberDelta);
}

/// IRLS weight of a residual: huber'(r) / r.
double huber_weight(double r) {
  const double a = std::fabs(r);
  return a <= kHuberDelta ? 1.0 : kHuberDelta / a;
}

/// Huber loss of the relative residuals (predicted - measured) / measured.
double objective(const RecordList& records, const RecordModel& m) {
  double s = 0;
  for (const auto* r : records) s += huber((predict_record(*r, m) - r->median_s) / r->median_s);
  return s;
}

/// Lower-case alphanumeric tokens of a device name.
std::vector<std::string> tokens(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (std::isalnum(c)) {
      cur.push_back(static_cast<char>(std::tolower(c)));
    } else if (!cur.empty()) {
      out.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

/// A token that names a GPU model: letters and digits, not a memory size
/// ("80gb"), a form factor ("sxm5", "pcie4") or a memory type ("hbm3").
bool model_token(const std::string& t) {
  const bool digit = std::any_of(t.begin(), t.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  const bool alpha = std::any_of(t.begin(), t.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
  if (digit && !alpha) return t.size() >= 4;  // a model number such as 4090
  if (!digit || !alpha) return false;
  auto strip_digits_prefix = [](const std::string& x) {
    size_t i = 0;
    while (i < x.size() && std::isdigit(static_cast<unsigned char>(x[i]))) ++i;
    return x.substr(i);
  };
  auto strip_digits_suffix = [](const std::string& x) {
    size_t i = x.size();
    while (i > 0 && std::isdigit(static_cast<unsigned char>(x[i - 1]))) --i;
    return x.substr(0, i);
  };
  const std::string unit = strip_digits_prefix(t);
  if (unit == "gb" || unit == "gib" || unit == "g") return false;
  const std::string form = strip_digits_suffix(t);
  return !(form == "sxm" || form == "pcie" || form == "hbm" || form == "gddr" || form == "nvl" || form == "oam");
}

/// The calibration block a fit makes; a tile that was not fitted is 0 x 0
/// with no k0 (so it is not written and the defaults apply).
spec::CalibrationSpec calibration_of(const FitResult& fit, const spec::MeasurementSet& set, const std::string& date) {
  spec::CalibrationSpec c;
  c.present = true;
  c.measurements = set.source_file;
  c.device = set.header.device;
  c.date = date;
  c.efficiency = fit.efficiency;
  if (!fit.tile_fitted) {
    c.efficiency.gemm_tile_m = c.efficiency.gemm_tile_n = 0;
    c.efficiency.gemm_k0 = -1;
  }
  c.residuals = fit.residuals;
  c.heldout_fraction = fit.heldout.empty() ? 0.0 : fit.heldout_fraction;
  c.heldout = fit.heldout;
  return c;
}

}  // namespace

// --- Prediction -----------------------------------------------------------------

double predict_record(const MeasurementRecord& r, const cost::CostParams& c, double stream_frac) {
  bool fp64 = false;
  const Dtype dt = record_dtype(r.dtype, fp64);
  switch (r.cls) {
    case MeasurementClass::kGemm: {
      graph::Kernel k = make_kernel(KernelClass::kGemm, dt);
      // fp64 on the host: half the SIMD lanes, so the fp32 rate at twice the work.
      k.gemm = {r.m, r.n, fp64 ? 2.0 * r.k : r.k, std::max(1.0, r.batch)};
      k.flops = fp64 ? 2.0 * r.flops : r.flops;
      k.read_bytes = r.bytes;
      k.launches = r.launches;
      return time_of(k, c);
    }
    case MeasurementClass::kHbmCopy:
    case MeasurementClass::kHbmTriad:
    case MeasurementClass::kL2Copy:
    case MeasurementClass::kL2Triad: {
      if (stream_frac <= 0) return streaming_time(r, KernelClass::kElementwise, dt, c);
      cost::CostParams cs = c;
      cs.mem_frac[kcls(KernelClass::kElementwise)] = stream_frac;
      return streaming_time(r, KernelClass::kElementwise, dt, cs);
    }
    case MeasurementClass::kElementwiseUnfused:
    case MeasurementClass::kElementwiseFused: return streaming_time(r, KernelClass::kElementwise, dt, c);
    case MeasurementClass::kSoftmax:
    case MeasurementClass::kLayernorm: {
      graph::Kernel k = make_kernel(costed_as(r.cls), dt);
      k.read_bytes = r.bytes;
      k.flops = r.flops;
      k.launches = r.launches;
      return time_of(k, c);
    }
    case MeasurementClass::kAttentionFlash:
      return time_of(fused_attention(r, dt, fp64 ? 2.0 * r.flops : r.flops), c);
    case MeasurementClass::kAttentionCudaCore:
      // CUDA cores do fp32 FMAs whatever the inputs' type: the fp32 peak.
      return time_of(fused_attention(r, Dtype::kFp32, r.flops), c);
    case MeasurementClass::kAttentionSdpa: {
      // The engine's fused forward kernel of this shape (graph::flash_attention_forward's
      // shape fields): m = queries, k = keys (m when 0), n = head dim, batch x heads.
      graph::Kernel k = fused_attention(r, dt, r.flops);
      k.gemm = {r.m, r.k > 0 ? r.k : r.m, r.n, std::max(1.0, r.batch)};
      if (r.causal) k.flags = static_cast<std::uint16_t>(k.flags | graph::kCausal);
      return time_of(k, c);
    }
    case MeasurementClass::kAttentionNaive: {
      // m = sequence, n = head dim, batch = batch x heads: S = Q K^T, P = softmax(S), O = P V.
      const double s = r.m, d = r.n, bh = std::max(1.0, r.batch), eb = element_bytes(r.dtype);
      graph::Kernel qk = make_kernel(KernelClass::kGemm, dt);
      qk.gemm = {s, s, fp64 ? 2 * d : d, bh};
      qk.flops = 2.0 * s * s * d * bh * (fp64 ? 2 : 1);
      qk.read_bytes = 2.0 * s * d * bh * eb;
      qk.write_bytes = s * s * bh * eb;
      graph::Kernel sm = make_kernel(KernelClass::kSoftmax, dt);
      sm.read_bytes = s * s * bh * eb;
      sm.write_bytes = s * s * bh * eb;
      sm.flops = 5.0 * s * s * bh;
      graph::Kernel pv = make_kernel(KernelClass::kGemm, dt);
      pv.gemm = {s, d, fp64 ? 2 * s : s, bh};
      pv.flops = qk.flops;
      pv.read_bytes = (s * s + s * d) * bh * eb;
      pv.write_bytes = s * d * bh * eb;
      return time_of(qk, c) + time_of(sm, c) + time_of(pv, c);
    }
    case MeasurementClass::kLaunch:
    case MeasurementClass::kLaunchHost:
    case MeasurementClass::kLaunchGraph: {
      graph::Kernel k = make_kernel(KernelClass::kElementwise, dt);
      k.launches = r.launches;
      return time_of(k, c, r.cls == MeasurementClass::kLaunchGraph);
    }
    case MeasurementClass::kSram: {
      graph::Kernel k = make_kernel(KernelClass::kElementwise, dt);
      k.sram_bytes = r.bytes;
      k.launches = r.launches;
      return time_of(k, c);
    }
  }
  return 0.0;
}

RecordModel record_model(const spec::HardwareSpec& hw, const spec::EfficiencySpec* efficiency) {
  RecordModel m;
  const spec::EfficiencySpec defaults = cost::default_efficiency(hw);
  if (efficiency) {
    spec::HardwareSpec h = hw;
    h.calibration.present = true;
    h.calibration.efficiency = *efficiency;
    m.params = cost::resolve(h, true);
    m.stream_frac = efficiency->hbm_frac > 0 ? efficiency->hbm_frac : defaults.hbm_frac;
  } else {
    m.params = cost::resolve(hw, false);
    m.stream_frac = defaults.hbm_frac;
  }
  return m;
}

double predict_record(const MeasurementRecord& r, const RecordModel& m) {
  return predict_record(r, m.params, m.stream_frac);
}

int min_fit_records(MeasurementClass cls, const std::string& dtype) {
  switch (spec::measurement_class_info(cls).fits) {
    case MeasurementFit::kNothing: return 0;
    case MeasurementFit::kLaunchOverhead: return 1;
    case MeasurementFit::kGemm: return dtype == "fp64" ? 0 : kMinRecordsPerClass;
    case MeasurementFit::kHbm:
    case MeasurementFit::kClassEfficiency:
    case MeasurementFit::kAttention: return kMinRecordsPerClass;
  }
  return 0;
}

double error_pct(double predicted_s, double measured_s) { return (predicted_s - measured_s) / measured_s * 100.0; }

double percentile_abs(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  for (double& v : values) v = std::fabs(v);
  std::sort(values.begin(), values.end());
  const double pos = q * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(values.size() - 1, lo + 1);
  return values[lo] + (pos - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

// --- Fit ------------------------------------------------------------------------

FitResult fit(const spec::MeasurementSet& set, const spec::HardwareSpec& hw) {
  FitResult out;
  out.efficiency = spec::EfficiencySpec{};
  out.efficiency.gemm_tile_m = out.efficiency.gemm_tile_n = 0;

  // Usable records, by class (gemm also by dtype).
  std::map<MeasurementClass, RecordList, spec::MeasurementClassNameLess> by_class;
  std::map<std::string, RecordList> gemm_by_dtype;
  for (const auto& r : set.records) {
    if (r.check == "fail") {
      out.notes.push_back(fmt::format("{}: left out, its correctness check failed", r.name));
      continue;
    }
    if (r.throttled) {
      out.notes.push_back(fmt::format("{}: left out, measured while the clock was held down ({})", r.name,
                                      r.throttle_reasons.empty() ? "throttled" : r.throttle_reasons));
      continue;
    }
    if (!(r.median_s > 0)) continue;
    by_class[r.cls].push_back(&r);
    // fp64 (host) is predicted at half the fp32 rate and validated, but fits
    // nothing: profiles have no fp64 peak to fit a fraction of.
    if (r.cls == MeasurementClass::kGemm && r.dtype != "fp64") gemm_by_dtype[r.dtype].push_back(&r);
  }
  if (by_class.empty())
    throw support::SpecError({set.source_file, 0, 0}, "records",
                             "no usable records: every record failed its correctness check or was throttled");

  // Refuse classes with too few records to fit.
  support::DiagnosticList diags;
  auto too_few = [&](const RecordList& list, int needed, const std::string& what, const std::string& param) {
    if (list.empty() || static_cast<int>(list.size()) >= needed) return;
    diags.error({set.source_file, list.front()->line, 0}, what,
                fmt::format("{} record{}; fitting {} needs at least {} (measure more sizes, or leave the class out)",
                            list.size(), list.size() == 1 ? "" : "s", param, needed));
  };
  for (const auto& [cls, list] : by_class) {
    if (cls == MeasurementClass::kGemm) continue;  // per dtype, below
    too_few(list, min_fit_records(cls, list.front()->dtype), std::string(spec::name(cls)), fitted_parameter(cls));
  }
  for (const auto& [dtype, list] : gemm_by_dtype) {
    bool fp64 = false;
    const Dtype dt = record_dtype(dtype, fp64);
    too_few(list, min_fit_records(MeasurementClass::kGemm, dtype), fmt::format("gemm ({})", dtype),
            fmt::format("{}.{}", fitted_parameter(MeasurementClass::kGemm), spec::name(spec::peak_of(dt))));
  }
  diags.throw_if_errors();

  spec::EfficiencySpec e = cost::default_efficiency(hw);
  spec::HardwareSpec lean = hw;  // record_model copies it per evaluation: drop what the cost model never reads
  lean.sources.clear();
  lean.calibration = spec::CalibrationSpec{};
  auto model = [&] { return record_model(lean, &e); };
  // The records of every class `wanted` picks, class by class in table order.
  auto records_of = [&](auto wanted) {
    RecordList list;
    for (const spec::MeasurementClassInfo& i : spec::kMeasurementClasses)
      if (auto it = by_class.find(i.cls); it != by_class.end() && wanted(i))
        list.insert(list.end(), it->second.begin(), it->second.end());
    return list;
  };
  auto fitting = [](MeasurementFit f) { return [f](const spec::MeasurementClassInfo& i) { return i.fits == f; }; };

  // 1. Launch overhead: each record is already a mean over many launches.
  if (RecordList l = records_of(fitting(MeasurementFit::kLaunchOverhead)); !l.empty()) {
    std::vector<double> per;
    for (const auto* r : l) per.push_back(r->median_s / std::max(1.0, r->launches));
    e.launch_overhead_s = percentile_abs(per, 0.5);
    out.efficiency.launch_overhead_s = e.launch_overhead_s;
    out.fitted.push_back("launch_overhead");
  }

  // 2. Streaming: t - launches * launch = bytes / (bw * hbm_frac) + latency,
  //    linear in (1 / (bw hbm_frac), latency); rows weighted by 1 / t, and
  //    reweighted (IRLS) so the loss is kHuberDelta's Huber loss.
  if (RecordList s = records_of(fitting(MeasurementFit::kHbm)); !s.empty()) {
    const int n = static_cast<int>(s.size());
    Eigen::MatrixXd X(n, 2);
    Eigen::VectorXd y(n), w0(n);
    for (int i = 0; i < n; ++i) {
      w0(i) = 1.0 / s[i]->median_s;
      X(i, 0) = s[i]->bytes;
      X(i, 1) = 1.0;
      y(i) = s[i]->median_s - std::max(1.0, s[i]->launches) * e.launch_overhead_s;
    }
    const double bw = std::max(hw.hbm_bytes_per_s, 1.0);
    double inv_rate = 0, latency = 0;
    // Weighted least squares, then kept physical and inside the loader's
    // ranges (latency >= 0, 0.01 <= hbm_frac <= 1), refitting the other.
    auto solve = [&](const Eigen::VectorXd& w) {
      const Eigen::MatrixXd A = w.asDiagonal() * X;
      const Eigen::VectorXd b = w.cwiseProduct(y);
      const Eigen::Vector2d x = A.colPivHouseholderQr().solve(b);
      inv_rate = x(0);
      latency = x(1);
      if (latency < 0) {
        latency = 0;
        inv_rate = b.dot(A.col(0)) / A.col(0).squaredNorm();
      }
      const double frac = inv_rate > 0 ? 1.0 / (inv_rate * bw) : 1.0;
      if (!(inv_rate > 0) || frac > 1.0 || frac < 0.01) {
        inv_rate = 1.0 / (std::clamp(frac, 0.01, 1.0) * bw);
        latency = std::max(0.0, (b - A.col(0) * inv_rate).dot(A.col(1)) / A.col(1).squaredNorm());
      }
    };
    Eigen::VectorXd w = w0;
    for (int it = 0; it < 20; ++it) {
      solve(w);
      for (int i = 0; i < n; ++i) {
        const double rel = (X(i, 0) * inv_rate + latency - y(i)) * w0(i);
        w(i) = w0(i) * std::sqrt(huber_weight(rel));
      }
    }
    solve(w);
    const double frac = std::clamp(1.0 / (inv_rate * bw), 0.01, 1.0);
    e.hbm_frac = frac;
    e.hbm_latency_s = latency;
    out.efficiency.hbm_frac = frac;
    out.efficiency.hbm_latency_s = latency;
    out.fitted.push_back("hbm_efficiency");
    out.fitted.push_back("hbm_latency");
  }

  // 3. Per-class multipliers on hbm_efficiency, one per kernel class the
  //    classes are costed as, in the order the table first names them.
  std::vector<KernelClass> multipliers;
  for (const spec::MeasurementClassInfo& i : spec::kMeasurementClasses)
    if (i.fits == MeasurementFit::kClassEfficiency &&
        std::find(multipliers.begin(), multipliers.end(), costed_as(i.cls)) == multipliers.end())
      multipliers.push_back(costed_as(i.cls));
  for (const KernelClass kc : multipliers) {
    RecordList list = records_of([&](const spec::MeasurementClassInfo& i) {
      return i.fits == MeasurementFit::kClassEfficiency && costed_as(i.cls) == kc;
    });
    if (list.empty()) continue;
    double& slot = e.class_mem_frac[kcls(kc)];
    slot = minimize_1d(
        [&](double v) {
          slot = v;
          return objective(list, model());
        },
        0.01, 2.0);
    out.efficiency.class_mem_frac[kcls(kc)] = slot;
    out.fitted.push_back(fmt::format("class_efficiency.{}", spec::name(kc)));
  }

  // 4. GEMM: per peak a fraction; one tile shape and prologue/epilogue k0
  //    for all, the best of a grid (every peak's fraction refitted for each).
  std::map<int, RecordList> gemm_groups;  // by peak index
  for (const auto& [dtype, list] : gemm_by_dtype) {
    bool fp64 = false;
    const int pk = static_cast<int>(spec::peak_of(record_dtype(dtype, fp64)));
    gemm_groups[pk].insert(gemm_groups[pk].end(), list.begin(), list.end());
  }
  if (!gemm_groups.empty()) {
    double best_total = std::numeric_limits<double>::infinity();
    double best_m = 128, best_n = 128, best_k0 = 128;
    std::map<int, double> best_frac;
    // The defaults (128 x 128, k0 128) first: a later candidate must do strictly better.
    for (double k0 : kK0Candidates)
      for (const auto& [tm, tn] : kTileCandidates) {
        e.gemm_tile_m = tm;
        e.gemm_tile_n = tn;
        e.gemm_k0 = k0;
        double total = 0;
        std::map<int, double> fracs;
        for (const auto& [pk, list] : gemm_groups) {
          double& slot = e.gemm_frac[pk];
          slot = minimize_1d(
              [&](double v) {
                slot = v;
                return objective(list, model());
              },
              0.01, 1.0);
          fracs[pk] = slot;
          total += objective(list, model());
        }
        if (total < best_total * (1 - 1e-9)) {
          best_total = total;
          best_m = tm;
          best_n = tn;
          best_k0 = k0;
          best_frac = fracs;
        }
      }
    e.gemm_tile_m = best_m;
    e.gemm_tile_n = best_n;
    e.gemm_k0 = best_k0;
    out.efficiency.gemm_tile_m = best_m;
    out.efficiency.gemm_tile_n = best_n;
    out.efficiency.gemm_k0 = best_k0;
    out.tile_fitted = true;
    for (const auto& [pk, f] : best_frac) {
      e.gemm_frac[pk] = f;
      out.efficiency.gemm_frac[pk] = f;
      out.fitted.push_back(fmt::format("gemm_efficiency.{}", spec::kPeakNames[pk]));
    }
    out.fitted.push_back("gemm_tile");
  }

  // 5. Fused attention.
  if (RecordList a = records_of(fitting(MeasurementFit::kAttention)); !a.empty()) {
    e.attention_frac = minimize_1d(
        [&](double v) {
          e.attention_frac = v;
          return objective(a, model());
        },
        0.01, 1.0);
    out.efficiency.attention_frac = e.attention_frac;
    out.fitted.push_back("attention_efficiency");
  }

  for (const spec::MeasurementClassInfo& i : spec::kMeasurementClasses)
    if (i.fits == MeasurementFit::kNothing && by_class.count(i.cls))
      out.notes.push_back(fmt::format("{}: predicted and validated; it fits no parameter", i.name));
  if (auto it = by_class.find(MeasurementClass::kGemm); it != by_class.end() &&
      std::any_of(it->second.begin(), it->second.end(), [](const auto* r) { return r->dtype == "fp64"; }))
    out.notes.push_back("gemm (fp64): predicted at half the fp32 rate and validated; it fits no parameter");

  // Residuals per measurement class under the final fit.
  const RecordModel final_model = record_model(hw, &out.efficiency);
  for (const auto& [cls, list] : by_class) {
    std::vector<double> err;
    for (const auto* r : list) err.push_back(error_pct(predict_record(*r, final_model), r->median_s));
    spec::CalibrationResidual res;
    res.cls = std::string(spec::name(cls));
    res.records = static_cast<int>(list.size());
    res.median_abs_pct = percentile_abs(err, 0.5);
    res.p90_abs_pct = percentile_abs(err, 0.9);
    out.residuals.push_back(res);
    out.records_used += res.records;
  }
  return out;
}

// --- Writing the calibration block --------------------------------------------------

std::string calibration_block(const FitResult& fit, const spec::MeasurementSet& set, const std::string& date) {
  return spec::calibration_yaml(
      calibration_of(fit, set, date), spec::YamlStyle{.significant_digits = 4},
      fmt::format("Fitted by `ridgeline calibrate` from {} records ({} backend); fields not listed keep the documented "
                  "defaults.",
                  fit.records_used, set.header.backend.empty() ? "unknown" : set.header.backend));
}

std::string replace_calibration_block(const std::string& profile_text, const std::string& block) {
  std::vector<std::string> lines;
  {
    std::istringstream in(profile_text);
    std::string line;
    while (std::getline(in, line)) lines.push_back(line);
  }
  auto top_level_key = [](const std::string& l) {
    return !l.empty() && l[0] != ' ' && l[0] != '\t' && l[0] != '#' && l[0] != '\r';
  };
  std::string out;
  bool inserted = false;
  for (size_t i = 0; i < lines.size();) {
    const std::string& l = lines[i];
    if (l.rfind("calibration:", 0) == 0) {
      size_t j = i + 1;
      while (j < lines.size() && !top_level_key(lines[j]) && !(lines[j].rfind("#", 0) == 0)) ++j;
      out += block;
      inserted = true;
      i = j;
      continue;
    }
    out += l + "\n";
    ++i;
  }
  if (!inserted) {
    if (!out.empty() && out.back() != '\n') out += "\n";
    out += block;
  }
  return out;
}

spec::HardwareSpec with_calibration(const spec::HardwareSpec& hw, const FitResult& fit,
                                    const spec::MeasurementSet& set, const std::string& date) {
  spec::HardwareSpec h = hw;
  h.calibration = calibration_of(fit, set, date);
  return h;
}

spec::HardwareSpec load_hardware_text(const std::string& text) {
  static std::atomic<int> counter{0};
  namespace fs = std::filesystem;
  const fs::path tmp =
      fs::temp_directory_path() / fmt::format("ridgeline_profile_{}_{}.yaml", static_cast<long>(getpid()), counter++);
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    if (!f) throw std::runtime_error("cannot write a temporary file to check the profile: " + tmp.string());
  }
  try {
    spec::HardwareSpec hw = spec::load_hardware(tmp.string());
    std::error_code ec;
    fs::remove(tmp, ec);
    return hw;
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
}

// --- Device check -------------------------------------------------------------------

bool same_device(const std::string& measured, const std::string& profile) {
  const auto a = tokens(measured), b = tokens(profile);
  std::string ja, jb;
  for (const auto& t : a) ja += t;
  for (const auto& t : b) jb += t;
  if (ja.empty() || jb.empty()) return false;
  if (ja == jb || ja.find(jb) != std::string::npos || jb.find(ja) != std::string::npos) return true;
  for (const auto& t : a)
    if (model_token(t) && std::find(b.begin(), b.end(), t) != b.end()) return true;
  return false;
}

std::optional<support::Diagnostic> check_device(const spec::MeasurementSet& set, const spec::HardwareSpec& hw,
                                                bool force) {
  if (same_device(set.header.device, hw.name)) return std::nullopt;
  support::SourceLoc loc{set.source_file, 0, 0};
  if (!set.source_file.empty()) {
    try {
      spec::YamlNode root = spec::load_yaml_file(set.source_file);
      if (root.IsMap() && root["header"].IsMap() && root["header"]["device"].IsDefined())
        loc = spec::loc_of(set.source_file, root["header"]["device"]);
    } catch (const std::exception&) {
    }
  }
  if (!force)
    throw support::SpecError(loc, "header.device",
                             fmt::format("measured on '{}', but the profile describes '{}'; pass --force to use "
                                         "these measurements anyway",
                                         set.header.device, hw.name));
  return support::Diagnostic{loc, "header.device",
                             fmt::format("measured on '{}', but the profile describes '{}'; used anyway (--force)",
                                         set.header.device, hw.name),
                             support::Severity::kWarning};
}

}  // namespace ridgeline::calibrate
