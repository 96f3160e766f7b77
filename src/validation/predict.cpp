#include "ridgeline/validation/predict.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <utility>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/engine/kernel_eval.hpp"
#include "ridgeline/graph/graph.hpp"
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
  bool use_calibration;

  cost::KernelCost cost(const graph::Kernel& k, bool cuda_graphs = false) const {
    return engine::evaluate_kernel(k, hw, {use_calibration, cuda_graphs});
  }
};

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
  auto tc = map_training_row(row, cx.hw, cx.use_calibration);
  if (!tc) return tc.skip();
  const auto pr = predict_case(*tc, cx.hw, cx.use_calibration);
  if (!pr) return pr.skip();
  RowPrediction r;
  r.config = describe(*tc);
  r.assumptions = std::move(tc->assumptions);
  r.assumptions.push_back(fmt::format("FLOP convention: {}", conv.basis));
  r.fits = pr->memory.fits;
  if (!r.fits)
    r.assumptions.push_back(fmt::format("Ridgeline predicts this run does not fit: {:.1f} of {:.1f} GiB",
                                        pr->memory.total / (1 << 30), pr->memory.capacity / (1 << 30)));
  const auto& st = pr->step;
  const double gpus = st.gpus;
  const double flops = st.model_flops + (conv.tflops_count_recompute ? st.recompute_flops : 0.0);
  // MFU against the peak the source divided by (A100: 312 TFLOP/s), else the profile's bf16 peak.
  const double peak =
      row.hardware.number("peak_tflops_used_by_source").value_or(cx.hw.peak(spec::Peak::kBf16) / 1e12) * 1e12;
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
    found.push_back(compare("mfu", "fraction", *v, st.model_flops / (st.time_s * gpus * peak), true));
  if (auto v = measured(row, "hfu"))
    found.push_back(
        compare("hfu", "fraction", *v, (st.model_flops + st.recompute_flops) / (st.time_s * gpus * peak), true));
  return choose(std::move(r), std::move(found),
                "expected iteration_time_s, tokens_per_s_total/_per_gpu, model_tflops_per_gpu, mfu or hfu");
}

/// One decoder layer's forward and backward time (Korthikanti et al. 2022,
/// Table 4): the engine's kernels of the mapped model, summed over the
/// kernels inside the layer (embedding, LM head, loss and optimizer left out)
/// and divided by the layers; overlapped communication hides behind the
/// layer's GEMMs as in the engine.
OrSkip<RowPrediction> predict_layer_time(const PublishedRow& row, const Context& cx) {
  auto tc = map_training_row(row, cx.hw, cx.use_calibration);
  if (!tc) return tc.skip();
  if (engine::Problem pr = engine::check_plan(tc->model, tc->plan, cx.hw); !pr.field.empty())
    return Skip{fmt::format("plan rejected: {}: {}", pr.field, pr.message)};
  graph::Graph g;
  techniques::build_step(g, tc->model, tc->plan, cx.hw);
  double fwd = 0, bwd = 0;
  for (const auto& k : g.kernels) {
    if (!k.has(graph::kLayer) || k.has(graph::kPerStep) || k.has(graph::kOverlapped)) continue;
    const double t = cx.cost(k, tc->plan.cuda_graphs).time_s * k.count / std::max(1, g.layers);
    (k.phase == spec::Phase::kForward ? fwd : bwd) += t;
  }
  RowPrediction r;
  r.config = describe(*tc);
  r.assumptions = std::move(tc->assumptions);
  std::vector<Comparison> found;
  if (auto v = measured(row, "fwd_plus_bwd_ms"))
    found.push_back(compare("fwd_plus_bwd_ms", "ms", *v, (fwd + bwd) * 1e3, false));
  if (auto v = measured(row, "forward_ms")) found.push_back(compare("forward_ms", "ms", *v, fwd * 1e3, false));
  if (auto v = measured(row, "backward_ms")) found.push_back(compare("backward_ms", "ms", *v, bwd * 1e3, false));
  return choose(std::move(r), std::move(found), "expected fwd_plus_bwd_ms, forward_ms or backward_ms");
}

/// kernel.dtype as a type the profile has a peak for.
OrSkip<spec::Dtype> kernel_dtype(const PublishedRow& row, const spec::HardwareSpec& hw) {
  const std::string text = row.kernel.text("dtype");
  if (text.empty()) return missing("kernel", "dtype");
  auto dt = dtype_of(text);
  if (!dt) return Skip{fmt::format("unsupported kernel.dtype '{}'", text)};
  const spec::Peak pk = spec::peak_of(*dt);
  if (!hw.supports(pk)) return Skip{fmt::format("profile {} has no {} peak", hw.id, spec::name(pk))};
  return *dt;
}

/// Best achievable GEMM throughput of one shape (MAMF): a cuBLAS GEMM of the
/// row's M x N x K as one kernel (tile and wave quantization, launch
/// overhead). fp8 GEMMs write bf16 (torch._scaled_mm's output).
OrSkip<RowPrediction> predict_gemm(const PublishedRow& row, const Context& cx) {
  const auto& kr = row.kernel;
  double mnk[3];
  for (int i = 0; i < 3; ++i) {
    const char* key = i == 0 ? "M" : i == 1 ? "N" : "K";
    auto v = whole(kr, "kernel", key);
    if (!v) return v.skip();
    mnk[i] = *v;
  }
  const double M = mnk[0], N = mnk[1], K = mnk[2];
  const double batch = whole_or(kr, "batch", 1);
  const auto dt = kernel_dtype(row, cx.hw);
  if (!dt) return dt.skip();
  const double in_b = spec::bytes_per_element(*dt);
  const double out_b = in_b < 2 ? 2.0 : in_b;
  graph::Kernel k;
  k.name = "gemm";
  k.op = graph::Op::kOther;
  k.cls = spec::KernelClass::kGemm;
  k.dtype = *dt;
  k.gemm = {M, N, K, batch};
  k.flops = 2.0 * M * N * K * batch;
  k.model_flops = k.flops;
  k.read_bytes = batch * (M * K + K * N) * in_b;
  k.write_bytes = batch * M * N * out_b;
  const cost::KernelCost kc = cx.cost(k);
  RowPrediction r;
  r.config = fmt::format("{} GEMM M={} N={} K={}{}", spec::name(*dt), M, N, K,
                         batch > 1 ? fmt::format(" x{}", batch) : "");
  std::vector<Comparison> found;
  for (const char* key : {"tflops", "tflops_or_tops"})
    if (auto v = measured(row, key)) found.push_back(compare(key, "TFLOP/s", *v, k.flops / kc.time_s / 1e12, true));
  return choose(std::move(r), std::move(found), "expected tflops");
}

/// FlashAttention kernel throughput in the FlashAttention benchmarks'
/// convention (forward 4 b s^2 a d, halved when causal; backward 2.5x): the
/// attention pass's fused kernel of a one-layer model with the row's shape.
OrSkip<RowPrediction> predict_attention(const PublishedRow& row, const Context& cx) {
  const auto& kr = row.kernel;
  RowPrediction r;
  const int b = whole_or(kr, "batch", 1);
  int sad[3];
  for (int i = 0; i < 3; ++i) {
    const char* key = i == 0 ? "seq_len" : i == 1 ? "heads" : "head_dim";
    auto v = whole(kr, "kernel", key);
    if (!v) return v.skip();
    sad[i] = *v;
  }
  const int s = sad[0], a = sad[1], d = sad[2];
  const int g = whole_or(kr, "kv_heads", a);
  const bool causal = kr.has("causal") ? spec::parse_published_bool(kr.text("causal")).value_or(true) : true;
  if (!causal) return Skip{"non-causal attention: the attention pass models causal decoder attention only"};
  if (static_cast<double>(a) * d > (1 << 24) || static_cast<double>(b) * s > 1e12)
    return Skip{"attention shape out of range"};
  const std::string op = lower(kr.text("op") + " " + kr.text("implementation"));
  spec::AttentionKind kind = spec::AttentionKind::kFlash2;
  if (contains(op, "flash") || contains(op, "fa")) {
    if (const int v = flash_version_in(op)) kind = kind_of_version(v);
    else r.assumptions.push_back("FlashAttention version not stated: flash2");
  } else if (op != " ") {
    return Skip{"attention kernel other than FlashAttention: not modelled as one kernel"};
  }
  spec::Dtype dt = spec::Dtype::kBf16;
  if (kr.has("dtype")) {
    const auto stated = kernel_dtype(row, cx.hw);
    if (!stated) return stated.skip();
    dt = *stated;
  }
  if (dt != spec::Dtype::kBf16 && dt != spec::Dtype::kFp16)
    return Skip{fmt::format("attention in {}: the attention pass models 16-bit attention", spec::name(dt))};
  std::string dir = lower(kr.text("direction"));
  if (dir.empty()) dir = "fwd_bwd";
  if (dir != "fwd" && dir != "bwd" && dir != "fwd_bwd")
    return Skip{fmt::format("unsupported kernel.direction '{}' (fwd, bwd or fwd_bwd)", kr.text("direction"))};
  spec::ModelSpec m;
  m.id = row.id;
  m.layers = 1;
  m.heads = a;
  m.kv_heads = g;
  m.head_dim = d;
  m.hidden = a * d;
  m.ffn_hidden = 4 * a * d;
  m.vocab = 128;
  m.max_seq_len = s;
  m.bias = false;
  spec::PlanSpec p;
  p.micro_batch = b;
  p.seq_len = s;
  p.attention = kind;
  p.precision = dt == spec::Dtype::kFp16 ? spec::Precision::kFp16 : spec::Precision::kBf16;
  try {
    spec::validate_model(m, row.id);  // the spec's check; its SpecError is this row's skip reason
  } catch (const support::SpecError& e) {
    return Skip{fmt::format("attention shape rejected: {}",
                            e.diagnostics().empty() ? e.what() : e.diagnostics()[0].message)};
  }
  if (engine::Problem pr = engine::check_plan(m, p, cx.hw); !pr.field.empty())
    return Skip{fmt::format("attention shape rejected: {}: {}", pr.field, pr.message)};
  graph::Graph gr;
  techniques::build_step(gr, m, p, cx.hw);
  double t_f = 0, t_b = 0;
  for (const auto& k : gr.kernels) {
    if (k.op != graph::Op::kFlashAttn) continue;
    const double t = cx.cost(k).time_s * k.count;
    (k.phase == spec::Phase::kForward ? t_f : t_b) += t;
  }
  const double fwd_flops = 4.0 * b * static_cast<double>(s) * s * a * d * 0.5;
  double flops = 0, t = 0;
  if (dir != "bwd") flops += fwd_flops, t += t_f;
  if (dir != "fwd") flops += 2.5 * fwd_flops, t += t_b;
  r.config = fmt::format("{} {} causal b={} s={} heads={} d={}", spec::to_string(kind), dir, b, s, a, d);
  std::vector<Comparison> found;
  if (auto v = measured(row, "tflops")) found.push_back(compare("tflops", "TFLOP/s", *v, flops / t / 1e12, true));
  return choose(std::move(r), std::move(found), "expected tflops");
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

OrSkip<RowPrediction> predict_memory(const PublishedRow& row, const Context& cx) {
  std::vector<Comparison> found;
  for (const auto& sk : kStreams) {
    auto v = measured(row, sk.key);
    if (!v) continue;
    graph::Kernel k;
    k.name = "stream";
    k.cls = spec::KernelClass::kElementwise;
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
    RowPrediction r;
    r.config = "profile compute.sram_bandwidth / (SMs x clock)";
    return choose(std::move(r), {compare(kSharedKey, "B/clk/SM", *v, bytes_per_s / (cx.hw.sm_count * cx.hw.clock_hz),
                                         true)},
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
      return Skip{"clock observation: not a prediction target (profiles assume the boost clock)"};
    case PublishedCategory::kTensorCoreInstruction:
      return Skip{
          "tensor-core instruction microbenchmark (mma/wgmma issue rate): below the kernel level Ridgeline models"};
    case PublishedCategory::kMemoryMicrobenchmark: {
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

OrSkip<RowPrediction> predict_row(const PublishedRow& row, const spec::HardwareSpec& hw, bool use_calibration) {
  const Context cx{hw, use_calibration};
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
