#include "ridgeline/validation/predict.hpp"

#include <cstdlib>
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <utility>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/engine/kernel_eval.hpp"
#include "ridgeline/graph/graph.hpp"
#include "ridgeline/graph/memory_kernels.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/runs.hpp"
#include "ridgeline/support/diagnostics.hpp"
#include "ridgeline/techniques/passes.hpp"
#include "ridgeline/validation/conventions.hpp"
#include "ridgeline/validation/mapping.hpp"

namespace ridgeline::validation {

namespace {

using spec::PublishedCategory;
using spec::PublishedRow;
using spec::PublishedSection;

struct Context {
  const spec::HardwareSpec& hw;
  const PredictOptions& opt;
  double locked_clock_hz = 0;  // the clock a source fixed for its benchmarks; 0 = the profile's sustained clock

  cost::KernelCost cost(const graph::Kernel& k, bool cuda_graphs = false) const {
    engine::KernelEvalOptions o = opt.kernel(cuda_graphs);
    o.locked_clock_hz = locked_clock_hz;
    return engine::evaluate_kernel(k, hw, o);
  }
};

/// A clock the row says its benchmarks ran at, in hertz: the profile's boost
/// clock for hardware.clock: boost (short calls with idle gaps, shorter than
/// the power limiter's response: the row's clock_basis says why), a fixed one
/// ("... GPU clock fixed at 1830 MHz ..." in hardware.clock_note); 0 when it
/// states none (the profile's sustained clock, as a training step gets).
double locked_clock_of(const PublishedRow& row, const spec::HardwareSpec& hw) {
  if (row.hardware.text("clock") == "boost") return hw.clock_hz;
  const std::string note = row.hardware.text("clock_note");
  const auto at = note.find("fixed at ");
  if (at == std::string::npos) return 0;
  const char* p = note.c_str() + at + 9;
  char* end = nullptr;
  const double mhz = std::strtod(p, &end);
  if (end == p || mhz <= 0 || std::string_view(end).find("MHz") > 2) return 0;
  return mhz * 1e6;
}

/// Positive measured value, or nullopt.
std::optional<double> measured(const PublishedRow& row, const char* key) {
  auto v = row.measured.number(key);
  if (v && *v > 0) return v;
  return std::nullopt;
}

/// Primary (the first present) and secondary comparisons, or the Skip for none.
OrSkip<RowPrediction> choose(RowPrediction r, std::vector<Comparison> found, const char* what) {
  if (found.empty()) return Skip{fmt::format("no comparable measured quantity ({})", what)};
  r.primary = found.front();
  r.secondary.assign(found.begin() + 1, found.end());
  return r;
}

OrSkip<RowPrediction> predict_end_to_end(const PublishedRow& row, const Context& cx) {
  const SourceConvention& conv = convention_of(row.group);
  if (row.measured.text("status") == "OOM" && row.measured.fields.size() == 1)
    return Skip{"measured only an out-of-memory failure: no time to compare"};
  auto tc = map_training_row(row, cx.hw, cx.opt);
  if (!tc) return tc.skip();
  const auto pr = predict_case(*tc, cx.hw, cx.opt);
  if (!pr) return pr.skip();
  RowPrediction r;
  r.config = describe(*tc);
  r.precision = spec::to_string(tc->plan.precision);
  r.assumptions = std::move(tc->assumptions);
  r.assumptions.push_back(fmt::format("FLOP convention: {}", conv.basis));
  r.fits = pr->memory.fits;
  r.run = uncertainty::traits_of(*pr, tc->plan, cx.hw);
  if (!r.fits)
    r.assumptions.push_back(fmt::format("Ridgeline predicts this run does not fit: {:.1f} of {:.1f} GiB",
                                        pr->memory.total / (1 << 30), pr->memory.capacity / (1 << 30)));
  if (auto v = measured(row, "peak_memory_gib")) {
    // The kind the source measured (the loader checked the word; reserved by
    // default, as runs.yaml): reserved = allocated x (1 + reserve), the peak
    // calibrate --runs compares with max_memory_reserved.
    const bool allocated = row.measured.text("memory_kind") == spec::name(spec::MemoryKind::kAllocated);
    const auto& m = pr->memory;
    r.memory_kind = std::string(spec::name(allocated ? spec::MemoryKind::kAllocated : spec::MemoryKind::kReserved));
    r.memory = compare("peak_memory_gib", "GiB", *v, (allocated ? m.allocated : m.reserved) / (1 << 30), false);
    r.assumptions.push_back(
        allocated ? fmt::format("peak memory compared as allocated (max_memory_allocated): {:.2f} GiB",
                                m.allocated / (1 << 30))
                  : fmt::format("peak memory compared as reserved (max_memory_reserved): allocated {:.2f} GiB x "
                                "(1 + allocator reserve {:g} of frameworks/{}.yaml) = {:.2f} GiB",
                                m.allocated / (1 << 30), m.allocator_reserve,
                                spec::framework(tc->plan.framework).id, m.reserved / (1 << 30)));
  }
  const auto& st = pr->step;
  const double gpus = st.gpus;
  const double flops = st.model_flops + (conv.tflops_count_recompute ? st.recompute_flops : 0.0);
  // MFU against the peak the source divided by (A100: 312 TFLOP/s), else
  // against the profile's dense peak of the precision the run used, the
  // engine's mfu_dtype (Composer's GPU_AVAILABLE_FLOPS[gpu][precision]: an
  // fp8 run against the fp8 peak).
  const auto stated_peak = row.hardware.number("peak_tflops_used_by_source");
  const double mfu = stated_peak ? st.model_flops / (st.time_s * gpus * *stated_peak * 1e12) : st.mfu_dtype;
  const double hfu = st.model_flops > 0 ? mfu * (st.model_flops + st.recompute_flops) / st.model_flops : 0.0;
  std::vector<Comparison> found;
  if (auto v = measured(row, "iteration_time_s"))
    found.push_back(compare("iteration_time_s", "s", *v, st.time_s, false));
  if (auto v = measured(row, "tokens_per_s_total"))
    found.push_back(compare("tokens_per_s_total", "tokens/s", *v, st.tokens_per_s, true));
  if (auto v = measured(row, "tokens_per_s_per_gpu"))
    found.push_back(compare("tokens_per_s_per_gpu", "tokens/s", *v, st.tokens_per_s / gpus, true));
  for (const char* k : {"model_tflops_per_gpu", "tflops"})
    if (auto v = measured(row, k)) found.push_back(compare(k, "TFLOP/s", *v, flops / st.time_s / gpus / 1e12, true));
  if (auto v = measured(row, "mfu"))
    found.push_back(compare("mfu", "fraction", *v, mfu, true));
  if (auto v = measured(row, "hfu")) found.push_back(compare("hfu", "fraction", *v, hfu, true));
  return choose(std::move(r), std::move(found),
                "expected iteration_time_s, tokens_per_s_total/_per_gpu, model_tflops_per_gpu, mfu or hfu");
}

/// One decoder layer's forward and backward time (Korthikanti et al. 2022,
/// Table 4): the engine's kernels of the mapped model, summed over the
/// kernels inside the layer (embedding, LM head, loss and optimizer left out)
/// and divided by the layers. The times were taken inside the paper's
/// training runs, so the kernels run at a training run's clock
/// (engine::resolve_for), and communication scheduled beside the layer's
/// GEMMs adds what engine::overlap_exposed_s says, per phase.
OrSkip<RowPrediction> predict_layer_time(const PublishedRow& row, const Context& cx) {
  auto tc = map_training_row(row, cx.hw, cx.opt);
  if (!tc) return tc.skip();
  if (engine::Problem pr = engine::check_plan(tc->model, tc->plan, cx.hw); !pr.field.empty())
    return Skip{fmt::format("plan rejected: {}: {}", pr.field, pr.message)};
  engine::EvalOptions eo;
  eo.use_calibration = cx.opt.use_calibration;
  eo.fit_without_group = cx.opt.fit_without_group;
  const cost::CostParams c = engine::resolve_for(cx.hw, tc->plan, eo);
  graph::Graph g;
  techniques::build_step(g, tc->model, tc->plan, cx.hw);
  struct Phase {
    double kernels = 0, comm = 0, sm = 0, gemm = 0, window = 0, gemm_window = 0;
    double time() const { return kernels + engine::overlap_exposed_s(comm, sm, gemm, window, gemm_window); }
  } fwd, bwd;
  for (const auto& k : g.kernels) {
    if (!k.has(graph::kLayer) || k.has(graph::kPerStep)) continue;
    const cost::KernelCost kc = cost::cost_kernel(k, c, tc->plan.cuda_graphs);
    const double t = kc.time_s * k.count / std::max(1, g.layers);
    Phase& ph = k.phase == spec::Phase::kForward ? fwd : bwd;
    if (k.has(graph::kOverlapped)) {
      ph.comm += t;
      ph.sm += kc.sm_fraction * t;
      ph.gemm += kc.gemm_overlap_loss * t;
      continue;
    }
    ph.kernels += t;
    if (k.cls == spec::KernelClass::kGemm || k.cls == spec::KernelClass::kAttention) ph.window += t;
    if (k.cls == spec::KernelClass::kGemm) ph.gemm_window += t;
  }
  RowPrediction r;
  r.config = describe(*tc);
  r.precision = spec::to_string(tc->plan.precision);
  r.assumptions = std::move(tc->assumptions);
  std::vector<Comparison> found;
  if (auto v = measured(row, "fwd_plus_bwd_ms"))
    found.push_back(compare("fwd_plus_bwd_ms", "ms", *v, (fwd.time() + bwd.time()) * 1e3, false));
  if (auto v = measured(row, "forward_ms"))
    found.push_back(compare("forward_ms", "ms", *v, fwd.time() * 1e3, false));
  if (auto v = measured(row, "backward_ms"))
    found.push_back(compare("backward_ms", "ms", *v, bwd.time() * 1e3, false));
  return choose(std::move(r), std::move(found), "expected fwd_plus_bwd_ms, forward_ms or backward_ms");
}

/// The kernels of a mapped GEMM or attention row, each costed by
/// engine::evaluate_kernel, times summed.
double kernel_case_time(const KernelCase& kc, const Context& cx) {
  double t = 0;
  for (const auto& k : kc.kernels) t += cx.cost(k).time_s * k.count;
  return t;
}

/// A GEMM row (MAMF's best achievable throughput, DeepGEMM's fp8 GEMMs):
/// graph::gemm_kernel of the row's shape, TFLOP/s = 2 M N K / time; the
/// bandwidth a source prints beside it = the kernel's HBM bytes / time.
OrSkip<RowPrediction> predict_gemm(const PublishedRow& row, const Context& cx) {
  auto kc = map_gemm_row(row, cx.hw);
  if (!kc) return kc.skip();
  const double t = kernel_case_time(*kc, cx);
  const graph::Kernel& k = kc->kernels.front();
  RowPrediction r;
  r.config = std::move(kc->config);
  r.assumptions = std::move(kc->assumptions);
  r.precision = std::string(spec::name(kc->dtype));
  r.kernel = uncertainty::KernelTraits{uncertainty::KernelKind::kGemm, cx.hw.generation, kc->dtype};
  std::vector<Comparison> found;
  for (const char* key : {"tflops", "tflops_or_tops"})
    if (auto v = measured(row, key))
      found.push_back(compare(key, "TFLOP/s", *v, kc->convention_flops / t / 1e12, true));
  if (auto v = measured(row, "memory_bandwidth_gb_s"))
    found.push_back(compare("memory_bandwidth_gb_s", "GB/s", *v, (k.read_bytes + k.write_bytes) / t / 1e9, true));
  return choose(std::move(r), std::move(found), "expected tflops");
}

/// An attention kernel row (the FlashAttention-3 paper's figures, the
/// FlashAttention benchmarks): the row's kernels from graph/kernels.hpp,
/// TFLOP/s in the FlashAttention benchmarks' convention (forward 4 b s^2 h d,
/// halved when causal; backward 2.5x) over the predicted time; a measured
/// time is compared as a time.
OrSkip<RowPrediction> predict_attention(const PublishedRow& row, const Context& cx) {
  auto kc = map_attention_row(row, cx.hw);
  if (!kc) return kc.skip();
  const double t = kernel_case_time(*kc, cx);
  RowPrediction r;
  r.config = std::move(kc->config);
  r.assumptions = std::move(kc->assumptions);
  r.assumptions.push_back("FLOP convention: 4 b s^2 h d forward, halved when causal, 2.5x for backward");
  r.precision = std::string(spec::name(kc->dtype));
  r.kernel = uncertainty::KernelTraits{uncertainty::KernelKind::kAttention, cx.hw.generation, kc->dtype};
  std::vector<Comparison> found;
  if (auto v = measured(row, "tflops"))
    found.push_back(compare("tflops", "TFLOP/s", *v, kc->convention_flops / t / 1e12, true));
  if (auto v = measured(row, "time_ms")) found.push_back(compare("time_ms", "ms", *v, t * 1e3, false));
  return choose(std::move(r), std::move(found), "expected tflops or time_ms");
}

/// Bytes a streaming benchmark moves per run: three arrays of 2^25 doubles
/// (BabelStream's default size, 768 MiB of traffic for triad); large enough
/// that launch and latency are under 1% of the time.
constexpr double kStreamBytes = 3.0 * (1 << 25) * 8.0;

/// Streaming kernels (triad a = b + s c: 2 reads, 1 write; scale; read; init)
/// as one elementwise kernel each: measured key, fraction of the traffic
/// read, FLOP per 8-byte element.
struct StreamKind {
  const char* key;
  double read_frac;
  double flops_per_elem;
};
constexpr StreamKind kStreams[] = {{"triad_GB_s", 2.0 / 3.0, 2.0 / 3.0},   {"global_memory_GB_s", 1.0, 0.0},
                                   {"dram_bandwidth_GB_s_approx", 1.0, 0.0}, {"read_GB_s", 1.0, 0.0},
                                   {"scale_GB_s", 0.5, 0.5},                 {"init_GB_s", 0.0, 0.0}};

/// Shared-memory bandwidth per SM per clock: the cost model's SRAM term for
/// traffic through shared memory alone (no launch), per SM and clock.
constexpr const char* kSharedKey = "shared_bytes_per_clk_per_SM";

/// A framework's or a tuned memory-bound kernel over `tokens` rows of
/// `hidden` (kernel.op, kernel.implementation, kernel.tokens, kernel.hidden,
/// kernel.dtype; its forward pass), as the graph builds it, timed against
/// measured.time_ms:
///  - layer_norm, rms_norm: graph::norm_kernel, one kernel;
///  - swiglu: silu(gate) * up over [tokens, 2 hidden] -> [tokens, hidden]:
///    fused (Megatron's bias_swiglu_impl, Liger's Triton kernel), one
///    two-input elementwise kernel; torch (eager F.silu(y1) * y2 over
///    torch.chunk's views), a one-input kernel then a two-input one;
///  - relu_squared: relu(x)^2 over a contiguous [tokens, hidden]: torch
///    (relu then square), two one-input kernels; Liger's, one.
/// implementation: torch's and megatron's norms and their kernels over
/// strided views (the SwiGLU halves) are the framework's own
/// (graph::kImplFramework); torch's elementwise kernels over contiguous
/// operands, which PyTorch vectorizes (techniques::apply_fusion), and liger,
/// triton, cudnn and torch_compile (Inductor's) kernels are tuned
/// (graph::kImplTuned).
/// kernel.pass backward (layer_norm only): the norm's backward as
/// graph::derive_backward forms it in a training graph (reads the saved
/// input, the output gradient and the weight, writes the input gradient),
/// for implementation torch PyTorch's two kernels
/// (graph::eager_layer_norm_backward);
/// Liger's backward is skipped (below).
bool memory_kernel_row(const PublishedRow& row) { return row.kernel.has("op") && row.kernel.has("tokens"); }

OrSkip<RowPrediction> predict_memory_kernel(const PublishedRow& row, const Context& cx) {
  const std::string op = row.kernel.text("op");
  const std::string impl = row.kernel.text("implementation");
  const auto tokens = row.kernel.number("tokens");
  const auto hidden = row.kernel.number("hidden");
  if (!tokens || !hidden || !(*tokens > 0) || !(*hidden > 0)) return Skip{"kernel.tokens and kernel.hidden expected"};
  const std::string dt = row.kernel.text("dtype");
  const auto dtype = dtype_of(dt);
  if (!dtype) return Skip{fmt::format("unsupported kernel.dtype '{}'", dt)};
  std::uint8_t tier = graph::kImplFramework;
  if (impl == "liger" || impl == "triton" || impl == "cudnn" || impl == "torch_compile") tier = graph::kImplTuned;
  else if (impl != "torch" && impl != "megatron")
    return Skip{fmt::format("unrecognised kernel.implementation '{}' (torch, megatron, liger, triton, cudnn, "
                            "torch_compile)",
                            impl)};
  else if (op == "relu_squared") tier = graph::kImplTuned;  // contiguous operands: PyTorch's vectorized loop
  const std::string pass = row.kernel.has("pass") ? row.kernel.text("pass") : "forward";
  if (pass != "forward" && pass != "backward")
    return Skip{fmt::format("unrecognised kernel.pass '{}' (forward, backward)", pass)};
  if (pass == "backward" && op != "layer_norm") return Skip{"backward rows: layer_norm only"};
  // Liger's LayerNorm backward (src/liger_kernel/ops/layer_norm.py, v0.6.0
  // layer_norm_backward) launches one program per SM, each walking
  // ceil(rows / SMs) rows one after another, then sums the per-SM weight
  // and bias partials with torch: one row in flight per SM, a schedule the
  // streaming model has no form for.
  if (pass == "backward" && tier == graph::kImplTuned)
    return Skip{"a tuned LayerNorm backward with one program per SM walking its rows (Liger's): not modelled"};
  std::vector<graph::Kernel> ks;
  if (pass == "backward") {
    graph::Graph g;
    g.act_bytes = spec::bytes_per_element(*dtype);
    g.kernels.push_back(graph::norm_kernel(*tokens, *hidden, false, *dtype));
    graph::derive_backward(g);
    for (auto& k : g.kernels)
      if (k.phase == spec::Phase::kBackward) {
        if (tier == graph::kImplFramework) graph::eager_layer_norm_backward(k);
        ks.push_back(k);
      }
  } else if (op == "layer_norm" || op == "rms_norm") {
    ks.push_back(graph::norm_kernel(*tokens, *hidden, op == "rms_norm", *dtype));
  } else if (op == "swiglu") {
    if (impl == "torch") ks.push_back(graph::elementwise_kernel(*tokens * *hidden, 1, *dtype));
    ks.push_back(graph::elementwise_kernel(*tokens * *hidden, 2, *dtype));
  } else if (op == "relu_squared") {
    if (impl == "torch") ks.push_back(graph::elementwise_kernel(*tokens * *hidden, 1, *dtype));
    ks.push_back(graph::elementwise_kernel(*tokens * *hidden, 1, *dtype));
  } else {
    return Skip{fmt::format("unrecognised kernel.op '{}' (layer_norm, rms_norm, swiglu, relu_squared)", op)};
  }
  double t = 0;
  for (auto& k : ks) {
    k.impl = tier;
    t += cx.cost(k).time_s;
  }
  const auto v = measured(row, "time_ms");
  if (!v) return Skip{"no comparable measured quantity (expected time_ms)"};
  RowPrediction r;
  r.config = fmt::format("{} {} {}, {:.0f} x {:.0f} {}, {} kernel{}", impl, op, pass, *tokens, *hidden, dt,
                         tier == graph::kImplTuned ? "tuned" : "framework", ks.size() > 1 ? "s" : "");
  r.precision = dt;
  return choose(std::move(r), {compare("time_ms", "ms", *v, t * 1e3, false)}, "");
}

OrSkip<RowPrediction> predict_memory(const PublishedRow& row, const Context& cx) {
  if (memory_kernel_row(row)) return predict_memory_kernel(row, cx);
  std::vector<Comparison> found;
  for (const auto& sk : kStreams) {
    auto v = measured(row, sk.key);
    if (!v) continue;
    graph::Kernel k;
    k.name = "stream";
    k.cls = spec::KernelClass::kElementwise;
    k.impl = graph::kImplTuned;  // hand-written streaming kernels
    k.dtype = spec::Dtype::kFp32;
    k.read_bytes = kStreamBytes * sk.read_frac;
    k.write_bytes = kStreamBytes * (1 - sk.read_frac);
    k.flops = kStreamBytes / 8.0 * sk.flops_per_elem;
    const double t = cx.cost(k).time_s;
    found.push_back(compare(sk.key, "GB/s", *v, kStreamBytes / t / 1e9, true));
  }
  if (!found.empty()) {
    RowPrediction r;
    r.config = "streaming kernel, 768 MiB of HBM traffic";
    return choose(std::move(r), std::move(found), "");
  }
  if (auto v = measured(row, kSharedKey)) {
    if (cx.hw.sm_count <= 0 || cx.hw.clock_hz <= 0 || cx.hw.sram_bytes_per_s <= 0)
      return Skip{fmt::format("profile {} states no shared-memory bandwidth", cx.hw.id)};
    graph::Kernel k;
    k.name = "shared_memory";
    k.cls = spec::KernelClass::kElementwise;
    k.dtype = spec::Dtype::kFp32;
    k.sram_bytes = kStreamBytes;
    k.launches = 0;
    const double bytes_per_s = kStreamBytes / cx.cost(k).time_s;
    // Per clock of the clock the kernel ran at: the engine scales shared-
    // memory bandwidth with the sustained (or locked) clock, so dividing by
    // the boost clock would count a power-capped GPU's lower clock as fewer
    // bytes per clock.
    const double clock = cx.locked_clock_hz > 0 ? cx.locked_clock_hz : spec::clock_at_power(cx.hw, 0);
    RowPrediction r;
    r.config = "profile compute.sram_bandwidth / (SMs x clock)";
    return choose(std::move(r), {compare(kSharedKey, "B/clk/SM", *v, bytes_per_s / (cx.hw.sm_count * clock), true)},
                  "");
  }
  return Skip{"no comparable measured quantity (expected a streaming bandwidth)"};
}

/// Back-to-back queued kernels: the cost of one empty kernel is its launch.
OrSkip<RowPrediction> predict_launch(const PublishedRow& row, const Context& cx) {
  auto v = measured(row, "per_kernel_overhead_ns");
  if (!v) return Skip{"no comparable measured quantity (expected per_kernel_overhead_ns)"};
  graph::Kernel k;
  k.name = "empty";
  k.cls = spec::KernelClass::kElementwise;
  k.launches = 1;
  RowPrediction r;
  r.config = "profile launch overhead (back-to-back queued kernels, no CUDA graph)";
  return choose(std::move(r), {compare("per_kernel_overhead_ns", "ns", *v, cx.cost(k).time_s * 1e9, false)}, "");
}

}  // namespace

std::optional<Skip> out_of_scope(const PublishedRow& row) {
  switch (row.category) {
    case PublishedCategory::kClockObservation:
      return Skip{"clock observation: not a prediction target (the profiles carry it as compute.sustained_clock, with its source)"};
    case PublishedCategory::kTensorCoreInstruction:
      return Skip{
          "tensor-core instruction microbenchmark (mma/wgmma issue rate): below the kernel level Ridgeline models"};
    case PublishedCategory::kMemoryMicrobenchmark: {
      if (memory_kernel_row(row)) return std::nullopt;  // predict_memory_kernel says what it lacks
      for (const auto& sk : kStreams)
        if (row.measured.has(sk.key)) return std::nullopt;
      if (row.measured.has(kSharedKey)) return std::nullopt;
      for (const auto& [k, v] : row.measured.fields) {
        if (contains(k, "cycles")) return Skip{"memory latency in cycles: the model has no per-level latency"};
        if (contains(k, "ring_copy")) return Skip{"SM-to-SM (distributed shared memory) traffic: not modelled"};
        if (k.rfind("L1", 0) == 0 || k.rfind("L2", 0) == 0 || k.rfind("l2", 0) == 0)
          return Skip{"L1/L2 cache bandwidth: the model streams from HBM only"};
      }
      return Skip{"no comparable measured quantity (expected a streaming bandwidth)"};
    }
    case PublishedCategory::kLaunchOverhead:
      if (!row.measured.has("per_kernel_overhead_ns"))
        return Skip{"launch cost measured on the host or through a framework (driver call, Triton, Inductor, synced "
                    "chain): not the GPU-side per-kernel gap the profile models"};
      return std::nullopt;
    default: return std::nullopt;
  }
}

OrSkip<RowPrediction> predict_row(const PublishedRow& row, const spec::HardwareSpec& hw, const PredictOptions& opt) {
  if (row.hardware.has("clock") && row.hardware.text("clock") != "boost")
    return Skip{fmt::format("unsupported hardware.clock '{}' (boost: the benchmark ran at the profile's boost clock; "
                            "a fixed clock goes in clock_note as 'fixed at N MHz')",
                            row.hardware.text("clock"))};
  const Context cx{hw, opt, locked_clock_of(row, hw)};
  switch (row.category) {
    case PublishedCategory::kEndToEndTraining: return predict_end_to_end(row, cx);
    case PublishedCategory::kLayerTime: return predict_layer_time(row, cx);
    case PublishedCategory::kGemmKernel: return predict_gemm(row, cx);
    case PublishedCategory::kAttentionKernel: return predict_attention(row, cx);
    case PublishedCategory::kMemoryMicrobenchmark: return predict_memory(row, cx);
    case PublishedCategory::kLaunchOverhead: return predict_launch(row, cx);
    default: return Skip{"category not predicted"};
  }
}

}  // namespace ridgeline::validation
