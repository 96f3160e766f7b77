// Capacity reports as a planner reads them (issue 16, item 19): the step as
// it is spent with the hidden communication apart, a memory chart of the
// chosen plan, scaling labels that never touch, a technique grid in which
// every combination searches its own layout, the profile's real path, --set
// in the header, and an unknown price shown as unknown.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ridgeline/report/svg.hpp"
#include "ridgeline/search/search.hpp"
#include "ridgeline/units/units.hpp"
#include "test_support.hpp"

using namespace ridgeline;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using ridgeline::test::slurp;

struct Report {
  fs::path dir;
  std::string md, html;
  json doc;
  test::RunResult run;
};

/// Runs `report ARGS --output DIR/NAME` into a fresh folder.
Report make_report(const std::string& name, const std::string& args) {
  Report r;
  r.dir = fs::temp_directory_path() / ("ridgeline_planning_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(r.dir);
  fs::create_directories(r.dir);
  r.run = test::run_cli("report " + args + " --output " + (r.dir / name).string());
  r.md = slurp(r.dir / (name + ".md"));
  r.html = slurp(r.dir / (name + ".html"));
  const std::string j = slurp(r.dir / (name + ".json"));
  r.doc = j.empty() ? json() : json::parse(j);
  return r;
}

/// The <svg> element of the chart `name`.
std::string chart(const std::string& html, const std::string& name) {
  const size_t at = html.find("data-chart=\"" + name + "\"");
  if (at == std::string::npos) return "";
  const size_t b = html.rfind("<svg", at), e = html.find("</svg>", at);
  return html.substr(b, e + 6 - b);
}

using Attrs = std::map<std::string, std::string>;

/// Attributes of every `<tag ...>` in `doc` that has attribute `key`="`value`" (all when key is empty).
std::vector<Attrs> tags(const std::string& doc, const std::string& tag, const std::string& key = "",
                        const std::string& value = "") {
  std::vector<Attrs> out;
  const std::string open = "<" + tag + " ";
  for (size_t b = doc.find(open); b != std::string::npos; b = doc.find(open, b + 1)) {
    const std::string t = doc.substr(b + open.size(), doc.find('>', b) - b - open.size());
    Attrs a;
    for (size_t p = 0;;) {
      const size_t eq = t.find("=\"", p);
      if (eq == std::string::npos) break;
      size_t k = eq;
      while (k > p && t[k - 1] != ' ') --k;
      const size_t close = t.find('"', eq + 2);
      a[t.substr(k, eq - k)] = t.substr(eq + 2, close - eq - 2);
      p = close + 1;
    }
    if (key.empty() || (a.count(key) && a.at(key) == value)) out.push_back(std::move(a));
  }
  return out;
}

double num(const Attrs& a, const std::string& key) {
  REQUIRE_MESSAGE(a.count(key), "missing attribute " << key);
  return std::stod(a.at(key));
}

/// Llama-3-8B on 8 H100s, bf16 asked for: the layout search runs, and the
/// technique grid varies precision (fp8) and recomputation beyond it.
const Report& report_8x() {
  static const Report r = make_report("8x", "--gpu h100_sxm --model llama3_8b --gpus 8 --global-batch 64 "
                                            "--precision bf16 --tokens 10B");
  return r;
}

}  // namespace

TEST_SUITE("report planning") {

TEST_CASE("report planning: the step as spent adds up to the step; hidden communication is apart") {
  const auto& r = report_8x();
  REQUIRE(r.run.status == 0);
  const json& tb = r.doc["time_breakdown"]["step"];
  const double step = r.doc["answer"]["step_time_s"].get<double>();
  CHECK(tb["step_time_s"].get<double>() == step);
  // The bars add up to the step time (that is what "as spent" means) and their shares to 1.
  double sum = 0, share = 0;
  bool exposed = false;
  for (const auto& p : tb["parts"]) {
    sum += p["time_s"].get<double>();
    share += p["share"].get<double>();
    exposed = exposed || p["kind"] == "exposed_comm";
    CHECK(p["kind"] != "hidden");
  }
  CHECK(sum == doctest::Approx(step).epsilon(1e-9));
  CHECK(share == doctest::Approx(1.0));
  CHECK(exposed);  // 8 GPUs: the data-parallel reduction's last bucket at least
  // All communication kernels (the by-class breakdown's collective and p2p,
  // summed by the engine independently) = hidden + exposed.
  double comm = 0;
  for (const auto& c : r.doc["time_breakdown"]["by_class"])
    if (c["name"] == "collective" || c["name"] == "p2p") comm += c["time_s"].get<double>();
  CHECK(tb["comm_total_s"].get<double>() == doctest::Approx(comm));
  CHECK(tb["comm_hidden_s"].get<double>() + tb["comm_exposed_s"].get<double>() == doctest::Approx(comm));
  CHECK(tb["comm_hidden_s"].get<double>() > 0);
  // The chart draws the step's parts and, apart, the hidden communication as hidden.
  const std::string svg = chart(r.html, "time");
  REQUIRE(!svg.empty());
  CHECK(tags(svg, "rect", "data-breakdown", "step").size() == tb["parts"].size());
  const auto hidden = tags(svg, "rect", "data-name", "hidden communication");
  REQUIRE(hidden.size() == 1);
  CHECK(hidden[0].at("data-breakdown") == "hidden");
  CHECK(num(hidden[0], "data-time-s") == tb["comm_hidden_s"].get<double>());
  CHECK(svg.find(">Hidden behind compute (not part of the step)</text>") != std::string::npos);
  // The tables say the same, with exact labels.
  CHECK(r.md.find("| the step, as spent | time per step | share of the step |") != std::string::npos);
  CHECK(r.md.find("| hidden behind compute (not part of the step) | ") != std::string::npos);
  CHECK(r.md.find("| **step** | **" + units::format_seconds(step) + "** | **100.0%** |") != std::string::npos);
}

TEST_CASE("report planning: the pipeline bubble is a bar of the step") {
  // GPT-3 175B on 64 A100s at TP8 PP8 v3 with 64 micro-batches of 1 (global
  // batch 64, DP1): bubble = (p - 1) / (v m) = 7 / (3 x 64) = 3.65% of the ideal time.
  const Report r = make_report("bubble", "--gpu a100_sxm_80gb --model korthikanti_175b --tp 8 --pp 8 --vpp 3 --sp "
                                         "--micro-batch 1 --global-batch 64 --seq 2048 --recompute selective "
                                         "--attention naive --tokens 300B");
  REQUIRE(r.run.status <= 1);
  const json& a = r.doc["answer"];
  CHECK(a["bubble_fraction"].get<double>() == doctest::Approx(7.0 / (3 * 64)));
  bool found = false;
  for (const auto& p : r.doc["time_breakdown"]["step"]["parts"])
    if (p["kind"] == "bubble") {
      found = true;
      CHECK(p["name"] == "pipeline bubble");
      CHECK(p["time_s"].get<double>() == a["bubble_s"].get<double>());
      CHECK(p["share"].get<double>() == doctest::Approx(a["bubble_s"].get<double>() / a["step_time_s"].get<double>()));
    }
  CHECK(found);
  CHECK(tags(chart(r.html, "time"), "rect", "data-kind", "bubble").size() == 1);
  // The memory chart of the plan: both end stages, their segments adding up to each stage's total.
  const std::string fp = chart(r.html, "footprint");
  const auto bars = tags(fp, "g", "class", "bar");
  REQUIRE(bars.size() == 2);
  CHECK(bars[0].at("data-label").rfind("first stage", 0) == 0);
  CHECK(bars[1].at("data-label").rfind("last stage", 0) == 0);
  fs::remove_all(r.dir);
}

TEST_CASE("report planning: a memory chart of the chosen plan, by component, against the capacity") {
  const auto& r = report_8x();
  REQUIRE(r.run.status == 0);
  const std::string fp = chart(r.html, "footprint");
  REQUIRE(!fp.empty());
  const json& m = r.doc["answer"]["memory"];
  // One bar (no pipeline): its segments are the JSON's categories and add up to the peak.
  const auto bars = tags(fp, "g", "class", "bar");
  REQUIRE(bars.size() == 1);
  CHECK(num(bars[0], "data-total-bytes") == m["total_bytes"].get<double>());
  double sum = 0;
  for (const auto& seg : tags(fp, "rect", "class", "segment")) {
    const std::string key = seg.at("data-segment") == "master weights"    ? "master_weights_bytes"
                            : seg.at("data-segment") == "optimizer state" ? "optimizer_bytes"
                                                                          : seg.at("data-segment") + "_bytes";
    CAPTURE(key);
    // The JSON writes whole bytes; the chart the value itself (a fragmentation of 5% of the allocated bytes
    // has a fraction).
    CHECK(std::round(num(seg, "data-bytes")) == m[key].get<double>());
    sum += num(seg, "data-bytes");
  }
  CHECK(sum == doctest::Approx(m["total_bytes"].get<double>()));
  for (const char* s : {"weights", "gradients", "optimizer state", "activations", "fragmentation"})
    CHECK(tags(fp, "rect", "data-segment", s).size() == 1);
  // 80 GiB (profile: nvidia-smi 81559 MiB, rounded).
  CHECK(num(tags(fp, "line", "class", "capacity").at(0), "data-bytes") == 80.0 * units::kGiB);
  // The report searched (--gpus 8), so the search's 5% headroom is drawn:
  // 0.95 x 85899345920 B = 81604378624 B.
  const auto headroom = tags(fp, "line", "class", "headroom");
  REQUIRE(headroom.size() == 1);
  CHECK(num(headroom[0], "data-bytes") == 81604378624.0);
  CHECK(fp.find(">capacity 80.0 GiB</text>") != std::string::npos);
}

TEST_CASE("report planning: scaling labels keep their distance and stay in the chart") {
  // The shipped 70B pre-training example: four GPU counts whose labels sit
  // close (the days halve while the cost barely moves).
  for (const Report* r : {&report_8x()}) {
    const Report big = make_report("labels", "--gpu h100_sxm --model llama3_70b --gpus 512 --global-batch 2048 "
                                             "--seq 8192 --precision bf16 --tokens 15T");
    for (const Report* rep : {r, &big}) {
      REQUIRE(rep->run.status == 0);
      const std::string sc = chart(rep->html, "scaling");
      REQUIRE(!sc.empty());
      const auto root = tags(sc, "svg").at(0);
      std::istringstream vb(root.at("viewBox"));
      double vx, vy, vw, vh;
      vb >> vx >> vy >> vw >> vh;
      for (const char* q : {"mfu", "days"}) {
        CAPTURE(q);
        const auto labels = tags(sc, "text", "data-quantity", q);
        size_t feasible = 0;
        for (const auto& p : rep->doc["layouts"]["scaling"]) feasible += p["feasible"].get<bool>();
        CHECK(labels.size() == feasible);
        std::vector<std::array<double, 4>> boxes;
        for (const auto& l : labels) {
          std::istringstream in(l.at("data-box"));
          std::array<double, 4> b{};
          in >> b[0] >> b[1] >> b[2] >> b[3];
          CHECK(b[0] >= 0);
          CHECK(b[2] <= vw);
          CHECK(b[1] >= 0);
          CHECK(b[3] <= vh);
          boxes.push_back(b);
        }
        for (size_t i = 0; i < boxes.size(); ++i)
          for (size_t k = i + 1; k < boxes.size(); ++k) {
            const auto &a = boxes[i], &b = boxes[k];
            // Apart by at least the gap along one axis.
            const double dx = std::max(b[0] - a[2], a[0] - b[2]), dy = std::max(b[1] - a[3], a[1] - b[3]);
            CAPTURE(i);
            CAPTURE(k);
            CHECK(std::max(dx, dy) >= report::svg::kLabelGap - 0.11);  // coordinates carry one decimal
          }
      }
    }
    fs::remove_all(big.dir);
  }
}

TEST_CASE("report planning: every technique combination searches its own layout") {
  const auto& r = report_8x();
  REQUIRE(r.run.status == 0);
  const json& t = r.doc["techniques"];
  CHECK(t["searched"] == true);
  REQUIRE(t["rows"].size() == 3 * 2 * 2 * 3);
  // Each row's figures are those of its own best layout: the same search,
  // run here with the row's recomputation and precision fixed, finds it,
  // and the engine predicts its step time.
  const auto hw = test::gpu("h100_sxm");
  const auto m = test::model("llama3_8b");
  int fp8_rows = 0;
  for (const auto& row : t["rows"]) {
    CAPTURE(row["label"].get<std::string>());
    if (!row["any_layout_fits"].get<bool>()) {
      CHECK(row["layout"].is_null());
      CHECK(row["fits"] == false);
      continue;
    }
    CHECK(row["fits"] == true);
    CHECK(row["layout"].is_string());
    fp8_rows += row["settings"]["precision"] == "fp8";
  }
  CHECK(fp8_rows > 0);  // fp8 fits at a layout of its own
  // The first and the last row, checked against a search and a prediction made here.
  for (size_t i : {size_t{0}, t["rows"].size() - 1}) {
    const json& row = t["rows"][i];
    CAPTURE(i);
    REQUIRE(row["any_layout_fits"] == true);
    spec::PlanSpec base;
    base.seq_len = 8192;
    base.global_batch = 64;
    base.tokens = 10e9;
    REQUIRE(spec::apply_setting(base, "recompute", row["settings"]["recompute"].get<std::string>()).empty());
    REQUIRE(spec::apply_setting(base, "precision", row["settings"]["precision"].get<std::string>()).empty());
    REQUIRE(spec::apply_setting(base, "attention", row["settings"]["attention"].get<std::string>()).empty());
    REQUIRE(spec::apply_setting(base, "fusion", row["settings"]["fusion"].get<std::string>()).empty());
    search::SearchSpec s;
    s.gpus = 8;
    s.global_batch = 64;
    s.top = 1;
    s.recompute = {base.recompute};
    s.precision = {base.precision};
    const auto res = search::run(s, m, base, hw);
    REQUIRE(!res.top.empty());
    const auto pred = engine::evaluate(m, search::plan_for(base, res.top.front().layout, 64), hw);
    CHECK(row["step_time_s"].get<double>() == doctest::Approx(pred.step.time_s));
    CHECK(row["peak_memory_bytes"].get<double>() == doctest::Approx(pred.memory.total));
  }
  // The Markdown says how the grid was made, and the report's stdout how long it took.
  CHECK(r.md.find("Each combination searched its own best layout (its recomputation and precision fixed, the rest "
                  "of the layout free).") != std::string::npos);
  CHECK(r.md.find("| its best layout |") != std::string::npos);
  CHECK(r.run.out.find("technique grid: 36 combinations, each with its own layout search, in ") != std::string::npos);
}

TEST_CASE("report planning: the profile's path as it was read") {
  const auto& r = report_8x();
  REQUIRE(r.run.status == 0);
  // Run from the repository root: the shipped profile is found there.
  CHECK(r.doc["question"]["gpu"]["source_file"] == "hardware_profiles/h100_sxm.yaml");
  CHECK(r.html.find("Sources of the profile's figures (hardware_profiles/h100_sxm.yaml)") != std::string::npos);
  // A profile of the user's own: its own path, not hardware_profiles/<id>.yaml.
  const fs::path dir = fs::temp_directory_path() / ("ridgeline_planning_ownprofile_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path own = dir / "my_h100.yaml";
  std::ofstream(own) << test::shipped_text("h100_sxm");
  const Report o = make_report("own", "--gpu " + own.string() + " --model gpt3_125m --dp 8 --global-batch 8");
  REQUIRE(o.run.status == 0);
  CHECK(o.doc["question"]["gpu"]["source_file"] == own.string());
  CHECK(o.html.find("Sources of the profile's figures (" + own.string() + ")") != std::string::npos);
  CHECK(o.md.find("profile " + own.string()) != std::string::npos);
  fs::remove_all(dir);
  fs::remove_all(o.dir);
}

TEST_CASE("report planning: a profile without a price has an unknown cost, never $0.00") {
  const fs::path dir = fs::temp_directory_path() / ("ridgeline_planning_nopriceprofile_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path profile = dir / "h100_noprice.yaml";
  std::string text = test::shipped_text("h100_sxm");
  const size_t at = text.find("price_per_gpu_hour:");
  REQUIRE(at != std::string::npos);
  text.erase(at, text.find('\n', at) + 1 - at);  // the price line (its source stays in sources:)
  std::ofstream(profile) << text;
  const Report r = make_report("noprice", "--gpu " + profile.string() + " --model gpt3_125m --gpus 8 --global-batch 8");
  REQUIRE_MESSAGE(r.run.status == 0, r.run.err);
  const json& a = r.doc["answer"];
  CHECK(a["cost_usd"].is_null());
  CHECK(a["cost_usd_interval"].is_null());
  CHECK(r.doc["question"]["gpu"]["price_per_gpu_hour_usd"].is_null());
  for (const auto& l : r.doc["layouts"]["top"]) CHECK(l["cost_usd"].is_null());
  CHECK(r.md.find("| Cost | **unknown** | the profile gives no price_per_gpu_hour (--set gpu.price_per_gpu_hour=... "
                  "gives one) |") != std::string::npos);
  CHECK(r.md.find("price unknown") != std::string::npos);
  CHECK(r.md.find("an unknown cost (the profile has no price)") != std::string::npos);
  for (const std::string* page : {&r.md, &r.html}) {
    CHECK(page->find("$0.00") == std::string::npos);
    CHECK(page->find("$0 ") == std::string::npos);
  }
  CHECK(chart(r.html, "scaling").find("d · unknown") != std::string::npos);
  fs::remove_all(dir);
  fs::remove_all(r.dir);
}

TEST_CASE("report planning: --set is applied and named in the header") {
  // plan.micro_batch=2: two sequences per micro-batch, as --micro-batch 2 would give.
  const Report r = make_report("set", "--gpu h100_sxm --model gpt3_125m --dp 8 --global-batch 16 "
                                      "--set plan.micro_batch=2");
  REQUIRE_MESSAGE(r.run.status == 0, r.run.err);
  CHECK(r.doc["settings"] == "set plan.micro_batch=2");
  CHECK(r.doc["question"]["plan"]["micro_batch"] == 2);
  CHECK(r.html.find("<p class=\"settings\">set plan.micro_batch=2</p>") != std::string::npos);
  CHECK(r.md.find("| Settings | **set plan.micro_batch=2** | --set: applied to the files before they were read |") !=
        std::string::npos);
  CHECK(r.run.out.rfind("set plan.micro_batch=2\n", 0) == 0);
  fs::remove_all(r.dir);
}

TEST_CASE("report planning: the demo's first plan is the search's best layout, and it fits") {
  // scripts/demo.sh predicts Llama-3-8B on 8 H100s at the layout the search
  // ranks first (global batch 64, sequence 8192, bf16); when the search's
  // best changes, the demo must follow.
  const std::string demo = slurp(fs::path(RIDGELINE_SOURCE_DIR) / "scripts/demo.sh");
  // Context parallelism over two GPUs at 8K tokens, as NeMo 24.07's own
  // Llama-3-8B recipe on 8 H100s (TP1 PP1 DP4 CP2, validation row
  // nemo2407_pretrain_LLAMA3-8B_8gpu); ZeRO-2 fits at DP4 (53.7 GiB).
  const std::string flags = "--tp 1 --pp 1 --dp 4 --cp 2 --micro-batch 1 --zero 2 --recompute none";
  REQUIRE(demo.find(flags) != std::string::npos);
  spec::PlanSpec base;
  base.seq_len = 8192;
  base.global_batch = 64;
  search::SearchSpec s;
  s.gpus = 8;
  s.global_batch = 64;
  s.top = 1;
  s.precision = {spec::Precision::kBf16};
  const auto res = search::run(s, test::model("llama3_8b"), base, test::gpu("h100_sxm"));
  REQUIRE(!res.top.empty());
  const auto& l = res.top.front().layout;
  CHECK(l.tp == 1);
  CHECK(l.pp == 1);
  CHECK(l.dp == 4);
  CHECK(l.cp == 2);
  CHECK(l.micro_batch == 1);
  CHECK(l.zero == 2);
  CHECK(spec::to_string(l.recompute) == "none");
  // The demo's predict: it fits (exit 0).
  const auto r = test::run_cli("predict --gpu h100_sxm --model llama3_8b --seq 8192 --global-batch 64 --precision bf16 " +
                               flags);
  CHECK(r.status == 0);
  CHECK(r.out.find("fits") != std::string::npos);
}

}  // TEST_SUITE
