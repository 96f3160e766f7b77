// A number as the JSON views write it.
#pragma once

#include <cmath>
#include <nlohmann/json.hpp>

namespace ridgeline::report {

/// JSON never carries NaN or infinity: a non-finite value becomes null.
inline nlohmann::json json_number(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

}  // namespace ridgeline::report
