#include "ridgeline/advise/advise.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "ridgeline/memory/memory.hpp"
#include "ridgeline/search/search.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/kinds.hpp"
#include "ridgeline/spec/launch_edit.hpp"
#include "ridgeline/spec/plan_fields.hpp"

namespace ridgeline::advise {

namespace {

struct LossWords {
  std::string_view id, label;
};
constexpr LossWords kLossWords[kLossKindCount] = {
    {"gemm_below_peak", "GEMMs below the sustained peak"},
    {"tile_wave_quantization", "tile/wave quantization"},
    {"moe_load_imbalance", "MoE load imbalance"},
    {"attention_below_peak", "attention below the sustained peak"},
    {"memory_bound_kernels", "memory-bound kernels"},
    {"recomputation", "recomputation"},
    {"optimizer_step", "optimizer step and per-step kernels"},
    {"exposed_communication", "exposed communication"},
    {"pipeline_bubble", "pipeline bubble"},
    {"host_dispatch", "host dispatch (GPU waits on the CPU)"},
    {"other", "other (skipped steps, rounding)"},
};

bool is_comm(spec::KernelClass c) { return c == spec::KernelClass::kCollective || c == spec::KernelClass::kP2p; }

void add_part(std::vector<LossPart>& parts, std::string name, double s) {
  for (auto& p : parts)
    if (p.name == name) {
      p.seconds += s;
      return;
    }
  parts.push_back({std::move(name), s});
}

}  // namespace

std::string_view id(LossKind k) { return kLossWords[static_cast<int>(k)].id; }
std::string_view label(LossKind k) { return kLossWords[static_cast<int>(k)].label; }

Decomposition decompose(const engine::Prediction& p, const cost::CostParams& c, int gpus_per_node,
                        double balanced_s) {
  Decomposition d;
  d.step_s = p.step.time_s;
  d.losses.resize(kLossKindCount);
  for (int i = 0; i < kLossKindCount; ++i) d.losses[i].kind = static_cast<LossKind>(i);
  auto L = [&](LossKind k) -> Loss& { return d.losses[static_cast<int>(k)]; };
  double comm_whole = 0, comm_overlapped = 0, gemm_ideal = 0;
  for (const auto& k : p.kernels) {
    const double t = k.time_s;
    if (is_comm(k.cls)) {
      (k.overlapped ? comm_overlapped : comm_whole) += t;
      continue;
    }
    const bool main_phase = k.phase == spec::Phase::kForward || k.phase == spec::Phase::kBackward;
    if (k.per_step || !(main_phase || k.phase == spec::Phase::kRecompute)) {
      L(LossKind::kOptimizer).seconds += t;
      add_part(L(LossKind::kOptimizer).parts, std::string(k.name), t);
      continue;
    }
    if (k.phase == spec::Phase::kRecompute) {
      L(LossKind::kRecompute).seconds += t;
      add_part(L(LossKind::kRecompute).parts, std::string(spec::name(k.cls)), t);
      continue;
    }
    if (k.cls == spec::KernelClass::kGemm || k.cls == spec::KernelClass::kAttention) {
      const double peak = c.peak_flop_per_s[static_cast<int>(spec::peak_of(k.dtype))];
      const double ideal = peak > 0 ? k.flops * k.count / peak : 0.0;
      const double at_peak = std::min(ideal, t);
      d.ideal_s += at_peak;
      if (k.cls == spec::KernelClass::kAttention) {
        L(LossKind::kAttention).seconds += t - at_peak;
        continue;
      }
      // The last wave's idle SMs: waves x SMs block slots for `blocks` blocks.
      double quant = 0;
      if (k.waves > 0 && k.blocks > 0 && c.sms > 0)
        quant = std::clamp(k.compute_s * (1.0 - k.blocks / (std::ceil(k.waves - 1e-9) * c.sms)), 0.0, t - at_peak);
      gemm_ideal += at_peak;
      L(LossKind::kWaveQuantization).seconds += quant;
      L(LossKind::kGemm).seconds += t - at_peak - quant;
      continue;
    }
    L(LossKind::kMemoryBound).seconds += t;
    add_part(L(LossKind::kMemoryBound).parts, std::string(spec::name(k.cls)), t);
  }
  // Exposed communication: the collectives nothing overlaps count whole; the
  // overlapped ones share the rest of the exposed time by their length.
  const double exposed = p.step.exposed_comm_s;
  const double overlapped_exposed = std::max(0.0, exposed - comm_whole);
  const double scale_whole = comm_whole > 0 ? std::min(1.0, exposed / comm_whole) : 0.0;
  for (const auto& k : p.kernels) {
    if (!is_comm(k.cls)) continue;
    const double share = k.overlapped ? (comm_overlapped > 0 ? k.time_s / comm_overlapped * overlapped_exposed : 0.0)
                                      : k.time_s * scale_whole;
    if (share <= 0) continue;
    const char* tier = k.comm_span > gpus_per_node ? "network" : "intra-node";
    add_part(L(LossKind::kExposedComm).parts, fmt::format("{} ({})", k.name, tier), share);
  }
  L(LossKind::kExposedComm).seconds = exposed;
  L(LossKind::kBubble).seconds = p.step.bubble_s;
  if (balanced_s > 0) {
    // The busiest expert's extra tokens are GEMM FLOPs and GEMM inefficiency
    // alike: the loss comes out of the GEMMs' ideal, loss and quantization in
    // proportion to each.
    double& gl = L(LossKind::kGemm).seconds;
    double& gq = L(LossKind::kWaveQuantization).seconds;
    const double gemm_all = gemm_ideal + gl + gq;
    const double moe = std::clamp(d.step_s - balanced_s, 0.0, gemm_all);
    L(LossKind::kMoeImbalance).seconds = moe;
    if (gemm_all > 0) {
      const double keep = 1 - moe / gemm_all;
      d.ideal_s -= gemm_ideal * (1 - keep);
      gl *= keep;
      gq *= keep;
    }
  }
  double accounted = d.ideal_s;
  for (const auto& l : d.losses) accounted += l.seconds;
  const double rest = d.step_s - accounted;
  L(p.step.host_bound ? LossKind::kHost : LossKind::kOther).seconds += rest;
  for (auto& l : d.losses) {
    l.share = d.step_s > 0 ? l.seconds / d.step_s : 0.0;
    std::sort(l.parts.begin(), l.parts.end(), [](const LossPart& a, const LossPart& b) { return a.seconds > b.seconds; });
  }
  return d;
}

std::vector<std::string> fields_between(const spec::PlanSpec& from, const spec::PlanSpec& to) {
  std::vector<std::string> out;
  for (const auto& f : spec::plan_fields())
    if (!f.flag.empty() && spec::field_text(f, from) != spec::field_text(f, to)) out.emplace_back(f.key);
  return out;
}

std::string flags_between(const spec::PlanSpec& from, const spec::PlanSpec& to) {
  std::string o;
  for (const auto& f : spec::plan_fields()) {
    if (f.flag.empty()) continue;
    const std::string a = spec::field_text(f, from), b = spec::field_text(f, to);
    if (a == b) continue;
    if (!o.empty()) o += ' ';
    if (f.type == spec::FieldType::kBool) {
      spec::PlanSpec q = to;
      o += (f.bool_ref(q) ? "--" : "--no-") + std::string(f.flag);
    } else {
      o += "--" + std::string(f.flag) + " " + b;
    }
  }
  return o;
}

namespace {

/// A changed plan, and the family of changes it belongs to ("precision",
/// "attention", "zero", "layout", ...): a list keeps the best of each family.
struct Candidate {
  std::string change;
  spec::PlanSpec plan;
  std::string_view family;
};

/// The plan at TP, PP and CP with DP taking the rest of the GPUs; false when
/// they do not divide the GPU count.
bool relayout(spec::PlanSpec& q, const spec::PlanSpec& base, int tp, int pp, int cp) {
  const long long gpus = base.parallel.gpus();
  const long long rest = static_cast<long long>(tp) * pp * cp;
  if (tp < 1 || pp < 1 || cp < 1 || rest > gpus || gpus % rest != 0) return false;
  q.parallel.tp = tp;
  q.parallel.pp = pp;
  q.parallel.cp = cp;
  q.parallel.dp = static_cast<int>(gpus / rest);
  if (tp == 1) {
    q.parallel.sp = false;
    q.parallel.tp_comm_overlap = false;
  } else if (base.parallel.tp == 1 && !base.sp_given) {
    q.parallel.sp = spec::framework(base.framework).sequence_parallel_with_tp;
  }
  if (pp == 1) q.parallel.virtual_stages = 1;
  if (pp != base.parallel.pp) q.parallel.first_stage_layers = q.parallel.last_stage_layers = 0;
  return true;
}

std::string layout_words(const spec::PlanSpec& a, const spec::PlanSpec& b) {
  std::string o;
  const auto add = [&](std::string_view n, int x, int y) {
    if (x == y) return;
    o += fmt::format("{}{} {} -> {}", o.empty() ? "" : ", ", n, x, y);
  };
  add("TP", a.parallel.tp, b.parallel.tp);
  add("PP", a.parallel.pp, b.parallel.pp);
  add("CP", a.parallel.cp, b.parallel.cp);
  add("DP", a.parallel.dp, b.parallel.dp);
  return o;
}

std::string word_of(std::string_view key, const spec::PlanSpec& p) {
  return spec::field_text(*spec::find_plan_field(key), p);
}

/// The all-to-all share of the step from which the MoE communication
/// changes are tried: the advisor's 1% floor (a memory saver frees at least
/// 1% of the peak, advise() below).
constexpr double kVisibleAllToAllShare = 0.01;

/// Megatron-Core's refusals of overlap_moe_expert_parallel_comm
/// (megatron/core/transformer/transformer_config.py, d98e8a6, lines
/// 3007-3040): PP > 1 without virtual stages, full recomputation, the
/// shared-expert overlap; EP > 1 is the engine's own check.
bool megatron_takes_ep_overlap(const spec::PlanSpec& b) {
  const auto& par = b.parallel;
  const auto k = b.recompute.kind;
  if (par.pp > 1 && par.virtual_stages <= 1) return false;
  if (k == spec::RecomputeKind::kFull || k == spec::RecomputeKind::kEvery) return false;
  return !b.moe.shared_expert_overlap;
}

/// What the base plan's prediction says that picks the MoE changes.
struct BaseFacts {
  double all_to_all_share = 0;  // the MoE all-to-alls' time over the step, hidden or not
  bool memory_tight = false;    // does not fit with the headroom
};

/// Every change the advisor tries (see the top of advise.hpp).
std::vector<Candidate> candidates(const spec::ModelSpec& m, const spec::PlanSpec& b, const spec::HardwareSpec& hw,
                                  const spec::ImportReport* imported, const BaseFacts& facts) {
  std::vector<Candidate> out;
  std::string_view family;  // of the pushes that follow
  const auto push = [&](std::string change, const spec::PlanSpec& q) { out.push_back({std::move(change), q, family}); };
  const auto& par = b.parallel;
  // Layout: DP absorbs what TP, PP and CP give up or take.
  family = "tp";
  const auto layout = [&](int tp, int pp, int cp) {
    spec::PlanSpec q = b;
    if (relayout(q, b, tp, pp, cp)) push(layout_words(b, q), q);
  };
  layout(par.tp * 2, par.pp, par.cp);
  if (par.tp > 1) layout(par.tp / 2, par.pp, par.cp);
  family = "pp";
  layout(par.tp, par.pp * 2, par.cp);
  if (par.pp > 1) layout(par.tp, par.pp / 2, par.cp);
  family = "cp";
  if (par.cp > 1) layout(par.tp, par.pp, par.cp / 2);
  if (graph::seq_len(m, b) >= 16384) layout(par.tp, par.pp, par.cp * 2);
  family = "vpp";
  if (par.pp > 1) {
    spec::PlanSpec q = b;
    q.parallel.virtual_stages = par.virtual_stages * 2;
    push(fmt::format("interleaved stages {} -> {}", par.virtual_stages, q.parallel.virtual_stages), q);
    if (par.virtual_stages > 1) {
      q.parallel.virtual_stages = par.virtual_stages / 2;
      push(fmt::format("interleaved stages {} -> {}", par.virtual_stages, q.parallel.virtual_stages), q);
    }
  }
  family = "micro_batch";
  {
    spec::PlanSpec q = b;
    q.micro_batch = b.micro_batch * 2;
    push(fmt::format("micro-batch {} -> {}", b.micro_batch, q.micro_batch), q);
    if (b.micro_batch > 1) {
      q.micro_batch = b.micro_batch / 2;
      push(fmt::format("micro-batch {} -> {}", b.micro_batch, q.micro_batch), q);
    }
  }
  // torchtitan's main knob: where the imported config's global batch
  // follows the local one (training.global_batch_size unset or -1, local x
  // DP: torchtitan/config/job_config.py, 238fa99, lines 253-258; the 2024
  // training.batch_size always), the local batch with the global one it
  // gives. The tokens per step change, and so do the numerics.
  if (imported && imported->kind == "torchtitan TOML" &&
      !(imported->values.global_batch.given() && imported->values.global_batch.text != "-1") &&
      b.effective_global_batch() == static_cast<long long>(b.micro_batch) * par.dp) {
    family = "local_batch";
    for (int mb : {b.micro_batch * 2, b.micro_batch / 2}) {
      if (mb < 1 || mb == b.micro_batch) continue;
      spec::PlanSpec q = b;
      q.micro_batch = mb;
      q.global_batch = mb * par.dp;
      push(fmt::format("local batch {} -> {} (global batch {} -> {})", b.micro_batch, mb, b.global_batch,
                       q.global_batch),
           q);
    }
  }
  if (par.tp > 1) {
    family = "sp";
    spec::PlanSpec q = b;
    q.parallel.sp = !par.sp;
    push(par.sp ? "sequence parallelism off" : "sequence parallelism on", q);
    family = "tp_comm_overlap";
    q = b;
    q.parallel.tp_comm_overlap = !par.tp_comm_overlap;
    push(par.tp_comm_overlap ? "TP communication overlap off" : "TP communication overlap on", q);
  }
  family = "zero";
  if (par.dp > 1)
    for (int z = 0; z <= 3; ++z) {
      if (z == par.zero) continue;
      spec::PlanSpec q = b;
      q.parallel.zero = z;
      push(fmt::format("ZeRO {} -> {}", par.zero, z), q);
    }
  family = "fusion";
  for (auto f : {spec::Fusion::kEager, spec::Fusion::kFused, spec::Fusion::kCompiled}) {
    if (f == b.fusion) continue;
    spec::PlanSpec q = b;
    q.fusion = f;
    q.fusion_given = true;
    push(fmt::format("fusion {} -> {}{}", word_of("fusion", b), word_of("fusion", q),
                     f == spec::Fusion::kCompiled ? " (torch.compile)" : ""),
         q);
  }
  // The loss: an eager fp32 cross-entropy (Megatron's default) fused
  // (--cross-entropy-loss-fusion), or the other way.
  family = "cross_entropy";
  if (spec::cross_entropy_of(b) != spec::CrossEntropy::kChunked) {
    spec::PlanSpec q = b;
    const bool fused = spec::cross_entropy_of(b) == spec::CrossEntropy::kFused;
    q.cross_entropy = fused ? spec::CrossEntropy::kEager : spec::CrossEntropy::kFused;
    q.cross_entropy_given = true;
    push(fmt::format("cross-entropy {} -> {}", fused ? "fused" : "eager", fused ? "eager" : "fused"), q);
  }
  family = "cuda_graphs";
  {
    spec::PlanSpec q = b;
    q.cuda_graphs = !b.cuda_graphs;
    push(b.cuda_graphs ? "CUDA graphs off" : "CUDA graphs on", q);
  }
  family = "attention";
  for (auto a : {spec::AttentionKind::kFlash2, spec::AttentionKind::kFlash3, spec::AttentionKind::kCudnn}) {
    if (a == b.attention) continue;
    spec::PlanSpec q = b;
    q.attention = a;
    q.attention_given = true;
    push(fmt::format("attention {} -> {}", word_of("attention", b), word_of("attention", q)), q);
  }
  family = "precision";
  if (hw.has_fp8() && b.finetune.mode != spec::FinetuneMode::kQlora) {
    const bool fp8 = b.precision == spec::Precision::kFp8;
    for (auto r : {spec::Fp8Recipe::kDelayed, spec::Fp8Recipe::kTensorwise, spec::Fp8Recipe::kBlockwise,
                   spec::Fp8Recipe::kMxfp8, spec::Fp8Recipe::kRowwise}) {
      if (fp8 && r == b.fp8_recipe) continue;
      if (!spec::offers_fp8_recipe(spec::framework(b.framework), r)) continue;
      spec::PlanSpec q = b;
      q.precision = spec::Precision::kFp8;
      q.fp8_recipe = r;
      push(fp8 ? fmt::format("fp8 recipe {} -> {}", word_of("fp8.recipe", b), word_of("fp8.recipe", q))
               : fmt::format("{} -> fp8 ({} scaling)", word_of("precision", b), word_of("fp8.recipe", q)),
           q);
    }
    if (fp8) {
      spec::PlanSpec q = b;
      q.precision = spec::Precision::kBf16;
      push("fp8 -> bf16", q);
    }
  }
  family = "recompute";
  {
    std::vector<spec::Recompute> rs = {{spec::RecomputeKind::kNone}, {spec::RecomputeKind::kSelective},
                                       {spec::RecomputeKind::kOp}, {spec::RecomputeKind::kFull}};
    const int stage = spec::max_stage_layers(m.layers, std::max(1, par.pp), par.first_stage_layers,
                                             par.last_stage_layers);
    if (stage >= 2 && par.virtual_stages == 1) rs.push_back({spec::RecomputeKind::kFull, 0, stage / 2});
    for (const auto& r : rs) {
      if (r == b.recompute) continue;
      spec::PlanSpec q = b;
      q.recompute = r;
      push(fmt::format("recompute {} -> {}", word_of("recompute", b), word_of("recompute", q)), q);
    }
  }
  // Megatron-Core's recompute modules that apply to an MoE model, for a
  // plan short of memory: the routed experts' activation (moe_act), and on
  // latent attention the norms and the up-projections (layernorm,
  // mla_up_proj: transformer_config.py lines 1964-1973 refuse mla_up_proj
  // without it); DeepSeek-V3 report Sec. 3.2.3 recomputes RMSNorm and the
  // MLA up-projections, Sec. 3.3.2 SwiGLU's output. Added to the plan's
  // own modules; a full recomputation is a change of its own (above).
  family = "recompute_modules";
  if (facts.memory_tight && m.is_moe() &&
      (b.recompute.kind == spec::RecomputeKind::kNone || b.recompute.kind == spec::RecomputeKind::kSelective)) {
    std::uint8_t mods = b.recompute.kind == spec::RecomputeKind::kSelective ? b.recompute.modules : 0;
    mods |= spec::kRecomputeMoeAct;
    if (m.is_mla()) mods |= spec::kRecomputeLayernorm | spec::kRecomputeMlaUpProj;
    if (b.recompute.kind != spec::RecomputeKind::kSelective || mods != b.recompute.modules) {
      spec::PlanSpec q = b;
      q.recompute = {spec::RecomputeKind::kSelective};
      q.recompute.modules = mods;
      push(fmt::format("recompute {} -> {}", word_of("recompute", b), word_of("recompute", q)), q);
    }
  }
  // Expert parallelism whose all-to-alls are a visible share of the step:
  // DeepEP's node-aware dispatcher, and the all-to-alls overlapped with
  // another micro-batch's compute where the framework offers it
  // (Megatron-Core --overlap-moe-expert-parallel-comm only).
  if (m.is_moe() && par.ep > 1 && facts.all_to_all_share >= kVisibleAllToAllShare) {
    family = "dispatcher";
    if (b.moe.dispatcher != spec::MoeDispatcher::kDeepEp) {
      spec::PlanSpec q = b;
      q.moe.dispatcher = spec::MoeDispatcher::kDeepEp;
      push(fmt::format("MoE dispatcher {} -> deepep", word_of("moe.dispatcher", b)), q);
    }
    family = "ep_comm_overlap";
    if (!par.ep_comm_overlap && spec::framework(b.framework).id == "megatron" && megatron_takes_ep_overlap(b)) {
      spec::PlanSpec q = b;
      q.parallel.ep_comm_overlap = true;
      push("EP all-to-all overlap on", q);
    }
  }
  family = "optimizer";
  if (b.optimizer.kind == spec::OptimizerKind::kAdamW || b.optimizer.kind == spec::OptimizerKind::kAdam) {
    for (auto k : {spec::OptimizerKind::kAdam8bit, spec::OptimizerKind::kAdafactor}) {
      spec::PlanSpec q = b;
      q.optimizer.kind = k;
      push(fmt::format("optimizer {} -> {} (numerics change)", word_of("optimizer.kind", b),
                       word_of("optimizer.kind", q)),
           q);
    }
  }
  // The optimizer's state, masters and step on the CPU, where the framework
  // offers it (frameworks/NAME.yaml offload:) over ZeRO's shards.
  family = "offload";
  if (spec::framework(b.framework).offload_optimizer && (par.zero >= 1 || b.offload.optimizer_on_cpu()) &&
      !b.offload.params_on_cpu()) {
    spec::PlanSpec q = b;
    const bool on = b.offload.optimizer_on_cpu();
    q.offload.optimizer = on ? spec::OffloadDevice::kNone : spec::OffloadDevice::kCpu;
    push(on ? "optimizer offload off" : "optimizer offload to the CPU", q);
  }
  // The optimizer's memory savers, where the framework's loop offers them
  // (frameworks/NAME.yaml optimizer_in_backward:, paged_optimizer:);
  // engine::check_plan refuses the layouts they do not run with.
  const spec::FrameworkSpec& fw = spec::framework(b.framework);
  family = "optimizer_in_backward";
  if (fw.optimizer_in_backward && !b.optimizer.in_backward) {
    spec::PlanSpec q = b;
    q.optimizer.in_backward = true;
    push("optimizer stepped in backward (gradients freed at once)", q);
  }
  family = "paged_optimizer";
  if (fw.paged_optimizer && !b.optimizer.paged && !b.offload.optimizer_on_cpu()) {
    spec::PlanSpec q = b;
    q.optimizer.paged = true;
    push("paged optimizer state (bitsandbytes)", q);
  }
  // torchtune's activation offloading and chunked loss, where the framework
  // offers them (frameworks/NAME.yaml offload.activations, cross_entropy.chunked).
  family = "offload_activations";
  if (fw.offload_activations && !b.offload.activations_on_cpu() && par.pp <= 1) {
    spec::PlanSpec q = b;
    q.offload.activations = spec::OffloadDevice::kCpu;
    push("activations offloaded to the host (copied beside forward and backward)", q);
  }
  family = "chunked_cross_entropy";
  if (fw.chunked_cross_entropy && spec::cross_entropy_of(b) != spec::CrossEntropy::kChunked) {
    spec::PlanSpec q = b;
    q.cross_entropy = spec::CrossEntropy::kChunked;
    q.cross_entropy_given = true;
    push("chunked cross-entropy (one chunk of the logits' gradient at a time)", q);
  }
  // DeepSeek-V3's low-precision activation storage, on its blockwise recipe
  // (engine::check_plan refuses it elsewhere).
  family = "fp8_activation_storage";
  if (b.precision == spec::Precision::kFp8 && b.fp8_recipe == spec::Fp8Recipe::kBlockwise &&
      !b.fp8_activation_storage) {
    spec::PlanSpec q = b;
    q.fp8_activation_storage = true;
    push("fp8 activation storage (SwiGLU inputs in fp8, attention output in E5M6)", q);
  }
  family = "finetune";
  if (b.finetune.mode != spec::FinetuneMode::kFull) {
    spec::PlanSpec q = b;
    q.finetune.mode = b.finetune.mode == spec::FinetuneMode::kLora ? spec::FinetuneMode::kQlora : spec::FinetuneMode::kLora;
    if (q.finetune.mode == spec::FinetuneMode::kQlora && q.precision == spec::Precision::kFp8)
      q.precision = spec::Precision::kBf16;
    push(fmt::format("{} -> {}", word_of("finetune.mode", b), word_of("finetune.mode", q)), q);
  }
  return out;
}

struct Evaluator {
  const spec::ModelSpec& m;
  const spec::HardwareSpec& hw;
  const Options& opt;
  cost::CostParams c;
  engine::Workspace ws;
  engine::EvalOptions eval;

  /// Evaluates `q` into `o` and `pred` (with kernels) and its decomposition into `d`.
  void run(const spec::PlanSpec& q, Outcome& o, engine::Prediction& pred, Decomposition* d) {
    engine::evaluate_into(pred, ws, m, q, hw, c, eval);
    o.plan = q;
    o.status = pred.status;
    if (pred.status == engine::Status::kInvalid) {
      o.problem = pred.problem.field + ": " + pred.problem.message;
      return;
    }
    o.step_s = pred.step.time_s;
    o.tokens_per_s = pred.step.tokens_per_s;
    o.mfu = pred.step.mfu;
    o.peak_bytes = pred.memory.total;
    o.fits = pred.memory.fits;
    o.fits_headroom = memory::fit(pred.memory, opt.headroom) == memory::Fit::kFits;
    if (opt.level > 0)
      o.interval = uncertainty::shipped().run_interval(uncertainty::traits_of(pred, q, hw), opt.level);
    if (d) *d = decompose(pred, c, c.gpus_per_node, balanced(q));
  }

  /// The step time of `q` with balanced experts; 0 when it has no imbalance.
  double balanced(const spec::PlanSpec& q) {
    if (!m.is_moe() || q.moe.imbalance <= 1) return 0;
    spec::PlanSpec e = q;
    e.moe.imbalance = 1;
    engine::EvalOptions lean = eval;
    lean.keep_kernels = false;
    engine::Prediction p;
    engine::evaluate_into(p, ws, m, e, hw, c, lean);
    return p.status == engine::Status::kInvalid ? 0 : p.step.time_s;
  }
};

/// The loss the change relieves: the kind that fell the most from the base's
/// decomposition to the changed plan's (a faster dtype's smaller ideal counts
/// as the GEMMs').
LossKind relieved(const Decomposition& base, const Decomposition& now) {
  LossKind best = LossKind::kOther;
  double most = -1e300;
  for (int i = 0; i < kLossKindCount; ++i) {
    double fell = base.losses[i].seconds - now.losses[i].seconds;
    if (static_cast<LossKind>(i) == LossKind::kGemm) fell += base.ideal_s - now.ideal_s;
    if (fell > most) {
      most = fell;
      best = static_cast<LossKind>(i);
    }
  }
  return best;
}

std::string_view most_freed(const engine::Prediction& base, const engine::Prediction& now) {
  std::string_view best = "";
  double most = 0;
  for (const auto& cat : memory::kMemoryCategories) {
    const double fell = base.memory.*cat.bytes - now.memory.*cat.bytes;
    if (fell > most) {
      most = fell;
      best = cat.label;
    }
  }
  return best;
}

/// Keeps the first (best) suggestion of each family, in order, and when that
/// one fits only without the headroom ("tight"), the family's best that fits
/// with it too.
void best_per_family(std::vector<Suggestion>& v) {
  std::vector<Suggestion> kept;
  for (auto& s : v) {
    const auto same = [&](const Suggestion& k) { return k.family == s.family; };
    if (std::none_of(kept.begin(), kept.end(), same)) {
      kept.push_back(std::move(s));
      continue;
    }
    const bool roomy_kept = std::any_of(kept.begin(), kept.end(), [&](const Suggestion& k) {
      return same(k) && k.outcome.fits_headroom;
    });
    if (!roomy_kept && s.outcome.fits_headroom) kept.push_back(std::move(s));
  }
  v = std::move(kept);
}

void gain_interval(Suggestion& s, const Outcome& base, double level) {
  const auto& a = base.interval;
  const auto& b = s.outcome.interval;
  if (level <= 0 || !a.valid() || !b.valid()) return;
  const bool one_pool = a.pool == b.pool;
  const double sa = one_pool ? a.log_sd_within : a.log_sd, sb = one_pool ? b.log_sd_within : b.log_sd;
  const double half = uncertainty::normal_quantile(0.5 + level / 2) * std::hypot(sa, sb);
  const double ratio = 1 + s.gain;
  s.gain_interval_known = true;
  s.gain_lo = ratio * std::exp(-half) - 1;
  s.gain_hi = ratio * std::exp(half) - 1;
}

}  // namespace

bool changes_numerics(std::string_view family) {
  return family == "precision" || family == "optimizer" || family == "finetune" || family == "local_batch";
}

void rank_memory_savers(std::vector<Suggestion>& v) {
  // The time a change costs, as a fraction of the plan's tokens/s; none
  // below kNegligibleTimeCost.
  const auto cost_of = [](const Suggestion& s) {
    const double c = std::max(0.0, -s.gain);
    return c < kNegligibleTimeCost ? 0.0 : c;
  };
  std::stable_sort(v.begin(), v.end(), [&](const Suggestion& x, const Suggestion& y) {
    const double cx = cost_of(x), cy = cost_of(y);
    if ((cx == 0) != (cy == 0)) return cx == 0;
    const double sx = cx == 0 ? x.freed_bytes : x.freed_bytes / cx;
    const double sy = cy == 0 ? y.freed_bytes : y.freed_bytes / cy;
    if (sx != sy) return sx > sy;
    return !x.changes_numerics && y.changes_numerics;
  });
}

Advice advise(const spec::ModelSpec& m, const spec::PlanSpec& plan, const spec::HardwareSpec& hw, const Options& opt) {
  Advice a;
  Evaluator ev{m, hw, opt, engine::resolve_for(hw, plan, opt.eval), {}, opt.eval};
  ev.eval.keep_kernels = true;
  // The plan with its global batch stated: every change keeps it.
  spec::PlanSpec base = plan;
  if (base.global_batch == 0) {
    const long long g = base.effective_global_batch();
    base.global_batch = g > (1 << 30) ? (1 << 30) : static_cast<int>(g);
  }
  ev.run(base, a.base, a.prediction, &a.decomposition);
  if (a.base.status == engine::Status::kInvalid) return a;
  const auto& mem = a.prediction.memory;
  a.memory.peak_bytes = mem.total;
  a.memory.capacity_bytes = mem.capacity;
  a.memory.fraction = mem.capacity > 0 ? mem.total / mem.capacity : 0.0;
  a.memory.fits = mem.fits;
  for (const auto& cat : memory::kMemoryCategories)
    if (mem.*cat.bytes > a.memory.dominant_bytes) {
      a.memory.dominant_bytes = mem.*cat.bytes;
      a.memory.dominant = cat.label;
    }

  std::vector<Suggestion> all;
  engine::Prediction pred;
  Decomposition d;
  const spec::ImportReport* imported = opt.imported && !opt.imported->kind.empty() ? opt.imported : nullptr;
  if (imported) {
    a.edit_language = imported->kind;
    a.edit_file = imported->file;
  }
  BaseFacts facts;
  facts.all_to_all_share = a.base.step_s > 0 ? a.prediction.step.all_to_all_s / a.base.step_s : 0.0;
  facts.memory_tight = !a.base.fits_headroom;
  for (auto& cand : candidates(m, base, hw, imported, facts)) {
    Suggestion s;
    if (imported) {
      // Only what the imported file's framework offers, in its words.
      auto edit = spec::launch_edit(*imported, base, cand.plan, m);
      if (!edit) {
        ++a.not_offered;
        continue;
      }
      s.edit = std::move(*edit);
    }
    ev.run(cand.plan, s.outcome, pred, &d);
    ++a.evaluated;
    if (s.outcome.status == engine::Status::kInvalid) {
      ++a.invalid;
      continue;
    }
    s.change = std::move(cand.change);
    s.family = cand.family;
    s.changes_numerics = changes_numerics(s.family);
    s.flags = flags_between(base, cand.plan);
    s.fields = fields_between(base, cand.plan);
    if (s.fields.empty()) continue;  // the change is the plan itself
    s.addresses = relieved(a.decomposition, d);
    s.loss_s = a.decomposition.of(s.addresses).seconds;
    s.loss_share = a.decomposition.of(s.addresses).share;
    s.gain = a.base.tokens_per_s > 0 ? s.outcome.tokens_per_s / a.base.tokens_per_s - 1 : 0.0;
    s.saved_s = a.base.step_s - s.outcome.step_s;
    s.time_change = a.base.step_s > 0 ? s.outcome.step_s / a.base.step_s - 1 : 0.0;
    s.freed_bytes = a.base.peak_bytes - s.outcome.peak_bytes;
    s.frees = most_freed(a.prediction, pred);
    gain_interval(s, a.base, opt.level);
    all.push_back(std::move(s));
  }
  for (const auto& s : all)
    if (s.outcome.fits && s.gain > 1e-4) a.speed.push_back(s);
  std::stable_sort(a.speed.begin(), a.speed.end(), [](const Suggestion& x, const Suggestion& y) { return x.gain > y.gain; });
  best_per_family(a.speed);
  // Memory: what frees the most at the least time (rank_memory_savers).
  // Changes that free at least 1% of the peak.
  for (const auto& s : all)
    if (s.outcome.status != engine::Status::kInvalid && s.freed_bytes > 0.01 * a.base.peak_bytes)
      a.memory_savers.push_back(s);
  rank_memory_savers(a.memory_savers);
  best_per_family(a.memory_savers);
  // The top three speed suggestions that change different fields, together.
  spec::PlanSpec together = base;
  std::vector<std::string> taken;
  double independent = 1;
  for (size_t i = 0; i < a.speed.size() && a.combined.of.size() < 3; ++i) {
    const auto& s = a.speed[i];
    const bool clash = std::any_of(s.fields.begin(), s.fields.end(), [&](const std::string& f) {
      return std::find(taken.begin(), taken.end(), f) != taken.end();
    });
    if (clash) continue;
    for (const auto& key : s.fields) {
      const auto* f = spec::find_plan_field(key);
      spec::set_field(*f, together, spec::field_text(*f, s.outcome.plan));
      taken.push_back(key);
    }
    independent *= 1 + s.gain;
    a.combined.of.push_back(static_cast<int>(i));
  }
  if (a.combined.of.size() >= 2) {
    a.combined.tried = true;
    ev.run(together, a.combined.outcome, pred, nullptr);
    ++a.evaluated;
    a.combined.flags = flags_between(base, together);
    if (imported) a.combined.edit = spec::launch_edit(*imported, base, together, m).value_or("");
    a.combined.gain = a.combined.outcome.status == engine::Status::kInvalid || a.base.tokens_per_s <= 0
                          ? 0.0
                          : a.combined.outcome.tokens_per_s / a.base.tokens_per_s - 1;
    a.combined.gain_if_independent = independent - 1;
  }
  const int keep = std::max(opt.top, a.combined.of.empty() ? 0 : a.combined.of.back() + 1);
  if (static_cast<int>(a.speed.size()) > keep) a.speed.resize(keep);
  if (static_cast<int>(a.memory_savers.size()) > opt.top) a.memory_savers.resize(opt.top);
  return a;
}

}  // namespace ridgeline::advise
