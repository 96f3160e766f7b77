// `ridgeline calibrate --runs` and `--calibration` end to end, as a user runs
// them: runs made from the plans' own predictions with a known factor give
// that factor back and are reproduced by predict with the calibration; the
// sample runs of tests/data/runs/ calibrate, and predict, compare, search,
// advise and report name the calibration and its runs in their headers and
// JSON, and say when it does not apply.
#include <doctest/doctest.h>

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <unistd.h>
#include <vector>

#include "ridgeline/spec/stack_calibration.hpp"
#include "ridgeline/units/units.hpp"
#include "test_support.hpp"

using namespace ridgeline;
using nlohmann::json;
namespace fs = std::filesystem;
using test::run_cli;

namespace {

/// A fresh folder for one test case, removed at the end.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("ridgeline_calruns_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& f) const { return (path / f).string(); }
};

json predict_json(const std::string& args) {
  const auto r = run_cli("predict " + args + " --format json");
  REQUIRE(r.status == 0);
  return json::parse(r.out);
}

/// The torchtitan plans on 8 H100s the round trip runs.
const std::vector<std::string> kPlans = {
    "--framework torchtitan --dp 8 --zero 3 --seq 8192 --global-batch 64 --recompute op",
    "--framework torchtitan --dp 8 --zero 3 --seq 8192 --global-batch 64 --recompute full",
    "--framework torchtitan --dp 8 --zero 3 --seq 4096 --global-batch 128",
};

}  // namespace

TEST_CASE("calibrate --runs: runs at 1.15 x the predicted step time and 1.05 x its reserved memory give 1.15 and "
          "1.05 back, and predict reproduces them") {
  TempDir dir("roundtrip");
  std::string runs = "runs:\n";
  std::vector<double> step_s, reserved_bytes;
  for (size_t i = 0; i < kPlans.size(); ++i) {
    const json p = predict_json("--gpu h100_sxm --model llama3_8b " + kPlans[i]);
    step_s.push_back(p["step"]["step_time_s"].get<double>() * 1.15);
    reserved_bytes.push_back(p["memory"]["reserved_bytes"].get<double>() * 1.05);
    // 17 significant digits: the doubles as they are.
    runs += fmt::format("  - name: run{}\n    gpu: h100_sxm\n    model: llama3_8b\n    plan: \"{}\"\n    measured:\n"
                        "      step_time_s: {:.17g}\n      peak_memory_gib: {:.17g}\n",
                        i, kPlans[i], step_s[i], reserved_bytes[i] / units::kGiB);
  }
  std::ofstream(dir / "runs.yaml") << runs;
  const auto cal = run_cli("calibrate --runs " + dir / "runs.yaml" + " -o " + dir / "stack.yaml");
  REQUIRE(cal.status == 0);
  CHECK(cal.out.find("h100_sxm + torchtitan (3 runs):") != std::string::npos);
  const auto file = spec::load_stack_calibration(dir / "stack.yaml");
  REQUIRE(file.stacks.size() == 1);
  const auto& s = file.stacks[0].correction;
  CHECK(s.time_scale == doctest::Approx(1.15).epsilon(0.01));
  CHECK(s.time_scale == doctest::Approx(1.15).epsilon(1e-9));  // every run says exactly 1.15
  // Three runs are weighed with their own spread (uncertainty/scale_prior.hpp), here 0: the prior of the
  // published sources' offsets gets no weight against runs that agree exactly.
  CHECK(cal.out.find("3 runs (geometric mean of measured / predicted 1.150) weighted 1.00 against the prior") !=
        std::string::npos);
  // Reserved = allocated x (1 + rho): the fitted reserve over torchtitan's 5% is the memory factor.
  CHECK(s.reserve_prior == 0.05);
  CHECK((1 + s.allocator_reserve) / (1 + s.reserve_prior) == doctest::Approx(1.05).epsilon(0.01));
  CHECK((1 + s.allocator_reserve) / (1 + s.reserve_prior) == doctest::Approx(1.05).epsilon(1e-9));
  for (size_t i = 0; i < kPlans.size(); ++i) {
    CAPTURE(kPlans[i]);
    const json p = predict_json("--gpu h100_sxm --model llama3_8b " + kPlans[i] + " --calibration " + dir / "stack.yaml");
    CHECK(p["step"]["step_time_s"].get<double>() == doctest::Approx(step_s[i]).epsilon(1e-9));
    CHECK(p["memory"]["reserved_bytes"].get<double>() == doctest::Approx(reserved_bytes[i]).epsilon(1e-9));
    CHECK(p["calibration"]["applied"] == true);
    CHECK(p["calibration"]["stack_runs"] == json::array({"run0", "run1", "run2"}));
    CHECK(p["interval"]["anchored"] == true);
  }
}

TEST_CASE("calibrate --runs then predict --calibration: the sample runs, the JSON naming the file and its runs") {
  TempDir dir("user");
  const std::string stack = dir / "stack.yaml";
  const auto cal = run_cli("calibrate --runs tests/data/runs/runs.yaml -o " + stack);
  REQUIRE(cal.status == 0);
  CHECK(cal.out.find("Calibrated 3 stacks from 5 runs of tests/data/runs/runs.yaml") != std::string::npos);
  // The hf stack's run gave no memory: its reserve keeps the prior, and says why.
  CHECK(cal.out.find("kept at the prior, frameworks/hf.yaml's 0.1: no run gave peak memory") != std::string::npos);
  // Host dispatch and exposed communication stay at the framework's values,
  // and the output says why: no sample run is host-bound (Llama-3-8B's
  // kernels outlast its dispatch on 8 H100s), and the torchtitan stack's
  // three runs differ little in exposed communication.
  CHECK(cal.out.find("held at the prior: host dispatch per op and the exposed share of communication kept at "
                     "frameworks/torchtitan.yaml's") != std::string::npos);
  CHECK(cal.out.find("no run is host-bound in the prediction") != std::string::npos);
  CHECK(cal.out.find("too alike across the runs to tell it from the scale") != std::string::npos);
  CHECK(cal.out.find("from under three runs, which cannot tell it from the scale") != std::string::npos);
  const std::string plan = "--gpu h100_sxm --model llama3_8b --framework torchtitan --dp 8 --zero 3 --seq 8192 "
                           "--global-batch 64 --recompute op";
  const json bare = predict_json(plan);
  const json p = predict_json(plan + " --calibration " + stack);
  const auto& c = p["calibration"];
  CHECK(c["file"] == stack);
  CHECK(c["applied"] == true);
  CHECK(c["gpu"] == "h100_sxm");
  CHECK(c["framework"] == "torchtitan");
  CHECK(c["stack_runs"] == json::array({"pilot-8xh100", "titan-full-ac", "titan-profiled"}));
  CHECK(c["runs"].size() == 5);
  const auto file = spec::load_stack_calibration(stack);
  CHECK(c["time_scale"].get<double>() == file.stacks[0].correction.time_scale);
  CHECK(p["step"]["step_time_s"].get<double>() ==
        doctest::Approx(bare["step"]["step_time_s"].get<double>() * file.stacks[0].correction.time_scale));
  // The table's header says so (--wide: the line whole, not wrapped at 120 columns).
  const auto table = run_cli("predict " + plan + " --calibration " + stack + " --wide");
  CHECK(table.out.find("calibrated on 3 runs: pilot-8xh100, titan-full-ac, titan-profiled (" + stack +
                       ", h100_sxm + torchtitan): step time x ") != std::string::npos);
  CHECK(table.out.find("80%, anchored on 3 runs (pilot-8xh100, titan-full-ac, titan-profiled)") != std::string::npos);
  // Another GPU: no correction, and the output says so.
  const std::string h200 = "--gpu h200 --model llama3_8b --framework torchtitan --dp 8 --zero 3 --seq 8192 "
                           "--global-batch 64 --recompute op";
  const json other = predict_json(h200 + " --calibration " + stack);
  CHECK(other["calibration"]["applied"] == false);
  CHECK(other["calibration"]["line"].get<std::string>().find(
            "not applied: it covers h100_sxm + torchtitan, h100_sxm + megatron, h100_sxm + hf; this plan runs "
            "torchtitan on h200") != std::string::npos);
  CHECK(other["step"]["step_time_s"] == predict_json(h200)["step"]["step_time_s"]);
  CHECK_FALSE(other["interval"].contains("anchored"));
}

TEST_CASE("--calibration: compare, search, advise and report name it, per row where rows differ") {
  TempDir dir("views");
  const std::string stack = dir / "stack.yaml";
  REQUIRE(run_cli("calibrate --runs tests/data/runs/runs.yaml -o " + stack).status == 0);
  const std::string plan = "--gpu h100_sxm --model llama3_8b --framework torchtitan --dp 8 --zero 3 --seq 8192 "
                           "--global-batch 64 --recompute op --calibration " + stack;
  const auto cmp = run_cli("compare " + plan + " --vary gpu=h100_sxm,h200 --format json");
  REQUIRE(cmp.status == 0);
  const json c = json::parse(cmp.out);
  CHECK(c["calibration"]["rows_applied"] == 1);
  CHECK(c["rows"][0]["calibration_applied"] == true);
  CHECK(c["rows"][1]["calibration_applied"] == false);
  const auto cmp_table = run_cli("compare " + plan + " --vary gpu=h100_sxm,h200");
  CHECK(cmp_table.out.find("applied to 1 of 2 rows (those on h100_sxm + torchtitan)") != std::string::npos);

  const auto srch = run_cli("search " + plan + " --gpus 8 --top 2 --format json");
  REQUIRE(srch.status == 0);
  CHECK(json::parse(srch.out)["query"]["calibration"]["applied"] == true);
  const auto srch_table = run_cli("search " + plan + " --gpus 8 --top 2");
  CHECK(srch_table.out.find("calibrated on 3 runs: pilot-8xh100") != std::string::npos);

  const auto adv = run_cli("advise " + plan + " --format json");
  REQUIRE(adv.status == 0);
  CHECK(json::parse(adv.out)["calibration"]["stack_runs"].size() == 3);
  CHECK(run_cli("advise " + plan).out.find("calibrated on 3 runs") != std::string::npos);

  const auto rep = run_cli("report " + plan + " --output " + dir / "r");
  REQUIRE(rep.status == 0);
  CHECK(rep.out.find("calibrated on 3 runs") != std::string::npos);
  const json r = json::parse(test::slurp(dir / "r.json"));
  CHECK(r["calibration"]["applied"] == true);
  CHECK(test::slurp(dir / "r.md").find("| Measured runs | **applied** |") != std::string::npos);
}

TEST_CASE("check: a runs file and a stack calibration are told from their keys") {
  TempDir dir("check");
  REQUIRE(run_cli("calibrate --runs tests/data/runs/runs.yaml -o " + dir / "stack.yaml").status == 0);
  const auto r = run_cli("check tests/data/runs/runs.yaml tests/data/runs/runs.csv " + dir / "stack.yaml");
  CHECK(r.status == 0);
  CHECK(r.out == "tests/data/runs/runs.yaml: ok (measured-runs file)\ntests/data/runs/runs.csv: ok (measured-runs "
                 "file)\n" + dir / "stack.yaml" + ": ok (stack calibration)\n");
}

TEST_CASE("calibrate: --runs or --gpu with --measurements, and --calibration without --no-calibration") {
  const auto none = run_cli("calibrate");
  CHECK(none.status == 2);
  CHECK(none.err == "error: --gpu: give --gpu and --measurements (microbenchmarks), or --runs FILE (measured "
                    "training runs)\n");
  const auto both = run_cli("calibrate --runs tests/data/runs/runs.yaml --gpu h100_sxm");
  CHECK(both.status == 2);
  CHECK(both.err == "error: --gpu: not used with --runs: each run names its GPU, model and plan\n");
  const auto off = run_cli("predict --calibration tests/data/runs/runs.yaml --no-calibration");
  CHECK(off.status == 2);
  CHECK(off.err == "error: --calibration: cannot be combined with --no-calibration: the runs were fitted to "
                   "predictions with the profile's calibration block as it is\n");
  // A runs file is not a calibration file: located, at its first key.
  const auto wrong = run_cli("predict --dp 8 --zero 3 --calibration tests/data/runs/runs.yaml");
  CHECK(wrong.status == 2);
  CHECK(test::first_line(wrong.err) == "tests/data/runs/runs.yaml:4:1: error: schema: missing: not a stack calibration file "
                     "(ridgeline.stack_calibration/1, written by `ridgeline calibrate --runs`)\n");
}
