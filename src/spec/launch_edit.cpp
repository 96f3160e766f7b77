#include "ridgeline/spec/launch_edit.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "ridgeline/spec/plan_fields.hpp"

namespace ridgeline::spec {

namespace {

/// The settings of one edit, or a refusal: the framework has no setting for
/// a field the change touches.
struct Edit {
  std::vector<std::string> parts;
  bool offered = true;
  void add(std::string s) {
    if (std::find(parts.begin(), parts.end(), s) == parts.end()) parts.push_back(std::move(s));
  }
  void refuse() { offered = false; }
};

std::string quoted(std::string_view s) { return fmt::format("\"{}\"", s); }

// ---- torchtitan ----

bool has_key(const ImportReport& r, std::string_view k) {
  return std::find(r.keys.begin(), r.keys.end(), k) != r.keys.end();
}

bool has_prefix(const ImportReport& r, std::string_view prefix) {
  return std::any_of(r.keys.begin(), r.keys.end(), [&](const std::string& k) { return k.starts_with(prefix); });
}

/// The key as the file's release spells it: the first spelling the file
/// uses, else the first (the last TOML release's, 238fa99).
std::string tt_key(const ImportReport& r, std::initializer_list<std::string_view> spellings) {
  for (auto s : spellings)
    if (has_key(r, s)) return std::string(s);
  return std::string(*spellings.begin());
}

/// The float8 converter's names in the file's release: the 2024 [float8]
/// switch (config_manager.py, 1a303b3: float8.enable_float8_linear), the
/// 2025 "float8" converter with its [float8] section, or the last TOML
/// release's "quantize.linear.float8" with [quantize.linear.float8]
/// (job_config.py 238fa99 lines 731-738 and 812-836).
enum class Float8Names { k2024, kFloat8, kQuantize };
Float8Names float8_names(const ImportReport& r) {
  if (has_key(r, "float8.enable_float8_linear")) return Float8Names::k2024;
  const std::string& said = r.values.precision.said;
  if (has_prefix(r, "quantize.") || said.find("quantize.linear") != std::string::npos) return Float8Names::kQuantize;
  if (has_prefix(r, "float8.") || said.find("\"float8\"") != std::string::npos || said.find("\"mx\"") != std::string::npos)
    return Float8Names::kFloat8;
  return Float8Names::kQuantize;
}

/// torchtitan's keys (torchtitan/config/job_config.py, 238fa99):
///  - parallelism.{tensor,pipeline,context}_parallel_degree (lines 351, 360,
///    428), data_parallel_shard_degree (line 324: FSDP2, ZeRO-3) and
///    data_parallel_replicate_degree (line 313: DDP); no ZeRO-1/2; sequence
///    parallelism comes with TP (frameworks/torchtitan.yaml); no interleaved
///    schedule or uneven stages (the import accepts 1F1B and GPipe only);
///  - enable_async_tensor_parallel (line 357);
///  - training.local_batch_size and global_batch_size (lines 253-258; -1:
///    local x DP, so a new local batch that keeps the global one states
///    it); the 2024 training.batch_size has no accumulation: its global
///    batch is always batch_size x DP;
///  - compile.enable (line 722; 2024: training.compile): fusion compiled or
///    eager, nothing between;
///  - model.converters (line 118) with float8's recipe_name "tensorwise",
///    "rowwise" or "rowwise_with_gw_hp" (line 738; torchao has no delayed
///    scaling there); the converters' names
///    "quantize.linear.float8" and "quantize.linear.mx" (mxfp8) are
///    registered in components/quantization/float8.py line 238 and mx.py
///    line 171;
///  - activation_checkpoint.mode none | selective | full and
///    selective_ac_option "op" or K (lines 652-655);
///  - optimizer.name "AdamW" or "Adam" (line 135); optimizer.early_step_in_backward
///    (9810191~1 line 160); training.enable_cpu_offload (b5bcd76 configs.py
///    line 70: parameters, gradients and optimizer state together).
void torchtitan_edit(const ImportReport& r, const PlanSpec& a, const PlanSpec& b,
                     const std::vector<std::string_view>& keys, Edit& e) {
  const auto& v = r.values;
  const bool old_layout = has_key(r, "training.data_parallel_degree");
  for (auto k : keys) {
    if (k == "parallel.tp") {
      e.add(fmt::format("{} = {}", tt_key(r, {"parallelism.tensor_parallel_degree", "training.tensor_parallel_degree"}),
                        b.parallel.tp));
    } else if (k == "parallel.pp") {
      e.add(fmt::format("{} = {}",
                        tt_key(r, {"parallelism.pipeline_parallel_degree", "experimental.pipeline_parallel_degree",
                                   "training.pipeline_parallel_degree"}),
                        b.parallel.pp));
    } else if (k == "parallel.cp") {
      e.add(fmt::format("{} = {}",
                        tt_key(r, {"parallelism.context_parallel_degree", "experimental.context_parallel_degree",
                                   "training.context_parallel_degree"}),
                        b.parallel.cp));
    } else if (k == "parallel.dp" || k == "parallel.zero") {
      const int dp = b.parallel.dp, zero = dp > 1 ? b.parallel.zero : a.parallel.zero;
      if (zero != 0 && zero != 3) {
        e.refuse();
        continue;
      }
      const bool rest = v.dp_shard.text == "-1";  // the GPUs the other degrees leave
      if (old_layout) {
        if (a.parallel.zero != zero) e.add(fmt::format("training.data_parallel_type = {}", quoted(zero == 3 ? "fsdp" : "ddp")));
        if (!rest) e.add(fmt::format("training.data_parallel_degree = {}", dp));
        continue;
      }
      const std::string shard = tt_key(r, {"parallelism.data_parallel_shard_degree", "training.data_parallel_shard_degree"});
      const std::string rep =
          tt_key(r, {"parallelism.data_parallel_replicate_degree", "training.data_parallel_replicate_degree"});
      const bool zero_changed = a.parallel.zero != zero;
      if (zero == 3) {
        if (zero_changed) {
          e.add(fmt::format("{} = {}", shard, dp));
          e.add(fmt::format("{} = 1", rep));
        } else if (!rest) {
          // HSDP keeps its replicas: the shard degree takes the change.
          long long replicate = 1;
          if (v.dp_replicate.given()) replicate = std::max(1LL, std::atoll(v.dp_replicate.text.c_str()));
          if (dp % replicate != 0) e.refuse();
          else e.add(fmt::format("{} = {}", shard, dp / replicate));
        }
      } else {
        e.add(fmt::format("{} = {}", rep, dp));
        e.add(fmt::format("{} = 1", shard));
      }
    } else if (k == "parallel.sp") {
      if (b.parallel.sp != (b.parallel.tp > 1)) e.refuse();
    } else if (k == "parallel.first_stage_layers" || k == "parallel.last_stage_layers") {
      if (b.parallel.first_stage_layers != 0 || b.parallel.last_stage_layers != 0) e.refuse();
    } else if (k == "parallel.tp_comm_overlap") {
      if (b.parallel.tp > 1 || b.parallel.tp_comm_overlap)
        e.add(fmt::format("{} = {}",
                          tt_key(r, {"parallelism.enable_async_tensor_parallel",
                                     "experimental.enable_async_tensor_parallel"}),
                          b.parallel.tp_comm_overlap ? "true" : "false"));
    } else if (k == "micro_batch" || k == "global_batch") {
      // The global batch follows the local one unless the file states it
      // (-1: local x DP); the 2024 per-rank batch_size has no global key.
      const std::string local = tt_key(r, {"training.local_batch_size", "training.batch_size"});
      const bool global_given = v.global_batch.given() && v.global_batch.text != "-1";
      const bool follows = b.effective_global_batch() == static_cast<long long>(b.micro_batch) * b.parallel.dp;
      if (k == "micro_batch") e.add(fmt::format("{} = {}", local, b.micro_batch));
      const bool state_global = global_given ? k == "global_batch" : !follows;
      if (state_global && local == "training.batch_size") e.refuse();
      else if (state_global) e.add(fmt::format("training.global_batch_size = {}", b.effective_global_batch()));
    } else if (k == "fusion") {
      if (b.fusion == Fusion::kFused) {
        e.refuse();
        continue;
      }
      e.add(fmt::format("{} = {}", tt_key(r, {"compile.enable", "training.compile"}),
                        b.fusion == Fusion::kCompiled ? "true" : "false"));
    } else if (k == "precision" || k == "fp8.recipe") {
      const Float8Names names = float8_names(r);
      const bool fp8_to = b.precision == Precision::kFp8, fp8_from = a.precision == Precision::kFp8;
      if (!fp8_to) {
        if (!fp8_from || b.precision != Precision::kBf16) {
          e.refuse();
        } else if (names == Float8Names::k2024) {
          e.add("float8.enable_float8_linear = false");
        } else {
          e.add("model.converters = []");
        }
        continue;
      }
      if (names == Float8Names::k2024) {
        // The 2024 Float8Linear: dynamic (tensorwise) or delayed scaling only.
        if (b.fp8_recipe != Fp8Recipe::kTensorwise) e.refuse();
        else e.add("float8.enable_float8_linear = true");
        continue;
      }
      const bool quantize = names == Float8Names::kQuantize;
      if (b.fp8_recipe == Fp8Recipe::kMxfp8) {
        e.add(fmt::format("model.converters = [{}]", quoted(quantize ? "quantize.linear.mx" : "mx")));
      } else if (b.fp8_recipe == Fp8Recipe::kTensorwise || b.fp8_recipe == Fp8Recipe::kRowwise ||
                 b.fp8_recipe == Fp8Recipe::kRowwiseGwHp) {
        if (!fp8_from || a.fp8_recipe == Fp8Recipe::kMxfp8)
          e.add(fmt::format("model.converters = [{}]", quoted(quantize ? "quantize.linear.float8" : "float8")));
        e.add(fmt::format("{}.recipe_name = {}", quantize ? "quantize.linear.float8" : "float8",
                          quoted(to_string(b.fp8_recipe))));
      } else {
        e.refuse();
      }
    } else if (k == "recompute") {
      const Recompute& rc = b.recompute;
      if (rc.kind == RecomputeKind::kNone) {
        e.add("activation_checkpoint.mode = \"none\"");
      } else if (rc.kind == RecomputeKind::kFull && rc.block_layers == 0) {
        e.add("activation_checkpoint.mode = \"full\"");
      } else if (rc.kind == RecomputeKind::kOp || rc.kind == RecomputeKind::kEvery) {
        e.add("activation_checkpoint.mode = \"selective\"");
        e.add(fmt::format("activation_checkpoint.selective_ac_option = {}",
                          quoted(rc.kind == RecomputeKind::kOp ? "op" : std::to_string(rc.every_k))));
      } else {
        e.refuse();
      }
    } else if (k == "offload.optimizer" || k == "offload.params") {
      // training.enable_cpu_offload moves both at once (FSDP2's CPUOffloadPolicy).
      const bool opt = b.offload.optimizer_on_cpu(), params = b.offload.params_on_cpu();
      if (opt != params) e.refuse();
      else if (k == "offload.optimizer" || std::find(keys.begin(), keys.end(), "offload.optimizer") == keys.end())
        e.add(fmt::format("training.enable_cpu_offload = {}", opt ? "true" : "false"));
    } else if (k == "optimizer.in_backward") {
      e.add(fmt::format("optimizer.early_step_in_backward = {}", b.optimizer.in_backward ? "true" : "false"));
    } else if (k == "optimizer.kind") {
      if (b.optimizer.kind == OptimizerKind::kAdamW) e.add("optimizer.name = \"AdamW\"");
      else if (b.optimizer.kind == OptimizerKind::kAdam) e.add("optimizer.name = \"Adam\"");
      else e.refuse();
    } else {
      e.refuse();
    }
  }
}

// ---- Megatron-LM (and Megatron-DeepSpeed) ----

/// Megatron-LM's arguments (d98e8a6): --tensor-model-parallel-size,
/// --pipeline-model-parallel-size, --context-parallel-size (DP is the world
/// size over them, initialize_model_parallel); --use-distributed-optimizer
/// (arguments.py line 3156: ZeRO-1; Megatron-FSDP's ZeRO-2/3 is not
/// modelled under this framework); --sequence-parallel and --tp-comm-overlap
/// (model_parallel_config.py lines 94, 265); --num-layers-per-virtual-
/// pipeline-stage / --num-virtual-stages-per-pipeline-rank (arguments.py
/// lines 3114-3116), --decoder-first/last-pipeline-num-layers (line 3095);
/// --micro-batch-size and --global-batch-size; --cross-entropy-loss-fusion
/// (model_parallel_config.py line 320); --cuda-graph-impl local | none
/// (transformer_config.py line 1075); --attention-backend flash | fused |
/// unfused (transformer_config.py line 151, AttnBackend); --fp8-format
/// hybrid with --fp8-recipe tensorwise | delayed | mxfp8 | blockwise
/// (transformer_config.py lines 587-594); --recompute-granularity full |
/// selective, --recompute-method uniform | block, --recompute-num-layers
/// (transformer_config.py lines 532-551); --optimizer adam | sgd
/// (arguments.py line 2913); --optimizer-cpu-offload. Megatron-DeepSpeed (--deepspeed) takes
/// --zero-stage for every ZeRO stage and has neither fp8 nor CUDA graphs
/// nor --attention-backend.
void megatron_edit(const ImportReport& r, const PlanSpec& a, const PlanSpec& b, const ModelSpec& m,
                   const std::vector<std::string_view>& keys, Edit& e) {
  const auto& v = r.values;
  const bool mds = r.framework == "deepspeed";  // Megatron-DeepSpeed
  const auto toggle = [&](std::string_view flag, bool on) {
    e.add(on ? fmt::format("--{}", flag) : fmt::format("drop --{}", flag));
  };
  for (auto k : keys) {
    if (k == "parallel.tp") {
      e.add(fmt::format("--tensor-model-parallel-size {}", b.parallel.tp));
    } else if (k == "parallel.pp") {
      e.add(fmt::format("--pipeline-model-parallel-size {}", b.parallel.pp));
    } else if (k == "parallel.cp") {
      e.add(fmt::format("--context-parallel-size {}", b.parallel.cp));
    } else if (k == "parallel.dp") {
      // The world size over TP x PP x CP: no argument.
    } else if (k == "parallel.zero") {
      if (mds) e.add(fmt::format("--zero-stage {}", b.parallel.zero));
      else if (b.parallel.zero <= 1 && a.parallel.zero <= 1) toggle("use-distributed-optimizer", b.parallel.zero == 1);
      else e.refuse();
    } else if (k == "parallel.sp") {
      // At TP 1 Megatron-LM turns sequence parallelism off itself
      // (arguments.py lines 1434-1439, "Disabling sequence parallelism").
      if (a.parallel.tp > 1 || b.parallel.tp > 1) toggle("sequence-parallel", b.parallel.sp);
    } else if (k == "parallel.tp_comm_overlap") {
      if (b.parallel.tp > 1 || a.parallel.tp_comm_overlap) toggle("tp-comm-overlap", b.parallel.tp_comm_overlap);
    } else if (k == "parallel.virtual_stages") {
      const int vs = b.parallel.virtual_stages, pp = std::max(1, b.parallel.pp);
      if (v.layers_per_virtual_stage.given()) {
        if (vs == 1) {
          e.add("drop --num-layers-per-virtual-pipeline-stage");
        } else if (m.layers % pp != 0 || (m.layers / pp) % vs != 0) {
          e.refuse();
        } else {
          e.add(fmt::format("--num-layers-per-virtual-pipeline-stage {}", m.layers / pp / vs));
        }
      } else if (vs == 1) {
        e.add("drop --num-virtual-stages-per-pipeline-rank");
      } else {
        e.add(fmt::format("--num-virtual-stages-per-pipeline-rank {}", vs));
      }
    } else if (k == "parallel.first_stage_layers") {
      if (b.parallel.first_stage_layers == 0) e.add("drop --decoder-first-pipeline-num-layers");
      else e.add(fmt::format("--decoder-first-pipeline-num-layers {}", b.parallel.first_stage_layers));
    } else if (k == "parallel.last_stage_layers") {
      if (b.parallel.last_stage_layers == 0) e.add("drop --decoder-last-pipeline-num-layers");
      else e.add(fmt::format("--decoder-last-pipeline-num-layers {}", b.parallel.last_stage_layers));
    } else if (k == "micro_batch" || k == "global_batch") {
      if (k == "micro_batch") e.add(fmt::format("--micro-batch-size {}", b.micro_batch));
      if (k == "global_batch" || !v.global_batch.given())
        e.add(fmt::format("--global-batch-size {}", b.effective_global_batch()));
    } else if (k == "cross_entropy") {
      if (mds) e.refuse();
      else toggle("cross-entropy-loss-fusion", b.cross_entropy == CrossEntropy::kFused);
    } else if (k == "cuda_graphs") {
      if (mds) e.refuse();
      else e.add(fmt::format("--cuda-graph-impl {}", b.cuda_graphs ? "local" : "none"));
    } else if (k == "attention") {
      const AttentionKind at = b.attention;
      if (mds) e.refuse();
      else if (at == AttentionKind::kFlash2) e.add("--attention-backend flash");
      else if (at == AttentionKind::kFlash3) e.add("--attention-backend flash (with flash-attn 3 installed)");
      else if (at == AttentionKind::kCudnn) e.add("--attention-backend fused");
      else if (at == AttentionKind::kNaive) e.add("--attention-backend unfused");
      else e.refuse();
    } else if (k == "precision" || k == "fp8.recipe") {
      const bool fp8_to = b.precision == Precision::kFp8, fp8_from = a.precision == Precision::kFp8;
      if (mds || (!fp8_to && !(fp8_from && b.precision == Precision::kBf16)) ||
          b.fp8_recipe == Fp8Recipe::kRowwise || b.fp8_recipe == Fp8Recipe::kRowwiseGwHp) {
        e.refuse();
      } else if (!fp8_to) {
        e.add("drop --fp8-format and --fp8-recipe (--bf16 stays)");
      } else {
        if (!fp8_from) e.add("--fp8-format hybrid");
        e.add(fmt::format("--fp8-recipe {}", to_string(b.fp8_recipe)));
      }
    } else if (k == "recompute") {
      const Recompute& rc = b.recompute;
      const bool was_full = a.recompute.kind == RecomputeKind::kFull || a.recompute.kind == RecomputeKind::kEvery;
      if (rc.kind == RecomputeKind::kNone) {
        e.add(was_full ? "drop --recompute-granularity, --recompute-method and --recompute-num-layers"
                       : "drop --recompute-granularity");
      } else if (rc.kind == RecomputeKind::kSelective) {
        e.add("--recompute-granularity selective");
        if (was_full) e.add("drop --recompute-method and --recompute-num-layers");
        // --recompute-modules (nargs='*'; default ["core_attn"]:
        // transformer_config.py, d98e8a6, lines 560-575 and 1940-1941).
        const bool had = a.recompute.kind == RecomputeKind::kSelective && a.recompute.modules != kRecomputeCoreAttn;
        if (mds && rc.modules != kRecomputeCoreAttn) e.refuse();
        else if (rc.modules != kRecomputeCoreAttn)
          e.add(fmt::format("--recompute-modules {}", recompute_modules_to_string(rc.modules, " ")));
        else if (had) e.add("drop --recompute-modules");
      } else if (rc.kind == RecomputeKind::kFull || rc.kind == RecomputeKind::kEvery) {
        const bool block = rc.kind == RecomputeKind::kFull && rc.block_layers > 0;
        const int n = block ? rc.block_layers : rc.kind == RecomputeKind::kEvery ? rc.every_k : 1;
        e.add(fmt::format("--recompute-granularity full --recompute-method {} --recompute-num-layers {}",
                          block ? "block" : "uniform", n));
      } else {
        e.refuse();
      }
    } else if (k == "moe.dispatcher") {
      // transformer_config.py (d98e8a6) lines 891 and 898, arguments through
      // ArgumentGroupFactory (arguments.py line 2373): the flex dispatcher
      // on DeepEP's backend (--moe-enable-deepep, deprecated at lines 1743-1751).
      if (mds) e.refuse();
      else if (b.moe.dispatcher == MoeDispatcher::kDeepEp)
        e.add("--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend deepep");
      else e.add("--moe-token-dispatcher-type alltoall");
    } else if (k == "parallel.ep_comm_overlap") {
      // model_parallel_config.py line 343, overlap_moe_expert_parallel_comm.
      if (mds) e.refuse();
      else toggle("overlap-moe-expert-parallel-comm", b.parallel.ep_comm_overlap);
    } else if (k == "offload.optimizer") {
      // Megatron-Core's HybridDeviceOptimizer (--optimizer-cpu-offload, the
      // whole optimizer with --optimizer-offload-fraction's default 1.0).
      if (mds) e.refuse();
      else toggle("optimizer-cpu-offload", b.offload.optimizer == OffloadDevice::kCpu);
    } else if (k == "optimizer.kind") {
      const OptimizerKind o = b.optimizer.kind;
      if (o == OptimizerKind::kAdam || o == OptimizerKind::kAdamW) e.add("--optimizer adam");
      else if (o == OptimizerKind::kSgd) e.add("--optimizer sgd");
      else e.refuse();
    } else {
      e.refuse();
    }
  }
}

// ---- DeepSpeed ----

/// DeepSpeed's JSON keys (DeepSpeed edaa722): zero_optimization.stage 0-3
/// (runtime/zero/config.py lines 57, 95) and offload_optimizer.device
/// (line 164; zero/offload_config.py line 58: "cpu" or "none"); the batch as
/// train_micro_batch_size_per_gpu, gradient_accumulation_steps and
/// train_batch_size (runtime/constants.py lines 95, 107, 19: micro x
/// accumulation x DP, DP the world size over TP); tensor_parallel.autotp_size
/// (runtime/tensor_parallel/config.py line 45); bf16.enabled / fp16.enabled
/// (constants.py lines 134-137, 176-178); optimizer.type "Adam" | "AdamW"
/// (constants.py lines 61-64; runtime/config.py lines 72-73, matched
/// without case). Pipeline stages need a PipelineModule
/// in the model code, recomputation the model's own checkpoint calls, and
/// neither fp8 nor torch.compile is a ds_config switch: none is offered.
void deepspeed_edit(const ImportReport& r, const PlanSpec& a, const PlanSpec& b,
                    const std::vector<std::string_view>& keys, Edit& e) {
  const auto& v = r.values;
  for (auto k : keys) {
    if (k == "parallel.zero") {
      e.add(fmt::format("zero_optimization.stage: {}", b.parallel.zero));
    } else if (k == "parallel.tp") {
      e.add(fmt::format("tensor_parallel.autotp_size: {}", b.parallel.tp));
    } else if (k == "parallel.dp") {
      // The world size over AutoTP: no key.
    } else if (k == "parallel.sp") {
      if (b.parallel.sp) e.refuse();
    } else if (k == "parallel.tp_comm_overlap") {
      if (b.parallel.tp_comm_overlap) e.refuse();
    } else if (k == "micro_batch" || k == "global_batch") {
      if (k == "micro_batch") e.add(fmt::format("train_micro_batch_size_per_gpu: {}", b.micro_batch));
      const long long per_step = static_cast<long long>(b.micro_batch) * b.parallel.dp;
      const long long g = b.effective_global_batch();
      if (v.grad_accum.given()) {
        if (per_step <= 0 || g % per_step != 0) e.refuse();
        else e.add(fmt::format("gradient_accumulation_steps: {}", g / per_step));
      }
      if (k == "global_batch" || (!v.global_batch.given() && !v.grad_accum.given()))
        e.add(fmt::format("train_batch_size: {}", g));
    } else if (k == "precision") {
      if (b.precision == Precision::kBf16) e.add("bf16.enabled: true; fp16.enabled: false");
      else if (b.precision == Precision::kFp16) e.add("fp16.enabled: true; bf16.enabled: false");
      else e.refuse();
    } else if (k == "fp8.recipe") {
      if (b.precision == Precision::kFp8 || a.precision == Precision::kFp8) e.refuse();
    } else if (k == "optimizer.kind") {
      if (b.optimizer.kind == OptimizerKind::kAdam) e.add("optimizer.type: \"Adam\"");
      else if (b.optimizer.kind == OptimizerKind::kAdamW) e.add("optimizer.type: \"AdamW\"");
      else e.refuse();
    } else if (k == "offload.optimizer") {
      e.add(fmt::format("zero_optimization.offload_optimizer.device: {}",
                        quoted(b.offload.optimizer == OffloadDevice::kCpu ? "cpu" : "none")));
    } else {
      e.refuse();
    }
  }
}

}  // namespace

std::optional<std::string> launch_edit(const ImportReport& r, const PlanSpec& from, const PlanSpec& to,
                                       const ModelSpec& m) {
  if (r.kind.empty()) return std::nullopt;
  std::vector<std::string_view> keys;
  for (const auto& f : plan_fields())
    if (field_text(f, from) != field_text(f, to)) keys.push_back(f.key);
  Edit e;
  if (r.kind == "torchtitan TOML") torchtitan_edit(r, from, to, keys, e);
  else if (r.kind == "Megatron-LM args") megatron_edit(r, from, to, m, keys, e);
  else if (r.kind == "DeepSpeed JSON") deepspeed_edit(r, from, to, keys, e);
  else return std::nullopt;
  if (!e.offered) return std::nullopt;
  std::string out;
  for (const auto& p : e.parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

}  // namespace ridgeline::spec
