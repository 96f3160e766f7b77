// Units: SI quantities with their dimension in the type, and the one parser of
// dimensioned text ("3.35 TB/s", "80 GiB", "989.4 TFLOP/s", "1.83 GHz", "5 us").
//
// Inside the program every value is in SI base units: bytes, seconds, FLOP,
// hertz, watts, US dollars. Binary prefixes (KiB, MiB, GiB, TiB) and decimal
// ones (kB, MB, GB, TB) are both understood, exactly. Bit rates ("400 Gb/s")
// are converted to bytes per second. Printers scale back to readable units.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ridgeline::units {

template <class Tag>
struct Quantity {
  double value = 0.0;
  constexpr Quantity() = default;
  constexpr explicit Quantity(double v) : value(v) {}
  constexpr Quantity operator+(Quantity o) const { return Quantity(value + o.value); }
  constexpr Quantity operator-(Quantity o) const { return Quantity(value - o.value); }
  constexpr Quantity operator*(double k) const { return Quantity(value * k); }
  constexpr Quantity operator/(double k) const { return Quantity(value / k); }
  constexpr double operator/(Quantity o) const { return value / o.value; }
  constexpr Quantity& operator+=(Quantity o) { value += o.value; return *this; }
  constexpr auto operator<=>(const Quantity&) const = default;
};

struct BytesTag {};
struct SecondsTag {};
struct FlopsTag {};
struct FlopRateTag {};
struct ByteRateTag {};
struct IntensityTag {};

using Bytes = Quantity<BytesTag>;          // B
using Seconds = Quantity<SecondsTag>;      // s
using Flops = Quantity<FlopsTag>;          // FLOP
using FlopRate = Quantity<FlopRateTag>;    // FLOP/s
using ByteRate = Quantity<ByteRateTag>;    // B/s
using Intensity = Quantity<IntensityTag>;  // FLOP/B

constexpr FlopRate operator/(Flops f, Seconds s) { return FlopRate(f.value / s.value); }
constexpr ByteRate operator/(Bytes b, Seconds s) { return ByteRate(b.value / s.value); }
constexpr Seconds operator/(Flops f, FlopRate r) { return Seconds(f.value / r.value); }
constexpr Seconds operator/(Bytes b, ByteRate r) { return Seconds(b.value / r.value); }
constexpr Intensity operator/(Flops f, Bytes b) { return Intensity(f.value / b.value); }

/// What a YAML value or flag measures; selects the accepted unit suffixes.
enum class Dimension { kBytes, kByteRate, kFlopRate, kFrequency, kTime, kPower, kPricePerHour, kCount };

struct ParseResult {
  std::optional<double> value;  // SI base units
  std::string error;            // set when !value: 'expected ..., got "..."'
};

/// Parses "<number> <unit>" for a dimension. A bare number is an error (except
/// for kCount, where "15T", "2e12" and "300B" are token counts).
ParseResult parse(std::string_view text, Dimension dim);

/// An example of well-formed text for the dimension, for error messages.
std::string_view example(Dimension dim);
/// "a bandwidth", "a size", ... for error messages.
std::string_view describe(Dimension dim);

// Printers: three significant figures, scaled.
std::string format_bytes(double bytes);            // "15.0 GiB"
std::string format_seconds(double seconds);        // "1.23 ms"
std::string format_flops(double flop);             // "1.23 PFLOP"
std::string format_flop_rate(double flop_per_s);   // "989 TFLOP/s"
std::string format_byte_rate(double bytes_per_s);  // "3.35 TB/s"
std::string format_count(double n);                // "8.03B"
std::string format_percent(double frac);           // "45.1%"
/// A run's length in the unit that reads: seconds below a minute
/// (format_seconds), then "18 min" (one decimal below 10 min), "3.5 h" below
/// two days, "17.9 days" from two days on. Non-finite or negative: "unknown".
std::string format_duration(double seconds);
/// A whole count with thousands separators: 305176 -> "305,176" (rounded to
/// the nearest whole number; non-finite: "unknown").
std::string format_whole(double n);

inline constexpr double kKiB = 1024.0;
inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kTera = 1e12;

}  // namespace ridgeline::units
