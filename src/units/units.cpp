#include "ridgeline/units/units.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <utility>

namespace ridgeline::units {
namespace {

struct UnitDef {
  std::string_view name;
  double factor;
};

constexpr UnitDef kByteUnits[] = {
    {"B", 1.0},           {"KiB", kKiB},  {"MiB", kMiB},   {"GiB", kGiB},  {"TiB", kGiB * 1024.0},
    {"kB", 1e3},          {"KB", 1e3},    {"MB", 1e6},     {"GB", 1e9},    {"TB", 1e12},
};
constexpr UnitDef kByteRateUnits[] = {
    {"B/s", 1.0},   {"kB/s", 1e3},       {"KB/s", 1e3},          {"MB/s", 1e6},         {"GB/s", 1e9},
    {"TB/s", 1e12}, {"KiB/s", kKiB},     {"MiB/s", kMiB},        {"GiB/s", kGiB},       {"TiB/s", kGiB * 1024.0},
    {"Gb/s", 1e9 / 8.0}, {"Tb/s", 1e12 / 8.0}, {"Mb/s", 1e6 / 8.0}, {"Gbit/s", 1e9 / 8.0},
};
constexpr UnitDef kFlopRateUnits[] = {
    {"FLOP/s", 1.0},   {"GFLOP/s", 1e9},   {"TFLOP/s", 1e12},   {"PFLOP/s", 1e15},
    {"TFLOPS", 1e12},  {"GFLOPS", 1e9},    {"PFLOPS", 1e15},    {"TOP/s", 1e12}, {"TOPS", 1e12},
};
constexpr UnitDef kFrequencyUnits[] = {{"Hz", 1.0}, {"kHz", 1e3}, {"MHz", 1e6}, {"GHz", 1e9}};
constexpr UnitDef kTimeUnits[] = {{"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"µs", 1e-6}, {"ns", 1e-9},
                                  {"min", 60.0}, {"h", 3600.0}, {"d", 86400.0}};
constexpr UnitDef kPowerUnits[] = {{"W", 1.0}, {"kW", 1e3}};
constexpr UnitDef kPriceUnits[] = {{"USD/h", 1.0}, {"$/h", 1.0}, {"USD/hour", 1.0}};
constexpr UnitDef kCountUnits[] = {{"", 1.0}, {"K", 1e3}, {"k", 1e3}, {"M", 1e6}, {"B", 1e9}, {"G", 1e9}, {"T", 1e12}};

template <size_t N>
std::optional<double> lookup(const UnitDef (&table)[N], std::string_view unit) {
  for (const auto& u : table)
    if (u.name == unit) return u.factor;
  return std::nullopt;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::optional<double> unit_factor(Dimension dim, std::string_view unit) {
  switch (dim) {
    case Dimension::kBytes: return lookup(kByteUnits, unit);
    case Dimension::kByteRate: return lookup(kByteRateUnits, unit);
    case Dimension::kFlopRate: return lookup(kFlopRateUnits, unit);
    case Dimension::kFrequency: return lookup(kFrequencyUnits, unit);
    case Dimension::kTime: return lookup(kTimeUnits, unit);
    case Dimension::kPower: return lookup(kPowerUnits, unit);
    case Dimension::kPricePerHour: return lookup(kPriceUnits, unit);
    case Dimension::kCount: return lookup(kCountUnits, unit);
  }
  return std::nullopt;
}

std::string scaled(double v, const std::pair<double, std::string_view>* steps, size_t n) {
  size_t i = 0;
  while (i + 1 < n && std::fabs(v) >= steps[i + 1].first) ++i;
  double x = v / steps[i].first;
  int decimals = std::fabs(x) >= 100 ? 0 : (std::fabs(x) >= 10 ? 1 : 2);
  return fmt::format("{:.{}f} {}", x, decimals, steps[i].second);
}

}  // namespace

std::string_view example(Dimension dim) {
  switch (dim) {
    case Dimension::kBytes: return "80 GiB";
    case Dimension::kByteRate: return "3.35 TB/s";
    case Dimension::kFlopRate: return "989.4 TFLOP/s";
    case Dimension::kFrequency: return "1.83 GHz";
    case Dimension::kTime: return "5 us";
    case Dimension::kPower: return "700 W";
    case Dimension::kPricePerHour: return "2.50 USD/h";
    case Dimension::kCount: return "15T";
  }
  return "";
}

std::string_view describe(Dimension dim) {
  switch (dim) {
    case Dimension::kBytes: return "a size";
    case Dimension::kByteRate: return "a bandwidth";
    case Dimension::kFlopRate: return "a compute rate";
    case Dimension::kFrequency: return "a frequency";
    case Dimension::kTime: return "a duration";
    case Dimension::kPower: return "a power";
    case Dimension::kPricePerHour: return "a price per hour";
    case Dimension::kCount: return "a count";
  }
  return "";
}

ParseResult parse(std::string_view text, Dimension dim) {
  auto fail = [&] {
    return ParseResult{std::nullopt, fmt::format("expected {} such as \"{}\", got \"{}\"", describe(dim), example(dim),
                                                 std::string(text))};
  };
  std::string_view s = trim(text);
  if (s.empty()) return fail();
  // Leading number (std::from_chars accepts no leading '+').
  double number = 0.0;
  const char* begin = s.data();
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(begin, end, number);
  if (ec != std::errc() || ptr == begin) return fail();
  std::string_view unit = trim(std::string_view(ptr, static_cast<size_t>(end - ptr)));
  if (unit.empty() && dim != Dimension::kCount) return fail();
  auto factor = unit_factor(dim, unit);
  if (!factor) return fail();
  double v = number * *factor;
  if (!std::isfinite(v)) return fail();
  return ParseResult{v, {}};
}

std::string format_bytes(double bytes) {
  static const std::pair<double, std::string_view> steps[] = {
      {1.0, "B"}, {kKiB, "KiB"}, {kMiB, "MiB"}, {kGiB, "GiB"}, {kGiB * 1024.0, "TiB"}};
  return scaled(bytes, steps, std::size(steps));
}

std::string format_seconds(double s) {
  static const std::pair<double, std::string_view> steps[] = {
      {1e-9, "ns"}, {1e-6, "us"}, {1e-3, "ms"}, {1.0, "s"}};
  if (s >= 86400.0 * 2) return fmt::format("{:.1f} d", s / 86400.0);
  if (s >= 3600.0 * 2) return fmt::format("{:.1f} h", s / 3600.0);
  return scaled(s, steps, std::size(steps));
}

std::string format_flops(double f) {
  static const std::pair<double, std::string_view> steps[] = {
      {1.0, "FLOP"}, {1e9, "GFLOP"}, {1e12, "TFLOP"}, {1e15, "PFLOP"}, {1e18, "EFLOP"}};
  return scaled(f, steps, std::size(steps));
}

std::string format_flop_rate(double r) {
  static const std::pair<double, std::string_view> steps[] = {
      {1.0, "FLOP/s"}, {1e9, "GFLOP/s"}, {1e12, "TFLOP/s"}, {1e15, "PFLOP/s"}};
  return scaled(r, steps, std::size(steps));
}

std::string format_byte_rate(double r) {
  static const std::pair<double, std::string_view> steps[] = {
      {1.0, "B/s"}, {1e6, "MB/s"}, {1e9, "GB/s"}, {1e12, "TB/s"}};
  return scaled(r, steps, std::size(steps));
}

std::string format_count(double n) {
  static const std::pair<double, std::string_view> steps[] = {
      {1.0, ""}, {1e3, "K"}, {1e6, "M"}, {1e9, "B"}, {1e12, "T"}};
  auto s = scaled(n, steps, std::size(steps));
  // "8.03 B" -> "8.03B"
  auto sp = s.rfind(' ');
  if (sp != std::string::npos) s.erase(sp, 1);
  return s;
}

std::string format_percent(double frac) { return fmt::format("{:.1f}%", frac * 100.0); }

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "unknown";
  if (s < 60.0) return format_seconds(s);
  if (s < 3600.0) {
    const double min = s / 60.0;
    return min < 9.95 ? fmt::format("{:.1f} min", min) : fmt::format("{:.0f} min", min);
  }
  if (s < 2 * 86400.0) return fmt::format("{:.1f} h", s / 3600.0);
  return fmt::format("{:.1f} days", s / 86400.0);
}

std::string format_whole(double n) {
  if (!std::isfinite(n)) return "unknown";
  const double r = std::round(n);
  std::string digits = fmt::format("{:.0f}", std::fabs(r));
  std::string o;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) o += ',';
    o += digits[i];
  }
  return r < 0 ? "-" + o : o;
}

}  // namespace ridgeline::units
