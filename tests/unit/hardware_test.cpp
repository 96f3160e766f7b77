// Hardware profiles: the typed generation and the aliases the loader reads,
// their exact-text diagnostics, and the capabilities each shipped profile
// derives from its generation, checked against the vendors' documents:
//   - fp8 tensor cores: Ada whitepaper (4th-gen tensor cores, FP8), H100
//     whitepaper (Transformer Engine), B200 datasheet, RTX Blackwell
//     whitepaper (RTX 5090 FP8), AMD CDNA 3 whitepaper (MI300X FP8), MI355X
//     product page (OCP-FP8); the A100 whitepaper lists fp16, bf16, tf32, int8
//     only, and the ROCm Compute Profiler lists no FP8 GEMM on CDNA 2 (MI250X).
//   - fp4 tensor cores: NVIDIA Blackwell datasheet (NVFP4, B200/GB200),
//     Blackwell Ultra datasheet (B300/GB300), RTX Blackwell whitepaper (RTX
//     5090 FP4), MI355X product page (MXFP4); none before them.
//   - wgmma: PTX ISA, wgmma.mma_async requires sm_90a (Hopper); Blackwell
//     (sm_100a) issues tcgen05.mma instead.
//   - FlashAttention-3: Shah et al. 2024, Sec. 3, built on Hopper's wgmma and TMA.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "ridgeline/cost/cost.hpp"
#include "ridgeline/engine/kernel_eval.hpp"
#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/hardware_yaml.hpp"
#include "ridgeline/support/diagnostics.hpp"
#include "test_support.hpp"

using namespace ridgeline;
using test::shipped_text;
using test::edited;
namespace fs = std::filesystem;

namespace {


/// Writes `text` as a profile and returns every diagnostic its loading gives.
std::vector<std::string> load_errors(const std::string& name, const std::string& text, std::string* path = nullptr) {
  const fs::path dir = fs::temp_directory_path() / ("ridgeline_hw_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string f = (dir / (name + ".yaml")).string();
  {
    std::ofstream out(f);
    out << text;
  }
  if (path) *path = f;
  std::vector<std::string> got;
  try {
    spec::load_hardware(f);
  } catch (const support::SpecError& e) {
    for (const auto& d : e.diagnostics()) got.push_back(d.format());
  }
  fs::remove(f);
  return got;
}

}  // namespace

TEST_CASE("hardware: the loader reads generation and aliases") {
  const auto h100 = test::gpu("h100_sxm");
  CHECK(h100.generation == spec::Generation::kHopper);
  CHECK(h100.vendor == "nvidia");
  CHECK(h100.aliases ==
        std::vector<std::string>{"H100-SXM5-80GB", "H100-SXM-80GB", "H100-SXM5", "H100-SXM", "H100", "H100-80GB"});
  const auto mi300x = test::gpu("mi300x");
  CHECK(mi300x.generation == spec::Generation::kCdna3);
  CHECK(mi300x.vendor == "amd");
  CHECK(mi300x.aliases == std::vector<std::string>{"MI300X"});
  // vendor left out: the generation's.
  std::string f;
  CHECK(load_errors("no_vendor", edited(shipped_text("mi300x"), "vendor: amd\n", ""), &f).empty());
}

TEST_CASE("hardware: one word table drives generation parse, print and choices") {
  CHECK(spec::generation_choices() == "ampere, ada, hopper, blackwell, rtx_blackwell, cdna2, cdna3, cdna4, host");
  for (int i = 0; i < spec::kGenerationCount; ++i) {
    const auto g = static_cast<spec::Generation>(i);
    CAPTURE(spec::name(g));
    CHECK(spec::parse_generation(spec::name(g)) == g);
    CHECK(spec::generation_info(g).generation == g);
  }
  CHECK_FALSE(spec::parse_generation("Hopper"));  // one spelling
  CHECK_FALSE(spec::parse_generation("volta"));
  CHECK(spec::vendor_choices() == "nvidia, amd, host");
}

TEST_CASE("hardware: generation and alias diagnostics (exact text)") {
  const std::string h100 = shipped_text("h100_sxm");
  std::string f;
  auto got = load_errors("bad_generation", edited(h100, "generation: hopper", "generation: volta"), &f);
  REQUIRE(got.size() == 1);
  CHECK(got[0] == f + ":6:13: error: generation: expected one of ampere, ada, hopper, blackwell, rtx_blackwell, "
                      "cdna2, cdna3, cdna4, host, got \"volta\"");

  got = load_errors("no_generation", edited(h100, "generation: hopper\n", ""), &f);
  REQUIRE(got.size() == 1);
  // Reported at the top-level map, which starts at its first key (line 3, under two comment lines).
  CHECK(got[0] == f + ":3:1: error: generation: missing required field");

  got = load_errors("wrong_vendor", edited(h100, "generation: hopper", "generation: cdna3"), &f);
  // cdna3 is AMD's; the profile also states the fp8 peak, which CDNA 3 has, so one error.
  REQUIRE(got.size() == 1);
  CHECK(got[0] == f + ":6:13: error: generation: cdna3 is a generation of amd GPUs, but vendor is nvidia");

  got = load_errors("bad_vendor", edited(h100, "vendor: nvidia", "vendor: nvidea"), &f);
  REQUIRE(got.size() == 1);
  CHECK(got[0] == f + ":4:9: error: vendor: expected one of nvidia, amd, host, got \"nvidea\"");

  got = load_errors("fp8_on_ampere", edited(h100, "generation: hopper", "generation: ampere"), &f);
  REQUIRE(got.size() == 1);
  CHECK(got[0] == f + ":26:10: error: compute.peak.fp8: ampere GPUs have no fp8 tensor cores (fp8 arrived with "
                      "ada and hopper); remove it or correct generation");

  got = load_errors("no_fp8_on_hopper", edited(h100, "    fp8: 1978.9 TFLOP/s\n", ""), &f);
  REQUIRE(got.size() == 1);
  CHECK(got[0] == f + ":22:5: error: compute.peak.fp8: missing: hopper GPUs have fp8 tensor cores; give the dense "
                      "fp8 peak");

  got = load_errors("same_alias", edited(h100, "H100-SXM5, H100-SXM,", "H100-SXM5, h100 sxm5,"), &f);
  REQUIRE(got.size() == 1);
  CHECK(got[0] == f + ":10:53: error: aliases[3]: 'h100 sxm5' is the same name as aliases[2] ('H100-SXM5') once "
                      "normalised");

  got = load_errors("alias_not_a_name", edited(h100, "H100-SXM5, H100-SXM,", "H100-SXM5, [x],"), &f);
  REQUIRE(got.size() == 1);
  CHECK(got[0] == f + ":10:53: error: aliases[3]: expected a GPU name as sources print it, such as \"H100-SXM5-80GB\"");
}

TEST_CASE("hardware: fp4 peak and sustained clock diagnostics (exact text)") {
  const std::string h100 = shipped_text("h100_sxm");
  std::string f;
  // An fp4 peak on a generation without fp4 tensor cores, at the value.
  auto got = load_errors("fp4_on_hopper",
                         edited(h100, "    int8: 1978.9 TOP/s\n", "    int8: 1978.9 TOP/s\n    fp4: 3957.8 TFLOP/s\n"), &f);
  REQUIRE(got.size() == 1);
  CHECK(got[0] == f + ":28:10: error: compute.peak.fp4: hopper GPUs have no fp4 tensor cores (fp4 arrived with "
                      "blackwell and cdna4); remove it or correct generation");
  // A generation with fp4 tensor cores and no fp4 peak, at the peak map (its first key, line 21 of b200.yaml).
  got = load_errors("no_fp4_on_blackwell", edited(shipped_text("b200"), "    fp4: 9000 TFLOP/s\n", ""), &f);
  REQUIRE(got.size() == 1);
  CHECK(got[0] == f + ":21:5: error: compute.peak.fp4: missing: blackwell GPUs have fp4 tensor cores; give the "
                      "dense fp4 peak");
  // A sustained clock above boost (1.9 GHz > 1.83 GHz), at the value.
  got = load_errors("sustained_above_boost",
                    edited(h100, "sustained_clock: 1.755 GHz", "sustained_clock: 1.9 GHz"), &f);
  REQUIRE(got.size() == 1);
  CHECK(got[0] == f + ":18:20: error: compute.sustained_clock: expected at most the boost clock (1830 MHz), got "
                      "1900 MHz");
  got = load_errors("sustained_zero", edited(h100, "sustained_clock: 1.755 GHz", "sustained_clock: 0 GHz"), &f);
  REQUIRE(got.size() == 1);
  CHECK(got[0] == f + ":18:20: error: compute.sustained_clock: expected a frequency greater than zero, got \"0 GHz\"");
  got = load_errors("sustained_without_boost", edited(h100, "  boost_clock: 1.83 GHz\n", ""), &f);
  REQUIRE(got.size() == 1);
  CHECK(got[0] == f + ":17:20: error: compute.sustained_clock: needs compute.boost_clock, the clock it may not "
                      "exceed");
  // Equal to boost is allowed.
  CHECK(load_errors("sustained_at_boost", edited(h100, "sustained_clock: 1.755 GHz", "sustained_clock: 1.83 GHz"))
            .empty());
}

TEST_CASE("hardware: the sustained clock is read, defaults to boost and is written back") {
  // H100 SXM5: 1830 MHz boost, 1755 MHz sustained (1830 x 794.5/828.6 = 1754.7, MAMF).
  const auto h100 = test::gpu("h100_sxm");
  CHECK(h100.clock_hz == 1.83e9);
  CHECK(h100.sustained_clock_hz == 1.755e9);
  // Left out: the boost clock.
  const fs::path f = fs::temp_directory_path() / ("ridgeline_hw_no_sustained_" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(f) << edited(shipped_text("h100_sxm"), "  sustained_clock: 1.755 GHz\n", "");
  CHECK(spec::load_hardware(f.string()).sustained_clock_hz == 1.83e9);
  fs::remove(f);
  // to_yaml writes it in the profile's own spelling, after the boost clock.
  CHECK(spec::to_yaml(h100).find("\n  boost_clock: 1.83 GHz\n  sustained_clock: 1.755 GHz\n") != std::string::npos);
  // Every shipped profile: 0 < sustained <= boost.
  for (const auto& e : fs::directory_iterator(fs::path(RIDGELINE_SOURCE_DIR) / "hardware_profiles")) {
    if (e.path().extension() != ".yaml") continue;
    const auto hw = spec::load_hardware(e.path().string());
    CAPTURE(hw.id);
    CHECK(hw.sustained_clock_hz > 0);
    CHECK(hw.sustained_clock_hz <= hw.clock_hz);
    CHECK(hw.sources.count("compute.sustained_clock") == 1);
  }
}

TEST_CASE("hardware: the exponentials per SM per clock are read, checked and written back") {
  // 16 unless stated (CUDA C Programming Guide: MUFU.EX2 on cc 5.x-10.x);
  // Blackwell Ultra states 32 (NVIDIA, "Making Softmax More Efficient with
  // NVIDIA Blackwell Ultra": twice Blackwell's SFU throughput).
  CHECK(test::gpu("b200").exp_per_sm_clock == 16.0);
  const auto gb300 = test::gpu("gb300");
  CHECK(gb300.exp_per_sm_clock == 32.0);
  CHECK(gb300.sources.count("compute.exp_per_sm_clock") == 1);
  CHECK(spec::to_yaml(gb300).find("\n  exp_per_sm_clock: 32\n") != std::string::npos);
  CHECK(spec::to_yaml(test::gpu("h100_sxm")).find("exp_per_sm_clock") == std::string::npos);
  std::string f;
  const std::string gb300_text = shipped_text("gb300");
  auto got = load_errors("exp_zero", edited(gb300_text, "exp_per_sm_clock: 32", "exp_per_sm_clock: 0"), &f);
  REQUIRE(got.size() == 1);
  CHECK(got[0] == f + ":20:21: error: compute.exp_per_sm_clock: expected a number from 1 to 1024, got 0");
  got = load_errors("exp_word", edited(gb300_text, "exp_per_sm_clock: 32", "exp_per_sm_clock: many"), &f);
  REQUIRE(got.size() == 1);
  CHECK(got[0] == f + ":20:21: error: compute.exp_per_sm_clock: expected a number, got \"many\"");
}

TEST_CASE("hardware: GPU names normalise as sources print them") {
  CHECK(spec::normalize_gpu_name("NVIDIA A100-SXM4-80GB (400W), NVLink") == "A100-SXM4-80GB");
  CHECK(spec::normalize_gpu_name("h100 sxm") == "H100-SXM");
  CHECK(spec::normalize_gpu_name("AMD Instinct MI300X") == "MI300X");
  CHECK(spec::normalize_gpu_name("NVIDIA GeForce RTX 4090") == "RTX-4090");
  CHECK(spec::normalize_gpu_name(" rtx_4090 ") == "RTX-4090");
  CHECK(spec::normalize_gpu_name("(nothing)") == "");
}

TEST_CASE("hardware: each shipped profile's capabilities match its spec sheet") {
  struct Expect {
    const char* id;
    spec::Generation generation;
    bool amd, fp8, fp4, wgmma, async_mma, fa3;
  };
  using G = spec::Generation;
  const Expect expect[] = {
      //  id               generation        amd    fp8    fp4    wgmma  async  fa3
      {"a10", G::kAmpere, false, false, false, false, false, false},
      {"a10g", G::kAmpere, false, false, false, false, false, false},
      {"a100_pcie_40gb", G::kAmpere, false, false, false, false, false, false},
      {"a100_pcie_80gb", G::kAmpere, false, false, false, false, false, false},
      {"a100_sxm_40gb", G::kAmpere, false, false, false, false, false, false},
      {"a100_sxm_80gb", G::kAmpere, false, false, false, false, false, false},
      {"b200", G::kBlackwell, false, true, true, false, true, false},
      {"b300", G::kBlackwell, false, true, true, false, true, false},
      {"gb200", G::kBlackwell, false, true, true, false, true, false},
      {"gb300", G::kBlackwell, false, true, true, false, true, false},
      {"gh200_144gb", G::kHopper, false, true, false, true, true, true},
      {"gh200_96gb", G::kHopper, false, true, false, true, true, true},
      {"h100_nvl", G::kHopper, false, true, false, true, true, true},
      {"h100_pcie", G::kHopper, false, true, false, true, true, true},
      {"h100_sxm", G::kHopper, false, true, false, true, true, true},
      {"h200", G::kHopper, false, true, false, true, true, true},
      {"h800_pcie", G::kHopper, false, true, false, true, true, true},
      {"h800_sxm", G::kHopper, false, true, false, true, true, true},
      {"l4", G::kAda, false, true, false, false, false, false},
      {"l40", G::kAda, false, true, false, false, false, false},
      {"l40s", G::kAda, false, true, false, false, false, false},
      {"mi250x", G::kCdna2, true, false, false, false, false, false},
      {"mi300x", G::kCdna3, true, true, false, false, false, false},
      {"mi325x", G::kCdna3, true, true, false, false, false, false},
      {"mi355x", G::kCdna4, true, true, true, false, false, false},
      {"rtx_4090", G::kAda, false, true, false, false, false, false},
      {"rtx_5090", G::kRtxBlackwell, false, true, true, false, false, false},
      {"rtx_6000_ada", G::kAda, false, true, false, false, false, false},
      {"rtx_a6000", G::kAmpere, false, false, false, false, false, false},
  };
  size_t shipped = 0;
  for (const auto& e : fs::directory_iterator(fs::path(RIDGELINE_SOURCE_DIR) / "hardware_profiles"))
    if (e.path().extension() == ".yaml") ++shipped;
  CHECK(shipped == std::size(expect));
  for (const auto& x : expect) {
    CAPTURE(x.id);
    const auto hw = test::gpu(x.id);
    CHECK(hw.generation == x.generation);
    CHECK(hw.is_amd() == x.amd);
    CHECK(hw.has_fp8() == x.fp8);
    CHECK(hw.supports(spec::Peak::kFp8) == x.fp8);  // the loader keeps the two in step
    CHECK(hw.has_fp4() == x.fp4);
    CHECK(hw.supports(spec::Peak::kFp4) == x.fp4);
    CHECK(hw.has_wgmma() == x.wgmma);
    CHECK(hw.has_async_mma() == x.async_mma);
    CHECK(hw.has_fa3() == x.fa3);
  }
}

TEST_CASE("hardware: the cost model reads capabilities, not names") {
  const int fa2 = static_cast<int>(spec::AttentionKind::kFlash2), fa3 = static_cast<int>(spec::AttentionKind::kFlash3);
  // Hopper: FA2 issues mma.sync, 0.65 of the wgmma peak (Luo et al. 2024:
  // 494.4 vs 729.3 TFLOP/s on H800), so its main loop's 0.675 becomes
  // 0.675 x 0.65 = 0.43875; FA3 (wgmma) at 0.98 (cost.cpp's fit on the FA3 paper's rows).
  const auto h100 = cost::resolve(test::gpu("h100_sxm"), false);
  CHECK(h100.attention_frac[fa2] == doctest::Approx(0.675 * 0.65));
  CHECK(h100.attention_frac[fa3] == doctest::Approx(0.98));
  // Blackwell: asynchronous MMA (tcgen05) doubles the per-SM rate, which
  // mma.sync does not get: FA2 keeps Hopper's 0.65 x 4096 FLOP per SM-clock,
  // of B200's 2250e12 / (148 SMs x 1.965 GHz) = 7737.4 at its quoted peak:
  // 0.675 x 0.65 x 4096 / 7737.4 = 0.2323 (its A100 benchmark's FA2 at 32K
  // tokens then runs 3% fast of the 439 TFLOP/s measured: published.yaml
  // cudnnfe_b200_flash2_causal_s32768_fwd).
  const auto b200 = cost::resolve(test::gpu("b200"), false);
  CHECK(b200.attention_frac[fa2] == doctest::Approx(0.675 * 0.65 * 4096.0 / (2250e12 / (148 * 1.965e9))));
  CHECK(b200.attention_frac[fa2] == doctest::Approx(0.2323).epsilon(0.001));
  // Ampere: mma.sync is the peak path and FA2 runs the kernels written for
  // it: its main loop at 0.90 and 1.5 exponentials a score element, fitted
  // on the flash-attention README's A100 bars; with that group left out,
  // the FA2 paper's 73% forward peak at d = 128 with one exponential:
  // 4 x 128 / eta + 128 = 4 x 128 / 0.73 -> eta = 512 / (701.4 - 128) = 0.893, taken as 0.89.
  const auto a100 = cost::resolve(test::gpu("a100_sxm_80gb"), false);
  CHECK(a100.attention_frac[fa2] == doctest::Approx(0.90));
  CHECK(a100.attention_softmax[fa2] == doctest::Approx(1.5));
  cost::ResolveOptions out;
  out.use_calibration = false;
  out.without_group = "flashattention2_benchmark";
  const auto a100_out = cost::resolve(test::gpu("a100_sxm_80gb"), out);
  CHECK(a100_out.attention_frac[fa2] == doctest::Approx(512.0 / (512.0 / 0.73 - 128.0)).epsilon(0.005));
  CHECK(a100_out.attention_softmax[fa2] == doctest::Approx(1.0));
  // The Hopper fit does not move with it.
  CHECK(cost::resolve(test::gpu("h100_sxm"), out).attention_frac[fa2] == doctest::Approx(0.675 * 0.65));
  // AMD CDNA 3: the MI300X / MI325X MAMF fit (668.4 and 784.9 TFLOP/s -> 0.54 and 0.64, median 0.59).
  const auto mi = cost::resolve(test::gpu("mi300x"), false);
  CHECK(mi.gemm_frac[static_cast<int>(spec::Peak::kBf16)] == doctest::Approx(0.59));
  // A renamed profile costs the same: the name and architecture text are for readers.
  auto renamed = test::gpu("h100_sxm");
  renamed.name = "AMD Blackwell";
  renamed.architecture = "Ampere";
  CHECK(cost::resolve(renamed, false).attention_frac == h100.attention_frac);
  CHECK(cost::resolve(renamed, false).gemm_frac == h100.gemm_frac);
}

TEST_CASE("engine: evaluate_kernel is the engine's cost of one kernel") {
  const auto hw = test::gpu("h100_sxm");
  graph::Kernel k;
  k.cls = spec::KernelClass::kGemm;
  k.dtype = spec::Dtype::kBf16;
  k.gemm = {8192, 8192, 8192, 1};
  k.flops = 2.0 * 8192 * 8192 * 8192;
  k.read_bytes = 2.0 * 2 * 8192 * 8192;
  k.write_bytes = 2.0 * 8192 * 8192;
  for (bool cal : {true, false})
    for (bool graphs : {true, false}) {
      const auto a = engine::evaluate_kernel(k, hw, {cal, graphs});
      const auto b = cost::cost_kernel(k, cost::resolve(hw, cal), graphs);
      CHECK(a.time_s == b.time_s);
      CHECK(a.bound == b.bound);
    }
  // An empty kernel costs its launch: the profile's 2.4 us.
  graph::Kernel empty;
  empty.cls = spec::KernelClass::kElementwise;
  empty.launches = 1;
  CHECK(engine::evaluate_kernel(empty, hw, {false, false}).time_s == doctest::Approx(2.4e-6));
}
