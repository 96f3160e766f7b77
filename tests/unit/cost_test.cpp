#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>

#include "ridgeline/cost/cost.hpp"
#include "ridgeline/graph/kernels.hpp"
#include "ridgeline/graph/memory_kernels.hpp"
#include "ridgeline/techniques/passes.hpp"
#include "test_support.hpp"

using namespace ridgeline;

namespace {

graph::Kernel gemm(double m, double n, double k, spec::Dtype dt) {
  graph::Kernel g;
  g.cls = spec::KernelClass::kGemm;
  g.dtype = dt;
  g.gemm = {m, n, k, 1};
  g.flops = 2 * m * n * k;
  const double e = spec::bytes_per_element(dt);
  g.read_bytes = (m * k + k * n) * e;
  g.write_bytes = m * n * e;
  return g;
}

graph::Kernel layernorm(double tokens, double h) {
  graph::Kernel k;
  k.cls = spec::KernelClass::kNorm;
  k.read_bytes = tokens * h * 2;
  k.write_bytes = tokens * h * 2;
  k.flops = 8 * tokens * h;
  return k;
}

}  // namespace

TEST_CASE("cost: an 8192^3 bf16 GEMM is compute-bound and a LayerNorm memory-bound on H100") {
  const auto hw = test::gpu("h100_sxm");
  const auto c = cost::resolve(hw);
  const auto g = cost::cost_kernel(gemm(8192, 8192, 8192, spec::Dtype::kBf16), c, false);
  CHECK(g.bound == cost::Bound::kCompute);
  // Intensity 2 n^3 / (3 n^2 * 2 bytes) = n / 3 = 2731 FLOP/B, far above the
  // ridge point: 989.4 TFLOP/s at the 1755 MHz sustained clock (of 1830 boost)
  // over 3.35 TB/s = 283 FLOP/B (spec sheet, profile).
  CHECK(gemm(8192, 8192, 8192, spec::Dtype::kBf16).intensity() == doctest::Approx(8192.0 / 3));
  CHECK(cost::ridge_point(c, spec::Peak::kBf16) == doctest::Approx(989.4 * 1755.0 / 1830.0 / 3.35));
  // MAMF's measured best on H100 SXM (published.yaml mamf_bf16_H100-SXM):
  // 794.5 TFLOP/s. A large square GEMM must land within 3% of it.
  const double tflops = 2 * 8192.0 * 8192 * 8192 / g.time_s / 1e12;
  CHECK(tflops == doctest::Approx(794.5).epsilon(0.03));
  const auto ln = cost::cost_kernel(layernorm(8192, 4096), c, false);
  CHECK(ln.bound == cost::Bound::kMemory);
  CHECK(layernorm(8192, 4096).intensity() == doctest::Approx(8.0 / 4));  // 8 FLOP per 4 bytes moved
}

TEST_CASE("cost: tiles and waves of a stated shape on A100 (108 SMs, no stream-K)") {
  const auto hw = test::gpu("a100_sxm_80gb");
  const auto c = cost::resolve(hw);
  // M = 1024, N = 27648 = 256 x 108, K = 4096. 128 x 256 tiles: 8 x 108 = 864
  // tiles = 8 full waves, no quantization loss; 128 x 128: 1728 tiles = 16
  // waves at a lower operand-feed factor; so 128 x 256 (256 x 128 ties: 4 x
  // 216 = 864; the first listed wins).
  const auto g = cost::cost_kernel(gemm(1024, 27648, 4096, spec::Dtype::kBf16), c, false);
  CHECK(g.tile_m == 128);
  CHECK(g.tile_n == 256);
  CHECK(g.blocks == 864);
  CHECK(g.waves == 8);
  CHECK(g.split_k == 1);
  // 8 waves x 2 tm tn (K + k0) FLOP at the per-SM rate 312e12 / 108 x the
  // main-loop efficiency x 1 / (1 + 4 (1/128 + 1/256)), + the fill latency.
  const double rate = 312e12 / 108 * c.gemm_frac[static_cast<int>(spec::Peak::kBf16)] / (1 + 4.0 * (1.0 / 128 + 1.0 / 256));
  CHECK(g.compute_s == doctest::Approx(8 * 2.0 * 128 * 256 * (4096 + c.gemm_k0) / rate + c.gemm_latency_s));
}

TEST_CASE("cost: wave quantization — one tile more than a full wave costs a second wave") {
  // A calibrated profile runs one fixed tile (128 x 128), in data-parallel
  // waves: 108 tiles fill the A100's 108 SMs once; 109 need a second wave.
  auto hw = test::gpu("a100_sxm_80gb");
  hw.calibration.present = true;
  hw.calibration.efficiency.gemm_tile_m = hw.calibration.efficiency.gemm_tile_n = 128;
  const auto c = cost::resolve(hw);
  const auto full = cost::cost_kernel(gemm(128 * 108, 128, 4096, spec::Dtype::kBf16), c, false);
  const auto spill = cost::cost_kernel(gemm(128 * 109, 128, 4096, spec::Dtype::kBf16), c, false);
  CHECK(full.waves == 1);
  CHECK(spill.waves == 2);
  CHECK(spill.compute_s - c.gemm_latency_s == doctest::Approx(2 * (full.compute_s - c.gemm_latency_s)));
}

TEST_CASE("cost: split-K for a skinny GEMM, stream-K past a wave on Hopper") {
  // M = N = 128, K = 65536 on A100: one 128 x 128 tile would run on 1 of 108
  // SMs; splitting K 16 ways runs 64 64x64-or-larger pieces at once.
  const auto a100 = cost::resolve(test::gpu("a100_sxm_80gb"));
  const auto skinny = cost::cost_kernel(gemm(128, 128, 65536, spec::Dtype::kBf16), a100, false);
  CHECK(skinny.split_k > 1);
  // Without the split: 1 wave of one 128 x 128 tile over the whole K.
  const double rate = 312e12 / 108 * a100.gemm_frac[static_cast<int>(spec::Peak::kBf16)] / (1 + 4.0 * (2.0 / 128));
  CHECK(skinny.compute_s < 2.0 * 128 * 128 * 65536 / rate / 4);
  // H100 (stream-K): 8192^3 in 128 x 256 tiles is 64 x 32 = 2048 tiles on
  // 132 SMs: 15.52 waves cost 15.52, not 16.
  const auto h100 = cost::resolve(test::gpu("h100_sxm"));
  const auto g = cost::cost_kernel(gemm(8192, 8192, 8192, spec::Dtype::kBf16), h100, false);
  CHECK(g.split_k == 0);  // 0 marks stream-K
  CHECK(g.tile_m * g.tile_n == 128 * 256);
  CHECK(g.waves == doctest::Approx(2048.0 / 132));
}

TEST_CASE("cost: a stream-K share pays the prologue and epilogue of every tile it touches") {
  // H100, M = 49152, N = 4608, K = 1536 (a small model's MLP GEMM): 128 x 256
  // tiles are 384 x 18 = 6912 on 132 SMs. Each SM's share is 6912 x 1536 /
  // 132 = 80431 K steps, 52.4 tiles' worth, touching ceil(52.4) + 1 = 54
  // tiles: 80431 + 54 k0 K steps. Whole waves would cost ceil(52.4) = 53 x
  // (1536 + k0) - more, so stream-K is chosen.
  const auto h100 = cost::resolve(test::gpu("h100_sxm"));
  const auto g = cost::cost_kernel(gemm(49152, 4608, 1536, spec::Dtype::kBf16), h100, false);
  REQUIRE(g.split_k == 0);
  REQUIRE(g.tile_m * g.tile_n == 128 * 256);
  const double k0 = h100.gemm_k0;
  const double per_sm = 989.4e12 * h100.clock_scale / 132 * h100.gemm_frac[static_cast<int>(spec::Peak::kBf16)];
  const double rate = per_sm / (1 + h100.gemm_lambda * (1.0 / 128 + 1.0 / 256));
  const double share = 6912.0 * 1536 / 132;
  const double expect = (share + 54 * k0) * 2.0 * 128 * 256 / rate + h100.gemm_latency_s;
  CHECK(g.compute_s == doctest::Approx(expect).epsilon(1e-9));
  // Two epilogues per SM, as if a share never crossed a tile, would be 6% faster here.
  CHECK((share + 2 * k0) / (share + 54 * k0) < 0.95);
}

TEST_CASE("cost: a GEMV-like fp8 GEMM is memory-bound") {
  // M = 64, N = 7168, K = 16384 fp8 (a DeepGEMM row): 117 MB of weights for
  // 15 GFLOP, intensity ~128 FLOP/B, below H100's fp8 ridge ~570 FLOP/B.
  const auto c = cost::resolve(test::gpu("h100_sxm"));
  const auto g = cost::cost_kernel(gemm(64, 7168, 16384, spec::Dtype::kFp8E4M3), c, false);
  CHECK(g.bound == cost::Bound::kMemory);
  CHECK(gemm(64, 7168, 16384, spec::Dtype::kFp8E4M3).intensity() ==
        doctest::Approx(2.0 * 64 * 7168 * 16384 / ((64.0 * 16384 + 16384.0 * 7168) + 64.0 * 7168)));
}

TEST_CASE("cost: fp8 speeds a compute-bound GEMM by its peak ratio x its main-loop efficiencies; fp32 at the non-tensor peak") {
  const auto c = cost::resolve(test::gpu("h100_sxm"));
  const auto bf16 = cost::cost_kernel(gemm(8192, 8192, 8192, spec::Dtype::kBf16), c, false);
  const auto fp8 = cost::cost_kernel(gemm(8192, 8192, 8192, spec::Dtype::kFp8E4M3), c, false);
  const double fp32 = cost::cost_kernel(gemm(8192, 8192, 8192, spec::Dtype::kFp32), c, false).compute_s;
  const int b = static_cast<int>(spec::Peak::kBf16), f = static_cast<int>(spec::Peak::kFp8);
  // Peak ratio 1978.9 / 989.4 = 2.0 (whitepaper Table 1) x eta8 / eta16; the
  // K tail (k0 = 128 16-bit steps = 256 fp8 steps of 8192) costs fp8 1.5% more.
  const double tail = (8192.0 + c.gemm_k0) / (8192.0 + 2 * c.gemm_k0);
  CHECK((bf16.compute_s - c.gemm_latency_s) / (fp8.compute_s - c.gemm_latency_s) ==
        doctest::Approx(1978.9 / 989.4 * c.gemm_frac[f] / c.gemm_frac[b] * tail).epsilon(0.01));
  CHECK(fp32 > bf16.compute_s * 10);  // 66.9 TFLOP/s non-tensor against 989.4 tensor
  CHECK(spec::bytes_per_element(spec::Dtype::kFp8E4M3) == 1);
  CHECK(spec::bytes_per_element(spec::Dtype::kBf16) == 2);
  CHECK(spec::bytes_per_element(spec::Dtype::kFp32) == 4);
}

TEST_CASE("cost: a power limit lowers the sustained clock and with it a compute-bound kernel's speed") {
  const auto hw = test::gpu("h100_sxm");
  cost::ResolveOptions at500;
  at500.power_limit_w = 500;
  const auto tdp = cost::resolve(hw), low = cost::resolve(hw, at500);
  // f(500 W) = 1755 MHz x (500 / 700)^(1/3) = 1755 x 0.89390 = 1568.8 MHz.
  CHECK(low.clock_scale * 1830 == doctest::Approx(1755 * std::cbrt(500.0 / 700.0)));
  const auto k = gemm(8192, 8192, 8192, spec::Dtype::kBf16);
  const double t_tdp = cost::cost_kernel(k, tdp, false).compute_s - tdp.gemm_latency_s;
  const double t_low = cost::cost_kernel(k, low, false).compute_s - low.gemm_latency_s;
  CHECK(t_low / t_tdp == doctest::Approx(1 / std::cbrt(500.0 / 700.0)));
}

TEST_CASE("cost: Blackwell - a training step's clock under back-to-back load, boost for a benchmark's bursts") {
  // B200: 1965 MHz boost, ~1580 MHz after 50-100 ms of back-to-back work at
  // its 1000 W (flashinfer-ai/flashinfer PR 2899). A plan runs at the
  // sustained clock x the training fraction; a row at boost (locked) at 1.
  const auto b200 = test::gpu("b200");
  CHECK(b200.sustained_clock_hz == 1.58e9);
  CHECK(cost::resolve(b200).clock_ratio == doctest::Approx(1580.0 / 1965.0));
  cost::ResolveOptions at_boost;
  at_boost.locked_clock_hz = b200.clock_hz;
  CHECK(cost::resolve(b200, at_boost).clock_ratio == 1.0);
  cost::ResolveOptions train;
  train.training_run = true;
  const auto t = cost::resolve(b200, train);
  CHECK(t.clock_scale == doctest::Approx(1580.0 / 1965.0 * t.training_clock_frac));
  // GB200, the same die at 1200 W: the profiles' power law (f ~ P^(1/3)) from
  // B200's: 1580 x (1200 / 1000)^(1/3) = 1679.0 MHz; GB300 at 1400 W 1767.6.
  CHECK(test::gpu("gb200").sustained_clock_hz == doctest::Approx(1580e6 * std::cbrt(1.2)).epsilon(1e-3));
  CHECK(test::gpu("gb300").sustained_clock_hz == doctest::Approx(1580e6 * std::cbrt(1.4)).epsilon(1e-3));
}

TEST_CASE("cost: Blackwell's fused attention overlaps half its exponentials; Blackwell Ultra issues twice as many") {
  // cuDNN on sm_100, forward, head dim 128, per score element: the MMAs'
  // 4 d = 512 FLOP at 0.95, plus 0.5 exponentials not overlapped at 8192 /
  // 16 = 512 tensor FLOP each on GB200 (2500 TFLOP/s / (148 SMs x 2.062
  // GHz) = 8192 FLOP per SM-clock, 16 exponentials), 256 on GB300 (32):
  // 538.9 + 256 = 794.9 against 538.9 + 128 = 666.9 FLOP-equivalents,
  // GB300 1.1919x faster at the same clock and tiles. Measured (published.yaml,
  // cuDNN 9.22, 2 x 16384 tokens, 64 heads, not causal): 10.369 / 8.734 ms = 1.187.
  const auto gb200 = test::gpu("gb200"), gb300 = test::gpu("gb300");
  CHECK(gb200.exp_per_sm_clock == 16.0);
  CHECK(gb300.exp_per_sm_clock == 32.0);
  CHECK(test::gpu("h100_sxm").exp_per_sm_clock == 16.0);
  cost::ResolveOptions boost;
  boost.locked_clock_hz = 2.062e9;
  const auto c200 = cost::resolve(gb200, boost), c300 = cost::resolve(gb300, boost);
  const int cu = static_cast<int>(spec::AttentionKind::kCudnn);
  CHECK(c200.attention_frac[cu] == doctest::Approx(0.95));
  CHECK(c200.attention_softmax[cu] == doctest::Approx(0.5));
  CHECK(c200.attention_bwd_frac[cu] == doctest::Approx(0.6));
  CHECK(c200.mma_flop_per_exp == doctest::Approx(2500e12 / (148 * 2.062e9) / 16).epsilon(1e-3));
  CHECK(c300.mma_flop_per_exp == doctest::Approx(c200.mma_flop_per_exp / 2));
  graph::AttentionShape s;
  s.batch = 2, s.heads = 64, s.kv_heads = 8, s.q_len = 16384, s.kv_len = 16384, s.head_dim = 128, s.causal = false;
  const auto fwd = graph::flash_attention_forward(s, spec::AttentionKind::kCudnn, spec::Dtype::kBf16, gb200);
  const double t200 = cost::cost_kernel(fwd, c200, false).compute_s;
  const double t300 = cost::cost_kernel(fwd, c300, false).compute_s;
  CHECK(t200 / t300 == doctest::Approx((512 / 0.95 + 0.5 * 512) / (512 / 0.95 + 0.5 * 256)).epsilon(1e-6));
  // Hopper's kernels keep their fit: 1.25 exponentials, backward at 0.665.
  const auto h100 = cost::resolve(test::gpu("h100_sxm"));
  CHECK(h100.attention_softmax[cu] == doctest::Approx(1.25));
  CHECK(h100.attention_bwd_frac[cu] == doctest::Approx(0.665));
  // Left out, each cudnn-frontend group takes the other's fit.
  cost::ResolveOptions out;
  out.without_group = "cudnn_frontend_sdpa_b200";
  CHECK(cost::resolve(gb200, out).attention_softmax[cu] == doctest::Approx(0.4375));
  out.without_group = "cudnn_frontend_sdpa";
  CHECK(cost::resolve(gb200, out).attention_softmax[cu] == doctest::Approx(0.5625));
}

TEST_CASE("cost: attention as a tiled kernel - blocks, waves, causal half, backward") {
  const auto hw = test::gpu("h100_sxm");
  const auto c = cost::resolve(hw);
  graph::AttentionShape s;
  s.batch = 4, s.heads = 16, s.kv_heads = 16, s.q_len = 8192, s.kv_len = 8192, s.head_dim = 128;
  s.causal = false;
  const auto fa3 = graph::flash_attention_forward(s, spec::AttentionKind::kFlash3, spec::Dtype::kBf16, hw);
  const auto r = cost::cost_kernel(fa3, c, false);
  // FA3 forward, head dim 128, not causal: 128 x 176 tiles; blocks = 4 x 16 x
  // ceil(8192 / 128) = 4096, waves = ceil(4096 / 132) = 32.
  CHECK(r.tile_m == 128);
  CHECK(r.tile_n == 176);
  CHECK(r.blocks == 4096);
  CHECK(r.waves == 32);
  // Causal: model FLOPs exactly half; executed FLOPs half plus the diagonal
  // blocks run whole: x (1/2 + 128 / (2 x 8192)) (FA3 causal tiles 128 x 128).
  s.causal = true;
  const auto causal = graph::flash_attention_forward(s, spec::AttentionKind::kFlash3, spec::Dtype::kBf16, hw);
  CHECK(fa3.model_flops == doctest::Approx(2 * causal.model_flops));
  CHECK(causal.flops == doctest::Approx(fa3.flops * (0.5 + 128.0 / (2 * 8192))));
  const auto rc = cost::cost_kernel(causal, c, false);
  CHECK(rc.compute_s < r.compute_s);
  CHECK(rc.compute_s > 0.5 * r.compute_s);  // the diagonal and the imbalance cost more than half
  // Backward: 2.5x the forward FLOPs; its MMAs run at 0.8 of the forward's
  // efficiency but its softmax share is smaller (one exp per 10 Br Bc d MMA
  // FLOP, not 4), so per FLOP it is within 25% of the forward (the paper's
  // H100 rows: FA3 d128 at 16K, forward 648 and backward 561 TFLOP/s).
  const auto bwd = graph::flash_attention_backward(fa3);
  CHECK(bwd.flops == doctest::Approx(2.5 * fa3.flops));
  const auto rb = cost::cost_kernel(bwd, c, false);
  CHECK(rb.compute_s > 2.0 * r.compute_s);
  CHECK(rb.compute_s < 3.2 * r.compute_s);
  // FA2 on Hopper issues mma.sync (0.65 of wgmma, Luo et al. 2024): slower than FA3.
  const auto fa2 = graph::flash_attention_forward(s, spec::AttentionKind::kFlash2, spec::Dtype::kBf16, hw);
  CHECK(cost::cost_kernel(fa2, c, false).compute_s > 1.3 * rc.compute_s);
}

TEST_CASE("cost: a causal attention kernel's unequal blocks are list-scheduled, not packed perfectly") {
  // FA3 forward, head dim 128, causal, 1 x 1 x 4096 tokens on an H100 (132 SMs):
  // 128 x 128 tiles, nq = nk = 32 query blocks; query block j (0-based) runs
  // j + 1 key tiles: mean (32 + 1) / 2 = 16.5, longest 32, plus one
  // prologue/epilogue iteration each (attention_block_iters). 32 blocks on 132
  // SMs: the longest block alone sets the time, (32 + 1) iterations.
  const auto hw = test::gpu("h100_sxm");
  const auto c = cost::resolve(hw);
  graph::AttentionShape s;
  s.batch = 1, s.heads = 1, s.kv_heads = 1, s.q_len = 4096, s.kv_len = 4096, s.head_dim = 128, s.causal = true;
  const auto one = cost::cost_kernel(graph::flash_attention_forward(s, spec::AttentionKind::kFlash3,
                                                                    spec::Dtype::kBf16, hw), c, false);
  // 16 x 64 = 1024 heads: 32768 blocks of total 32768 x (16.5 + 1) = 573,440
  // iterations; Graham's bound: 573,440 / 132 + (1 - 1/132) x 33 = 4344.2 + 32.75
  // = 4376.96 iterations, against 4344.2 for perfect packing and
  // ceil(32768 / 132) x 17.5 = 249 x 17.5 = 4357.5 for equal waves of mean blocks.
  s.heads = 1024;
  const auto many = cost::cost_kernel(graph::flash_attention_forward(s, spec::AttentionKind::kFlash3,
                                                                     spec::Dtype::kBf16, hw), c, false);
  CHECK(one.blocks == 32);
  CHECK(many.blocks == 32768);
  const double iter_s = one.compute_s / 33.0;
  CHECK(many.compute_s / iter_s == doctest::Approx(573440.0 / 132 + (1 - 1.0 / 132) * 33).epsilon(1e-9));
}

TEST_CASE("cost: a context-parallel rank's causal attention runs as the ring's cp steps, half its keys") {
  // CP 16 over 65,536 tokens: a rank holds 4,096 queries, chunks 2 x 2,048
  // from the sequence's head and tail (Megatron-LM get_batch_on_this_cp_rank),
  // against all 65,536 keys, in 16 ring steps (Transformer Engine's
  // AttnFuncWithCP): step 0 causal over its own 4,096 tokens; each of the
  // other 15 unmasked, 4,096 x 2,048 (both query chunks against the first
  // key chunk it received, or the tail chunk against both: the same area).
  const auto hw = test::gpu("h100_sxm");
  const auto c = cost::resolve(hw);
  graph::AttentionShape s;
  s.batch = 1, s.heads = 64, s.kv_heads = 64, s.q_len = 4096, s.kv_len = 65536, s.head_dim = 128, s.causal = true;
  const auto fwd = graph::flash_attention_forward(s, spec::AttentionKind::kFlash3, spec::Dtype::kBf16, hw);
  graph::AttentionShape diag = s, off = s;
  diag.kv_len = 4096;
  off.kv_len = 2048, off.causal = false;
  const auto kd = graph::flash_attention_forward(diag, spec::AttentionKind::kFlash3, spec::Dtype::kBf16, hw);
  const auto ko = graph::flash_attention_forward(off, spec::AttentionKind::kFlash3, spec::Dtype::kBf16, hw);
  const auto r = cost::cost_kernel(fwd, c, false);
  const auto rd = cost::cost_kernel(kd, c, false);
  const auto ro = cost::cost_kernel(ko, c, false);
  CHECK(r.compute_s == doctest::Approx(rd.compute_s + 15 * ro.compute_s).epsilon(1e-12));
  // Step 0 by hand: FA3 causal tiles 128 x 128, 32 query blocks a head, block j
  // running j + 1 key tiles (mean 16.5, longest 32) plus one prologue
  // iteration; 64 heads: 2,048 blocks list-scheduled on 132 SMs (Graham:
  // 2,048 x 17.5 / 132 + (1 - 1/132) x 33 iterations). One iteration: 4 Br Bc d
  // MMA FLOP at FA3's efficiency and Br Bc exponentials, on one SM's share of
  // the peak.
  const int f3 = static_cast<int>(spec::AttentionKind::kFlash3);
  const double per_sm = c.peak_flop_per_s[static_cast<int>(spec::Peak::kBf16)] / c.sms;
  const double iter_s = (4.0 * 128 * 128 * 128 / c.attention_frac[f3] +
                         128.0 * 128 * c.attention_softmax[f3] * c.mma_flop_per_exp) / per_sm;
  CHECK(rd.compute_s / iter_s == doctest::Approx(2048 * 17.5 / 132 + (1 - 1.0 / 132) * 33).epsilon(1e-9));
  // The work is half the rectangle's (the 16 x 4,096 x 4,096 / 2 of step 0 and
  // the 15 x 4,096 x 2,048 of the rest: 8.5 of 16 key-sixteenths), within
  // the tails: between 0.5 and 0.65 of the unmasked 4,096 x 65,536 kernel.
  graph::AttentionShape full = s;
  full.causal = false;
  const auto rf = cost::cost_kernel(graph::flash_attention_forward(full, spec::AttentionKind::kFlash3,
                                                                   spec::Dtype::kBf16, hw), c, false);
  CHECK(r.compute_s > 0.5 * rf.compute_s);
  CHECK(r.compute_s < 0.65 * rf.compute_s);
  // The backward takes the same steps; each call is a launch (2 a call backward).
  const auto bwd = graph::flash_attention_backward(fwd);
  const auto rb = cost::cost_kernel(bwd, c, false);
  CHECK(rb.compute_s == doctest::Approx(cost::cost_kernel(graph::flash_attention_backward(kd), c, false).compute_s +
                                        15 * cost::cost_kernel(graph::flash_attention_backward(ko), c, false).compute_s)
                             .epsilon(1e-12));
  // Model FLOPs: half the rectangle.
  CHECK(fwd.model_flops == doctest::Approx(4.0 * 64 * 4096 * 65536 * 128 / 2));
}

TEST_CASE("cost: FlashAttention-1's key-block loop - fp32 accumulator traffic and the warps' exchange (flash-attn v1.0.9)") {
  const auto hw = test::gpu("a100_sxm_80gb");
  const auto c = cost::resolve(hw);
  graph::AttentionShape s;
  s.batch = 1, s.heads = 16, s.kv_heads = 16, s.q_len = 4096, s.kv_len = 4096, s.head_dim = 128, s.causal = false;
  const auto f = graph::flash_attention_forward(s, spec::AttentionKind::kFlash, spec::Dtype::kBf16, hw);
  // fmha_fwd_hdim128.cu: FMHA_kernel_traits<128, 128, 16, 1, 4>: 16-row query
  // steps against key blocks of 128: 4096 / 128 = 32 key blocks. Q, K, V, O:
  // 4096 x 16 x 128 x 2 B = 16 MiB each; the fp32 accumulator o_tmp 32 MiB.
  // Reads: K + V once, Q at each of the 32 blocks, o_tmp at the 31 after the
  // first: 16 MiB x (2 + 32 + 2 x 31) = 1,610,612,736 B. Writes: o_tmp at 31
  // blocks, O and the fp32 log-sum-exp (16 x 4096 x 4 B) once:
  // 16 MiB x (1 + 62) + 262,144 = 1,057,226,752 B.
  const double mib16 = 16.0 * 1024 * 1024;
  CHECK(f.read_bytes == doctest::Approx(mib16 * 96));
  CHECK(f.write_bytes == doctest::Approx(mib16 * 63 + 262144));
  // Causal: a key block meets the queries at or below it, (32 + 1) / 2 = 16.5 blocks per row.
  s.causal = true;
  const auto fc = graph::flash_attention_forward(s, spec::AttentionKind::kFlash, spec::Dtype::kBf16, hw);
  CHECK(fc.read_bytes == doctest::Approx(mib16 * (2 + 16.5 + 2 * 15.5)));
  // Backward (fmha_bwd_hdim128.cu, the same loop): K, V read and dK, dV
  // written once; Q and dO re-read and the fp32 dq_tmp read and written at
  // each of the 32 blocks; O and the log-sum-exp read once.
  s.causal = false;
  const auto b = graph::flash_attention_backward(f);
  CHECK(b.read_bytes == doctest::Approx(mib16 * (2 + 2 * 32 + 2 * 32 + 1) + 262144));
  CHECK(b.write_bytes == doctest::Approx(mib16 * (2 + 1 + 2 * 32)));
  // Compute: blocks = 16 heads x 4096 / 16 = 4096 query steps' blocks, waves
  // = ceil(4096 / 108) = 38, each (32 key blocks + 1 prologue) iterations of
  // 4 x 16 x 128 x 128 MMA FLOP at FA2's efficiency, 16 x 128 scores'
  // softmax and the 4 warps' fp32 partial O (16 x 128) stored and summed
  // through shared memory: 2 x 4 x 16 x 128 x 4 B at the banks' rate per SM.
  const auto r = cost::cost_kernel(f, c, false);
  const int kf1 = static_cast<int>(spec::AttentionKind::kFlash);
  const double per_sm = c.peak_flop_per_s[static_cast<int>(spec::Peak::kBf16)] / c.sms;
  const double iter_s = (4.0 * 16 * 128 * 128 / c.attention_frac[kf1] +
                         16.0 * 128 * c.attention_softmax[kf1] * c.mma_flop_per_exp) / per_sm +
                        c.fa1_exchange_cost * 2.0 * 4 * 16 * 128 * 4 / (c.sram_bytes_per_s / c.sms);
  CHECK(r.blocks == 4096);
  CHECK(r.waves == 38);
  CHECK(r.compute_s == doctest::Approx(38 * 33 * iter_s).epsilon(1e-9));
  // FA1's main loop is FA2's (the same mma.sync code); the exchange per
  // score element grows as d / Bc (64 / 256 at head dim 64, 128 / 128 at
  // 128), so FA1 runs head dim 128 slower per FLOP than 64, where FA2 runs
  // it faster (the README's A100 bars at 16K, non-causal: FA1 110 and 83
  // TFLOP/s, FA2 176 and 203).
  CHECK(c.attention_frac[kf1] == c.attention_frac[static_cast<int>(spec::AttentionKind::kFlash2)]);
  auto per_flop = [&](spec::AttentionKind k, double d) {
    graph::AttentionShape x;
    x.batch = 1, x.heads = 2048 / d, x.kv_heads = x.heads, x.q_len = 16384, x.kv_len = 16384, x.head_dim = d;
    const auto fw = graph::flash_attention_forward(x, k, spec::Dtype::kBf16, hw);
    const auto bw = graph::flash_attention_backward(fw);
    return (cost::cost_kernel(fw, c, false).time_s + cost::cost_kernel(bw, c, false).time_s) / fw.flops;
  };
  CHECK(per_flop(spec::AttentionKind::kFlash, 128) > per_flop(spec::AttentionKind::kFlash, 64));
  CHECK(per_flop(spec::AttentionKind::kFlash2, 128) < per_flop(spec::AttentionKind::kFlash2, 64));
}

TEST_CASE("cost: a pre-MLIR Triton kernel runs the mma.sync path on Hopper") {
  // triton_legacy: mma.sync on every GPU. On an A100 it is the Triton fit
  // itself; on an H100 the same fraction of the mma.sync peak, which is
  // 0.65 of the warpgroup-MMA peak the efficiencies are quoted against
  // (Luo et al. 2024: H800 mma.sync fp16 494.4 vs wgmma 729.3 TFLOP/s),
  // while the triton kind there is the warpgroup-MMA fit.
  const auto a100 = cost::resolve(test::gpu("a100_sxm_80gb"));
  const auto h100 = cost::resolve(test::gpu("h100_sxm"));
  const int tl = static_cast<int>(spec::AttentionKind::kTritonLegacy);
  const int tr = static_cast<int>(spec::AttentionKind::kTriton);
  CHECK(a100.attention_frac[tl] == doctest::Approx(a100.attention_frac[tr]));
  CHECK(h100.attention_frac[tl] == doctest::Approx(0.65 * a100.attention_frac[tl]));
  CHECK(h100.attention_frac[tl] < h100.attention_frac[tr]);
  // flash_attn_triton.py: BLOCK_M = BLOCK_N = 128.
  const auto t = graph::attention_tile(spec::AttentionKind::kTritonLegacy, 128, graph::AttentionPass::kForward, true);
  CHECK(t.br == 128);
  CHECK(t.bc == 128);
}

TEST_CASE("cost: time never rises when bandwidth or peak rise") {
  auto hw = test::gpu("a100_sxm_80gb");
  const graph::Kernel ks[] = {gemm(4096, 4096, 4096, spec::Dtype::kBf16), gemm(64, 4096, 4096, spec::Dtype::kBf16),
                              layernorm(4096, 4096)};
  for (const auto& k : ks) {
    double prev = 1e30;
    for (double scale : {0.5, 1.0, 2.0, 4.0}) {
      auto h2 = hw;
      h2.hbm_bytes_per_s *= scale;
      for (auto& p : h2.peak_flop_per_s) p *= scale;
      const double t = cost::cost_kernel(k, cost::resolve(h2), false).time_s;
      CHECK(t <= prev);
      prev = t;
    }
  }
}

TEST_CASE("cost: ring all-reduce moves 2 (n - 1) / n S per GPU") {
  const double S = 1e9;
  CHECK(cost::collective_bytes_per_gpu(graph::Collective::kAllReduce, S, 8) == doctest::Approx(2.0 * 7 / 8 * S));
  CHECK(cost::collective_bytes_per_gpu(graph::Collective::kAllGather, S, 8) == doctest::Approx(7.0 / 8 * S));
  CHECK(cost::collective_bytes_per_gpu(graph::Collective::kReduceScatter, S, 4) == doctest::Approx(3.0 / 4 * S));
  const auto c = cost::resolve(test::gpu("h100_sxm"));
  // Inside an H100 node (NVSwitch with NVLink SHARP) 1 GB takes NVLS: the switch reduces, so each GPU moves
  // (n + 1)/n S = 9/8 S at 450 GB/s x 0.8 (NCCL's sustained share of the link) x 0.85 (NCCL tuning.cc
  // nvlsEfficiency, Hopper), after NCCL's 25 us NVLS base latency.
  const double t = cost::collective_time(graph::Collective::kAllReduce, S, 8, 8, c);
  CHECK(t == doctest::Approx(25e-6 + 9.0 / 8 * S / (450e9 * 0.8 * 0.85)));
  // Crossing nodes uses the slower network.
  CHECK(cost::collective_time(graph::Collective::kAllReduce, S, 16, 16, c) > t);
}

TEST_CASE("cost: a framework's own elementwise and norm kernels stream slower than tuned ones") {
  // Liger-Kernel's benchmark data (published.yaml liger_kernel): on an H100,
  // Megatron's bias_swiglu_impl over [8192, 2 x 16384] bf16 reads 2 x 268 MB
  // and writes 268 MB in 0.433 ms, 1.86 TB/s, where Liger's Triton kernel
  // takes 0.267 ms, 3.02 TB/s. The cost model: a tuned kernel at the
  // class's rate (elementwise: hbm_frac 0.88 of 3.35 TB/s), a framework's
  // own at framework_mem_frac of it (elementwise 0.612, norm 0.625), the
  // same HBM latency either way.
  const auto hw = test::gpu("h100_sxm");
  const auto c = cost::resolve(hw);
  CHECK(c.framework_mem_frac[static_cast<int>(spec::KernelClass::kElementwise)] == 0.612);
  CHECK(c.framework_mem_frac[static_cast<int>(spec::KernelClass::kNorm)] == 0.625);
  CHECK(c.framework_mem_frac[static_cast<int>(spec::KernelClass::kSoftmax)] == 1.0);
  graph::Kernel k = graph::elementwise_kernel(8192.0 * 16384, 2, spec::Dtype::kBf16);
  const double bytes = 3 * 8192.0 * 16384 * 2;
  REQUIRE(k.read_bytes + k.write_bytes == doctest::Approx(bytes));
  REQUIRE(k.impl == graph::kImplFramework);  // what the graph builds unless a pass says otherwise
  const auto framework = cost::cost_kernel(k, c, false);
  k.impl = graph::kImplTuned;
  const auto tuned = cost::cost_kernel(k, c, false);
  CHECK(tuned.memory_s == doctest::Approx(bytes / (3.35e12 * 0.88) + c.hbm_latency_s));
  CHECK(framework.memory_s == doctest::Approx(bytes / (3.35e12 * 0.88 * 0.612) + c.hbm_latency_s));
  // 0.450 ms against the measured 0.433, 0.273 against Liger's 0.267 (plus the launch).
  CHECK(framework.memory_s * 1e3 == doctest::Approx(0.450).epsilon(0.01));
  CHECK(tuned.memory_s * 1e3 == doctest::Approx(0.273).epsilon(0.01));
  // Left out, the liger_kernel group's fits take their priors: a PyTorch
  // norm reads its input twice and writes once where a tuned one reads once
  // (layer_norm_kernel.cu, vectorized_layer_norm_kernel_impl), 2 of 3
  // passes' rate; elementwise kernels at the tuned rate.
  cost::ResolveOptions out;
  out.without_group = "liger_kernel";
  const auto prior = cost::resolve(hw, out);
  CHECK(prior.framework_mem_frac[static_cast<int>(spec::KernelClass::kNorm)] == doctest::Approx(2.0 / 3.0));
  CHECK(prior.framework_mem_frac[static_cast<int>(spec::KernelClass::kElementwise)] == 1.0);
}

TEST_CASE("cost: torch.compile's kernels and the fused norms are tuned; eager ones the framework's") {
  const auto m = test::model("llama3_8b");
  const auto hw = test::gpu("h100_sxm");
  auto impl_of = [&](spec::Fusion f, spec::KernelClass cls) {
    spec::PlanSpec p = test::plan(1, 2048);
    p.fusion = f;
    p.fusion_given = true;
    graph::Graph g;
    techniques::build_microbatch(g, m, p, hw);
    int framework = 0, tuned = 0;
    for (const auto& k : g.kernels)
      if (k.cls == cls) (k.impl == graph::kImplTuned ? tuned : framework) += 1;
    return std::pair{framework, tuned};
  };
  // Eager: Megatron's RMSNorm is Transformer Engine's (tuned); PyTorch's own
  // norms, native or the composite chain, stream at the framework's rate.
  CHECK(impl_of(spec::Fusion::kEager, spec::KernelClass::kNorm).first == 0);
  // Megatron's fused level: TorchScript-fused pointwise ops stay the
  // framework's (bias_swiglu_impl measured at 55% of the HBM peak); its
  // norms are Apex's / Transformer Engine's CUDA kernels.
  CHECK(impl_of(spec::Fusion::kFused, spec::KernelClass::kElementwise).second == 0);
  CHECK(impl_of(spec::Fusion::kFused, spec::KernelClass::kNorm).first == 0);
  // torch.compile generates every pointwise chain and norm.
  CHECK(impl_of(spec::Fusion::kCompiled, spec::KernelClass::kElementwise).first == 0);
  CHECK(impl_of(spec::Fusion::kCompiled, spec::KernelClass::kNorm).first == 0);
}

TEST_CASE("cost: eager elementwise kernels stream at the tuned rate over contiguous operands only") {
  // PyTorch vectorizes an elementwise kernel only when every operand is
  // contiguous (CUDALoops.cuh gpu_kernel_impl_nocast); Liger's relu_squared
  // rows put torch's two such kernels at the tuned rate. Llama 3 8B's eager
  // forward, by hand: RoPE reads cos and sin broadcast (legacy loop); the
  // residual adds read two contiguous tensors; SwiGLU's silu and gate-mul
  // read the up projection's output, contiguous where the gate and up are
  // separate GEMMs (torchtitan w1, w3), chunk views of one fused output
  // under Megatron-Core (linear_fc1 twice the FFN width, torch.chunk).
  const auto m = test::model("llama3_8b");
  const auto hw = test::gpu("h100_sxm");
  auto tuned_forward = [&](const char* framework, int gate_up = -1) {
    spec::PlanSpec p = test::plan(1, 2048);
    p.framework = *spec::find_framework(framework);
    if (gate_up >= 0) p.gate_up_given = true, p.fused_gate_up = gate_up == 1;
    p.fusion = spec::Fusion::kEager;
    p.fusion_given = true;
    graph::Graph g;
    techniques::build_microbatch(g, m, p, hw);
    std::map<std::string, bool> tuned;
    for (const auto& k : g.kernels)
      if (k.phase == spec::Phase::kForward && k.cls == spec::KernelClass::kElementwise)
        tuned[std::string(k.name)] = k.impl == graph::kImplTuned;
    return tuned;
  };
  const auto titan = tuned_forward("torchtitan");
  CHECK(titan.at("rope") == false);
  CHECK(titan.at("residual_add1") == true);
  CHECK(titan.at("residual_add2") == true);
  CHECK(titan.at("mlp_act") == true);
  CHECK(titan.at("mlp_gate_mul") == true);
  const auto mega = tuned_forward("megatron");
  CHECK(mega.at("rope") == false);
  CHECK(mega.at("residual_add1") == true);
  CHECK(mega.at("mlp_act") == false);
  CHECK(mega.at("mlp_gate_mul") == false);
  // The plan's gate_up overrides the framework's: a model whose code fuses
  // them (NeMo AutoModel's custom Llama) under torchtitan, and the reverse.
  const auto titan_fused = tuned_forward("torchtitan", 1);
  CHECK(titan_fused.at("mlp_act") == false);
  CHECK(titan_fused.at("mlp_gate_mul") == false);
  CHECK(titan_fused.at("residual_add1") == true);
  CHECK(tuned_forward("megatron", 0).at("mlp_gate_mul") == true);
  // RMSNorm at the eager level, per framework (frameworks/*.yaml rms_norm):
  // torchtitan's nn.RMSNorm is one native kernel at the framework's norm
  // rate: reads x (T h e) and the weight (h e), writes y and the fp32 rstd
  // per row; Hugging Face's LlamaRMSNorm is the six-kernel chain, 2e + 16
  // bytes read and 2e + 12 written an element (T = 2048, h = 4096, e = 2).
  auto norm1 = [&](const char* framework) {
    spec::PlanSpec p = test::plan(1, 2048);
    p.framework = *spec::find_framework(framework);
    p.fusion = spec::Fusion::kEager;
    p.fusion_given = true;
    graph::Graph g;
    techniques::build_microbatch(g, m, p, hw);
    for (const auto& k : g.kernels)
      if (k.phase == spec::Phase::kForward && k.op == graph::Op::kNorm1) return k;
    return graph::Kernel{};
  };
  const double T = 2048, h = 4096, e = 2;
  const auto native = norm1("torchtitan");
  CHECK(native.read_bytes + native.write_bytes == doctest::Approx(T * h * e + h * e + T * h * e + T * 4));
  CHECK(native.impl == graph::kImplFramework);
  const auto composite = norm1("hf");
  CHECK(composite.read_bytes + composite.write_bytes == doctest::Approx(T * h * (2 * e + 16) + T * h * (2 * e + 12)));
  CHECK(composite.launches == 6);
  CHECK(norm1("megatron").impl == graph::kImplTuned);  // Transformer Engine's
  // A backward kernel streams as its forward does: silu's backward under
  // torchtitan at the tuned rate (derive_backward copies impl).
  spec::PlanSpec p = test::plan(1, 2048);
  p.framework = *spec::find_framework("torchtitan");
  p.fusion = spec::Fusion::kEager;
  p.fusion_given = true;
  const graph::Graph g = test::step(m, p);
  int act_bwd = 0;
  for (const auto& k : g.kernels)
    if (k.phase == spec::Phase::kBackward && k.op == graph::Op::kAct) {
      ++act_bwd;
      CHECK(k.impl == graph::kImplTuned);
    }
  CHECK(act_bwd == 1);
}
