#include "ridgeline/report/svg.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>

#include "ridgeline/report/capacity_text.hpp"
#include "ridgeline/report/html.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::report::svg {

using namespace ridgeline::units;

namespace {

constexpr const char* kFont = "system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', Arial, sans-serif";
constexpr const char* kInk = "#1f2328";
constexpr const char* kMuted = "#57606a";
constexpr const char* kGrid = "#e3e6ea";
constexpr const char* kAlert = "#b3261e";

/// Kernel-class colours (Okabe-Ito based, distinguishable by colour-blind readers).
const char* class_colour(const std::string& cls) {
  static const std::map<std::string, const char*> k = {
      {"gemm", "#0072B2"},      {"attention", "#D55E00"}, {"elementwise", "#E69F00"}, {"reduction", "#8C6D31"},
      {"norm", "#009E73"},      {"softmax", "#CC79A7"},   {"embedding", "#56B4E9"},   {"loss", "#7F7F7F"},
      {"optimizer", "#6A3D9A"}, {"collective", "#333333"}, {"p2p", "#999999"},      {"cast", "#B8860B"}};
  auto it = k.find(cls);
  return it == k.end() ? "#777777" : it->second;
}

const char* phase_colour(const std::string& phase) {
  static const std::map<std::string, const char*> k = {{"forward", "#0072B2"},   {"backward", "#D55E00"},
                                                       {"recompute", "#E69F00"}, {"optimizer", "#009E73"},
                                                       {"communication", "#555555"}};
  auto it = k.find(phase);
  return it == k.end() ? "#777777" : it->second;
}

/// One colour per memory category, in memory::kMemoryCategories order
/// (Okabe-Ito palette, then greys for workspace and fragmentation).
constexpr const char* kSegmentColours[] = {"#0072B2", "#56B4E9", "#009E73", "#E69F00",
                                           "#D55E00", "#CC79A7", "#8C8C8C", "#C8C8C8"};
static_assert(std::size(kSegmentColours) == memory::kMemoryCategoryCount);

/// Coordinates: one decimal is plenty at screen scale.
std::string c(double v) { return fmt::format("{:.1f}", v); }
/// Plotted values: shortest text that reads back to the same double.
std::string d(double v) { return std::isfinite(v) ? fmt::format("{}", v) : std::string("null"); }
/// Bytes as the JSON writes them: a whole number.
std::string whole(double v) { return std::isfinite(v) ? fmt::format("{}", std::llround(v)) : std::string("null"); }
std::string e(std::string_view s) { return xml_escape(s); }

/// Rough text width for layout decisions (sans-serif, average glyph ~0.56 em).
double text_width(std::string_view s, double size) {
  size_t glyphs = 0;
  for (unsigned char ch : s)
    if ((ch & 0xC0) != 0x80) ++glyphs;  // count UTF-8 code points
  return static_cast<double>(glyphs) * size * 0.56;
}

/// Conservative text width for collision checks: DejaVu Sans (the font
/// headless Chromium falls back to here) draws digits 0.64 em wide, bold
/// text about 8% wider.
double label_width(std::string_view s, double size, bool bold) {
  return text_width(s, size) * (0.64 / 0.56) * (bold ? 1.08 : 1.0);
}

/// `interval`: the chart's error bars, "" for a chart without them, "none"
/// when none could be drawn (data-interval on the root, read by
/// tests/browser/check_reports.sh).
std::string open_svg(const char* chart, double w, double h, const std::string& title, const std::string& desc,
                     std::string_view interval = "") {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" data-chart=\"{}\"{} width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" role=\"img\" font-family=\"{}\" font-size=\"13\" fill=\"{}\">\n"
      "<title>{}</title>\n<desc>{}</desc>\n<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n",
      chart, interval.empty() ? std::string() : fmt::format(" data-interval=\"{}\"", e(interval)), c(w), c(h), c(w),
      c(h), kFont, kInk, e(title), e(desc), c(w), c(h));
}

/// An error bar: the whisker from (x1, y1) to (x2, y2), horizontal or
/// vertical (class "error-bar", carrying the interval's ends as `data`
/// attributes), with a cap of half-length `cap` across each end.
std::string error_bar(bool horizontal, double x1, double y1, double x2, double y2, double cap, const std::string& data,
                      const std::string& tip) {
  std::string o = fmt::format("<line class=\"error-bar\" {} x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" "
                              "stroke-width=\"1.6\"><title>{}</title></line>\n",
                              data, c(x1), c(y1), c(x2), c(y2), kInk, e(tip));
  for (const auto& [x, y] : {std::pair{x1, y1}, std::pair{x2, y2}})
    o += horizontal ? fmt::format("<line class=\"error-cap\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" "
                                  "stroke-width=\"1.6\"/>\n",
                                  c(x), c(y - cap), c(x), c(y + cap), kInk)
                    : fmt::format("<line class=\"error-cap\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" "
                                  "stroke-width=\"1.6\"/>\n",
                                  c(x - cap), c(y), c(x + cap), c(y), kInk);
  return o;
}

std::string text(double x, double y, std::string_view s, std::string_view attrs = "") {
  return fmt::format("<text x=\"{}\" y=\"{}\"{}{}>{}</text>\n", c(x), c(y), attrs.empty() ? "" : " ", attrs, e(s));
}

/// Spreads labels (sorted by wanted y) so that neighbours are at least `gap` apart, within [lo, hi].
void declutter(std::vector<double>& y, double gap, double lo, double hi) {
  const size_t n = y.size();
  if (n == 0) return;
  std::vector<size_t> idx(n);
  for (size_t i = 0; i < n; ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return y[a] < y[b]; });
  for (int pass = 0; pass < 4; ++pass) {
    for (size_t k = 1; k < n; ++k) y[idx[k]] = std::max(y[idx[k]], y[idx[k - 1]] + gap);
    if (y[idx[n - 1]] > hi) {
      y[idx[n - 1]] = hi;
      for (size_t k = n - 1; k-- > 0;) y[idx[k]] = std::min(y[idx[k]], y[idx[k + 1]] - gap);
    }
    if (y[idx[0]] < lo) y[idx[0]] = lo;
  }
}

std::string decade_intensity(int k) {
  static const char* kNames[] = {"0.001", "0.01", "0.1", "1", "10", "100", "1k", "10k", "100k", "1M"};
  const int i = k + 3;
  if (i >= 0 && i < static_cast<int>(std::size(kNames))) return kNames[i];
  return fmt::format("1e{}", k);
}

std::string decade_rate(int k) {
  static const char* kUnits[] = {"FLOP/s", "kFLOP/s", "MFLOP/s", "GFLOP/s", "TFLOP/s", "PFLOP/s", "EFLOP/s"};
  if (k < 0) return fmt::format("1e{} FLOP/s", k);
  const int u = std::min(k / 3, 6);
  const int mant = static_cast<int>(std::lround(std::pow(10.0, k - 3 * u)));
  return fmt::format("{} {}", mant, kUnits[u]);
}

/// A "nice" tick step (1, 2 or 5 x 10^k) giving at most `max_ticks` ticks over [0, span].
double nice_step(double span, int max_ticks) {
  if (span <= 0) return 1;
  const double raw = span / max_ticks;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

}  // namespace

std::string roofline(const CapacityView& v) {
  const auto& R = v.roofline;
  const double W = 1000, H = 620, L = 112, Rm = 222, T = 24, B = 66;
  const double pw = W - L - Rm, ph = H - T - B;
  double xmin = 1e300, xmax = 0, ymin = 1e300, ymax = 0;
  for (const auto& p : R.points) {
    xmin = std::min(xmin, p.intensity);
    xmax = std::max(xmax, p.intensity);
    ymin = std::min(ymin, p.flop_per_s);
    ymax = std::max(ymax, p.flop_per_s);
  }
  for (const auto& r : R.roofs) {
    xmin = std::min(xmin, r.ridge_intensity);
    xmax = std::max(xmax, r.ridge_intensity);
    ymax = std::max(ymax, r.peak_flop_per_s);
    ymin = std::min(ymin, r.peak_flop_per_s);
  }
  if (!(xmax > 0)) xmin = 0.1, xmax = 1000;
  if (!(ymax > 0)) ymin = 1e9, ymax = 1e15;
  int lx0 = static_cast<int>(std::floor(std::log10(xmin * 0.8)));
  int lx1 = static_cast<int>(std::ceil(std::log10(xmax * 3)));
  int ly1 = static_cast<int>(std::ceil(std::log10(ymax * 1.4)));
  int ly0 = static_cast<int>(std::floor(std::log10(ymin * 0.8)));
  ly0 = std::max(ly0, ly1 - 9);
  if (lx1 - lx0 < 3) lx1 = lx0 + 3;
  if (ly1 - ly0 < 3) ly0 = ly1 - 3;
  auto px = [&](double x) { return L + (std::log10(x) - lx0) / (lx1 - lx0) * pw; };
  auto py = [&](double y) { return T + (ly1 - std::log10(y)) / (ly1 - ly0) * ph; };
  auto clampx = [&](double x) { return std::clamp(x, std::pow(10.0, lx0), std::pow(10.0, lx1)); };
  auto clampy = [&](double y) { return std::clamp(y, std::pow(10.0, ly0), std::pow(10.0, ly1)); };

  std::string o = open_svg("roofline", W, H, "Roofline of " + v.gpu.name + " with the kernels of one training step",
                           "Log-log roofline: one roof per precision (the spec-sheet dense peak at the clock a "
                           "training run holds), HBM bandwidth slope, ridge points; each "
                           "circle is one kernel of the step at its arithmetic intensity and achieved FLOP/s, its "
                           "area proportional to its share of the step time.");
  o += fmt::format("<defs><clipPath id=\"roof-plot\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath></defs>\n",
                   c(L), c(T), c(pw), c(ph));
  // Grid and axes.
  o += "<g class=\"grid\" stroke=\"" + std::string(kGrid) + "\" stroke-width=\"1\">\n";
  for (int k = lx0; k <= lx1; ++k)
    o += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", c(px(std::pow(10.0, k))), c(T),
                     c(px(std::pow(10.0, k))), c(T + ph));
  for (int k = ly0; k <= ly1; ++k)
    o += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", c(L), c(py(std::pow(10.0, k))), c(L + pw),
                     c(py(std::pow(10.0, k))));
  o += "</g>\n";
  o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"{}\"/>\n", c(L), c(T),
                   c(pw), c(ph), kMuted);
  o += "<g class=\"ticks\" font-size=\"12\" fill=\"" + std::string(kMuted) + "\">\n";
  for (int k = lx0; k <= lx1; ++k)
    o += text(px(std::pow(10.0, k)), T + ph + 18, decade_intensity(k), "text-anchor=\"middle\"");
  for (int k = ly0; k <= ly1; ++k)
    o += text(L - 8, py(std::pow(10.0, k)) + 4, decade_rate(k), "text-anchor=\"end\"");
  o += "</g>\n";
  o += text(L + pw / 2, H - 16, "Arithmetic intensity (FLOP per HBM byte, log scale)",
            "text-anchor=\"middle\" font-size=\"14\"");
  o += text(18, T + ph / 2, "Achieved FLOP/s per GPU (log scale)",
            fmt::format("text-anchor=\"middle\" font-size=\"14\" transform=\"rotate(-90 18 {})\"", c(T + ph / 2)));

  // Roofs: the HBM slope up to the highest ridge, then one flat roof per precision.
  double top_ridge = 0, top_peak = 0;
  for (const auto& r : R.roofs)
    if (r.peak_flop_per_s > top_peak) top_peak = r.peak_flop_per_s, top_ridge = r.ridge_intensity;
  o += "<g class=\"roofs\" clip-path=\"url(#roof-plot)\" fill=\"none\">\n";
  if (R.hbm_bytes_per_s > 0 && top_peak > 0) {
    const double x_start = std::max(std::pow(10.0, lx0), std::pow(10.0, ly0) / R.hbm_bytes_per_s);
    o += fmt::format("<line class=\"hbm\" data-hbm-bytes-per-s=\"{}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" "
                     "stroke=\"{}\" stroke-width=\"2.5\"/>\n",
                     d(R.hbm_bytes_per_s), c(px(x_start)), c(py(R.hbm_bytes_per_s * x_start)), c(px(top_ridge)),
                     c(py(top_peak)), kInk);
  }
  static const std::map<std::string, std::pair<const char*, const char*>> kRoofStyle = {
      {"fp32", {"#8C8C8C", "6 4"}}, {"tf32", {"#5f6b7a", "10 4"}}, {"bf16", {"#1f2328", ""}}, {"fp8", {"#0b3d91", ""}}};
  for (const auto& r : R.roofs) {
    auto st = kRoofStyle.count(r.precision) ? kRoofStyle.at(r.precision) : std::pair<const char*, const char*>{"#444", ""};
    o += fmt::format("<line class=\"roof\" data-precision=\"{}\" data-peak-flop-per-s=\"{}\" "
                     "data-ridge-intensity=\"{}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" "
                     "stroke-width=\"2.5\"{}/>\n",
                     e(r.precision), d(r.peak_flop_per_s), d(r.ridge_intensity), c(px(r.ridge_intensity)),
                     c(py(r.peak_flop_per_s)), c(L + pw), c(py(r.peak_flop_per_s)), st.first,
                     *st.second ? fmt::format(" stroke-dasharray=\"{}\"", st.second) : std::string());
    o += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"1\" "
                     "stroke-dasharray=\"2 3\"/>\n",
                     c(px(r.ridge_intensity)), c(py(r.peak_flop_per_s)), c(px(r.ridge_intensity)), c(T + ph), st.first);
  }
  o += "</g>\n";
  // HBM label along the slope, a third of the way up to the lowest ridge.
  if (R.hbm_bytes_per_s > 0 && !R.roofs.empty()) {
    double low_ridge = 1e300;
    for (const auto& r : R.roofs) low_ridge = std::min(low_ridge, r.ridge_intensity);
    const double x_start = std::max(std::pow(10.0, lx0), std::pow(10.0, ly0) / R.hbm_bytes_per_s);
    const double xl = std::pow(10.0, std::log10(x_start) + 0.45 * (std::log10(low_ridge) - std::log10(x_start)));
    const double angle = -std::atan((ph / (ly1 - ly0)) / (pw / (lx1 - lx0))) * 180.0 / M_PI;
    const double lx = px(xl), ly = py(R.hbm_bytes_per_s * xl) - 8;
    o += text(lx, ly, "HBM " + format_byte_rate(R.hbm_bytes_per_s),
              fmt::format("font-size=\"13\" font-weight=\"600\" transform=\"rotate({:.1f} {} {})\"", angle, c(lx), c(ly)));
  }
  // Ridge points and roof labels (spread so that they never overlap).
  std::vector<double> label_y;
  for (const auto& r : R.roofs) label_y.push_back(py(r.peak_flop_per_s) + 4);
  declutter(label_y, 17, T + 10, T + ph - 4);
  for (size_t i = 0; i < R.roofs.size(); ++i) {
    const auto& r = R.roofs[i];
    o += fmt::format("<circle class=\"ridge\" data-precision=\"{}\" data-ridge-intensity=\"{}\" "
                     "data-peak-flop-per-s=\"{}\" cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"#ffffff\" stroke=\"{}\" "
                     "stroke-width=\"2\"/>\n",
                     e(r.precision), d(r.ridge_intensity), d(r.peak_flop_per_s), c(px(r.ridge_intensity)),
                     c(py(r.peak_flop_per_s)), kInk);
    o += text(L + pw + 8, label_y[i],
              fmt::format("{} {} · ridge {:.0f}", r.precision, format_flop_rate(r.peak_flop_per_s), r.ridge_intensity),
              r.precision == "bf16" ? "font-size=\"12.5\" font-weight=\"700\"" : "font-size=\"12.5\"");
  }
  // How the roofs follow from the spec sheet, under the roof labels.
  if (!R.roofs.empty()) {
    o += fmt::format("<g class=\"roof-derivation\" data-clock-ratio=\"{}\" data-training-clock-frac=\"{}\" "
                     "font-size=\"11\" fill=\"{}\">\n",
                     d(R.clock_ratio), d(R.training_clock_frac), kMuted);
    o += text(L + pw + 8, T + ph + 36, fmt::format("roofs = spec-sheet peak × {:.3f}", R.clock_scale));
    o += text(L + pw + 8, T + ph + 50,
              fmt::format("= × {:.3f} clock × {:.3f} training", R.clock_ratio, R.training_clock_frac));
    o += "</g>\n";
  }
  // Kernels, longest first so that short ones stay visible on top.
  o += "<g class=\"kernels\" stroke=\"#ffffff\" stroke-width=\"0.8\">\n";
  for (size_t i = 0; i < R.points.size(); ++i) {
    const auto& p = R.points[i];
    const double r = 3.5 + 16.0 * std::sqrt(std::max(0.0, p.share));
    o += fmt::format("<circle class=\"kernel\" data-index=\"{}\" data-name=\"{}\" data-phase=\"{}\" data-class=\"{}\" "
                     "data-intensity=\"{}\" data-flop-per-s=\"{}\" data-time-s=\"{}\" data-share=\"{}\" cx=\"{}\" "
                     "cy=\"{}\" r=\"{}\" fill=\"{}\" fill-opacity=\"0.72\"><title>{}</title></circle>\n",
                     i, e(p.name), e(p.phase), e(p.cls), d(p.intensity), d(p.flop_per_s), d(p.time_s), d(p.share),
                     c(px(clampx(p.intensity))), c(py(clampy(p.flop_per_s))), c(r), class_colour(p.cls),
                     e(fmt::format("{} ({}, {}): {:.1f} FLOP/B, {}, {} per step ({})", p.name, p.phase, p.cls,
                                   p.intensity, format_flop_rate(p.flop_per_s), format_seconds(p.time_s),
                                   format_percent(p.share))));
  }
  o += "</g>\n";
  // Name the kernels that take most of the step: right-aligned labels in the
  // empty region under the compute roofs, each with a leader line to its circle.
  {
    const size_t n = std::min<size_t>(4, R.points.size());
    // Stack the labels under the lowest roof in the order of their points
    // (highest first, then left to right), so that leader lines do not cross.
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const double ya = py(clampy(R.points[a].flop_per_s)), yb = py(clampy(R.points[b].flop_per_s));
      if (std::fabs(ya - yb) > 6) return ya < yb;
      return R.points[a].intensity < R.points[b].intensity;
    });
    double low_peak = 1e300;
    for (const auto& r : R.roofs) low_peak = std::min(low_peak, r.peak_flop_per_s);
    const double zone = std::max(R.roofs.empty() ? 0.0 : py(low_peak) + 30, T + ph * 0.35);
    std::vector<double> ly(n);
    for (size_t k = 0; k < n; ++k) ly[order[k]] = zone + 17.0 * static_cast<double>(k);
    declutter(ly, 17, T + ph * 0.3, T + ph - 10);
    o += "<g class=\"kernel-labels\" font-size=\"12\">\n";
    for (size_t i = 0; i < n; ++i) {
      const auto& p = R.points[i];
      const double r = 3.5 + 16.0 * std::sqrt(std::max(0.0, p.share));
      const double cx = px(clampx(p.intensity)), cy = py(clampy(p.flop_per_s));
      const std::string s = fmt::format("{} ({}) {}", p.name, p.phase, format_percent(p.share));
      const double x_right = L + pw - 8, x_left = x_right - text_width(s, 12);
      const double tx = x_left - 4, ty = ly[i] - 4;
      const double dist = std::hypot(tx - cx, ty - cy);
      const double sx = dist > 0 ? cx + (tx - cx) / dist * r : cx, sy = dist > 0 ? cy + (ty - cy) / dist * r : cy;
      o += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"0.8\"/>\n",
                       c(sx), c(sy), c(tx), c(ty), kMuted);
      o += text(x_right, ly[i], s,
                fmt::format("text-anchor=\"end\" fill=\"{}\" stroke=\"#ffffff\" stroke-width=\"3\" "
                            "paint-order=\"stroke\"",
                            kInk));
    }
    o += "</g>\n";
  }
  // Legend: kernel classes present, in the empty top-left corner (above the roofline).
  {
    std::vector<std::string> classes;
    for (const auto& p : R.points)
      if (std::find(classes.begin(), classes.end(), p.cls) == classes.end()) classes.push_back(p.cls);
    std::sort(classes.begin(), classes.end());
    const double lx = L + 12, ly = T + 12, row = 18;
    const double bh = 30 + row * static_cast<double>(classes.size()) + 22;
    o += fmt::format("<g class=\"legend\"><rect x=\"{}\" y=\"{}\" width=\"190\" height=\"{}\" fill=\"#ffffff\" "
                     "fill-opacity=\"0.92\" stroke=\"{}\" rx=\"4\"/>\n",
                     c(lx), c(ly), c(bh), kGrid);
    o += text(lx + 10, ly + 18, "Kernel class", "font-weight=\"600\"");
    for (size_t i = 0; i < classes.size(); ++i) {
      const double y = ly + 36 + row * static_cast<double>(i);
      o += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"6\" fill=\"{}\" fill-opacity=\"0.8\"/>\n", c(lx + 18), c(y - 4),
                       class_colour(classes[i]));
      o += text(lx + 32, y, classes[i]);
    }
    o += text(lx + 10, ly + bh - 9, "circle area ∝ share of step time",
              fmt::format("font-size=\"11.5\" fill=\"{}\"", kMuted));
    o += "</g>\n";
  }
  o += "</svg>\n";
  return o;
}

std::string memory(const CapacityView& v) {
  const auto& rows = v.techniques;
  // Each row names its layout (a re-searched combination has its own, and
  // the layout moves the weights and activations between rows).
  const double W = 1120, label_w = 240, layout_w = 245, value_w = 180, T = 58, pitch = 22, bar_h = 15, B = 44;
  const double x0 = label_w + 10 + layout_w, pw = W - x0 - value_w;
  const double H = T + pitch * static_cast<double>(std::max<size_t>(rows.size(), 1)) + B;
  const double capacity = v.answer.memory.capacity > 0 ? v.answer.memory.capacity : v.gpu.memory_bytes;
  double max_total = 0;
  for (const auto& r : rows) max_total = std::max(max_total, r.memory_range.hi);
  const double xmax = std::max(capacity * 1.15, std::min(max_total, 2.0 * capacity) * 1.03);
  auto px = [&](double b) { return x0 + std::min(b, xmax) / xmax * pw; };

  std::string o = open_svg("memory", W, H, "Peak memory per GPU for each technique combination",
                           "Stacked horizontal bars: weights, gradients, master weights, optimizer state, "
                           "activations, buffers, workspace and fragmentation per GPU for each combination of "
                           "recomputation, precision, attention kernel and fusion, with the layout it is at; the "
                           "whisker on each bar is its "
                           "range, from the tensors alone to twice the allocator's reserve; the dashed line is the "
                           "GPU's memory capacity.",
                           "memory");
  // Legend.
  double lx = 8;
  for (int i = 0; i < memory::kMemoryCategoryCount; ++i) {
    const std::string name(memory::kMemoryCategories[i].label);
    o += fmt::format("<rect x=\"{}\" y=\"10\" width=\"12\" height=\"12\" fill=\"{}\"/>\n", c(lx), kSegmentColours[i]);
    o += text(lx + 16, 21, name, "font-size=\"12\"");
    lx += 16 + text_width(name, 12) + 14;
  }
  o += text(label_w, 46, fmt::format("{}", fmt::join(v.vary_keys, " · ")),
            fmt::format("text-anchor=\"end\" font-size=\"11.5\" font-style=\"italic\" fill=\"{}\"", kMuted));
  o += text(label_w + 10, 46, v.techniques_searched ? "its best layout" : "layout",
            fmt::format("font-size=\"11.5\" font-style=\"italic\" fill=\"{}\"", kMuted));
  // Axis ticks (GiB).
  const double step = nice_step(xmax / kGiB, 8) * kGiB;
  o += "<g class=\"grid\" font-size=\"12\">\n";
  for (double b = 0; b <= xmax + 1; b += step) {
    o += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\"/>\n", c(px(b)), c(T - 6), c(px(b)),
                     c(H - B + 4), kGrid);
    o += text(px(b), H - B + 20, fmt::format("{:g}", b / kGiB), fmt::format("text-anchor=\"middle\" fill=\"{}\"", kMuted));
  }
  o += "</g>\n";
  o += text(x0 + pw / 2, H - 8, "Peak memory per GPU (GiB)", "text-anchor=\"middle\" font-size=\"14\"");
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const double y = T + pitch * static_cast<double>(i);
    if (r.best)
      o += fmt::format("<rect x=\"4\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fff1c2\"/>\n", c(y - 3), c(W - 8),
                       c(pitch));
    o += fmt::format("<g class=\"bar\" data-row=\"{}\" data-label=\"{}\" data-layout=\"{}\" data-total-bytes=\"{}\" "
                     "data-fits=\"{}\" data-step-time-s=\"{}\">\n",
                     i, e(r.label), e(r.layout_brief), whole(r.peak_memory_bytes), r.fits ? "true" : "false",
                     d(r.step_time_s));
    o += text(label_w, y + bar_h - 3, (r.best ? "★ " : "") + r.label,
              std::string("text-anchor=\"end\" font-size=\"12.5\"") + (r.best ? " font-weight=\"700\"" : ""));
    o += text(label_w + 10, y + bar_h - 3, r.layout_brief,
              fmt::format("class=\"layout\" font-size=\"11.5\" fill=\"{}\"{}", kMuted, r.best ? " font-weight=\"700\"" : ""));
    double acc = 0;
    for (int i = 0; i < memory::kMemoryCategoryCount; ++i) {
      const std::string name(memory::kMemoryCategories[i].label);
      const char* colour = kSegmentColours[i];
      const double b = r.memory.*(memory::kMemoryCategories[i].bytes);
      if (b <= 0) continue;
      const double xa = px(acc), xb = px(acc + b);  // zero width past the end of a clipped bar
      acc += b;
      o += fmt::format("<rect class=\"segment\" data-segment=\"{}\" data-bytes=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" "
                       "height=\"{}\" fill=\"{}\"><title>{}: {}</title></rect>\n",
                       name, whole(b), c(xa), c(y), c(xb - xa), c(bar_h), colour, e(name), format_bytes(b));
    }
    {
      const auto& m = r.memory_range;
      const double ym = y + bar_h / 2;
      o += error_bar(true, px(m.lo), ym, px(m.hi), ym, bar_h / 2 - 1,
                     fmt::format("data-lo-bytes=\"{}\" data-hi-bytes=\"{}\" data-fits-high=\"{}\"", whole(m.lo), whole(m.hi),
                                 m.fits_high ? "true" : "false"),
                     fmt::format("{}: peak memory {}, range {}; fits at the upper bound: {}", r.label,
                                 format_bytes(r.peak_memory_bytes), text::range(m.lo, m.hi, format_bytes),
                                 text::fits_at_upper_bound(m)));
    }
    if (r.peak_memory_bytes > xmax)  // clipped: an arrow marks the bar running off the axis
      o += fmt::format("<path d=\"M {} {} l 8 {} l -8 {} z\" fill=\"{}\"/>\n", c(x0 + pw + 2), c(y), c(bar_h / 2),
                       c(bar_h / 2), kAlert);
    const std::string val = fmt::format("{}{} · {}", format_bytes(r.peak_memory_bytes), r.fits ? "" : " no fit",
                                        format_seconds(r.step_time_s));
    o += text(x0 + pw + 14, y + bar_h - 3, val,
              fmt::format("font-size=\"12.5\" fill=\"{}\"{}", r.fits ? kInk : kAlert, r.best ? " font-weight=\"700\"" : ""));
    o += "</g>\n";
  }
  // Capacity line on top of the bars.
  o += fmt::format("<line class=\"capacity\" data-bytes=\"{}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" "
                   "stroke-width=\"2\" stroke-dasharray=\"6 4\"/>\n",
                   whole(capacity), c(px(capacity)), c(T - 10), c(px(capacity)), c(H - B + 4), kAlert);
  o += text(px(capacity) + 4, T - 12, "capacity " + format_bytes(capacity),
            fmt::format("font-size=\"12\" font-weight=\"600\" fill=\"{}\"", kAlert));
  o += "</svg>\n";
  return o;
}

namespace {

/// Fill of a bar of the step as spent: compute by its class colour, the rest
/// in greys (exposed communication the darkest: the step waits for it).
const char* part_colour(const StepPart& p) {
  if (p.kind == "compute") return class_colour(p.name);
  if (p.kind == "exposed_comm") return "#333333";
  if (p.kind == "comm_contention") return "#6E6E6E";
  if (p.kind == "bubble") return "#B0B0B0";
  if (p.kind == "host_wait") return "#8C6D31";
  return "#999999";
}

}  // namespace

std::string time_breakdown(const CapacityView& v) {
  // The step time with its prediction interval on top; below it, left: the
  // step as it is spent (the bars add up to the step); right: the
  // communication hidden behind compute (not part of the step), then kernel
  // time by phase.
  const double W = 1000, S = 66, T = S + 40, pitch = 26, bar_h = 17, B = 20, gap = 40;
  const double panel_w = (W - gap) / 2;
  const auto& st = v.step;
  const bool comm = st.comm_total_s > 0;
  const size_t left_rows = std::max<size_t>(st.parts.size(), 1);
  // Right: hidden and exposed bars (or one line saying there is none), a
  // heading, then the phases.
  const size_t right_rows = (comm ? 2 : 1) + 2 + v.time_by_phase.size();
  const double H = T + pitch * static_cast<double>(std::max(left_rows, right_rows)) + B;
  const auto& a = v.answer;
  const auto& iv = a.interval;
  std::string o = open_svg("time", W, H,
                           "Step time with its prediction interval; the step as it is spent; communication hidden "
                           "behind compute",
                           "A bar of the predicted step time with a whisker over its prediction interval; then "
                           "horizontal bars: the step as it is spent per GPU (compute by kernel class, exposed "
                           "communication, pipeline bubble; they add up to the step time) on the left; on the right "
                           "the communication hidden behind compute, which is not part of the step, against the "
                           "exposed part, and kernel time by phase.",
                           iv.valid() ? "step" : "none");
  {
    const double label_w = 150, value_w = 360, y = 30;
    const double x0 = label_w + 8, pw = W - x0 - value_w;
    const double tmax = std::max(a.step_time_s, a.step_time_range.valid ? a.step_time_range.hi : 0.0);
    const auto px = [&](double t) { return x0 + (tmax > 0 ? t / tmax * pw : 0); };
    o += text(0, 16, "Step time", "font-size=\"14\" font-weight=\"700\"");
    o += text(label_w, y + bar_h - 4, "step", "text-anchor=\"end\" font-size=\"12.5\"");
    o += fmt::format("<rect class=\"step\" data-time-s=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
                     "fill=\"#0072B2\" fill-opacity=\"0.35\"/>\n",
                     d(a.step_time_s), c(x0), c(y), c(std::max(px(a.step_time_s) - x0, 1.0)), c(bar_h));
    std::string label = format_seconds(a.step_time_s);
    if (a.step_time_range.valid) {
      const auto& r = a.step_time_range;
      const std::string what = text::interval(iv, r, format_seconds);
      o += error_bar(true, px(r.lo), y + bar_h / 2, px(r.hi), y + bar_h / 2, bar_h / 2 - 1,
                     fmt::format("data-lo-s=\"{}\" data-hi-s=\"{}\" data-level=\"{}\"", d(r.lo), d(r.hi), d(iv.level)),
                     fmt::format("step time {}, {}, from {} ({} validated runs)", format_seconds(a.step_time_s), what,
                                 iv.pool, iv.rows));
      label += " · " + what;
    } else {
      label += " · no prediction interval";
    }
    o += text(px(tmax) + 8, y + bar_h - 4, label, "font-size=\"12.5\"");
    o += text(x0, y + bar_h + 15,
              iv.valid() ? fmt::format("interval from {}: {} validated runs", iv.pool, iv.rows) : iv.note,
              fmt::format("font-size=\"11.5\" fill=\"{}\"", kMuted));
  }
  const double label_w = 168, value_w = 170;
  // One bar: label, rect (dashed outline when `hollow`), value.
  auto bar = [&](double ox, double y, double w, const std::string& name, const std::string& attrs, const char* fill,
                 bool hollow, const std::string& value) {
    const double x0 = ox + label_w + 8;
    o += text(ox + label_w, y + bar_h - 4, name, "text-anchor=\"end\" font-size=\"12.5\"");
    o += fmt::format("<rect class=\"time\" {} x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}/>\n", attrs,
                     c(x0), c(y), c(std::max(w, 1.0)), c(bar_h), hollow ? "#ffffff" : fill,
                     hollow ? fmt::format(" stroke=\"{}\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"", fill)
                            : std::string());
    o += text(x0 + std::max(w, 1.0) + 6, y + bar_h - 4, value, "font-size=\"12.5\"");
  };
  const double pw = panel_w - label_w - 8 - value_w;
  {  // Left: the step as spent, scaled to the step time.
    o += text(0, S + 22, "The step, as it is spent", "font-size=\"14\" font-weight=\"700\"");
    const double tmax = st.step_time_s;
    for (size_t i = 0; i < st.parts.size(); ++i) {
      const auto& p = st.parts[i];
      const double y = T + pitch * static_cast<double>(i);
      bar(0, y, tmax > 0 ? p.time_s / tmax * pw : 0, p.name,
          fmt::format("data-breakdown=\"step\" data-kind=\"{}\" data-name=\"{}\" data-time-s=\"{}\" data-share=\"{}\"",
                      e(p.kind), e(p.name), d(p.time_s), d(p.share)),
          part_colour(p), false, fmt::format("{} · {}", format_seconds(p.time_s), format_percent(p.share)));
    }
  }
  {  // Right: hidden communication, then kernel time by phase.
    const double ox = panel_w + gap;
    o += text(ox, S + 22, "Hidden behind compute (not part of the step)", "font-size=\"14\" font-weight=\"700\"");
    double y = T;
    if (comm) {
      const double tmax = st.comm_total_s;
      bar(ox, y, st.comm_hidden_s / tmax * pw, "hidden comm",
          fmt::format("data-breakdown=\"hidden\" data-name=\"hidden communication\" data-time-s=\"{}\" "
                      "data-share=\"{}\"",
                      d(st.comm_hidden_s), d(st.comm_hidden_s / tmax)),
          "#333333", true, fmt::format("{} · {} of all comm", format_seconds(st.comm_hidden_s),
                                       format_percent(st.comm_hidden_s / tmax)));
      y += pitch;
      bar(ox, y, st.comm_exposed_s / tmax * pw, "exposed comm",
          fmt::format("data-breakdown=\"hidden\" data-name=\"exposed communication\" data-time-s=\"{}\" "
                      "data-share=\"{}\"",
                      d(st.comm_exposed_s), d(st.comm_exposed_s / tmax)),
          "#333333", false, fmt::format("{} · in the step", format_seconds(st.comm_exposed_s)));
      y += pitch;
    } else {
      o += text(ox + label_w + 8, y + bar_h - 4, "no communication: nothing to hide",
                fmt::format("font-size=\"12.5\" fill=\"{}\"", kMuted));
      y += pitch;
    }
    o += text(ox, y + pitch - 4, "Kernel time by phase (hidden comm included)", "font-size=\"14\" font-weight=\"700\"");
    y += 2 * pitch;
    double tmax = 0;
    for (const auto& r : v.time_by_phase) tmax = std::max(tmax, r.time_s);
    for (const auto& r : v.time_by_phase) {
      bar(ox, y, tmax > 0 ? r.time_s / tmax * pw : 0, r.name,
          fmt::format("data-breakdown=\"phase\" data-name=\"{}\" data-time-s=\"{}\" data-share=\"{}\"", e(r.name),
                      d(r.time_s), d(r.share)),
          phase_colour(r.name), false, fmt::format("{} · {}", format_seconds(r.time_s), format_percent(r.share)));
      y += pitch;
    }
  }
  o += "</svg>\n";
  return o;
}

std::string footprint(const CapacityView& v) {
  const auto& a = v.answer;
  const auto& m = a.memory;
  // Under pipeline parallelism both end stages, the peak one marked.
  struct Row {
    std::string label;
    const memory::MemoryResult* mem;
    bool peak;
  };
  std::vector<Row> rows;
  if (m.peak_stage == "only") {
    rows.push_back({"per GPU", &m, true});
  } else {
    rows.push_back({m.peak_stage == "first" ? "first stage (peak)" : "first stage", &a.first_stage, m.peak_stage == "first"});
    rows.push_back({m.peak_stage == "last" ? "last stage (peak)" : "last stage", &a.last_stage, m.peak_stage == "last"});
  }
  const double W = 1000, label_w = 130, value_w = 170, T = 40, pitch = 34, bar_h = 22;
  const double x0 = label_w + 10, pw = W - x0 - value_w;
  const double capacity = m.capacity > 0 ? m.capacity : v.gpu.memory_bytes;
  double top = std::max(capacity, a.memory_range.hi);
  for (const auto& r : rows) top = std::max(top, r.mem->total);
  const double xmax = top * 1.06;
  auto px = [&](double b) { return x0 + (xmax > 0 ? b / xmax * pw : 0); };
  // Legend: one entry per category of the peak row with its bytes, in
  // columns wide enough for the longest entry, so that no two touch.
  const memory::MemoryResult& peak = m.peak_stage == "only" ? m : (m.peak_stage == "first" ? a.first_stage : a.last_stage);
  std::vector<std::pair<int, std::string>> legend;
  double entry_w = 0;
  for (int i = 0; i < memory::kMemoryCategoryCount; ++i) {
    const std::string s = fmt::format("{} {}", memory::kMemoryCategories[i].label,
                                      format_bytes(peak.*(memory::kMemoryCategories[i].bytes)));
    legend.emplace_back(i, s);
    entry_w = std::max(entry_w, 18 + text_width(s, 12) * 1.1 + 16);
  }
  const int per_row = std::max(1, static_cast<int>((W - 16) / entry_w));
  const int legend_rows = (static_cast<int>(legend.size()) + per_row - 1) / per_row;
  const double axis_y = T + pitch * static_cast<double>(rows.size()) + 4;
  const double H = axis_y + 40 + 20.0 * legend_rows + 8;

  std::string o = open_svg(
      "footprint", W, H, "Memory per GPU of the chosen plan by component, against the capacity",
      "Stacked horizontal bar of the plan's peak memory per GPU (per end stage under pipeline parallelism): "
      "weights, gradients, master weights, optimizer state, activations, buffers, workspace and fragmentation; the "
      "whisker is the peak's range; the dashed line is the GPU's memory capacity, the dotted line the capacity "
      "less the memory headroom when one applies.",
      "memory");
  const double step = nice_step(xmax / kGiB, 8) * kGiB;
  o += "<g class=\"grid\" font-size=\"12\">\n";
  for (double b = 0; b <= xmax + 1; b += step) {
    o += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\"/>\n", c(px(b)), c(T - 6), c(px(b)),
                     c(axis_y), kGrid);
    o += text(px(b), axis_y + 16, fmt::format("{:g}", b / kGiB), fmt::format("text-anchor=\"middle\" fill=\"{}\"", kMuted));
  }
  o += "</g>\n";
  o += text(x0 + pw / 2, axis_y + 34, "Memory per GPU (GiB)", "text-anchor=\"middle\" font-size=\"13\"");
  for (size_t k = 0; k < rows.size(); ++k) {
    const auto& r = rows[k];
    const double y = T + pitch * static_cast<double>(k);
    o += fmt::format("<g class=\"bar\" data-row=\"{}\" data-label=\"{}\" data-total-bytes=\"{}\" data-peak=\"{}\">\n", k,
                     e(r.label), whole(r.mem->total), r.peak ? "true" : "false");
    o += text(label_w, y + bar_h - 6, r.label,
              std::string("text-anchor=\"end\" font-size=\"12.5\"") + (r.peak ? " font-weight=\"700\"" : ""));
    double acc = 0;
    for (int i = 0; i < memory::kMemoryCategoryCount; ++i) {
      const std::string name(memory::kMemoryCategories[i].label);
      const double b = r.mem->*(memory::kMemoryCategories[i].bytes);
      if (b <= 0) continue;
      const double xa = px(acc), xb = px(acc + b);
      acc += b;
      o += fmt::format("<rect class=\"segment\" data-segment=\"{}\" data-bytes=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" "
                       "height=\"{}\" fill=\"{}\"><title>{}: {}</title></rect>\n",
                       name, whole(b), c(xa), c(y), c(xb - xa), c(bar_h), kSegmentColours[i], e(name), format_bytes(b));
    }
    double right = px(r.mem->total);
    if (r.peak) {
      const auto& mr = a.memory_range;
      o += error_bar(true, px(mr.lo), y + bar_h / 2, px(mr.hi), y + bar_h / 2, bar_h / 2 - 2,
                     fmt::format("data-lo-bytes=\"{}\" data-hi-bytes=\"{}\" data-fits-high=\"{}\"", whole(mr.lo), whole(mr.hi),
                                 mr.fits_high ? "true" : "false"),
                     fmt::format("peak memory {}, range {}; fits at the upper bound: {}", format_bytes(r.mem->total),
                                 text::range(mr.lo, mr.hi, format_bytes), text::fits_at_upper_bound(mr)));
      right = std::max(right, px(mr.hi));
    }
    const bool fits = r.mem->total <= capacity;
    o += text(std::max(right, px(capacity)) + 8, y + bar_h - 6,
              fmt::format("{}{}", format_bytes(r.mem->total), fits ? "" : " · does not fit"),
              fmt::format("font-size=\"12.5\" fill=\"{}\"{}", fits ? kInk : kAlert, r.peak ? " font-weight=\"700\"" : ""));
    o += "</g>\n";
  }
  o += fmt::format("<line class=\"capacity\" data-bytes=\"{}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" "
                   "stroke-width=\"2\" stroke-dasharray=\"6 4\"/>\n",
                   whole(capacity), c(px(capacity)), c(T - 12), c(px(capacity)), c(axis_y), kAlert);
  // Capacity (and headroom) labels above the bars, right-aligned to their
  // lines when the headroom line would collide with the capacity's.
  const std::string cap_label = "capacity " + format_bytes(capacity);
  if (v.headroom_frac > 0) {
    const double usable = capacity * (1 - v.headroom_frac);
    o += fmt::format("<line class=\"headroom\" data-bytes=\"{}\" data-headroom-fraction=\"{}\" x1=\"{}\" y1=\"{}\" "
                     "x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\" stroke-dasharray=\"2 3\"/>\n",
                     whole(usable), d(v.headroom_frac), c(px(usable)), c(T - 12), c(px(usable)), c(axis_y), kMuted);
    o += text(px(usable) - 4, T - 16, fmt::format("headroom {} · usable {}", format_percent(v.headroom_frac), format_bytes(usable)),
              fmt::format("text-anchor=\"end\" font-size=\"12\" fill=\"{}\"", kMuted));
  }
  o += text(px(capacity) + 4, T - 16, cap_label, fmt::format("font-size=\"12\" font-weight=\"600\" fill=\"{}\"", kAlert));
  for (size_t k = 0; k < legend.size(); ++k) {
    const double lx = 8 + entry_w * static_cast<double>(k % per_row);
    const double ly = axis_y + 52 + 20.0 * static_cast<double>(k / per_row);
    o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/>\n", c(lx), c(ly - 11),
                     kSegmentColours[legend[k].first]);
    o += text(lx + 18, ly, legend[k].second, "font-size=\"12\"");
  }
  o += "</svg>\n";
  return o;
}

std::string scaling(const CapacityView& v) {
  const auto& pts = v.layouts.scaling;
  if (!v.layouts.present || pts.empty()) return "";
  const double W = 1000, H = 340, T = 44, B = 56, gap = 60;
  const double panel_w = (W - gap) / 2;
  bool any_interval = false;
  for (const auto& p : pts) any_interval = any_interval || (p.feasible && p.best.interval.valid());
  std::string o = open_svg("scaling", W, H, "MFU and training time of the best layout against the number of GPUs",
                           "Two line charts over the GPU counts searched (same global batch): the best layout's "
                           "MFU (left) and the training run's wall-clock days with its cost (right); the whisker on "
                           "each point is its prediction interval.",
                           any_interval ? "points" : "none");
  auto panel = [&](double ox, const char* title, const char* y_title, const char* quantity,
                   double (*value)(const LayoutRow&), Range (*range)(const LayoutRow&),
                   std::string (*label)(const LayoutRow&), std::string (*tick)(double)) {
    const double L = 64, R = 16;
    const double x0 = ox + L, pw = panel_w - L - R, ph = H - T - B;
    double vmax = 0;
    for (const auto& p : pts)
      if (p.feasible) vmax = std::max({vmax, value(p.best), range(p.best).valid ? range(p.best).hi : 0.0});
    if (vmax <= 0) vmax = 1;
    const double step = nice_step(vmax * 1.2, 5);
    const double ymax = std::ceil(vmax * 1.2 / step) * step;
    auto py = [&](double y) { return T + ph - y / ymax * ph; };
    auto px = [&](size_t i) {
      return pts.size() == 1 ? x0 + pw / 2 : x0 + 30 + (pw - 60) * static_cast<double>(i) / (pts.size() - 1);
    };
    o += text(ox, 22, title, "font-size=\"14\" font-weight=\"700\"");
    for (double y = 0; y <= ymax + step * 1e-9; y += step) {
      o += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\"/>\n", c(x0), c(py(y)), c(x0 + pw),
                       c(py(y)), kGrid);
      o += text(x0 - 8, py(y) + 4, tick(y), fmt::format("text-anchor=\"end\" font-size=\"12\" fill=\"{}\"", kMuted));
    }
    o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"{}\"/>\n", c(x0), c(T),
                     c(pw), c(ph), kMuted);
    o += text(ox + 14, T + ph / 2, y_title,
              fmt::format("text-anchor=\"middle\" font-size=\"13\" transform=\"rotate(-90 {} {})\"", c(ox + 14),
                          c(T + ph / 2)));
    o += text(x0 + pw / 2, H - 10, "GPUs", "text-anchor=\"middle\" font-size=\"14\"");
    std::string line;
    for (size_t i = 0; i < pts.size(); ++i) {
      o += text(px(i), T + ph + 18, std::to_string(pts[i].gpus),
                std::string("text-anchor=\"middle\" font-size=\"12\"") + (pts[i].chosen ? " font-weight=\"700\"" : ""));
      if (!pts[i].feasible) continue;
      line += fmt::format("{}{} {}", line.empty() ? "M " : " L ", c(px(i)), c(py(value(pts[i].best))));
    }
    if (!line.empty())
      o += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"#0072B2\" stroke-width=\"2.5\"/>\n", line);
    struct Wanted {
      double x, y, hi, lo;  // the point and its whisker's ends (px)
      std::string text;
      bool bold;
    };
    std::vector<Wanted> wanted;
    for (size_t i = 0; i < pts.size(); ++i) {
      const auto& p = pts[i];
      if (!p.feasible) {
        o += text(px(i), T + ph - 8, "no fit", fmt::format("text-anchor=\"middle\" font-size=\"12\" fill=\"{}\"", kAlert));
        continue;
      }
      const double y = py(value(p.best));
      if (const Range r = range(p.best); r.valid)
        o += error_bar(false, px(i), py(r.lo), px(i), py(r.hi), 5,
                       fmt::format("data-quantity=\"{}\" data-gpus=\"{}\" data-lo=\"{}\" data-hi=\"{}\" "
                                   "data-level=\"{}\"",
                                   quantity, p.gpus, d(r.lo), d(r.hi), d(p.best.interval.level)),
                       fmt::format("{} GPUs: {} {}", p.gpus, quantity,
                                   text::interval(p.best.interval, r, quantity == std::string_view("mfu")
                                                                          ? format_percent
                                                                          : text::days)));
      o += fmt::format("<circle class=\"point\" data-gpus=\"{}\" data-mfu=\"{}\" data-days=\"{}\" data-cost-usd=\"{}\" "
                       "data-step-time-s=\"{}\" cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\" stroke=\"#0072B2\" "
                       "stroke-width=\"2\"><title>{} GPUs: {}</title></circle>\n",
                       p.gpus, d(p.best.mfu), d(p.best.days), d(p.best.cost_usd), d(p.best.step_time_s), c(px(i)), c(y),
                       p.chosen ? "7" : "5", p.chosen ? "#0072B2" : "#ffffff", p.gpus, e(p.best.label));
      const std::string s = label(p.best);
      const Range r = range(p.best);
      wanted.push_back({px(i), y, r.valid ? py(r.hi) : y, r.valid ? py(r.lo) : y, s, p.chosen});
    }
    // Labels: above each point and its whisker, else below, else staggered
    // further out; a position is taken only when its box keeps kLabelGap
    // from every label already placed and from every point, inside the frame.
    struct Box {
      double x0, y0, x1, y1;
    };
    std::vector<Box> taken;
    for (const auto& w : wanted) taken.push_back({w.x - 7, w.y - 7, w.x + 7, w.y + 7});
    const auto clear = [&](const Box& b) {
      if (b.x0 < x0 + 1 || b.x1 > x0 + pw - 1 || b.y0 < T + 1 || b.y1 > T + ph - 1) return false;
      for (const auto& t : taken)
        if (b.x0 < t.x1 + kLabelGap && t.x0 < b.x1 + kLabelGap && b.y0 < t.y1 + kLabelGap && t.y0 < b.y1 + kLabelGap)
          return false;
      return true;
    };
    for (const auto& w : wanted) {
      const double half = label_width(w.text, 12, w.bold) / 2 + 1;
      const double tx = std::clamp(w.x, x0 + half + 2, x0 + pw - half - 2);
      // Clear of its own point (radius 7) by kLabelGap: the box ends 3 px below the baseline.
      const double above = std::min(w.y - 7 - kLabelGap - 3.5, w.hi - 6), below = std::max(w.y + 22, w.lo + 16);
      std::vector<double> tries;
      for (int k = 0; k < 8; ++k) {
        tries.push_back(above - 16.0 * k);
        tries.push_back(below + 16.0 * k);
      }
      Box box{tx - half, above - 12, tx + half, above + 3};
      bool placed = false;
      for (double ty : tries) {
        const Box b{tx - half, ty - 12, tx + half, ty + 3};
        if (clear(b)) {
          box = b;
          placed = true;
          break;
        }
      }
      if (!placed) {  // crowded: the first position inside the frame
        const double ty = std::clamp(above, T + 14, T + ph - 4);
        box = {tx - half, ty - 12, tx + half, ty + 3};
      }
      taken.push_back(box);
      o += text(tx, box.y1 - 3, w.text,
                fmt::format("class=\"point-label\" data-quantity=\"{}\" data-box=\"{} {} {} {}\" "
                            "text-anchor=\"middle\" font-size=\"12\" stroke=\"#ffffff\" stroke-width=\"3\" "
                            "paint-order=\"stroke\"{}",
                            quantity, c(box.x0), c(box.y0), c(box.x1), c(box.y1), w.bold ? " font-weight=\"700\"" : ""));
    }
  };
  panel(
      0, "MFU of the best layout", "MFU (%)", "mfu", [](const LayoutRow& r) { return r.mfu; },
      [](const LayoutRow& r) { return r.mfu_range; }, [](const LayoutRow& r) { return format_percent(r.mfu); },
      [](double y) { return fmt::format("{:g}", std::round(y * 1000) / 10); });
  panel(
      panel_w + gap, "Training time and cost", "wall-clock days", "days", [](const LayoutRow& r) { return r.days; },
      [](const LayoutRow& r) { return r.days_range; },
      [](const LayoutRow& r) { return fmt::format("{:.1f} d · {}", r.days, text::usd(r.cost_usd)); },
      [](double y) { return fmt::format("{:g}", y); });
  o += "</svg>\n";
  return o;
}

}  // namespace ridgeline::report::svg
