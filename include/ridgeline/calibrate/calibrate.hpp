// Calibration: measured kernels -> the efficiency parameters of the cost
// model (a profile's `calibration:` block), and validation statistics.
//
// Every measurement record is predicted by the cost model itself
// (cost::cost_kernel on the graph::Kernel the record's class maps to), so a
// fitted parameter means exactly what the engine will do with it. Fits
// minimise relative error: each record's residual is (predicted - measured)
// / measured, i.e. least squares weighted by 1 / t_measured, made robust with
// a Huber loss (quadratic within 10%, linear beyond; iteratively reweighted
// for the linear fit) so one disturbed record does not move the fit.
//
// Fitted parameters and the records that determine them (each class's
// MeasurementFit in spec/measurement_class.hpp):
//   launch_overhead          launch records: median of time / launches
//   hbm_efficiency,          hbm_copy + hbm_triad: weighted linear least squares (Eigen) on
//   hbm_latency                t - launches * launch = bytes / (bw * hbm_frac) + latency
//   class_efficiency.*       elementwise_unfused/fused -> elementwise, softmax -> softmax,
//                              layernorm -> norm: multiplier on hbm_efficiency (1-D search)
//   gemm_efficiency.<peak>,  gemm records per peak; tile (m, n) and prologue/epilogue k0
//   gemm_tile {m, n, k0}       from a grid of 9 x 7 candidates, by least total residual
//   attention_efficiency     attention_sdpa (tensor-core fused attention, PyTorch SDPA) on a
//                              GPU; attention_flash (the host's tiled kernel) on a CPU
// attention_naive (its GEMMs + softmax), attention_cuda_core (a tiled kernel
// on CUDA cores: its time says nothing about the tensor-core efficiency),
// l2_copy/l2_triad, launch_host, host fp64 GEMMs (half the fp32 rate;
// profiles have no fp64 peak), sram and launch_graph records are predicted
// and validated but fit nothing. Records whose check failed or that were
// measured while the clock was held down (`throttled`) are left out of the
// fit and of validation. Units: seconds, bytes, FLOP.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ridgeline/cost/cost.hpp"
#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/measurement_class.hpp"
#include "ridgeline/spec/measurements.hpp"
#include "ridgeline/support/diagnostics.hpp"

namespace ridgeline::calibrate {

/// Fewest records a fitted class needs (launch: 1, since each launch record
/// already averages thousands of launches).
inline constexpr int kMinRecordsPerClass = 3;

/// Fewest records of a class and dtype the fit needs: kMinRecordsPerClass,
/// 1 for launch_overhead's class, 0 for a class that fits nothing (and for
/// fp64 GEMMs, which profiles have no peak to fit).
int min_fit_records(spec::MeasurementClass cls, const std::string& dtype);

/// Predicted time (seconds) of one measured record under the cost model.
/// `stream_frac` is the fraction of HBM bandwidth a plain STREAM copy or triad
/// reaches (EfficiencySpec::hbm_frac, before class multipliers: copies are
/// the reference the multipliers are relative to); 0 = cost copies like any
/// elementwise kernel, at c.mem_frac[elementwise].
///   gemm             one kGemm kernel of the record's shape and dtype; fp64 (host)
///                    as fp32 with K doubled (half the SIMD lanes: half the rate)
///   hbm_copy/triad,  kElementwise kernels with the record's bytes and FLOPs,
///   elementwise_*      split evenly over its launches
///   softmax          kSoftmax; layernorm: kNorm
///   attention_flash  one kAttention kernel, variant flash2 (no shape: FLOPs / (peak x efficiency))
///   attention_sdpa   the engine's fused forward kernel of the record's shape (queries m,
///                    keys k, head dim n, batch x heads; causal), variant flash2
///   attention_cuda_core  one kAttention kernel at the fp32 (CUDA-core) peak
///   l2_copy/triad    as hbm_copy/triad (the cost model has no L2 bandwidth)
///   attention_naive  QK^T GEMM + softmax + PV GEMM (batch = record.batch)
///   launch(_host, _graph)  launches only (CUDA graph launch cost for launch_graph)
///   sram             SRAM bytes only
double predict_record(const spec::MeasurementRecord& r, const cost::CostParams& c, double stream_frac = 0.0);

/// Resolved parameters for predicting records: the profile's (calibrated
/// when `efficiency` is given, else the documented defaults) and the
/// streaming fraction copies are costed at.
struct RecordModel {
  cost::CostParams params;
  double stream_frac = 0.0;
};
RecordModel record_model(const spec::HardwareSpec& hw, const spec::EfficiencySpec* efficiency);
double predict_record(const spec::MeasurementRecord& r, const RecordModel& m);

/// Signed relative error in percent: (predicted - measured) / measured x 100.
double error_pct(double predicted_s, double measured_s);

struct FitResult {
  /// Fitted values; a field that was not fitted stays 0 (the default applies).
  spec::EfficiencySpec efficiency;
  bool tile_fitted = false;
  /// Parameters fitted, in order ("launch_overhead", "hbm_efficiency", "gemm_efficiency.fp32", ...).
  std::vector<std::string> fitted;
  /// Per measurement class, over the records used: median and p90 |error| %.
  std::vector<spec::CalibrationResidual> residuals;
  /// Records left out and why ("gemm_bf16_512: check failed"), classes not fitted.
  std::vector<std::string> notes;
  int records_used = 0;
  /// Held-out statistics per class (heldout_residuals of a validate split;
  /// empty when calibrate ran without a holdout), written beside the fit.
  double heldout_fraction = 0;
  std::vector<spec::HeldoutResidual> heldout;
};

/// Fits the profile's efficiency parameters to the measurements. Throws
/// support::SpecError (located at the class's first record) when a class has
/// 1 or 2 usable records, or when no record is usable. Records whose check
/// failed or that were throttled are left out (noted).
FitResult fit(const spec::MeasurementSet& set, const spec::HardwareSpec& hw);

/// The profile with the fit as its calibration block (what loading the
/// written file gives).
spec::HardwareSpec with_calibration(const spec::HardwareSpec& hw, const FitResult& fit,
                                    const spec::MeasurementSet& set, const std::string& date);

/// The `calibration:` block (spec::calibration_yaml of with_calibration's
/// block, 4 significant digits, under a comment saying where it came from).
std::string calibration_block(const FitResult& fit, const spec::MeasurementSet& set, const std::string& date);

/// `profile_text` with its top-level `calibration:` block (if any) replaced by `block`.
std::string replace_calibration_block(const std::string& profile_text, const std::string& block);

/// Loads profile text (written to a temporary file) with spec::load_hardware.
spec::HardwareSpec load_hardware_text(const std::string& text);

/// Whether a measurement file's device and a profile name the same GPU
/// model: equal after normalisation, one containing the other, or sharing a
/// model token ("h100", "a100", "mi300x", "4090"; sizes and form factors such
/// as "80gb", "sxm5", "pcie" do not count).
bool same_device(const std::string& measured, const std::string& profile);

/// Checks the measurement header's device against the profile. A mismatch
/// throws support::SpecError at header.device unless `force`, when it is
/// returned as a warning.
std::optional<support::Diagnostic> check_device(const spec::MeasurementSet& set, const spec::HardwareSpec& hw,
                                                bool force);

// --- Validation -------------------------------------------------------------------

struct RecordError {
  std::string name;
  spec::MeasurementClass cls = spec::MeasurementClass::kHbmCopy;
  std::string dtype;
  double measured_s = 0;
  double predicted_s = 0;          // calibrated (fit on the training part)
  double error_pct = 0;            // signed
  double default_predicted_s = 0;  // uncalibrated (documented defaults)
  double default_error_pct = 0;
};

struct GroupStats {
  std::optional<spec::MeasurementClass> cls;  // none: every record ("all")
  std::string dtype;                          // "" for a whole class
  int records = 0;
  double median_abs_pct = 0, p90_abs_pct = 0;
  double default_median_abs_pct = 0, default_p90_abs_pct = 0;
};

struct ValidationReport {
  std::string device, profile, measurements;
  double holdout_frac = 0;
  std::uint64_t seed = 0;
  int train_records = 0;
  int test_records = 0;
  bool in_sample = false;  // holdout 0: fit and test on every record
  FitResult fit;           // fit on the training part
  std::vector<GroupStats> groups;  // per class and dtype, on the held-out part
  GroupStats overall;
  std::vector<RecordError> records;  // every held-out record
  std::vector<RecordError> worst;    // largest calibrated |error| first (up to 10)
};

/// Splits the records (seeded, deterministic, per class and dtype, keeping
/// at least kMinRecordsPerClass of each fitted class for training), fits on
/// the training part, predicts the held-out part with the fit and with the
/// uncalibrated defaults (cost::resolve(hw, false)). holdout_frac in [0, 1);
/// 0 validates in sample.
ValidationReport validate(const spec::MeasurementSet& set, const spec::HardwareSpec& hw, double holdout_frac,
                          std::uint64_t seed);

/// Per class of the held-out records (those with a positive measured and
/// predicted time), the mean and sample standard deviation of ln(predicted /
/// measured time) under the fit on the training part; classes with fewer
/// than two held-out records are left out.
std::vector<spec::HeldoutResidual> heldout_residuals(const ValidationReport& r);

/// Median and p90 (linear interpolation between order statistics) of |values|.
double percentile_abs(std::vector<double> values, double q);

}  // namespace ridgeline::calibrate
