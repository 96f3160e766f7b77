#include "ridgeline/spec/hardware_yaml.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>
#include <span>
#include <vector>

namespace ridgeline::spec {

using units::Dimension;

namespace {

struct Unit {
  std::string_view name;
  double factor;  // SI base units per unit
};

/// The units a profile writes a dimension in, smallest first (each one that
/// units::parse accepts for it); `zero` is the unit a zero is written in.
struct Ladder {
  std::span<const Unit> units;
  std::string_view zero;
};

constexpr Unit kBinaryBytes[] = {
    {"B", 1.0}, {"KiB", units::kKiB}, {"MiB", units::kMiB}, {"GiB", units::kGiB}, {"TiB", units::kGiB * 1024.0}};
/// Exact text may also use decimal sizes ("40 GB"); rounded text keeps to binary ones.
constexpr Unit kAllBytes[] = {{"B", 1.0},          {"kB", 1e3},           {"KiB", units::kKiB}, {"MB", 1e6},
                              {"MiB", units::kMiB}, {"GB", 1e9},           {"GiB", units::kGiB}, {"TB", 1e12},
                              {"TiB", units::kGiB * 1024.0}};
constexpr Unit kByteRates[] = {{"B/s", 1.0}, {"kB/s", 1e3}, {"MB/s", 1e6}, {"GB/s", 1e9}, {"TB/s", 1e12}};
constexpr Unit kFlopRates[] = {{"FLOP/s", 1.0}, {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12}};
constexpr Unit kOpRates[] = {{"FLOP/s", 1.0}, {"TOP/s", 1e12}};  // int8: integer operations
constexpr Unit kFrequencies[] = {{"Hz", 1.0}, {"kHz", 1e3}, {"MHz", 1e6}, {"GHz", 1e9}};
constexpr Unit kTimes[] = {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}};
constexpr Unit kPowers[] = {{"W", 1.0}};  // a GPU's TDP, "1000 W" rather than "1 kW"
constexpr Unit kPrices[] = {{"USD/h", 1.0}};

Ladder ladder(Dimension dim, bool exact) {
  switch (dim) {
    case Dimension::kBytes: return exact ? Ladder{kAllBytes, "B"} : Ladder{kBinaryBytes, "B"};
    case Dimension::kByteRate: return {kByteRates, "GB/s"};
    case Dimension::kFlopRate: return {kFlopRates, "TFLOP/s"};
    case Dimension::kFrequency: return {kFrequencies, "GHz"};
    case Dimension::kTime: return {kTimes, "us"};
    case Dimension::kPower: return {kPowers, "W"};
    case Dimension::kPricePerHour: return {kPrices, "USD/h"};
    case Dimension::kCount: break;
  }
  return {};
}

/// Whether `text` reads back (through the one units parser) as exactly `v`.
bool reads_back(const std::string& text, Dimension dim, double v) {
  const units::ParseResult r = units::parse(text, dim);
  return r.value && *r.value == v;
}

/// The largest unit the value is at least 1 of (else the smallest): the
/// unit a reader expects for the magnitude, as units' printers choose it.
size_t magnitude_unit(double v, std::span<const Unit> units) {
  size_t best = 0;
  for (size_t u = 0; u < units.size(); ++u)
    if (std::fabs(v) >= units[u].factor && units[u].factor >= units[best].factor) best = u;
  return best;
}

/// Exact: per unit, the shortest number (of 1 to 17 significant digits)
/// that reads back to v. The magnitude's unit wins unless its number is more
/// than 2 characters longer than the shortest ("1.965 GHz", not "1965 MHz";
/// "183359 MiB", not "179.0615234375 GiB"); else the shortest, the larger
/// unit on a tie. Every ladder has a unit of factor 1, where 17 digits
/// always read back.
std::string exact_quantity(double v, Dimension dim, std::span<const Unit> units) {
  std::vector<std::string> numbers(units.size());
  for (size_t u = 0; u < units.size(); ++u) {
    const double x = v / units[u].factor;
    for (int digits = 1; digits <= 17; ++digits) {
      std::string n = fmt::format("{:.{}g}", x, digits);
      if ((numbers[u].empty() || n.size() < numbers[u].size()) &&
          reads_back(fmt::format("{} {}", n, units[u].name), dim, v))
        numbers[u] = std::move(n);
    }
  }
  size_t shortest = units.size();
  for (size_t u = units.size(); u-- > 0;)
    if (!numbers[u].empty() && (shortest == units.size() || numbers[u].size() < numbers[shortest].size()))
      shortest = u;
  const size_t natural = magnitude_unit(v, units);
  const size_t pick =
      !numbers[natural].empty() && numbers[natural].size() <= numbers[shortest].size() + 2 ? natural : shortest;
  return fmt::format("{} {}", numbers[pick], units[pick].name);
}

/// Rounded: in the magnitude's unit.
std::string rounded_quantity(double v, std::span<const Unit> units, int digits) {
  const size_t u = magnitude_unit(v, units);
  return fmt::format("{:.{}g} {}", v / units[u].factor, digits, units[u].name);
}

std::string quantity(double v, Dimension dim, std::span<const Unit> units, std::string_view zero,
                     const YamlStyle& style) {
  if (v == 0.0) return fmt::format("0 {}", zero);
  if (style.significant_digits > 0) return rounded_quantity(v, units, style.significant_digits);
  return exact_quantity(v, dim, units);
}

/// A bare number: exact (shortest round trip) or to the style's digits.
std::string number(double v, const YamlStyle& style, int max_digits = 0) {
  int digits = style.significant_digits;
  if (digits > 0 && max_digits > 0) digits = std::min(digits, max_digits);
  return digits > 0 ? fmt::format("{:.{}g}", v, digits) : fmt::format("{}", v);
}

/// A YAML double-quoted scalar: quotes and backslashes escaped, control
/// characters as \xNN (names and sources are user input).
std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out.push_back(c);
    }
  }
  return out + "\"";
}

/// A plain word (vendor, a sources key, a residual's class) bare, anything
/// else quoted: a letter, then letters, digits, '_', '.' or '-', and not one
/// of the words YAML 1.1 readers take for booleans or null.
std::string scalar(std::string_view s) {
  static constexpr std::string_view kReserved[] = {"y",  "n",   "yes",   "no",   "true", "false",
                                                   "on", "off", "null",  "nan",  "inf"};
  bool plain = !s.empty() && std::isalpha(static_cast<unsigned char>(s.front()));
  for (char c : s) plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-');
  if (plain) {
    std::string lower(s);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    plain = std::find(std::begin(kReserved), std::end(kReserved), lower) == std::end(kReserved);
  }
  return plain ? std::string(s) : quoted(s);
}

}  // namespace

std::string yaml_quantity(double si_value, Dimension dim, const YamlStyle& style) {
  const Ladder l = ladder(dim, style.significant_digits <= 0);
  if (l.units.empty()) return number(si_value, style);  // a count: a bare number
  return quantity(si_value, dim, l.units, l.zero, style);
}

std::string calibration_yaml(const CalibrationSpec& c, const YamlStyle& style, std::string_view comment) {
  const EfficiencySpec& e = c.efficiency;
  auto time = [&](double s) { return yaml_quantity(s, Dimension::kTime, style); };
  std::string y = "calibration:\n";
  if (!comment.empty()) y += fmt::format("  # {}\n", comment);
  y += fmt::format("  measurements: {}\n", quoted(c.measurements));
  y += fmt::format("  device: {}\n", quoted(c.device));
  y += fmt::format("  date: {}\n", quoted(c.date));
  if (std::any_of(e.gemm_frac.begin(), e.gemm_frac.end(), [](double f) { return f > 0; })) {
    y += "  gemm_efficiency:\n";
    for (int i = 0; i < kPeakCount; ++i)
      if (e.gemm_frac[i] > 0) y += fmt::format("    {}: {}\n", kPeakNames[i], number(e.gemm_frac[i], style));
  }
  // Without a gemm_tile key the loader keeps EfficiencySpec's 128 x 128; a
  // zero tile means "not fitted" (calibrate::with_calibration).
  if (e.gemm_tile_m > 0 && e.gemm_tile_n > 0) {
    y += fmt::format("  gemm_tile:\n    m: {}\n    n: {}\n", static_cast<long long>(e.gemm_tile_m),
                     static_cast<long long>(e.gemm_tile_n));
    if (e.gemm_k0 >= 0) y += fmt::format("    k0: {}\n", number(e.gemm_k0, style));
  }
  if (e.attention_frac > 0) y += fmt::format("  attention_efficiency: {}\n", number(e.attention_frac, style));
  if (e.hbm_frac > 0) y += fmt::format("  hbm_efficiency: {}\n", number(e.hbm_frac, style));
  if (e.hbm_frac > 0 || e.hbm_latency_s > 0) y += fmt::format("  hbm_latency: {}\n", time(e.hbm_latency_s));
  if (std::any_of(e.class_mem_frac.begin(), e.class_mem_frac.end(), [](double f) { return f > 0; })) {
    y += "  class_efficiency:\n";
    for (int i = 0; i < kKernelClassCount; ++i)
      if (e.class_mem_frac[i] > 0)
        y += fmt::format("    {}: {}\n", kKernelClassNames[i], number(e.class_mem_frac[i], style));
  }
  if (e.launch_overhead_s > 0) y += fmt::format("  launch_overhead: {}\n", time(e.launch_overhead_s));
  if (e.comm_frac > 0) y += fmt::format("  comm_efficiency: {}\n", number(e.comm_frac, style));
  if (!c.residuals.empty()) {
    y += "  residuals:\n";
    for (const CalibrationResidual& r : c.residuals)
      y += fmt::format("    - {{class: {}, records: {}, median_abs_pct: {}, p90_abs_pct: {}}}\n", scalar(r.cls),
                       r.records, number(r.median_abs_pct, style, 3), number(r.p90_abs_pct, style, 3));
  }
  if (!c.heldout.empty()) {
    y += fmt::format("  heldout_fraction: {}\n", number(c.heldout_fraction, style));
    y += "  heldout:\n";
    for (const HeldoutResidual& h : c.heldout)
      y += fmt::format("    - {{class: {}, records: {}, log_mean: {}, log_sd: {}}}\n", scalar(h.cls), h.records,
                       number(h.log_mean, style), number(h.log_sd, style));
  }
  return y;
}

std::string to_yaml(const HardwareSpec& hw, const YamlStyle& style) {
  auto q = [&](double v, Dimension dim) { return yaml_quantity(v, dim, style); };
  std::string y;
  y += fmt::format("name: {}\n", quoted(hw.name));
  y += fmt::format("vendor: {}\n", scalar(hw.vendor));
  if (!hw.architecture.empty()) y += fmt::format("architecture: {}\n", quoted(hw.architecture));
  y += fmt::format("generation: {}\n", name(hw.generation));
  if (!hw.aliases.empty()) {
    std::string list;
    for (const std::string& a : hw.aliases) list += (list.empty() ? "" : ", ") + scalar(a);
    y += fmt::format("aliases: [{}]\n", list);
  }
  y += "memory:\n";
  y += fmt::format("  capacity: {}\n", q(hw.memory_bytes, Dimension::kBytes));
  y += fmt::format("  hbm_bandwidth: {}\n", q(hw.hbm_bytes_per_s, Dimension::kByteRate));
  if (hw.l2_bytes > 0) y += fmt::format("  l2_cache: {}\n", q(hw.l2_bytes, Dimension::kBytes));
  y += "compute:\n";
  y += fmt::format("  sm_count: {}\n", hw.sm_count);
  if (hw.clock_hz > 0) y += fmt::format("  boost_clock: {}\n", q(hw.clock_hz, Dimension::kFrequency));
  if (hw.sustained_clock_hz > 0)
    y += fmt::format("  sustained_clock: {}\n", q(hw.sustained_clock_hz, Dimension::kFrequency));
  if (hw.exp_per_sm_clock != 16.0) y += fmt::format("  exp_per_sm_clock: {:g}\n", hw.exp_per_sm_clock);
  if (hw.smem_per_sm_bytes > 0) y += fmt::format("  smem_per_sm: {}\n", q(hw.smem_per_sm_bytes, Dimension::kBytes));
  if (hw.sram_bytes_per_s > 0)
    y += fmt::format("  sram_bandwidth: {}\n", q(hw.sram_bytes_per_s, Dimension::kByteRate));
  y += "  peak:\n";
  for (int i = 0; i < kPeakCount; ++i) {
    const double v = hw.peak_flop_per_s[i];
    if (!(v > 0)) continue;  // not supported (the loader's 0)
    const std::span<const Unit> units = i == static_cast<int>(Peak::kInt8) ? std::span<const Unit>(kOpRates)
                                                                            : std::span<const Unit>(kFlopRates);
    y += fmt::format("    {}: {}\n", kPeakNames[i], quantity(v, Dimension::kFlopRate, units, "TFLOP/s", style));
  }
  if (hw.launch_overhead_s > 0) y += fmt::format("  launch_overhead: {}\n", q(hw.launch_overhead_s, Dimension::kTime));
  const InterconnectSpec& ic = hw.interconnect;
  y += "interconnect:\n";
  y += fmt::format("  gpus_per_node: {}\n", ic.gpus_per_node);
  if (ic.intra_node_bytes_per_s > 0)
    y += fmt::format("  intra_node_bandwidth: {}\n", q(ic.intra_node_bytes_per_s, Dimension::kByteRate));
  if (ic.intra_node_latency_s > 0)
    y += fmt::format("  intra_node_latency: {}\n", q(ic.intra_node_latency_s, Dimension::kTime));
  if (ic.inter_node_bytes_per_s > 0)
    y += fmt::format("  inter_node_bandwidth: {}\n", q(ic.inter_node_bytes_per_s, Dimension::kByteRate));
  if (ic.inter_node_latency_s > 0)
    y += fmt::format("  inter_node_latency: {}\n", q(ic.inter_node_latency_s, Dimension::kTime));
  // The fabric: only what the profile states (false and 0 are "not stated").
  if (ic.nvswitch) y += "  nvswitch: true\n";
  if (ic.nvls) y += "  nvls: true\n";
  if (ic.nics_per_node > 0) y += fmt::format("  nics_per_node: {}\n", ic.nics_per_node);
  if (ic.nic_bytes_per_s > 0) y += fmt::format("  nic_bandwidth: {}\n", q(ic.nic_bytes_per_s, Dimension::kByteRate));
  if (ic.rail_optimized) y += "  rail_optimized: true\n";
  if (ic.comm_channels > 0) y += fmt::format("  comm_channels: {}\n", ic.comm_channels);
  const HostSpec& h = hw.host;
  if (h.memory_stated || h.link_stated || h.cpu_adam_stated) y += "host:\n";
  if (h.memory_stated) y += fmt::format("  memory_per_gpu: {}\n", q(h.memory_bytes, Dimension::kBytes));
  if (h.link_stated) y += fmt::format("  link_bandwidth: {}\n", q(h.link_bytes_per_s, Dimension::kByteRate));
  if (h.cpu_adam_stated)
    y += fmt::format("  cpu_adam_rate: {} params/s\n", yaml_quantity(h.cpu_adam_params_per_s, Dimension::kCount, style));
  if (hw.tdp_w > 0 || hw.idle_w > 0) y += "power:\n";
  if (hw.tdp_w > 0) y += fmt::format("  tdp: {}\n", q(hw.tdp_w, Dimension::kPower));
  if (hw.idle_w > 0) y += fmt::format("  idle: {}\n", q(hw.idle_w, Dimension::kPower));
  if (hw.failure_rate_per_gpu_hour > 0)
    y += fmt::format("reliability:\n  failure_rate_per_gpu_hour: {:g}\n", hw.failure_rate_per_gpu_hour);
  if (hw.price_per_gpu_hour_usd > 0)
    y += fmt::format("price_per_gpu_hour: {}\n", q(hw.price_per_gpu_hour_usd, Dimension::kPricePerHour));
  if (!hw.sources.empty()) {
    y += "sources:\n";
    for (const auto& [key, text] : hw.sources) y += fmt::format("  {}: {}\n", scalar(key), quoted(text));
  }
  if (hw.calibration.present) y += calibration_yaml(hw.calibration, style);
  return y;
}

std::string yaml_quoted(std::string_view s) { return quoted(s); }

std::string yaml_scalar(std::string_view s) { return scalar(s); }

}  // namespace ridgeline::spec
