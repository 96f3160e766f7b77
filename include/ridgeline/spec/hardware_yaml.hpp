// Writing a hardware profile: the inverse of load_hardware (hardware.hpp).
// The text is in the hardware_profiles/ schema, every dimensioned value with
// the unit the loader expects ("80 GiB", "3.35 TB/s", "989.4 TFLOP/s",
// "2.4 us"), so load_hardware(to_yaml(hw)) gives hw back: exactly with the
// default style, to the stated digits with a rounded one. Values come in SI
// base units (bytes, seconds, FLOP/s, bytes/s, hertz, watts, USD per hour).
#pragma once

#include <string>
#include <string_view>

#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::spec {

struct YamlStyle {
  /// Significant digits per figure; 0 = the shortest text that reads back
  /// to the same double (in the unit the magnitude calls for, unless another
  /// of the dimension's usual units is much shorter: "183359 MiB").
  /// Residual percentages, being statistics, get at most 3.
  int significant_digits = 0;
};

/// The whole profile; sections in the order of the shipped profiles, a field
/// left out where the loader's default gives the same value. No comments:
/// a caller adds its own above the text.
std::string to_yaml(const HardwareSpec& hw, const YamlStyle& style = {});

/// The `calibration:` block alone (to_yaml's last section, also what
/// `ridgeline calibrate` puts into an existing profile); a non-empty
/// `comment` becomes a "# " line right under the key.
std::string calibration_yaml(const CalibrationSpec& c, const YamlStyle& style = {}, std::string_view comment = {});

/// One dimensioned value as the loader reads it, e.g. yaml_quantity(80 * kGiB,
/// Dimension::kBytes) == "80 GiB". With significant digits the unit follows
/// the magnitude (binary prefixes for sizes), as units' printers do.
std::string yaml_quantity(double si_value, units::Dimension dim, const YamlStyle& style = {});

/// A YAML double-quoted scalar: quotes and backslashes escaped, control
/// characters as \xNN (for user text: names, sources).
std::string yaml_quoted(std::string_view s);
/// A plain word bare (a letter, then letters, digits, '_', '.' or '-', and
/// not a word YAML 1.1 reads as a boolean or null), anything else quoted.
std::string yaml_scalar(std::string_view s);

}  // namespace ridgeline::spec
