#include "ridgeline/spec/launch_config.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <filesystem>
#include <fmt/format.h>
#include <toml++/toml.h>

#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/json_reader.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "ridgeline/spec/yaml_reader.hpp"

namespace ridgeline::spec {

namespace {

// ---- Megatron-LM arguments ----

/// What a Megatron argument sets: a LaunchValues member, or a fixed value
/// into one (switches: --sequence-parallel sets sp to "true"), or a check
/// (`relevant` arguments Ridgeline does not model are errors).
struct MegatronArg {
  std::string_view name;
  bool takes_value;
  LaunchValue LaunchValues::*target;  // nullptr: not modelled (error) or handled below
  std::string_view fixed = {};        // a switch's value ("true", "1", "fp8")
  std::string_view words = {};        // accepted values, comma-separated ("" = any)
  std::string_view help = {};         // non-empty: a CLI alias flag
  std::string_view unsupported = {};  // non-empty: an error, this reason
};

// megatron/training/arguments.py spellings. Switches are store_true.
constinit const MegatronArg kMegatronArgs[] = {
    {"tensor-model-parallel-size", true, &LaunchValues::tp, {}, {}, "Megatron-LM spelling of --tp"},
    {"pipeline-model-parallel-size", true, &LaunchValues::pp, {}, {}, "Megatron-LM spelling of --pp"},
    {"context-parallel-size", true, &LaunchValues::cp, {}, {}, "Megatron-LM spelling of --cp"},
    {"expert-model-parallel-size", true, &LaunchValues::ep, {}, {}, "Megatron-LM spelling of --ep"},
    {"sequence-parallel", false, &LaunchValues::sp, "true", {}, "Megatron-LM spelling of --sp"},
    {"recompute-granularity", true, &LaunchValues::recompute_granularity, {}, "full, selective",
     "Megatron-LM recomputation: selective (--recompute selective) or full (with --recompute-method)"},
    {"recompute-method", true, &LaunchValues::recompute_method, {}, "uniform, block",
     "Megatron-LM full recomputation: uniform (every:K, K = --recompute-num-layers) or block (block:K: the "
     "first K layers of each stage)"},
    {"recompute-num-layers", true, &LaunchValues::recompute_num_layers, {}, {},
     "Megatron-LM: layers per recomputed chunk (uniform) or recomputed layers per stage (block)"},
    {"recompute-activations", false, &LaunchValues::recompute_granularity, "selective"},
    // arguments.py --recompute-modules (nargs='*', default None: Megatron-Core's
    // ["core_attn"]); transformer_config.py recompute_modules lists the words.
    {"recompute-modules", true, &LaunchValues::recompute_modules},
    {"fp8-format", true, &LaunchValues::precision, "fp8", "e4m3, hybrid",
     "Megatron-LM fp8 training (e4m3 or hybrid: --precision fp8)"},
    {"fp8-recipe", true, &LaunchValues::fp8_recipe, {}, "delayed, tensorwise, blockwise, mxfp8"},
    {"fp4-format", true, &LaunchValues::precision, "nvfp4", "e2m1"},
    {"bf16", false, &LaunchValues::precision, "bf16"},
    {"fp16", false, &LaunchValues::precision, "fp16"},
    {"micro-batch-size", true, &LaunchValues::micro_batch, {}, {}, "Megatron-LM spelling of --micro-batch"},
    {"global-batch-size", true, &LaunchValues::global_batch, {}, {},
     "Megatron-LM spelling of --global-batch (sequences)"},
    {"seq-length", true, &LaunchValues::seq_len, {}, {}, "Megatron-LM spelling of --seq"},
    {"use-distributed-optimizer", false, &LaunchValues::zero, "1", {},
     "Megatron-LM's distributed optimizer: --zero 1"},
    {"num-layers-per-virtual-pipeline-stage", true, &LaunchValues::layers_per_virtual_stage, {}, {},
     "Megatron-LM: layers per virtual pipeline stage N (--vpp = layers / PP / N)"},
    {"num-virtual-stages-per-pipeline-rank", true, &LaunchValues::vpp, {}, {}, "Megatron-LM spelling of --vpp"},
    {"decoder-first-pipeline-num-layers", true, &LaunchValues::first_stage_layers, {}, {},
     "Megatron-LM spelling of --first-stage-layers"},
    {"decoder-last-pipeline-num-layers", true, &LaunchValues::last_stage_layers, {}, {},
     "Megatron-LM spelling of --last-stage-layers"},
    {"tp-comm-overlap", false, &LaunchValues::tp_comm_overlap, "true"},
    {"overlap-param-gather", false, &LaunchValues::overlap_param_gather, "true"},
    // megatron/core/model_parallel_config.py:343 overlap_moe_expert_parallel_comm.
    {"overlap-moe-expert-parallel-comm", false, &LaunchValues::ep_comm_overlap, "true", {},
     "Megatron-LM spelling of --ep-comm-overlap"},
    // megatron/training/arguments.py --moe-shared-expert-overlap (store_true);
    // --moe-enable-deepep: the flex dispatcher on DeepEP's kernels.
    {"moe-shared-expert-overlap", false, &LaunchValues::shared_expert_overlap, "true"},
    {"moe-enable-deepep", false, &LaunchValues::moe_dispatcher, "deepep"},
    // Megatron-Core's spelling since --moe-enable-deepep's deprecation
    // (transformer_config.py, d98e8a6, lines 898 and 1743-1751); hybridep and
    // ncclep are not modelled.
    {"moe-flex-dispatcher-backend", true, &LaunchValues::moe_dispatcher, {}, "deepep"},
    // megatron/training/arguments.py --fp8-param-gather: "Keep the compute
    // param in fp8 (do not use any other intermediate dtype)".
    {"fp8-param-gather", false, &LaunchValues::fp8_primary_weights, "true", {},
     "Megatron-LM spelling of --fp8-primary-weights"},
    // megatron/core/model_parallel_config.py:320 cross_entropy_loss_fusion (off by default).
    {"cross-entropy-loss-fusion", false, &LaunchValues::cross_entropy, "fused", {},
     "Megatron-LM spelling of --cross-entropy fused"},
    // megatron/training/arguments.py (Megatron-LM d98e8a6) line 3121:
    // '--overlap-grad-reduce', action='store_true', default=False.
    {"overlap-grad-reduce", false, &LaunchValues::grad_reduce, "overlapped", {},
     "Megatron-LM spelling of --grad-reduce overlapped"},
    // megatron/training/argument_utils.py (d98e8a6) lines 330-333: the query
    // groups reach the TransformerConfig only with --group-query-attention;
    // without it num_query_groups is None, i.e. the attention heads
    // (transformer_config.py lines 1458-1459).
    {"group-query-attention", false, &LaunchValues::group_query_attention, "true"},
    {"num-query-groups", true, &LaunchValues::num_query_groups},
    // transformer_config.py lines 1455-1456: kv_channels = hidden / heads unless given.
    {"kv-channels", true, &LaunchValues::kv_channels},
    // Megatron-DeepSpeed's spelling: --num-key-value-heads (the KV heads, no switch).
    {"num-key-value-heads", true, &LaunchValues::num_query_groups},
    // Megatron-DeepSpeed: --zero-stage is the ZeRO stage of its ds_config,
    // --ds-sequence-parallel-size DeepSpeed-Ulysses (all-to-all sequence parallelism).
    {"zero-stage", true, &LaunchValues::zero},
    {"ds-sequence-parallel-size", true, &LaunchValues::ulysses},
    {"accumulate-allreduce-grads-in-fp32", false, &LaunchValues::main_grads, "fp32"},
    {"grad-reduce-in-bf16", false, &LaunchValues::grad_reduce_in_bf16, "working"},
    {"attention-backend", true, &LaunchValues::attention, {}, "flash, fused, unfused, local, auto"},
    {"use-flash-attn", false, &LaunchValues::use_flash_attn, "true"},
    {"optimizer", true, &LaunchValues::optimizer, {}, "adam, sgd"},
    {"train-iters", true, &LaunchValues::train_iters},
    {"train-samples", true, &LaunchValues::train_samples},
    {"num-layers", true, &LaunchValues::num_layers},
    {"hidden-size", true, &LaunchValues::hidden_size},
    {"num-attention-heads", true, &LaunchValues::num_heads},
    {"ffn-hidden-size", true, &LaunchValues::ffn_hidden_size},
    {"expert-tensor-parallel-size", true, &LaunchValues::expert_tp},
    {"nproc_per_node", true, &LaunchValues::nproc_per_node},
    {"nproc-per-node", true, &LaunchValues::nproc_per_node},
    {"nnodes", true, &LaunchValues::nnodes},
    // Megatron-Core's optimizer CPU offload (HybridDeviceOptimizer): the
    // fraction of the optimizer on the CPU, 1.0 by default; only 1.0 is modelled.
    {"optimizer-cpu-offload", false, &LaunchValues::offload_optimizer, "cpu"},
    {"optimizer-offload-fraction", true, &LaunchValues::offload_fraction},
    // megatron/training/arguments.py: --exp-avg-dtype / --exp-avg-sq-dtype
    // (fp32, fp16, bf16, fp8; default fp32), which OptimizerConfig accepts
    // only with --use-precision-aware-optimizer (optimizer_config.py:
    // "exp_avg_dtype can only be fp32 when not using precision-aware optimizer").
    {"use-precision-aware-optimizer", false, &LaunchValues::precision_aware_optimizer, "true"},
    {"exp-avg-dtype", true, &LaunchValues::exp_avg_dtype, {}, "fp32, fp16, bf16, fp8"},
    {"exp-avg-sq-dtype", true, &LaunchValues::exp_avg_sq_dtype, {}, "fp32, fp16, bf16, fp8"},
    {"cpu-offloading", false, nullptr, {}, {}, {}, "activation CPU offload is not modelled"},
    {"use-torch-fsdp2", false, nullptr, {}, {}, {},
     "Megatron's FSDP2 is not modelled; import the run as --framework fsdp or torchtitan"},
    {"use-custom-fsdp", false, nullptr, {}, {}, {}, "Megatron-FSDP is not modelled; use --zero 3 under megatron"},
    {"use-megatron-fsdp", false, nullptr, {}, {}, {}, "Megatron-FSDP is not modelled; use --zero 3 under megatron"},
    {"pipeline-model-parallel-layout", true, nullptr, {}, {}, {},
     "a custom pipeline layout is not modelled; give --decoder-first-pipeline-num-layers and "
     "--decoder-last-pipeline-num-layers"},
    // megatron/core/transformer/transformer_block.py get_num_layers_to_build
    // (Megatron-Core 0.12+): the embedding (loss) counts as one layer of the
    // first (last) pipeline stage's share: applied as first (last) stage
    // layers in apply_launch.
    {"account-for-embedding-in-pipeline-split", false, &LaunchValues::embedding_in_split, "true"},
    {"account-for-loss-in-pipeline-split", false, &LaunchValues::loss_in_split, "true"},
    // arguments.py lines 3118-3120: on unless turned off; the framework
    // profile's pp_p2p_overlap (interleaved schedules) is what is modelled.
    {"no-overlap-p2p-communication", false, nullptr, {}, {}, {},
     "pipeline p2p without overlap is not modelled (Megatron-LM overlaps it under the interleaved schedule)"},
};

/// Megatron-LM arguments that change neither step time nor memory, by name
/// or by prefix (a name ending in '*'), with the reason.
struct NoEffect {
  std::string_view name;
  std::string_view reason;
};

/// The reason `name` has no effect, from a table of NoEffect entries whose
/// name ending in '*' is a prefix; "" when the table does not list it.
template <size_t N>
std::string_view no_effect_reason(const NoEffect (&table)[N], std::string_view name) {
  for (const auto& n : table)
    if (n.name.ends_with('*') ? name.starts_with(n.name.substr(0, n.name.size() - 1)) : n.name == name)
      return n.reason;
  return {};
}
constinit const NoEffect kMegatronNoEffect[] = {
    {"lr", "learning rate"}, {"lr-*", "learning-rate schedule"}, {"min-lr", "learning rate"},
    {"weight-decay", "optimizer hyper-parameter"}, {"weight-decay-incr-style", "optimizer hyper-parameter"},
    {"start-weight-decay", "optimizer hyper-parameter"}, {"end-weight-decay", "optimizer hyper-parameter"},
    {"adam-*", "optimizer hyper-parameter"}, {"sgd-momentum", "optimizer hyper-parameter"},
    {"clip-grad", "gradient clipping threshold"}, {"loss-scale", "loss scale"},
    {"initial-loss-scale", "loss scale"}, {"min-loss-scale", "loss scale"}, {"loss-scale-window", "loss scale"},
    {"hysteresis", "loss scale"}, {"init-method-std", "initialisation"}, {"seed", "random seed"},
    {"data-path", "data"}, {"train-data-path", "data"}, {"valid-data-path", "data"}, {"test-data-path", "data"},
    {"data-cache-path", "data"}, {"split", "data split"}, {"mock-data", "data"}, {"num-workers", "data loader"},
    {"dataloader-type", "data loader"}, {"tokenizer-*", "tokenizer"}, {"vocab-file", "tokenizer"},
    {"merge-file", "tokenizer"}, {"eod-mask-loss", "loss mask"}, {"reset-position-ids", "data"},
    {"reset-attention-mask", "data"}, {"save", "checkpoint path"}, {"load", "checkpoint path"},
    {"save-interval", "checkpoint interval (the run's checkpoint cost is --checkpoint-interval)"},
    {"ckpt-*", "checkpoint format"}, {"no-save-optim", "checkpoint contents"}, {"no-save-rng", "checkpoint contents"},
    {"no-load-optim", "checkpoint loading"}, {"no-load-rng", "checkpoint loading"}, {"async-save", "checkpointing"},
    {"use-dist-ckpt", "checkpoint format"}, {"dist-ckpt-*", "checkpoint format"}, {"log-*", "logging"},
    {"tensorboard-*", "logging"}, {"wandb-*", "logging"}, {"timing-log-*", "logging"},
    {"eval-iters", "evaluation, between steps"}, {"eval-interval", "evaluation, between steps"},
    {"exit-*", "job length"}, {"distributed-backend", "process-group backend"},
    {"distributed-timeout-minutes", "timeout"}, {"use-mcore-models", "Megatron-Core models, what is modelled"},
    {"max-position-embeddings", "the model's architecture: the model file gives it"},
    {"position-embedding-type", "the model's architecture: the model file gives it"},
    {"rotary-base", "the model's architecture: the model file gives it"},
    {"rotary-percent", "the model's architecture: the model file gives it"},
    {"use-rope-scaling", "the model's architecture: the model file gives it"},
    {"rope-scaling-factor", "the model's architecture: the model file gives it"},
    {"swiglu", "the model's architecture: the model file gives it"},
    {"normalization", "the model's architecture: the model file gives it"},
    {"norm-epsilon", "numerical constant"},
    {"untie-embeddings-and-output-weights", "the model's architecture: the model file gives it"},
    {"disable-bias-linear", "the model's architecture: the model file gives it"},
    {"vocab-size", "the model's architecture: the model file gives it"},
    {"make-vocab-size-divisible-by", "vocabulary padding (the model file's vocabulary is used)"},
    {"attention-dropout", "the model's architecture: the model file gives it"},
    {"hidden-dropout", "the model's architecture: the model file gives it"},
    {"fp8-amax-history-len", "fp8 delayed scaling's history length (the recipe is --fp8-recipe)"},
    {"fp8-amax-compute-algo", "fp8 delayed scaling's amax rule (the recipe is --fp8-recipe)"},
    {"fp8-margin", "fp8 scaling margin"}, {"manual-gc", "Python garbage collection timing"},
    {"manual-gc-interval", "Python garbage collection timing"},
    {"ddp-bucket-size", "gradient bucket size (the last bucket is modelled as 5% of the gradients)"},
    {"check-for-nan-in-loss-and-grad", "a check once per step"}, {"master_addr", "rendezvous address"},
    {"master_port", "rendezvous port"}, {"decoupled-lr", "learning rate"}, {"decoupled-min-lr", "learning rate"},
    {"apply-layernorm-1p", "the norm's weight parameterisation (1 + w)"},
    {"calculate-per-token-loss", "the loss's normalisation"}, {"tiktoken-pattern", "tokenizer"},
    {"no-create-attention-mask-in-dataloader", "data loader"}, {"no-mmap-bin-files", "data loader"},
    {"profile", "profiling of a few steps"}, {"profile-step-*", "profiling of a few steps"},
    {"log-throughput", "logging"}, {"node_rank", "this node's rank"}, {"rdzv_*", "rendezvous"},
    {"rdzv-*", "rendezvous"},
};

/// Why a Megatron argument has no effect on step time or memory; "" when it is not known to have none.
std::string_view megatron_no_effect(std::string_view name) { return no_effect_reason(kMegatronNoEffect, name); }

const MegatronArg* find_megatron(std::string_view name) {
  for (const auto& a : kMegatronArgs)
    if (a.name == name) return &a;
  return nullptr;
}

std::vector<std::string> split_words(std::string_view words) {
  std::vector<std::string> out;
  while (!words.empty()) {
    const auto comma = words.find(',');
    auto w = words.substr(0, comma);
    while (!w.empty() && w.front() == ' ') w.remove_prefix(1);
    out.emplace_back(w);
    if (comma == std::string_view::npos) break;
    words.remove_prefix(comma + 1);
  }
  return out;
}

bool has_shell_variable(std::string_view s) { return s.find('$') != std::string_view::npos; }

/// The argument or key a value came from, for its diagnostic: "--tp" of
/// "--tp 8", "training.seq_len" of "training.seq_len = 8192",
/// "train_batch_size" of "\"train_batch_size\": 8".
std::string field_of(const LaunchValue& v) {
  const std::string& s = v.said;
  if (s.starts_with('"')) return s.substr(1, s.find('"', 1) - 1);
  return s.substr(0, s.find(' '));
}

}  // namespace

std::optional<bool> megatron_arg_takes_value(std::string_view name) {
  if (const MegatronArg* a = find_megatron(name)) return a->takes_value;
  return std::nullopt;
}

std::span<const MegatronAlias> megatron_aliases() {
  static const std::vector<MegatronAlias> all = [] {
    std::vector<MegatronAlias> v;
    for (const auto& a : kMegatronArgs) {
      if (a.help.empty()) continue;
      const auto t = a.target;
      const bool parallel = t == &LaunchValues::tp || t == &LaunchValues::pp || t == &LaunchValues::cp ||
                            t == &LaunchValues::ep || t == &LaunchValues::sp || t == &LaunchValues::zero ||
                            t == &LaunchValues::vpp || t == &LaunchValues::layers_per_virtual_stage ||
                            t == &LaunchValues::first_stage_layers || t == &LaunchValues::last_stage_layers;
      std::string_view key;
      static const std::pair<LaunchValue LaunchValues::*, std::string_view> kKeys[] = {
          {&LaunchValues::tp, "parallel.tp"}, {&LaunchValues::pp, "parallel.pp"}, {&LaunchValues::cp, "parallel.cp"},
          {&LaunchValues::ep, "parallel.ep"}, {&LaunchValues::sp, "parallel.sp"}, {&LaunchValues::zero, "parallel.zero"},
          {&LaunchValues::vpp, "parallel.virtual_stages"},
          {&LaunchValues::layers_per_virtual_stage, "parallel.virtual_stages"},
          {&LaunchValues::first_stage_layers, "parallel.first_stage_layers"},
          {&LaunchValues::last_stage_layers, "parallel.last_stage_layers"},
          {&LaunchValues::recompute_granularity, "recompute"}, {&LaunchValues::recompute_method, "recompute"},
          {&LaunchValues::recompute_num_layers, "recompute"}, {&LaunchValues::recompute_modules, "recompute"},
          {&LaunchValues::precision, "precision"},
          {&LaunchValues::micro_batch, "micro_batch"}, {&LaunchValues::global_batch, "global_batch"},
          {&LaunchValues::seq_len, "seq_len"}, {&LaunchValues::grad_reduce, "parallel.grad_reduce"}};
      for (const auto& [m, k] : kKeys)
        if (m == t) key = k;
      v.push_back({a.name, a.takes_value, a.help, parallel, key});
    }
    return v;
  }();
  return all;
}

bool take_megatron_arg(LaunchValues& v, std::string_view name, std::string_view value, const support::SourceLoc& loc,
                       support::DiagnosticList& d) {
  const MegatronArg* a = find_megatron(name);
  if (!a) return false;
  const std::string field = "--" + std::string(name);
  if (!a->unsupported.empty()) {
    d.error(loc, field, std::string(a->unsupported));
    return true;
  }
  if (a->takes_value && has_shell_variable(value)) {
    d.error(loc, field,
            fmt::format("\"{}\" is a shell variable the script does not assign (from the environment or "
                        "computed): write the value",
                        value));
    return true;
  }
  if (!a->words.empty() && a->takes_value) {
    const auto ok = split_words(a->words);
    if (std::find(ok.begin(), ok.end(), std::string(value)) == ok.end()) {
      d.error(loc, field, fmt::format("expected one of {}, got \"{}\"", a->words, value));
      return true;
    }
  }
  LaunchValue& t = v.*(a->target);
  // --bf16 beside --fp8-format: fp8 GEMMs, bf16 elsewhere; the fp8 word wins.
  if (name == "bf16" || name == "fp16")
    if (t.text == "fp8" || t.text == "nvfp4") return true;
  if (!a->fixed.empty()) t.text = a->fixed;
  else if (name == "attention-backend") {
    // Transformer Engine's backends: flash-attn 2, cuDNN fused attention,
    // the unfused PyTorch path (local: Megatron's own, unfused); auto leaves
    // TE's choice by GPU, the framework's default (apply_launch).
    t.text = value == "auto" ? "auto" : value == "flash" ? "flash2" : value == "fused" ? "cudnn" : "naive";
  } else if (name == "optimizer") {
    t.text = value == "adam" ? "adamw" : "sgd";  // Megatron's adam: decoupled weight decay (AdamW)
  } else {
    t.text = value;
  }
  t.said = a->takes_value ? fmt::format("{} {}", field, value) : field;
  t.loc = loc;
  return true;
}

namespace {

/// A shell-like token: its text (quotes removed) and where it starts.
struct Token {
  std::string text;
  int line = 0, col = 0;
  int logical = 0;  // logical line (backslash continuations joined)
};

std::vector<Token> tokenize_shell(const std::string& text) {
  std::vector<Token> out;
  int line = 1, col = 1, logical = 0;
  size_t i = 0;
  const size_t n = text.size();
  auto advance = [&] {
    if (text[i] == '\n') ++line, col = 1;
    else ++col;
    ++i;
  };
  while (i < n) {
    const char c = text[i];
    if (c == '\\' && i + 1 < n && text[i + 1] == '\n') {  // continuation
      advance();
      advance();
      continue;
    }
    if (c == '\n') {
      ++logical;
      advance();
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      advance();
      continue;
    }
    if (c == '#') {  // a comment to the end of the line
      while (i < n && text[i] != '\n') advance();
      continue;
    }
    Token t{"", line, col, logical};
    while (i < n) {
      const char x = text[i];
      if (x == ' ' || x == '\t' || x == '\r' || x == '\n') break;
      if (x == '\\' && i + 1 < n && text[i + 1] == '\n') break;
      if (x == '"' || x == '\'') {
        advance();
        while (i < n && text[i] != x) {
          if (x == '"' && text[i] == '\\' && i + 1 < n) advance();
          t.text += text[i];
          advance();
        }
        if (i < n) advance();
        continue;
      }
      t.text += x;
      advance();
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

namespace {

bool is_shell_name(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

/// `NAME=value` as a simple shell assignment: the name and the value, or nothing.
std::optional<std::pair<std::string, std::string>> shell_assignment(std::string_view token) {
  const auto eq = token.find('=');
  if (eq == std::string_view::npos || eq == 0 || !is_shell_name(token.substr(0, eq))) return std::nullopt;
  return std::pair{std::string(token.substr(0, eq)), std::string(token.substr(eq + 1))};
}

/// Expands $NAME, ${NAME}, ${NAME:-default} and ${NAME-default} from the
/// script's own assignments; nothing when a name is neither assigned nor
/// defaulted, or the text uses any other expansion ($(...), $((...)), $1).
std::optional<std::string> expand_shell(std::string_view text, const std::map<std::string, std::string>& vars,
                                        int depth = 0) {
  if (depth > 8) return std::nullopt;  // a variable defined through itself
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text[i] != '$') {
      out += text[i++];
      continue;
    }
    std::string name;
    std::optional<std::string> fallback;
    if (i + 1 < text.size() && text[i + 1] == '{') {
      const auto close = text.find('}', i + 2);
      if (close == std::string_view::npos) return std::nullopt;
      std::string_view inner = text.substr(i + 2, close - i - 2);
      if (const auto d = inner.find(":-"); d != std::string_view::npos) {
        fallback = std::string(inner.substr(d + 2));
        inner = inner.substr(0, d);
      } else if (const auto d1 = inner.find('-'); d1 != std::string_view::npos) {
        fallback = std::string(inner.substr(d1 + 1));
        inner = inner.substr(0, d1);
      }
      name = std::string(inner);
      i = close + 1;
    } else {
      size_t j = i + 1;
      while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
      name = std::string(text.substr(i + 1, j - i - 1));
      i = j;
    }
    if (!is_shell_name(name)) return std::nullopt;
    if (const auto it = vars.find(name); it != vars.end()) {
      auto v = expand_shell(it->second, vars, depth + 1);
      if (!v) return std::nullopt;
      out += *v;
    } else if (fallback) {
      auto v = expand_shell(*fallback, vars, depth + 1);
      if (!v) return std::nullopt;
      out += *v;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

}  // namespace

namespace {

ImportReport import_deepspeed_json(const JsonValue& root, const std::string& path);

/// A here-document (`cat <<EOT > $DS_CONFIG`, its lines, `EOT`): data the
/// script writes to a file, not arguments.
struct Heredoc {
  std::string target;  // the word after `>` on the `<<` line, as written; empty if none
  std::string body;    // its lines, each ending in a newline
  int line = 0;        // the `<<` line
  int body_line = 0;   // its first line
  bool expands = true; // an unquoted delimiter: the shell expands $NAME in the body
};

/// The script's here-documents (`<<WORD`, `<<-WORD`, `<<'WORD'`), their
/// bodies and delimiter lines blanked in `text` (its lines kept) so that
/// the arguments' reader does not take their lines for commands.
std::vector<Heredoc> take_heredocs(std::string& text) {
  std::vector<Heredoc> out;
  size_t pos = 0;
  int line = 1;
  auto blank = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i)
      if (text[i] != '\n') text[i] = ' ';
  };
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    const std::string l = text.substr(pos, eol - pos);
    const auto at = l.find("<<");
    // None, in a comment, a here-string (<<<), or a shift ($((1<<3))): a
    // here-document's << follows a blank.
    if (at == std::string::npos || at == 0 || (l[at - 1] != ' ' && l[at - 1] != '\t') ||
        l.substr(0, at).find('#') != std::string::npos || (at + 2 < l.size() && l[at + 2] == '<')) {
      pos = eol + 1;
      ++line;
      continue;
    }
    size_t k = at + 2;
    const bool tabs = k < l.size() && l[k] == '-';
    if (tabs) ++k;
    while (k < l.size() && l[k] == ' ') ++k;
    Heredoc h;
    std::string delim;
    if (k < l.size() && (l[k] == '\'' || l[k] == '"')) {
      const char q = l[k++];
      while (k < l.size() && l[k] != q) delim += l[k++];
      h.expands = false;
    } else {
      while (k < l.size() && (std::isalnum(static_cast<unsigned char>(l[k])) || l[k] == '_')) delim += l[k++];
    }
    // Whether text[q, e) is the delimiter line (<<- strips leading tabs).
    const auto is_end = [&](size_t q, size_t e) {
      std::string_view c(text.data() + q, e - q);
      if (!c.empty() && c.back() == '\r') c.remove_suffix(1);
      if (tabs)
        while (!c.empty() && c.front() == '\t') c.remove_prefix(1);
      return c == delim;
    };
    // The delimiter line must come: without it this is no here-document Ridgeline reads.
    bool closed = false;
    for (size_t q = eol + 1; q < text.size() && !delim.empty() && !closed;) {
      size_t e = text.find('\n', q);
      if (e == std::string::npos) e = text.size();
      closed = is_end(q, e);
      q = e + 1;
    }
    if (delim.empty() || !closed) {
      pos = eol + 1;
      ++line;
      continue;
    }
    for (size_t g = 0; g < l.size(); ++g) {
      if (l[g] != '>' || (g >= at && g < at + 2)) continue;
      size_t w = g + 1;
      if (w < l.size() && l[w] == '>') ++w;  // >> appends
      while (w < l.size() && l[w] == ' ') ++w;
      while (w < l.size() && l[w] != ' ' && l[w] != '\t' && l[w] != ';' && l[w] != '<')
        if (l[w] != '"' && l[w] != '\'') h.target += l[w++];
        else ++w;
      break;
    }
    h.line = line;
    h.body_line = line + 1;
    size_t p = eol + 1;
    int ln = line + 1;
    while (p < text.size()) {
      size_t e = text.find('\n', p);
      if (e == std::string::npos) e = text.size();
      const bool end = is_end(p, e);
      if (!end) h.body += text.substr(p, e - p) + "\n";
      blank(p, e);
      p = e + 1;
      ++ln;
      if (end) break;
    }
    out.push_back(std::move(h));
    pos = p;
    line = ln;
  }
  return out;
}

}  // namespace

ImportReport import_megatron(const std::string& path) {
  std::string text = read_text_file(path);
  const std::vector<Heredoc> heredocs = take_heredocs(text);
  ImportReport r;
  r.kind = "Megatron-LM args";
  r.file = path;
  r.framework = "megatron";
  support::DiagnosticList d;
  const auto all = tokenize_shell(text);
  // The script's simple assignments (NAME=value first on its line, or after
  // `export`), in order: a later one replaces an earlier one, as the shell
  // runs them (a script that reassigns between launches is read as its last).
  std::map<std::string, std::string> vars;
  for (size_t i = 0; i < all.size(); ++i) {
    const bool first = i == 0 || all[i - 1].logical != all[i].logical ||
                       (all[i - 1].text == "export" && (i < 2 || all[i - 2].logical != all[i].logical));
    if (!first) continue;
    if (auto a = shell_assignment(all[i].text); a && a->second != "(") vars[a->first] = a->second;
  }
  // The flags: on the launch line, in arrays, and in argument strings kept
  // in a variable (GPT_ARGS="--num-layers 32 ..." expanded as $GPT_ARGS).
  // Conditionals: `if [[ "$VAR" == value ]]` (or [ A = B ], !=) over the
  // script's own assignments is evaluated and only the branch taken is
  // read; a branch under any other condition is read with `uncertain` set
  // to its `if` line, and an argument there that Ridgeline reads is an error.
  struct Branch {
    int cond;  // 1 true, 0 false, -1 not evaluated
    bool in_else;
    int line;
  };
  std::vector<Branch> branches;
  auto evaluate = [&](size_t from) {  // the tokens after `if` / `elif` on its logical line
    std::vector<std::string> w;
    for (size_t j = from; j < all.size() && all[j].logical == all[from - 1].logical; ++j) {
      std::string x = all[j].text;
      while (!x.empty() && x.back() == ';') x.pop_back();
      if (x == "then" || x.empty()) continue;
      w.push_back(x);
    }
    const bool dbl = w.size() == 5 && w[0] == "[[" && w[4] == "]]";
    const bool sgl = w.size() == 5 && w[0] == "[" && w[4] == "]";
    if (!(dbl || sgl)) return -1;
    const auto lhs = expand_shell(w[1], vars), rhs = expand_shell(w[3], vars);
    if (!lhs || !rhs) return -1;
    if (w[2] == "==" || w[2] == "=" || w[2] == "!=") return ((*lhs == *rhs) == (w[2] != "!=")) ? 1 : 0;
    // test(1)'s integer comparisons: -eq -ne -lt -le -gt -ge over whole numbers.
    const auto whole = [](const std::string& s) -> std::optional<long long> {
      long long n = 0;
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
      if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
      return n;
    };
    const auto a = whole(*lhs), b = whole(*rhs);
    if (!a || !b) return -1;
    if (w[2] == "-eq") return *a == *b ? 1 : 0;
    if (w[2] == "-ne") return *a != *b ? 1 : 0;
    if (w[2] == "-lt") return *a < *b ? 1 : 0;
    if (w[2] == "-le") return *a <= *b ? 1 : 0;
    if (w[2] == "-gt") return *a > *b ? 1 : 0;
    if (w[2] == "-ge") return *a >= *b ? 1 : 0;
    return -1;
  };
  std::vector<Token> tokens;
  std::vector<int> uncertain;  // per token: the `if` line of an unevaluated branch, or 0
  for (size_t i = 0; i < all.size(); ++i) {
    const Token& t = all[i];
    const bool first = i == 0 || all[i - 1].logical != t.logical;
    if (first && (t.text == "if" || t.text == "elif")) {
      const int c = evaluate(i + 1);
      if (t.text == "if") branches.push_back({c, false, t.line});
      else if (!branches.empty()) {
        // elif: taken only if no earlier branch was (an unevaluated one leaves it unevaluated).
        Branch& b = branches.back();
        b.cond = b.cond == 1 ? 0 : (b.cond == -1 || c == -1) ? -1 : c;
        b.line = t.line;
      }
      while (i + 1 < all.size() && all[i + 1].logical == t.logical) ++i;
      continue;
    }
    if (first && t.text == "else" && !branches.empty()) {
      Branch& b = branches.back();
      b.cond = b.cond == -1 ? -1 : 1 - b.cond;
      continue;
    }
    if (first && t.text == "fi" && !branches.empty()) {
      branches.pop_back();
      continue;
    }
    int unsure = 0;
    bool skip = false;
    for (const Branch& b : branches) {
      if (b.cond == 0) skip = true;
      if (b.cond == -1) unsure = b.line;
    }
    if (skip) continue;
    // A quoted array element of several words ("--fp8-format hybrid")
    // splits when the array is expanded unquoted (${ARGS[@]}), as is an
    // argument string kept in a variable (GPT_ARGS="--num-layers 32 ...").
    auto a = shell_assignment(t.text);
    if (a && a->second.starts_with('(')) a->second.erase(0, 1);  // ARGS=(--bf16 ...): a one-line array
    const std::string_view inner_text = a && a->second.find("--") != std::string::npos ? std::string_view(a->second)
                                        : t.text.starts_with("--") && t.text.find_first_of(" \t") != std::string::npos
                                            ? std::string_view(t.text)
                                            : std::string_view();
    if (!inner_text.empty()) {
      for (Token inner : tokenize_shell(std::string(inner_text))) {
        inner.line = t.line, inner.col = t.col, inner.logical = t.logical;
        if (inner.text.ends_with(')') && inner.text.find('(') == std::string::npos) inner.text.pop_back();
        if (inner.text.empty()) continue;
        tokens.push_back(std::move(inner));
        uncertain.push_back(unsure);
      }
      continue;
    }
    // The closing parenthesis of a one-line array (ARGS=(--tp 2 --bf16)).
    Token u = t;
    if (u.text.size() > 1 && u.text.ends_with(')') && u.text.find('(') == std::string::npos) u.text.pop_back();
    tokens.push_back(std::move(u));
    uncertain.push_back(unsure);
  }
  LaunchValue ds_config;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    if (!t.text.starts_with("--") || t.text.size() == 2) continue;  // torchrun, pretrain_gpt.py, ARGS=(, )
    std::string name = t.text.substr(2);
    std::optional<std::string> value;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    const support::SourceLoc loc{path, t.line, t.col};
    const auto known = megatron_arg_takes_value(name);
    if (known && uncertain[i] > 0) {
      d.error(loc, "--" + name,
              fmt::format("is inside the `if` of line {}, whose condition Ridgeline does not evaluate (it reads "
                          "[[ \"$VAR\" == value ]] over the script's assignments): write the branch the run takes",
                          uncertain[i]));
      if (*known && i + 1 < tokens.size() && tokens[i + 1].logical == t.logical) ++i;
      continue;
    }
    // A value follows on the same logical line unless it is the next flag;
    // an unknown argument takes one when the next word is not a flag.
    auto next_is_value = [&] {
      if (i + 1 >= tokens.size()) return false;
      const Token& nx = tokens[i + 1];
      return nx.logical == t.logical && !nx.text.starts_with("--") && nx.text != ")" &&
             !nx.text.starts_with("${") && !nx.text.ends_with("=(");
    };
    if (!value && (known ? *known : next_is_value()) && i + 1 < tokens.size() &&
        (!known || tokens[i + 1].logical == t.logical)) {
      value = tokens[++i].text;
    }
    if (known && *known && !value) {
      d.error(loc, "--" + name, "expected a value after it");
      continue;
    }
    // --recompute-modules takes every word up to the next flag (nargs='*').
    if (name == "recompute-modules")
      while (next_is_value()) *value += "+" + tokens[++i].text;
    if (known && *known && value && has_shell_variable(*value)) {
      if (auto x = expand_shell(*value, vars)) {
        r.notes.push_back(fmt::format("--{} {} = {} (the script's assignment)", name, *value, *x));
        value = *x;
      }
    }
    // Megatron-DeepSpeed: --deepspeed runs the model on the DeepSpeed
    // engine, whose settings are its --deepspeed_config JSON.
    if (name == "deepspeed" && !value) {
      r.framework = "deepspeed";
      r.notes.push_back(fmt::format("--deepspeed (line {}): Megatron-DeepSpeed on the DeepSpeed engine", t.line));
      continue;
    }
    if (name == "deepspeed_config" || name == "deepspeed-config") {
      // A path in a variable: the script's own assignment (DS_CONFIG=...).
      std::optional<std::string> json = value;
      if (json && has_shell_variable(*json)) json = expand_shell(*json, vars);
      if (!json) {
        d.error(loc, "--" + name, "expected the path of the ds_config JSON");
        continue;
      }
      ds_config = {*json, "--" + name + " " + *value, loc};
      continue;
    }
    if (take_megatron_arg(r.values, name, value.value_or(""), loc, d)) continue;
    const std::string said = fmt::format("--{}{} (line {})", name, value ? " " + *value : "", t.line);
    if (const auto why = megatron_no_effect(name); !why.empty()) r.ignored.push_back(fmt::format("{}: {}", said, why));
    else r.unknown.push_back(said);
  }
  d.throw_if_errors();
  // The ds_config, beside the script or from the working directory: what
  // the arguments do not say (the ZeRO stage, overlap_comm, offload, the
  // accumulation dtype) comes from it; Megatron-DeepSpeed's own arguments
  // (--zero-stage, the batch sizes, --bf16) come first.
  // What the ds_config gives and the arguments do not, with its ignored and
  // unread keys under `from`.
  auto merge = [&](const ImportReport& ds, const std::string& from) {
    LaunchValue LaunchValues::*const kFromJson[] = {
        &LaunchValues::zero, &LaunchValues::grad_reduce, &LaunchValues::offload_optimizer,
        &LaunchValues::offload_params, &LaunchValues::grad_accum_dtype, &LaunchValues::precision,
        &LaunchValues::micro_batch, &LaunchValues::global_batch, &LaunchValues::grad_accum, &LaunchValues::optimizer};
    for (auto m : kFromJson)
      if (!(r.values.*m).given() && (ds.values.*m).given()) r.values.*m = ds.values.*m;
    for (const auto& x : ds.ignored) r.ignored.push_back(from + ": " + x);
    for (const auto& x : ds.unknown) r.unknown.push_back(from + ": " + x);
  };
  // A ds_config the script writes itself with a here-document to the path
  // it passes (cat <<EOT > $DS_CONFIG): its body, with the script's
  // assignments expanded as the shell does under an unquoted delimiter.
  const Heredoc* written = nullptr;
  for (const Heredoc& h : heredocs)
    if (!h.target.empty() && expand_shell(h.target, vars) == ds_config.text) written = &h;
  if (ds_config.given() && written) {
    std::string json(static_cast<size_t>(written->body_line - 1), '\n');  // the script's line numbers
    int ln = written->body_line;
    for (size_t at = 0; at < written->body.size(); ++ln) {
      const size_t e = written->body.find('\n', at);
      const std::string l = written->body.substr(at, e - at);
      at = e + 1;
      const auto x = written->expands && has_shell_variable(l) ? expand_shell(l, vars) : std::optional<std::string>(l);
      if (!x)
        throw support::SpecError(support::SourceLoc{path, ln, static_cast<int>(l.find('$')) + 1}, field_of(ds_config),
                                 fmt::format("the ds_config written by the here-document of line {} uses an expansion "
                                             "Ridgeline does not read ($NAME, ${{NAME}}, ${{NAME:-default}} over the "
                                             "script's assignments): write the value",
                                             written->line));
      json += *x + "\n";
    }
    merge(import_deepspeed_json(parse_json(json, path), path),
          fmt::format("ds_config (here-document, line {})", written->line));
    r.notes.push_back(fmt::format("{} (line {}): the DeepSpeed settings the arguments do not give, from the "
                                  "here-document of line {} that writes {}",
                                  ds_config.said, ds_config.loc.line, written->line, ds_config.text));
  } else if (ds_config.given()) {
    namespace fs = std::filesystem;
    fs::path json = fs::path(path).parent_path() / ds_config.text;
    if (!fs::exists(json)) json = ds_config.text;
    if (!fs::exists(json))
      throw support::SpecError(ds_config.loc, field_of(ds_config),
                               fmt::format("cannot read \"{}\" beside the script or from here; import it with "
                                           "--from-deepspeed and give the script's layout as flags",
                                           ds_config.text));
    merge(import_deepspeed(json.string()), json.filename().string());
    r.notes.push_back(fmt::format("{} (line {}): the DeepSpeed settings the arguments do not give", ds_config.said,
                                  ds_config.loc.line));
  }
  return r;
}

// ---- torchtitan train.toml ----

namespace {

support::SourceLoc toml_loc(const std::string& path, const toml::node& n) {
  const auto& s = n.source();
  return {path, static_cast<int>(s.begin.line), static_cast<int>(s.begin.column)};
}

/// The TOML value as the plan reads it: integers and booleans as words, strings as they are.
std::optional<std::string> toml_text(const toml::node& n) {
  if (auto v = n.as_integer()) return std::to_string(v->get());
  if (auto v = n.as_boolean()) return v->get() ? "true" : "false";
  if (auto v = n.as_string()) return v->get();
  if (auto v = n.as_floating_point()) return fmt::format("{:g}", v->get());
  return std::nullopt;
}

}  // namespace

namespace {

/// torchtitan keys that change neither step time nor memory, with the
/// reason (torchtitan/config/job_config.py; the 2024 config_manager.py); a
/// name ending in '*' is a prefix (a whole section).
std::string_view torchtitan_no_effect(std::string_view key) {
  static constexpr NoEffect kKeys[] = {
      {"job.*", "job naming and output folder"}, {"profiling.*", "profiling"}, {"metrics.*", "logging"},
      {"checkpoint.*", "checkpointing (the run's checkpoint cost is --checkpoint-interval)"},
      {"lr_scheduler.*", "learning-rate schedule"}, {"validation.*", "evaluation, between steps"},
      {"comm.init_timeout_seconds", "timeout"}, {"comm.train_timeout_seconds", "timeout"},
      {"comm.trace_buf_size", "flight-recorder buffer"}, {"comm.save_traces_folder", "logging"},
      {"fault_tolerance.*", "fault tolerance"}, {"memory_estimation.*", "a dry run"},
      {"optimizer.lr", "learning rate"}, {"optimizer.eps", "optimizer hyper-parameter"},
      {"optimizer.weight_decay", "optimizer hyper-parameter"}, {"optimizer.beta1", "optimizer hyper-parameter"},
      {"optimizer.beta2", "optimizer hyper-parameter"},
      {"optimizer.implementation", "the optimizer's kernels (fused or foreach: one pass over the state)"},
      {"training.dataset", "data"}, {"training.dataset_path", "data"}, {"training.max_norm", "gradient clipping threshold"},
      {"training.seed", "random seed"}, {"training.deterministic", "determinism flags"},
      {"training.warmup_steps", "learning-rate schedule"}, {"training.gc_freq", "Python garbage collection timing"},
      {"training.gc_debug", "Python garbage collection timing"},
      {"training.mixed_precision_reduce", "float32, torchtitan's only reduction dtype"},
      {"model.tokenizer_path", "tokenizer"}, {"model.hf_assets_path", "tokenizer and weights path"},
      {"model.print_after_conversion", "logging"},
      {"model.norm_type", "the model's normalisation: the model file gives it, the fusion level its kernels"}, {"compile.components", "the compiled parts (compile.enable decides)"},
      {"activation_checkpoint.selective_ac_option", "read with activation_checkpoint.mode"},
      {"parallelism.pipeline_parallel_schedule", "read with the pipeline degree"},
      {"experimental.pipeline_parallel_schedule", "read with the pipeline degree"},
      {"float8.precompute_float8_dynamic_scale_for_fsdp", "one scale computation per step"},
      {"quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp", "one scale computation per step"},
      {"float8.filter_fqns", "layers kept in bf16 (the output layer)"},
      {"quantize.linear.float8.filter_fqns", "layers kept in bf16 (the output layer)"},
  };
  return no_effect_reason(kKeys, key);
}

/// Every leaf of a TOML table with its dotted key, in file order.
void flatten_toml(const toml::table& t, const std::string& prefix,
                  std::vector<std::pair<std::string, const toml::node*>>& out) {
  for (const auto& [k, node] : t) {
    const std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (const toml::table* sub = node.as_table()) flatten_toml(*sub, key, out);
    else out.emplace_back(key, &node);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.second->source().begin.line < b.second->source().begin.line;
  });
}

}  // namespace

ImportReport import_torchtitan(const std::string& path) {
  const std::string text = read_text_file(path);
  ImportReport r;
  r.kind = "torchtitan TOML";
  r.file = path;
  r.framework = "torchtitan";
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    const auto& s = e.source();
    throw support::SpecError({path, static_cast<int>(s.begin.line), static_cast<int>(s.begin.column)}, "",
                             fmt::format("malformed TOML: {}", e.description()));
  }
  support::DiagnosticList d;
  LaunchValues& v = r.values;
  // Dotted key -> the value it sets. torchtitan moved its keys between
  // releases: the 2024 config_manager.py (torchtitan 1a303b3) kept the
  // degrees under [training] (data_parallel_degree -1: FSDP over the ranks
  // left, or DDP with training.data_parallel_type = "ddp") and the pipeline
  // under [experimental]; later ones under [training], then [parallelism].
  struct Key {
    std::string_view key;
    LaunchValue LaunchValues::*target;
  };
  static const Key kKeys[] = {
      {"parallelism.tensor_parallel_degree", &LaunchValues::tp},
      {"training.tensor_parallel_degree", &LaunchValues::tp},
      {"parallelism.pipeline_parallel_degree", &LaunchValues::pp},
      {"experimental.pipeline_parallel_degree", &LaunchValues::pp},
      {"training.pipeline_parallel_degree", &LaunchValues::pp},
      {"parallelism.context_parallel_degree", &LaunchValues::cp},
      {"experimental.context_parallel_degree", &LaunchValues::cp},
      {"training.context_parallel_degree", &LaunchValues::cp},
      {"parallelism.expert_parallel_degree", &LaunchValues::ep},
      {"parallelism.data_parallel_shard_degree", &LaunchValues::dp_shard},
      {"training.data_parallel_shard_degree", &LaunchValues::dp_shard},
      {"training.data_parallel_degree", &LaunchValues::dp_shard},  // ddp: replicate, below
      {"parallelism.data_parallel_replicate_degree", &LaunchValues::dp_replicate},
      {"training.data_parallel_replicate_degree", &LaunchValues::dp_replicate},
      {"parallelism.enable_async_tensor_parallel", &LaunchValues::tp_comm_overlap},
      {"experimental.enable_async_tensor_parallel", &LaunchValues::tp_comm_overlap},
      {"training.local_batch_size", &LaunchValues::micro_batch},
      {"training.batch_size", &LaunchValues::micro_batch},  // before torchtitan's local_batch_size
      {"training.global_batch_size", &LaunchValues::global_batch},
      {"training.seq_len", &LaunchValues::seq_len},
      {"training.steps", &LaunchValues::train_iters},
      {"training.mixed_precision_param", &LaunchValues::precision},
      {"activation_checkpoint.mode", &LaunchValues::recompute},
      {"optimizer.name", &LaunchValues::optimizer},
      // torchtitan/components/optimizer.py build_optimizers (before the
      // 2026 dataclass configs, 9810191~1 line 277): early_step_in_backward
      // builds OptimizersInBackwardContainer, each parameter stepped and its
      // gradient zeroed in a post-accumulate-grad hook: optimizer.in_backward.
      {"optimizer.early_step_in_backward", &LaunchValues::optimizer_in_backward},
      {"compile.enable", &LaunchValues::fusion},
      {"training.compile", &LaunchValues::fusion},  // before [compile]
  };
  std::vector<std::pair<std::string, const toml::node*>> leaves;
  flatten_toml(root, "", leaves);
  for (const auto& leaf : leaves) r.keys.push_back(leaf.first);
  auto find = [&](std::string_view key) -> const toml::node* {
    for (const auto& [k, n] : leaves)
      if (k == key) return n;
    return nullptr;
  };
  std::string model_name, model_flavor;
  int model_line = 0;
  bool ddp = false;
  std::vector<LaunchValue> scaling;  // the 2024 [float8] scaling types
  LaunchValue reshard;               // parallelism.fsdp_reshard_after_forward
  for (const auto& [dotted, np] : leaves) {
    const toml::node& node = *np;
    const support::SourceLoc loc = toml_loc(path, node);
    const auto val = toml_text(node);
    std::string shown = val ? (node.is_string() ? "\"" + *val + "\"" : *val) : "[...]";
    if (const toml::array* arr = node.as_array()) {
      shown = "[";
      for (size_t i = 0; i < arr->size(); ++i) {
        const auto w = toml_text((*arr)[i]);
        shown += (i ? ", " : "") + ((*arr)[i].is_string() ? "\"" + w.value_or("") + "\"" : w.value_or("?"));
      }
      shown += "]";
    }
    const std::string said = fmt::format("{} = {}", dotted, shown);
    const std::string at = fmt::format("{} (line {})", said, loc.line);
    if ((dotted == "model.name" || dotted == "model.flavor") && val) {
      (dotted == "model.name" ? model_name : model_flavor) = *val;
      model_line = loc.line;
      continue;
    }
    if (dotted == "model.converters") {
      // torchtitan/protocols/model_converter.py registry: "float8" (2025),
      // "quantize.linear.float8" and "quantize.linear.mx" (2026,
      // components/quantization/float8.py line 238, mx.py line 171).
      if (const toml::array* a = node.as_array()) {
        for (const auto& c : *a) {
          const auto w = c.value<std::string>();
          if (w == "float8" || w == "quantize.linear.float8") {
            v.precision = {"fp8", said, loc};
          } else if (w == "mx" || w == "quantize.linear.mx") {
            v.precision = {"fp8", said, loc};
            v.fp8_recipe = {"mxfp8", said, loc};
          } else if (w) {
            d.error(toml_loc(path, c), dotted, fmt::format("converter \"{}\" is not modelled", *w));
          }
        }
      }
      continue;
    }
    if (dotted == "parallelism.fsdp_reshard_after_forward") {
      reshard = {val.value_or(shown), at, loc};  // read with the pipeline degree, below
      continue;
    }
    if (dotted == "training.enable_cpu_offload") {
      // FSDP2's CPUOffloadPolicy (torchtitan/distributed/fsdp.py lines
      // 231-232): parameters, gradients and optimizer state on the host,
      // the optimizer stepping there: the plan's optimizer and parameter offload.
      const auto on = node.value<bool>();
      if (!on) d.error(loc, dotted, fmt::format("expected true or false, got {}", shown));
      else if (*on) v.offload_optimizer = v.offload_params = {"cpu", said, loc};
      else r.ignored.push_back(at + ": torchtitan's default, no CPU offload");
      continue;
    }
    if ((dotted == "float8.recipe_name" || dotted == "quantize.linear.float8.recipe_name") && val) {
      // job_config.py (torchtitan 238fa99) line 738: "tensorwise", "rowwise"
      // or "rowwise_with_gw_hp" (torchao Float8LinearRecipeName, config.py
      // lines 141-176), each a plan recipe of the same name.
      if (*val == "tensorwise" || *val == "rowwise" || *val == "rowwise_with_gw_hp") v.fp8_recipe = {*val, said, loc};
      else d.error(loc, dotted, fmt::format("fp8 recipe \"{}\" is not one of torchao's: tensorwise, rowwise, "
                                            "rowwise_with_gw_hp", *val));
      continue;
    }
    // The 2024 [float8] section (config_manager.py lines 466-510):
    // enable_float8_linear swaps in Float8Linear; each scaling type dynamic
    // (tensorwise) or delayed.
    if (dotted == "float8.enable_float8_linear" && val) {
      if (*val == "true") v.precision = {"fp8", said, loc};
      else r.ignored.push_back(at + ": float8 off");
      continue;
    }
    if (dotted.starts_with("float8.scaling_type_") && val) {
      if (*val != "dynamic" && *val != "delayed") d.error(loc, dotted, fmt::format("expected \"dynamic\" or \"delayed\", got \"{}\"", *val));
      scaling.push_back({*val, said, loc});
      continue;
    }
    if (dotted == "float8.enable_fsdp_float8_all_gather" || dotted == "quantize.linear.float8.enable_fsdp_float8_all_gather") {
      // FSDP2 all-gathers the fp8-cast weights: the gather's bytes halve,
      // the stored weights stay 16/32-bit; the plan cannot say so.
      if (val == "true") {
        const toml::node* on = find("model.converters");
        const toml::node* old = find("float8.enable_float8_linear");
        const bool float8 = (on && on->as_array() && !on->as_array()->empty()) || (old && toml_text(*old) == "true");
        if (float8) d.error(loc, dotted, "fp8 FSDP all-gathers of 16-bit weights are not modelled; set it false");
        else r.ignored.push_back(at + ": no float8 converter");
      } else {
        r.ignored.push_back(at + ": off");
      }
      continue;
    }
    if (dotted == "training.data_parallel_type" && val) {
      if (*val == "ddp") ddp = true;
      else if (*val != "fsdp") d.error(loc, dotted, fmt::format("expected \"fsdp\" or \"ddp\", got \"{}\"", *val));
      r.ignored.push_back(at + ": read with training.data_parallel_degree");
      continue;
    }
    if (dotted == "training.dtype" && val) {
      // job_config.py lines 275-280: dtype = "bfloat16" puts parameters,
      // gradients and optimizer state in bf16 "without an extra copy of fp32 weights".
      if (*val == "bfloat16") {
        v.precision = v.precision.text == "fp8" ? v.precision : LaunchValue{"bf16", said, loc};
        v.master_weights = {"none", said, loc};
        v.main_grads = {"working", said, loc};
      } else if (*val != "float32") {
        d.error(loc, dotted, fmt::format("expected \"bfloat16\" or \"float32\", got \"{}\"", *val));
      } else {
        r.ignored.push_back(at + ": torchtitan's default, fp32 parameters under mixed precision");
      }
      continue;
    }
    if (dotted == "parallelism.pipeline_parallel_schedule" || dotted == "experimental.pipeline_parallel_schedule") {
      if (val && *val != "1F1B" && *val != "GPipe") {
        d.error(loc, dotted, fmt::format("schedule \"{}\" is not modelled; 1F1B is (and GPipe, the same bubble)", *val));
        continue;
      }
    }
    const Key* hit = nullptr;
    for (const auto& key : kKeys)
      if (key.key == dotted) hit = &key;
    if (!hit || !val) {
      if (const auto why = torchtitan_no_effect(dotted); !why.empty()) r.ignored.push_back(fmt::format("{}: {}", at, why));
      else r.unknown.push_back(at);
      continue;
    }
    LaunchValue& t = v.*(hit->target);
    std::string text = *val;
    if (hit->target == &LaunchValues::precision) {
      if (text == "bfloat16") text = "bf16";
      else if (text == "float16") text = "fp16";
      else if (text == "float32") text = "fp32";
      else {
        d.error(loc, dotted, fmt::format("expected \"bfloat16\", \"float16\" or \"float32\", got \"{}\"", text));
        continue;
      }
      if (v.precision.text == "fp8" || v.master_weights.given()) continue;  // fp8 GEMMs, bf16 elsewhere; training.dtype
    }
    if (hit->target == &LaunchValues::fusion) text = text == "true" ? "compiled" : "eager";
    if (hit->target == &LaunchValues::optimizer) {
      std::string lower;
      for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      text = lower;
    }
    if (hit->target == &LaunchValues::recompute && text == "selective") {
      // selective_ac_option: "op" (the op policy) or K (every K-th layer),
      // "2" when not given (job_config.py line 656; config_manager.py line 457).
      const toml::node* opt = find("activation_checkpoint.selective_ac_option");
      const std::string o = opt ? toml_text(*opt).value_or("2") : "2";
      text = o == "op" ? "selective_op" : "selective_layer:" + o;
    }
    t = {text, said, loc};
  }
  if (ddp && v.dp_shard.given()) {
    v.dp_replicate = v.dp_shard;
    v.dp_shard = {};
  }
  // FSDP2's reshard_after_forward (torchtitan/distributed/fsdp.py,
  // get_fsdp_reshard_after_forward_policy): "always" reshards, "never" keeps
  // the parameters gathered from the forward to the backward, "default"
  // does not reshard under PP and does without it - what the profile models
  // (pp_params). An explicit policy that agrees with the default is read as
  // it; one that does not is not modelled.
  if (reshard.given()) {
    const bool pp = v.pp.given() && std::atoll(v.pp.text.c_str()) > 1;
    const std::string& w = reshard.text;
    if (w != "always" && w != "never" && w != "default")
      d.error(reshard.loc, "parallelism.fsdp_reshard_after_forward",
              fmt::format("expected \"default\", \"always\" or \"never\", got \"{}\"", w));
    else if ((w == "always" && pp) || (w == "never" && !pp))
      d.error(reshard.loc, "parallelism.fsdp_reshard_after_forward",
              fmt::format("\"{}\" {} is not modelled; \"default\" (the parameters {} after the forward) is", w,
                          pp ? "with pipeline parallelism" : "without pipeline parallelism",
                          pp ? "kept gathered" : "resharded"));
    else
      r.ignored.push_back(reshard.said + (w == "default" ? ": torchtitan's default"
                                                          : ": what \"default\" does with this pipeline degree"));
  }
  // 2024 float8 scaling: all dynamic is tensorwise, all delayed Transformer
  // Engine-style delayed scaling; a mix is not modelled.
  if (v.precision.text == "fp8" && !scaling.empty()) {
    bool delayed = false, dynamic = false;
    for (const auto& s : scaling) (s.text == "delayed" ? delayed : dynamic) = true;
    const LaunchValue& first = scaling.front();
    if (delayed && dynamic) d.error(first.loc, field_of(first), "a mix of delayed and dynamic scaling is not modelled");
    else v.fp8_recipe = {delayed ? "delayed" : "tensorwise", first.said, first.loc};
  }
  // torchao's Float8LinearConfig without a recipe: dynamic tensorwise scaling.
  if (v.precision.text == "fp8" && !v.fp8_recipe.given())
    v.fp8_recipe = {"tensorwise", v.precision.said + " (no recipe_name: torchao's tensorwise)", v.precision.loc};
  // No activation_checkpoint.mode: torchtitan's default, "selective" every
  // 2nd layer (job_config.py lines 651-656, config_manager.py lines 449-457).
  if (!v.recompute.given())
    v.recompute = {"selective_layer:2", "(no activation_checkpoint.mode: torchtitan's default, selective every 2nd layer)",
                   {path, 0, 0}};
  if (!model_name.empty()) {
    // torchtitan's model names: "llama3" flavor "8B" -> models/llama3_8b.yaml.
    std::string flavor;
    for (char c : model_flavor) flavor += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::string id = model_name + "_" + flavor;
    if (std::filesystem::exists(std::filesystem::path(data_dir()) / "models" / (id + ".yaml"))) {
      r.model = id;
      r.notes.push_back(fmt::format("model.name = \"{}\", flavor = \"{}\" (line {}) is models/{}.yaml", model_name,
                                    model_flavor, model_line, id));
    } else {
      r.notes.push_back(fmt::format("model.name = \"{}\", flavor = \"{}\" (line {}) is not a shipped model; "
                                    "the model is --model's",
                                    model_name, model_flavor, model_line));
    }
  }
  d.throw_if_errors();
  return r;
}

// ---- DeepSpeed ds_config.json ----

namespace {

/// zero_optimization.offload_optimizer / offload_param (ZeRO-Offload /
/// ZeRO-Infinity): device cpu maps to the plan's offload; nvme (ZeRO-
/// Infinity's NVMe tier) is not modelled, nor a partial offload (ZeRO-
/// Offload++'s "ratio" below 1). A function of its own: GCC 12 under
/// AddressSanitizer + UBSan stops with an internal error on this block
/// inlined in import_deepspeed's loop of lambdas.
void deepspeed_offload(const std::string& which, const JsonValue& block, LaunchValues& v, ImportReport& r,
                       support::DiagnosticList& d) {
  const std::string key = "zero_optimization." + which;
  const JsonValue* dev = block.find("device");
  if (dev && dev->text == "cpu") {
    const std::string said = fmt::format("\"{}.device\": \"{}\"", key, dev->text);
    (which == "offload_optimizer" ? v.offload_optimizer : v.offload_params) = {"cpu", said, dev->loc};
  } else if (dev && dev->text != "none") {
    d.error(block.loc, key, fmt::format("offload to {} is not modelled", dev->text));
  }
  for (const auto& o : block.members) {
    if (o.key == "device") continue;
    if (o.key == "ratio") {
      std::string e;
      const auto ratio = parse_real_number(o.value.text, 0.0, 1.0, e);
      if (!ratio)
        d.error(o.value.loc, key + ".ratio", e);
      else if (*ratio != 1.0)
        d.error(o.value.loc, key + ".ratio",
                fmt::format("a partial offload (ratio {}) is not modelled; only the whole optimizer on the CPU is",
                            o.value.text));
      continue;
    }
    if (o.key == "pin_memory" || o.key == "buffer_count" || o.key == "buffer_size" || o.key == "max_in_cpu" ||
        o.key == "nvme_path" || o.key == "pipeline_read" || o.key == "pipeline_write" || o.key == "fast_init")
      r.ignored.push_back(fmt::format("{}.{} (line {}): host buffer setting", key, o.key, o.value.loc.line));
    else
      r.unknown.push_back(fmt::format("{}.{} (line {})", key, o.key, o.value.loc.line));
  }
}

/// DeepSpeed keys (deepspeed/runtime/constants.py, zero/config.py) that
/// change neither step time nor memory, with the reason; "" when not known.
std::string_view deepspeed_no_effect(std::string_view key) {
  static constexpr NoEffect kKeys[] = {
      {"steps_per_print", "logging"}, {"wall_clock_breakdown", "logging"}, {"dump_state", "logging"},
      {"tensorboard", "logging"}, {"wandb", "logging"}, {"csv_monitor", "logging"}, {"comet", "logging"},
      {"comms_logger", "logging"}, {"flops_profiler", "profiling"}, {"gradient_clipping", "gradient clipping threshold"},
      {"scheduler", "learning-rate schedule"}, {"optimizer.params", "optimizer hyper-parameters"},
      {"zero_allow_untested_optimizer", "a permission"}, {"prescale_gradients", "gradient scaling order"},
      {"gradient_predivide_factor", "gradient scaling"}, {"checkpoint", "checkpointing"},
      {"fp16.loss_scale", "loss scale"}, {"fp16.initial_scale_power", "loss scale"},
      {"fp16.loss_scale_window", "loss scale"}, {"fp16.hysteresis", "loss scale"},
      {"fp16.consecutive_hysteresis", "loss scale"}, {"fp16.min_loss_scale", "loss scale"},
      {"fp16.auto_cast", "autocast of the inputs"}, {"bf16.immediate_grad_update", "update order"},
      {"zero_optimization.reduce_bucket_size", "bucket size (the last bucket is modelled as 5% of the gradients)"},
      {"zero_optimization.allgather_bucket_size", "bucket size"},
      {"zero_optimization.allgather_partitions", "all-gather form (the same bytes)"},
      {"zero_optimization.reduce_scatter", "reduction form (the same bytes)"},
      {"zero_optimization.contiguous_gradients", "gradient buffer layout"},
      {"zero_optimization.round_robin_gradients", "gradient partition order"},
      {"zero_optimization.sub_group_size", "optimizer step grouping"},
      {"zero_optimization.stage3_max_live_parameters", "ZeRO-3 gathering limit"},
      {"zero_optimization.stage3_max_reuse_distance", "ZeRO-3 gathering limit"},
      {"zero_optimization.stage3_param_persistence_threshold", "small parameters kept whole (under 1e5 elements)"},
      {"zero_optimization.stage3_gather_16bit_weights_on_model_save", "checkpoint saving"},
      {"zero_optimization.stage3_gather_fp16_weights_on_model_save", "checkpoint saving"},
      {"zero_optimization.stage3_prefetch_bucket_size", "prefetch bucket (the framework profile's 5e7 elements)"},
      {"zero_optimization.load_from_fp32_weights", "checkpoint loading"},
      {"zero_optimization.gather_16bit_weights_on_model_save", "checkpoint saving"},
      {"zero_optimization.elastic_checkpoint", "checkpointing"},
      {"zero_optimization.ignore_unused_parameters", "a check"},
  };
  return no_effect_reason(kKeys, key);  // no DeepSpeed key ends in '*'
}

/// The key in the ignored list with its reason, or in the unknown list.
void deepspeed_unread(ImportReport& r, const std::string& key, int line) {
  const auto why = deepspeed_no_effect(key);
  if (!why.empty()) r.ignored.push_back(fmt::format("{} (line {}): {}", key, line, why));
  else r.unknown.push_back(fmt::format("{} (line {})", key, line));
}

}  // namespace

namespace {

ImportReport import_deepspeed_json(const JsonValue& root, const std::string& path);

}  // namespace

ImportReport import_deepspeed(const std::string& path) { return import_deepspeed_json(load_json_file(path), path); }

namespace {

/// The DeepSpeed settings of a parsed ds_config (a file, or the heredoc a
/// Megatron-DeepSpeed script writes it with); `path` names it in the report.
ImportReport import_deepspeed_json(const JsonValue& root, const std::string& path) {
  ImportReport r;
  r.kind = "DeepSpeed JSON";
  r.file = path;
  r.framework = "deepspeed";
  support::DiagnosticList d;
  if (root.kind != JsonValue::Kind::kObject)
    throw support::SpecError(root.loc, "", fmt::format("expected an object of DeepSpeed settings, got {}",
                                                       describe(root)));
  LaunchValues& v = r.values;
  auto said = [](const std::string& key, const JsonValue& x) {
    return fmt::format("\"{}\": {}", key, x.kind == JsonValue::Kind::kString ? "\"" + x.text + "\"" : x.text);
  };
  auto scalar = [](const JsonValue& x) {
    return x.kind == JsonValue::Kind::kNumber || x.kind == JsonValue::Kind::kBool ||
           x.kind == JsonValue::Kind::kString;
  };
  for (const auto& m : root.members) {
    const JsonValue& x = m.value;
    auto take = [&](LaunchValue LaunchValues::*t, const std::string& key, const JsonValue& val) {
      if (!scalar(val)) {
        d.error(val.loc, key, fmt::format("expected a number, got {}", describe(val)));
        return;
      }
      // "auto" is filled in by the HF Trainer integration from its own
      // arguments: kept as "auto", resolved from the flags by apply_launch.
      v.*t = {val.text, said(key, val), val.loc};
    };
    if (m.key == "train_micro_batch_size_per_gpu") take(&LaunchValues::micro_batch, m.key, x);
    else if (m.key == "train_batch_size") take(&LaunchValues::global_batch, m.key, x);
    else if (m.key == "gradient_accumulation_steps") take(&LaunchValues::grad_accum, m.key, x);
    else if ((m.key == "bf16" || m.key == "fp16") && x.kind == JsonValue::Kind::kObject) {
      const JsonValue* en = x.find("enabled");
      if (en && en->kind == JsonValue::Kind::kBool && en->text == "true")
        v.precision = {m.key, fmt::format("\"{}\": {{\"enabled\": true}}", m.key), en->loc};
      // "auto": the Hugging Face Trainer's --bf16 / --fp16 decide
      // (transformers/integrations/deepspeed.py trainer_config_process).
      if (en && en->text == "auto" && !v.precision.given())
        v.precision = {"auto", fmt::format("\"{}\": {{\"enabled\": \"auto\"}}", m.key), en->loc};
      for (const auto& sub : x.members) {
        if (sub.key == "enabled") continue;
        // DeepSpeed's bf16 master weights, gradients and optimizer states
        // (runtime/config.py bf16_master_weights_and_grads,
        // bf16_optimizer_states): no fp32 copy, bf16 states.
        if (m.key == "bf16" && (sub.key == "bf16_master_weights_and_grads" || sub.key == "bf16_optimizer_states") &&
            sub.value.kind == JsonValue::Kind::kBool) {
          if (sub.value.text == "true") {
            const JsonValue* other = x.find(sub.key == "bf16_optimizer_states" ? "bf16_master_weights_and_grads"
                                                                               : "bf16_optimizer_states");
            if (!other || other->text != "true")
              d.error(sub.value.loc, "bf16." + sub.key,
                      "only bf16 master weights and gradients together with bf16 optimizer states are modelled");
            else if (sub.key == "bf16_master_weights_and_grads") {
              v.master_weights = {"none", said("bf16." + sub.key, sub.value), sub.value.loc};
              v.main_grads = {"working", said("bf16." + sub.key, sub.value), sub.value.loc};
            }
          } else {
            r.ignored.push_back(fmt::format("bf16.{} (line {}): off", sub.key, sub.value.loc.line));
          }
          continue;
        }
        deepspeed_unread(r, m.key + "." + sub.key, sub.value.loc.line);
      }
    } else if (m.key == "torch_autocast" && x.kind == JsonValue::Kind::kObject) {
      const JsonValue* en = x.find("enabled");
      if (en && en->text == "true")
        d.error(en->loc, "torch_autocast.enabled", "torch.autocast inside the DeepSpeed engine is not modelled");
      else
        r.ignored.push_back(fmt::format("torch_autocast (line {}): off", x.loc.line));
    } else if (m.key == "zero_optimization" && x.kind == JsonValue::Kind::kObject) {
      for (const auto& sub : x.members) {
        const std::string key = "zero_optimization." + sub.key;
        if (sub.key == "stage") take(&LaunchValues::zero, key, sub.value);
        else if (sub.key == "offload_optimizer" || sub.key == "offload_param") {
          deepspeed_offload(sub.key, sub.value, v, r, d);
        } else if (sub.key == "overlap_comm" && sub.value.kind == JsonValue::Kind::kBool) {
          // zero/config.py line 138: overlap_comm, the gradient reduction on
          // its own stream beside the backward.
          v.grad_reduce = {sub.value.text == "true" ? "overlapped" : "exposed", said(key, sub.value), sub.value.loc};
        } else {
          deepspeed_unread(r, key, sub.value.loc.line);
        }
      }
    } else if (m.key == "data_types" && x.kind == JsonValue::Kind::kObject) {
      for (const auto& sub : x.members) {
        const std::string key = "data_types." + sub.key;
        // runtime/constants.py line 485: grad_accum_dtype = ["bf16"|"fp16"|"fp32"].
        if (sub.key == "grad_accum_dtype" && sub.value.kind == JsonValue::Kind::kString &&
            (sub.value.text == "fp32" || sub.value.text == "bf16" || sub.value.text == "fp16"))
          v.grad_accum_dtype = {sub.value.text, said(key, sub.value), sub.value.loc};
        else if (sub.key == "grad_accum_dtype")
          d.error(sub.value.loc, key, fmt::format("expected \"fp32\", \"bf16\" or \"fp16\", got {}", sub.value.text));
        else
          deepspeed_unread(r, key, sub.value.loc.line);
      }
    } else if (m.key == "tensor_parallel" && x.kind == JsonValue::Kind::kObject) {
      for (const auto& sub : x.members) {
        const std::string key = "tensor_parallel." + sub.key;
        // deepspeed/runtime/tensor_parallel/config.py line 45 autotp_size
        // (0: off), the AutoTP training degree (line 137: tp_size).
        if (sub.key == "autotp_size") {
          if (sub.value.text != "0") take(&LaunchValues::tp, key, sub.value);
        } else {
          deepspeed_unread(r, key, sub.value.loc.line);
        }
      }
    } else if (m.key == "optimizer" && x.kind == JsonValue::Kind::kObject) {
      for (const auto& sub : x.members)
        if (sub.key != "type") deepspeed_unread(r, "optimizer." + sub.key, sub.value.loc.line);
      const JsonValue* type = x.find("type");
      if (type) {
        std::string t;
        for (char c : type->text) t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (t == "adam" || t == "adamw" || t == "sgd") v.optimizer = {t, said("optimizer.type", *type), type->loc};
        else d.error(type->loc, "optimizer.type", fmt::format("optimizer \"{}\" is not modelled; Adam, AdamW and SGD are",
                                                              type->text));
      }
    } else {
      deepspeed_unread(r, m.key, x.loc.line);
    }
  }
  d.throw_if_errors();
  return r;
}

}  // namespace

// ---- Applying ----

namespace {

struct Applier {
  PlanSpec& p;
  const ModelSpec& m;
  ImportReport& r;
  support::DiagnosticList& d;
  const std::vector<std::string>& overridden;

  void set(const std::string& key, const std::string& value, const LaunchValue& from, const std::string& said = "") {
    const PlanField* f = find_plan_field(key);
    if (!f) return;
    if (std::find(overridden.begin(), overridden.end(), f->key) != overridden.end()) {
      r.notes.push_back(fmt::format("{}: the flag's value, not the file's {} ({})", key, value,
                                    said.empty() ? from.said : said));
      return;
    }
    if (auto e = set_field(*f, p, value); !e.empty()) {
      d.error(from.loc, field_of(from), e);
      return;
    }
    if (key == "sp") p.sp_given = true;
    r.settings.push_back({key, field_text(*f, p), said.empty() ? from.said : said, from.loc.line});
  }
  void direct(const std::string& key, const LaunchValue& v) {
    if (v.given() && v.text != "auto") set(key, v.text, v);
  }
  bool flagged(const std::string& key) const {
    return std::find(overridden.begin(), overridden.end(), key) != overridden.end();
  }
  std::optional<long long> whole(const LaunchValue& v, long long lo = 1, long long hi = 1LL << 40) {
    if (!v.given() || v.text == "auto") return std::nullopt;
    std::string e;
    auto x = parse_whole_number(v.text, lo, hi, e);
    if (!x) d.error(v.loc, field_of(v), e);
    return x;
  }
};

}  // namespace

void apply_launch(const LaunchValues& v, PlanSpec& p, const ModelSpec& m, ImportReport& r,
                  const std::vector<std::string>& overridden) {
  support::DiagnosticList d;
  Applier a{p, m, r, d, overridden};
  // DeepSpeed's "auto" sizes come from the Hugging Face Trainer's own
  // arguments (transformers/integrations/deepspeed.py trainer_config_process
  // fills them): the flags must say them, or, for the global batch, the
  // micro-batch and accumulation steps that make it. Never a silent 1.
  if (v.precision.text == "auto" && !a.flagged("precision"))
    d.error(v.precision.loc, field_of(v.precision),
            "\"auto\" is the Hugging Face Trainer's --bf16 / --fp16: give --precision");
  if (v.micro_batch.text == "auto" && !a.flagged("micro_batch"))
    d.error(v.micro_batch.loc, field_of(v.micro_batch),
            "\"auto\" is the Hugging Face Trainer's per_device_train_batch_size: give --micro-batch");
  if (v.global_batch.text == "auto" && !a.flagged("global_batch") &&
      !(v.grad_accum.given() && v.grad_accum.text != "auto"))
    d.error(v.global_batch.loc, field_of(v.global_batch),
            "\"auto\" is the Hugging Face Trainer's batch (per device x accumulation x GPUs): give --global-batch, "
            "or gradient_accumulation_steps");
  // The model the file describes must be the plan's.
  std::string matched;  // the model arguments that agree, for a note
  auto check_model = [&](const LaunchValue& x, int have, std::string_view what) {
    auto n = a.whole(x);
    if (n && *n != have)
      d.error(x.loc, field_of(x),
              fmt::format("{} {}, but the model ({}) has {}; pass the run's model with --model", *n, what, m.name,
                          have));
    else if (n)
      matched += fmt::format("{}{} (line {})", matched.empty() ? "" : ", ", x.said, x.loc.line);
  };
  check_model(v.num_layers, m.layers, "layers");
  check_model(v.hidden_size, m.hidden, "hidden size");
  check_model(v.num_heads, m.heads, "attention heads");
  check_model(v.ffn_hidden_size, m.ffn_hidden, "FFN size");
  check_model(v.kv_channels, m.head_dim, "channels per attention head");
  // The KV heads Megatron builds: --num-query-groups (argparse default 1)
  // under --group-query-attention, else one per attention head
  // (argument_utils.py lines 330-333, transformer_config.py lines 1458-1459).
  const bool kv_heads_given = v.num_query_groups.said.starts_with("--num-key-value-heads");
  if (!m.is_mla() && (v.num_query_groups.given() || v.group_query_attention.given())) {
    if (v.group_query_attention.given() || kv_heads_given) {
      const LaunchValue& x = v.num_query_groups.given() ? v.num_query_groups : v.group_query_attention;
      const auto groups = v.num_query_groups.given() ? a.whole(x) : std::optional<long long>(1);
      if (groups && *groups != m.kv_heads)
        d.error(x.loc, field_of(x),
                fmt::format("{} query groups (KV heads){}, but the model ({}) has {}; pass the run's model with "
                            "--model",
                            *groups, v.num_query_groups.given() ? "" : " (Megatron-LM's default without "
                            "--num-query-groups)", m.name, m.kv_heads));
    } else if (m.kv_heads != m.heads) {
      d.error(v.num_query_groups.loc, field_of(v.num_query_groups),
              fmt::format("has no effect without --group-query-attention: Megatron-LM then builds one KV head per "
                          "attention head ({}), but the model ({}) has {} KV heads; add --group-query-attention",
                          m.heads, m.name, m.kv_heads));
    }
  } else if (!m.is_mla() && v.num_heads.given() && m.kv_heads != m.heads) {
    d.error(v.num_heads.loc, field_of(v.num_heads),
            fmt::format("without --group-query-attention Megatron-LM builds one KV head per attention head, but the "
                        "model ({}) has {} KV heads for {} heads; add --group-query-attention --num-query-groups {}",
                        m.name, m.kv_heads, m.heads, m.kv_heads));
  }
  if ((v.group_query_attention.given() || kv_heads_given) && !d.has_errors()) {
    const LaunchValue& x = v.num_query_groups.given() ? v.num_query_groups : v.group_query_attention;
    std::string what = v.group_query_attention.said;
    if (v.num_query_groups.given()) what += (what.empty() ? "" : " ") + v.num_query_groups.said;
    matched += fmt::format("{}{} (line {})", matched.empty() ? "" : ", ", what, x.loc.line);
  }
  if (!matched.empty() && !d.has_errors()) r.notes.push_back(fmt::format("the model ({}) matches {}", m.name, matched));
  // DeepSpeed-Ulysses splits the sequence by all-to-alls around attention,
  // a communication pattern the plan does not have (its CP is ring attention).
  if (auto u = a.whole(v.ulysses); u && *u > 1)
    d.error(v.ulysses.loc, field_of(v.ulysses),
            fmt::format("DeepSpeed-Ulysses sequence parallelism ({} ranks) is not modelled; the plan's context "
                        "parallelism (--cp) is ring attention",
                        *u));
  if (!r.framework.empty() && find_framework(r.framework)) {
    LaunchValue fw{r.framework, "", {r.file, 0, 0}};
    a.set("framework", r.framework, fw, "(" + r.kind + ")");
  }
  // Megatron-LM trains in fp32 unless --bf16, --fp16 or --fp8-format is given.
  if (r.kind == "Megatron-LM args" && !v.precision.given()) {
    LaunchValue fp32{"fp32", "", {r.file, 0, 0}};
    a.set("precision", "fp32", fp32, "(no --bf16, --fp16 or --fp8-format: Megatron-LM's fp32)");
  }
  // Megatron-LM runs without sequence parallelism unless told: an args
  // file without --sequence-parallel keeps it off whatever the framework's
  // default for hand-written plans.
  if (r.kind == "Megatron-LM args" && !v.sp.given()) {
    p.sp_given = true;
    p.parallel.sp = false;
  }
  a.direct("tp", v.tp);
  a.direct("pp", v.pp);
  a.direct("cp", v.cp);
  a.direct("ep", v.ep);
  a.direct("sp", v.sp);
  a.direct("zero", v.zero);
  a.direct("tp_comm_overlap", v.tp_comm_overlap);
  a.direct("overlap_param_gather", v.overlap_param_gather);
  a.direct("fp8_primary_weights", v.fp8_primary_weights);
  a.direct("cross_entropy", v.cross_entropy);
  // The DP gradient reduction: Megatron-LM overlaps it only with
  // --overlap-grad-reduce (arguments.py line 3121, default False); DeepSpeed
  // with zero_optimization.overlap_comm, whose default is on for stage 3
  // only (deepspeed/runtime/zero/config.py lines 383-385), and ZeRO stage 0
  // all-reduces after the backward (runtime/engine.py allreduce_gradients).
  if (v.grad_reduce.given()) {
    a.direct("grad_reduce", v.grad_reduce);
  } else if (r.kind == "Megatron-LM args" && r.framework == "megatron") {
    LaunchValue x{"exposed", "", {r.file, 0, 0}};
    a.set("grad_reduce", "exposed", x, "(no --overlap-grad-reduce: Megatron-LM reduces after the backward)");
  } else if (r.framework == "deepspeed" && p.parallel.zero < 3) {
    LaunchValue x{"exposed", "", {r.file, 0, 0}};
    a.set("grad_reduce", "exposed", x,
          fmt::format("(no zero_optimization.overlap_comm: DeepSpeed's default is off below stage 3)"));
  }
  a.direct("master_weights", v.master_weights);
  a.direct("ep_comm_overlap", v.ep_comm_overlap);
  a.direct("shared_expert_overlap", v.shared_expert_overlap);
  a.direct("moe_dispatcher", v.moe_dispatcher);
  a.direct("micro_batch", v.micro_batch);
  a.direct("seq", v.seq_len);
  a.direct("precision", v.precision);
  a.direct("fp8_recipe", v.fp8_recipe);
  // Attention: an explicit --attention-backend decides, whichever of it and
  // --use-flash-attn comes first. --use-flash-attn alone, or
  // --attention-backend auto, is FlashAttention as Transformer Engine picks
  // it: get_attention_backend prefers cuDNN fused attention on compute
  // capability >= 9.0, flash-attn 2 before (the framework's attention by
  // generation, applied once the GPU is known).
  if (v.attention.given() && v.attention.text != "auto") {
    a.direct("attention", v.attention);
  } else if (v.attention.given() || v.use_flash_attn.given()) {
    const LaunchValue& x = v.attention.given() ? v.attention : v.use_flash_attn;
    std::string said = x.said;
    if (v.attention.given() && v.use_flash_attn.given()) said = v.use_flash_attn.said + ", " + v.attention.said;
    if (std::find(overridden.begin(), overridden.end(), "attention") == overridden.end()) {
      const FrameworkSpec& f = framework(p.framework);
      std::string by = to_string(f.attention);
      for (const auto& g : f.attention_by_generation)
        by += fmt::format(", {} on {}", to_string(g.kind), name(g.generation));
      r.settings.push_back({"attention", "by GPU", said, x.loc.line});
      r.notes.push_back(fmt::format("attention by GPU: {}'s default, {} ({})", f.id, by, said));
    }
  }
  a.direct("fusion", v.fusion);
  a.direct("optimizer", v.optimizer);
  // Megatron's main gradients: fp32 with --bf16 unless --grad-reduce-in-bf16
  // (arguments.py: grad_reduce_in_bf16 turns accumulate_allreduce_grads_in_fp32
  // off, whatever else was given); unstated, the framework's default.
  if (v.grad_reduce_in_bf16.given()) a.direct("main_grads", v.grad_reduce_in_bf16);
  else a.direct("main_grads", v.main_grads);
  // DeepSpeed's optimizer wrapper by dtypes and stage
  // (deepspeed/runtime/engine.py _do_optimizer_sanity_check, DeepSpeed
  // edaa722, lines 1978-2021): grad_accum_dtype defaults to the model's
  // dtype (get_data_types, lines 1485-1496); bf16 with fp32 accumulation at
  // ZeRO stage 1 is BF16_Optimizer (fp32 gradients); at stage 0 a mix of
  // dtypes raises NotImplementedError; bf16 at stage 0 under pipeline
  // parallelism is BF16_Optimizer too, which partitions the fp32 master
  // weights and optimizer state over the DP ranks (bf16_optimizer.py lines
  // 141-170): ZeRO-1 in effect.
  if (r.framework == "deepspeed") {
    const bool low = v.precision.text == "bf16" || v.precision.text == "fp16";
    if (v.grad_accum_dtype.given()) {
      const std::string& g = v.grad_accum_dtype.text;
      const bool fp32 = g == "fp32";
      if (low && fp32 && p.parallel.zero == 0)
        d.error(v.grad_accum_dtype.loc, field_of(v.grad_accum_dtype),
                fmt::format("fp32 accumulation of {} gradients at ZeRO stage 0: DeepSpeed raises "
                            "NotImplementedError (unsupported mix of model and gradient accumulation dtypes)",
                            v.precision.text));
      else if (low && !fp32 && g != v.precision.text)
        d.error(v.grad_accum_dtype.loc, field_of(v.grad_accum_dtype),
                fmt::format("\"{}\" accumulation of {} gradients is not modelled", g, v.precision.text));
      else if (low)
        a.set("main_grads", fp32 ? "fp32" : "working", v.grad_accum_dtype);
    }
    if (v.precision.text == "bf16" && p.parallel.zero == 0 && p.parallel.pp > 1 && !a.flagged("parallel.zero")) {
      LaunchValue x{"1", v.precision.said, v.precision.loc};
      a.set("zero", "1", x, v.precision.said + " at stage 0 with PP > 1 (BF16_Optimizer partitions: ZeRO-1)");
    }
  }
  a.direct("recompute", v.recompute);
  a.direct("first_stage_layers", v.first_stage_layers);
  if (v.offload_params.given() && !v.offload_optimizer.given() && !a.flagged("offload.optimizer"))
    d.error(v.offload_params.loc, field_of(v.offload_params),
            "parameter offload without optimizer offload (zero_optimization.offload_optimizer) is not modelled");
  a.direct("offload_optimizer", v.offload_optimizer);
  a.direct("offload_params", v.offload_params);
  a.direct("optimizer_in_backward", v.optimizer_in_backward);
  // Megatron-Core's --optimizer-offload-fraction: the share of the
  // optimizer's parameters updated on the CPU; only the whole is modelled.
  // The Adam moments' dtype: one for both (optimizer.state_dtype).
  if (v.exp_avg_dtype.given() || v.exp_avg_sq_dtype.given()) {
    const LaunchValue& m1 = v.exp_avg_dtype;
    const LaunchValue& m2 = v.exp_avg_sq_dtype;
    const std::string first = m1.given() ? m1.text : "fp32", second = m2.given() ? m2.text : "fp32";
    const LaunchValue& at = m2.given() ? m2 : m1;
    const char* flag = m2.given() ? "--exp-avg-sq-dtype" : "--exp-avg-dtype";
    if (first == "fp8" || second == "fp8")
      d.error(at.loc, flag, "fp8 Adam moments are not modelled (optimizer.state_dtype: fp32, bf16 or fp16)");
    else if (first != second)
      d.error(at.loc, flag,
              fmt::format("the first moment in {} and the second in {} are not modelled: optimizer.state_dtype "
                          "takes one dtype for both", first, second));
    else if (first != "fp32" && !v.precision_aware_optimizer.given())
      d.error(at.loc, flag,
              fmt::format("{} Adam moments need --use-precision-aware-optimizer (Megatron-Core's OptimizerConfig: "
                          "\"exp_avg_dtype can only be fp32 when not using precision-aware optimizer\")", first));
    else
      a.direct("optimizer_state_dtype", LaunchValue{first, m1.given() ? m1.said : m2.said, at.loc});
  }
  if (v.offload_fraction.given()) {
    std::string e;
    const auto f = parse_real_number(v.offload_fraction.text, 0.0, 1.0, e);
    if (!f) d.error(v.offload_fraction.loc, "--optimizer-offload-fraction", e);
    else if (*f != 1.0 && v.offload_optimizer.given())
      d.error(v.offload_fraction.loc, "--optimizer-offload-fraction",
              fmt::format("a fraction of {} is not modelled; only 1.0 (the whole optimizer on the CPU) is",
                          v.offload_fraction.text));
    else if (!v.offload_optimizer.given())
      r.notes.push_back(fmt::format("{} has no effect without --optimizer-cpu-offload", v.offload_fraction.said));
  }
  a.direct("last_stage_layers", v.last_stage_layers);
  if (v.expert_tp.given() && v.expert_tp.text != std::to_string(p.parallel.tp))
    d.error(v.expert_tp.loc, "--expert-tensor-parallel-size",
            fmt::format("expert tensor parallelism {} apart from TP {} is not modelled (experts are split by TP)",
                        v.expert_tp.text, p.parallel.tp));
  // Megatron's recomputation: granularity, method and layer count together.
  if (v.recompute_granularity.given()) {
    const LaunchValue& g = v.recompute_granularity;
    if (g.text == "selective" && v.recompute_modules.given()) {
      const LaunchValue& m = v.recompute_modules;
      if (parse_recompute_modules(m.text))
        a.set("recompute", "selective:" + m.text, g, g.said + ", " + m.said);
      else
        d.error(m.loc, "--recompute-modules",
                fmt::format("expected words of core_attn, layernorm, mla_up_proj, mlp, shared_experts, moe_act (moe: "
                            "recomputing the whole MoE layer, its all-to-alls included, is not modelled), got \"{}\"",
                            m.text));
    } else if (g.text == "selective") {
      a.set("recompute", "selective", g);
    } else if (!v.recompute_method.given()) {
      d.error(g.loc, "--recompute-granularity",
              "full needs --recompute-method uniform or block (Megatron-LM refuses it without one)");
    } else {
      const auto k = v.recompute_num_layers.given() ? a.whole(v.recompute_num_layers) : std::optional<long long>(1);
      if (k) {
        const std::string word = v.recompute_method.text == "uniform" ? (*k == 1 ? "full" : fmt::format("every:{}", *k))
                                                                      : fmt::format("block:{}", *k);
        std::string said = g.said + ", " + v.recompute_method.said;
        if (v.recompute_num_layers.given()) said += ", " + v.recompute_num_layers.said;
        a.set("recompute", word, g, said);
      }
    }
  } else if (v.recompute_method.given() || v.recompute_num_layers.given()) {
    const LaunchValue& x = v.recompute_method.given() ? v.recompute_method : v.recompute_num_layers;
    d.error(x.loc, field_of(x), "needs --recompute-granularity full");
  }
  if (v.recompute_modules.given() && v.recompute_granularity.text != "selective")
    d.error(v.recompute_modules.loc, "--recompute-modules",
            "applies under --recompute-granularity selective only (Megatron-Core reads recompute_modules there)");
  // Virtual stages: given, or layers per virtual stage N: VPP = layers / PP / N.
  a.direct("vpp", v.vpp);
  if (auto n = a.whole(v.layers_per_virtual_stage)) {
    const int pp = std::max(1, p.parallel.pp);
    const long long per_stage = m.layers / pp;
    if (m.layers % pp != 0 || per_stage % *n != 0) {
      d.error(v.layers_per_virtual_stage.loc, "--num-layers-per-virtual-pipeline-stage",
              fmt::format("{} layers on PP {} do not split into virtual stages of {} layers", m.layers, pp, *n));
    } else {
      const std::string vpp = std::to_string(per_stage / *n);
      a.set("vpp", vpp, v.layers_per_virtual_stage);
      r.notes.push_back(fmt::format("vpp {} = {} layers / PP {} / {} layers per virtual stage", vpp, m.layers, pp, *n));
    }
  }
  // The embedding and the loss counted as layers of the pipeline split
  // (Megatron-Core transformer_block.py get_num_layers_to_build and
  // arguments.py's checks): the model's layers plus one for each split
  // evenly over PP x VP chunks, the first (last) stage giving up one layer
  // to the embedding (loss); the same as uneven first and last stages, and
  // exclusive of them.
  if (v.embedding_in_split.given() || v.loss_in_split.given()) {
    const LaunchValue& x = v.embedding_in_split.given() ? v.embedding_in_split : v.loss_in_split;
    const int e = v.embedding_in_split.given() ? 1 : 0, l = v.loss_in_split.given() ? 1 : 0;
    const int pp = std::max(1, p.parallel.pp), vpp = std::max(1, p.parallel.virtual_stages);
    const long long total = static_cast<long long>(m.layers) + e + l;
    if (pp < 2) {
      d.error(x.loc, field_of(x), "needs pipeline parallelism (--pipeline-model-parallel-size > 1)");
    } else if (v.first_stage_layers.given() || v.last_stage_layers.given()) {
      d.error(x.loc, field_of(x),
              "cannot be combined with --decoder-first-pipeline-num-layers or --decoder-last-pipeline-num-layers");
    } else if (total % (static_cast<long long>(pp) * vpp) != 0) {
      d.error(x.loc, field_of(x),
              fmt::format("{} layers{}{} do not split evenly over {}", m.layers, e ? " + the embedding" : "",
                          l ? " + the loss" : "",
                          vpp > 1 ? fmt::format("PP {} x {} virtual stages", pp, vpp) : fmt::format("PP {}", pp)));
    } else {
      const long long per_stage = total / pp;
      if (e) a.set("first_stage_layers", std::to_string(per_stage - 1), v.embedding_in_split);
      if (l) a.set("last_stage_layers", std::to_string(per_stage - 1), v.loss_in_split);
      r.notes.push_back(fmt::format("{} layers{}{} over PP {}: {} a stage{}{}", m.layers, e ? " + the embedding" : "",
                                    l ? " + the loss" : "", pp, per_stage, e ? ", the first holding one fewer" : "",
                                    l ? ", the last one fewer" : ""));
    }
  }
  // Data parallelism: torchrun's GPUs over TP x PP x CP (Megatron's
  // initialize_model_parallel), or torchtitan's shard x replicate degrees.
  const auto nproc = a.whole(v.nproc_per_node);
  const auto nnodes = a.whole(v.nnodes);
  if (nproc && a.flagged("parallel.dp")) {
    r.notes.push_back(fmt::format("dp: --dp's {}, not the script's {} GPUs ({}{})", p.parallel.dp,
                                  *nproc * nnodes.value_or(1), v.nproc_per_node.said,
                                  nnodes ? ", " + v.nnodes.said : ""));
  } else if (nproc) {
    const long long gpus = *nproc * nnodes.value_or(1);
    const long long model_par = static_cast<long long>(p.parallel.tp) * p.parallel.pp * p.parallel.cp;
    if (gpus % model_par != 0) {
      d.error(v.nproc_per_node.loc, "--nproc_per_node",
              fmt::format("{} GPUs are not a multiple of TP x PP x CP = {}", gpus, model_par));
    } else {
      std::string said = v.nproc_per_node.said + (nnodes ? ", " + v.nnodes.said : "");
      a.set("dp", std::to_string(gpus / model_par), v.nproc_per_node, said);
      r.notes.push_back(fmt::format("dp {} = {} GPUs / (TP {} x PP {} x CP {})", gpus / model_par, gpus,
                                    p.parallel.tp, p.parallel.pp, p.parallel.cp));
    }
  }
  std::optional<long long> shard;
  if (v.dp_shard.given()) shard = a.whole(v.dp_shard, -1, 1 << 20);
  const auto replicate = a.whole(v.dp_replicate);
  if (shard || replicate) {
    // FSDP2 shards over data_parallel_shard_degree ranks (-1: the GPUs left).
    if (shard && *shard > 1) {
      a.set("zero", "3", v.dp_shard, v.dp_shard.said + " (FSDP2: ZeRO-3)");
    }
    if (shard && *shard == -1 && !a.flagged("parallel.dp") && !nproc) {
      d.error(v.dp_shard.loc, field_of(v.dp_shard),
              "-1 takes the GPUs the other degrees leave: give --dp N (GPUs / (TP x PP x CP))");
    } else if (shard && *shard == -1) {
      r.notes.push_back("parallelism.data_parallel_shard_degree = -1 (all GPUs left): the DP degree is --dp's; "
                        "FSDP2 shards over it (ZeRO-3 unless DP is 1)");
      if (p.parallel.zero < 3) a.set("zero", "3", v.dp_shard, v.dp_shard.said + " (FSDP2: ZeRO-3)");
    } else {
      const long long dp = shard.value_or(1) * replicate.value_or(1);
      std::string said = v.dp_shard.said;
      if (v.dp_replicate.given()) said += (said.empty() ? "" : ", ") + v.dp_replicate.said;
      a.set("dp", std::to_string(dp), v.dp_shard.given() ? v.dp_shard : v.dp_replicate, said);
    }
  }
  // The global batch: Megatron / torchtitan in sequences; DeepSpeed's
  // train_batch_size = micro x accumulation x DP, so two of them fix the third.
  std::optional<long long> gbs;  // torchtitan's -1: micro-batch x DP
  if (v.global_batch.given() && v.global_batch.text != "-1") gbs = a.whole(v.global_batch);
  const auto accum = a.whole(v.grad_accum);
  if (gbs) a.set("global_batch", std::to_string(*gbs), v.global_batch);
  if (accum) {
    const long long per_rank = static_cast<long long>(p.micro_batch) * *accum;
    if (gbs) {
      if (*gbs % per_rank != 0) {
        d.error(v.global_batch.loc, "train_batch_size",
                fmt::format("{} is not micro-batch {} x gradient_accumulation_steps {} x a whole DP degree", *gbs,
                            p.micro_batch, *accum));
      } else {
        a.set("dp", std::to_string(*gbs / per_rank), v.grad_accum,
              v.global_batch.said + ", " + v.micro_batch.said + ", " + v.grad_accum.said);
        r.notes.push_back(fmt::format("dp {} = train_batch_size {} / (micro-batch {} x {} accumulation steps)",
                                      *gbs / per_rank, *gbs, p.micro_batch, *accum));
      }
    } else {
      const long long g = per_rank * p.parallel.dp;
      a.set("global_batch", std::to_string(g), v.grad_accum);
      r.notes.push_back(fmt::format("global_batch {} = micro-batch {} x {} accumulation steps x DP {}", g,
                                    p.micro_batch, *accum, p.parallel.dp));
    }
  }
  // Training length: samples x seq, or iterations x global batch x seq.
  const int seq = p.seq_len > 0 ? p.seq_len : m.max_seq_len;
  if (auto s = a.whole(v.train_samples)) {
    const double tokens = static_cast<double>(*s) * seq;
    a.set("tokens", fmt::format("{:.0f}", tokens), v.train_samples);
    r.notes.push_back(fmt::format("tokens {} = {} samples x {} sequence", units::format_count(tokens), *s, seq));
  } else if (auto it = a.whole(v.train_iters)) {
    const double tokens = static_cast<double>(*it) * p.effective_global_batch() * seq;
    a.set("tokens", fmt::format("{:.0f}", tokens), v.train_iters);
    r.notes.push_back(fmt::format("tokens {} = {} steps x global batch {} x {} sequence", units::format_count(tokens),
                                  *it, p.effective_global_batch(), seq));
  }
  d.throw_if_errors();
}

std::string describe_plan(const PlanSpec& p, const ImportReport& r) {
  std::string out;
  if (!r.kind.empty()) {
    out += fmt::format("Imported from {} ({}):\n", r.file, r.kind);
    for (const auto& s : r.settings) {
      const std::string where = s.line > 0 ? fmt::format("line {}: ", s.line) : "";
      out += fmt::format("  {:<20} {:<12} {}{}\n", s.key, s.value, where, s.said);
    }
    for (const auto& n : r.notes) out += fmt::format("  note: {}\n", n);
    if (!r.ignored.empty()) {
      out += "Ignored (no effect on step time or memory):\n";
      for (const auto& i : r.ignored) out += fmt::format("  {}\n", i);
    }
    if (!r.unknown.empty()) {
      out += "Not read (unknown to Ridgeline; check that they change neither step time nor memory):\n";
      for (const auto& i : r.unknown) out += fmt::format("  {}\n", i);
    }
  }
  out += fmt::format("Plan: {}\n", plan_summary(p));
  const long long gb = p.effective_global_batch();
  out += fmt::format("  framework {}, micro-batch {}, global batch {} sequences ({} tokens), sequence {}, "
                     "tokens {}\n",
                     framework(p.framework).id, p.micro_batch, gb, gb * p.seq_len, p.seq_len,
                     p.tokens > 0 ? units::format_count(p.tokens) : std::string("20 per parameter"));
  return out;
}

}  // namespace ridgeline::spec
