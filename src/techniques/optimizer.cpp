#include <algorithm>

#include "ridgeline/graph/kernels.hpp"
#include "ridgeline/spec/precision.hpp"
#include "ridgeline/techniques/params.hpp"
#include "ridgeline/techniques/passes.hpp"

namespace ridgeline::techniques {

using graph::Kernel;
using spec::OptimizerKind;

namespace {

/// HBM bytes per trainable parameter of one fused optimizer step, and the
/// number of passes an unfused (per-op) implementation makes over the state.
struct StepTraffic {
  double read, write, flops, passes;
};

StepTraffic traffic(const spec::OptimizerSpec& o, double grad_b, double master_b, double weight_b,
                    double state_b, double muon_frac) {
  // Fused: read master weight, gradient, state; write master, state and the
  // 16-bit working copy (when master weights exist).
  const double copy = master_b > 0 ? weight_b : 0.0;
  const double p = master_b > 0 ? master_b : weight_b;
  switch (o.kind) {
    case OptimizerKind::kSgd: return {p + grad_b + state_b, p + state_b + copy, 3, o.momentum ? 3.0 : 2.0};
    case OptimizerKind::kAdafactor: return {p + 2 * grad_b + state_b, p + state_b + copy, 12, 6};
    case OptimizerKind::kCame: return {p + 3 * grad_b + state_b, p + state_b + copy, 20, 9};
    case OptimizerKind::kLion: return {p + grad_b + state_b, p + state_b + copy, 6, 4};
    case OptimizerKind::kSophia: return {p + grad_b + state_b, p + state_b + copy, 10, 6};
    case OptimizerKind::kAdam8bit: return {p + grad_b + state_b, p + state_b + copy, 16, 7};
    case OptimizerKind::kMuon: {
      // The hidden matrices (fraction f): the momentum update and its
      // Nesterov blend, written as the 16-bit matrix the orthogonalisation
      // reads, then the weight decay and the update read back (2 bytes each
      // way; the Newton-Schulz GEMMs are kernels of their own); the rest Adam(W).
      const double f = muon_frac;
      return {p + grad_b + state_b + 2 * f, p + state_b + copy + 2 * f, 6 * f + 15 * (1 - f), 5 * f + 8 * (1 - f)};
    }
    default: return {p + grad_b + state_b, p + state_b + copy, 15, 8};  // Adam(W)
  }
}

/// Muon's orthogonalisation of each hidden matrix's update (Jordan et al.
/// 2024, github.com/KellerJordan/Muon, zeropower_via_newtonschulz5): the
/// update X in bf16, transposed so that it is m x n with m <= n, then five
/// quintic Newton-Schulz iterations (ns_steps = 5), each
///   A = X Xᵀ            2 m² n FLOP
///   B = b A + c A A     2 m³       (the scaled sum is the GEMM's epilogue)
///   X = a X + B X       2 m² n     (likewise)
/// = 4 m² n + 2 m³ FLOP per iteration, 5 (4 m² n + 2 m³) per matrix. A
/// 4096 x 11008 matrix: 5 (4 x 4096² x 11008 + 2 x 4096³) = 4.38e12 FLOP.
/// Optimizer FLOPs, not model FLOPs (no MFU credit). Moonlight's update
/// scale 0.2 sqrt(max(A, B)) (Sec. 2.2) is one multiply of the elementwise step.
///
/// Under ZeRO (1, 2, 3, or FSDP) each rank holds a 1/N shard of a matrix's
/// momentum; the orthogonalisation needs the whole matrix. Moonlight's
/// distributed Muon (Liu et al. 2025, arXiv:2502.16982, Sec. 2.3 and
/// Algorithm 1) all-gathers the momentum-updated gradient over the
/// data-parallel group ("DP Gather"), orthogonalises the full matrix on
/// every rank ("Calculate Full Update") and keeps the local shard, whose
/// updated weights the usual ZeRO all-gather then spreads: one more
/// all-gather per step of the hidden matrices in the state's dtype, exposed
/// (it sits between the gradient reduction and the update), and the Newton-
/// Schulz FLOPs on every rank for every matrix it holds a shard of, not
/// 1/N of them. Expert matrices gather over the ranks holding the same
/// experts (DP x CP / EP). A TP-split matrix is orthogonalised as its TP
/// shard, the part a rank holds: the Algorithm gathers over DP only.
void append_muon(graph::Graph& g, const spec::PlanSpec& p, const LocalParams& lp, const spec::PrecisionPolicy& pol) {
  constexpr double kIterations = 5;  // ns_steps = 5 (muon.py), as Moonlight trains
  for (int i = 0; i < lp.matrix_groups; ++i) {
    const MatrixGroup& mg = lp.matrices[static_cast<size_t>(i)];
    const double m = std::min(mg.rows, mg.cols), n = std::max(mg.rows, mg.cols);
    const Kernel products[3] = {graph::gemm_kernel(m, m, n, 1, spec::Dtype::kBf16),   // X Xᵀ
                                graph::gemm_kernel(m, m, m, 1, spec::Dtype::kBf16),   // A A
                                graph::gemm_kernel(m, n, m, 1, spec::Dtype::kBf16)};  // B X
    for (Kernel k : products) {
      k.name = "muon_newton_schulz";
      k.op = graph::Op::kOptimizer;
      k.phase = spec::Phase::kOptimizer;
      k.flags = graph::kPerStep;
      k.model_flops = 0;
      k.count = mg.count * kIterations;
      g.kernels.push_back(k);
    }
  }
  if (p.parallel.zero < 1) return;
  const auto groups = data_parallel_groups(p);
  const bool split = p.parallel.ep > 1 && lp.expert_weights > 0;
  const double expert = split ? lp.expert_hidden_matrix_elems : 0.0;
  const double span = std::max(1, p.parallel.tp) * groups.dense;
  auto gather = [&](const char* name, double elems, double group) {
    if (group <= 1 || elems <= 0) return;
    Kernel k;
    k.name = name;
    k.op = graph::Op::kCollective;
    k.cls = spec::KernelClass::kCollective;
    k.phase = spec::Phase::kCommunication;
    k.comm = {graph::Collective::kAllGather, elems * pol.state_elem_bytes, group, span};
    k.flags = graph::kPerStep;
    k.count = 1;
    k.launches = 1;
    g.kernels.push_back(k);
  };
  gather("muon_dp_gather", lp.hidden_matrix_elems - expert, groups.dense);
  if (split) gather("muon_dp_expert_gather", expert, groups.expert);
}

}  // namespace

void apply_optimizer(graph::Graph& g, const spec::PlanSpec& p, const LocalParams& lp) {
  const spec::PrecisionPolicy pol = spec::precision_policy(p);
  const double weight_b = pol.weight_bytes;
  const double grad_b = pol.gradient_bytes;
  const double master_b = pol.master_bytes;
  const double state_b = optimizer_state_bytes(p.optimizer, lp, pol.state_elem_bytes);
  // ZeRO >= 1 shards the optimizer step as it shards the state: dense
  // parameters over DP x CP ranks, experts over DP x CP / EP.
  const double P = zero_shard(p, data_parallel_groups(p), 1, lp.trainable, lp.expert_trainable);
  const bool muon = p.optimizer.kind == OptimizerKind::kMuon;
  const double muon_frac = muon && lp.trainable > 0 ? std::min(1.0, lp.hidden_matrix_elems / lp.trainable) : 0.0;
  const StepTraffic tr = traffic(p.optimizer, grad_b, master_b, weight_b, state_b, muon_frac);
  // Optimizer offload: the step runs in CPU Adam on the host
  // (techniques::offload_cost), no optimizer kernel on the GPU.
  if (!p.offload.optimizer_on_cpu()) {
    // Built in place: a kernel filled field by field on the stack and then
    // copied whole is read back before its narrow stores retire.
    Kernel& k = g.kernels.emplace_back();
    k.name = "optimizer_step";
    k.op = graph::Op::kOptimizer;
    k.cls = spec::KernelClass::kOptimizer;
    k.dtype = spec::Dtype::kFp32;
    k.phase = spec::Phase::kOptimizer;
    k.flags = graph::kPerStep;
    k.count = 1;
    k.flops = tr.flops * P;
    if (p.fusion == spec::Fusion::kEager) {
      // One kernel per op per tensor (foreach over lists still makes a pass per
      // op): each pass reads and writes the state it touches.
      k.read_bytes = tr.read * P * (tr.passes / 3.0);
      k.write_bytes = tr.write * P * (tr.passes / 3.0);
      k.launches = tr.passes * std::max(1.0, lp.tensors / 16.0);
    } else {
      // Fused multi-tensor kernel: one pass (apex FusedAdam / torch fused=True).
      k.read_bytes = tr.read * P;
      k.write_bytes = tr.write * P;
      k.launches = std::max(1.0, lp.tensors / 64.0);
    }
  }
  if (muon) append_muon(g, p, lp, pol);
  // Sophia's Hessian step (apply_hessian_estimate) reduces its gradients
  // across data-parallel ranks as a training step does (the last micro-step
  // syncs), and a ZeRO-3 or pipelined step gathers and sends as one does;
  // the weights do not change, so no parameter all-gather follows.
  if (p.optimizer.kind == OptimizerKind::kSophia) {
    const double every = std::max(1, p.optimizer.hessian_interval);
    const size_t n = g.kernels.size();
    for (size_t i = 0; i < n; ++i) {
      const Kernel& c = g.kernels[i];
      const bool comm = c.cls == spec::KernelClass::kCollective || c.cls == spec::KernelClass::kP2p;
      const bool param_gather = c.phase == spec::Phase::kCommunication && c.comm.kind == graph::Collective::kAllGather;
      if (!comm || param_gather) continue;
      Kernel h = c;
      h.name = "sophia_hessian_comm";
      h.count = c.count / every;
      g.kernels.push_back(h);
    }
  }
  if (p.precision == spec::Precision::kFp16) {
    // Dynamic loss scaling: unscale the gradients and check them for inf/NaN.
    Kernel u;
    u.name = "grad_unscale_inf_check";
    u.op = graph::Op::kGradUnscale;
    u.cls = spec::KernelClass::kReduction;
    u.phase = spec::Phase::kOptimizer;
    u.flags = graph::kPerStep;
    u.count = 1;
    u.read_bytes = P * grad_b;
    u.write_bytes = P * grad_b;
    u.flops = 2 * P;
    u.launches = std::max(1.0, lp.tensors / 64.0) + 1;
    g.kernels.push_back(u);
  }
}

/// Sophia (Liu et al. 2023) estimates the diagonal Hessian every k steps
/// with one more forward and backward pass (Sophia-G: a backward of the loss
/// of labels sampled from the model's own logits). The authors' training
/// loop (Liuhong99/Sophia, train_sophiag.py) runs that pass over every one of
/// the step's gradient_accumulation_steps micro-batches, so the estimate
/// costs 1/k of a whole step's forward and backward, not of one micro-batch:
/// each forward, backward and recompute kernel of the micro-batch (with its
/// per-micro-batch communication) once more at count / k, in its own phase,
/// so the engine repeats it for every micro-batch of the step and the
/// pipeline's bubble grows with it. No model FLOPs (not training
/// compute), nothing saved (the pass runs after the step's own backward).
void apply_hessian_estimate(graph::Graph& g, const spec::MicrobatchPlan& p) {
  if (p.optimizer.kind != OptimizerKind::kSophia) return;
  const double every = std::max(1, p.optimizer.hessian_interval);
  auto& ks = g.kernels;
  const size_t n = ks.size();
  for (size_t i = 0; i < n; ++i) {
    const Kernel& k = ks[i];
    if (k.has(graph::kPerStep)) continue;
    if (k.phase != spec::Phase::kForward && k.phase != spec::Phase::kBackward && k.phase != spec::Phase::kRecompute)
      continue;
    Kernel h = k;
    h.name = "sophia_hessian_estimate";
    h.flags = static_cast<std::uint16_t>(k.flags & ~graph::kFp8Gemm);  // its fp8 weights are the step's
    h.count = k.count / every;
    h.saved_bytes = 0;
    h.saved_core_bytes = 0;
    h.workspace_bytes = 0;
    h.model_flops = 0;
    ks.push_back(h);
  }
}

}  // namespace ridgeline::techniques
