#include "ridgeline/memory/memory.hpp"

#include <algorithm>

#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/precision.hpp"
#include "ridgeline/techniques/params.hpp"

namespace ridgeline::memory {

using techniques::PipelineStage;

double in_flight_microbatches(const spec::PlanSpec& p, double m, PipelineStage stage) {
  const double pp = std::max(1, p.parallel.pp);
  if (pp <= 1) return 1;
  // DualPipe (DeepSeek-V3 report Table 2): PP + 1 micro-batches' activations
  // on every GPU, against 1F1B's PP on the first stage.
  if (p.parallel.pp_schedule == spec::PpSchedule::kDualPipe) return std::min(pp + 1, std::max(1.0, m));
  const double v = std::max(1, p.parallel.virtual_stages);
  // 1F1B warms stage i up with p - i - 1 forwards; Megatron's interleaved
  // schedule with 2 (p - i - 1) + (v - 1) p chunk forwards; each then holds one more.
  const double first = v > 1 ? pp + (pp - 1) / v : pp;
  // kMiddle: stage 1 (uneven stages have no virtual stages): p - 1.
  const double n = stage == PipelineStage::kLast ? ((v - 1) * pp + 1) / v
                   : stage == PipelineStage::kMiddle ? pp - 1
                                                     : first;
  return std::min(n, std::max(1.0, m));
}

double layer_saved_bytes(const graph::Graph& g) {
  double s = 0;
  for (const auto& k : g.kernels)
    if (k.phase == spec::Phase::kForward && k.has(graph::kLayer))
      s += (k.saved_bytes + k.saved_core_bytes) * (k.count / std::max(1, g.layers));
  return s;
}

GraphFacts facts(const graph::Graph& g) {
  GraphFacts f;
  for (const auto& k : g.kernels) {
    const double s = k.saved_bytes + k.saved_core_bytes;
    if (k.phase == spec::Phase::kRecompute) {
      // What one segment's recomputation rebuilds, alive during its backward.
      f.recompute_working += s * k.saved_fraction * k.count;
      continue;
    }
    if (k.phase != spec::Phase::kForward) continue;
    f.logits_transient = std::max(f.logits_transient, k.workspace_bytes);
    if (k.has(graph::kLayer)) {
      // Per layer: a kernel in only some of the layers (an MoE model's
      // dense-layer or expert MLP) counts its instances' share.
      const double per_layer = s * (k.count / std::max(1, g.layers));
      f.layer_saved += per_layer;
      f.layer_alive += per_layer * k.saved_fraction;
    } else {
      // Outside the layers: the embedding is the first stage's, the rest
      // (final norm, LM head, loss) the last stage's.
      (k.op == graph::Op::kEmbed ? f.first_saved : f.last_saved) += s * k.saved_fraction * k.count;
    }
    if (k.has(graph::kFp8Gemm)) {
      const double w = k.weight_params * k.gemm.batch * k.count;
      if (k.has(graph::kLayer)) f.fp8_layer_params += w / std::max(1, g.layers);
      else f.fp8_end_params += w;
      f.fp8_linears += k.gemm.batch * k.count;
    }
  }
  f.fp8_weight_copies = g.fp8_weight_copies;
  f.tokens = g.tokens;
  f.act_bytes = g.act_bytes;
  f.layers = g.layers;
  f.mtp_layers = g.mtp_layers;
  f.logit_grad_chunks = g.logit_grad_chunks;
  return f;
}

ModelState model_state(const spec::ModelSpec& m, const spec::PlanSpec& p, const QuantizedWeights& fp8,
                       PipelineStage stage) {
  return model_state(p, techniques::local_params(m, p, stage), fp8);
}

ModelState model_state(const spec::PlanSpec& p, const techniques::LocalParams& lp, const QuantizedWeights& fp8) {
  ModelState r;
  const auto groups = techniques::data_parallel_groups(p);
  const spec::PrecisionPolicy pol = spec::precision_policy(p);
  const double wb = pol.weight_bytes;
  // Weights: trainable at working precision; a frozen base by the policy's
  // widths: its decoder linear weights (16 bits for LoRA, NF4 for QLoRA),
  // its norms (fp32 under QLoRA) and the rest (embedding, LM head, biases,
  // router: 16 bits).
  const double frozen_linear = lp.frozen > 0 ? lp.linear_weights : 0.0;
  double weights = techniques::stored_weight_bytes(pol, lp);
  // Transformer Engine keeps a quantized copy of each linear weight and its
  // transpose beside the 16-bit weight: +2 bytes per linear parameter in fp8
  // (plus block scales: blockwise 2 x 4/16384, mxfp8 2 x 1/32), 2 x 9/16 in
  // NVFP4; one copy where one serves both (QuantizedWeights::copies). A
  // frozen base's quantized linear weights are its primary weights: the
  // copies without the 16-bit weight (spec::PrecisionPolicy::frozen_fp8_primary).
  // Without the graph's count (the search's bound) they count one copy each.
  const double q_bytes = pol.quant.weight_bytes_per_elem;
  double expert_elem_bytes = lp.expert_trainable > 0 ? wb : pol.frozen_weight_bytes;
  if (pol.fp8_linear && pol.frozen_fp8_primary) {
    const double held = fp8.params > 0 ? std::min(fp8.params, frozen_linear) : frozen_linear;
    const double copies = fp8.params > 0 ? fp8.copies : 1.0;
    weights += held * (copies * q_bytes - pol.frozen_weight_bytes);
    if (lp.expert_trainable <= 0) expert_elem_bytes = copies * q_bytes;
  } else if (pol.fp8_primary) {
    // Trained fp8 primary weights: the quantized copies in place of the
    // 16-bit linear weights (the master is the optimizer's).
    const double held = fp8.params > 0 ? std::min(fp8.params, lp.linear_weights) : lp.linear_weights;
    const double copies = fp8.params > 0 ? fp8.copies : 1.0;
    weights += held * (copies * q_bytes - wb);
    expert_elem_bytes = copies * q_bytes;
  } else if (pol.fp8_linear) {
    weights += fp8.copies * q_bytes * fp8.params;
  }
  const double expert_weights = lp.expert_weights * expert_elem_bytes;
  // ZeRO stage s shards what it covers over the data-parallel group: dense
  // bytes over DP x CP ranks, expert bytes over DP x CP / EP.
  auto shard = [&](int stage_covered, double bytes, double expert_bytes) {
    return techniques::zero_shard(p, groups, stage_covered, bytes, expert_bytes);
  };
  // Under pipeline parallelism a framework may keep what ZeRO would shard
  // whole across the step's micro-batches (frameworks/*.yaml pp_params,
  // pp_grads; torchtitan: torchtitan/distributed/fsdp.py:129-132 returns
  // reshard_after_forward = not pp_enabled, and PyTorch's pipeline stage
  // turns FSDP's gradient sync off for all but the last backward): the
  // stage's whole 16-bit weights, and its whole gradients in the reduce
  // dtype (FSDP2 upcasts an unsynced gradient to reduce_dtype and
  // accumulates it, _fsdp_param.py to_accumulated_grad_if_needed). The
  // masters and optimizer state stay sharded.
  const spec::FrameworkSpec& fw = spec::framework(p.framework);
  const bool pipelined = p.parallel.pp > 1;
  const bool whole_params = pipelined && fw.pp_params_unsharded && p.parallel.zero >= 3;
  const bool whole_grads = pipelined && fw.pp_grads_unsharded && p.parallel.zero >= 2;
  r.weights = whole_params ? weights : shard(3, weights, expert_weights);
  const double accum_bytes = fw.reduce_bytes > 0 ? fw.reduce_bytes : pol.gradient_bytes;
  r.gradients = whole_grads ? lp.trainable * accum_bytes
                            : shard(2, lp.trainable * pol.gradient_bytes, lp.expert_trainable * pol.gradient_bytes);
  r.master_weights = shard(1, lp.trainable * pol.master_bytes, lp.expert_trainable * pol.master_bytes);
  const double opt_b = techniques::optimizer_state_bytes(p.optimizer, lp, pol.state_elem_bytes);
  // Muon keeps one state per expert matrix element and two (AdamW's) for
  // the experts' biases, which the per-parameter mean does not split.
  const double expert_opt =
      p.optimizer.kind == spec::OptimizerKind::kMuon
          ? lp.expert_hidden_matrix_elems * pol.state_elem_bytes +
                std::max(0.0, lp.expert_trainable - lp.expert_hidden_matrix_elems) * 2 * pol.state_elem_bytes
          : lp.expert_trainable * opt_b;
  r.optimizer = shard(1, lp.trainable * opt_b, expert_opt);
  // Optimizer in backward (torchtune optimizer_in_bwd: each parameter's
  // step runs in its post-accumulate-grad hook, then `p.grad = None`,
  // recipes/full_finetune_single_device.py): one tensor's gradient at a time.
  if (p.optimizer.in_backward) r.gradients = std::min(r.gradients, lp.largest_tensor * pol.gradient_bytes);
  // Paged state (bitsandbytes: cudaMallocManaged, bitsandbytes/functional.py
  // get_paged): outside PyTorch's allocator, so outside the peak below.
  if (p.optimizer.paged) {
    r.paged = r.optimizer;
    r.optimizer = 0;
  }
  if (p.offload.optimizer_on_cpu()) {
    constexpr double kFp32GradBytes = 4;  // the host's fp32 gradient copy CPU Adam reads
    r.host = r.master_weights + r.optimizer +
             shard(1, lp.trainable * kFp32GradBytes, lp.expert_trainable * kFp32GradBytes);
    r.master_weights = r.optimizer = 0;
    if (p.parallel.zero >= 2) r.gradients = 0;  // each reduced partition goes to the host
  }
  if (p.offload.params_on_cpu()) {
    r.host += r.weights;
    r.weights = 0;
  }
  return r;
}

namespace {

bool is_pipelined(const spec::PlanSpec& p) { return std::max(1, p.parallel.pp) > 1; }

/// Uneven stages over PP > 2: stage 1, with the most layers between the
/// ends and p - 1 micro-batches in flight, may hold more than either end.
bool middle_counts(const spec::PlanSpec& p) {
  const auto& par = p.parallel;
  return is_pipelined(p) && (par.first_stage_layers > 0 || par.last_stage_layers > 0) && par.pp > 2;
}

/// One end stage's footprint (without PP the only stage, holding both ends).
/// `ms`: the stage's model state (stage_states); `fixed_buffers`: the
/// buffers every stage holds; `reserve`: the framework's allocator reserve.
StageMemory stage_memory(const GraphFacts& g, const spec::ModelSpec& m, const spec::PlanSpec& p, double mb,
                         PipelineStage stage, const techniques::LocalParams& lp, const ModelState& ms,
                         double fixed_buffers, double reserve, const ModelState* mirror = nullptr) {
  const bool only = !is_pipelined(p);
  const bool first = only || stage == PipelineStage::kFirst;
  const bool last = only || stage == PipelineStage::kLast;
  // Uneven stages: this stage's own layers; the graph holds the busiest
  // stage's (with the MTP blocks where the last stage is the busiest:
  // graph::build_forward); the MTP blocks are the last stage's.
  const auto& q = p.parallel;
  const double mtp = std::max(0, m.mtp_layers);
  const auto layers_of = [&](bool is_first, bool is_last) {
    return (only || (q.first_stage_layers <= 0 && q.last_stage_layers <= 0)
                ? g.layers - g.mtp_layers
                : spec::stage_layers(m.layers, q.pp, q.first_stage_layers, q.last_stage_layers,
                                     is_first ? 0 : is_last ? q.pp - 1 : 1)) +
           (is_last ? mtp : 0.0);
  };
  const double layers = layers_of(first, last);
  StageMemory s;
  s.layers = layers;
  s.weights = ms.weights;
  s.gradients = ms.gradients;
  s.master_weights = ms.master_weights;
  s.optimizer = ms.optimizer;
  s.host = ms.host;
  s.paged = ms.paged;
  // DualPipe: the GPU of stage i also holds stage p - 1 - i, its own copy
  // of those parameters with their gradients and optimizer state
  // (DeepSeek-V3 report Sec. 3.2.1: "two copies of the model parameters";
  // Table 2: parameters 2x).
  if (mirror) {
    s.weights += mirror->weights;
    s.gradients += mirror->gradients;
    s.master_weights += mirror->master_weights;
    s.optimizer += mirror->optimizer;
    s.host += mirror->host;
    s.paged += mirror->paged;
  }
  // Layers: the stage's micro-batches in flight; the embedding's saved
  // tensors go with the first stage's micro-batches; the head's (one
  // micro-batch: its backward follows its forward) with the last's.
  s.in_flight_microbatches = in_flight_microbatches(p, mb, stage);
  // What the backward starts from: the layers' saved activations of the
  // micro-batches in flight (with the embedding's, on the first stage), and
  // the head's (final norm, LM head, loss: the last stage's; under DualPipe
  // both end GPUs').
  const bool holds_head = last || (mirror && first);
  double held = 0;
  if (mirror) {
    // DualPipe: PP + 1 chunks in flight (Table 2), over the GPU's two
    // stages as DualPipe.step warms them up (dualpipe.py, 3da1bbe, lines
    // 358-394): rank i < P/2 runs P - i - 1 forward chunks of its own stage
    // and i + 1 of its mirror before its first backward, then one more of
    // its own beside that backward (the overlapped F&B). The end GPUs
    // (rank 0 holds stage 0 and P - 1; rank P - 1 the same two, its
    // reverse direction entering at stage 0) hold P chunks of stage 0 with
    // the embedding's saved tensors and one of stage P - 1 with the head's;
    // rank 1, P - 1 of stage 1 and 2 of stage P - 2.
    const double P = std::max(1, q.pp);
    held = first || last ? P * (layers_of(true, false) * g.layer_alive + g.first_saved) +
                               layers_of(false, true) * g.layer_alive
                         : (P - 1) * layers * g.layer_alive + 2 * layers_of(false, false) * g.layer_alive;
  } else {
    held = s.in_flight_microbatches * (layers * g.layer_alive + (first ? g.first_saved : 0.0));
  }
  // Activation offloading (torchtune OffloadActivations; PP refused by
  // engine::check_offload): the layers' saved tensors go to pinned host
  // memory as the forward saves them; what the GPU still holds at the peak
  // is about one layer's (the copy in flight, the layer the backward brings
  // back ahead of its use). The head's are kept (NoOpManager around
  // model.output), and so is the recomputation's working set (it is rebuilt
  // in the backward, outside the offloading context).
  if (p.offload.activations_on_cpu() && !mirror) {
    const double layer_part = s.in_flight_microbatches * layers * g.layer_alive;
    s.offloaded_activations = std::max(0.0, layer_part - g.layer_alive);
    held -= s.offloaded_activations;
    s.host += s.offloaded_activations;
  }
  // The head's logits: an eager loss's fp32 copy and the logits' gradient
  // (T x V / t at the activation width; a chunked loss's one chunk of it).
  const double t = std::max(1, p.parallel.tp);
  const double head_saved = holds_head ? g.last_saved : 0.0;
  const double logits = holds_head ? g.logits_transient + g.tokens * (m.vocab / t) * g.act_bytes /
                                                              std::max(1.0, g.logit_grad_chunks)
                                   : 0.0;
  // ZeRO-3's gathered weights of two layers (current + prefetched), as
  // stored (a QLoRA base's in NF4), unless the framework keeps the stage's
  // weights gathered under PP (model state).
  double gathered = 0;
  const spec::FrameworkSpec& fw = spec::framework(p.framework);
  const bool whole_params = is_pipelined(p) && fw.pp_params_unsharded;
  const spec::PrecisionPolicy pol = spec::precision_policy(p);
  if (p.parallel.zero >= 3 && !whole_params && techniques::data_parallel_groups(p).dense > 1)
    gathered = 2 * techniques::stored_weight_bytes(pol, lp) / std::max(1.0, lp.layers_local);
  // The backward's phases, autograd freeing each node's saved tensors once
  // it has run: first the loss and the head (their saved tensors and the
  // logits), then layer by layer, each rebuilding its recomputation's
  // working set after the head's tensors are gone. The peak is the larger
  // phase, not both at once.
  const double recompute = g.recompute_working;
  const bool head_peaks = head_saved + logits >= recompute;
  // What the larger phase holds beyond the saved activations (`held`).
  const double transient = head_peaks ? head_saved + logits : recompute;
  s.activations = held + (head_peaks ? head_saved : recompute);
  s.buffers = fixed_buffers + gathered + (head_peaks ? logits : 0.0);
  s.phase = holds_head && head_peaks ? "head" : "layer";
  // Gradients freed each step (the framework's zero_grad sets them to None)
  // in a step of one micro-batch without PP: the backward forms them as it
  // frees the activations. At its start the GPU holds the activations and
  // the head's weight gradient; at its end every gradient and the first
  // layer's recomputation; between the two, the freed and the formed trade
  // layer by layer, so the peak is at one end.
  const double all_gradients = s.gradients;
  if (fw.grads_freed_each_step && !is_pipelined(p) && mb <= 1) {
    const double head_grad = holds_head ? std::min(s.gradients, lp.largest_tensor * pol.gradient_bytes) : 0.0;
    if (s.gradients + recompute > held + transient + head_grad) {
      s.activations = recompute;
      s.buffers = fixed_buffers + gathered;
      s.phase = "end";
    } else {
      s.gradients = head_grad;
    }
  }
  // The framework's training metrics (techniques::apply_train_metrics),
  // after the micro-batch's backward: every gradient formed, the
  // activations freed, the trainer still holding the micro-batch's 16-bit
  // logits (Composer's state.outputs) beside a metric's fp32 upcast and
  // log-probabilities (8 bytes per logit).
  if (holds_head && fw.train_metrics > 0) {
    const double metrics = g.tokens * (m.vocab / t) * (g.act_bytes + 8.0);
    if (all_gradients + fixed_buffers + metrics > s.gradients + s.activations + s.buffers) {
      s.gradients = all_gradients;
      s.activations = 0;
      s.buffers = fixed_buffers + metrics;
      s.phase = "metrics";
    }
  }
  s.allocated = s.weights + s.gradients + s.master_weights + s.optimizer + s.activations + s.buffers;
  const double workspace = kWorkspaceBytes + (p.parallel.gpus() > 1 ? kNcclBytes : 0.0);
  s.total = s.allocated * (1 + reserve) + workspace;
  return s;
}

}  // namespace

MemoryResult estimate(const GraphFacts& g, const spec::ModelSpec& m, const spec::PlanSpec& p,
                      const spec::HardwareSpec& hw, double micro_batches) {
  MemoryResult r;
  estimate_into(r, g, m, p, hw, micro_batches, techniques::stage_params(m, p));
  return r;
}

StageStates stage_states(const GraphFacts& g, const spec::PlanSpec& p, const techniques::StageParams& sp) {
  StageStates s;
  // Each stage's quantized copies: its own layers' (layers_local counts the
  // last stage's MTP blocks), and the last stage's (or the only one's) the
  // linears outside the layers.
  const bool pipelined = is_pipelined(p);
  const auto fp8 = [&](const techniques::LocalParams& lp, bool last) {
    return QuantizedWeights{g.fp8_layer_params * lp.layers_local + (last ? g.fp8_end_params : 0.0),
                            g.fp8_weight_copies};
  };
  s.first = model_state(p, sp.first, fp8(sp.first, !pipelined));
  if (pipelined) s.last = model_state(p, sp.last, fp8(sp.last, true));
  if (middle_counts(p)) s.middle = model_state(p, sp.middle, fp8(sp.middle, false));
  return s;
}

void estimate_into(MemoryResult& r, const GraphFacts& g, const spec::ModelSpec& m, const spec::PlanSpec& p,
                   const spec::HardwareSpec& hw, double micro_batches, const techniques::StageParams& sp,
                   const StageStates* given) {
  const StageStates formed = given ? StageStates{} : stage_states(g, p, sp);
  const StageStates& st = given ? *given : formed;
  // Every field is set below, without zeroing the whole first (a search
  // estimates ten thousand layouts). The binding names each field, so a
  // field added to MemoryResult stops this compiling until it is set here.
  [[maybe_unused]] const auto& [weights, gradients, master_weights, optimizer, activations, buffers, workspace,
                                fragmentation, total, capacity, fits, host_bytes, host_capacity, host_fits, paged_bytes,
                                paged_to_host, offloaded_activations, allocated,
                                reserved, allocator_reserve, peak_stage, peak_phase, first_stage, last_stage, middle_stage,
                                activations_per_layer, activations_per_microbatch, in_flight_microbatches,
                                recompute_working, cp_kv_buffers] = r;
  const auto& par = p.parallel;
  const double t = std::max(1, par.tp);
  // Buffers every stage holds.
  double fixed = 0;
  // fp8 scaling state, persistent and small: per quantized linear three
  // tensors (input, weight, output gradient) of spec::QuantRecipe state each
  // (delayed: a 1024-entry fp32 amax history plus scale and scale_inv).
  // Block scales travel with their tensors (saved activations, weight copies).
  if (const auto pol = spec::precision_policy(p); pol.fp8_linear)
    fixed += 3 * pol.quant.state_bytes_per_tensor * g.fp8_linears;
  // Context parallelism (ring attention, Transformer Engine's p2p
  // cp_comm_type): while a rank computes on one K/V chunk it receives the
  // next, two buffers of its local K and V (2 x 2 T g d e).
  r.cp_kv_buffers = 0;
  if (par.cp > 1) {
    const double g_local = std::max(1.0, m.kv_heads / t);
    r.cp_kv_buffers = 2 * 2 * g.tokens * g_local * m.head_dim * g.act_bytes;
    fixed += r.cp_kv_buffers;
  }
  // The framework's allocator reserve, or the one fitted to this GPU +
  // framework stack's measured peak memory (--calibration).
  const spec::StackCorrection* sc = hw.stack_for(p.framework);
  r.allocator_reserve =
      sc && sc->has_reserve() ? sc->allocator_reserve : spec::framework(p.framework).allocator_reserve;
  const bool pipelined = is_pipelined(p);
  const bool dualpipe = pipelined && par.pp_schedule == spec::PpSchedule::kDualPipe;
  r.first_stage = stage_memory(g, m, p, micro_batches, PipelineStage::kFirst, sp.first, st.first, fixed,
                               r.allocator_reserve, dualpipe ? &st.last : nullptr);
  r.last_stage = pipelined ? stage_memory(g, m, p, micro_batches, PipelineStage::kLast, sp.last, st.last, fixed,
                                          r.allocator_reserve, dualpipe ? &st.first : nullptr)
                           : r.first_stage;
  const bool last_peaks = pipelined && r.last_stage.total > r.first_stage.total;
  r.middle_stage = middle_counts(p) ? stage_memory(g, m, p, micro_batches, PipelineStage::kMiddle, sp.middle,
                                                   st.middle, fixed, r.allocator_reserve,
                                                   dualpipe ? &st.middle : nullptr)
                                    : StageMemory{};
  const bool middle_peaks =
      r.middle_stage.total > std::max(r.first_stage.total, pipelined ? r.last_stage.total : 0.0);
  const StageMemory& s = middle_peaks ? r.middle_stage : last_peaks ? r.last_stage : r.first_stage;
  r.peak_stage = !pipelined ? "only" : middle_peaks ? "middle" : last_peaks ? "last" : "first";
  r.peak_phase = s.phase;
  set_stage(r, s);
  r.workspace = kWorkspaceBytes + (par.gpus() > 1 ? kNcclBytes : 0.0);

  r.activations_per_layer = g.layer_saved;
  r.in_flight_microbatches = s.in_flight_microbatches;
  r.activations_per_microbatch = s.layers * g.layer_alive +
                                 (!pipelined || (!last_peaks && !middle_peaks) ? g.first_saved : 0.0) +
                                 (!pipelined || (last_peaks && !middle_peaks) ? g.last_saved : 0.0);
  r.recompute_working = g.recompute_working;
  r.total = 0;
  for (const auto& c : kMemoryCategories) r.total += r.*c.bytes;
  r.capacity = hw.memory_bytes;
  r.host_bytes = std::max({r.first_stage.host, r.last_stage.host, r.middle_stage.host});
  r.host_capacity = hw.host.memory_bytes;
  // Paged optimizer state: the GPU keeps what fits beside the peak; the
  // rest waits on the host (and must fit there).
  r.paged_bytes = std::max({r.first_stage.paged, r.last_stage.paged, r.middle_stage.paged});
  r.paged_to_host = std::max(0.0, r.paged_bytes - std::max(0.0, r.capacity - r.total));
  r.offloaded_activations = s.offloaded_activations;
  r.host_fits = r.host_bytes + r.paged_to_host <= r.host_capacity;
  r.fits = r.total <= r.capacity && r.host_fits;
}

void set_stage(MemoryResult& r, const StageMemory& s) {
  r.weights = s.weights;
  r.gradients = s.gradients;
  r.master_weights = s.master_weights;
  r.optimizer = s.optimizer;
  r.activations = s.activations;
  r.buffers = s.buffers;
  r.allocated = s.allocated;
  r.fragmentation = s.allocated * r.allocator_reserve;
  r.reserved = r.allocated + r.fragmentation;
}

double upper_bytes(const MemoryResult& m) {
  return std::max(m.allocated * (1 + 2 * m.allocator_reserve) + m.workspace, m.total);
}

Fit fit(const MemoryResult& m, double headroom) {
  if (!m.fits) return Fit::kDoesNotFit;
  return upper_bytes(m) <= m.capacity * (1 - headroom) ? Fit::kFits : Fit::kTight;
}

std::string_view fit_word(Fit f) {
  switch (f) {
    case Fit::kFits: return "yes";
    case Fit::kTight: return "tight";
    case Fit::kDoesNotFit: return "no";
  }
  return "no";
}

}  // namespace ridgeline::memory
