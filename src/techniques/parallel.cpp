#include <algorithm>
#include <cmath>

#include "ridgeline/graph/memory_kernels.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/precision.hpp"
#include "ridgeline/techniques/params.hpp"
#include "ridgeline/techniques/passes.hpp"

namespace ridgeline::techniques {

using graph::Collective;
using graph::Kernel;

namespace {

/// A collective or p2p kernel built in place at the end of `ks` (no
/// 208-byte temporary to copy); the reference holds until the next is added.
Kernel& add_comm(std::vector<Kernel>& ks, std::string_view name, Collective kind, spec::Phase phase, double bytes,
                 double group, double span, double count, std::uint16_t flags) {
  Kernel& k = ks.emplace_back();
  k.name = name;
  k.op = kind == Collective::kP2p ? graph::Op::kP2p : graph::Op::kCollective;
  k.cls = kind == Collective::kP2p ? spec::KernelClass::kP2p : spec::KernelClass::kCollective;
  k.phase = phase;
  k.comm = {kind, bytes, group, span};
  k.count = count;
  k.flags = flags;
  k.launches = 1;
  return k;
}

}  // namespace

/// Megatron-LM rank order: TP innermost, then CP, then DP, then PP. A group's
/// span (stride x size) decides whether it stays inside a node.
///  - TP (Shoeybi et al. 2019): per layer two all-reduces of [T, h] forward
///    and two backward; with SP (Korthikanti et al. 2022) each becomes an
///    all-gather + reduce-scatter pair of the same total volume.
///  - CP (ring attention): K/V all-gathered forward, dK/dV reduce-scattered
///    backward, overlapped with the attention blocks.
///  - EP: all-to-all dispatch and combine, forward and backward.
///  - PP: activations and their gradients sent between stages (p2p).
///  - DP: gradient all-reduce once per step, bucketed and overlapped with
///    backward; ZeRO-1/2: reduce-scatter of gradients + all-gather of updated
///    weights; ZeRO-3: weights all-gathered before forward and again before
///    backward of every micro-batch (prefetched), gradients reduce-scattered.
void apply_parallel(graph::Graph& g, const spec::ModelSpec& m, const spec::MicrobatchPlan& p,
                    const spec::HardwareSpec& hw) {
  (void)hw;
  const auto& par = p.parallel;
  const double t = std::max(1, par.tp), cp = std::max(1, par.cp);
  const double ep = std::max(1, par.ep);
  const double e = g.act_bytes;
  const double L = g.layers;
  // Whether a recomputation re-runs whole layers' forwards, collectives
  // included, and how many (techniques/recompute.cpp).
  const auto rk = p.recompute.kind;
  const bool rerun_layers =
      rk == spec::RecomputeKind::kFull || rk == spec::RecomputeKind::kEvery || rk == spec::RecomputeKind::kSqrt;
  const double recomputed_layers =
      p.recompute.block_layers > 0 ? std::min<double>(p.recompute.block_layers, L) : L;
  const double T = g.tokens;
  const double h = m.hidden;
  auto& ks = g.kernels;
  const std::uint16_t layer = graph::kLayer;
  // --tp-comm-overlap hides the framework's share of each TP collective
  // behind the GEMMs it is chunked with (frameworks/*.yaml
  // tp_overlap_hidden); the rest stays exposed.
  const spec::FrameworkSpec& fw = spec::framework(p.framework);
  const double tp_hidden = par.tp_comm_overlap ? fw.tp_overlap_hidden : 0.0;
  // How the hidden share runs: NCCL beside the GEMMs, or Transformer
  // Engine's userbuffers (transformer_engine/pytorch/module/base.py,
  // initialize_ub: the methods table and get_default_config): the
  // all-gathers in front of a GEMM (qkv_fprop, fc1_fprop, proj_dgrad,
  // fc2_dgrad) by ring_exchange on the copy engines (use_ce); the forward
  // reduce-scatters (proj_fprop, fc2_fprop: pipeline) and the backward ones
  // beside an unrelated GEMM (bulk) on num_sm SMs.
  const bool userbuffers = par.tp_comm_overlap && par.sp && fw.tp_overlap_comm_sms > 0;
  auto overlapped = [&](Kernel& k, bool ring_exchange) {
    if (userbuffers) {
      k.flags |= ring_exchange ? graph::kCommCopyEngine : graph::kCommUserbuffers;
      if (!ring_exchange) k.comm.sms = fw.tp_overlap_comm_sms;
    }
  };
  // Under userbuffers the hidden share follows from how each collective is
  // split against its GEMM (transformer_engine/pytorch/module/base.py
  // get_default_config, line 387: "num_splits": tp_size for ring_exchange,
  // else 4): a ring exchange runs TP steps, each chunk's GEMM beside the
  // next chunk's transfer, so the first of TP transfers waits (hidden
  // 1 - 1/TP); a pipelined reduce-scatter follows its GEMM's 4 chunks, the
  // last one's waits (hidden 3/4). Otherwise the framework's share.
  const double hidden_ring = userbuffers ? 1.0 - 1.0 / t : tp_hidden;
  const double hidden_pipeline = userbuffers ? 1.0 - 1.0 / 4 : tp_hidden;
  // Each message is costed whole (collectives cost by message size); the
  // hidden share is a share of the count.
  auto tp = [&](std::string_view name, Collective kind, spec::Phase phase, double bytes, double count,
                bool ring_exchange) {
    const double hidden = ring_exchange ? hidden_ring : hidden_pipeline;
    if (hidden > 0)
      overlapped(add_comm(ks, name, kind, phase, bytes, t, t, count * hidden, layer | graph::kOverlapped),
                 ring_exchange);
    if (hidden < 1) add_comm(ks, name, kind, phase, bytes, t, t, count * (1 - hidden), layer);
  };
  if (t > 1) {
    const double S = T * h * e;
    // Backward, the two column-parallel linears (QKV, FC1) reduce their
    // input gradients; a framework with tp_backward_overlap launches that
    // collective asynchronously and runs the weight-gradient GEMM beside it
    // (spec::FrameworkSpec::tp_backward_overlap).
    auto tp_dgrad = [&](std::string_view name, Collective kind) {
      if (fw.tp_backward_overlap)
        overlapped(add_comm(ks, name, kind, spec::Phase::kBackward, S, t, t, 2 * L, layer | graph::kOverlapped),
                   false);
      else
        tp(name, kind, spec::Phase::kBackward, S, 2 * L, false);
    };
    if (par.sp) {
      tp("tp_all_gather", Collective::kAllGather, spec::Phase::kForward, S, 2 * L, true);
      tp("tp_reduce_scatter", Collective::kReduceScatter, spec::Phase::kForward, S, 2 * L, false);
      // The row-parallel linears' output gradients are gathered before their GEMMs: nothing to hide behind.
      tp("tp_all_gather", Collective::kAllGather, spec::Phase::kBackward, S, 2 * L, true);
      tp_dgrad("tp_reduce_scatter", Collective::kReduceScatter);
      // SP re-gathers the layer-norm outputs for the weight-gradient GEMMs (overlapped in Megatron).
      overlapped(add_comm(ks, "tp_all_gather_wgrad", Collective::kAllGather, spec::Phase::kBackward, S, t, t,
                          2 * L, layer | graph::kOverlapped),
                 false);
    } else {
      tp("tp_all_reduce", Collective::kAllReduce, spec::Phase::kForward, S, 2 * L, false);
      tp_dgrad("tp_all_reduce", Collective::kAllReduce);
    }
    // Recomputing whole layers re-runs their forward collectives too: every
    // layer's, or under Megatron's block method (block:K) the first K's.
    if (rerun_layers) {
      if (par.sp) {
        tp("tp_all_gather", Collective::kAllGather, spec::Phase::kRecompute, S, 2 * recomputed_layers, true);
        tp("tp_reduce_scatter", Collective::kReduceScatter, spec::Phase::kRecompute, S, 2 * recomputed_layers,
           false);
      } else {
        tp("tp_all_reduce", Collective::kAllReduce, spec::Phase::kRecompute, S, 2 * recomputed_layers, false);
      }
    }
    // Vocabulary-parallel embedding (forward all-reduce) and cross-entropy (small reductions).
    add_comm(ks, "tp_embedding_all_reduce", Collective::kAllReduce, spec::Phase::kForward, S, t, t, 1, 0);
    add_comm(ks, "tp_loss_all_reduce", Collective::kAllReduce, spec::Phase::kForward, T * 4 * 3, t, t, 1, 0);
  }
  if (cp > 1) {
    const double kv = 2 * T * std::max(1.0, m.kv_heads / t) * m.head_dim * e;  // local K and V
    // The ring's next K/V chunk is sent and received (torch.distributed
    // isend/irecv, NCCL) while the attention kernel works on the current one
    // (TE context_parallel.py, flash_attn_p2p_communicate): beside attention,
    // not a persistent GEMM.
    const std::uint16_t ring = layer | graph::kOverlapped | graph::kBesideAttention;
    add_comm(ks, "cp_kv_all_gather", Collective::kAllGather, spec::Phase::kForward, kv * cp, cp, t * cp, L, ring);
    add_comm(ks, "cp_kv_all_gather", Collective::kAllGather, spec::Phase::kBackward, kv * cp, cp, t * cp, L, ring);
    add_comm(ks, "cp_dkv_reduce_scatter", Collective::kReduceScatter, spec::Phase::kBackward, kv * cp, cp,
             t * cp, L, ring);
    // Recomputing whole layers re-runs their attention's forward ring.
    if (rerun_layers)
      add_comm(ks, "cp_kv_all_gather", Collective::kAllGather, spec::Phase::kRecompute, kv * cp, cp, t * cp,
               recomputed_layers, ring);
    // The ring's merge of its steps' partial results (frameworks/NAME.yaml
    // cp_merge). Forward: each step's output rescaled by its log-sum-exp and
    // added into the running output (Transformer Engine's
    // flash_attn_fwd_out_correction, one jit-fused kernel a step, after the
    // ring: context_parallel.py, TE v1.4-v2.5); backward: each step's dQ,
    // dK and dV added into their accumulators (dq.add_, dk.add_, dv.add_).
    // The last CP rank merges every step over all its queries, the others
    // half of theirs past their own; the ring waits for the last, so each
    // step is costed over the whole chunk.
    const bool mla = m.is_mla();
    const double heads = m.heads / t, kv_heads = mla ? heads : std::max(1.0, m.kv_heads / t);
    const double d_qk = mla ? m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim : m.head_dim;
    const double d_v = mla ? m.mla.v_head_dim : m.head_dim;
    const double out = T * heads * d_v, grads = T * (heads * d_qk + kv_heads * (d_qk + d_v));
    auto merge = [&](std::string_view name, spec::Phase phase, double elements, double bytes, int kernels,
                     double count) {
      Kernel& k = ks.emplace_back(
          graph::elementwise_kernel(elements * cp, 2, e >= 4 ? spec::Dtype::kFp32 : spec::Dtype::kBf16));
      k.name = name;
      k.phase = phase;
      k.impl = graph::kImplTuned;
      k.read_bytes = elements * cp * bytes * 2 / 3;
      k.write_bytes = elements * cp * bytes / 3;
      k.launches = cp * kernels;
      k.count = count;
      k.flags |= layer;
    };
    const bool compiled = p.fusion == spec::Fusion::kCompiled;
    const double fwd_bytes = compiled ? fw.cp_merge_forward_bytes_compiled : fw.cp_merge_forward_bytes;
    const int fwd_kernels = compiled ? fw.cp_merge_forward_kernels_compiled : fw.cp_merge_forward_kernels;
    if (fwd_bytes > 0) {
      merge("cp_out_merge", spec::Phase::kForward, out, fwd_bytes, fwd_kernels, L);
      if (rerun_layers)
        merge("cp_out_merge", spec::Phase::kRecompute, out, fwd_bytes, fwd_kernels, recomputed_layers);
    }
    if (fw.cp_merge_backward_bytes > 0)
      merge("cp_grad_merge", spec::Phase::kBackward, grads, fw.cp_merge_backward_bytes,
            fw.cp_merge_backward_kernels, L);
  }
  if (m.is_moe() && ep > 1) {
    // Dispatch and combine in the MoE layers only (not the dense first ones).
    // Overlapped (ep_comm_overlap), they run beside another micro-batch's
    // compute, taking the SMs their channels hold from it
    // (megatron/core/model_parallel_config.py:343-346: "Overlap EP A2A
    // communications with independent computations of different
    // micro-batches in 1f1b phase"). With the shared expert on its own
    // stream (moe.shared_expert_overlap) they hide behind the shared
    // expert's kernels of the same phase only (Megatron-Core
    // shared_experts.py: the shared expert's fc1 runs while the dispatch
    // is in flight, fc2 while the combine is; its backward is scheduled
    // first, set_tensor_grad_fn_sequence_sr, beside the backward ones).
    const double moe_layers = L - g.dense_layers;
    const std::uint16_t a2a = p.parallel.ep_comm_overlap       ? layer | graph::kOverlapped
                              : p.moe.shared_expert_overlap ? layer | graph::kBesideSharedExpert
                                                              : layer;
    const double recomputed_moe = recomputed_layers * (moe_layers / std::max(1.0, L));
    if (p.moe.dispatcher == spec::MoeDispatcher::kAllToAll) {
      // Megatron-Core's alltoall dispatcher: every token-expert pair a row
      // of its own, at the activations' width, whatever the routing.
      const double S = T * m.moe.top_k * h * e;
      add_comm(ks, "ep_all_to_all", Collective::kAllToAll, spec::Phase::kForward, S, ep, t * cp * ep,
               2 * moe_layers, a2a);
      add_comm(ks, "ep_all_to_all", Collective::kAllToAll, spec::Phase::kBackward, S, ep, t * cp * ep,
               2 * moe_layers, a2a);
      // Recomputing whole layers re-runs their dispatch and combine.
      if (rerun_layers)
        add_comm(ks, "ep_all_to_all", Collective::kAllToAll, spec::Phase::kRecompute, S, ep, t * cp * ep,
                 2 * recomputed_moe, layer);
    } else {
      // DeepEP: the EP group's nodes and ranks a node, as the collective
      // cost places a group (consecutive ranks fill a node).
      const double G = std::max(1, hw.interconnect.gpus_per_node), span = t * cp * ep;
      double per_node = ep, nodes = 1;
      if (span > G) {
        per_node = std::clamp(std::floor(G / std::max(1.0, span / ep)), 1.0, ep);
        nodes = std::ceil(ep / per_node);
      }
      const DispatchCopies c = node_dispatch_copies(m, nodes, per_node);
      // A token's bytes towards the experts: fp8 with one fp32 scale per
      // 128 channels under the blockwise recipe (DeepSeek-V3 report Sec.
      // 3.3: "we quantize the activation before MoE up-projections into
      // FP8 and then apply dispatch components"; the same for the
      // activation gradient before the down-projections, backward), else
      // the activations' width; back from them (combine, and dispatch's
      // backward) at the activations' width ("both the forward and
      // backward combine components are retained in BF16").
      const bool fp8_dispatch = p.precision == spec::Precision::kFp8 && p.fp8_recipe == spec::Fp8Recipe::kBlockwise;
      const double to_experts = fp8_dispatch ? h * 1 + h / 128 * 4 : h * e;
      const double from_experts = h * e;
      auto node_a2a = [&](std::string_view name, spec::Phase phase, double token_bytes, double count,
                          std::uint16_t flags) {
        add_comm(ks, name, Collective::kNodeAllToAll, phase, T * c.network * token_bytes, ep, span, count, flags)
            .comm.link_bytes = T * c.link * token_bytes;
      };
      node_a2a("ep_dispatch", spec::Phase::kForward, to_experts, moe_layers, a2a);
      node_a2a("ep_combine", spec::Phase::kForward, from_experts, moe_layers, a2a);
      node_a2a("ep_dispatch", spec::Phase::kBackward, to_experts, moe_layers, a2a);  // the combine's backward
      node_a2a("ep_combine", spec::Phase::kBackward, from_experts, moe_layers, a2a);  // the dispatch's backward
      if (rerun_layers) {
        node_a2a("ep_dispatch", spec::Phase::kRecompute, to_experts, recomputed_moe, layer);
        node_a2a("ep_combine", spec::Phase::kRecompute, from_experts, recomputed_moe, layer);
      }
    }
  }
}

DispatchCopies node_dispatch_copies(const spec::ModelSpec& m, double nodes, double per_node) {
  DispatchCopies out;
  const double N = std::max(1.0, nodes), g = std::max(1.0, per_node), k = m.moe.top_k;
  const double n_group = m.moe.groups, M = m.moe.topk_groups;
  double D = N * (1 - std::pow(1 - 1 / N, k));
  if (n_group > 0 && M > 0 && M < n_group) {
    if (n_group >= N) {
      // C(n_group - q, M) / C(n_group, M) = prod_{i<M} (n_group - q - i) / (n_group - i).
      const double q = n_group / N;
      double none = 1;
      for (int i = 0; i < static_cast<int>(M); ++i) none *= std::max(0.0, n_group - q - i) / (n_group - i);
      D = N * (1 - none);
    } else {
      D = std::min(D, M * N / n_group);
    }
  }
  out.nodes = std::min({D, k, N});
  out.network = out.nodes * (N - 1) / N;
  // NVLink: DeepEP sends a token to a rank once, whatever number of that
  // rank's experts it chose (deepseek-ai/DeepEP deep_ep/buffer.py,
  // Buffer.get_dispatch_layout: is_token_in_rank "[num_tokens, num_ranks]
  // ... whether a token be sent to a rank"), and the combine returns one
  // partial sum per rank. A node the token reaches receives k / D of its
  // experts, drawn without replacement from the node's E / N (routing
  // balanced), each rank holding E / (N g): a rank is missed with
  // probability C(E/N - E/(Ng), k/D) / C(E/N, k/D) (lgamma: k/D need not be
  // whole). Every rank hit but the one the copy lands on is an NVLink copy.
  const double E = m.moe.experts, En = E / N, Er = En / g, kn = k / std::max(1.0, out.nodes);
  double miss = 0;
  if (E > 0 && kn <= En - Er)
    miss = std::exp(std::lgamma(En - Er + 1) + std::lgamma(En - kn + 1) - std::lgamma(En - Er - kn + 1) -
                    std::lgamma(En + 1));
  out.link = E > 0 ? out.nodes * (g - 1) * (1 - miss) : k * (g - 1) / g;
  return out;
}

void apply_data_parallel(graph::Graph& g, const spec::ModelSpec& m, const spec::PlanSpec& p, const LocalParams& lp) {
  const auto& par = p.parallel;
  const double t = std::max(1, par.tp), cp = std::max(1, par.cp), dp = std::max(1, par.dp);
  const double pp = std::max(1, par.pp);
  const double e = g.act_bytes, T = g.tokens, h = m.hidden;
  auto& ks = g.kernels;
  // Pipeline p2p (here rather than in apply_parallel: its link depends on the
  // DP degree and its count on the virtual stages, neither of which changes
  // the micro-batch graph).
  if (pp > 1) {
    // Megatron's scatter/gather (Narayanan et al. 2021, Sec. 4.1): each TP rank
    // sends 1/t of the boundary activation, with or without SP.
    const double S = T * h * e / t;
    const double v = std::max(1, par.virtual_stages);
    const double span = 2 * t * cp * dp;
    // Megatron-Core's interleaved schedule posts the next chunk's send and
    // receive before the current chunk's compute (overlap_p2p_comm).
    const std::uint16_t p2p =
        v > 1 && spec::framework(p.framework).pp_p2p_overlap_interleaved ? std::uint16_t{graph::kOverlapped} : std::uint16_t{0};
    add_comm(ks, "pp_send_recv", Collective::kP2p, spec::Phase::kForward, S, 2, span, v, p2p);
    add_comm(ks, "pp_send_recv", Collective::kP2p, spec::Phase::kBackward, S, 2, span, v, p2p);
  }
  const auto groups = data_parallel_groups(p);
  const double dgroup = groups.dense;  // parameters are replicated across CP ranks too
  if (dgroup > 1 || par.zero > 0) {
    const spec::PrecisionPolicy pol = spec::precision_policy(p);
    // Weights are gathered at working precision; fp8 primary weights in fp8
    // (megatron/training/arguments.py --fp8-param-gather: "perform the param
    // all-gather in fp8"), their share of the bytes at the quantized width.
    const double wb = pol.fp8_primary && lp.weights > 0
                          ? pol.weight_bytes - lp.linear_weights / lp.weights *
                                                   (pol.weight_bytes - pol.quant.weight_bytes_per_elem)
                          : pol.weight_bytes;
    // ZeRO-3 gathers the weights as stored: a frozen QLoRA base's linear
    // weights in NF4 (torchao's NF4Tensor implements FSDP2's
    // fsdp_pre_all_gather and is gathered quantized), the rest as above.
    const double zb =
        lp.frozen > 0 && lp.weights > 0 && !pol.fp8_primary ? stored_weight_bytes(pol, lp) / lp.weights : wb;
    const double span = t * dgroup;
    // The gradient reduction beside the backward, or after it when the
    // plan says so (Megatron-LM without --overlap-grad-reduce).
    const std::uint16_t reduce_overlap = par.grad_reduce_exposed ? 0 : static_cast<std::uint16_t>(graph::kOverlapped);
    const std::uint16_t step = graph::kPerStep | reduce_overlap;
    // Under EP, expert gradients are reduced (and ZeRO-sharded) only among
    // the DP x CP / EP ranks that hold the same experts.
    const bool split = par.ep > 1 && lp.expert_weights > 0;
    const double expert_trainable = split ? lp.expert_trainable : 0.0;
    const double expert_weights = split ? lp.expert_weights : 0.0;
    // Kernel names are views: string literals only.
    struct Names {
      const char* all_reduce;
      const char* reduce_scatter;
      const char* all_gather;
      const char* zero3_gather;
    };
    // The framework decides when gradients move and in what precision
    // (frameworks/*.yaml): per step (DDP no_sync, Megatron's distributed
    // optimizer) or after every micro-batch's backward (FSDP without no_sync,
    // DeepSpeed ZeRO >= 2). Under PP a framework may keep the parameters
    // gathered (pp_params: one gather per step) and the gradients unsharded
    // (pp_grads: one reduce-scatter per step, in the last micro-batch's
    // backward) across micro-batches (torchtitan: torchtitan/distributed/
    // fsdp.py:129-132; PyTorch's pipeline stage syncs FSDP gradients only
    // in the last backward). Per FSDP unit (a decoder layer) the first
    // forward gather and the last backward reduce have nothing to hide behind.
    const spec::FrameworkSpec& fw = spec::framework(p.framework);
    const bool pp_whole_grads = fw.pp_grads_unsharded && pp > 1;
    const bool per_microbatch = fw.grad_reduce_per_microbatch && !pp_whole_grads &&
                                (fw.sharding != spec::ParamSharding::kZero || par.zero >= 2);
    // Gradients are reduced in the framework's reduce dtype, else as they
    // are accumulated (fp32 main gradients: 4 bytes).
    const double gb = fw.reduce_bytes > 0 ? fw.reduce_bytes : pol.gradient_bytes;
    const double units = std::max(1.0, static_cast<double>(m.layers) / pp);
    const bool gather_per_step = fw.pp_params_unsharded && pp > 1;
    const bool overlap_gather = spec::overlap_param_gather_of(p);
    // FSDP's ZeRO-2 (FSDP1 ShardingStrategy.SHARD_GRAD_OP, FSDP2
    // reshard_after_forward=False) gathers as ZeRO-3 does before each unit's
    // forward and keeps the unit's parameters until its backward has run:
    // "unshards before the forward, does not reshard them after the
    // forward, and only reshards them after the backward computation"
    // (torch/distributed/fsdp/api.py, ShardingStrategy). Its gathers are
    // the forward half of ZeRO-3's, per unit and per micro-batch, not one
    // all-gather of the updated shards after the step (Megatron's
    // distributed optimizer, DeepSpeed ZeRO-1/2).
    const bool fsdp_zero2 = par.zero == 2 && !gather_per_step &&
                            (fw.sharding == spec::ParamSharding::kFsdp1 || fw.sharding == spec::ParamSharding::kFsdp2);
    auto reduce = [&](const Names& n, double trainable, double weights, double group) {
      if (group <= 1) return;
      const Collective kind = par.zero == 0 ? Collective::kAllReduce : Collective::kReduceScatter;
      const char* name = par.zero == 0 ? n.all_reduce : n.reduce_scatter;
      // Per-unit transfers are one collective per unit: each pays NCCL's
      // per-call latency, which across nodes grows with the ring's N - 1
      // steps (hundreds of microseconds to milliseconds at 64+ nodes).
      if (per_microbatch) {
        if (units > 1)
          add_comm(ks, name, kind, spec::Phase::kBackward, trainable * gb / units, group, span, units - 1,
                   reduce_overlap);
        add_comm(ks, name, kind, spec::Phase::kBackward, trainable * gb / units, group, span, 1, 0);
      } else {
        add_comm(ks, name, kind, spec::Phase::kCommunication, trainable * gb, group, span, 1, step);
      }
      // The updated parameters' all-gather after the step: exposed, or with
      // --overlap-param-gather dispatched bucket by bucket from the next
      // forward's pre-hooks, so only the first bucket waits
      // (megatron/core/distributed/distributed_data_parallel.py: buckets of
      // max(40M, 1M x DP) parameters, line 134).
      if (par.zero >= 1 && par.zero <= 2 && !fsdp_zero2) {
        const double bytes = trainable * wb;
        if (!overlap_gather) {
          add_comm(ks, n.all_gather, Collective::kAllGather, spec::Phase::kCommunication, bytes, group, span, 1,
                   graph::kPerStep);
        } else {
          const double first = std::min(1.0, std::max(4e7, 1e6 * group) / std::max(1.0, trainable));
          add_comm(ks, n.all_gather, Collective::kAllGather, spec::Phase::kCommunication, bytes * first, group,
                   span, 1, graph::kPerStep);
          if (first < 1)
            add_comm(ks, n.all_gather, Collective::kAllGather, spec::Phase::kCommunication, bytes * (1 - first),
                     group, span, 1, graph::kPerStep | graph::kOverlapped | graph::kNextForward);
        }
      }
      if (par.zero == 3 || fsdp_zero2) {
        if (gather_per_step) {
          add_comm(ks, n.zero3_gather, Collective::kAllGather, spec::Phase::kForward, weights * zb, group,
                   span, 1, graph::kPerStep | graph::kOverlapped);
          return;
        }
        // Parameters gathered before each forward and each backward (per
        // micro-batch, prefetched), in the framework's calls per layer
        // (spec::zero3_gathers_per_layer: one per FSDP unit; per module
        // under DeepSpeed), each paying its collective's latency; the first
        // call of the forward waits.
        const double calls = units * spec::zero3_gathers_per_layer(fw, m, par.tp, par.ep);
        const double message = weights * zb / calls;
        if (calls > 1)
          add_comm(ks, n.zero3_gather, Collective::kAllGather, spec::Phase::kForward, message, group, span,
                   calls - 1, graph::kOverlapped);
        add_comm(ks, n.zero3_gather, Collective::kAllGather, spec::Phase::kForward, message, group, span, 1, 0);
        if (par.zero == 3)  // FSDP's ZeRO-2 keeps the forward's gathered parameters for the backward
          add_comm(ks, n.zero3_gather, Collective::kAllGather, spec::Phase::kBackward, message, group, span, calls,
                   graph::kOverlapped);
      }
    };
    static constexpr Names kDense{"dp_grad_all_reduce", "dp_grad_reduce_scatter", "dp_param_all_gather",
                                  "zero3_param_all_gather"};
    static constexpr Names kExpert{"dp_expert_grad_all_reduce", "dp_expert_grad_reduce_scatter",
                                   "dp_expert_param_all_gather", "zero3_expert_param_all_gather"};
    reduce(kDense, lp.trainable - expert_trainable, lp.weights - expert_weights, dgroup);
    if (split) reduce(kExpert, expert_trainable, expert_weights, groups.expert);
  }
}

}  // namespace ridgeline::techniques
