// Measurements: what a microbenchmark run wrote (cuda_validation on a GPU, or
// `ridgeline microbench --host` on this CPU). Schema "ridgeline.measurements/1",
// documented in docs/measurements.md. Times in seconds, sizes in bytes.
#pragma once

#include <string>
#include <vector>

#include "ridgeline/spec/measurement_class.hpp"

namespace ridgeline::spec {

struct MeasurementHeader {
  std::string schema;       // "ridgeline.measurements/1"
  std::string backend;      // "cuda" or "host"
  std::string device;       // e.g. "NVIDIA H200"
  int sm_count = 0;         // SMs, or CPU cores for the host backend
  double clock_hz = 0.0;    // SM clock (or CPU nominal clock)
  double memory_clock_hz = 0.0;
  double memory_bytes = 0.0;
  std::string driver_version;
  std::string runtime_version;
  std::string date;         // ISO 8601
  std::string tool_version;
  bool quick = false;
};

/// One measured point; `cls` is what it measures (measurement_class.hpp).
struct MeasurementRecord {
  std::string name;
  MeasurementClass cls = MeasurementClass::kHbmCopy;
  std::string dtype;  // "fp32", "tf32", "fp16", "bf16", "fp8_e4m3", "fp64"
  // Shape, as the class's RecordShape says: GEMM m, n, k, batch; attention
  // m = seq, n = head_dim, k = keys, batch = batch x heads; rows and columns
  // for softmax and layernorm (m = rows, n = cols); elements for streaming kernels.
  double m = 0, n = 0, k = 0, batch = 1;
  double elements = 0;
  double flops = 0;   // FLOP per run
  double bytes = 0;   // HBM (or DRAM) bytes per run, minimum traffic
  double launches = 1;
  double median_s = 0;
  double min_s = 0;
  double p90_s = 0;      // 90th percentile of the samples; 0 = not recorded
  int samples = 0;
  int repetitions = 1;   // runs timed back to back per sample (short kernels); times are per run
  bool causal = false;   // attention records: causal mask (FLOPs halved, as FlashAttention counts)
  std::string algorithm;  // e.g. cuBLASLt algorithm id and tile
  std::string check;      // "pass", "fail" or "none"
  // The device's state while the record was measured (NVML; 0 / "" = not read).
  double sm_clock_hz = 0;
  double memory_clock_hz = 0;
  double power_w = 0;
  std::string throttle_reasons;  // NVML clocks-event reasons that held the clock down, "+"-joined
  bool throttled = false;        // measured while the clock was held down: left out of the fit
  int line = 0;           // where the record starts in its file (for diagnostics)
};

struct MeasurementSet {
  std::string source_file;
  MeasurementHeader header;
  std::vector<MeasurementRecord> records;
};

inline constexpr const char* kMeasurementSchema = "ridgeline.measurements/1";

/// The names of the measurement classes, in table order (for did-you-mean suggestions).
const std::vector<std::string>& measurement_class_names();

/// Reads and validates a measurement file (JSON). Throws support::SpecError.
MeasurementSet load_measurements(const std::string& path);

/// Writes a measurement file (JSON) to a string.
std::string to_json(const MeasurementSet& set);

}  // namespace ridgeline::spec
