// How sure a prediction is: prediction intervals from the out-of-sample
// residuals of Ridgeline's own predictions of published measurements.
//
// Every predicted end-to-end row of validation/published.yaml, predicted
// with the cost-model defaults fitted on its own group left out
// (validation::leave_one_group_out), leaves one residual
//   r = log(predicted step time / measured step time)
// (a throughput's residual is log(measured / predicted): the same run, the
// same r). scripts/accuracy_table.sh writes them, with what makes two runs
// comparable (RunTraits), to validation/residuals.json.
//
// The residuals of one published source share an offset (its software
// stack, its clocks, how it counted): a run from a source the validation has
// never seen is off by a new offset as well as by the scatter within a
// source. So the interval is a random-effects (one-way) prediction interval
// in log space:
//   r ~ mu + b + e,  b ~ N(0, s_b^2) between sources, e ~ N(0, s_w^2) within,
//   interval on r: mu -+ z_{(1+l)/2} sqrt(s_w^2 + s_b^2), widened to hold 0
// (the point estimate), where
//   mu   = the mean of the pool's per-source means (each source counts once),
//   s_w  = the pool's pooled within-source standard deviation,
//   s_b  = the standard deviation of the per-source means of every source of
//          the same kind (training runs, or kernels),
// and the pool is the most specific set of comparable rows holding
// kMinPoolRows rows from kMinPoolSources sources:
//   framework + generation + what dominates + GPU count + model size,
//   then without model size, without GPU count, without what dominates,
//   then every row of the generation, then every end-to-end row.
// A pool too thin falls back to the next, and the interval says so.
//
// Outside what was validated the spread widens (Interval::widened says by
// how much and why), in log-space variance added to s_w^2 + s_b^2:
//  - a framework, or a GPU generation, no validated training run used: one
//    more source-sized offset each, + s_b^2 (a stack never measured is off
//    from the measured ones as one source is off from another);
//  - a GPU count or a model size outside the validated runs' range, d
//    doublings beyond its nearest end: + (sigma_slope d)^2, sigma_slope the
//    spread across sources of each source's least-squares slope of r per
//    doubling (sources whose runs span at least one doubling): within the
//    range a source's drift with scale is in its residuals; beyond it, an
//    unseen source's drift is as uncertain as the sources' slopes differ. Its
// coverage is checked out of sample (validation/coverage.hpp): each row's
// interval drawn with its own source left out of every pool and of s_b.
//
// Kernel rows (GEMM and attention benchmarks) give kernel-level intervals
// the same way: pools by kind + generation + dtype, then kind + generation,
// then kind, then every kernel row.
//
// Peak memory has no published measurement to draw residuals from; its
// interval is the allocator's: memory_interval().
//
// A prediction on a stack calibrated on the user's own runs (calibrate
// --runs, --calibration) has had the stack's offset estimated: its time
// interval is anchored on those K runs, centred on the calibrated point, in
// log space -+ z_{(1+l)/2} sqrt(sd_post^2 + s_new^2 + beta d) (scale_prior.hpp):
// sd_post the posterior sd of ln(scale) under the prior of the published
// sources' offsets (tau) and scatter (sigma_w), s_new a new run's scatter
// (sigma_w; from three runs the runs' own sd where larger), beta the
// variance within-source pairs of published runs grow by per doubling
// apart, d the doublings of GPU count and model size the plan lies beyond
// the runs'. Without residuals to draw a prior from:
//   n >= 2: -+ t_{n-1, (1+l)/2} s sqrt(1 + 1/n), s the runs' sample sd of
//           ln(measured / predicted), or the unanchored pool's s_w with the
//           normal quantile where s is below it;
//   n = 1:  -+ z_{(1+l)/2} sd, sd the unanchored interval's whole spread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/kinds.hpp"

namespace ridgeline::engine {
struct Prediction;
}
namespace ridgeline::memory {
struct MemoryResult;
}
namespace ridgeline::spec {
struct PlanSpec;
}

namespace ridgeline::uncertainty {

/// Fewer comparable rows than this and a pool is too thin to stand alone: its
/// within-source spread from under 20 rows is uncertain by more than 15%
/// (the standard error of a standard deviation, 1/sqrt(2(n-1))).
inline constexpr int kMinPoolRows = 20;

/// A pool's centre is the mean of its sources' offsets; from one source
/// that is the source's own offset (a training run's software era or
/// cluster, a kernel benchmark's harness and clock), which a new user's
/// stack or kernel does not share: a pool needs two sources. (A kernel pool
/// of one source had set the FlashAttention-3 paper's rows, left out, on
/// the flash-attention README's 21 A100 rows alone: their 80% interval
/// held for 40% of the attention rows; from two sources, see docs/accuracy.md.)
inline constexpr std::size_t kMinPoolSources = 2;

/// The nominal level when none is asked for.
inline constexpr double kDefaultLevel = 0.8;

/// What dominates a step's time: the largest of GEMM time, attention time,
/// memory-bound kernel time (every other kernel class) and exposed
/// communication (collectives and point-to-point nothing hides, and the
/// compute the overlapped ones slow down).
enum class Dominant : std::uint8_t { kCompute, kAttention, kMemoryBound, kCommunication };
inline constexpr int kDominantCount = 4;
std::string_view name(Dominant d);  // "compute", "attention", "memory-bound", "communication"
bool parse_dominant(std::string_view s, Dominant& out);

/// What makes two training runs comparable.
struct RunTraits {
  std::uint8_t framework = 0;  // index into spec::frameworks()
  spec::Generation generation = spec::Generation::kAmpere;
  long long gpus = 1;
  double params = 0;  // total parameters
  Dominant dominant = Dominant::kCompute;
  /// The profile's calibration, when the prediction used one with held-out
  /// statistics: its GEMM records' spread replaces the kernel-level part of
  /// the published spread (not read from or written to the residual file).
  const spec::CalibrationSpec* calibration = nullptr;
  /// The GPU + framework stack's correction fitted to the user's own runs
  /// (--calibration), when the prediction applied one: the interval is
  /// anchored on those runs (IntervalModel::run_interval). Not read from or
  /// written to the residual file.
  const spec::StackCorrection* stack = nullptr;
};

/// The traits of a predicted training step on `hw` under `plan`.
RunTraits traits_of(const engine::Prediction& p, const spec::PlanSpec& plan, const spec::HardwareSpec& hw);

/// GPU-count and model-size buckets: "1 GPU", "2-8 GPUs", "9-64 GPUs",
/// "65-512 GPUs", "over 512 GPUs"; "under 2B", "2-20B", "20-100B", "over 100B" parameters.
int gpu_bucket(long long gpus);
int size_bucket(double params);
std::string_view gpu_bucket_name(int b);
std::string_view size_bucket_name(int b);

/// What makes two kernel measurements comparable.
enum class KernelKind : std::uint8_t { kGemm, kAttention };
std::string_view name(KernelKind k);  // "gemm", "attention"
struct KernelTraits {
  KernelKind kind = KernelKind::kGemm;
  spec::Generation generation = spec::Generation::kAmpere;
  spec::Dtype dtype = spec::Dtype::kBf16;
  /// A calibrated profile's calibration: with held-out records of the
  /// kernel's class ("gemm", "attention_flash"), the interval is theirs.
  const spec::CalibrationSpec* calibration = nullptr;
};

/// The measurement class whose held-out records stand for kernels of kind `k`.
std::string_view calibration_class(KernelKind k);  // "gemm", "attention_flash"

/// One out-of-sample residual: log(predicted time / measured time).
struct Residual {
  std::string id;
  std::string group;
  bool kernel = false;  // a kernel row (kernel_traits) or an end-to-end row (run)
  RunTraits run;
  KernelTraits kernel_traits;
  double log_residual = 0;
};

/// A prediction interval on a time: the measured time is expected in
/// [point x lo, point x hi] at `level` (lo <= 1 <= hi); a rate (tokens/s,
/// MFU, TFLOP/s) in [point / hi, point / lo].
struct Interval {
  double level = 0;
  double lo = 1, hi = 1;
  std::string pool;     // the pool the residuals came from, in words
  int rows = 0;         // its rows
  bool fallback = false;  // not the most specific pool: too few comparable rows there
  std::string note;       // why it fell back, in words; "" when it did not
  /// A calibrated profile's held-out records set the interval (kernels) or
  /// its kernel-level part (training runs); `calibration_note` says what
  /// calibration removed and what stays.
  bool calibrated = false;
  std::string calibration_note;
  /// Anchored on the user's own runs of this GPU + framework stack
  /// (RunTraits::stack): centred on the calibrated point, its spread the
  /// runs' own (`rows` is the number of runs; `note` says how it was made).
  bool anchored = false;
  /// Why and by how much the spread was widened for a plan outside what was
  /// validated (a framework or generation no validated run used, a GPU count
  /// or model size beyond the validated range); "" when inside.
  std::string widened;
  /// How often an interval drawn this way held: of the validated training
  /// runs (kernels: kernel rows), each given the interval at this level with
  /// its own source left out of every pool, the share whose measurement lay
  /// inside (held_out_covered, 0..1) and how many were drawn (held_out_rows;
  /// 0 = not computed). IntervalModel::held_out_coverage.
  double held_out_covered = 0;
  int held_out_rows = 0;
  /// The spreads behind lo and hi, in log space: the whole standard
  /// deviation (between and within sources), and the pool's within-source
  /// part alone, which is what remains in the ratio of two predictions that
  /// share a source's offset (two plans on one software stack: advise's gains).
  double log_sd = 0, log_sd_within = 0;
  bool valid() const { return rows > 0; }
  double time_lo(double t) const { return t * lo; }
  double time_hi(double t) const { return t * hi; }
  double rate_lo(double v) const { return v / hi; }
  double rate_hi(double v) const { return v / lo; }
};

/// The residual pools behind every interval.
class IntervalModel {
 public:
  IntervalModel() = default;
  explicit IntervalModel(std::vector<Residual> rows, std::string source = {});

  bool empty() const { return rows_.empty(); }
  const std::vector<Residual>& rows() const { return rows_; }
  const std::string& source() const { return source_; }

  /// The interval of a training step with traits `t` at `level` (0 < level < 1);
  /// anchored on the stack's runs when t.stack is set.
  /// Rows of `exclude_group` are left out of every pool (leave-one-group-out
  /// coverage). An invalid Interval (rows 0, note set) when no pool holds
  /// enough rows for the level.
  Interval run_interval(const RunTraits& t, double level, std::string_view exclude_group = {}) const;
  /// The same for one kernel.
  Interval kernel_interval(const KernelTraits& k, double level, std::string_view exclude_group = {}) const;

  /// Out-of-sample coverage at `level`: every training run (kernel: every
  /// kernel row) given its interval with its own source left out of every
  /// pool, as a run Ridgeline has never seen; the share whose residual lies
  /// inside, and how many had an interval. Computed once per level and kind,
  /// then kept (the rows do not change).
  struct Coverage {
    double covered = 0;
    int rows = 0;
  };
  Coverage held_out_coverage(double level, bool kernels) const;

 private:
  Interval run_interval_unrated(const RunTraits& t, double level, std::string_view exclude_group) const;
  /// run_interval of a prediction on a calibrated stack (t.stack): anchored
  /// on its runs (the top of this file).
  Interval anchored_interval(const RunTraits& t, double level, std::string_view exclude_group) const;
  Interval kernel_interval_unrated(const KernelTraits& k, double level, std::string_view exclude_group) const;
  /// student_t_quantile(p, nu), each answer kept in the memo.
  double t_quantile(double p, double nu) const;
  /// `iv` with the held-out coverage of its kind at its level.
  Interval rated(Interval iv, bool kernels, std::string_view exclude_group) const;

  std::vector<Residual> rows_;
  std::string source_;
  /// held_out_coverage's results by (level, kind) and t_quantile's, shared by
  /// the model's copies (the rows are the same) and guarded for concurrent callers.
  struct CoverageMemo {
    std::mutex mutex;
    struct Entry {
      double level;
      bool kernels;
      Coverage coverage;
    };
    std::vector<Entry> entries;
    struct Quantile {
      double p, nu, t;
    };
    std::vector<Quantile> quantiles;  // student_t_quantile's answers
  };
  std::shared_ptr<CoverageMemo> memo_ = std::make_shared<CoverageMemo>();
};

/// The standard normal quantile: z with P(Z <= z) = p, 0 < p < 1.
double normal_quantile(double p);

/// Student's t quantile with nu > 0 degrees of freedom: t with P(T <= t) = p.
double student_t_quantile(double p, double nu);

/// The random-effects bounds on the log-residual at `level`, widened to hold
/// 0: mu -+ z sqrt(s_w^2 + s_b^2) (see the top of this file).
void random_effects_bounds(double mu, double s_within, double s_between, double level, double& r_lo, double& r_hi);

/// Checks a requested level: a number in [0.5, 0.99]; the message when not.
bool valid_level(double level, std::string& message);

/// Reads residuals written by write_residuals; a malformed file is a located
/// support::SpecError.
IntervalModel load_residuals(const std::string& path);
/// The YAML text of `rows` (the header says how they were made).
std::string write_residuals(const std::vector<Residual>& rows, std::string_view published_file);

/// The residuals shipped in data_dir()/validation/residuals.json, read once
/// (load_residuals, its errors located); an empty model when the file is
/// absent (every interval then says so).
const IntervalModel& shipped();
/// The path shipped() reads.
std::string shipped_path();

/// Peak memory's interval: the published peak-memory rows (validate-published's
/// "Peak memory") are too few to draw residuals from, so the allocator's own
/// spread. Low: the tensors alone
/// (allocated + workspace, torch.cuda.max_memory_allocated); point: allocated
/// x (1 + the framework's allocator reserve) + workspace
/// (max_memory_reserved); high: the reserve twice over, allocated x (1 + 2 x
/// reserve) + workspace. The same at every level.
struct MemoryInterval {
  double lo = 0, point = 0, hi = 0;  // bytes per GPU
  bool fits_point = false;           // point <= capacity
  bool fits_high = false;            // hi <= capacity
  std::string basis;                 // how it was made, in words
};
MemoryInterval memory_interval(const memory::MemoryResult& m);

}  // namespace ridgeline::uncertainty
