// Goodput and energy in the training totals (engine::expected_wall,
// engine::training_totals; docs/accuracy.md "Goodput and energy").
//
// The expected wall clock of ideal time T with checkpoints of write time
// delta every tau of compute, failures at rate 1/M over the wall time, each
// losing half a segment plus a restart R:
//   W = T (1 + delta / tau) / (1 - ((tau + delta) / 2 + R) / M),  goodput = T / W,
// and Young/Daly's interval tau = sqrt(2 delta M). Power per GPU:
//   P = P_idle + (TDP - P_idle) s, s = compute-bound share of the step.
// Every expected value below is a hand calculation shown beside it.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/support/diagnostics.hpp"
#include "test_support.hpp"

using namespace ridgeline;
using nlohmann::json;

namespace {

/// Llama 3's H100 layout (Dubey et al. 2024, Table 4): TP8 PP16 DP128 on
/// 16,384 GPUs, sequence 8192, global batch 16M tokens = 2048 sequences,
/// the end stages one layer short (Sec. 3.3.2).
spec::PlanSpec llama3_405b_plan() {
  spec::PlanSpec p;
  p.micro_batch = 1;
  p.seq_len = 8192;
  p.global_batch = 2048;
  p.parallel.tp = 8;
  p.parallel.pp = 16;
  p.parallel.dp = 128;
  // 126 layers over 16 stages: 7 on each end stage, 8 on the 14 between (7 + 112 + 7).
  p.parallel.first_stage_layers = 7;
  p.parallel.last_stage_layers = 7;
  p.parallel.sp = true;
  p.parallel.zero = 1;
  p.recompute.kind = spec::RecomputeKind::kSelective;
  return p;
}

/// Every diagnostic loading `text` as a profile gives.
std::vector<std::string> profile_errors(const std::string& text) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ridgeline_goodput_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string f = (dir / "x.yaml").string();
  {
    std::ofstream out(f);
    out << text;
  }
  std::vector<std::string> got;
  try {
    spec::load_hardware(f);
  } catch (const support::SpecError& e) {
    for (const auto& d : e.diagnostics()) {
      const std::string line = d.format();  // from the file name on
      got.push_back(line.substr(line.rfind('/') + 1));
    }
  }
  fs::remove_all(dir);
  return got;
}

/// README's 8 x H100 case (Llama-3-8B, DP8 ZeRO-2, global batch 64 of 8192).
const std::string kReadme = "predict --model llama3_8b --gpu h100_sxm --dp 8 --global-batch 64 --seq 8192 "
                            "--zero 3 --recompute none ";

}  // namespace

TEST_SUITE_BEGIN("goodput");

TEST_CASE("goodput: Young/Daly interval") {
  // delta = 60 s, M = 10 h = 36000 s: tau = sqrt(2 x 60 x 36000) = sqrt(4.32e6) = 2078.46 s.
  const auto g = engine::expected_wall(360000, 60, 36000, 540);
  CHECK(g.interval_s == doctest::Approx(2078.46).epsilon(1e-5));
  // delta = 2 s, M = 1 h: sqrt(2 x 2 x 3600) = sqrt(14400) = 120 s exactly.
  CHECK(engine::expected_wall(1000, 2, 3600, 0).interval_s == doctest::Approx(120.0));
  // A given interval wins over the optimum.
  CHECK(engine::expected_wall(1000, 2, 3600, 0, 600).interval_s == 600.0);
}

TEST_CASE("goodput: a hand-computed case") {
  // T = 100 h = 360000 s, delta = 60 s, tau = 30 min = 1800 s, M = 10 h = 36000 s, R = 9 min = 540 s:
  //   1 + delta / tau = 1 + 60 / 1800 = 1.033333
  //   ((tau + delta) / 2 + R) / M = (930 + 540) / 36000 = 0.0408333
  //   W = 360000 x 1.033333 / 0.9591667 = 387836.66 s; goodput = 360000 / 387836.66 = 0.9282258
  //   expected failures = W / M = 10.7732
  const auto g = engine::expected_wall(360000, 60, 36000, 540, 1800);
  REQUIRE(g.completes);
  CHECK(g.wall_s == doctest::Approx(387836.66).epsilon(1e-6));
  CHECK(g.goodput == doctest::Approx(0.9282258).epsilon(1e-6));
  CHECK(g.expected_failures == doctest::Approx(10.77324).epsilon(1e-5));
  // No failures (M <= 0) and no interval given: no checkpoints, W = T.
  const auto none = engine::expected_wall(360000, 60, 0, 540);
  CHECK(none.completes);
  CHECK(none.wall_s == 360000.0);
  CHECK(none.goodput == 1.0);
  CHECK(none.interval_s == 0.0);
  CHECK(none.expected_failures == 0.0);
  // No failures but checkpoints every 1800 s of 60 s each: W = T x (1 + 60/1800) = 372000 s.
  CHECK(engine::expected_wall(360000, 60, 0, 540, 1800).wall_s == doctest::Approx(372000.0));
}

TEST_CASE("goodput: a run that never completes is finite and flagged") {
  // M = 600 s, R = 600 s: (tau + delta) / 2 + R > M, the denominator is negative.
  const auto g = engine::expected_wall(1e6, 10, 600, 600);
  CHECK_FALSE(g.completes);
  CHECK(g.wall_s == 0.0);
  CHECK(g.goodput == 0.0);
  CHECK(std::isfinite(g.interval_s));
  // Exactly zero denominator: tau = 0 (delta = 0), R = M.
  CHECK_FALSE(engine::expected_wall(1e6, 0, 600, 600).completes);

  // Through the CLI: Llama-3-8B on 8 GPUs at 0.5 failures per GPU-hour: M = 3600 / (0.5 x 8) = 900 s,
  // less than the 10-minute restart plus half a segment.
  const auto r = test::run_cli(kReadme + "--failure-rate 0.5");
  CHECK(r.status == 0);
  CHECK(r.out.find("never completes") != std::string::npos);
  CHECK(r.out.find("inf") == std::string::npos);
  CHECK(r.out.find("nan") == std::string::npos);
  const auto j = test::run_cli(kReadme + "--failure-rate 0.5 --format json");
  REQUIRE(j.status == 0);
  const json t = json::parse(j.out)["training"];
  CHECK(t["completes"] == false);
  CHECK(t["wall_clock_days"].is_null());
  CHECK(t["gpu_hours"].is_null());
  CHECK(t["cost_usd"].is_null());
  CHECK(t["energy_kwh"].is_null());
  CHECK(t["goodput"] == 0.0);
  CHECK(t["mtbf_s"].get<double>() == doctest::Approx(900.0));
}

TEST_CASE("goodput: Llama 3 405B on 16,384 H100s keeps over 90% effective training time") {
  const auto m = test::model("llama3_405b");
  const auto hw = test::gpu("h100_sxm");
  const auto pred = engine::evaluate(m, llama3_405b_plan(), hw);
  REQUIRE(pred.status != engine::Status::kInvalid);
  const auto& t = pred.totals;
  // Llama 3 Sec. 3.3.4: 419 / (54 x 24 x 16384) = 1.97328e-5 per GPU-hour; job MTBF
  // 3600 / (1.97328e-5 x 16384) = 11135.08 s (54 x 24 / 419 = 3.093 h).
  CHECK(t.failure_rate_per_gpu_hour == doctest::Approx(1.97328e-5).epsilon(1e-5));
  CHECK(t.mtbf_s == doctest::Approx(11135.08).epsilon(1e-5));
  // Checkpoint: bf16 weights 2 + fp32 masters 4 + Adam's two fp32 moments 8 = 14 bytes per parameter,
  // once over the job; at 2 TB/s (Llama 3 Sec. 3.3.1: 122 MB/s x 16,384 GPUs).
  CHECK(t.checkpoint_bytes == doctest::Approx(14.0 * pred.params.total));
  CHECK(t.checkpoint_bandwidth_bytes_per_s == doctest::Approx(2e12));
  CHECK(t.checkpoint_write_s == doctest::Approx(14.0 * pred.params.total / 2e12));
  // ~406B x 14 = 5.7 TB: 2.8 s; tau = sqrt(2 x 2.8 x 11135) = 250 s; R = 600 + 2.8 s.
  CHECK(t.checkpoint_interval_s == doctest::Approx(std::sqrt(2 * t.checkpoint_write_s * t.mtbf_s)));
  CHECK(t.restart_s == doctest::Approx(600.0 + t.checkpoint_write_s));
  // W / T = (1 + 2.8/250) / (1 - (126.4 + 602.8) / 11135) = 1.0112 / 0.9345 = 1.082: goodput ~0.924.
  CHECK(t.completes);
  CHECK(t.goodput > 0.90);
  CHECK(t.goodput < 1.0);
  CHECK(t.goodput == doctest::Approx(0.924).epsilon(0.005));
  CHECK(t.wall_s == doctest::Approx(t.ideal_wall_s / t.goodput));
  // GPU-hours from the expected wall clock: lost work burns GPU-hours too.
  CHECK(t.gpu_hours == doctest::Approx(t.wall_s * 16384 / 3600.0));
}

TEST_CASE("goodput: a LoRA checkpoints its adapters and their state, not the frozen base") {
  const auto m = test::model("llama3_8b");
  auto p = test::plan(1, 2048);
  p.finetune.mode = spec::FinetuneMode::kLora;
  const auto pred = engine::evaluate(m, p, test::gpu("h100_sxm"));
  // bf16 adapters 2 + fp32 masters 4 + AdamW 8 = 14 bytes per trainable parameter.
  CHECK(pred.totals.checkpoint_bytes == doctest::Approx(14.0 * pred.trainable_params));
  CHECK(pred.totals.checkpoint_bytes < 0.01 * 2.0 * pred.params.total);
}

TEST_CASE("goodput: the profile's failure rate, then the plan's") {
  const auto m = test::model("llama3_8b");
  auto hw = test::gpu("h100_sxm");
  auto p = test::plan(1, 2048);
  // One GPU at 1e-3 per GPU-hour: M = 3600 / 1e-3 = 3.6e6 s.
  hw.failure_rate_per_gpu_hour = 1e-3;
  CHECK(engine::evaluate(m, p, hw).totals.mtbf_s == doctest::Approx(3.6e6));
  // The plan's wins: 1e-2 -> 3.6e5 s; 0 = no failures (no MTBF, no checkpoints, goodput 1).
  p.failure_rate_per_gpu_hour = 1e-2;
  CHECK(engine::evaluate(m, p, hw).totals.mtbf_s == doctest::Approx(3.6e5));
  p.failure_rate_per_gpu_hour = 0;
  const auto t = engine::evaluate(m, p, hw).totals;
  CHECK(t.mtbf_s == 0.0);
  CHECK(t.checkpoint_interval_s == 0.0);
  CHECK(t.goodput == 1.0);
  CHECK(t.wall_s == t.ideal_wall_s);
}

TEST_CASE("energy: power rises with the compute-bound share of the step") {
  const auto hw = test::gpu("h100_sxm");  // TDP 700 W; idle 11.5% = 80.5 W
  // A small memory- and launch-bound step against a GEMM-heavy one.
  const auto small = engine::evaluate(test::model("gpt3_125m"), test::plan(1, 128), hw).totals;
  const auto big = engine::evaluate(test::model("gpt3_1.3b"), test::plan(8, 2048), hw).totals;
  CHECK(small.compute_bound_share < big.compute_bound_share);
  CHECK(small.power_w < big.power_w);
  // P = 80.5 + (700 - 80.5) s = 80.5 + 619.5 s.
  CHECK(small.power_w == doctest::Approx(80.5 + 619.5 * small.compute_bound_share));
  CHECK(big.power_w == doctest::Approx(80.5 + 619.5 * big.compute_bound_share));
  CHECK(big.power_w <= 700.0);
  CHECK(small.power_w >= 80.5);
  // Energy = 1 GPU x P x W / 3.6e6 kWh.
  CHECK(big.energy_kwh == doctest::Approx(big.power_w * big.wall_s / 3.6e6));
  // The same model, micro-batch 1 against 8: the larger GEMMs are more compute-bound.
  const auto mb1 = engine::evaluate(test::model("gpt3_1.3b"), test::plan(1, 2048), hw).totals;
  CHECK(mb1.compute_bound_share <= big.compute_bound_share);
  CHECK(mb1.power_w <= big.power_w);
}

TEST_CASE("energy: the plan's power_utilization overrides the model; PUE and grid carbon") {
  const auto m = test::model("gpt3_1.3b");
  const auto hw = test::gpu("h100_sxm");
  auto p = test::plan(8, 2048);
  p.power_utilization = 0.8;  // 0.8 x 700 W = 560 W, as before the power model
  const auto t = engine::evaluate(m, p, hw).totals;
  CHECK(t.power_given);
  CHECK(t.power_w == doctest::Approx(560.0));
  CHECK(t.energy_kwh == doctest::Approx(560.0 * t.wall_s / 3.6e6));
  CHECK(t.carbon_kg < 0);  // not given
  p.pue = 1.5;
  p.grid_carbon_g_per_kwh = 400;
  const auto u = engine::evaluate(m, p, hw).totals;
  CHECK(u.energy_kwh == doctest::Approx(1.5 * t.energy_kwh));
  // kg = kWh x 400 g/kWh / 1000.
  CHECK(u.carbon_kg == doctest::Approx(u.energy_kwh * 0.4));
  // A power limit caps the top of the model's range: 350 W, idle 80.5 W.
  auto q = test::plan(8, 2048);
  q.power_limit_w = 350;
  const auto c = engine::evaluate(m, q, hw).totals;
  CHECK(c.power_w == doctest::Approx(80.5 + (350 - 80.5) * c.compute_bound_share));
  // The profile's power.idle replaces the 11.5% default: 90 W, P = 90 + 610 s.
  auto idle90 = hw;
  idle90.idle_w = 90;
  const auto d = engine::evaluate(m, test::plan(8, 2048), idle90).totals;
  CHECK(d.idle_w == 90.0);
  CHECK(d.power_w == doctest::Approx(90.0 + 610.0 * d.compute_bound_share));
}

TEST_CASE("goodput: predict's table, JSON and CSV") {
  const auto r = test::run_cli(kReadme + "--grid-carbon 400 --format json");
  REQUIRE(r.status == 0);
  const json t = json::parse(r.out)["training"];
  CHECK(t["completes"] == true);
  CHECK(t["goodput"].get<double>() > 0.9);
  CHECK(t["goodput"].get<double>() < 1.0);
  CHECK(t["wall_clock_days"].get<double>() ==
        doctest::Approx(t["ideal_wall_clock_days"].get<double>() / t["goodput"].get<double>()));
  // 8 GPUs x 122.07 MB/s = 976.6 MB/s.
  CHECK(t["checkpoint_bandwidth_bytes_per_s"].get<double>() == doctest::Approx(8 * 2e12 / 16384));
  CHECK(t["power_source"] == "model");
  CHECK(t["carbon_kg"].get<double>() == doctest::Approx(t["energy_kwh"].get<double>() * 0.4));
  const auto table = test::run_cli(kReadme);
  REQUIRE(table.status == 0);
  CHECK(table.out.find("(ideal ") != std::string::npos);
  CHECK(table.out.find("goodput ") != std::string::npos);
  CHECK(table.out.find("expected interruptions") != std::string::npos);
  CHECK(table.out.find("energy: ") != std::string::npos);
  // Flags with units: a checkpoint interval and bandwidth as given.
  const auto given = test::run_cli(kReadme +
                                   "--checkpoint-interval '2 h' --checkpoint-bandwidth '10 GB/s' "
                                   "--restart-time '5 min' --format json");
  REQUIRE(given.status == 0);
  const json g = json::parse(given.out)["training"];
  CHECK(g["checkpoint_interval_s"].get<double>() == 7200.0);
  CHECK(g["checkpoint_bandwidth_bytes_per_s"].get<double>() == 1e10);
  CHECK(g["restart_s"].get<double>() == doctest::Approx(300.0 + g["checkpoint_write_s"].get<double>()));
  CHECK(g["checkpoint_write_s"].get<double>() ==
        doctest::Approx(g["checkpoint_bytes"].get<double>() / 1e10));
}

TEST_CASE("goodput: search --deadline ranks by the goodput-adjusted days") {
  // The best layout of the README case is DP4 CP2 ZeRO-2, micro-batch 1: its days are predict's expected wall clock.
  const auto s = test::run_cli("search --gpu h100_sxm --model llama3_8b --deadline 30d --global-batch 64 --seq 8192 "
                               "--top 1 --format json");
  REQUIRE(s.status == 0);
  const json top = json::parse(s.out)["top"][0];
  CHECK(top["dp"] == 4);
  CHECK(top["cp"] == 2);
  CHECK(top["zero"] == 2);
  const auto p = test::run_cli("predict --model llama3_8b --gpu h100_sxm --dp 4 --cp 2 --global-batch 64 --seq 8192 "
                               "--zero 2 --recompute none --format json");
  REQUIRE(p.status == 0);
  const json t = json::parse(p.out)["training"];
  CHECK(top["wall_clock_days"].get<double>() == doctest::Approx(t["wall_clock_days"].get<double>()));
  CHECK(top["wall_clock_days"].get<double>() > t["ideal_wall_clock_days"].get<double>());
  // A deadline between the ideal and the expected days is missed: 8 GPUs do not make it, 16 do.
  const double between = (t["wall_clock_days"].get<double>() + t["ideal_wall_clock_days"].get<double>()) / 2;
  const auto tight = test::run_cli(fmt::format("search --gpu h100_sxm --model llama3_8b --deadline {:.2f}h "
                                               "--global-batch 64 --seq 8192 --top 1",
                                               between * 24));
  CAPTURE(tight.out);
  CHECK(tight.out.find("deadline") == 0);
  CHECK(tight.out.find("fewest is 8 GPUs") == std::string::npos);
}

TEST_CASE("goodput: bad values of the new flags (exact text, exit 2)") {
  const std::string& base = kReadme;
  const auto check = [&](const std::string& flags, const std::string& message) {
    const auto r = test::run_cli(base + flags);
    CAPTURE(flags);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.err == message + "\n");
  };
  check("--failure-rate -1", "error: --failure-rate: expected a number from 0 to 1, got -1");
  check("--failure-rate often", "error: --failure-rate: expected a number, got \"often\"");
  check("--checkpoint-bandwidth 100",
        "error: --checkpoint-bandwidth: expected a bandwidth such as \"3.35 TB/s\", got \"100\"");
  check("--checkpoint-interval 3600", "error: --checkpoint-interval: expected a duration such as \"5 us\", got \"3600\"");
  check("--restart-time '0 s'", "error: --restart-time: expected a duration greater than zero, got \"0 s\"");
  check("--pue 0.5", "error: --pue: expected a number from 1 to 5, got 0.5");
  check("--grid-carbon -3", "error: --grid-carbon: expected a number from 0 to 5000, got -3");
}

TEST_CASE("goodput: profile fields power.idle and reliability.failure_rate_per_gpu_hour") {
  const std::string text = test::shipped_text("h100_sxm");
  const std::string with = test::edited(text, "  tdp: 700 W\n",
                                        "  tdp: 700 W\n  idle: 90 W\nreliability:\n  failure_rate_per_gpu_hour: 2e-5\n");
  CHECK(profile_errors(with).empty());
  const auto bad_idle = profile_errors(test::edited(text, "  tdp: 700 W\n", "  tdp: 700 W\n  idle: 700 W\n"));
  REQUIRE(bad_idle.size() == 1);
  CHECK(bad_idle[0] == "x.yaml:42:9: error: power.idle: expected an idle power below the TDP (700 W), got 700 W");
  const auto bad_rate = profile_errors(
      test::edited(text, "  tdp: 700 W\n", "  tdp: 700 W\nreliability:\n  failure_rate_per_gpu_hour: 2\n"));
  REQUIRE(bad_rate.size() == 1);
  CHECK(bad_rate[0] ==
        "x.yaml:43:30: error: reliability.failure_rate_per_gpu_hour: expected a number from 0 to 1, got 2");
}

TEST_SUITE_END();
