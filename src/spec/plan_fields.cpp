#include "ridgeline/spec/plan_fields.hpp"

#include <cmath>
#include <fmt/format.h>

#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/yaml_reader.hpp"

namespace ridgeline::spec {

namespace {

/// A word field over an enum member: parse and print through plan.hpp's word tables.
#define RIDGELINE_WORD(member, parse, print)                                                      \
  .parse_word = [](PlanSpec& p, std::string_view s) {                                             \
    auto v = parse(s);                                                                            \
    if (v) p.member = *v;                                                                         \
    return v.has_value();                                                                         \
  },                                                                                              \
  .word = [](const PlanSpec& p) { return print(p.member); }

/// A word field over an enum member the plan marks as given (else the
/// framework's default applies): parse sets the member and its flag.
#define RIDGELINE_GIVEN_WORD(member, given, parse)                                                \
  .parse_word = [](PlanSpec& p, std::string_view s) {                                             \
    auto v = parse(s);                                                                            \
    if (v) p.member = *v, p.given = true;                                                         \
    return v.has_value();                                                                         \
  }

/// gate_up's two words: fused (true) or separate.
std::optional<bool> parse_gate_up(std::string_view s) {
  if (s == "fused") return true;
  if (s == "separate") return false;
  return std::nullopt;
}

bool is_fp8(const PlanSpec& p) { return p.precision == Precision::kFp8; }
bool is_adapter(const PlanSpec& p) { return p.finetune.mode != FinetuneMode::kFull; }
bool is_mixed(const PlanSpec& p) { return p.precision != Precision::kFp32 && p.precision != Precision::kTf32; }

// GCC 12 warns of members a designated initializer leaves to their defaults,
// which is what the designators are for here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
// Ranges: beyond these a value is not one training job (and 32-bit products
// of layout sizes overflow); engine::check_plan checks the combinations.
constinit const PlanField kFields[] = {
    {.key = "micro_batch", .flag = "micro-batch", .help = "Micro-batch size per GPU", .type = FieldType::kInt,
     .lo = 1, .hi = 1 << 24, .int_ref = [](PlanSpec& p) -> int& { return p.micro_batch; }, .summary = "mb{}",
     .scope = Scope::kGraph},
    {.key = "global_batch", .flag = "global-batch",
     .help = "Global batch in sequences, or in tokens with a K, M or G suffix (binary, as batch sizes are "
             "quoted: 4M = 4 x 2^20 tokens = 512 sequences of 8192; it must be a whole number of sequences) "
             "(default: micro-batch x DP, one micro-batch per step)",
     .type = FieldType::kInt, .lo = 1, .hi = 1 << 30,
     .int_ref = [](PlanSpec& p) -> int& { return p.global_batch; }, .scope = Scope::kStep},
    {.key = "seq_len", .setting = "seq", .flag = "seq",
     .help = "Sequence length (default: 8192 capped at the model's maximum)", .type = FieldType::kInt, .lo = 1,
     .hi = 1 << 30, .int_ref = [](PlanSpec& p) -> int& { return p.seq_len; }, .scope = Scope::kGraph},
    {.key = "framework", .flag = "framework",
     .help = "Training framework (frameworks/NAME.yaml): its fused kernels, default attention, host dispatch "
             "cost, how parameters and gradients are gathered and reduced, allocator reserve, recompute "
             "policies and refused combinations",
     .type = FieldType::kWord,
     .parse_word = [](PlanSpec& p, std::string_view s) {
       auto v = find_framework(s);
       if (!v) return false;
       p.framework = *v;
       p.framework_given = true;
       const FrameworkSpec& f = spec::framework(*v);
       if (!p.attention_given) p.attention = f.attention;
       if (!p.fusion_given) p.fusion = f.fusion;
       return true;
     },
     .word = [](const PlanSpec& p) { return spec::framework(p.framework).id; }, .choices = framework_choices,
     .group = SummaryGroup::kTechnique, .show = Show::kAlways, .summary = "{}", .scope = Scope::kGraph},
    {.key = "precision", .flag = "precision",
     .help = "Training precision (fp8: the decoder layers' linear GEMMs in fp8 by fp8.recipe; nvfp4: in NVFP4, "
             "E2M1 with an E4M3 scale per 16 elements, Blackwell only; the LM head stays bf16)", .type = FieldType::kWord,
     RIDGELINE_WORD(precision, parse_precision, to_string), .choices = precision_choices,
     .group = SummaryGroup::kTechnique, .show = Show::kAlways, .scope = Scope::kGraph},
    {.key = "fp8.recipe", .setting = "fp8_recipe", .flag = "fp8-recipe",
     .help = "fp8 scaling recipe (Transformer Engine's, and torchao's; tensorwise under torchtitan is torchao's, "
             "every operand cast per micro-batch and the 16-bit input saved): delayed = per-tensor scales from an amax history of "
             "1024 steps, E4M3 forward and E5M2 gradients (DelayedScaling, HYBRID format); tensorwise = "
             "per-tensor current scaling, an amax pass over each tensor before its cast (Float8CurrentScaling); "
             "blockwise = DeepSeek-V3 1x128 activation and 128x128 weight fp32 scales, computed in the cast, "
             "partial sums promoted every 128 of K (Float8BlockScaling); mxfp8 = OCP MX, an E8M0 scale per 32 "
             "elements, row- and column-wise quantized copies, Blackwell block-scaled tensor cores only "
             "(MXFP8BlockScaling); rowwise = torchao's (torchtitan recipe_name \"rowwise\"): an fp32 scale per "
             "row of each GEMM operand from the row's amax, E4M3 throughout, weights cast every micro-batch, "
             "the 16-bit input saved for backward; rowwise_with_gw_hp = torchao's (recipe_name "
             "\"rowwise_with_gw_hp\"): rowwise for the output and input-gradient GEMMs (the latter's weight with "
             "one scale per tensor), the weight-gradient GEMM in 16 bits on the 16-bit input and gradient",
     .type = FieldType::kWord, RIDGELINE_WORD(fp8_recipe, parse_fp8_recipe, to_string),
     .choices = fp8_recipe_choices, .applies = is_fp8, .group = SummaryGroup::kTechnique,
     .show = Show::kIfChanged, .summary = " {}", .scope = Scope::kGraph},
    {.key = "fp8.primary_weights", .setting = "fp8_primary_weights", .flag = "fp8-primary-weights",
     .help = "fp8: hold the trained linear weights only as their fp8 copies (and transposes), no 16-bit weight "
             "in the model; the optimizer keeps the master: fp32 with master_weights fp32, the 16-bit weight "
             "with none (Transformer Engine fp8_model_init; NeMo fp8_params)",
     .type = FieldType::kBool, .bool_ref = [](PlanSpec& p) -> bool& { return p.fp8_primary_weights; },
     .applies = is_fp8, .group = SummaryGroup::kTechnique, .show = Show::kIfChanged,
     .summary = "fp8 primary weights", .scope = Scope::kGraph},
    {.key = "fp8.activation_storage", .setting = "fp8_activation_storage", .flag = "fp8-activation-storage",
     .help = "fp8 blockwise: DeepSeek-V3's low-precision activation storage (technical report Sec. 3.3.2): "
             "the SwiGLU inputs saved for backward in fp8 with 1x128 scales (SwiGLU's output recomputed from "
             "them under moe_act), the attention output saved once in 12-bit E5M6 for both the attention "
             "backward and the output projection's weight gradient (in place of a 16-bit copy and an fp8 one)",
     .type = FieldType::kBool, .bool_ref = [](PlanSpec& p) -> bool& { return p.fp8_activation_storage; },
     .applies = is_fp8, .group = SummaryGroup::kTechnique, .show = Show::kIfChanged,
     .summary = "fp8 activation storage", .scope = Scope::kGraph},
    {.key = "loss_scaling.skipped_step_rate", .setting = "skipped_step_rate", .flag = "skipped-step-rate",
     .help = "fp16: fraction of steps skipped on overflow", .type = FieldType::kNumber, .lo = 0, .hi = 0.5,
     .num_ref = [](PlanSpec& p) -> double& { return p.skipped_step_rate; },
     .applies = [](const PlanSpec& p) { return p.precision == Precision::kFp16; }, .scope = Scope::kStep},
    {.key = "attention", .flag = "attention",
     .help = "Attention kernel (default: the framework's; triton_legacy: a Triton FlashAttention built by the "
             "pre-MLIR Triton compiler, mma.sync on every GPU, as llm-foundry's attn_impl triton ran through v0.3)",
     .type = FieldType::kWord,
     RIDGELINE_GIVEN_WORD(attention, attention_given, parse_attention),
     .word = [](const PlanSpec& p) { return to_string(p.attention); }, .choices = attention_choices,
     .group = SummaryGroup::kTechnique, .show = Show::kAlways, .summary = "{} attention", .scope = Scope::kGraph},
    {.key = "packed_doc_len", .setting = "packed_doc_len", .flag = "packed-doc-len",
     .help = "Sequences packed from documents of N tokens, each attending only within itself (flash-attn varlen "
             "or Transformer Engine THD with cu_seqlens, as NeMo's packed SFT runs; flex attention's "
             "block-causal mask): a fused attention kernel costs seq / N documents of N tokens, not one of seq. "
             "For documents of unequal length give sum(l^2) / sum(l), the length-weighted mean, which sets "
             "the attention's work (default 0: one document per sequence)",
     .type = FieldType::kInt, .lo = 0, .hi = 1 << 30,
     .int_ref = [](PlanSpec& p) -> int& { return p.packed_doc_len; }, .group = SummaryGroup::kTechnique,
     .show = Show::kIfChanged, .summary = "packed docs of {}", .scope = Scope::kGraph},
    {.key = "fusion", .flag = "fusion", .help = "Kernel fusion level (default: the framework's)",
     .type = FieldType::kWord,
     RIDGELINE_GIVEN_WORD(fusion, fusion_given, parse_fusion),
     .word = [](const PlanSpec& p) { return to_string(p.fusion); }, .choices = fusion_choices,
     .group = SummaryGroup::kTechnique, .show = Show::kAlways, .summary = "fusion {}", .scope = Scope::kGraph},
    {.key = "recompute", .flag = "recompute",
     .help = "Activation recomputation (selective: the attention core, Megatron-LM's; selective:M+M: "
             "Megatron-Core's --recompute-modules, M among core_attn, layernorm, mla_up_proj, mlp, "
             "shared_experts, moe_act; op: per-op selective, "
             "torchtitan's selective_ac_option 'op': every second matmul of a layer and every non-matmul op "
             "recomputed, the other matmul and attention outputs saved; block:K: full recomputation of the "
             "first K layers of each pipeline stage, the others keep their activations, Megatron-LM's "
             "--recompute-method block; also the "
             "framework's own names: activation_checkpointing, gradient_checkpointing, selective_op, "
             "selective_layer:K, uniform:K)",
     .type = FieldType::kWord,
     .parse_word = [](PlanSpec& p, std::string_view s) {
       auto v = parse_recompute(s);
       if (!v) v = framework_recompute(spec::framework(p.framework), s);
       if (v) p.recompute = *v;
       return v.has_value();
     },
     .word = [](const PlanSpec& p) { return to_string(p.recompute); }, .choices = recompute_choices,
     .group = SummaryGroup::kTechnique, .show = Show::kAlways, .summary = "recompute {}", .scope = Scope::kGraph},
    {.key = "optimizer.kind", .setting = "optimizer", .flag = "optimizer", .help = "Optimizer",
     .type = FieldType::kWord, RIDGELINE_WORD(optimizer.kind, parse_optimizer, to_string),
     .choices = optimizer_choices, .group = SummaryGroup::kTechnique, .show = Show::kAlways,
     .shorthand = true, .scope = Scope::kGraph},
    {.key = "optimizer.momentum", .setting = "momentum", .flag = "momentum", .help = "sgd: with momentum",
     .type = FieldType::kBool, .bool_ref = [](PlanSpec& p) -> bool& { return p.optimizer.momentum; },
     .applies = [](const PlanSpec& p) { return p.optimizer.kind == OptimizerKind::kSgd; }, .scope = Scope::kGraph},
    {.key = "optimizer.first_moment", .setting = "first_moment", .flag = "first-moment",
     .help = "adafactor: keep a first moment", .type = FieldType::kBool,
     .bool_ref = [](PlanSpec& p) -> bool& { return p.optimizer.first_moment; },
     .applies = [](const PlanSpec& p) { return p.optimizer.kind == OptimizerKind::kAdafactor; }, .scope = Scope::kGraph},
    {.key = "optimizer.hessian_interval", .setting = "hessian_interval", .flag = "hessian-interval",
     .help = "sophia: Hessian estimate every k steps", .type = FieldType::kInt, .lo = 1, .hi = 1000000,
     .int_ref = [](PlanSpec& p) -> int& { return p.optimizer.hessian_interval; },
     .applies = [](const PlanSpec& p) { return p.optimizer.kind == OptimizerKind::kSophia; }, .scope = Scope::kGraph},
    {.key = "optimizer.in_backward", .setting = "optimizer_in_backward", .flag = "optimizer-in-backward",
     .help = "Step each parameter in its gradient's hook during the backward and free the gradient at once "
             "(torchtune optimizer_in_bwd; PyTorch's register_post_accumulate_grad_hook): the GPU holds one "
             "tensor's gradient, not the model's; needs one micro-batch per step",
     .type = FieldType::kBool, .bool_ref = [](PlanSpec& p) -> bool& { return p.optimizer.in_backward; },
     .group = SummaryGroup::kTechnique, .show = Show::kIfChanged, .summary = "optimizer in backward",
     .scope = Scope::kStep},
    {.key = "optimizer.state_dtype", .setting = "optimizer_state_dtype", .flag = "optimizer-state-dtype",
     .help = "The dtype of the optimizer's full-size states (Adam's moments, momentum, Sophia's Hessian, Lion's): "
             "auto = fp32 with master weights, the weights' dtype without (torch.optim); bf16 = DeepSeek-V3's "
             "BF16 AdamW moments beside fp32 masters (report Sec. 3.3.3), Megatron-Core's "
             "--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16; fp16 (2 bytes, as bf16); "
             "fp32. 8-bit and factored states keep their own widths",
     .type = FieldType::kWord, RIDGELINE_WORD(optimizer.state_dtype, parse_state_dtype, to_string),
     .choices = state_dtype_choices, .group = SummaryGroup::kTechnique, .show = Show::kIfChanged,
     .summary = "{} optimizer state", .scope = Scope::kStep},
    {.key = "optimizer.paged", .setting = "paged_optimizer", .flag = "paged-optimizer",
     .help = "bitsandbytes' paged optimizer state (PagedAdamW, PagedAdamW8bit, PagedLion): in CUDA unified "
             "memory, outside PyTorch's allocator and the peak; the GPU keeps what fits beside the rest, the "
             "excess crosses the host link both ways every step (adam, adamw, adam8bit, lion)",
     .type = FieldType::kBool, .bool_ref = [](PlanSpec& p) -> bool& { return p.optimizer.paged; },
     .group = SummaryGroup::kTechnique, .show = Show::kIfChanged, .summary = "paged optimizer",
     .scope = Scope::kStep},
    {.key = "finetune.mode", .setting = "finetune", .flag = "finetune", .help = "Fine-tuning mode",
     .type = FieldType::kWord, RIDGELINE_WORD(finetune.mode, parse_finetune, to_string),
     .choices = finetune_choices, .group = SummaryGroup::kTechnique, .show = Show::kIfChanged,
     .shorthand = true, .scope = Scope::kGraph},
    {.key = "finetune.rank", .setting = "lora_rank", .flag = "lora-rank", .help = "LoRA rank r",
     .type = FieldType::kInt, .lo = 1, .hi = 1 << 16, .int_ref = [](PlanSpec& p) -> int& { return p.finetune.rank; },
     .applies = is_adapter, .group = SummaryGroup::kTechnique, .show = Show::kAlways, .summary = " r={}", .scope = Scope::kGraph},
    {.key = "finetune.targets", .setting = "lora_targets", .flag = "lora-targets",
     .help = "LoRA target matrices", .type = FieldType::kWord,
     .parse_word = [](PlanSpec& p, std::string_view s) {
       auto v = parse_lora_targets(s);
       if (v) p.finetune.targets = *v;
       return v.has_value();
     },
     .word = [](const PlanSpec& p) { return lora_targets_to_string(p.finetune.targets); },
     .choices = lora_target_choices, .applies = is_adapter, .group = SummaryGroup::kTechnique,
     .show = Show::kAlways, .summary = " on {}", .scope = Scope::kGraph},
    {.key = "cuda_graphs", .flag = "cuda-graphs", .help = "Capture the step in CUDA graphs",
     .type = FieldType::kBool, .bool_ref = [](PlanSpec& p) -> bool& { return p.cuda_graphs; },
     .group = SummaryGroup::kTechnique, .show = Show::kIfChanged, .summary = "CUDA graphs", .scope = Scope::kGraph},
    {.key = "parallel.tp", .setting = "tp", .flag = "tp", .help = "Tensor-parallel degree", .type = FieldType::kInt,
     .lo = 1, .hi = 4096, .int_ref = [](PlanSpec& p) -> int& { return p.parallel.tp; },
     .group = SummaryGroup::kLayout, .show = Show::kAlways, .summary = "TP{}", .scope = Scope::kGraph},
    {.key = "parallel.pp", .setting = "pp", .flag = "pp", .help = "Pipeline-parallel degree",
     .type = FieldType::kInt, .lo = 1, .hi = 4096, .int_ref = [](PlanSpec& p) -> int& { return p.parallel.pp; },
     .group = SummaryGroup::kLayout, .show = Show::kAlways, .summary = "PP{}", .scope = Scope::kLayout},
    {.key = "parallel.dp", .setting = "dp", .flag = "dp", .help = "Data-parallel degree", .type = FieldType::kInt,
     .lo = 1, .hi = 1 << 20, .int_ref = [](PlanSpec& p) -> int& { return p.parallel.dp; },
     .group = SummaryGroup::kLayout, .show = Show::kAlways, .summary = "DP{}", .scope = Scope::kLayout},
    {.key = "parallel.cp", .setting = "cp", .flag = "cp", .help = "Context-parallel degree",
     .type = FieldType::kInt, .lo = 1, .hi = 4096, .int_ref = [](PlanSpec& p) -> int& { return p.parallel.cp; },
     .group = SummaryGroup::kLayout, .show = Show::kIfChanged, .summary = "CP{}", .scope = Scope::kGraph},
    {.key = "parallel.ep", .setting = "ep", .flag = "ep", .help = "Expert-parallel degree (MoE)",
     .type = FieldType::kInt, .lo = 1, .hi = 4096, .int_ref = [](PlanSpec& p) -> int& { return p.parallel.ep; },
     .group = SummaryGroup::kLayout, .show = Show::kIfChanged, .summary = "EP{}", .scope = Scope::kGraph},
    {.key = "parallel.sp", .setting = "sp", .flag = "sp", .help = "Sequence parallelism (with TP)",
     .type = FieldType::kBool, .bool_ref = [](PlanSpec& p) -> bool& { return p.parallel.sp; },
     .group = SummaryGroup::kLayout, .show = Show::kIfChanged, .summary = "+SP",
     .scope = Scope::kGraph},
    {.key = "parallel.zero", .setting = "zero", .flag = "zero", .help = "ZeRO stage", .type = FieldType::kInt,
     .lo = 0, .hi = 3, .int_ref = [](PlanSpec& p) -> int& { return p.parallel.zero; },
     .group = SummaryGroup::kLayout, .show = Show::kIfChanged, .summary = "ZeRO-{}", .scope = Scope::kStep},
    {.key = "parallel.virtual_stages", .setting = "vpp", .flag = "vpp",
     .help = "Virtual pipeline stages per GPU (interleaved 1F1B when > 1)", .type = FieldType::kInt, .lo = 1,
     .hi = 1024, .int_ref = [](PlanSpec& p) -> int& { return p.parallel.virtual_stages; },
     .group = SummaryGroup::kLayout, .show = Show::kIfChanged, .summary = "v{}", .scope = Scope::kStep},
    {.key = "parallel.pp_schedule", .setting = "pp_schedule", .flag = "pp-schedule",
     .help = "Pipeline schedule: 1f1b = one forward one backward, interleaved with virtual stages, bubble "
             "(PP-1)(F+B) / v; dualpipe = DeepSeek-V3's bidirectional schedule, bubble (PP/2-1)(F&B+B-3W), two "
             "mirrored stages' parameters per GPU, PP+1 micro-batches' activations (DeepSeek-V3 report Sec. "
             "3.2.1, Table 2); needs an even PP and an even micro-batch count of at least 2 x PP, no virtual stages",
     .type = FieldType::kWord, RIDGELINE_WORD(parallel.pp_schedule, parse_pp_schedule, to_string),
     .choices = pp_schedule_choices, .group = SummaryGroup::kLayout, .show = Show::kIfChanged,
     .summary = "{}", .scope = Scope::kStep},
    // Uneven pipeline stages (Megatron-LM --decoder-first-pipeline-num-layers
    // / --decoder-last-pipeline-num-layers; Llama 3 405B: 126 layers on PP16,
    // the first and last stages 7, the others 8). 0 = an even share.
    {.key = "parallel.first_stage_layers", .setting = "first_stage_layers", .flag = "first-stage-layers",
     .help = "Decoder layers on the first pipeline stage; the stages without a count split the rest evenly "
             "(default 0: an even share)",
     .type = FieldType::kInt, .lo = 0, .hi = 1 << 16,
     .int_ref = [](PlanSpec& p) -> int& { return p.parallel.first_stage_layers; },
     .group = SummaryGroup::kLayout, .show = Show::kIfChanged, .summary = "first-stage:{}L", .scope = Scope::kLayout},
    {.key = "parallel.last_stage_layers", .setting = "last_stage_layers", .flag = "last-stage-layers",
     .help = "Decoder layers on the last pipeline stage (default 0: an even share)", .type = FieldType::kInt,
     .lo = 0, .hi = 1 << 16, .int_ref = [](PlanSpec& p) -> int& { return p.parallel.last_stage_layers; },
     .group = SummaryGroup::kLayout, .show = Show::kIfChanged, .summary = "last-stage:{}L", .scope = Scope::kLayout},
    {.key = "parallel.tp_comm_overlap", .setting = "tp_comm_overlap", .flag = "tp-comm-overlap",
     .help = "Overlap TP communication with GEMMs", .type = FieldType::kBool,
     .bool_ref = [](PlanSpec& p) -> bool& { return p.parallel.tp_comm_overlap; },
     .group = SummaryGroup::kLayout, .show = Show::kIfChanged, .summary = "+TP-overlap", .scope = Scope::kGraph},
    {.key = "parallel.ep_comm_overlap", .setting = "ep_comm_overlap", .flag = "ep-comm-overlap",
     .help = "MoE: run the expert-parallel dispatch and combine all-to-alls beside another micro-batch's compute "
             "(Megatron-Core --overlap-moe-expert-parallel-comm; DeepSeek-V3's DualPipe) instead of in line; needs "
             "EP > 1",
     .type = FieldType::kBool, .bool_ref = [](PlanSpec& p) -> bool& { return p.parallel.ep_comm_overlap; },
     .group = SummaryGroup::kLayout, .show = Show::kIfChanged, .summary = "+EP-overlap", .scope = Scope::kGraph},
    {.key = "parallel.overlap_param_gather", .setting = "overlap_param_gather", .flag = "overlap-param-gather",
     .help = "ZeRO-1/2: all-gather the updated parameters bucket by bucket beside the next step's first forward "
             "(Megatron-LM --overlap-param-gather); only the first bucket is exposed (default: the framework's)",
     .type = FieldType::kBool,
     .bool_ref = [](PlanSpec& p) -> bool& { return p.parallel.overlap_param_gather; },
     .group = SummaryGroup::kLayout, .show = Show::kIfChanged, .summary = "+param-gather-overlap", .scope = Scope::kStep},
    {.key = "parallel.grad_reduce", .setting = "grad_reduce", .flag = "grad-reduce",
     .help = "Data-parallel gradient reduction: overlapped (bucket by bucket beside the last micro-batch's "
             "backward; Megatron-LM --overlap-grad-reduce, DeepSpeed overlap_comm) or exposed (after the backward)",
     .type = FieldType::kWord,
     .parse_word = [](PlanSpec& p, std::string_view s) {
       if (s != "overlapped" && s != "exposed") return false;
       p.parallel.grad_reduce_exposed = s == "exposed";
       return true;
     },
     .word = [](const PlanSpec& p) { return std::string(p.parallel.grad_reduce_exposed ? "exposed" : "overlapped"); },
     .choices = [] { return std::string("overlapped, exposed"); }, .group = SummaryGroup::kLayout,
     .show = Show::kIfChanged, .summary = "grad-reduce-{}", .scope = Scope::kStep},
    {.key = "tokens", .flag = "tokens", .help = "Tokens to train on, e.g. 15T (default: 20 per parameter)",
     .type = FieldType::kQuantity, .dim = units::Dimension::kCount,
     .num_ref = [](PlanSpec& p) -> double& { return p.tokens; }, .scope = Scope::kRun},
    {.key = "attention_flops", .flag = "attention-flops",
     .help = "Attention FLOPs credited to MFU: causal (Megatron, causal half skipped) or full (older papers)",
     .type = FieldType::kWord, RIDGELINE_WORD(attention_flops, parse_attention_flops, to_string),
     .choices = attention_flops_choices, .scope = Scope::kGraph},
    {.key = "power_utilization", .flag = "power-utilization",
     .help = "Average fraction of TDP drawn, for energy (default: the power model, idle to TDP by the "
             "step's compute-bound share)",
     .type = FieldType::kNumber, .lo = 0.01, .hi = 1.0,
     .num_ref = [](PlanSpec& p) -> double& { return p.power_utilization; },
     .applies = [](const PlanSpec& p) { return p.power_utilization > 0; }, .scope = Scope::kRun},
    {.key = "failure_rate", .flag = "failure-rate",
     .help = "Unexpected job interruptions per GPU-hour, e.g. 2e-5 (default: the profile's "
             "reliability.failure_rate_per_gpu_hour, else Llama 3's 1.973e-5: 419 in 54 days on 16,384 GPUs)",
     .type = FieldType::kNumber, .lo = 0.0, .hi = 1.0,
     .num_ref = [](PlanSpec& p) -> double& { return p.failure_rate_per_gpu_hour; },
     .applies = [](const PlanSpec& p) { return p.failure_rate_per_gpu_hour >= 0; }, .scope = Scope::kRun},
    {.key = "checkpoint_bandwidth", .flag = "checkpoint-bandwidth",
     .help = "Aggregate checkpoint write (and read) bandwidth of the job's storage, e.g. \"100 GB/s\" "
             "(default: 122 MB/s per GPU, the job's share of Llama 3's 2 TB/s for 16,384 GPUs)",
     .type = FieldType::kQuantity, .dim = units::Dimension::kByteRate,
     .num_ref = [](PlanSpec& p) -> double& { return p.checkpoint_bandwidth_bytes_per_s; },
     .applies = [](const PlanSpec& p) { return p.checkpoint_bandwidth_bytes_per_s > 0; }, .scope = Scope::kRun},
    {.key = "restart_time", .flag = "restart-time",
     .help = "Time to restart after an interruption (reschedule, start, initialise), before the "
             "checkpoint read, e.g. \"5 min\" (default: 10 min)",
     .type = FieldType::kQuantity, .dim = units::Dimension::kTime,
     .num_ref = [](PlanSpec& p) -> double& { return p.restart_s; },
     .applies = [](const PlanSpec& p) { return p.restart_s > 0; }, .scope = Scope::kRun},
    {.key = "checkpoint_interval", .flag = "checkpoint-interval",
     .help = "Training time between checkpoints, e.g. \"30 min\" (default: Young/Daly's sqrt(2 x write "
             "time x MTBF))",
     .type = FieldType::kQuantity, .dim = units::Dimension::kTime,
     .num_ref = [](PlanSpec& p) -> double& { return p.checkpoint_interval_s; },
     .applies = [](const PlanSpec& p) { return p.checkpoint_interval_s > 0; }, .scope = Scope::kRun},
    {.key = "pue", .flag = "pue",
     .help = "Power usage effectiveness: facility energy / IT energy (default 1: the GPUs' energy only)",
     .type = FieldType::kNumber, .lo = 1.0, .hi = 5.0,
     .num_ref = [](PlanSpec& p) -> double& { return p.pue; }, .scope = Scope::kRun},
    {.key = "grid_carbon", .flag = "grid-carbon",
     .help = "Grid carbon intensity in gCO2e/kWh, e.g. 400; gives the run's emissions (default: none)",
     .type = FieldType::kNumber, .lo = 0.0, .hi = 5000.0,
     .num_ref = [](PlanSpec& p) -> double& { return p.grid_carbon_g_per_kwh; },
     .applies = [](const PlanSpec& p) { return p.grid_carbon_g_per_kwh >= 0; }, .scope = Scope::kRun},
    // A power such as "500 W" (set_field rejects 0 and below); 0 in PlanSpec
    // means not given, so the field applies (and prints) only when set.
    {.key = "power_limit", .flag = "power-limit",
     .help = "Board power limit (nvidia-smi -pl), e.g. \"500 W\"; lowers the sustained clock; default: the "
             "profile's TDP",
     .type = FieldType::kQuantity, .dim = units::Dimension::kPower,
     .num_ref = [](PlanSpec& p) -> double& { return p.power_limit_w; },
     .applies = [](const PlanSpec& p) { return p.power_limit_w > 0; }, .group = SummaryGroup::kTechnique,
     .show = Show::kIfChanged, .summary = "{} power limit", .scope = Scope::kGraph},
    {.key = "master_weights", .flag = "master-weights",
     .help = "fp32 = an fp32 master copy of the trained weights (mixed precision); remainder = the fp32 "
             "master as the 16 bits the bf16 weight lacks, 2 bytes per parameter (Apex DistributedFusedAdam "
             "store_param_remainders, NeMo's default for a bf16 model); none = pure 16-bit "
             "training: the optimizer updates the 16-bit weights and keeps its full-size states (Adam's "
             "moments, momentum, Sophia's Hessian) in their dtype, as torch.optim does",
     .type = FieldType::kWord, RIDGELINE_WORD(master_weights, parse_master_weights, to_string),
     .choices = master_weights_choices, .applies = is_mixed, .group = SummaryGroup::kTechnique,
     .show = Show::kIfChanged, .summary = "{} master weights", .scope = Scope::kGraph},
    {.key = "main_grads", .flag = "main-grads",
     .help = "Gradient accumulation and reduction: working = at the working precision; fp32 = fp32 main "
             "gradients (Megatron-LM's accumulate_allreduce_grads_in_fp32: 18 bytes per parameter with Adam) "
             "(default: the framework's; megatron: fp32 with bf16)",
     .type = FieldType::kWord,
     RIDGELINE_GIVEN_WORD(main_grads, main_grads_given, parse_main_grads),
     .word = [](const PlanSpec& p) { return to_string(p.main_grads); },
     .choices = main_grads_choices, .applies = is_mixed, .group = SummaryGroup::kTechnique,
     .show = Show::kIfChanged, .summary = "{} main grads", .scope = Scope::kGraph},
    {.key = "cross_entropy", .flag = "cross-entropy",
     .help = "The loss over the logits: fused = one kernel over the 16-bit logits (Megatron-LM "
             "--cross-entropy-loss-fusion, flash-attn's xentropy, a compiled loss); eager = the fp32 chain that "
             "upcasts the logits and saves an fp32 copy for the backward; chunked = fused over 8 token chunks, one "
             "chunk's logit gradient alive at a time (torchtune CEWithChunkedOutputLoss; where the framework "
             "offers it) (default: the framework's; megatron: eager)",
     .type = FieldType::kWord,
     RIDGELINE_GIVEN_WORD(cross_entropy, cross_entropy_given, parse_cross_entropy),
     .word = [](const PlanSpec& p) { return to_string(p.cross_entropy); },
     .choices = cross_entropy_choices, .group = SummaryGroup::kTechnique, .show = Show::kIfChanged,
     .summary = "{} cross-entropy", .scope = Scope::kGraph},
    {.key = "gate_up", .flag = "gate-up",
     .help = "A gated MLP's gate and up projections in the model code: fused = one GEMM of twice the FFN width "
             "whose output the activation splits into two strided halves, which eager PyTorch cannot vectorize "
             "(Megatron-Core's linear_fc1, NeMo AutoModel's custom Llama and Qwen2); separate = two GEMMs with "
             "contiguous outputs (torchtitan, Hugging Face) (default: the framework's)",
     .type = FieldType::kWord,
     RIDGELINE_GIVEN_WORD(fused_gate_up, gate_up_given, parse_gate_up),
     .word = [](const PlanSpec& p) {
       const bool fused = p.gate_up_given ? p.fused_gate_up : spec::framework(p.framework).fused_gate_up;
       return std::string(fused ? "fused" : "separate");
     },
     .choices = [] { return std::string("fused, separate"); }, .scope = Scope::kGraph},
    {.key = "rms_norm", .flag = "rms-norm",
     .help = "An eager plan's RMSNorm in the model code: composite = a chain of PyTorch ops (Hugging Face "
             "LlamaRMSNorm: upcast, pow, mean, rsqrt, two multiplies; six kernels), native = torch.nn.RMSNorm's "
             "one CUDA kernel (aten::_fused_rms_norm; older PyTorch ran the composite chain), fused = a tuned kernel (Transformer Engine, Apex, Liger); "
             "above the eager level the norm is one tuned kernel (default: the framework's)",
     .type = FieldType::kWord,
     RIDGELINE_GIVEN_WORD(rms_norm, rms_norm_given, parse_rms_norm),
     .word = [](const PlanSpec& p) {
       return to_string(p.rms_norm_given ? p.rms_norm : spec::framework(p.framework).eager_rms_norm);
     },
     .choices = rms_norm_choices, .scope = Scope::kGraph},
    // CPU offload (ZeRO-Offload, Ren et al. 2021; ZeRO-Infinity, Rajbhandari
    // et al. 2021); engine::check_plan refuses what the framework refuses.
    {.key = "offload.optimizer", .setting = "offload_optimizer", .flag = "offload-optimizer",
     .help = "cpu = ZeRO-Offload: the fp32 master weights, optimizer state and an fp32 gradient copy live in "
             "host memory and CPU Adam updates them (DeepSpeed offload_optimizer, Megatron-Core "
             "--optimizer-cpu-offload, torchtitan training.enable_cpu_offload with offload.params; needs ZeRO >= 1 "
             "and adam or adamw); the gradient shard crosses the host "
             "link to the CPU and the updated parameter shard back every step",
     .type = FieldType::kWord, RIDGELINE_WORD(offload.optimizer, parse_offload_device, to_string),
     .choices = offload_device_choices, .group = SummaryGroup::kTechnique, .show = Show::kIfChanged,
     .summary = "optimizer offload {}", .scope = Scope::kStep},
    {.key = "offload.params", .setting = "offload_params", .flag = "offload-params",
     .help = "cpu = ZeRO-Infinity parameter offload: the 16-bit parameter shard lives in host memory and is "
             "fetched over the host link before each layer's forward and backward (DeepSpeed offload_param, "
             "torchtitan training.enable_cpu_offload: FSDP2's CPUOffloadPolicy; needs ZeRO-3 and optimizer offload)",
     .type = FieldType::kWord, RIDGELINE_WORD(offload.params, parse_offload_device, to_string),
     .choices = offload_device_choices, .group = SummaryGroup::kTechnique, .show = Show::kIfChanged,
     .summary = "parameter offload {}", .scope = Scope::kStep},
    {.key = "offload.activations", .setting = "offload_activations", .flag = "offload-activations",
     .help = "cpu = activation offloading: the layers' saved activations (under full recomputation their "
             "checkpointed inputs) go to pinned host memory on a side stream as the forward saves them and come "
             "back ahead of the backward (torchtune enable_activation_offloading); one layer's stay on the GPU, "
             "the LM head's are kept; the copies hide behind forward and backward where the host link keeps up",
     .type = FieldType::kWord, RIDGELINE_WORD(offload.activations, parse_offload_device, to_string),
     .choices = offload_device_choices, .group = SummaryGroup::kTechnique, .show = Show::kIfChanged,
     .summary = "activation offload {}", .scope = Scope::kStep},
    {.key = "moe.capacity_factor", .setting = "capacity_factor", .flag = "moe-capacity-factor",
     .help = "MoE: tokens an expert takes per step, x its even share top_k x tokens / experts; tokens beyond "
             "are dropped (0 = dropless)",
     .type = FieldType::kNumber, .lo = 0, .hi = 1024,
     .num_ref = [](PlanSpec& p) -> double& { return p.moe.capacity_factor; }, .group = SummaryGroup::kTechnique,
     .show = Show::kIfChanged, .summary = "capacity factor {}", .scope = Scope::kGraph},
    {.key = "moe.imbalance", .setting = "moe_imbalance", .flag = "moe-imbalance",
     .help = "MoE: the busiest expert's tokens / the even share (1 = perfectly balanced); it sets the expert "
             "GEMMs' time",
     .type = FieldType::kNumber, .lo = 1, .hi = 1024,
     .num_ref = [](PlanSpec& p) -> double& { return p.moe.imbalance; }, .group = SummaryGroup::kTechnique,
     .show = Show::kIfChanged, .summary = "expert imbalance {}", .scope = Scope::kGraph},
    {.key = "moe.dispatcher", .setting = "moe_dispatcher", .flag = "moe-dispatcher",
     .help = "MoE: how tokens reach their experts under EP: alltoall = one NCCL all-to-all, every token-expert "
             "pair sent at the activations' width (Megatron-Core --moe-token-dispatcher-type alltoall); deepep = DeepEP's "
             "node-aware kernels on 20 SMs: a token crosses the network once per destination node (at most the "
             "model's topk_groups nodes under node-limited routing) and is forwarded over NVLink, dispatched in "
             "fp8 under the blockwise fp8 recipe (DeepSeek-V3 report Sec. 3.2.2, 3.3; Megatron-Core "
             "--moe-token-dispatcher-type flex --moe-enable-deepep)",
     .type = FieldType::kWord, RIDGELINE_WORD(moe.dispatcher, parse_moe_dispatcher, to_string),
     .choices = moe_dispatcher_choices, .group = SummaryGroup::kTechnique, .show = Show::kIfChanged,
     .summary = "{} dispatcher", .scope = Scope::kGraph},
    {.key = "moe.shared_expert_overlap", .setting = "shared_expert_overlap", .flag = "moe-shared-expert-overlap",
     .help = "MoE: run the shared expert on its own stream beside the dispatch and combine all-to-alls, forward "
             "and backward (Megatron-Core --moe-shared-expert-overlap); needs EP > 1 and a shared expert",
     .type = FieldType::kBool, .bool_ref = [](PlanSpec& p) -> bool& { return p.moe.shared_expert_overlap; },
     .group = SummaryGroup::kTechnique, .show = Show::kIfChanged, .summary = "+shared-expert-overlap", .scope = Scope::kGraph},
};

#pragma GCC diagnostic pop
#undef RIDGELINE_WORD
#undef RIDGELINE_GIVEN_WORD

std::string number_text(double v) { return fmt::format("{:g}", v); }

}  // namespace

std::span<const PlanField> plan_fields() { return kFields; }

const PlanField* find_plan_field(std::string_view key) {
  for (const auto& f : kFields)
    if (f.key == key || (!f.setting.empty() && f.setting == key)) return &f;
  // "virtual_stages", "seq" and other last parts of a dotted key.
  for (const auto& f : kFields) {
    const auto dot = f.key.rfind('.');
    if (dot != std::string_view::npos && f.key.substr(dot + 1) == key) return &f;
  }
  return nullptr;
}

std::string set_field(const PlanField& f, PlanSpec& p, std::string_view text) {
  const std::string s(text);
  switch (f.type) {
    case FieldType::kInt: {
      // The YAML reader's parsers: one wording for files, flags and settings.
      std::string e;
      auto v = parse_whole_number(s, static_cast<long long>(f.lo), static_cast<long long>(f.hi), e);
      if (!v) return e;
      f.int_ref(p) = static_cast<int>(*v);
      return "";
    }
    case FieldType::kNumber: {
      std::string e;
      auto v = parse_real_number(s, f.lo, f.hi, e);
      if (!v) return e;
      f.num_ref(p) = *v;
      return "";
    }
    case FieldType::kBool:
      if (s == "true" || s == "yes" || s == "on" || s == "1") f.bool_ref(p) = true;
      else if (s == "false" || s == "no" || s == "off" || s == "0") f.bool_ref(p) = false;
      else return fmt::format("expected true or false, got \"{}\"", s);
      return "";
    case FieldType::kQuantity: {
      auto r = units::parse(s, f.dim);
      if (!r.value) return r.error;
      if (!(*r.value > 0.0)) return fmt::format("expected {} greater than zero, got \"{}\"", units::describe(f.dim), s);
      f.num_ref(p) = *r.value;
      return "";
    }
    case FieldType::kWord:
      if (!f.parse_word(p, s)) return fmt::format("expected one of {}, got \"{}\"", f.choices(), s);
      return "";
  }
  return "";
}

std::string field_text(const PlanField& f, const PlanSpec& p) {
  auto& q = const_cast<PlanSpec&>(p);  // the accessors only read here
  switch (f.type) {
    case FieldType::kInt: return std::to_string(f.int_ref(q));
    case FieldType::kNumber: return number_text(f.num_ref(q));
    case FieldType::kQuantity:
      // In the unit set_field reads back exactly: watts as given, counts as "15T".
      if (f.dim == units::Dimension::kPower) return fmt::format("{:g} W", f.num_ref(q));
      if (f.dim == units::Dimension::kTime) return fmt::format("{:g} s", f.num_ref(q));
      if (f.dim == units::Dimension::kByteRate) return fmt::format("{:g} B/s", f.num_ref(q));
      return units::format_count(f.num_ref(q));
    case FieldType::kBool: return f.bool_ref(q) ? "true" : "false";
    case FieldType::kWord: return f.word(p);
  }
  return "";
}

bool is_default(const PlanField& f, const PlanSpec& p) {
  static const PlanSpec kDefault;
  auto& q = const_cast<PlanSpec&>(p);
  auto& d = const_cast<PlanSpec&>(kDefault);
  switch (f.type) {
    case FieldType::kInt: return f.int_ref(q) == f.int_ref(d);
    case FieldType::kNumber:
    case FieldType::kQuantity: return f.num_ref(q) == f.num_ref(d);
    case FieldType::kBool: return f.bool_ref(q) == f.bool_ref(d);
    case FieldType::kWord: return f.word(p) == f.word(kDefault);
  }
  return true;
}

bool applies(const PlanField& f, const PlanSpec& p) { return f.applies == nullptr || f.applies(p); }

std::string field_summary(const PlanField& f, const PlanSpec& p) {
  if (f.type == FieldType::kBool) {
    auto& q = const_cast<PlanSpec&>(p);
    return f.bool_ref(q) ? std::string(f.summary) : "";
  }
  return fmt::format(fmt::runtime(f.summary), field_text(f, p));
}

bool framework_assumed(const PlanSpec& p) {
  return !p.framework_given && p.finetune.mode != FinetuneMode::kFull && p.parallel.gpus() == 1;
}

std::string summary_text(const PlanField& f, const PlanSpec& p) {
  if (f.show == Show::kNever || !applies(f, p)) return "";
  if (f.show == Show::kIfChanged && is_default(f, p)) return "";
  if (f.key == "framework" && framework_assumed(p)) return field_summary(f, p) + " (assumed: no --framework)";
  return field_summary(f, p);
}

namespace {

/// Appends an item: after `sep`, or directly when it starts with a space.
void append_item(std::string& out, const std::string& item, std::string_view sep) {
  if (item.empty()) return;
  if (!out.empty() && item.front() != ' ') out += sep;
  out += out.empty() && item.front() == ' ' ? item.substr(1) : item;
}

}  // namespace

std::string summary_line(const PlanSpec& p, SummaryGroup g) {
  std::string out;
  for (const auto& f : kFields)
    if (f.group == g) append_item(out, summary_text(f, p), g == SummaryGroup::kLayout ? " " : ", ");
  return out;
}

std::string plan_summary(const PlanSpec& p) {
  std::string out = summary_line(p, SummaryGroup::kTechnique);
  append_item(out, summary_line(p, SummaryGroup::kLayout), ", ");
  return out;
}

std::string summary_of(const PlanSpec& p, std::initializer_list<std::string_view> keys, std::string_view sep) {
  std::string out;
  for (auto k : keys)
    if (const PlanField* f = find_plan_field(k)) append_item(out, field_summary(*f, p), sep);
  return out;
}

}  // namespace ridgeline::spec
