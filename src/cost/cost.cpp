#include "ridgeline/cost/cost.hpp"

#include <algorithm>
#include <cmath>

namespace ridgeline::cost {

using spec::KernelClass;

spec::EfficiencySpec default_efficiency(const spec::HardwareSpec& hw) {
  spec::EfficiencySpec e;
  // GEMM: best achievable matmul ("MAMF", published.yaml group mamf):
  // bf16 H100 SXM 794.5 of 989 TFLOP/s = 80%, B200 1745/2250 = 78%, A100
  // 271/312 = 87% -> 0.80 for 16-bit, tf32 and fp32; fp8 H100 1403/1979 = 71%,
  // H200 73%, B200 76% -> 0.72; AMD MI300X bf16 668/1300 = 51%, MI325X 60% -> 0.55.
  e.gemm_frac.fill(0.80);
  e.gemm_frac[static_cast<int>(spec::Peak::kFp8)] = 0.72;
  if (hw.is_amd()) {
    e.gemm_frac.fill(0.55);
    e.gemm_frac[static_cast<int>(spec::Peak::kFp8)] = 0.50;
  }
  e.gemm_tile_m = 128;
  e.gemm_tile_n = 128;
  // A tile's prologue and epilogue (loading the first K slices, writing and
  // converting C) cost about as much as K0 = 128 more steps of its main loop:
  // MAMF's best shapes have K >= 8192 (K0 costs < 2%), while a K = 768 GEMM
  // (GPT-3 125M) reaches ~14% less.
  e.gemm_k0 = 128;
  // Fused attention forward+backward reaches less of peak than a plain GEMM:
  // FlashAttention-2 trains GPT models at 50-60% of A100 peak (Dao 2023,
  // Table/Fig. "end-to-end training"); on Hopper FA2 lacks wgmma and reaches
  // ~35-40% while FA3 reaches 60-75% (Shah et al. 2024); likewise on
  // Blackwell, whose tcgen05 MMA FA2's mma.sync does not use.
  e.attention_frac = hw.has_async_mma() ? 0.40 : 0.55;
  // HBM: streaming kernels reach ~90% of the spec bandwidth (gpu-benches and
  // BabelStream rows in published.yaml: A100-80GB triad 1.72 of 2.04 TB/s = 84%,
  // H100/H200 stream ~90%).
  e.hbm_frac = 0.88;
  e.hbm_latency_s = 1.0e-6;
  // Per-class multipliers on hbm_frac: reductions (norms, softmax, loss) read
  // rows twice or synchronise; gathers (embedding) are irregular.
  e.class_mem_frac.fill(1.0);
  e.class_mem_frac[static_cast<int>(KernelClass::kNorm)] = 0.85;
  e.class_mem_frac[static_cast<int>(KernelClass::kSoftmax)] = 0.80;
  e.class_mem_frac[static_cast<int>(KernelClass::kLoss)] = 0.80;
  e.class_mem_frac[static_cast<int>(KernelClass::kEmbedding)] = 0.60;
  e.class_mem_frac[static_cast<int>(KernelClass::kReduction)] = 0.90;
  e.class_mem_frac[static_cast<int>(KernelClass::kOptimizer)] = 0.90;
  // Launch: back-to-back queued kernels cost ~2.4-2.6 us each (gpu-benches
  // small-kernel fits, A100 2555 ns, H200 2433 ns); the profile's figure wins.
  e.launch_overhead_s = hw.launch_overhead_s > 0 ? hw.launch_overhead_s : 2.5e-6;
  // NCCL reaches ~80% of link bandwidth as bus bandwidth on large messages.
  e.comm_frac = 0.80;
  return e;
}

CostParams resolve(const spec::HardwareSpec& hw, const ResolveOptions& opt) {
  spec::EfficiencySpec e = default_efficiency(hw);
  CostParams c;
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
  c.peak_flop_per_s = hw.peak_flop_per_s;
  c.gemm_frac = e.gemm_frac;
  // naive (unused), flash v1, flash2, flash3. FA1 ~ 0.6x FA2: Dao 2023 reports
  // FA2 ~2x FA1 on the forward kernel and 1.3-1.7x on fwd+bwd; the published
  // llm-foundry (FA1/Triton) and FlashAttention-2 paper FA1 rows fit 0.6x
  // (attention time 1.28x too fast at 0.75x). FA3 needs Hopper: elsewhere it runs as FA2.
  c.attention_frac = {e.attention_frac, e.attention_frac * 0.6, e.attention_frac,
                      hw.has_fa3() ? std::min(0.95, e.attention_frac * 1.6) : e.attention_frac};
  for (int i = 0; i < spec::kKernelClassCount; ++i) c.mem_frac[i] = e.hbm_frac * e.class_mem_frac[i];
  c.tile_m = e.gemm_tile_m;
  c.tile_n = e.gemm_tile_n;
  c.gemm_k0 = std::max(0.0, e.gemm_k0);
  c.sms = std::max(1, hw.sm_count);
  c.hbm_bytes_per_s = hw.hbm_bytes_per_s;
  c.hbm_latency_s = e.hbm_latency_s;
  c.sram_bytes_per_s = hw.sram_bytes_per_s;
  c.launch_s = e.launch_overhead_s;
  // CUDA graphs replay queued kernels at ~0.6 us per node (published.yaml
  // launch_rtx5070ti_laptop_chain: 0.58 us per graph node).
  c.graph_launch_s = std::min(c.launch_s, 0.6e-6);
  c.vector_flop_per_s = std::max(hw.peak(spec::Peak::kFp32), 1e9);
  c.gpus_per_node = std::max(1, hw.interconnect.gpus_per_node);
  c.intra_bytes_per_s = hw.interconnect.intra_node_bytes_per_s > 0 ? hw.interconnect.intra_node_bytes_per_s : 25e9;
  c.intra_latency_s = hw.interconnect.intra_node_latency_s > 0 ? hw.interconnect.intra_node_latency_s : 5e-6;
  c.inter_bytes_per_s = hw.interconnect.inter_node_bytes_per_s > 0 ? hw.interconnect.inter_node_bytes_per_s : 12.5e9;
  c.inter_latency_s = hw.interconnect.inter_node_latency_s > 0 ? hw.interconnect.inter_node_latency_s : 10e-6;
  c.comm_frac = e.comm_frac;
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
    case graph::Collective::kP2p: return bytes;
  }
  return bytes;
}

double collective_time(graph::Collective kind, double bytes, double n, double span, const CostParams& c) {
  if (n <= 1 && kind != graph::Collective::kP2p) return 0;
  const bool intra = span <= c.gpus_per_node;
  const double bw = (intra ? c.intra_bytes_per_s : c.inter_bytes_per_s) * c.comm_frac;
  const double alpha = intra ? c.intra_latency_s : c.inter_latency_s;
  const double moved = collective_bytes_per_gpu(kind, bytes, n);
  switch (kind) {
    case graph::Collective::kAllReduce: {
      const double ring = 2 * (n - 1) * alpha + moved / bw;
      const double tree = 2 * std::ceil(std::log2(n)) * alpha + 2 * bytes / bw;
      return std::min(ring, tree);
    }
    case graph::Collective::kP2p: return alpha + moved / bw;
    default: return (n - 1) * alpha + moved / bw;
  }
}

double ridge_point(const CostParams& c, spec::Peak p) {
  return c.peak_flop_per_s[static_cast<int>(p)] / c.hbm_bytes_per_s;
}

KernelCost cost_kernel(const graph::Kernel& k, const CostParams& c, bool cuda_graphs) {
  KernelCost r;
  const double hbm = k.read_bytes + k.write_bytes;
  r.intensity = hbm > 0 ? k.flops / hbm : 0;
  if (k.cls == KernelClass::kCollective || k.cls == KernelClass::kP2p) {
    r.time_s = collective_time(k.comm.kind, k.comm.bytes, k.comm.group, k.comm.span, c);
    r.bound = Bound::kNetwork;
    return r;
  }
  const int pk = static_cast<int>(spec::peak_of(k.dtype));
  if (k.cls == KernelClass::kGemm) {
    const double peak = c.peak_flop_per_s[pk] > 0 ? c.peak_flop_per_s[pk] : c.vector_flop_per_s;
    const double per_sm = peak * c.gemm_frac[pk] / c.sms;
    const double tiles = std::ceil(k.gemm.m / c.tile_m) * std::ceil(k.gemm.n / c.tile_n) * k.gemm.batch;
    const double waves = std::ceil(tiles / c.sms);
    r.compute_s = waves * (c.tile_m * c.tile_n * (k.gemm.k + c.gemm_k0) * 2.0) / per_sm;
  } else if (k.cls == KernelClass::kAttention) {
    const double peak = c.peak_flop_per_s[pk] > 0 ? c.peak_flop_per_s[pk] : c.vector_flop_per_s;
    r.compute_s = k.flops / (peak * c.attention_frac[std::min<int>(k.attention, 3)]);
  } else {
    r.compute_s = k.flops / c.vector_flop_per_s;
  }
  if (hbm > 0) r.memory_s = hbm / (c.hbm_bytes_per_s * c.mem_frac[static_cast<int>(k.cls)]) + c.hbm_latency_s;
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
