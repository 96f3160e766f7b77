// The power model: the clock tensor-core work sustains at a board power,
//   f(P) = min(f_boost, f_sustained * (P / P_tdp)^(1/3)),
// from dynamic power P ~ f V^2 with V ~ f in the DVFS range (so P ~ f^3),
// referenced to the profile's TDP, where the sustained clock is observed.
// Expected values are hand calculations from the shipped profiles' figures.
#include <cmath>
#include <doctest/doctest.h>

#include <filesystem>

#include "ridgeline/cost/cost.hpp"
#include "ridgeline/spec/hardware.hpp"
#include "test_support.hpp"

using namespace ridgeline;

TEST_CASE("power model: at the TDP, and with no power given, the sustained clock") {
  const auto h100 = test::gpu("h100_sxm");  // 700 W TDP, 1755 MHz sustained, 1830 MHz boost
  CHECK(spec::clock_at_power(h100, 700.0) == doctest::Approx(1.755e9));
  CHECK(spec::clock_at_power(h100, 0.0) == 1.755e9);
  CHECK(spec::clock_at_power(h100, -1.0) == 1.755e9);
  // A profile without a TDP: the sustained clock at any power.
  auto no_tdp = h100;
  no_tdp.tdp_w = 0.0;
  CHECK(spec::clock_at_power(no_tdp, 500.0) == 1.755e9);
  // A spec built in code without a sustained clock: the boost clock stands in.
  auto no_sustained = h100;
  no_sustained.sustained_clock_hz = 0.0;
  CHECK(spec::clock_at_power(no_sustained, 700.0) == doctest::Approx(1.83e9));
}

TEST_CASE("power model: below the TDP the clock falls as the cube root of power") {
  const auto h100 = test::gpu("h100_sxm");
  // 500 W on H100 SXM5: (500/700)^(1/3) = 0.714286^(1/3) = 0.893904, and
  // 1755 MHz x 0.893904 = 1568.80 MHz.
  CHECK(spec::clock_at_power(h100, 500.0) == doctest::Approx(1568.80e6).epsilon(1e-5));
  // 350 W, half the TDP: 0.5^(1/3) = 0.793701; 1755 x 0.793701 = 1392.94 MHz.
  CHECK(spec::clock_at_power(h100, 350.0) == doctest::Approx(1392.94e6).epsilon(1e-5));
  // A100 SXM4 (400 W, 1410 MHz) at the PCIe card's 300 W: (0.75)^(1/3) =
  // 0.908560; 1410 x 0.908560 = 1281.07 MHz, the a100_pcie_80gb profile's 1.281 GHz.
  const auto a100 = test::gpu("a100_sxm_80gb");
  CHECK(spec::clock_at_power(a100, 300.0) == doctest::Approx(1281.07e6).epsilon(1e-5));
  CHECK(test::gpu("a100_pcie_80gb").sustained_clock_hz == doctest::Approx(1281.07e6).epsilon(1e-3));
}

TEST_CASE("power model: above the TDP the clock is capped at boost") {
  const auto h100 = test::gpu("h100_sxm");
  // 800 W: 1755 x (800/700)^(1/3) = 1755 x 1.045516 = 1834.88 MHz > 1830: boost.
  CHECK(spec::clock_at_power(h100, 800.0) == 1.83e9);
  CHECK(spec::clock_at_power(h100, 1e6) == 1.83e9);
  // 750 W: 1755 x (750/700)^(1/3) = 1755 x 1.023264 = 1795.83 MHz, still under boost.
  CHECK(spec::clock_at_power(h100, 750.0) == doctest::Approx(1795.83e6).epsilon(1e-5));
  // A part sustaining its boost clock at TDP (A100 SXM4, 1410 MHz) gains nothing above it.
  CHECK(spec::clock_at_power(test::gpu("a100_sxm_40gb"), 500.0) == 1.41e9);
}

TEST_CASE("power model: the clock never falls as power rises, on every shipped profile") {
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(RIDGELINE_SOURCE_DIR) /
                                                           "hardware_profiles")) {
    if (e.path().extension() != ".yaml") continue;
    const auto hw = spec::load_hardware(e.path().string());
    CAPTURE(hw.id);
    REQUIRE(hw.tdp_w > 0);
    double last = 0.0;
    for (double p = 10.0; p <= 3.0 * hw.tdp_w; p += 10.0) {
      const double f = spec::clock_at_power(hw, p);
      CHECK(f >= last);
      CHECK(f <= hw.clock_hz);
      last = f;
    }
  }
}

TEST_CASE("power model: one continuous clock curve, the same for a power-capped and a clock-capped GPU") {
  cost::ResolveOptions train;
  train.training_run = true;
  // spec::clock_at_power: f(P) = min(boost, f_sustained x (P / TDP)^(1/3)). A100 SXM
  // (1410 MHz sustained = boost, 400 W): at 399 W 1410 x (399/400)^(1/3) = 1408.83 MHz,
  // 0.083% below 400 W's 1410, with no step at the limit.
  const auto a100 = test::gpu("a100_sxm_80gb");
  cost::ResolveOptions at400 = train, at399 = train;
  at400.power_limit_w = 400;
  at399.power_limit_w = 399;
  const int bf16 = static_cast<int>(spec::Peak::kBf16);
  const double p400 = cost::resolve(a100, at400).peak_flop_per_s[bf16];
  const double p399 = cost::resolve(a100, at399).peak_flop_per_s[bf16];
  CHECK(p399 / p400 == doctest::Approx(std::cbrt(399.0 / 400.0)).epsilon(1e-9));
  // The same die on two boards: H100 SXM (700 W, 1755 MHz sustained) and GH200
  // (boost 1830 MHz held) differ by their clocks alone, 1830 / 1755 = 1.043,
  // as MAMF measures (828.6 / 794.5 = 1.043), not by a further factor.
  // (The two datasheets quote 989.4 and 990 dense TFLOP/s at 1830 MHz: that ratio stays.)
  const auto h100_hw = test::gpu("h100_sxm"), gh200_hw = test::gpu("gh200_144gb");
  const double h100 = cost::resolve(h100_hw, train).peak_flop_per_s[bf16];
  const double gh200 = cost::resolve(gh200_hw, train).peak_flop_per_s[bf16];
  CHECK((gh200 / gh200_hw.peak_flop_per_s[bf16]) / (h100 / h100_hw.peak_flop_per_s[bf16]) ==
        doctest::Approx(1830.0 / 1755.0).epsilon(1e-6));
  // The peaks a training plan is costed at: H100 bf16 989.4 TFLOP/s at 1830 MHz,
  // x 1755/1830 sustained x the training-run clock fraction (the end-to-end groups' median).
  const cost::CostParams c = cost::resolve(test::gpu("h100_sxm"), train);
  CHECK(c.peak_flop_per_s[static_cast<int>(spec::Peak::kBf16)] ==
        doctest::Approx(989.4e12 * 1755 / 1830 * cost::training_clock_fraction(train)));
  // A kernel benchmark (not a training run) is costed at the sustained clock alone.
  const cost::CostParams k = cost::resolve(test::gpu("h100_sxm"));
  CHECK(k.peak_flop_per_s[static_cast<int>(spec::Peak::kBf16)] == doctest::Approx(989.4e12 * 1755 / 1830));
}

TEST_CASE("power model: the training-run clock is the median of the end-to-end groups' votes, a left-out group's dropped") {
  // The eight votes in cost::training_clock_fraction, sorted: 0.863 (nemo_24_07),
  // 0.871, 0.878, 0.884 (flashattention2_paper), 0.886 (korthikanti2022), 0.898,
  // 0.903 (flashattention_repo), 0.955 (nemo_long_context_b200).
  cost::ResolveOptions all;
  CHECK(cost::training_clock_fraction(all) == doctest::Approx((0.884 + 0.886) / 2));  // the 4th and 5th of 8
  // Seven left: the 4th.
  cost::ResolveOptions no_nemo;
  no_nemo.without_group = "nemo_24_07";  // 0.871 0.878 0.884 [0.886] 0.898 0.903 0.955
  CHECK(cost::training_clock_fraction(no_nemo) == doctest::Approx(0.886));
  cost::ResolveOptions no_fa;
  no_fa.without_group = "flashattention_repo";  // 0.863 0.871 0.878 [0.884] 0.886 0.898 0.955
  CHECK(cost::training_clock_fraction(no_fa) == doctest::Approx(0.884));
  cost::ResolveOptions no_b200;
  no_b200.without_group = "nemo_long_context_b200";  // 0.863 0.871 0.878 [0.884] 0.886 0.898 0.903
  CHECK(cost::training_clock_fraction(no_b200) == doctest::Approx(0.884));
  // A group with no vote (a kernel group) leaves all eight.
  cost::ResolveOptions no_mamf;
  no_mamf.without_group = "mamf";
  CHECK(cost::training_clock_fraction(no_mamf) == doctest::Approx(0.885));
}
