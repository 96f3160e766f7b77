// Capacity reports end to end (`ridgeline report`): the three files, their
// charts (well-formed SVG whose data- values are the JSON's numbers), the
// Markdown and HTML showing the same facts, every figure in the JSON, exact
// one-line errors that leave no file behind, the committed examples in step
// with the build, and the pages rendered in headless Chromium.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "ridgeline/report/capacity_text.hpp"
#include "ridgeline/units/units.hpp"
#include "test_support.hpp"

using namespace ridgeline;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using ridgeline::test::slurp;

/// A fresh, empty folder under the system temp folder.
fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("ridgeline_report_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// ---------------------------------------------------------------------------
// A strict XML well-formedness checker: one root element, matched tags,
// names, quoted and unique attributes, no '<' in attribute values, and only
// the predefined or numeric entities. Comments, processing instructions,
// CDATA and (for HTML pages) one leading DOCTYPE are understood.
class XmlChecker {
 public:
  explicit XmlChecker(std::string_view s) : s_(s) {}

  /// "" when well-formed, else "offset N: what is wrong".
  std::string check(bool allow_doctype) {
    if (starts("<?xml") && !skip_past("?>")) return error_;
    misc();
    if (allow_doctype && starts("<!DOCTYPE")) {
      if (!skip_past(">")) return error_;
      misc();
    }
    if (!starts("<")) return fail("expected the root element");
    if (!element()) return error_;
    misc();
    if (error_.empty() && pos_ != s_.size()) return fail("content after the root element");
    return error_;
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
  std::string error_;

  std::string fail(const std::string& what) {
    if (error_.empty()) error_ = "offset " + std::to_string(pos_) + ": " + what;
    return error_;
  }
  bool starts(std::string_view p) const { return s_.substr(pos_, p.size()) == p; }
  bool skip_past(std::string_view end) {
    const size_t e = s_.find(end, pos_);
    if (e == std::string_view::npos) return fail("unterminated construct"), false;
    pos_ = e + end.size();
    return true;
  }
  void ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }
  void misc() {
    for (;;) {
      ws();
      if (starts("<!--")) {
        if (!skip_past("-->")) return;
      } else if (starts("<?")) {
        if (!skip_past("?>")) return;
      } else {
        return;
      }
    }
  }
  static bool name_start(unsigned char c) { return std::isalpha(c) || c == '_' || c == ':' || c >= 0x80; }
  static bool name_char(unsigned char c) { return name_start(c) || std::isdigit(c) || c == '-' || c == '.'; }
  std::string name() {
    const size_t b = pos_;
    if (pos_ >= s_.size() || !name_start(static_cast<unsigned char>(s_[pos_]))) return fail("expected a name"), "";
    while (pos_ < s_.size() && name_char(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    return std::string(s_.substr(b, pos_ - b));
  }
  bool entity() {  // at '&'
    const size_t semi = s_.find(';', pos_);
    if (semi == std::string_view::npos || semi - pos_ > 12) return fail("bare '&' (not an entity)"), false;
    const std::string_view ent = s_.substr(pos_ + 1, semi - pos_ - 1);
    bool ok = ent == "amp" || ent == "lt" || ent == "gt" || ent == "quot" || ent == "apos";
    if (!ok && ent.size() > 1 && ent[0] == '#') {
      const bool hex = ent[1] == 'x';
      const std::string_view digits = ent.substr(hex ? 2 : 1);
      ok = !digits.empty() && std::all_of(digits.begin(), digits.end(), [hex](char c) {
        return hex ? std::isxdigit(static_cast<unsigned char>(c)) != 0 : std::isdigit(static_cast<unsigned char>(c)) != 0;
      });
    }
    if (!ok) return fail("unknown entity '&" + std::string(ent) + ";'"), false;
    pos_ = semi + 1;
    return true;
  }
  bool element() {  // at '<'
    ++pos_;
    const std::string tag = name();
    if (!error_.empty()) return false;
    std::set<std::string> seen;
    for (;;) {
      const size_t before = pos_;
      ws();
      if (starts("/>")) {
        pos_ += 2;
        return true;
      }
      if (starts(">")) {
        ++pos_;
        break;
      }
      if (pos_ == before) return fail("expected white space before an attribute of <" + tag + ">"), false;
      const std::string attr = name();
      if (!error_.empty()) return false;
      if (!seen.insert(attr).second) return fail("duplicate attribute '" + attr + "' on <" + tag + ">"), false;
      ws();
      if (!starts("=")) return fail("attribute '" + attr + "' has no value"), false;
      ++pos_;
      ws();
      if (pos_ >= s_.size() || (s_[pos_] != '"' && s_[pos_] != '\'')) return fail("unquoted attribute '" + attr + "'"), false;
      const char q = s_[pos_++];
      while (pos_ < s_.size() && s_[pos_] != q) {
        if (s_[pos_] == '<') return fail("'<' in the value of '" + attr + "'"), false;
        if (s_[pos_] == '&') {
          if (!entity()) return false;
        } else {
          ++pos_;
        }
      }
      if (pos_ >= s_.size()) return fail("unterminated attribute value"), false;
      ++pos_;
    }
    for (;;) {  // content
      if (pos_ >= s_.size()) return fail("<" + tag + "> is never closed"), false;
      if (starts("</")) {
        pos_ += 2;
        const std::string end = name();
        if (!error_.empty()) return false;
        if (end != tag) return fail("</" + end + "> closes <" + tag + ">"), false;
        ws();
        if (!starts(">")) return fail("expected '>' after </" + end), false;
        ++pos_;
        return true;
      }
      if (starts("<!--")) {
        if (!skip_past("-->")) return false;
      } else if (starts("<![CDATA[")) {
        if (!skip_past("]]>")) return false;
      } else if (starts("<?")) {
        if (!skip_past("?>")) return false;
      } else if (starts("<")) {
        if (!element()) return false;
      } else if (starts("&")) {
        if (!entity()) return false;
      } else if (starts("]]>")) {
        return fail("']]>' in text"), false;
      } else {
        ++pos_;
      }
    }
  }
};

std::string xml_error(std::string_view doc, bool allow_doctype = false) { return XmlChecker(doc).check(allow_doctype); }

std::string unescape(std::string s) {
  static const std::pair<const char*, const char*> kEnt[] = {
      {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}, {"&apos;", "'"}, {"&amp;", "&"}};
  for (const auto& [from, to] : kEnt)
    for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + std::strlen(to)))
      s.replace(p, std::strlen(from), to);
  return s;
}

/// The <svg>...</svg> elements of a page, in order.
std::vector<std::string> svgs_of(const std::string& html) {
  std::vector<std::string> out;
  for (size_t b = html.find("<svg"); b != std::string::npos; b = html.find("<svg", b + 1)) {
    const size_t e = html.find("</svg>", b);
    if (e == std::string::npos) break;
    out.push_back(html.substr(b, e + 6 - b));
  }
  return out;
}

using Attrs = std::map<std::string, std::string>;

/// Attributes of every start tag `<tag ...>` in `doc` (values unescaped).
std::vector<Attrs> tags(const std::string& doc, const std::string& tag) {
  std::vector<Attrs> out;
  const std::string open = "<" + tag + " ";
  for (size_t b = doc.find(open); b != std::string::npos; b = doc.find(open, b + 1)) {
    const size_t e = doc.find('>', b);
    const std::string t = doc.substr(b + open.size(), e - b - open.size());
    Attrs a;
    size_t p = 0;
    while (p < t.size()) {
      const size_t eq = t.find("=\"", p);
      if (eq == std::string::npos) break;
      size_t k = eq;
      while (k > p && t[k - 1] != ' ' && t[k - 1] != '\n') --k;
      const size_t close = t.find('"', eq + 2);
      a[t.substr(k, eq - k)] = unescape(t.substr(eq + 2, close - eq - 2));
      p = close + 1;
    }
    out.push_back(std::move(a));
  }
  return out;
}

/// The first tag whose attributes include every (key, value) of `want`.
Attrs find_tag(const std::string& doc, const std::string& tag, const Attrs& want) {
  for (const auto& a : tags(doc, tag)) {
    bool ok = true;
    for (const auto& [k, v] : want) ok = ok && a.count(k) && a.at(k) == v;
    if (ok) return a;
  }
  return {};
}

double number(const Attrs& a, const std::string& key) {
  REQUIRE_MESSAGE(a.count(key), "missing attribute " << key);
  return std::stod(a.at(key));
}

/// The visible text of an HTML page: without style, SVG charts and tags; entities decoded.
std::string page_text(std::string html) {
  for (const char* block : {"style", "svg"}) {
    const std::string open = std::string("<") + block, close = std::string("</") + block + ">";
    for (size_t b = html.find(open); b != std::string::npos; b = html.find(open, b)) {
      const size_t e = html.find(close, b);
      html.erase(b, e + close.size() - b);
    }
  }
  std::string out;
  bool in_tag = false;
  for (char c : html) {
    if (c == '<') in_tag = true;
    else if (c == '>') in_tag = false, out += ' ';
    else if (!in_tag) out += c;
  }
  return unescape(out);
}

/// Numbers as they appear in text: the leading digits of each word ("8.03B" ->
/// "8.03", "$1.23M" -> "1.23", "45.1%" -> "45.1"); words that start with a
/// letter ("bf16", "TP8") are names, not figures.
std::set<std::string> number_tokens(std::string_view s) {
  std::set<std::string> out;
  size_t i = 0;
  auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; };
  while (i < s.size()) {
    if (!word_char(s[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && word_char(s[j])) ++j;
    const std::string_view w = s.substr(i, j - i);
    if (std::isdigit(static_cast<unsigned char>(w[0]))) {
      size_t k = 0;
      while (k < w.size() && (std::isdigit(static_cast<unsigned char>(w[k])) || w[k] == '.')) ++k;
      std::string t(w.substr(0, k));
      while (!t.empty() && t.back() == '.') t.pop_back();
      out.insert(t);
    }
    i = j;
  }
  return out;
}

/// Every number token a printer could show for the JSON document: its
/// strings as they are, its numbers through every formatter the printers use.
void allowed_tokens(const json& j, std::set<std::string>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) allowed_tokens(it.value(), out);
  } else if (j.is_array()) {
    for (const auto& e : j) allowed_tokens(e, out);
  } else if (j.is_string()) {
    const auto t = number_tokens(j.get<std::string>());
    out.insert(t.begin(), t.end());
  } else if (j.is_number()) {
    const double v = j.get<double>();
    using namespace units;
    for (const std::string& s :
         {format_seconds(v), format_bytes(v), format_percent(v), format_count(v), format_flop_rate(v), format_flops(v),
          format_byte_rate(v), report::text::usd(v), report::text::days(v), report::text::flop_count(v),
          fmt::format("{}", v), fmt::format("{:g}", v), fmt::format("{:.0f}", v), fmt::format("{:.1f}", v),
          fmt::format("{:.2f}", v), fmt::format("{:.3g}", v),
          fmt::format("{:g}", v * 100)}) {  // a level, "80%" (report::text::level)
      const auto t = number_tokens(s);
      out.insert(t.begin(), t.end());
    }
  }
}

/// One report, generated once for the tests that read it.
struct Generated {
  fs::path dir;
  std::string md, html;
  json doc;
  int status = -1;
  std::string out, err;
};

const Generated& report_8b() {
  static Generated g = [] {
    Generated r;
    r.dir = fresh_dir("8b");
    const auto run = test::run_cli("report --gpu h100_sxm --model llama3_8b --gpus 8 --global-batch 64 "
                                   "--budget-usd 50000 --output " + (r.dir / "cap").string());
    r.status = run.status;
    r.out = run.out;
    r.err = run.err;
    r.md = slurp(r.dir / "cap.md");
    r.html = slurp(r.dir / "cap.html");
    const std::string j = slurp(r.dir / "cap.json");
    r.doc = j.empty() ? json() : json::parse(j);
    return r;
  }();
  struct RemoveAtExit {
    fs::path dir;
    ~RemoveAtExit() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  };
  static const RemoveAtExit cleanup{g.dir};
  return g;
}

}  // namespace

TEST_CASE("report: the XML checker accepts well-formed documents and rejects the rest") {
  CHECK(xml_error("<svg a=\"1\" b='2'><g><text>x &amp; y &#39; &#x3c;</text></g><rect/></svg>") == "");
  CHECK(xml_error("<!DOCTYPE html>\n<html><!-- c --><body/></html>\n", true) == "");
  CHECK(xml_error("<svg><g></svg>") != "");                // mismatched
  CHECK(xml_error("<svg><g>") != "");                      // never closed
  CHECK(xml_error("<svg a=1/>") != "");                    // unquoted
  CHECK(xml_error("<svg a=\"1\" a=\"2\"/>") != "");        // duplicate attribute
  CHECK(xml_error("<svg a=\"1\"b=\"2\"/>") != "");         // no space between attributes
  CHECK(xml_error("<svg>a & b</svg>") != "");              // bare ampersand
  CHECK(xml_error("<svg>&nbsp;</svg>") != "");             // not a predefined entity
  CHECK(xml_error("<svg a=\"<\"/>") != "");                // '<' in a value
  CHECK(xml_error("<svg/><svg/>") != "");                  // two roots
  CHECK(xml_error("<!DOCTYPE html><html/>", false) != "");  // DOCTYPE only where allowed
}

TEST_CASE("report: three files; every chart is well-formed SVG plotting the JSON's numbers") {
  const auto& g = report_8b();
  REQUIRE(g.status == 0);
  CHECK(g.err.empty());
  CHECK(g.out.find("wrote " + (g.dir / "cap").string() + ".md") != std::string::npos);
  CHECK(listing(g.dir) == std::vector<std::string>{"cap.html", "cap.json", "cap.md"});  // no temporaries left
  const json& j = g.doc;
  REQUIRE(j["schema"] == "ridgeline.capacity/1");

  // The page: well-formed, self-contained (no script; nothing fetched).
  CHECK(xml_error(g.html, true) == "");
  CHECK(g.html.find("<script") == std::string::npos);
  CHECK(g.html.find("Content-Security-Policy") != std::string::npos);
  for (const auto& attr : {"src=\"http", "href=\"http", "url(http", "@import"}) CHECK(g.html.find(attr) == std::string::npos);

  const auto svgs = svgs_of(g.html);
  REQUIRE(svgs.size() == 5);
  std::map<std::string, std::string> chart;
  for (const auto& s : svgs) {
    CAPTURE(s.substr(0, 200));
    CHECK(xml_error(s) == "");
    const auto root = tags(s, "svg");
    REQUIRE(root.size() == 1);
    CHECK(root[0].at("xmlns") == "http://www.w3.org/2000/svg");
    chart[root[0].at("data-chart")] = s;
  }
  REQUIRE(chart.count("roofline"));
  REQUIRE(chart.count("memory"));
  REQUIRE(chart.count("time"));
  REQUIRE(chart.count("scaling"));
  REQUIRE(chart.count("footprint"));

  SUBCASE("roofline: the roofs of the spec sheet, and each kernel where the JSON puts it") {
    const std::string& s = chart["roofline"];
    // H100 SXM dense bf16 989.4 TFLOP/s at the 1830 MHz boost (whitepaper),
    // at the profile's 1755 MHz sustained clock 949.0, and at the clock a
    // training run holds: 0.885 of that (docs/accuracy.md: the median of the
    // eight end-to-end groups' fractions, 0.884 and 0.886 in the middle), the
    // same for every GPU: 948.7 x 0.885 = 839.6; HBM 3.35 TB/s: ridge 839.6 /
    // 3.35 = 250.6 FLOP/B (the table rounds the profile's 1754.7 / 1830 x 0.885
    // = 0.849 to 840 TFLOP/s and 251).
    const auto bf16 = find_tag(s, "line", {{"class", "roof"}, {"data-precision", "bf16"}});
    CHECK(number(bf16, "data-peak-flop-per-s") == doctest::Approx(989.4e12 * 1755 / 1830 * 0.885));
    CHECK(number(bf16, "data-ridge-intensity") == doctest::Approx(989.4 * 1755 / 1830 * 0.885 / 3.35));
    CHECK(number(bf16, "data-peak-flop-per-s") < j["question"]["gpu"]["peak_flop_per_s"]["bf16"].get<double>());
    CHECK(find_tag(s, "line", {{"class", "roof"}, {"data-precision", "fp8"}}).size() > 0);  // H100 has fp8
    CHECK(number(find_tag(s, "line", {{"class", "hbm"}}), "data-hbm-bytes-per-s") == doctest::Approx(3.35e12));
    const auto& points = j["roofline"]["points"];
    REQUIRE(points.size() > 10);
    size_t kernels = 0;
    for (const auto& c : tags(s, "circle")) kernels += c.count("class") && c.at("class") == "kernel";
    CHECK(kernels == points.size());
    for (size_t i : {size_t{0}, points.size() / 2, points.size() - 1}) {
      CAPTURE(i);
      const auto k = find_tag(s, "circle", {{"class", "kernel"}, {"data-index", std::to_string(i)}});
      const auto& p = points[i];
      CHECK(k.at("data-name") == p["name"].get<std::string>());
      CHECK(number(k, "data-intensity") == p["intensity"].get<double>());
      CHECK(number(k, "data-flop-per-s") == p["flop_per_s"].get<double>());
      CHECK(number(k, "data-time-s") == p["time_s"].get<double>());
      // y = FLOPs x count / time, x = FLOPs / HBM bytes.
      CHECK(p["flop_per_s"].get<double>() ==
            doctest::Approx(p["flops"].get<double>() * p["count"].get<double>() / p["time_s"].get<double>()));
      CHECK(p["intensity"].get<double>() == doctest::Approx(p["flops"].get<double>() / p["hbm_bytes"].get<double>()));
    }
  }

  SUBCASE("roofline: each roof is labelled with its derivation, and the factors are in the assumptions") {
    // H100 SXM: dense bf16 989.4 TFLOP/s at the 1830 MHz boost (whitepaper
    // v1.04 Table 1); the profile's sustained clock 1830 x 794.5 / 828.6 =
    // 1754.7 MHz (its source: MAMF on H100 SXM against GH200); the training
    // clock fraction 0.885, the median of the eight end-to-end groups'
    // fractions (0.862, 0.871, 0.878, 0.884, 0.886, 0.898, 0.903, 0.952).
    const auto& R = j["roofline"];
    CHECK(R["boost_clock_hz"].get<double>() == doctest::Approx(1830e6));
    CHECK(R["clock_ratio"].get<double>() == doctest::Approx(1754.7 / 1830).epsilon(1e-4));
    CHECK(R["training_clock_frac"].get<double>() == doctest::Approx(0.885));
    CHECK(R["clock_scale"].get<double>() == doctest::Approx(1754.7 / 1830 * 0.885).epsilon(1e-4));
    bool bf16 = false;
    for (const auto& r : R["roofs"]) {
      CHECK(r["peak_flop_per_s"].get<double>() ==
            doctest::Approx(r["spec_peak_flop_per_s"].get<double>() * R["clock_scale"].get<double>()));
      if (r["precision"] != "bf16") continue;
      bf16 = true;
      CHECK(r["spec_peak_flop_per_s"].get<double>() == doctest::Approx(989.4e12));
    }
    CHECK(bf16);
    // 989.4 x 0.9589 x 0.885 = 839.6 TFLOP/s: the table shows both, the roof's column its factor.
    for (const std::string* doc : {&g.md, &g.html}) {
      CHECK(doc->find("roof = spec-sheet dense peak × 0.959 (the 1755 MHz the kernels run at, of the 1830 MHz "
                      "boost) × 0.885 (training-clock fraction) = × 0.849") != std::string::npos);
      CHECK(doc->find("Training-clock fraction") != std::string::npos);
      CHECK(doc->find("Clock the kernels run at") != std::string::npos);
    }
    CHECK(g.md.find("| bf16 | 989 TFLOP/s | 840 TFLOP/s | 251 |") != std::string::npos);
    CHECK(g.md.find("| precision | spec-sheet dense peak | roof (× 0.849) | ridge point (FLOP/B) |") != std::string::npos);
    CHECK(g.md.find("dense peaks;") == std::string::npos);  // no roof called a dense peak
    const auto d = find_tag(chart["roofline"], "g", {{"class", "roof-derivation"}});
    CHECK(number(d, "data-clock-ratio") == R["clock_ratio"].get<double>());
    CHECK(number(d, "data-training-clock-frac") == R["training_clock_frac"].get<double>());
  }

  SUBCASE("the step card shows the exposed communication in the chart's two parts; the MFU card says it once") {
    double exposed = -1, contention = -1;
    for (const auto& p : j["time_breakdown"]["step"]["parts"]) {
      if (p["kind"] == "exposed_comm") exposed = p["time_s"].get<double>();
      if (p["kind"] == "comm_contention") contention = p["time_s"].get<double>();
    }
    REQUIRE(exposed > 0);
    REQUIRE(contention > 0);
    // The card's total is the engine's exposed communication: the chart's two bars together.
    CHECK(exposed + contention == doctest::Approx(j["answer"]["exposed_comm_s"].get<double>()));
    const std::string card = "exposed communication " + units::format_seconds(exposed) + " + comm SM contention " +
                             units::format_seconds(contention) + " (overlapped NCCL kernels take SMs from the GEMMs) = " +
                             units::format_seconds(j["answer"]["exposed_comm_s"].get<double>());
    CHECK(g.md.find(card) != std::string::npos);
    CHECK(g.html.find(card) != std::string::npos);
    // A bf16 plan: MFU against the bf16 peak, said once.
    CHECK(g.md.find("of the spec-sheet dense bf16 peak (989 TFLOP/s); attention FLOPs causal") != std::string::npos);
    CHECK(g.md.find("vs the bf16 peak") == std::string::npos);
  }

  SUBCASE("memory: one stacked bar per technique combination, and the capacity line") {
    const std::string& s = chart["memory"];
    const auto& rows = j["techniques"]["rows"];
    REQUIRE(rows.size() == 3 * 2 * 2 * 3);  // recompute x precision (fp8 on H100) x attention x fusion
    CHECK(tags(s, "g").size() >= rows.size());
    for (size_t i : {size_t{0}, rows.size() - 1}) {
      CAPTURE(i);
      const auto bar = find_tag(s, "g", {{"class", "bar"}, {"data-row", std::to_string(i)}});
      CHECK(bar.at("data-label") == rows[i]["label"].get<std::string>());
      // Each bar names the layout its figures are of: the re-searched one, without the label's words.
      const std::string brief = rows[i]["layout_brief"].get<std::string>();
      CHECK(bar.at("data-layout") == brief);
      CHECK(brief.starts_with("TP"));
      CHECK(brief.find(" mb") != std::string::npos);
      if (rows[i]["layout"].is_string()) CHECK(rows[i]["layout"].get<std::string>().starts_with(brief.substr(0, brief.find(" mb"))));
      CHECK(s.find(">" + brief + "</text>") != std::string::npos);
      CHECK(number(bar, "data-total-bytes") == rows[i]["peak_memory_bytes"].get<double>());
      CHECK(number(bar, "data-step-time-s") == rows[i]["step_time_s"].get<double>());
    }
    // Segments of the first bar: weights and activations, and all of them add up to the peak.
    const size_t b = s.find("data-row=\"0\""), e = s.find("</g>", b);
    const std::string first = s.substr(b, e - b);
    CHECK(number(find_tag(first, "rect", {{"data-segment", "activations"}}), "data-bytes") ==
          rows[0]["memory"]["activations_bytes"].get<double>());
    CHECK(number(find_tag(first, "rect", {{"data-segment", "weights"}}), "data-bytes") ==
          rows[0]["memory"]["weights_bytes"].get<double>());
    double sum = 0;
    for (const auto& seg : tags(first, "rect")) sum += std::stod(seg.at("data-bytes"));
    CHECK(sum == doctest::Approx(rows[0]["peak_memory_bytes"].get<double>()));
    // 80 GiB (profile: nvidia-smi 81559 MiB, rounded).
    CHECK(number(find_tag(s, "line", {{"class", "capacity"}}), "data-bytes") == 80.0 * units::kGiB);
    CHECK(j["answer"]["memory"]["capacity_bytes"].get<double>() == 80.0 * units::kGiB);
    // The highlighted row is the fastest that fits.
    const int best = j["techniques"]["best_index"];
    REQUIRE(best >= 0);
    for (const auto& r : rows)
      if (r["fits"].get<bool>()) CHECK(r["step_time_s"].get<double>() >= rows[best]["step_time_s"].get<double>());
  }

  SUBCASE("time: the step as spent, and kernel time by phase") {
    const std::string& s = chart["time"];
    const auto& parts = j["time_breakdown"]["step"]["parts"];
    REQUIRE(parts.size() > 0);
    const auto r = find_tag(s, "rect", {{"data-breakdown", "step"}, {"data-name", parts[0]["name"].get<std::string>()}});
    CHECK(number(r, "data-time-s") == parts[0]["time_s"].get<double>());
    CHECK(number(r, "data-share") == parts[0]["share"].get<double>());
    const auto& by = j["time_breakdown"]["by_phase"];
    REQUIRE(by.size() > 0);
    const auto ph = find_tag(s, "rect", {{"data-breakdown", "phase"}, {"data-name", by[0]["name"].get<std::string>()}});
    CHECK(number(ph, "data-time-s") == by[0]["time_s"].get<double>());
    for (const auto* list : {&parts, &by}) {
      double share = 0;
      for (const auto& e : *list) share += e["share"].get<double>();
      CHECK(share == doctest::Approx(1.0));
    }
  }

  SUBCASE("scaling: MFU and days of the best layout at N/4, N/2, N and 2N GPUs") {
    const std::string& s = chart["scaling"];
    const auto& sc = j["layouts"]["scaling"];
    REQUIRE(sc.size() == 4);
    std::vector<int> counts;
    for (const auto& p : sc) counts.push_back(p["gpus"]);
    CHECK(counts == std::vector<int>{2, 4, 8, 16});
    for (const auto& p : sc) {
      if (!p["feasible"].get<bool>()) continue;
      const auto c = find_tag(s, "circle", {{"data-gpus", std::to_string(p["gpus"].get<int>())}});
      CHECK(number(c, "data-mfu") == p["best"]["mfu"].get<double>());
      CHECK(number(c, "data-days") == p["best"]["days"].get<double>());
    }
    // Each point's whisker: the interval of its layout, [days lo, days hi] and [MFU / hi, MFU / lo].
    size_t whiskers = 0;
    for (const auto& p : sc) {
      if (!p["feasible"].get<bool>() || p["best"]["days_interval"].is_null()) continue;
      const std::string gpus = std::to_string(p["gpus"].get<int>());
      for (const char* q : {"days", "mfu"}) {
        CAPTURE(q);
        const auto bar = find_tag(s, "line", {{"class", "error-bar"}, {"data-quantity", q}, {"data-gpus", gpus}});
        const auto& r = p["best"][std::string(q) + "_interval"];
        CHECK(number(bar, "data-lo") == r[0].get<double>());
        CHECK(number(bar, "data-hi") == r[1].get<double>());
        const double v = p["best"][q].get<double>();
        CHECK(r[0].get<double>() <= v);
        CHECK(r[1].get<double>() >= v);
        ++whiskers;
      }
    }
    CHECK(whiskers >= 2);
    CHECK(sc[2]["best"]["step_time_s"].get<double>() == doctest::Approx(j["answer"]["step_time_s"].get<double>()));
    CHECK(j["layouts"]["top"][0]["label"] == sc[2]["best"]["label"]);
  }

  SUBCASE("sizing: Chinchilla from the budget (C = 6 N D, D = 20 N)") {
    const auto& z = j["sizing"];
    const double gpu_hours = 50000.0 / 2.99;  // the profile's price per GPU-hour
    CHECK(z["gpu_hours"].get<double>() == doctest::Approx(gpu_hours));
    const double a = j["answer"]["model_flops_per_step"].get<double>() / j["answer"]["step_time_s"].get<double>() / 8;
    CHECK(z["achieved_flop_per_s_per_gpu"].get<double>() == doctest::Approx(a));
    const double c = gpu_hours * 3600 * a;
    CHECK(z["compute_flop"].get<double>() == doctest::Approx(c));
    const double n = std::sqrt(c / 120);
    CHECK(z["optimal_params"].get<double>() == doctest::Approx(n));
    CHECK(z["optimal_tokens"].get<double>() == doctest::Approx(20 * n));
    CHECK(6 * n * 20 * n == doctest::Approx(c));
    // The budget is spent: the run costs it, and trains on what it buys.
    CHECK(j["answer"]["cost_usd"].get<double>() == doctest::Approx(50000.0));
    CHECK(j["answer"]["tokens"].get<double>() == doctest::Approx(z["model_tokens"].get<double>()));
    CHECK(j["question"]["plan"]["tokens_source"] == "budget");
  }
}

TEST_CASE("report: the Markdown shows the HTML's facts, and the JSON has every figure both show") {
  const auto& g = report_8b();
  REQUIRE(g.status == 0);
  const json& j = g.doc;
  const std::string text = page_text(g.html);
  using namespace units;
  const auto& a = j["answer"];
  const std::vector<std::string> facts = {
      format_seconds(a["step_time_s"].get<double>()),
      format_percent(a["mfu"].get<double>()),
      format_percent(a["hfu"].get<double>()),
      format_bytes(a["memory"]["total_bytes"].get<double>()),
      format_bytes(a["memory"]["capacity_bytes"].get<double>()),
      format_count(a["tokens_per_s"].get<double>()) + " tokens/s",
      report::text::days(a["days"].get<double>()),
      format_count(a["gpu_hours"].get<double>()),
      report::text::usd(a["cost_usd"].get<double>()),
      format_count(a["energy_kwh"].get<double>()) + " kWh",
      j["techniques"]["rows"][j["techniques"]["best_index"].get<int>()]["label"].get<std::string>(),
      j["layouts"]["top"][0]["label"].get<std::string>(),
      format_count(j["sizing"]["optimal_params"].get<double>()),
      j["question"]["plan"]["summary"].get<std::string>(),
      j["question"]["calibration"]["status"].get<std::string>(),
  };
  for (const auto& f : facts) {
    CAPTURE(f);
    CHECK(g.md.find(f) != std::string::npos);
    CHECK(text.find(f) != std::string::npos);
  }
  // Every figure either page shows comes from the JSON.
  std::set<std::string> allowed;
  allowed_tokens(j, allowed);
  for (const auto& [what, page] : {std::pair<std::string, const std::string*>{"markdown", &g.md}, {"html", &text}}) {
    for (const auto& t : number_tokens(*page)) {
      CAPTURE(what);
      CAPTURE(t);
      CHECK(allowed.count(t) == 1);
    }
  }
  // And the two pages show the same figures.
  const auto in_md = number_tokens(g.md), in_html = number_tokens(text);
  std::string only_md, only_html;
  for (const auto& t : in_md)
    if (!in_html.count(t)) only_md += t + " ";
  for (const auto& t : in_html)
    if (!in_md.count(t)) only_html += t + " ";
  CHECK_MESSAGE(only_md.empty(), "only in the Markdown: " << only_md);
  CHECK_MESSAGE(only_html.empty(), "only in the HTML: " << only_html);
}

TEST_CASE("report: a calibrated profile shows its calibration and validation residuals") {
  const fs::path dir = fresh_dir("calibrated");
  const fs::path profile = dir / "h100_calibrated.yaml";
  std::ofstream(profile) << slurp(fs::path(RIDGELINE_SOURCE_DIR) / "hardware_profiles/h100_sxm.yaml")
                         << "calibration:\n"
                            "  measurements: cuda_validation/results/h100.json\n"
                            "  device: NVIDIA H100 80GB HBM3\n"
                            "  date: \"2025-01-01\"\n"
                            "  gemm_efficiency:\n"
                            "    bf16: 0.75\n"
                            "  residuals:\n"
                            "    - class: gemm\n"
                            "      records: 42\n"
                            "      median_abs_pct: 3.5\n"
                            "      p90_abs_pct: 9.4\n";
  const std::string args = "report --gpu " + profile.string() + " --model llama3_8b --dp 8 --zero 3 --global-batch 8 ";
  const auto r = test::run_cli(args + "--output " + (dir / "cal").string());
  REQUIRE(r.status == 0);
  const json j = json::parse(slurp(dir / "cal.json"));
  const auto& cal = j["question"]["calibration"];
  CHECK(cal["present"] == true);
  CHECK(cal["used"] == true);
  CHECK(cal["residuals"][0]["records"] == 42);
  const std::string status =
      "calibrated: efficiencies fitted from cuda_validation/results/h100.json on NVIDIA H100 80GB HBM3 (2025-01-01)";
  CHECK(cal["status"] == status);
  const std::string md = slurp(dir / "cal.md"), html = slurp(dir / "cal.html");
  CHECK(md.find(status) != std::string::npos);
  CHECK(html.find(status) != std::string::npos);
  CHECK(md.find("| gemm | 42 | 3.5% | 9.4% |") != std::string::npos);
  CHECK(html.find("<td>gemm</td><td class=\"num\">42</td><td class=\"num\">3.5%</td><td class=\"num\">9.4%</td>") !=
        std::string::npos);
  // The fitted GEMM efficiency is the one the assumptions quote.
  bool quoted = false;
  for (const auto& a : j["assumptions"])
    if (a["name"] == "GEMM efficiency") quoted = a["value"].get<std::string>().rfind("75.0% of the roof", 0) == 0;
  CHECK(quoted);
  // --no-calibration: the block is there but not used.
  const auto off = test::run_cli(args + "--no-calibration --output " + (dir / "off").string());
  REQUIRE(off.status == 0);
  const json k = json::parse(slurp(dir / "off.json"));
  CHECK(k["question"]["calibration"]["present"] == true);
  CHECK(k["question"]["calibration"]["used"] == false);
  fs::remove_all(dir);
}

TEST_CASE("report: bad arguments are one exact line, exit 2, and leave no files") {
  const fs::path dir = fresh_dir("bad");
  const std::string out = (dir / "cap").string();
  std::ofstream(dir / "plain_file") << "x";
  fs::create_directory(dir / "taken.json");  // a folder where the JSON should go: its rename fails
  // The step of Llama-3-8B on one H100 with the default plan (sequence 8192), for the budget message.
  spec::PlanSpec plan;
  plan.seq_len = 8192;
  const auto pred = engine::evaluate(test::model("llama3_8b"), plan, test::gpu("h100_sxm"));
  const double step_hours = pred.step.time_s / 3600.0;
  const std::string step = fmt::format("one training step ({:.3g} GPU-hours: {} on 1 GPU)", step_hours,
                                       units::format_seconds(pred.step.time_s));
  const std::string base = "report --gpu h100_sxm --model llama3_8b ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {base + "--output " + (dir / "missing" / "cap").string(),
       "error: --output: no such directory '" + (dir / "missing").string() + "'"},
      {base + "--output " + (dir / "plain_file" / "cap").string(),
       "error: --output: '" + (dir / "plain_file").string() + "' is not a directory"},
      {base + "--output " + (dir / "").string(),
       "error: --output: expected a folder and a name such as reports/llama3_8b, got '" + (dir / "").string() + "'"},
      {base + "--tokens 15T --budget-usd 1000 --output " + out,
       "error: --budget-usd: cannot be combined with --tokens: give the training run as tokens or as a budget, not "
       "both"},
      {base + "--tokens 15T --budget-gpu-hours 1000 --output " + out,
       "error: --budget-gpu-hours: cannot be combined with --tokens: give the training run as tokens or as a "
       "budget, not both"},
      {base + "--budget-gpu-hours 10 --budget-usd 1000 --output " + out,
       "error: --budget-usd: cannot be combined with --budget-gpu-hours: give one budget"},
      {base + "--budget-usd 0 --output " + out, "error: --budget-usd: expected a positive amount, got 0"},
      {base + "--budget-usd 0.0001 --output " + out,
       "error: --budget-usd: $0.0001 buys 3.34e-05 GPU-hours at $2.99 per GPU-hour, less than " + step},
      {base + "--budget-gpu-hours 0.00001 --output " + out, "error: --budget-gpu-hours: 1e-05 GPU-hours is less than " + step},
      {base + "--gpus 8 --output " + out,
       "error: --global-batch: a report with --gpus needs the global batch in sequences, e.g. --global-batch 1024"},
      {base + "--gpus 0 --global-batch 8 --output " + out, "error: --gpus: expected at least 1 GPU, got 0"},
      {base + "--objective speed --output " + out,
       "error: --objective: expected one of time, cost, mfu, got \"speed\""},
      {base + "--tp 3 --output " + out, "error: parallel.tp (--tp): TP 3 does not divide 32 attention heads"},
      {base + "--dp 8 --zero 3 --global-batch 8 --output " + (dir / "taken").string(),
       "error: --output: cannot write to '" + (dir / "taken.json").string() + "': Is a directory"},
  };
  REQUIRE(step_hours > 0.0001 / 2.99);  // both budgets above are less than one step
  for (const auto& [args, expected] : cases) {
    CAPTURE(args);
    const auto r = test::run_cli(args);
    CHECK(r.status == 2);
    CHECK(r.err == expected + "\n");
    CHECK(r.out.empty());
    // Nothing new in the folder: no report, no temporary (the renamed .md and .html were taken back).
    CHECK(listing(dir) == std::vector<std::string>{"plain_file", "taken.json"});
  }
  fs::remove_all(dir);
}

TEST_CASE("report: the committed examples are what the current build writes (scripts/regen_reports.sh)") {
  const fs::path reports = fs::path(RIDGELINE_SOURCE_DIR) / "reports";
  const fs::path dir = fresh_dir("examples");
  int count = 0;
  for (const auto& e : fs::directory_iterator(reports)) {
    if (e.path().extension() != ".json") continue;
    const std::string name = e.path().stem().string();
    CAPTURE(name);
    const json committed = json::parse(slurp(e.path()));
    std::string command = committed["command"];
    const std::string prefix = "ridgeline ", from = "--output reports/" + name, to = "--output " + (dir / name).string();
    REQUIRE(command.rfind(prefix, 0) == 0);
    REQUIRE(command.find(from) != std::string::npos);
    const auto r = test::run_cli(command.substr(prefix.size()).replace(command.find(from) - prefix.size(), from.size(), to));
    CHECK(r.status <= 1);
    for (const std::string ext : {".md", ".html", ".json"}) {
      CAPTURE(ext);
      std::string fresh = slurp(dir / (name + ext));
      for (size_t p = fresh.find(to); p != std::string::npos; p = fresh.find(to, p)) fresh.replace(p, to.size(), from);
      const std::string committed_text = slurp(reports / (name + ext));
      std::string first_difference;
      if (fresh != committed_text) {
        std::istringstream a(fresh), b(committed_text);
        std::string la, lb;
        for (int line = 1;; ++line) {
          const bool more_a = static_cast<bool>(std::getline(a, la)), more_b = static_cast<bool>(std::getline(b, lb));
          if (!more_a && !more_b) break;
          if (!more_a) la.clear();
          if (!more_b) lb.clear();
          if (la != lb) {
            first_difference = "line " + std::to_string(line) + ": now \"" + la.substr(0, 160) +
                               "\", committed \"" + lb.substr(0, 160) + "\"";
            break;
          }
        }
        if (first_difference.empty()) first_difference = "line ends";
      }
      CHECK_MESSAGE(first_difference.empty(), "reports/" << name << ext << " is stale ("
                                                         << first_difference << "): run scripts/regen_reports.sh");
    }
    ++count;
  }
  CHECK(count >= 3);
  fs::remove_all(dir);
}

TEST_CASE("report: the examples and a fresh report render in headless Chromium (tests/browser/check_reports.sh)") {
  if (std::system("command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1") != 0) {
    MESSAGE("skipped: no chromium installed (scripts/test.sh installs it)");
    return;
  }
  const auto& g = report_8b();
  REQUIRE(g.status == 0);
  std::string files;
  for (const auto& e : fs::directory_iterator(fs::path(RIDGELINE_SOURCE_DIR) / "reports"))
    if (e.path().extension() == ".html") files += " " + e.path().string();
  files += " " + (g.dir / "cap.html").string();
  const std::string cmd = std::string("cd ") + RIDGELINE_SOURCE_DIR + " && bash tests/browser/check_reports.sh --require" +
                          files + " 2>&1";
  std::string log;
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) log.append(buf, n);
  const int raw = ::pclose(p);
  CAPTURE(log);
  CHECK(WIFEXITED(raw));
  CHECK(WEXITSTATUS(raw) == 0);
  CHECK(log.find("reports passed") != std::string::npos);
}
