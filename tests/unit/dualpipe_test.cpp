// DualPipe as a pipeline schedule (parallel.pp_schedule dualpipe).
// Expected values: the DeepSeek-V3 technical report (arXiv 2412.19437),
// Sec. 3.2.1 and Table 2 (also github deepseek-ai/DualPipe README.md):
//   1F1B      bubble (PP-1)(F+B)             parameters 1x  activations PP
//   DualPipe  bubble (PP/2-1)(F&B+B-3W)      parameters 2x  activations PP+1
// and DualPipe.step's assertions (dualpipe/dualpipe.py:332-333, 3da1bbe):
// an even number of ranks, an even number of micro-batches of at least
// twice the ranks.
#include <doctest/doctest.h>

#include <string>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "test_support.hpp"

using namespace ridgeline;

namespace {

/// GPT-3 1.3B (24 layers) on PP 4 x DP 2, 8 micro-batches of one sequence
/// of 2048: 8 is even and at least 2 x 4.
spec::PlanSpec pp4(spec::PpSchedule s) {
  spec::PlanSpec p;
  p.seq_len = 2048;
  p.micro_batch = 1;
  p.parallel.pp = 4;
  p.parallel.dp = 2;
  p.global_batch = 16;
  p.parallel.pp_schedule = s;
  return p;
}

}  // namespace

TEST_SUITE("dualpipe") {
  TEST_CASE("the bubble formula of Table 2 on a hand-computed example") {
    // PP 8, F&B = 10 ms, B = 6 ms, W = 2 ms: (8/2 - 1)(10 + 6 - 3 x 2) = 3 x 10 = 30 ms.
    CHECK(engine::dualpipe_bubble_s(8, 10e-3, 6e-3, 2e-3) == doctest::Approx(30e-3));
    // PP 2: (2/2 - 1) = 0, no bubble.
    CHECK(engine::dualpipe_bubble_s(2, 10e-3, 6e-3, 2e-3) == 0);
    // PP 16, F&B = 4, B = 2.5, W = 1: 7 x (4 + 2.5 - 3) = 24.5.
    CHECK(engine::dualpipe_bubble_s(16, 4, 2.5, 1) == doctest::Approx(24.5));
  }

  TEST_CASE("the engine's DualPipe bubble: F&B the micro-batch, B its backward, W its weight-gradient GEMMs") {
    const auto m = test::model("gpt3_1.3b");
    const auto hw = test::gpu("h100_sxm");
    const auto one = engine::evaluate(m, pp4(spec::PpSchedule::k1f1b), hw);
    const auto dual = engine::evaluate(m, pp4(spec::PpSchedule::kDualPipe), hw);
    REQUIRE(one.status != engine::Status::kInvalid);
    REQUIRE(dual.status != engine::Status::kInvalid);
    const double mb = 8;  // 16 sequences / (micro-batch 1 x DP 2)
    REQUIRE(dual.step.micro_batches == mb);
    // B and W summed independently from the kernel rows (per step, all
    // instances): the compute kernels of the backward and recompute phases,
    // and the GEMMs named "<op>.wgrad" (graph/backward.cpp's weight gradients).
    double b = 0, w = 0;
    for (const auto& k : dual.kernels) {
      if (k.per_step || k.cls == spec::KernelClass::kCollective || k.cls == spec::KernelClass::kP2p) continue;
      if (k.phase == spec::Phase::kBackward || k.phase == spec::Phase::kRecompute) b += k.time_s / mb;
      if (k.phase == spec::Phase::kBackward && std::string(k.name).ends_with(".wgrad")) w += k.time_s / mb;
    }
    REQUIRE(w > 0);
    CHECK(w < b);
    const double fb = dual.step.microbatch_time_s;  // a forward and a backward, with their overlap
    // (PP/2 - 1)(F&B + B - 3W) at PP 4: 1 x (F&B + B - 3W).
    CHECK(dual.step.bubble_s == doctest::Approx(fb + b - 3 * w).epsilon(1e-9));
    // 1F1B, the same micro-batch: (PP - 1)(F + B) = 3 x F&B.
    CHECK(one.step.bubble_s == doctest::Approx(3 * one.step.microbatch_time_s).epsilon(1e-9));
    CHECK(dual.step.bubble_s < one.step.bubble_s);
    // Only the bubble differs in the step.
    CHECK(one.step.time_s - dual.step.time_s ==
          doctest::Approx(one.step.bubble_s - dual.step.bubble_s).epsilon(1e-9));
    CHECK(dual.step.bubble_fraction == doctest::Approx(dual.step.bubble_s / (mb * fb)).epsilon(1e-9));
  }

  TEST_CASE("two mirrored stages' parameters per GPU, and PP + 1 micro-batches' activations") {
    const auto m = test::model("gpt3_1.3b");
    const auto hw = test::gpu("h100_sxm");
    // Uneven stages (5, 7, 7, 5 layers) so that the middle stage is shown:
    // its mirror (stage PP-2) holds as many layers.
    auto uneven = [](spec::PpSchedule s) {
      spec::PlanSpec p = pp4(s);
      p.parallel.first_stage_layers = 5;
      p.parallel.last_stage_layers = 5;
      return p;
    };
    const auto one = engine::evaluate(m, uneven(spec::PpSchedule::k1f1b), hw).memory;
    const auto dual = engine::evaluate(m, uneven(spec::PpSchedule::kDualPipe), hw).memory;
    // Table 2: parameters 2x; the model state that goes with them (their
    // gradients, masters and optimizer state) with them.
    CHECK(dual.middle_stage.weights == doctest::Approx(2 * one.middle_stage.weights));
    CHECK(dual.middle_stage.gradients == doctest::Approx(2 * one.middle_stage.gradients));
    CHECK(dual.middle_stage.master_weights == doctest::Approx(2 * one.middle_stage.master_weights));
    CHECK(dual.middle_stage.optimizer == doctest::Approx(2 * one.middle_stage.optimizer));
    // The end GPUs hold the first and the last stage.
    CHECK(dual.first_stage.weights == doctest::Approx(one.first_stage.weights + one.last_stage.weights));
    CHECK(dual.last_stage.weights == doctest::Approx(one.first_stage.weights + one.last_stage.weights));
    // Table 2: activations of PP + 1 = 5 micro-batches; 1F1B's first stage PP = 4.
    CHECK(dual.first_stage.in_flight_microbatches == 5);
    CHECK(one.first_stage.in_flight_microbatches == 4);
    CHECK(dual.middle_stage.in_flight_microbatches == 5);
    // The five chunks over the GPU's two stages as DualPipe.step warms them
    // up (dualpipe.py lines 358-394): an end GPU PP = 4 of stage 0 (1F1B's
    // first stage) and one of stage 3 with the head's saved tensors (1F1B's
    // last stage, one micro-batch); rank 1, 3 of stage 1 and 2 of stage 2:
    // 5 chunks of 7 layers against 1F1B's 3 (p - 1) on stage 1.
    const double rw = one.recompute_working;
    CHECK(dual.first_stage.activations ==
          doctest::Approx(one.first_stage.activations + one.last_stage.activations - rw));
    CHECK(dual.last_stage.activations == doctest::Approx(dual.first_stage.activations));
    CHECK(dual.middle_stage.activations - rw == doctest::Approx((one.middle_stage.activations - rw) * 5 / 3));
  }

  TEST_CASE("refusals: odd PP, virtual stages, too few or an odd number of micro-batches") {
    const auto m = test::model("gpt3_1.3b");
    const auto hw = test::gpu("h100_sxm");
    auto refused = [&](spec::PlanSpec p) { return engine::check_plan(m, p, hw); };
    spec::PlanSpec p = pp4(spec::PpSchedule::kDualPipe);
    CHECK(refused(p).field.empty());
    p.parallel.pp = 3;  // 24 layers over 3 stages
    p.global_batch = 12;
    auto e = refused(p);
    CHECK(e.field == "parallel.pp_schedule");
    CHECK(e.message == "dualpipe needs an even PP of at least 2, got PP 3");
    p = pp4(spec::PpSchedule::kDualPipe);
    p.parallel.pp = 1;
    CHECK(refused(p).field == "parallel.pp_schedule");
    p = pp4(spec::PpSchedule::kDualPipe);
    p.parallel.virtual_stages = 2;
    e = refused(p);
    CHECK(e.field == "parallel.pp_schedule");
    CHECK(e.message == "dualpipe holds two mirrored stages per GPU, not virtual stages; got 2 virtual stages");
    p = pp4(spec::PpSchedule::kDualPipe);
    p.global_batch = 12;  // 6 micro-batches < 2 x 4
    e = refused(p);
    CHECK(e.field == "parallel.pp_schedule");
    CHECK(e.message == "dualpipe needs an even number of micro-batches of at least 2 x PP = 8, got 6");
    p.global_batch = 18;  // 9 micro-batches: odd
    CHECK(refused(p).field == "parallel.pp_schedule");
    p.global_batch = 20;  // 10: even, at least 8
    CHECK(refused(p).field.empty());
  }

  TEST_CASE("the flag: in --help, the plan line, and a located refusal") {
    const auto help = test::run_cli("predict --help");
    CHECK(help.out.find("--pp-schedule") != std::string::npos);
    const std::string base = "predict --gpu h100_sxm --model gpt3_1.3b --seq 2048 --pp 4 --dp 2 ";
    const auto ok = test::run_cli(base + "--global-batch 16 --pp-schedule dualpipe");
    REQUIRE_MESSAGE(ok.status == 0, ok.err);
    CHECK(ok.out.find("dualpipe") != std::string::npos);
    const auto bad = test::run_cli(base + "--pp-schedule dualpipe --global-batch 12");
    CHECK(bad.status == 2);
    CHECK(test::first_line(bad.err) ==
          "error: parallel.pp_schedule (--pp-schedule): dualpipe needs an even number of micro-batches of at least "
          "2 x PP = 8, got 6\n");
    const auto word = test::run_cli(base + "--global-batch 16 --pp-schedule zb1p");
    CHECK(word.status == 2);
  }
}
