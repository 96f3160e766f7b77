// The measurement file: schema "ridgeline.measurements/1" (documented in
// docs/measurements.md), written as JSON with exactly the keys ridgeline's
// loader accepts, and put in place atomically (temporary file + rename).
#pragma once

#include "harness/device_info.hpp"
#include "harness/suite.hpp"

#include <string>
#include <vector>

namespace ridgeline::cuda_bench {

inline constexpr const char* kMeasurementSchema = "ridgeline.measurements/1";

/// The whole file: schema, header (device, clocks, versions, date, quick) and records.
std::string measurements_json(const DeviceInfo& device, bool quick, const std::string& date_iso8601,
                              const std::string& tool_version, const std::vector<Record>& records);

/// "PATH.tmp.PID": the temporary file written before the rename.
std::string temp_path(const std::string& path);

/// Writes `text` to temp_path(path), syncs it, and renames it to `path`;
/// prints the reason to stderr and returns false on failure.
bool write_atomically(const std::string& path, const std::string& text);

}  // namespace ridgeline::cuda_bench
