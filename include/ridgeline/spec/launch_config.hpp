// Launch configurations of the training frameworks, read as plans: a file of
// Megatron-LM arguments (as a launch script passes them to pretrain_gpt.py),
// a torchtitan train.toml and a DeepSpeed ds_config.json. Each importer reads
// the file into LaunchValues (the settings it gave, each with where it said
// so); apply_launch then turns them into plan settings through the plan's own
// fields (spec/plan_fields.hpp), so a value is checked and worded as a plan
// YAML's would be, with the launch file's line. The Megatron vocabulary is
// defined once (take_megatron_arg) and serves both --from-megatron files and
// the CLI's Megatron-spelt alias flags (--tensor-model-parallel-size 8).
//
// Each setting is read as its framework reads it, its default included
// (Megatron-LM's --overlap-grad-reduce off, DeepSpeed's overlap_comm on only
// at stage 3, torchtitan's activation checkpointing every second layer).
// What a file gives that has no effect on step time or memory (learning
// rates, paths, logging) is listed as ignored, with the reason; what would
// change them but is not modelled (activation offload, a custom pipeline
// layout, Ulysses) is an error at its file:line; a key Ridgeline does not
// know is listed as not read. Units: counts (GPUs, layers, sequences, tokens).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/spec/model.hpp"
#include "ridgeline/spec/plan.hpp"
#include "ridgeline/support/diagnostics.hpp"

namespace ridgeline::spec {

/// One value a launch config gave: its text, what the file said and where.
struct LaunchValue {
  std::string text;  // "8", "selective", "true"
  std::string said;  // "--tensor-model-parallel-size 8", "parallelism.tensor_parallel_degree = 8"
  support::SourceLoc loc;
  bool given() const { return !said.empty(); }
};

/// The settings of a launch config, before they are combined into a plan
/// (Megatron's recompute is three arguments; its DP degree is the world size
/// over TP x PP x CP; DeepSpeed's global batch is micro x accumulation x DP).
struct LaunchValues {
  // Plan settings as they are (spec::apply_setting keys).
  LaunchValue tp, pp, cp, ep, dp, zero, sp, tp_comm_overlap, overlap_param_gather, fp8_primary_weights, cross_entropy, ep_comm_overlap, vpp, first_stage_layers, last_stage_layers;
  LaunchValue shared_expert_overlap, moe_dispatcher;
  LaunchValue micro_batch, global_batch, seq_len, precision, fp8_recipe, attention, fusion, optimizer;
  LaunchValue main_grads, recompute;  // recompute: a whole recompute word (torchtitan)
  /// Megatron --use-flash-attn: FlashAttention, which under Transformer
  /// Engine is the backend TE picks by GPU unless --attention-backend names one.
  LaunchValue use_flash_attn;
  /// Megatron --grad-reduce-in-bf16: turns accumulate_allreduce_grads_in_fp32 off.
  LaunchValue grad_reduce_in_bf16;
  LaunchValue expert_tp;  // Megatron --expert-tensor-parallel-size: modelled only as TP
  LaunchValue offload_optimizer, offload_params;  // "cpu" (DeepSpeed offload_*.device, Megatron --optimizer-cpu-offload)
  LaunchValue offload_fraction;  // Megatron --optimizer-offload-fraction: only 1.0 is modelled
  /// torchtitan optimizer.early_step_in_backward: each parameter's step in
  /// its post-accumulate-grad hook (optimizer.in_backward).
  LaunchValue optimizer_in_backward;
  /// Megatron --use-precision-aware-optimizer, --exp-avg-dtype and
  /// --exp-avg-sq-dtype: the Adam moments' dtype (optimizer.state_dtype).
  LaunchValue precision_aware_optimizer, exp_avg_dtype, exp_avg_sq_dtype;
  // Combined with others when applied.
  LaunchValue recompute_granularity, recompute_method, recompute_num_layers;  // Megatron
  LaunchValue recompute_modules;  // Megatron --recompute-modules, its words joined by '+'
  LaunchValue layers_per_virtual_stage;  // Megatron: vpp = layers / PP / N
  /// Megatron --account-for-embedding-in-pipeline-split and
  /// --account-for-loss-in-pipeline-split: the embedding and the loss each
  /// count as one layer in the pipeline split (first and last stage layers).
  LaunchValue embedding_in_split, loss_in_split;
  LaunchValue nproc_per_node, nnodes;    // torchrun: DP = GPUs / (TP x PP x CP)
  LaunchValue dp_shard, dp_replicate;    // torchtitan: DP = shard x replicate; shard > 1: ZeRO-3 (FSDP2)
  LaunchValue grad_accum;                // DeepSpeed gradient_accumulation_steps
  LaunchValue train_iters, train_samples;  // tokens = iterations x global batch x seq, samples x seq
  // The model the file describes, checked against the plan's model.
  LaunchValue num_layers, hidden_size, num_heads, ffn_hidden_size;
  /// Megatron --num-query-groups and --kv-channels, and the switch without
  /// which Megatron-LM ignores the query groups (--group-query-attention).
  LaunchValue num_query_groups, kv_channels, group_query_attention;
  /// "overlapped" / "exposed": Megatron --overlap-grad-reduce, DeepSpeed zero_optimization.overlap_comm.
  LaunchValue grad_reduce;
  /// "none": torchtitan training.dtype = "bfloat16" (no fp32 master weights).
  LaunchValue master_weights;
  /// DeepSpeed data_types.grad_accum_dtype ("fp32", "bf16", "fp16").
  LaunchValue grad_accum_dtype;
  /// Megatron-DeepSpeed --ds-sequence-parallel-size (Ulysses): only 1 is modelled.
  LaunchValue ulysses;
};

/// One plan setting an import made, for --print-plan.
struct ImportedSetting {
  std::string key;    // the plan setting: "tp", "recompute"
  std::string value;  // as set: "8", "block:4"
  std::string said;   // what the file said ("--recompute-method block, --recompute-num-layers 4")
  int line = 0;       // 0 = not from a file line (a flag, a default)
};

/// What an import understood: what it set, what it ignored and why values were derived.
struct ImportReport {
  std::string kind;       // "Megatron-LM args", "torchtitan TOML", "DeepSpeed JSON"; "" = nothing imported
  std::string file;
  std::string framework;  // frameworks/ id the file implies ("megatron"); "" = none
  std::string model;      // a shipped model id the file names (torchtitan model.name/flavor), or ""
  LaunchValues values;
  std::vector<ImportedSetting> settings;  // filled by apply_launch, in plan-field order
  /// "--lr 0.00015 (line 12): learning rate": no effect on step time or memory, and why.
  std::vector<std::string> ignored;
  /// Keys Ridgeline does not know ("--foo 3 (line 9)"): not read, listed so
  /// that the user can check that they change neither step time nor memory.
  std::vector<std::string> unknown;
  std::vector<std::string> notes;         // derived values and framework conventions
  /// torchtitan: every dotted key the file gives ("training.local_batch_size"),
  /// so that a suggested edit uses the key names of the file's release.
  std::vector<std::string> keys;
};

/// Reads a file of Megatron-LM arguments: flags and values as a launch
/// script writes them, with backslash continuations, # comments, quotes and
/// bash arrays; the script's own assignments resolve its variables, and an
/// `if [[ "$VAR" == value ]]` over them takes the branch bash would. A
/// relevant argument whose value is a shell variable the script does not
/// assign ($TP), or that sits in a branch whose condition is not evaluated,
/// is an error (Ridgeline does not run the script). Megatron-DeepSpeed's
/// --deepspeed runs the DeepSpeed engine, its --deepspeed_config JSON (beside
/// the script) giving what the arguments do not. Throws SpecError.
ImportReport import_megatron(const std::string& path);
/// Reads a torchtitan train.toml in the layouts it has had: today's
/// [parallelism], the 2024 degrees under [training] and [experimental],
/// [activation_checkpoint] (absent: torchtitan's default), float8 under
/// model.converters, [float8] and [quantize.linear.float8], training.dtype.
/// Throws SpecError.
ImportReport import_torchtitan(const std::string& path);
/// Reads a DeepSpeed ds_config.json (zero_optimization: stage, overlap_comm,
/// offload; batch sizes; bf16 / fp16; data_types.grad_accum_dtype;
/// tensor_parallel.autotp_size; optimizer). Throws SpecError.
ImportReport import_deepspeed(const std::string& path);

/// Takes one Megatron-LM argument ("--tensor-model-parallel-size", "8") into
/// `v`: false when the name is not one Ridgeline reads (`value` is then
/// unused). A value that is a shell variable or not an accepted word is an
/// error in `d` at `loc`. `value` is "" for a switch (--sequence-parallel).
bool take_megatron_arg(LaunchValues& v, std::string_view name, std::string_view value, const support::SourceLoc& loc,
                       support::DiagnosticList& d);
/// Whether the Megatron argument `name` takes a value (false: a switch);
/// nullopt when Ridgeline does not know it.
std::optional<bool> megatron_arg_takes_value(std::string_view name);

/// The Megatron-LM spellings the CLI accepts as alias flags, with their help.
struct MegatronAlias {
  std::string_view name;  // without the dashes
  bool takes_value;
  std::string_view help;
  bool parallel;  // sets the layout (TP, PP, ..., ZeRO): not offered where the command searches it
  std::string_view key;  // the plan field it sets (YAML key): "parallel.tp"
};
std::span<const MegatronAlias> megatron_aliases();

/// Applies the values to the plan: each through the plan field it sets
/// (errors at the value's file:line, worded as the field's), derived values
/// (recompute, VPP, DP, global batch, tokens) computed with the model, and
/// the file's model checked against `m`. Appends to `report` the settings
/// made and the derivations. `overridden`: plan fields (YAML keys) the
/// caller's flags give: the file's values for them are left out, so what is
/// derived from them (DP from the GPU count over TP x PP x CP) uses the
/// flags'. Throws SpecError.
void apply_launch(const LaunchValues& v, PlanSpec& p, const ModelSpec& m, ImportReport& report,
                  const std::vector<std::string>& overridden = {});

/// --print-plan's text: what an import set (each setting with the line that
/// gave it), what it derived and ignored, then the resulting plan.
std::string describe_plan(const PlanSpec& p, const ImportReport& imported);

}  // namespace ridgeline::spec
