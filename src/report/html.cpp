#include "ridgeline/report/html.hpp"

#include <fmt/format.h>

#include "ridgeline/report/advice_view.hpp"
#include "ridgeline/report/capacity_text.hpp"
#include "ridgeline/report/svg.hpp"

namespace ridgeline::report {

std::string xml_escape(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (char ch : s) {
    switch (ch) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += ch;
    }
  }
  return o;
}

namespace {

// No '<' or '&' in the stylesheet: the page stays well-formed XML.
constexpr const char* kStyle = R"css(
:root { color-scheme: light; }
body { margin: 0; background: #eef1f4; color: #1f2328;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif; }
main { max-width: 1060px; margin: 0 auto; padding: 28px 28px 48px; background: #ffffff; }
h1 { font-size: 26px; line-height: 1.25; margin: 0 0 10px; }
h2 { font-size: 20px; margin: 30px 0 8px; padding-bottom: 4px; border-bottom: 1px solid #d0d7de; }
p { margin: 6px 0 10px; }
.headline { font-size: 17px; font-weight: 600; padding: 10px 14px; margin: 10px 0; border-left: 5px solid #1a7f37;
  background: #e9f6ec; }
.headline.nofit { border-left-color: #b3261e; background: #fbeaea; }
.meta { font-size: 13px; color: #57606a; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(186px, 1fr)); gap: 10px; margin: 10px 0; }
.card { border: 1px solid #d0d7de; border-radius: 6px; padding: 8px 12px; }
.card .label { font-size: 12px; color: #57606a; text-transform: uppercase; letter-spacing: 0.04em; }
.card .value { font-size: 20px; white-space: nowrap; font-weight: 700; font-variant-numeric: tabular-nums; }
.card .note { font-size: 12.5px; color: #57606a; line-height: 1.35; }
table { border-collapse: collapse; width: 100%; font-size: 13.5px; margin: 6px 0 14px; }
th, td { border-bottom: 1px solid #e3e6ea; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.hl td { background: #fff1c2; font-weight: 700; }
table.facts th { width: 16%; }
table.facts td.value { font-weight: 700; width: 40%; }
table.facts td.note { color: #57606a; }
figure { margin: 10px 0 18px; }
figcaption { font-size: 13px; color: #57606a; margin-top: 4px; }
svg.chart { width: 100%; height: auto; display: block; }
details { margin: 6px 0 12px; }
summary { cursor: pointer; color: #0550ae; font-weight: 600; }
code { font-size: 12.5px; background: #f6f8fa; padding: 1px 4px; border-radius: 4px; word-break: break-word; }
.verdict { padding: 8px 12px; background: #eef6fc; border-left: 5px solid #0072b2; }
.settings { font-size: 14px; font-weight: 600; padding: 6px 12px; margin: 6px 0; background: #fff8e1;
  border-left: 5px solid #b58900; }
)css";

using report::xml_escape;

std::string table(const text::Table& t, const char* cls = "") {
  if (t.rows.empty()) return "";
  std::string o = fmt::format("<table{}>\n<thead><tr>", *cls ? fmt::format(" class=\"{}\"", cls) : std::string());
  for (size_t i = 0; i < t.head.size(); ++i)
    o += fmt::format("<th{}>{}</th>", i < t.numeric.size() && t.numeric[i] ? " class=\"num\"" : "", xml_escape(t.head[i]));
  o += "</tr></thead>\n<tbody>\n";
  for (size_t r = 0; r < t.rows.size(); ++r) {
    o += static_cast<int>(r) == t.highlight ? "<tr class=\"hl\">" : "<tr>";
    for (size_t i = 0; i < t.rows[r].size(); ++i)
      o += fmt::format("<td{}>{}</td>", i < t.numeric.size() && t.numeric[i] ? " class=\"num\"" : "",
                       xml_escape(t.rows[r][i]));
    o += "</tr>\n";
  }
  return o + "</tbody>\n</table>\n";
}

std::string facts(const std::vector<text::Fact>& f) {
  std::string o = "<table class=\"facts\">\n<tbody>\n";
  for (const auto& x : f)
    o += fmt::format("<tr><th>{}</th><td class=\"value\">{}</td><td class=\"note\">{}</td></tr>\n", xml_escape(x.label),
                     xml_escape(x.value), xml_escape(x.note));
  return o + "</tbody>\n</table>\n";
}

std::string cards(const std::vector<text::Fact>& f) {
  std::string o = "<div class=\"cards\">\n";
  for (const auto& x : f)
    o += fmt::format("<div class=\"card\"><div class=\"label\">{}</div><div class=\"value\">{}</div>"
                     "<div class=\"note\">{}</div></div>\n",
                     xml_escape(x.label), xml_escape(x.value), xml_escape(x.note));
  return o + "</div>\n";
}

std::string figure(const std::string& svg, const std::string& caption) {
  return "<figure>\n" + svg + "<figcaption>" + xml_escape(caption) + "</figcaption>\n</figure>\n";
}

}  // namespace

std::string capacity_html(const CapacityView& v, const std::string& stem) {
  const std::string title = "Capacity plan: " + v.title;
  std::string o;
  o += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n";
  o += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n";
  o += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
       "img-src data:\"/>\n";
  o += fmt::format("<meta name=\"generator\" content=\"ridgeline {}\"/>\n", xml_escape(v.version));
  o += fmt::format("<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n<main>\n", xml_escape(title), kStyle);

  o += fmt::format("<header>\n<h1>{}</h1>\n<p class=\"headline{}\">{}</p>\n", xml_escape(title),
                   v.answer.memory.fits ? "" : " nofit", xml_escape(text::headline(v)));
  if (!v.settings.empty())
    o += fmt::format("<p class=\"settings\">{}</p>\n", xml_escape(v.settings));
  o += fmt::format("<p class=\"meta\">Generated by ridgeline {} with <code>{}</code>. The same facts as "
                   "<a href=\"{}.md\">Markdown</a> and every figure as <a href=\"{}.json\">JSON</a>.</p>\n</header>\n",
                   xml_escape(v.version), xml_escape(v.command), xml_escape(stem), xml_escape(stem));

  o += "<section id=\"answer\">\n<h2>The answer</h2>\n";
  o += cards(text::answer(v));
  o += figure(svg::footprint(v),
              std::string("Memory per GPU of this plan by component") +
                  (v.answer.memory.peak_stage == "only" ? "" : " on the two end pipeline stages (bold: the peak)") +
                  "; the whisker is the peak's range (from the tensors alone to twice the allocator's reserve), the "
                  "dashed line the GPU's capacity" +
                  (v.headroom_frac > 0 ? ", the dotted line the capacity less the memory headroom the layout search "
                                         "leaves free: a layout qualifies when the whisker's upper end is left of it."
                                       : "."));
  o += "<details><summary>Memory per GPU, by component</summary>\n" + table(text::memory_breakdown(v)) + "</details>\n";
  o += "</section>\n";

  o += "<section id=\"question\">\n<h2>The question</h2>\n";
  o += facts(text::question(v));
  if (!v.calibration.residuals.empty()) {
    o += "<p>Validation residuals of the calibration (|predicted - measured| / measured):</p>\n";
    o += table(text::residuals(v));
  }
  o += fmt::format("<details><summary>Sources of the profile's figures ({})</summary>\n",
                   xml_escape(v.gpu.source_file));
  o += table(text::gpu_sources(v)) + "</details>\n</section>\n";

  o += "<section id=\"roofline\">\n<h2>Roofline: where the kernels sit</h2>\n";
  o += figure(svg::roofline(v),
              fmt::format("Each circle is one kernel of the step on one GPU: x = FLOP per HBM byte, y = achieved "
                          "FLOP/s (FLOPs x count / time); area = share of the step's kernel time. Below a ridge point "
                          "a kernel is limited by HBM bandwidth, above it by the tensor cores. {} kernels without "
                          "FLOPs or HBM traffic (communication) are not drawn.",
                          v.roofline.omitted));
  o += "<p>Roofs of the GPU: " + xml_escape(text::roof_derivation(v)) + "; ridge point = roof / HBM bandwidth.</p>\n";
  o += table(text::roofs(v));
  o += "<details><summary>The kernels that take most of the step</summary>\n" + table(text::top_kernels(v)) +
       "</details>\n</section>\n";

  o += "<section id=\"time\">\n<h2>Where the step time goes</h2>\n";
  o += figure(svg::time_breakdown(v),
              (v.answer.interval.valid()
                   ? "The step time's whisker is its " + text::level(v.answer.interval.level) +
                         " prediction interval (see the answer). "
                   : std::string("No prediction interval: ") + v.answer.interval.note + ". ") +
                  "Left, the step as it is spent on one GPU: compute by kernel class, then the communication the "
                  "step waits for (exposed), the compute slowed by the SMs overlapped collectives occupy, and the "
                  "pipeline bubble; the bars add up to the step time. Right, the communication hidden behind "
                  "compute (dashed): it runs, but it is not part of the step; then kernel time by phase, hidden "
                  "communication included.");
  o += "<details><summary>The same as tables</summary>\n" + table(text::time_by_class(v)) +
       table(text::time_by_phase(v)) + "</details>\n</section>\n";

  o += "<section id=\"techniques\">\n<h2>Techniques</h2>\n";
  o += "<p>" + xml_escape(text::best_technique(v)) + "</p>\n";
  o += figure(svg::memory(v), std::string(v.techniques_searched
                                              ? "Peak memory per GPU of every combination at its own best layout "
                                                "(at the report's layout where no layout fits: marked no fit) "
                                              : "Peak memory per GPU of every combination at the report's layout ") +
                                  "(bars) against the capacity (dashed); the whisker on each bar is its range, from "
                                  "the tensors alone to twice the allocator's reserve (the published peak-memory "
                                  "rows are too few to draw residuals from); the step time follows each bar. ★ marks the "
                                  "fastest combination that fits.");
  o += "<details><summary>Every combination as a table</summary>\n" + table(text::techniques(v)) +
       "</details>\n</section>\n";

  if (v.advice) {
    const auto& a = *v.advice;
    o += "<section id=\"advice\">\n<h2>What to change</h2>\n";
    o += "<p>" + xml_escape("Where the answer's step goes against the ideal (every GEMM and attention kernel at the "
                            "sustained peak), and the changes that relieve it, each a prediction of the changed plan "
                            "(ridgeline advise); " + advice_memory_line(a) + ".") + "</p>\n";
    o += table(advice_losses(a));
    if (!a.speed.empty()) o += table(advice_speed(a));
    const std::string c = advice_combined_line(a);
    if (!c.empty()) o += "<p>" + xml_escape("Together: " + c.substr(c.find(':') + 2)) + "</p>\n";
    if (!a.memory_savers.empty())
      o += "<details><summary>What frees the most memory at the least time</summary>\n" + table(advice_memory(a)) +
           "</details>\n";
    o += "</section>\n";
  }

  if (v.layouts.present) {
    const auto& l = v.layouts;
    o += "<section id=\"layouts\">\n<h2>Layouts</h2>\n";
    o += fmt::format("<p>The best of {} layouts searched ({} evaluated, {} pruned, {} did not fit) on {} GPUs, "
                     "global batch {}, objective {}.</p>\n",
                     l.counts.enumerated, l.counts.evaluated, l.counts.pruned, l.counts.infeasible, l.gpus,
                     l.global_batch, xml_escape(l.objective));
    if (l.top.empty()) o += "<p>No layout fits.</p>\n";
    o += table(text::layouts(v));
    o += figure(svg::scaling(v), "The best layout at each GPU count with the same global batch: its MFU (left) and "
                                 "the run's wall-clock days and cost (right), each whisker its prediction interval. "
                                 "The bold point is the count asked for.");
    o += table(text::scaling(v));
    o += "</section>\n";
  }

  if (v.sizing.present) {
    o += "<section id=\"sizing\">\n<h2>Compute-optimal sizing for the budget</h2>\n";
    o += facts(text::sizing(v));
    o += "<p class=\"verdict\">" + xml_escape(v.sizing.verdict) + "</p>\n</section>\n";
  }

  o += "<section id=\"assumptions\">\n<h2>Assumptions</h2>\n";
  o += table(text::assumptions(v));
  o += "</section>\n</main>\n</body>\n</html>\n";
  return o;
}

}  // namespace ridgeline::report
