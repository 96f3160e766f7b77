// The wall-clock date stamped into measurement files: header-only, so that
// the CUDA suite (cuda_validation/, which builds without ridgeline_core) and
// the host suite share it.
#pragma once

#include <ctime>
#include <string>

namespace ridgeline::support {

/// The current UTC time in ISO 8601, "2026-12-06T10:31:24Z".
inline std::string utc_now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace ridgeline::support
