#include "ridgeline/cost/cost.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <limits>

#include "ridgeline/graph/kernels.hpp"

namespace ridgeline::cost {

using spec::KernelClass;

namespace {

/// A default fitted on one group of published rows: `fitted` unless that
/// group is left out (leave-one-group-out validation), then `prior` — the
/// value from the literature before any fit.
double fit(double fitted, double prior, std::string_view group, const ResolveOptions& opt) {
  return !opt.without_group.empty() && opt.without_group == group ? prior : fitted;
}

/// GEMM main-loop efficiency (fraction of the sustained dense peak the
/// K loop issues MMAs at) per generation, 16-bit and 8-bit.
/// Fitted on the "mamf" rows (best achievable matmul of each GPU from
/// mamf-finder's brute-force shape search). A maximum over shapes is a shape
/// without tile loss: eta = measured / (sustained peak x the best tile's
/// operand feed (128x256: 1 / (1 + 4 (1/128 + 1/256)) = 0.955) x K / (K + k0)),
/// the median over a generation's GPUs (values in each line's comment:
/// measured TFLOP/s -> eta). Priors (used when "mamf" is left out): the
/// instruction-level issue rates of Luo et al. 2024 (published.yaml luo24_*:
/// A100 mma.sync 310.6 of 312 TFLOP/s = 0.99; H800 wgmma fp16 729.3 of 756 =
/// 0.96, fp8 1448.4 of 1513 = 0.96), 0.9 where no such measurement exists.
struct MainLoop {
  double bf16, fp8, prior16, prior8;
};
MainLoop main_loop(const spec::HardwareSpec& hw) {
  switch (hw.generation) {
    // A100 SXM 271.2 -> 0.933, A100 PCIe 252.9 (at 1281 MHz) -> 0.954.
    case spec::Generation::kAmpere: return {0.94, 0.0, 0.99, 0.0};
    // No MAMF row: Ampere's value (the same warp-level mma.sync tensor path).
    case spec::Generation::kAda:
    case spec::Generation::kRtxBlackwell: return {0.94, 0.94, 0.99, 0.99};
    // bf16: H100 SXM 794.5 (1755 MHz) -> 0.885, GH200 828.6 -> 0.904;
    // fp8: H100 1402.6 -> 0.79, H200 1453.4 -> 0.82, GH200 1535 -> 0.83.
    case spec::Generation::kHopper: return {0.895, 0.82, 0.96, 0.96};
    // bf16: B200 1745 -> 0.85, B300 1769 -> 0.93, GB200 1822 -> 0.81;
    // fp8: B200 3432.5 -> 0.87, B300 3353.3 -> 0.81, GB200 3615.6 -> 0.88.
    case spec::Generation::kBlackwell: return {0.85, 0.865, 0.90, 0.90};
    case spec::Generation::kHost: return {0.80, 0.80, 0.80, 0.80};
    // MI355X 1565 -> 0.66.
    case spec::Generation::kCdna4: return {0.66, 0.66, 0.90, 0.90};
    // MI300X 668.4 -> 0.54, MI325X 784.9 -> 0.64 (CDNA 2: no row, CDNA 3's value).
    default: return {0.59, 0.59, 0.90, 0.90};
  }
}

/// The exposed share of a GEMM tile's epilogue (default_efficiency): fitted
/// on "deepgemm"; prior (group left out): 64 K steps (two 64-deep K slices
/// of a CUTLASS pipeline) at the H800's 295.3 FLOP/B, 0.2167.
constexpr double kEpilogueExposed = 224.0 / (989.4 / 3.35);
constexpr double kEpilogueExposedPrior = 64.0 / (989.4 / 3.35);

/// A tile's prologue and epilogue in K steps at the 16-bit rate: `exposed`
/// x the machine balance (dense 16-bit peak / HBM bandwidth), or, for a
/// profile without both, at the H800's balance.
double epilogue_k0(const spec::HardwareSpec& hw, double exposed) {
  const double peak = hw.peak(spec::Peak::kBf16) > 0 ? hw.peak(spec::Peak::kBf16) : hw.peak(spec::Peak::kFp16);
  const double balance = peak > 0 && hw.hbm_bytes_per_s > 0 ? peak / hw.hbm_bytes_per_s : 989.4 / 3.35;
  return exposed * balance;
}

}  // namespace

spec::EfficiencySpec default_efficiency(const spec::HardwareSpec& hw) {
  spec::EfficiencySpec e;
  // GEMM main loop per generation (main_loop below: fitted on "mamf"); the
  // fp8 value also serves int8 and fp4.
  const MainLoop ml = main_loop(hw);
  e.gemm_frac.fill(ml.bf16);
  for (spec::Peak p : {spec::Peak::kFp8, spec::Peak::kInt8, spec::Peak::kFp4})
    e.gemm_frac[static_cast<int>(p)] = ml.fp8 > 0 ? ml.fp8 : ml.bf16;
  // Output tile: chosen per GEMM from kGemmTiles (a calibration may fix one).
  e.gemm_tile_m = 0;
  e.gemm_tile_n = 0;
  // A tile's prologue (filling the pipeline) and epilogue (converting and
  // writing C) cost as much as k0 = 224 K steps at the 16-bit rate: physically
  // the tile's output written at its SM's share of HBM bandwidth (128 x 256
  // bf16 = 64 KiB at 3.35 TB/s x 0.88 / 132 SMs = 2.9 us, ~290 K steps of an
  // H100 SM). Fitted on the compute-bound "deepgemm" rows (M = 4096, K = 512
  // to 16384: K = 512 reaches 751 TFLOP/s, K = 16384 1426): median speed
  // error 0 at 224 (validate-published --group deepgemm, M4096 rows: -3.8,
  // -1.3, -0.5, +0.2, +5.5, +25.4% (N = 2112)), once stream-K pays an
  // epilogue per tile it touches (gemm_compute_s); it was 128 when stream-K
  // paid two per SM. Prior 64 (two 64-deep K slices of a CUTLASS pipeline).
  // The main-loop efficiencies (main_loop) were derived at k0 = 128; their
  // best shapes have K >= 4096 on Ampere and Hopper, where 224 moves them
  // by (K + 224) / (K + 128) <= 2.3%: left as derived.
  // In K steps that is the GPU's machine balance (a K step of a tm x tn
  // tile is 2 tm tn FLOP at the SM's share of the peak; its output, tm tn x
  // 2 bytes at the SM's share of HBM: peak / bandwidth steps) times the
  // share of the epilogue left exposed: 224 on the H800 of the fit (989.4
  // TFLOP/s over 3.35 TB/s = 295.3 FLOP/B) is 0.758 of it. The same
  // fraction on every GPU: an A100-80GB's 312 / 2.039 = 153 gives 116, an
  // H200's 989.4 / 4.8 = 206 gives 156 (until 2026-12-06, 224 everywhere,
  // which made every GPU's epilogue as long as an H100's in K steps: the
  // training-clock votes then moved A100 groups to 0.888 from 0.928).
  e.gemm_k0 = epilogue_k0(hw, kEpilogueExposed);
  // Fused attention: per implementation in resolve(); a calibration's
  // attention_frac replaces every fused kind's MMA efficiency.
  e.attention_frac = 0;
  // HBM: streaming kernels reach ~90% of the spec bandwidth (gpu-benches and
  // BabelStream rows in published.yaml: A100-80GB triad 1.72 of 2.04 TB/s = 84%,
  // H100/H200 stream ~90%).
  e.hbm_frac = 0.88;
  e.hbm_latency_s = 1.0e-6;
  // Per-class multipliers on hbm_frac: softmax and loss read rows twice or
  // synchronise; gathers (embedding) are irregular. A tuned norm kernel
  // (Transformer Engine's ln_fwd kernels, Liger's Triton LayerNorm and
  // RMSNorm, Inductor's persistent reductions) holds its row in registers
  // and reads it once: it streams like an elementwise kernel, multiplier 1
  // (it was 0.85, assumed for every reduction). Liger-Kernel's H100 rows
  // bear it out: its LayerNorm and RMSNorm at hidden 8,192-16,384 come out
  // at -3.9% to +0.4% time error (A100 -7.2%, -6.0%), beside -2.5% and +0.1%
  // for its relu_squared, an elementwise kernel timed by the same harness;
  // at hidden 1,024-4,096 both undershoot alike (-26% to -4%, relu_squared
  // -19% to -6%), the harness's fixed microseconds. PyTorch's own norms
  // read the row twice: the framework's norm rate below.
  e.class_mem_frac.fill(1.0);
  e.class_mem_frac[static_cast<int>(KernelClass::kSoftmax)] = 0.80;
  e.class_mem_frac[static_cast<int>(KernelClass::kLoss)] = 0.80;
  e.class_mem_frac[static_cast<int>(KernelClass::kEmbedding)] = 0.60;
  e.class_mem_frac[static_cast<int>(KernelClass::kReduction)] = 0.90;
  e.class_mem_frac[static_cast<int>(KernelClass::kOptimizer)] = 0.90;
  // Launch: back-to-back queued kernels cost ~2.4-2.6 us each (gpu-benches
  // small-kernel fits, A100 2555 ns, H200 2433 ns); the profile's figure wins.
  e.launch_overhead_s = hw.launch_overhead_s > 0 ? hw.launch_overhead_s : 2.5e-6;
  // NCCL's Simple protocol reaches ~80% of link bandwidth as bus bandwidth
  // on large messages (nccl-tests#212, S. Jeaugey: H100's 450 GB/s line rate
  // less ~20% protocol overhead gives ~370 GB/s; NCCL's tuning caps A100's
  // at 235 of 300 GB/s).
  e.comm_frac = 0.80;
  return e;
}

double training_clock_fraction(const ResolveOptions& opt) {
  // Per end-to-end group: F / (1 + its median speed error when run at F),
  // F the current median, iterated until F settles (validate-published
  // --leave-one-group-out, 2026-12-06, one clock curve for every GPU: no
  // further power-capped factor; cuDNN attention for Megatron on Hopper; fp32
  // main gradients under Megatron, NeMo's rows with their optimizer's state;
  // stream-K paying an epilogue per tile it touches; re-voted 2026-12-06
  // after the framework's own elementwise and norm kernels took their
  // measured rate, framework_mem_frac (0.873 -> 0.901), then after the
  // epilogue's K steps followed each GPU's machine balance (-> 0.888);
  // re-voted 2026-12-07 after Composer's per-micro-batch training metrics
  // (frameworks/fsdp.yaml train_metrics) took llm-foundry's vote from 0.881
  // to 0.909, every group iterated at the new median until it settled:
  // 0.901, megatron_lm_readme's; eager LayerNorm's second backward kernel
  // then took llm-foundry's to 0.916, the median unchanged; the flash-attention
  // repo's rows taking their configs' micro-batches, 0.946 -> 0.943);
  // re-voted 2026-12-07 after eager elementwise kernels over contiguous
  // operands took the tuned rate (techniques::apply_fusion), which made
  // llm-foundry's and the eager torchtitan rows faster: llm-foundry 0.916 ->
  // 0.893, the median 0.901 -> 0.893, every group iterated until it settled;
  // then NeMo AutoModel's MoE rows took Transformer Engine's RMSNorm
  // (spec::RmsNormImpl, their BackendConfig), its vote 0.930 -> 0.874, the
  // median -> 0.888, korthikanti2022's; re-voted 2026-12-07 after
  // FlashAttention-2 took its own A100 fit (flashattention2_paper 0.887 ->
  // 0.881) and tuned norms the streaming rate (korthikanti2022 -> 0.887):
  // 0.887, korthikanti2022's, settled at the second iteration); re-voted
  // 2026-12-07 after FlashAttention-1 took its own kernel structure and fit
  // (flashattention_repo 0.940 -> 0.903) and llm-foundry's 2023 rows the
  // pre-MLIR Triton kernel they ran (0.893 -> 0.878): 0.884,
  // flashattention2_paper's, settled at the second iteration; NeMo's B200
  // long-context rows joined the validated set 2026-12-07 (a context-parallel
  // rank's causal attention run as the ring's steps, half its keys): their
  // median speed error at 0.884, -7.3%, voted 0.954, and the median of the
  // eight votes became 0.885, korthikanti2022's and flashattention2_paper's
  // mean; at 0.885 their error is -7.0%, the vote 0.885 / 0.930 = 0.952, the
  // median unchanged; the context-parallel ring's merge kernels
  // (frameworks/NAME.yaml cp_merge, 2026-12-08) then took nemo_24_07's vote
  // 0.862 -> 0.863 and nemo_long_context_b200's 0.952 -> 0.955, the median
  // unchanged.
  // One vote per source; the default is their median.
  struct Group {
    std::string_view name;
    double fraction;
  };
  static constexpr Group kGroups[] = {{"korthikanti2022", 0.886},    {"flashattention2_paper", 0.884},
                                      {"flashattention_repo", 0.903}, {"llm_foundry", 0.878},
                                      {"megatron_lm_readme", 0.898},  {"nemo_24_07", 0.863},
                                      {"nemo_automodel", 0.871},      {"nemo_long_context_b200", 0.955}};
  // The left-out group's slot stays above every vote, so sorting the whole
  // array puts the n votes first (a sort over a run-time prefix of a
  // fixed array draws a false -Warray-bounds from GCC 12's insertion sort).
  std::array<double, std::size(kGroups)> f;
  f.fill(std::numeric_limits<double>::max());
  std::size_t n = 0;
  for (const Group& g : kGroups)
    if (g.name != opt.without_group) f[n++] = g.fraction;
  std::sort(f.begin(), f.end());
  return n % 2 ? f[n / 2] : 0.5 * (f[n / 2 - 1] + f[n / 2]);
}

CostParams resolve(const spec::HardwareSpec& hw, const ResolveOptions& opt) {
  spec::EfficiencySpec e = default_efficiency(hw);
  CostParams c;
  // Sustained clock at the power limit; the peaks are quoted at boost.
  const double boost = hw.clock_hz > 0 ? hw.clock_hz : 0;
  const double clock = opt.locked_clock_hz > 0 ? opt.locked_clock_hz : spec::clock_at_power(hw, opt.power_limit_w);
  c.clock_ratio = boost > 0 ? std::clamp(clock / boost, 0.05, 1.0) : 1.0;
  c.training_clock_frac = opt.training_run && opt.locked_clock_hz <= 0 ? training_clock_fraction(opt) : 1.0;
  c.clock_scale = c.clock_ratio * c.training_clock_frac;
  if (opt.without_group == "mamf") {  // leave-one-group-out: the priors of main_loop
    const MainLoop ml = main_loop(hw);
    e.gemm_frac.fill(ml.prior16);
    for (spec::Peak p : {spec::Peak::kFp8, spec::Peak::kInt8, spec::Peak::kFp4})
      e.gemm_frac[static_cast<int>(p)] = ml.prior8 > 0 ? ml.prior8 : ml.prior16;
  }
  e.gemm_k0 = fit(e.gemm_k0, epilogue_k0(hw, kEpilogueExposedPrior), "deepgemm", opt);
  if (opt.use_calibration && hw.calibration.present) {
    const auto& k = hw.calibration.efficiency;
    for (int i = 0; i < spec::kPeakCount; ++i)
      if (k.gemm_frac[i] > 0) e.gemm_frac[i] = k.gemm_frac[i];
    if (k.gemm_tile_m > 0) e.gemm_tile_m = k.gemm_tile_m;
    if (k.gemm_tile_n > 0) e.gemm_tile_n = k.gemm_tile_n;
    if (k.gemm_k0 >= 0) e.gemm_k0 = k.gemm_k0;
    if (k.attention_frac > 0) e.attention_frac = k.attention_frac;
    if (k.hbm_frac > 0) e.hbm_frac = k.hbm_frac;
    if (k.hbm_latency_s > 0) e.hbm_latency_s = k.hbm_latency_s;
    for (int i = 0; i < spec::kKernelClassCount; ++i)
      if (k.class_mem_frac[i] > 0) e.class_mem_frac[i] = k.class_mem_frac[i];
    if (k.launch_overhead_s > 0) e.launch_overhead_s = k.launch_overhead_s;
    if (k.comm_frac > 0) e.comm_frac = k.comm_frac;
    c.calibrated = true;
  }
  for (int i = 0; i < spec::kPeakCount; ++i) c.peak_flop_per_s[i] = hw.peak_flop_per_s[i] * c.clock_scale;
  c.gemm_frac = e.gemm_frac;
  // A calibrated tile is the one tile; otherwise the best of kGemmTiles.
  const bool fixed_tile = opt.use_calibration && hw.calibration.present && hw.calibration.efficiency.gemm_tile_m > 0;
  c.tile_m = fixed_tile ? e.gemm_tile_m : 0;
  c.tile_n = fixed_tile ? e.gemm_tile_n : 0;
  c.gemm_k0 = std::max(0.0, e.gemm_k0);
  // Operand feed: a tile loads (tm + tn) rows per K step for 2 tm tn FLOP,
  // so its MMA issue loses ~lambda (1/tm + 1/tn): lambda = 4 makes 128x256
  // tiles 4.5% and 64x64 tiles 11% slower than the main loop (assumption:
  // the 128x128 vs 128x256 spread of CUTLASS's Hopper GEMMs, a few percent).
  c.gemm_lambda = 4;
  // Fill and drain of a GEMM kernel (first TMA/cp.async loads, the last
  // wave's epilogue): fitted on the memory-bound "deepgemm" rows (M = 64,
  // 15-120 MB of weights: 9.4-44.7 us, a fixed ~3 us above streaming);
  // prior 1 us, the memory-bound kernels' HBM latency below.
  c.gemm_latency_s = fit(3.0e-6, 1.0e-6, "deepgemm", opt);
  c.stream_k = hw.has_async_mma();  // cuBLAS on sm_90 / sm_100 schedules stream-K
  // and its sm_90 / sm_100 kernels are persistent: a grid of one CTA per SM
  // that walks the output tiles (pytorch#144974: "Newer matmul kernels, e.g.
  // those targeting Hopper GPUs, sometime use a persistent schedule").
  c.persistent_gemm = hw.has_async_mma();
  c.smem_per_sm = hw.smem_per_sm_bytes > 0 ? hw.smem_per_sm_bytes : 96.0 * 1024;

  // Fused attention, fitted on the "flashattention3_paper" rows (H100,
  // forward and backward, head dims 64 and 128, causal and not, 512 to 16K
  // tokens; 125 rows), per implementation: MMA efficiency of the main loop
  // and the softmax work that does not overlap it, in exponentials per score
  // element (H100: 16 exp per SM per clock against 4096 dense 16-bit FLOP,
  // so one exponential costs 256 MMA FLOP). Shared: a block's fixed work of
  // one main-loop iteration and a backward main loop at 0.8 of the
  // forward's MMA efficiency. Priors (FA3 group left out): the papers'
  // headline fractions - FlashAttention-2 reaches 50-73% of A100 peak
  // forward (Dao 2023), FA3 75% of H100 peak (Shah et al. 2024) - as MMA
  // efficiency with one exponential per score element not overlapped.
  const bool fa3_out = !opt.without_group.empty() && opt.without_group == "flashattention3_paper";
  auto att = [&](spec::AttentionKind k, double eta, double soft, double prior_eta, double prior_soft) {
    c.attention_frac[static_cast<int>(k)] = fa3_out ? prior_eta : eta;
    c.attention_softmax[static_cast<int>(k)] = fa3_out ? prior_soft : soft;
  };
  // FlashAttention-2 issues warp-level mma.sync, which reaches 0.65 of the
  // wgmma peak on Hopper (Luo et al. 2024: H800 mma.sync fp16 494.4 vs
  // wgmma 729.3 TFLOP/s); on Ampere/Ada mma.sync is the peak path. FA1 runs
  // at 0.6x FA2's main loop (Dao 2023: FA2 ~2x FA1 forward).
  // Re-fitted 2026-12-06 with the causal tail of attention_compute_s (list
  // scheduling): each implementation's forward MMA efficiency scaled by its
  // median forward speed error (FA2 0.65 -> 0.675, FA3 0.95 -> 0.98, cuDNN
  // 0.90 -> 0.95, Triton 0.50 -> 0.485), and the backward fractions below by
  // the inverse, so that the backward rows keep theirs (validate-published
  // --group flashattention3_paper: median 4.6% -> 4.2%; causal forward speed
  // bias +4.9% -> -1.4% beside the non-causal rows' -1.1%).
  // Dense 16-bit tensor FLOP per SM per clock at the quoted peak (Hopper
  // 4096: 989.4 TFLOP/s / (132 SMs x 1.83 GHz); Blackwell 8192).
  const double per_clock = hw.sm_count > 0 && boost > 0 ? hw.peak(spec::Peak::kBf16) / (hw.sm_count * boost) : 4096;
  // mma.sync keeps Hopper's per-SM rate where the asynchronous MMA doubles
  // it (sm_100's tcgen05): Blackwell's 8192 FLOP per SM-clock come only
  // from the asynchronous path, so a warp-level mma.sync kernel reaches
  // 0.65 x 4096 / 8192 = 0.325 of its dense peak (0.344 on B200, whose
  // 2,250 TFLOP/s are quoted below its 1,965 MHz boost).
  const double sync = hw.has_async_mma() ? 0.65 * std::min(1.0, 4096.0 / per_clock) : 1.0;
  att(spec::AttentionKind::kFlash2, 0.675 * sync, 0.625, 0.75 * sync, 1.0);
  if (!hw.has_async_mma()) {
    // FlashAttention-2 on the SMs it was written for (sm80 and the sm86 /
    // sm89 parts, which run the same mma.sync kernels), fitted on its own
    // A100 benchmark, the "flashattention2_benchmark" rows (the
    // flash-attention README's forward + backward bars, 21 rows: head dims
    // 64 and 128, causal and not, 512 to 16K tokens): MMA efficiency 0.90
    // of the main loop and 1.5 exponentials' worth of softmax work per
    // score element not overlapped (median |error| 11.4% -> 2.5%, speed
    // bias -11.2% -> -0.7%; the transfer from the Hopper fit above
    // through the mma.sync ratio had put every A100 row 5-22% slow, most
    // at long sequences and head dim 128). On Hopper the same kernels run
    // the legacy mma.sync path beside idle wgmma units, and the H100 rows
    // above set them. Priors (group left out): the FlashAttention-2
    // paper's top figure, 73% of the A100's peak (Dao 2023, abstract:
    // "50-73% of the theoretical maximum FLOPs/s"), taken as its forward at
    // head dim 128 (where the README's bars are fastest), with one
    // exponential per score element: 4 d / eta + 128 = 4 d / 0.73 at
    // d = 128 gives eta 0.89.
    const int f2 = static_cast<int>(spec::AttentionKind::kFlash2);
    c.attention_frac[f2] = fit(0.90, 0.89, "flashattention2_benchmark", opt);
    c.attention_softmax[f2] = fit(1.5, 1.0, "flashattention2_benchmark", opt);
  }
  {
    // FlashAttention-1 (flash-attn 1.0.x) issues the same mma.sync
    // instructions as FA2, so its main loop runs at FA2's efficiency on each
    // GPU; what it loses is the split of each key block across its warps
    // (Dao 2023, Sec. 3.3: FA1's "split-K" scheme makes every warp write its
    // partial result to shared memory, synchronize and add them up), costed
    // per query step in attention_compute_s, and an fp32 accumulator
    // re-read and re-written in global memory at every key block
    // (graph::flash_attention_forward). Fitted on the FA1 bars of the
    // flash-attention README's A100 and H100 forward + backward figures
    // (flashattention2_benchmark, 48 rows: head dims 64 and 128, causal and
    // not, 512 to 16K tokens): the exchange at 2.5x its bytes' time at the
    // banks' peak rate (fp32 partials stored and summed with bank conflicts
    // and a barrier each step) and 1.25 exponentials' worth of softmax work
    // per score element not overlapped (median |error| of the 48 rows:
    // 4.7%, speed bias -1.3%; FA1 priced at 0.6x FA2's Hopper main loop
    // with Alg. 1's tiles had the A100 bars -34% to +21%). Priors (group left out):
    // FA2's prior softmax, 1.0, and the exchange at 3x, where the model's
    // FA2 runs 2.0x FA1 (median over the figure's 44 shapes, predictions
    // only), the FA2 paper's summary of its benchmarks (Dao 2023, abstract:
    // "around 2x speedup compared to FlashAttention").
    const int f1 = static_cast<int>(spec::AttentionKind::kFlash), f2 = static_cast<int>(spec::AttentionKind::kFlash2);
    c.attention_frac[f1] = c.attention_frac[f2];
    c.attention_softmax[f1] = fit(1.25, 1.0, "flashattention2_benchmark", opt);
    c.fa1_exchange_cost = fit(2.5, 3.0, "flashattention2_benchmark", opt);
  }
  // FA3 (wgmma + TMA, softmax overlapped by ping-pong scheduling): Hopper
  // only (a plan asking for it elsewhere is rejected by engine::check_plan).
  att(spec::AttentionKind::kFlash3, 0.98, 0.875, 0.85, 1.0);
  // cuDNN's fused SDPA and Triton's fused attention: wgmma on Hopper.
  att(spec::AttentionKind::kCudnn, 0.95, 1.25, 0.85, 1.0);
  att(spec::AttentionKind::kTriton, 0.485, 0.5, 0.75 * sync, 1.0);
  {
    // A Triton FlashAttention on the mma.sync path (every Triton kernel on
    // Ampere and Ada; the pre-MLIR Triton compiler everywhere), fitted on
    // the Triton bars of the flash-attention README's A100 figure
    // (triton.ops.flash_attention, 24 rows of flashattention2_benchmark):
    // MMA efficiency 0.38 of the main loop and 0.25 exponentials per score
    // element not overlapped (median |error| 30.4% -> 5.1%, speed bias
    // +30.4% -> +4.0%: the Hopper fit above, carried over, had them too
    // fast everywhere). Priors (group left out): MMA efficiency 0.33, where
    // the model runs a Triton FlashAttention at 0.95 of FA1's speed (median
    // over the figure's shapes, predictions at the priors), as the Triton
    // port's author found it (flash-attn v1.0.9 flash_attn_triton.py:
    // "Overall Triton forward + backward is slightly slower than CUDA
    // forward + backward"), and the Hopper fit's softmax, 0.5. The legacy
    // kind (pre-MLIR Triton: mma.sync on every GPU) runs the same fraction
    // of the mma.sync peak on Hopper, 0.65 of wgmma's (Luo et al. 2024), as
    // FA2 was carried to Hopper before its own H100 rows. Holding instead
    // FA2's lower Hopper fraction (0.38 / 0.90 of FA2's 0.675 x 0.65) would
    // put it near FA1's measured H100 speed, 137 TFLOP/s at head dim 128
    // causal, where llm-foundry's 2023 H100 rows at 65K tokens need at
    // least about 185 (docs/accuracy.md, "llm-foundry's attention kernel").
    const int tr = static_cast<int>(spec::AttentionKind::kTriton);
    const int tl = static_cast<int>(spec::AttentionKind::kTritonLegacy);
    const double eta_sync = fit(0.38, 0.33, "flashattention2_benchmark", opt);
    const double soft_sync = fit(0.25, 0.5, "flashattention2_benchmark", opt);
    if (!hw.has_async_mma()) c.attention_frac[tr] = eta_sync, c.attention_softmax[tr] = soft_sync;
    c.attention_frac[tl] = eta_sync * sync;
    c.attention_softmax[tl] = soft_sync;
  }
  att(spec::AttentionKind::kNaive, 0, 0, 0, 0);  // naive attention is separate GEMM and softmax kernels
  if (opt.use_calibration && hw.calibration.present && hw.calibration.efficiency.attention_frac > 0)
    for (auto k : {spec::AttentionKind::kFlash, spec::AttentionKind::kFlash2, spec::AttentionKind::kFlash3,
                   spec::AttentionKind::kCudnn, spec::AttentionKind::kTriton, spec::AttentionKind::kTritonLegacy})
      c.attention_frac[static_cast<int>(k)] = e.attention_frac;
  c.attention_block_iters = 1.0;
  // Backward MMA efficiency relative to the forward's: 0.8 for the
  // mma.sync kernels (FA2 rows: d64 291, d128 322 TFLOP/s backward); 0.7 for
  // the wgmma ones, whose backward cannot hide its softmax and dQ
  // accumulation as their forward does (FA3 474 / 561, cuDNN 433 / 516).
  // Re-fitted with the forward (above): FA2 / FA1 0.8 x 0.65 / 0.675 = 0.77,
  // FA3 0.7 x 0.95 / 0.98 = 0.68, cuDNN 0.7 x 0.90 / 0.95 = 0.665.
  // Prior (FA3 group left out): 0.8 for all.
  c.attention_bwd_frac.fill(0.8);
  if (!fa3_out) {
    c.attention_bwd_frac[static_cast<int>(spec::AttentionKind::kFlash2)] = 0.77;
    c.attention_bwd_frac[static_cast<int>(spec::AttentionKind::kFlash)] = 0.77;
    c.attention_bwd_frac[static_cast<int>(spec::AttentionKind::kFlash3)] = 0.68;
    c.attention_bwd_frac[static_cast<int>(spec::AttentionKind::kCudnn)] = 0.665;
  }
  if (hw.generation == spec::Generation::kBlackwell) {
    // cuDNN's fused attention on sm_100 issues its MMAs asynchronously
    // (tcgen05, accumulators in tensor memory), so the softmax warps'
    // exponentials run beside them: fitted on the cuDNN rows of NVIDIA's
    // cudnn-frontend SDPA benchmarks (B200, cuDNN 9.10.2, causal, 8K-128K
    // tokens: "cudnn_frontend_sdpa_b200"; GB200, cuDNN 9.22, causal and not,
    // 2K-32K: "cudnn_frontend_sdpa"; head dim 128), the main loop kept at
    // Hopper's 0.95: 0.5 exponentials per score element not overlapped
    // (Hopper's kernels: 1.25) and a backward main loop at 0.6 of the
    // forward's (SMEM-bound, FlashAttention-4's analysis, arXiv 2603.05451),
    // where the Hopper fit carried over had the forward 30-60% slow. GB300
    // (Blackwell Ultra, twice the exponentials per clock: the profile's
    // compute.exp_per_sm_clock) is not fitted: its rows check the term.
    // Left out, each group takes the other's fit (B200 alone: 0.5625 and
    // 0.55; GB200 alone: 0.4375 and 0.625).
    const int cu = static_cast<int>(spec::AttentionKind::kCudnn);
    const bool b200_out = opt.without_group == "cudnn_frontend_sdpa_b200";
    const bool gb200_out = opt.without_group == "cudnn_frontend_sdpa";
    c.attention_softmax[cu] = b200_out ? 0.4375 : gb200_out ? 0.5625 : 0.5;
    c.attention_bwd_frac[cu] = b200_out ? 0.625 : gb200_out ? 0.55 : 0.6;
  }
  // Tensor FLOP per exponential per SM-clock: the 16-bit dense peak per SM
  // per clock over the exponentials the special-function units return per SM
  // per clock (the profile's compute.exp_per_sm_clock: 16, CUDA C Programming
  // Guide, arithmetic instruction throughput, cc 8.x-10.x; 32 on Blackwell Ultra).
  c.mma_flop_per_exp = std::max(1.0, per_clock / hw.exp_per_sm_clock);
  for (int i = 0; i < spec::kKernelClassCount; ++i) c.mem_frac[i] = e.hbm_frac * e.class_mem_frac[i];
  // A framework's own elementwise and norm kernels (graph::kImplFramework:
  // PyTorch's eager TensorIterator over a strided or broadcast operand, its
  // native norm kernels, TorchScript-fused ops) stream at a fraction of a
  // tuned kernel's rate (graph::kImplTuned: Triton from torch.compile or
  // Liger, hand-written streaming kernels, and PyTorch's vectorized loop
  // over contiguous operands: techniques::apply_fusion).
  // Fitted on the "liger_kernel" rows (Liger-Kernel's benchmark data, H100
  // and A100 forward passes, 4096-8192 tokens, hidden 1024-32768): median
  // speed error 0 over the framework's rows of each class (validate-published
  // --group liger_kernel, 2026-12-06): elementwise 0.612 (Megatron's
  // bias_swiglu_impl and eager F.silu(y1) * y2: 12 rows, 54% of the HBM
  // peak), norm 0.625 (torch.nn.LayerNorm fp32 on A100 and H100,
  // torch.nn.RMSNorm bf16: 15 rows, 55%; 0.735 of the 0.85 norm multiplier
  // the tuned norms had until 2026-12-07). Priors (group left
  // out): norm 2/3, PyTorch's LayerNorm and RMSNorm forward reading their
  // input twice where a tuned kernel reads it once (aten/src/ATen/native/
  // cuda/layer_norm_kernel.cu, vectorized_layer_norm_kernel_impl: one block
  // per row, compute_stats reads the row, then the output loop reads it
  // again; the two-kernel path, RowwiseMomentsCUDAKernel then
  // LayerNormForwardCUDAKernel, likewise): 3 passes over the activation
  // where 2 are costed; elementwise 1, no independent figure.
  c.framework_mem_frac.fill(1.0);
  c.framework_mem_frac[static_cast<int>(KernelClass::kElementwise)] = fit(0.612, 1.0, "liger_kernel", opt);
  c.framework_mem_frac[static_cast<int>(KernelClass::kNorm)] = fit(0.625, 2.0 / 3.0, "liger_kernel", opt);
  c.sms = std::max(1, hw.sm_count);
  c.hbm_bytes_per_s = hw.hbm_bytes_per_s;
  c.hbm_latency_s = e.hbm_latency_s;
  c.l2_bytes = hw.l2_bytes;
  c.sram_bytes_per_s = hw.sram_bytes_per_s * c.clock_scale;
  c.launch_s = e.launch_overhead_s;
  // CUDA graphs replay queued kernels at ~0.6 us per node (published.yaml
  // launch_rtx5070ti_laptop_chain: 0.58 us per graph node).
  c.graph_launch_s = std::min(c.launch_s, 0.6e-6);
  c.vector_flop_per_s = std::max(hw.peak(spec::Peak::kFp32) * c.clock_scale, 1e9);
  c.gpus_per_node = std::max(1, hw.interconnect.gpus_per_node);
  c.intra_bytes_per_s = hw.interconnect.intra_node_bytes_per_s > 0 ? hw.interconnect.intra_node_bytes_per_s : 25e9;
  c.intra_latency_s = hw.interconnect.intra_node_latency_s > 0 ? hw.interconnect.intra_node_latency_s : 5e-6;
  c.inter_bytes_per_s = hw.interconnect.inter_node_bytes_per_s > 0 ? hw.interconnect.inter_node_bytes_per_s : 12.5e9;
  c.inter_latency_s = hw.interconnect.inter_node_latency_s > 0 ? hw.interconnect.inter_node_latency_s : 10e-6;
  c.comm_frac = e.comm_frac;
  // Through the NICs NCCL sustains ~95% of line rate (nccl#689, S. Jeaugey:
  // a DGX A100's 8 x 200 Gb/s reach 190 of 200 GB/s).
  c.net_frac = 0.95;
  // NVLS bus efficiency relative to the ring's (NCCL src/graph/tuning.cc
  // nvlsEfficiency: Hopper 0.85, Blackwell 0.74). With the NVLS all-reduce's
  // (n+1)/n S per GPU it gives 8 x H100 a bus bandwidth of 450 x 0.8 x 0.85
  // x 14/9 = 476 GB/s (nccl-tests#212: "a peak busBw of ~480GB/s"; H800:
  // 200 x 0.8 x 0.85 x 14/9 = 212 against 215 measured, nccl#1374).
  c.nvls_frac = !hw.interconnect.nvls ? 0.0 : hw.generation == spec::Generation::kBlackwell ? 0.74 : 0.85;
  // Channels, one thread block (one SM) each: NCCL launches 2 per NVLink to
  // saturate it (nccl#1703, an NCCL maintainer), NVLink 3/4 lanes being 25 GB/s a
  // direction, at most 32 (MAXCHANNELS): A100 300 GB/s -> 24, H800 200 ->
  // 16 (its logs: "16 coll channels", nccl#892), H100 / B200 -> 32; PCIe
  // 25 GB/s -> 2 (nccl#689: "a PCI system ... should just launch 2 SMs").
  // NVLS needs no more than 16 for peak bandwidth (NCCL source comment,
  // nccl#1041). A profile's comm_channels wins (RCCL runs more on MI300).
  c.comm_channels = hw.interconnect.comm_channels > 0
                        ? hw.interconnect.comm_channels
                        : std::clamp(std::round(2.0 * c.intra_bytes_per_s / 25e9), 2.0, 32.0);
  c.nvls_channels = 16;
  static std::atomic<std::uint64_t> next_id{1};
  c.id = next_id.fetch_add(1, std::memory_order_relaxed);
  return c;
}

std::string_view name(Bound b) {
  switch (b) {
    case Bound::kCompute: return "compute";
    case Bound::kMemory: return "memory";
    case Bound::kSram: return "sram";
    case Bound::kLatency: return "latency";
    case Bound::kNetwork: return "network";
  }
  return "memory";
}

double collective_bytes_per_gpu(graph::Collective kind, double bytes, double n) {
  if (n <= 1) return 0;
  switch (kind) {
    case graph::Collective::kAllReduce: return 2.0 * (n - 1) / n * bytes;
    case graph::Collective::kAllGather:
    case graph::Collective::kReduceScatter:
    case graph::Collective::kAllToAll: return (n - 1) / n * bytes;
    case graph::Collective::kP2p:
    case graph::Collective::kNodeAllToAll: return bytes;
  }
  return bytes;
}

std::string_view name(CommAlgorithm a) {
  switch (a) {
    case CommAlgorithm::kRing: return "ring";
    case CommAlgorithm::kTree: return "tree";
    case CommAlgorithm::kNvls: return "nvls";
    case CommAlgorithm::kNvlsTree: return "nvls_tree";
    case CommAlgorithm::kDeepEp: return "deepep";
  }
  return "ring";
}

std::string_view name(CommProtocol p) {
  switch (p) {
    case CommProtocol::kLL: return "LL";
    case CommProtocol::kLL128: return "LL128";
    case CommProtocol::kSimple: return "Simple";
  }
  return "Simple";
}

namespace {

/// NCCL's protocols relative to Simple (NCCL 2.18-2.19 src/graph/tuning.cc;
/// the line formats in src/device/prims_ll.h and prims_ll128.h):
///  - bus bandwidth: LL stores 8 data bytes with 8 flag bytes per 16-byte
///    line and polls them, costed at 1/4 of Simple's (ring all-reduce and
///    any inter-node ring); LL128 carries 120 data bytes per 128: 0.92;
///  - one step's latency, as a share of Simple's: hwLat NVLink ring
///    {0.6, 1.9, 3.4} us, network {2.7, 4.0, 14.0} us;
///  - a call's base latency (launch, setup): baseLat ring {6.6, 14.0, 8.4} us.
struct Protocol {
  CommProtocol id;
  double bw_frac, step_link, step_net, base_s;
};
constexpr Protocol kProtocols[] = {
    {CommProtocol::kLL, 0.25, 0.6 / 3.4, 2.7 / 14.0, 6.6e-6},
    {CommProtocol::kLL128, 0.92, 1.9 / 3.4, 4.0 / 14.0, 14.0e-6},
    {CommProtocol::kSimple, 1.0, 1.0, 1.0, 8.4e-6},
};
/// NVLS: the multimem reduction's round trip through NVSwitch, one latency
/// per call (tuning.cc hwLat NVLink NVLS: 23 us in NCCL 2.19, 25 us later;
/// base 0).
constexpr double kNvlsLatency_s = 25e-6;
/// NCCL's tree all-reduce reaches 0.92 of the ring's per-channel bandwidth
/// (tuning.cc: busBw = min(busBw * .92, ...)).
constexpr double kTreeFrac = 0.92;
/// NCCL gives a channel work only while the message keeps each of its 512
/// threads busy with 64 bytes (Simple): 32 KiB per channel (enqueue.cc,
/// channels dropped while bytes < channels x threads x threshold).
constexpr double kBytesPerChannel = 32.0 * 1024;
/// SMs DeepEP's kernels hold (DeepSeek-V3 report Sec. 3.2.2: 20 SMs for
/// the dispatch and combine, split into 10 communication channels).
constexpr double kDeepEpSms = 20;

/// One way to run a collective: fixed latency, steps over the link and the
/// network (in Simple-protocol steps), and the bytes through each GPU's link
/// and each NIC share, at the algorithm's share of the links' rates.
struct Candidate {
  CommAlgorithm algorithm = CommAlgorithm::kRing;
  bool base = true;        // pays the protocol's base latency (NVLS does not)
  bool simple_only = false;
  bool ll128 = true;       // p2p and all-to-all run LL or Simple only
  double fixed_s = 0;
  double link_steps = 0, net_steps = 0;
  double link_bytes = 0, link_frac = 1;
  double net_bytes = 0, net_frac = 1;
  double channels = 0;
};

}  // namespace

CollectiveCost collective_cost(graph::Collective kind, double bytes, double n, double span, const CostParams& c,
                               double link_bytes) {
  using graph::Collective;
  CollectiveCost out;
  if (n <= 1 && kind != Collective::kP2p) return out;
  if (kind == Collective::kP2p) n = 2;
  // Ranks per node g and nodes N: consecutive ranks fill a node; a group
  // with stride s = span / n holds G / s ranks of each node it touches.
  const double G = c.gpus_per_node;
  double g = n, N = 1;
  if (span > G) {
    const double stride = std::max(1.0, span / n);
    g = std::clamp(std::floor(G / stride), 1.0, n);
    N = std::ceil(n / g);
  }
  const double S = bytes;
  const double moved = collective_bytes_per_gpu(kind, S, n);
  // Of a ring's bytes: across nodes each channel's ring leaves a node from
  // one of its g GPUs, so 1/g goes through the NIC and (g-1)/g over the link.
  const double link_share = N > 1 ? (g - 1) / g : 1.0, nic_share = N > 1 ? 1 / g : 0.0;
  // Ring and tree channels: the profile's inside a node; across nodes two
  // per NIC in use (NCCL, nccl#689: a DGX's 8 NICs run 16 channels).
  const double ring_channels = N > 1 ? std::min(c.comm_channels, 2 * g) : c.comm_channels;
  std::array<Candidate, 3> cand;
  int count = 0;
  auto add = [&]() -> Candidate& { return cand[count++] = Candidate{}; };
  switch (kind) {
    case Collective::kAllReduce:
    case Collective::kAllGather:
    case Collective::kReduceScatter: {
      const double steps = kind == Collective::kAllReduce ? 2 * (n - 1) : n - 1;
      const double net_steps = kind == Collective::kAllReduce ? 2 * (N - 1) : N - 1;
      Candidate& ring = add();
      ring.link_steps = steps - net_steps, ring.net_steps = net_steps;
      ring.link_bytes = moved * link_share, ring.net_bytes = moved * nic_share;
      ring.channels = ring_channels;
      if (kind == Collective::kAllReduce && N > 1) {
        Candidate& tree = add();
        tree.algorithm = CommAlgorithm::kTree;
        tree.link_steps = 2 * (g - 1), tree.net_steps = 2 * std::ceil(std::log2(N));
        tree.link_bytes = 2 * S * link_share, tree.net_bytes = 2 * S / g;
        tree.link_frac = tree.net_frac = kTreeFrac;
        tree.channels = ring_channels;
      }
      if (c.nvls_frac > 0 && g > 1 && (N == 1 || kind == Collective::kAllReduce)) {
        Candidate& nv = add();
        nv.algorithm = N == 1 ? CommAlgorithm::kNvls : CommAlgorithm::kNvlsTree;
        nv.base = false, nv.simple_only = true, nv.fixed_s = kNvlsLatency_s;
        // Reduce-scatter: NVSwitch reads every GPU's whole buffer; all-gather:
        // it writes every GPU's; all-reduce: both halves, S/g each way more.
        nv.link_bytes = kind == Collective::kAllReduce ? (g + 1) / g * S : S;
        nv.link_frac = c.nvls_frac;
        if (N > 1) {  // NVLSTree: each GPU heads a 1/g slice of an inter-node tree
          nv.net_steps = 2 * std::ceil(std::log2(N));
          nv.net_bytes = 2 * S / g, nv.net_frac = kTreeFrac;
        }
        nv.channels = c.nvls_channels;
      }
      break;
    }
    case Collective::kAllToAll: {
      Candidate& a = add();
      a.ll128 = false;
      a.link_steps = g - 1, a.net_steps = n - g;
      a.link_bytes = (g - 1) / n * S, a.net_bytes = (n - g) / n * S;
      a.channels = ring_channels;
      break;
    }
    case Collective::kNodeAllToAll: {
      Candidate& a = add();
      a.algorithm = CommAlgorithm::kDeepEp;
      a.simple_only = true;
      a.link_steps = g - 1, a.net_steps = N - 1;
      a.link_bytes = link_bytes, a.net_bytes = N > 1 ? S : 0;
      a.channels = kDeepEpSms;
      break;
    }
    case Collective::kP2p: {
      Candidate& a = add();
      a.ll128 = false;
      (N > 1 ? a.net_steps : a.link_steps) = 1;
      (N > 1 ? a.net_bytes : a.link_bytes) = S;
      a.channels = ring_channels;
      break;
    }
  }
  const double link_bw = c.intra_bytes_per_s * c.comm_frac, net_bw = c.inter_bytes_per_s * c.net_frac;
  out.time_s = std::numeric_limits<double>::infinity();
  for (int i = 0; i < count; ++i) {
    const Candidate& a = cand[i];
    for (const Protocol& p : kProtocols) {
      if ((a.simple_only && p.id != CommProtocol::kSimple) || (!a.ll128 && p.id == CommProtocol::kLL128)) continue;
      const double latency = (a.base ? p.base_s : 0) + a.fixed_s + a.link_steps * c.intra_latency_s * p.step_link +
                             a.net_steps * c.inter_latency_s * p.step_net;
      const double link_s = a.link_bytes > 0 ? a.link_bytes / (link_bw * a.link_frac * p.bw_frac) : 0;
      const double net_s = a.net_bytes > 0 ? a.net_bytes / (net_bw * a.net_frac * p.bw_frac) : 0;
      const double t = latency + std::max(link_s, net_s);
      if (t < out.time_s) {
        out.time_s = t;
        out.algorithm = a.algorithm;
        out.protocol = p.id;
        out.channels = a.channels;
      }
    }
  }
  out.channels = kind == Collective::kNodeAllToAll
                     ? out.channels
                     : std::clamp(std::ceil(S / kBytesPerChannel), 1.0, std::max(1.0, out.channels));
  out.sm_fraction = std::min(1.0, out.channels / c.sms);
  return out;
}

double collective_bus_bytes_per_s(graph::Collective kind, double bytes, double n, double span, const CostParams& c) {
  const double t = collective_time(kind, bytes, n, span, c);
  return t > 0 ? collective_bytes_per_gpu(kind, bytes, n) / t : 0;
}

double ridge_point(const CostParams& c, spec::Peak p) {
  return c.peak_flop_per_s[static_cast<int>(p)] / c.hbm_bytes_per_s;
}

namespace {

/// Output tiles a GEMM may run with (CUTLASS / cuBLAS threadblock shapes).
constexpr std::array<std::array<double, 2>, 6> kGemmTiles = {
    {{64, 64}, {64, 128}, {128, 64}, {128, 128}, {128, 256}, {256, 128}}};
constexpr std::array<double, 7> kSplits = {2, 3, 4, 6, 8, 12, 16};

/// Compute time of a GEMM (see the header) and its extra HBM bytes (split-K
/// partial sums); fills the tile detail of r.
double gemm_compute_s(const graph::Kernel& k, const CostParams& c, KernelCost& r, double& extra_bytes) {
  const int pk = static_cast<int>(spec::peak_of(k.dtype));
  const double peak = c.peak_flop_per_s[pk] > 0 ? c.peak_flop_per_s[pk] : c.vector_flop_per_s;
  const double eta = c.gemm_frac[pk] > 0 ? c.gemm_frac[pk] : 1.0;
  const double per_sm = peak * eta / c.sms;
  // k0 is in K steps at the 16-bit rate: a narrower type's K steps are faster.
  const int p16 = static_cast<int>(spec::Peak::kBf16);
  const double k0 = c.gemm_k0 * (c.peak_flop_per_s[p16] > 0 ? std::max(1.0, peak / c.peak_flop_per_s[p16]) : 1.0);
  const double m = std::max(1.0, k.gemm.m), n = std::max(1.0, k.gemm.n), kk = std::max(1.0, k.gemm.k);
  const double batch = std::max(1.0, k.gemm.batch);
  double best = std::numeric_limits<double>::infinity();
  auto consider = [&](double tm, double tn, double split, double time, double tiles, double waves, double extra) {
    if (time + extra / (c.hbm_bytes_per_s * c.mem_frac[static_cast<int>(KernelClass::kGemm)]) >= best) return;
    best = time + extra / (c.hbm_bytes_per_s * c.mem_frac[static_cast<int>(KernelClass::kGemm)]);
    r.tile_m = tm, r.tile_n = tn, r.split_k = split, r.blocks = tiles, r.waves = waves;
    extra_bytes = extra;
  };
  auto one_tile = [&](double tm, double tn) {
    const double feed = 1.0 / (1.0 + c.gemm_lambda * (1.0 / tm + 1.0 / tn));
    const double rate = per_sm * feed;  // FLOP/s per SM in this tile's main loop
    const double tiles = std::ceil(m / tm) * std::ceil(n / tn) * batch;
    const double flop_k = 2.0 * tm * tn;  // per K step
    // Data-parallel: whole waves of tiles.
    const double waves = std::ceil(tiles / c.sms);
    consider(tm, tn, 1, waves * flop_k * (kk + k0) / rate, tiles, waves, 0);
    // Split-K: too few tiles for the SMs; partial sums in fp32 written and read back.
    if (tiles < c.sms)
      for (double s : kSplits) {
        if (kk / s < 128) break;
        const double w = std::ceil(tiles * s / c.sms);
        consider(tm, tn, s, w * flop_k * (kk / s + k0) / rate, tiles * s, w, 2.0 * s * m * n * batch * 4.0);
      }
    // Stream-K: each SM takes an equal share of all tiles' K steps, T =
    // tiles K / SMs. A share is a contiguous run of K steps across tiles, so
    // it touches ceil(T / K) + 1 tiles at most and pays each one's prologue
    // and epilogue (CUTLASS's stream-K: a unit's K range is split over tile
    // boundaries, each tile touched is loaded, accumulated and written or
    // fixed up). A share within one tile pays two; many tiles per SM pay one
    // each, as whole waves do.
    if (c.stream_k && tiles > c.sms) {
      const double share = tiles * kk / c.sms;
      consider(tm, tn, 0, (share + (std::ceil(share / kk) + 1.0) * k0) * flop_k / rate, tiles, tiles / c.sms, 0);
    }
  };
  if (c.tile_m > 0 && c.tile_n > 0) {
    // A calibrated tile is the measured kernel's: data-parallel waves only.
    const double tiles = std::ceil(m / c.tile_m) * std::ceil(n / c.tile_n) * batch;
    const double waves = std::ceil(tiles / c.sms);
    const double feed = 1.0 / (1.0 + c.gemm_lambda * (1.0 / c.tile_m + 1.0 / c.tile_n));
    consider(c.tile_m, c.tile_n, 1, waves * 2.0 * c.tile_m * c.tile_n * (kk + k0) / (per_sm * feed), tiles, waves, 0);
  } else {
    for (const auto& t : kGemmTiles) {
      // Two pipeline stages of A and B K-slices (128 bytes deep) must fit shared memory.
      if (2.0 * (t[0] + t[1]) * 128.0 > c.smem_per_sm) continue;
      one_tile(t[0], t[1]);
    }
    if (!std::isfinite(best)) one_tile(64, 64);
  }
  r.efficiency = eta;
  r.basis = c.calibrated ? "calibration block (gemm_efficiency)"
                         : "main-loop efficiency fitted on the published best-matmul (MAMF) rows of this GPU generation";
  return best - extra_bytes / (c.hbm_bytes_per_s * c.mem_frac[static_cast<int>(KernelClass::kGemm)]) +
         c.gemm_latency_s;
}

/// The tile choice depends only on the shape, the dtype and the resolved
/// parameters, and a step has a few dozen distinct GEMM shapes: the caller's
/// two-way KernelCache (fixed size, no allocation) keeps the search
/// over tiles off the hot path.
double attention_compute_s(const graph::Kernel& k, const CostParams& c, KernelCost& r);

/// What a GEMM's or fused attention's compute time depends on beyond its
/// four shape numbers and dtype: 0 for a GEMM; for attention the
/// implementation, the pass and the causal mask.
std::uint32_t shape_tag(const graph::Kernel& k) {
  if (k.cls != KernelClass::kAttention) return 0;
  return 1u | (static_cast<std::uint32_t>(k.impl) << 1) |
         (k.phase == spec::Phase::kBackward ? 1u << 5 : 0u) | (k.has(graph::kCausal) ? 1u << 6 : 0u);
}

/// A cache slot from a key hash: MurmurHash3's 64-bit finaliser (fmix64),
/// so every bit of the key reaches the slot bits. The keys are doubles
/// whose low mantissa bits are mostly zero (8192.0, 1.5e9 bytes); the
/// FNV-style multiply alone leaves the low bits of the hash zero too, and
/// every key landed in one slot.
std::uint64_t mix(std::uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

/// The entry for a key in a two-way table: of the two slots the mixed hash
/// names (its low and high halves), the one holding the key, else the one
/// to fill: an empty or stale one, else the second (two keys that share a
/// first slot both stay: one direct-mapped slot made two collectives of
/// every Llama-3-70B predict evict each other, each costed afresh on every
/// evaluation).
template <class Entry, std::size_t N, class Same>
Entry& cache_entry(std::array<Entry, N>& table, std::uint64_t h, std::uint64_t id, Same same, bool& hit) {
  const std::uint64_t m = mix(h);
  Entry& a = table[static_cast<std::size_t>(m % N)];
  Entry& b = table[static_cast<std::size_t>((m >> 32) % N)];
  hit = true;
  if (id != 0 && a.id == id && same(a)) return a;
  if (id != 0 && b.id == id && same(b)) return b;
  hit = false;
  return a.id != id ? a : b.id != id ? b : b;
}

/// The compute time of a GEMM or fused attention kernel, costed afresh.
double uncached_compute_s(const graph::Kernel& k, const CostParams& c, KernelCost& r, double& extra) {
  return shape_tag(k) == 0 ? gemm_compute_s(k, c, r, extra) : attention_compute_s(k, c, r);
}

/// The compute time of a GEMM or fused attention kernel through the
/// caller's cache keyed by its shape (a search costs the same few shapes
/// for every layout; the tile search runs once per shape).
double shape_compute_cached(const graph::Kernel& k, const CostParams& c, KernelCost& r, double& extra,
                            KernelCache& cache) {
  const auto bits = [](double v) { return std::bit_cast<std::uint64_t>(v); };
  const std::uint32_t tag = shape_tag(k);
  // Each word times its own odd constant, then xor-ed: independent
  // multiplies rather than one serial chain (cache_entry mixes the result).
  const std::uint64_t h = (c.id * 0x9E3779B97F4A7C15ull) ^ (bits(k.gemm.m) * 0xFF51AFD7ED558CCDull) ^
                          (bits(k.gemm.n) * 0xC4CEB9FE1A85EC53ull) ^ (bits(k.gemm.k) * 0xD6E8FEB86659FD93ull) ^
                          (bits(k.gemm.batch) * 0xA0761D6478BD642Full) ^
                          ((static_cast<std::uint64_t>(k.dtype) << 8 | tag) * 0xE7037ED1A0B428DBull);
  bool hit = false;
  KernelCache::Shape& e = cache_entry(
      cache.shapes, h, c.id,
      [&](const KernelCache::Shape& x) {
        return x.m == k.gemm.m && x.n == k.gemm.n && x.k == k.gemm.k && x.batch == k.gemm.batch &&
               x.dtype == k.dtype && x.tag == tag && (tag == 0 || x.flops == k.flops);
      },
      hit);
  if (hit) {
    r.tile_m = e.tile_m, r.tile_n = e.tile_n, r.split_k = e.split_k;
    r.blocks = e.blocks, r.waves = e.waves, r.efficiency = e.efficiency;
    r.basis = e.basis;
    extra = e.extra;
    return e.compute_s;
  }
  const double t = uncached_compute_s(k, c, r, extra);
  e.id = c.id, e.m = k.gemm.m, e.n = k.gemm.n, e.k = k.gemm.k, e.batch = k.gemm.batch, e.dtype = k.dtype;
  e.tag = tag, e.flops = k.flops;
  e.compute_s = t, e.extra = extra;
  e.tile_m = r.tile_m, e.tile_n = r.tile_n, e.split_k = r.split_k;
  e.blocks = r.blocks, e.waves = r.waves, e.efficiency = r.efficiency;
  e.basis = r.basis;
  return t;
}

/// What a GEMM beside NCCL's channels loses (cost_kernel): its grid of tiles
/// fills the SMs left wave by wave, or, where cuBLAS GEMMs are persistent
/// (one CTA per SM), the CTAs that find their SM held wait for a second
/// wave: the GEMM takes ceil(SMs / free SMs) times its time alone.
double nccl_gemm_loss(const CollectiveCost& cc, const CostParams& c) {
  const double free_sms = c.sms - cc.channels;
  return !c.persistent_gemm || cc.channels <= 0 ? cc.sm_fraction
         : free_sms >= 1                       ? std::max(cc.sm_fraction, 1.0 - 1.0 / std::ceil(c.sms / free_sms))
                                               : 1.0;
}

/// collective_cost through the caller's cache, as the GEMM cache (a search
/// costs the same few collectives of a layout again and again), with its
/// nccl_gemm_loss (kept with it: both are fixed by the entry's CostParams).
CollectiveCost collective_cost_cached(graph::Collective kind, double bytes, double n, double span,
                                      double link_bytes, const CostParams& c, KernelCache& cache, double& gemm_loss) {
  // Hash the values' bits (a byte count can exceed what an integer holds),
  // each times its own odd constant: independent multiplies, not a chain.
  const std::uint64_t h = (c.id * 0x9E3779B97F4A7C15ull) ^
                          (std::bit_cast<std::uint64_t>(bytes) * 0xFF51AFD7ED558CCDull) ^
                          (std::bit_cast<std::uint64_t>(n) * 0xC4CEB9FE1A85EC53ull) ^
                          (std::bit_cast<std::uint64_t>(span) * 0xD6E8FEB86659FD93ull) ^
                          (static_cast<std::uint64_t>(kind) * 0xA0761D6478BD642Full) ^
                          (std::bit_cast<std::uint64_t>(link_bytes) * 0xE7037ED1A0B428DBull);
  bool hit = false;
  KernelCache::Collective& e = cache_entry(
      cache.collectives, h, c.id,
      [&](const KernelCache::Collective& x) {
        return x.kind == kind && x.bytes == bytes && x.n == n && x.span == span && x.link_bytes == link_bytes;
      },
      hit);
  if (hit) {
    gemm_loss = e.gemm_loss;
    return e.cost;
  }
  const CollectiveCost cc = collective_cost(kind, bytes, n, span, c, link_bytes);
  gemm_loss = nccl_gemm_loss(cc, c);
  e.id = c.id, e.kind = kind, e.bytes = bytes, e.n = n, e.span = span, e.link_bytes = link_bytes, e.cost = cc;
  e.gemm_loss = gemm_loss;
  return cc;
}

/// Compute time of a fused attention kernel (see the header); fills the tile detail of r.
double attention_compute_s(const graph::Kernel& k, const CostParams& c, KernelCost& r) {
  if (const double cp = graph::context_parallel_steps(k.gemm.m, k.gemm.n, k.has(graph::kCausal)); cp > 1) {
    // More keys than queries, causal: a context-parallel rank (the graph's
    // only such kernel: s / cp queries against all s keys). Its queries are
    // two of the sequence's 2 cp chunks, one from the head and one from the
    // tail (Megatron-LM megatron/training/utils.py get_batch_on_this_cp_rank:
    // "chunk_0 and chunk_3 are assigned to GPU0"; torch's
    // _HeadTailLoadBalancer), and the ring runs cp steps, one fused-attention
    // call each (Transformer Engine's AttnFuncWithCPAndKVP2P; AttnFuncWithCP
    // at tag v1.4): step 0 the rank's own two chunks, causal, a square of
    // its s / cp tokens; each other step either both query chunks against
    // the first key chunk it received or the tail chunk against both, s / cp
    // x s / (2 cp) unmasked. In all half the keys, forward and backward
    // alike (the backward kernel keeps the forward's shape); read as one
    // block at the end of the sequence the forward was charged (1 - 1 / 2cp)
    // of them, 1.94x the work at CP 16.
    graph::Kernel diag = k, off = k;
    diag.gemm.n = k.gemm.m;
    off.gemm.n = k.gemm.m / 2;
    off.flags = static_cast<std::uint16_t>(off.flags & ~graph::kCausal);
    KernelCost rest;
    const double t = attention_compute_s(diag, c, r);
    return t + (cp - 1) * attention_compute_s(off, c, rest);
  }
  graph::AttentionShape s;  // from the kernel's four shape numbers (graph.hpp)
  s.q_len = k.gemm.m, s.kv_len = k.gemm.n, s.head_dim = k.gemm.k;
  s.batch = k.gemm.batch, s.heads = 1, s.kv_heads = 1;
  s.causal = k.has(graph::kCausal);
  const int kind = std::min<int>(k.impl, spec::kAttentionKindCount - 1);
  const int pk = static_cast<int>(spec::peak_of(k.dtype));
  const double peak = c.peak_flop_per_s[pk] > 0 ? c.peak_flop_per_s[pk] : c.vector_flop_per_s;
  const double eta = c.attention_frac[kind] > 0 ? c.attention_frac[kind] : 0.5;
  if (s.head_dim <= 0 || s.q_len <= 0 || s.kv_len <= 0) {
    r.efficiency = eta;
    return k.flops / (peak * eta);
  }
  const bool fwd = k.phase != spec::Phase::kBackward;
  const graph::AttentionTile tile = graph::attention_tile(
      static_cast<spec::AttentionKind>(kind), s.head_dim,
      fwd ? graph::AttentionPass::kForward : graph::AttentionPass::kBackward, s.causal);
  const double br = tile.br, bc = tile.bc, d = s.head_dim;
  const double per_sm = peak / c.sms;
  // Softmax work in MMA FLOP: exponentials per score element x FLOP per exp
  // (the exp unit's rate does not grow with a narrower MMA type).
  const int p16 = static_cast<int>(spec::Peak::kBf16);
  const double narrow = c.peak_flop_per_s[p16] > 0 ? std::max(1.0, peak / c.peak_flop_per_s[p16]) : 1.0;
  const double soft = c.attention_softmax[kind] * c.mma_flop_per_exp * narrow;
  double iter_s, blocks, mean_it, max_it;
  if (fwd) {
    // Blocks over query tiles; each iterates over key tiles.
    iter_s = (4.0 * br * bc * d / eta + br * bc * soft) / per_sm;
    const double nq = std::ceil(s.q_len / br), nk = std::ceil(s.kv_len / bc);
    blocks = s.batch * s.heads * nq;
    if (s.causal) {
      // Query block j reaches key (j + 1) Br: on average half the keys and
      // half a diagonal block; the last block reads them all.
      const double ratio = br / bc;
      const double round_up = std::fmod(ratio, 1.0) > 0 ? 0.5 : 0.0;
      mean_it = std::min(nk, ratio * (nq + 1) / 2 + round_up);
      max_it = std::min(nk, std::ceil(ratio * nq));
    } else {
      mean_it = max_it = nk;
    }
  } else {
    // Backward: blocks over key tiles (Bc keys), each iterating over query
    // tiles (Br rows): 5 MMAs of 2 Br Bc d (S, dP recomputed; dV, dK, dQ).
    iter_s = (10.0 * br * bc * d / (eta * c.attention_bwd_frac[kind]) + br * bc * soft) / per_sm;
    const double nkb = std::ceil(s.kv_len / bc), nqi = std::ceil(s.q_len / br);
    blocks = s.batch * s.heads * nkb;
    if (s.causal) {
      mean_it = std::max(1.0, nqi * (nkb + 1) / (2 * nkb));
      max_it = nqi;
    } else {
      mean_it = max_it = nqi;
    }
  }
  if (kind == static_cast<int>(spec::AttentionKind::kFlash) && c.sram_bytes_per_s > 0) {
    // FlashAttention-1 splits each key block across its warps (4 forward, 8
    // backward), so every 16-row query step ends with the warps' fp32
    // partial products (P V forward, dS K backward: Br x d each) written to
    // shared memory and summed, behind a barrier the MMAs wait on (v1.0.9
    // fmha/smem_tile.h Smem_tile_o::load: "the reduction (split-K)").
    const double warps = fwd ? graph::kFa1ForwardWarps : graph::kFa1BackwardWarps;
    iter_s += c.fa1_exchange_cost * 2.0 * warps * br * d * 4.0 / (c.sram_bytes_per_s / c.sms);
  }
  // A block's prologue and epilogue (the pipeline's fill and drain) per
  // main loop. The Triton tutorial kernel's causal forward runs two loops a
  // block, each pipelined on its own: the off-band key blocks, then the
  // masked on-band ones (python/tutorials/06-fused-attention.py, STAGE 3:
  // "barrier makes it easier for compiler to schedule the two loops
  // independently").
  const double loops = fwd && s.causal && kind == static_cast<int>(spec::AttentionKind::kTriton) ? 2.0 : 1.0;
  const double n0 = c.attention_block_iters * loops;
  const double waves = std::ceil(blocks / c.sms);
  r.tile_m = br, r.tile_n = bc, r.split_k = 1, r.blocks = blocks, r.waves = waves;
  r.efficiency = eta;
  r.basis = c.calibrated ? "calibration block (attention_efficiency)"
                         : "per-implementation MMA efficiency and softmax cost fitted on published kernel benchmarks "
                           "(the FlashAttention-3 paper's H100 rows; the flash-attention README's A100 and H100 bars)";
  // Equal blocks (non-causal) run in whole waves. Unequal ones (causal: a
  // query block's key range grows along the diagonal) are list-scheduled as
  // SMs free up, so the last to finish ends at most (1 - 1/SMs) of the
  // longest block after the average SM's share (Graham 1969's bound for
  // greedy list scheduling: total / m + (1 - 1/m) max; FlashAttention's
  // causal kernels order blocks longest first, which keeps it tight).
  const double block_max = (max_it + n0) * iter_s;
  if (s.causal && blocks > c.sms) {
    // Unequal blocks (a causal query block's key range grows along the
    // diagonal) are list-scheduled as SMs free up rather than run in equal
    // waves: the last SM finishes at most (1 - 1/SMs) of the longest block
    // after the average SM's share (Graham 1969's bound for greedy list
    // scheduling, total / m + (1 - 1/m) max). The grid's dispatch order
    // interleaves heads and batches, so the longest blocks are not all
    // started first and the bound is what is charged. (Fewer blocks than
    // SMs: each has its own SM, and the longest sets the time.)
    const double total = blocks * (mean_it + n0) * iter_s;
    return std::max(block_max, total / c.sms + (1.0 - 1.0 / c.sms) * block_max);
  }
  return std::max(block_max, waves * (mean_it + n0) * iter_s);
}

}  // namespace

KernelCost cost_kernel(const graph::Kernel& k, const CostParams& c, bool cuda_graphs, KernelCache* cache) {
  KernelCost r;
  const double hbm = k.read_bytes + k.write_bytes;
  if (k.cls == KernelClass::kCollective || k.cls == KernelClass::kP2p) {
    // How NCCL would run it, as static text (algorithm x protocol).
    static constexpr std::string_view kBasis[5][3] = {
        {"NCCL ring, LL protocol", "NCCL ring, LL128 protocol", "NCCL ring, Simple protocol"},
        {"NCCL tree, LL protocol", "NCCL tree, LL128 protocol", "NCCL tree, Simple protocol"},
        {"NCCL NVLS", "NCCL NVLS", "NCCL NVLS"},
        {"NCCL NVLSTree", "NCCL NVLSTree", "NCCL NVLSTree"},
        {"DeepEP node-aware all-to-all", "DeepEP node-aware all-to-all", "DeepEP node-aware all-to-all"}};
    double nccl_loss = 0;
    const CollectiveCost cc =
        cache ? collective_cost_cached(k.comm.kind, k.comm.bytes, k.comm.group, k.comm.span, k.comm.link_bytes, c,
                                       *cache, nccl_loss)
              : collective_cost(k.comm.kind, k.comm.bytes, k.comm.group, k.comm.span, c, k.comm.link_bytes);
    if (!cache) nccl_loss = nccl_gemm_loss(cc, c);
    r.time_s = cc.time_s;
    r.sm_fraction = cc.sm_fraction;
    // What the compute beside it loses, by how the collective runs:
    //  - NCCL channels beside a persistent cuBLAS GEMM: the GEMM's one CTA
    //    per SM runs in ceil(SMs / free SMs) waves (0.5 for one channel on
    //    an H100; FSDP and DDP overlap, pytorch#143988);
    //  - TE userbuffers (pipeline, bulk): the communication kernel holds
    //    comm.sms SMs and the GEMM is launched on the rest
    //    (CommOverlapBase: _math_sms = sm_count - num_comm_sm), so the GEMM
    //    loses comm.sms / SMs;
    //  - copy-engine ring exchange (TE ring_exchange, use_ce): no SMs, no loss;
    //  - NCCL send/recv beside attention kernels (CP's ring): the channels' SMs.
    if (k.has(graph::kCommCopyEngine)) {
      r.sm_fraction = 0;
      r.gemm_overlap_loss = 0;
    } else if (k.has(graph::kCommUserbuffers)) {
      r.sm_fraction = c.sms > 0 ? std::min(1.0, k.comm.sms / c.sms) : 0.0;
      r.gemm_overlap_loss = r.sm_fraction;
    } else if (cc.algorithm == CommAlgorithm::kDeepEp) {
      // DeepEP holds a fixed set of SMs (deep_ep.Buffer.set_num_sms) and the
      // GEMMs beside it are sized to the rest (DeepGEMM's set_num_sms; the
      // DeepSeek-V3 report Sec. 3.2.2), as under userbuffers.
      r.gemm_overlap_loss = cc.sm_fraction;
    } else if (k.has(graph::kBesideAttention)) {
      r.gemm_overlap_loss = cc.sm_fraction;
    } else {
      r.gemm_overlap_loss = nccl_loss;
    }
    r.basis = kBasis[static_cast<int>(cc.algorithm)][static_cast<int>(cc.protocol)];
    r.bound = Bound::kNetwork;
    return r;
  }
  double extra = 0;
  if (k.cls == KernelClass::kGemm || k.cls == KernelClass::kAttention) {
    r.compute_s = cache ? shape_compute_cached(k, c, r, extra, *cache) : uncached_compute_s(k, c, r, extra);
  } else {
    r.compute_s = k.flops / c.vector_flop_per_s;
  }
  if (hbm + extra > 0) {
    // A framework's own kernels stream slower than tuned ones (graph::kImplFramework).
    const int cls = static_cast<int>(k.cls);
    const double frac = c.mem_frac[cls] * (k.impl == graph::kImplFramework ? c.framework_mem_frac[cls] : 1.0);
    r.memory_s = (hbm + extra) / (c.hbm_bytes_per_s * frac) + c.hbm_latency_s;
  }
  if (k.sram_bytes > 0 && c.sram_bytes_per_s > 0) r.sram_s = k.sram_bytes / c.sram_bytes_per_s;
  r.launch_s = k.launches * (cuda_graphs ? c.graph_launch_s : c.launch_s);
  const double body = std::max({r.compute_s, r.memory_s, r.sram_s});
  r.time_s = body + r.launch_s;
  if (r.launch_s > body) r.bound = Bound::kLatency;
  else if (body == r.compute_s) r.bound = Bound::kCompute;
  else if (body == r.sram_s) r.bound = Bound::kSram;
  else r.bound = Bound::kMemory;
  return r;
}

}  // namespace ridgeline::cost
