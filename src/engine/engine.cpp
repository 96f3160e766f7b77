#include "ridgeline/engine/engine.hpp"
#include "ridgeline/engine/cost_memo.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>
#include <fmt/format.h>

#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/precision.hpp"
#include "ridgeline/support/text.hpp"
#include "ridgeline/techniques/params.hpp"
#include "ridgeline/techniques/passes.hpp"

namespace ridgeline::engine {

std::string_view name(Status s) {
  switch (s) {
    case Status::kOk: return "ok";
    case Status::kDoesNotFit: return "does_not_fit";
    case Status::kInvalid: return "invalid";
  }
  return "ok";
}

std::string_view name(TokensBasis b) {
  switch (b) {
    case TokensBasis::kPlan: return "plan";
    case TokensBasis::kChinchilla: return "chinchilla_20_per_param";
    case TokensBasis::kPerBillion: return "per_billion_tokens";
    case TokensBasis::kDataset: return "dataset_epoch";
  }
  return "plan";
}

double dualpipe_bubble_s(int pp, double f_and_b_s, double b_s, double w_s) {
  if (pp < 2) return 0;
  return std::max(0.0, (pp / 2.0 - 1) * (f_and_b_s + b_s - 3 * w_s));
}

double micro_batches(const spec::PlanSpec& p) {
  const double per_step = static_cast<double>(p.micro_batch) * std::max(1, p.parallel.dp);
  if (p.global_batch <= 0) return 1;
  return std::max(1.0, std::floor(p.global_batch / per_step));
}

namespace {

/// A refusal: names the field, and writes the message only when one is
/// asked for (`message` not null). A search checks every layout it
/// enumerates and reports one; formatting each refusal's message was over a
/// third of a wide search's time.
template <class Message>
std::string_view refuse(std::string* message, std::string_view field, Message&& make) {
  if (message) *message = make();
  return field;
}

/// Which of a plan's checks run: all; those that read none of the step
/// fields a search varies per layout of one graph (virtual stages, ZeRO,
/// offload); or those that read one.
enum class Scope : std::uint8_t { kAll, kGraph, kStep };

/// The frameworks whose profile offers `what`, as a list for a refusal.
std::string offering(bool spec::FrameworkSpec::*what) {
  std::vector<std::string_view> ids;
  for (const auto& f : spec::frameworks())
    if (f.*what) ids.push_back(f.id);
  return support::join_and(ids);
}

/// "deepspeed offers it", "megatron, deepspeed and torchtitan offer it".
std::string offers_it(bool spec::FrameworkSpec::*what) {
  int n = 0;
  for (const auto& f : spec::frameworks()) n += f.*what ? 1 : 0;
  return offering(what) + (n == 1 ? " offers it" : " offer it");
}

template <Scope scope>
std::string_view check_framework(const spec::ModelSpec& m, const spec::PlanSpec& p, std::string* message) {
  constexpr bool graph = scope != Scope::kStep, step = scope != Scope::kGraph;
  const spec::FrameworkSpec& fw = spec::framework(p.framework);
  const auto& q = p.parallel;
  if (graph && p.cross_entropy_given && p.cross_entropy == spec::CrossEntropy::kChunked && !fw.chunked_cross_entropy)
    return refuse(message, "cross_entropy", [&] {
      return fmt::format("{} has no chunked cross-entropy (offered by {})", fw.id,
                         offering(&spec::FrameworkSpec::chunked_cross_entropy));
    });
  // DeepSpeed's PipelineEngine: "ZeRO-2 and ZeRO-3 are incompatible with
  // pipeline parallelism"; Megatron: the distributed optimizer is ZeRO-1 and
  // its FSDP paths refuse PP (frameworks/NAME.yaml refuses.zero2_with_pp_why).
  if (step && fw.refuses_zero2_with_pp && q.pp > 1 && q.zero >= 2)
    return refuse(message, "parallel.zero", [&] {
      return fmt::format("{} refuses ZeRO-{} with pipeline parallelism (PP {}): {}; use ZeRO-1", fw.id, q.zero, q.pp,
                         fw.zero2_with_pp_why.empty() ? "it does not run them together" : fw.zero2_with_pp_why);
    });
  // A framework without tensor or pipeline parallelism (the Hugging Face
  // Trainer: data parallelism and ZeRO only).
  if (graph && ((fw.refuses_tp && q.tp > 1) || (fw.refuses_pp && q.pp > 1))) {
    const bool tp = fw.refuses_tp && q.tp > 1;
    return refuse(message, tp ? "parallel.tp" : "parallel.pp", [&] {
      return fmt::format("{} runs no {} parallelism ({} {}): {}; use {} 1 and DP (with ZeRO) for the GPUs, or "
                         "another --framework",
                         fw.id, tp ? "tensor" : "pipeline", tp ? "TP" : "PP", tp ? q.tp : q.pp,
                         fw.model_parallel_why.empty() ? "it has none" : fw.model_parallel_why, tp ? "--tp" : "--pp");
    });
  }
  // torchtitan's TP shards the KV heads: TP must divide them.
  if (graph && fw.refuses_tp_beyond_kv_heads && q.tp > 1 && m.kv_heads % q.tp != 0)
    return refuse(message, "parallel.tp", [&] {
      return fmt::format("{} refuses TP {} with {} KV heads: its tensor parallelism shards the KV heads, so TP must "
                         "divide them",
                         fw.id, q.tp, m.kv_heads);
    });
  // Megatron's interleaved 1F1B: the micro-batches must divide into PP groups.
  if (step && fw.interleave_needs_divisible_microbatches && q.virtual_stages > 1) {
    const double mb = micro_batches(p);
    if (std::fmod(mb, q.pp) != 0)
      return refuse(message, "parallel.virtual_stages", [&] {
        return fmt::format(
            "{} refuses the interleaved schedule with {:.0f} micro-batches: the number of "
            "micro-batches must be a multiple of PP {}",
            fw.id, mb, q.pp);
      });
  }
  // The recompute policies the framework offers, under its names (every:K
  // stands for any K). The message is built only for a refused plan.
  if (graph && !fw.recompute.empty()) {
    bool ok = false;
    for (const spec::RecomputeKind k : fw.recompute_kinds) ok = ok || k == p.recompute.kind;
    // block:K is offered only where the framework names it (Megatron's --recompute-method block).
    if (ok && p.recompute.block_layers > 0) {
      ok = false;
      for (const auto& r : fw.recompute) ok = ok || r.maps_to.starts_with("block:");
    }
    if (!ok)
      return refuse(message, "recompute", [&] {
        std::string offered;
        for (const auto& r : fw.recompute)
          offered += (offered.empty() ? "" : ", ") + r.name + (r.name == r.maps_to ? "" : " (" + r.maps_to + ")");
        return fmt::format("{} offers recompute {}; {} is not one of them", fw.id, offered,
                           spec::to_string(p.recompute));
      });
  }
  return {};
}

/// CPU offload and the optimizer's memory savers (optimizer.in_backward,
/// optimizer.paged): what the framework offers (frameworks/NAME.yaml
/// offload:, optimizer_in_backward:, paged_optimizer:), the ZeRO stages and
/// layouts they need and what is modelled.
std::string_view check_offload(const spec::PlanSpec& p, std::string* message) {
  const spec::OffloadSpec& o = p.offload;
  const spec::OptimizerKind kind = p.optimizer.kind;
  const spec::FrameworkSpec& fw = spec::framework(p.framework);
  if (p.optimizer.in_backward && !fw.optimizer_in_backward)
    return refuse(message, "optimizer.in_backward", [&] {
      return fmt::format("{} steps the optimizer after the backward, not in it (offered by {})", fw.id,
                         offering(&spec::FrameworkSpec::optimizer_in_backward));
    });
  if (p.optimizer.paged && !fw.paged_optimizer)
    return refuse(message, "optimizer.paged", [&] {
      return fmt::format("{} builds its own optimizer, not bitsandbytes' paged ones (offered by {})", fw.id,
                         offering(&spec::FrameworkSpec::paged_optimizer));
    });
  // torchtitan build_optimizers: "Optimizers in backward is not supported
  // with pipeline parallelism" (and with expert parallelism).
  if (p.optimizer.in_backward && (p.parallel.pp > 1 || p.parallel.ep > 1))
    return refuse(message, "optimizer.in_backward", [&] {
      return fmt::format("optimizer in backward is not supported with {} parallelism (torchtitan build_optimizers)",
                         p.parallel.pp > 1 ? "pipeline" : "expert");
    });
  // torchtune (recipes/full_finetune_single_device.py): "Gradient
  // accumulation is not supported with optimizer in bwd": each gradient is
  // freed after its step.
  if (p.optimizer.in_backward && micro_batches(p) > 1)
    return refuse(message, "optimizer.in_backward", [&] {
      return fmt::format("optimizer in backward frees each gradient after its step: it needs one micro-batch per "
                         "step, got {:.0f} (a global batch of {} over micro-batch {} x DP {})",
                         micro_batches(p), p.global_batch, p.micro_batch, p.parallel.dp);
    });
  // bitsandbytes pages the states of its Adam, AdamW (8- and 32-bit) and
  // Lion optimizers (bitsandbytes/optim: PagedAdam, PagedAdamW,
  // PagedAdamW8bit, PagedAdam8bit, PagedLion, PagedLion8bit).
  if (p.optimizer.paged && kind != spec::OptimizerKind::kAdam && kind != spec::OptimizerKind::kAdamW &&
      kind != spec::OptimizerKind::kAdam8bit && kind != spec::OptimizerKind::kLion)
    return refuse(message, "optimizer.paged", [&] {
      return fmt::format("paged optimizer state is bitsandbytes' (adam, adamw, adam8bit, lion), not {}",
                         spec::to_string(kind));
    });
  if (p.optimizer.paged && o.optimizer_on_cpu())
    return refuse(message, "optimizer.paged", [&] {
      return std::string("paged optimizer state and optimizer CPU offload both move the state off the GPU; "
                         "choose one");
    });
  if (o.activations_on_cpu() && !fw.offload_activations)
    return refuse(message, "offload.activations", [&] {
      return fmt::format("{} has no activation offloading (offered by {})", fw.id,
                         offering(&spec::FrameworkSpec::offload_activations));
    });
  // torchtune's recipes, whose offloading this is, have no pipeline
  // parallelism; a pipeline's in-flight micro-batches are not modelled offloaded.
  if (o.activations_on_cpu() && p.parallel.pp > 1)
    return refuse(message, "offload.activations", [&] {
      return fmt::format("activation offloading is modelled without pipeline parallelism (torchtune's recipes), "
                         "got PP {}", p.parallel.pp);
    });
  if (!o.any()) return {};
  if (o.optimizer_on_cpu() && !fw.offload_optimizer)
    return refuse(message, "offload.optimizer", [&] {
      return fmt::format("{} has no optimizer CPU offload; {}", fw.id,
                         offers_it(&spec::FrameworkSpec::offload_optimizer));
    });
  if (o.params_on_cpu() && !fw.offload_params)
    return refuse(message, "offload.params", [&] {
      return fmt::format("{} has no parameter CPU offload; {}", fw.id,
                         offers_it(&spec::FrameworkSpec::offload_params));
    });
  // DeepSpeed's config reference: offload_param "Valid only with stage 3";
  // offload_optimizer "Valid for ZeRO stage 1, 2, 3" (Megatron-Core: with
  // the distributed optimizer, ZeRO-1 here).
  if (o.params_on_cpu() && p.parallel.zero < 3)
    return refuse(message, "offload.params", [&] {
      return fmt::format("parameter offload needs ZeRO-3 (ZeRO-Infinity), got ZeRO-{}", p.parallel.zero);
    });
  if (o.optimizer_on_cpu() && p.parallel.zero < 1)
    return refuse(message, "offload.optimizer", [&] {
      return std::string(
          "optimizer offload needs ZeRO stage 1, 2 or 3 (the distributed optimizer), "
          "got ZeRO-0");
    });
  if (o.params_on_cpu() && !o.optimizer_on_cpu())
    return refuse(message, "offload.params", [&] {
      return std::string(
          "parameter offload without optimizer offload is not modelled; set offload.optimizer "
          "to cpu as well");
    });
  if (o.optimizer_on_cpu() && kind != spec::OptimizerKind::kAdam && kind != spec::OptimizerKind::kAdamW)
    return refuse(message, "offload.optimizer", [&] {
      return fmt::format("optimizer offload is modelled for adam and adamw (CPU Adam), not {}",
                         spec::to_string(kind));
    });
  return {};
}

template <Scope scope = Scope::kAll>
std::string_view check_plan_into(const spec::ModelSpec& m, const spec::PlanSpec& p, const spec::HardwareSpec& hw,
                                 std::string* message) {
  // Each check runs in the scope of the fields it reads: kStep where it
  // reads a step field (virtual stages, ZeRO, offload), else kGraph.
  constexpr bool graph = scope != Scope::kStep, step = scope != Scope::kGraph;
  // Without a message (check_plan_field and its halves, a search's checks)
  // the framework's and offload's refusals come first: most of a wide
  // search's refusals, read from a handful of fields. A plan refused here
  // is refused either way; only check_plan names the first problem in order.
  const bool framework_first = message == nullptr;
  if (framework_first) {
    if (const auto f = check_framework<scope>(m, p, nullptr); !f.empty()) return f;
    if constexpr (step)
      if (const auto f = check_offload(p, nullptr); !f.empty()) return f;
  }
  const auto& q = p.parallel;
  const int seq = graph::seq_len(m, p);
  if (graph && p.micro_batch < 1)
    return refuse(message, "micro_batch", [&] { return std::string("expected a micro-batch of at least 1"); });
  if (graph && seq < 1)
    return refuse(message, "seq_len", [&] { return std::string("expected a sequence length of at least 1"); });
  if (graph && p.packed_doc_len > seq)
    return refuse(message, "packed_doc_len", [&] { return spec::packed_docs_problem(p.packed_doc_len, seq); });
  if (graph && p.global_batch > 0 && p.micro_batch > p.global_batch)
    return refuse(message, "micro_batch", [&] {
      return fmt::format("micro-batch {} exceeds the global batch {}", p.micro_batch, p.global_batch);
    });
  // Latent attention has no fused QKV projection: the adapters and the
  // op-level recomputation policy, which name Q, K and V, are not modelled on it.
  if (graph && m.is_mla() && p.finetune.mode != spec::FinetuneMode::kFull)
    return refuse(message, "finetune", [&] {
      return std::string("LoRA adapters on multi-head latent attention are not yet modelled");
    });
  if (graph && m.is_mla() && p.recompute.kind == spec::RecomputeKind::kOp)
    return refuse(message, "recompute", [&] {
      return std::string("op-level recomputation of multi-head latent attention is not yet modelled");
    });
  if (graph && (q.tp < 1 || q.pp < 1 || q.dp < 1 || q.cp < 1 || q.ep < 1))
    return refuse(message, "parallel", [&] { return std::string("parallel degrees must be at least 1"); });
  // Ranges: beyond these the run is not one training job (and 32-bit products overflow).
  constexpr long long kMaxGpus = 10'000'000;
  if (graph && q.gpus() > kMaxGpus)
    return refuse(message, "parallel", [&] {
      return fmt::format("DP x TP x PP x CP = {} GPUs is out of range (at most {})", q.gpus(), kMaxGpus);
    });
  if (graph && static_cast<long long>(p.micro_batch) * seq > (1LL << 40))
    return refuse(message, "micro_batch", [&] {
      return fmt::format("micro-batch x sequence = {} tokens is out of range",
                         static_cast<long long>(p.micro_batch) * seq);
    });
  if (step && (q.virtual_stages < 1 || q.virtual_stages > m.layers))
    return refuse(message, "parallel.virtual_stages",
                  [&] { return fmt::format("expected 1 to {} virtual stages, got {}", m.layers, q.virtual_stages); });
  if (graph && (p.tokens < 0 || p.tokens > 1e18))
    return refuse(message, "tokens",
                  [&] { return fmt::format("{:g} tokens is out of range (at most 1e18)", p.tokens); });
  if (graph && m.heads % q.tp != 0)
    return refuse(message, "parallel.tp",
                  [&] { return fmt::format("TP {} does not divide {} attention heads", q.tp, m.heads); });
  if (graph && m.kv_heads % q.tp != 0 && q.tp % m.kv_heads != 0)
    return refuse(message, "parallel.tp", [&] {
      return fmt::format("TP {} does not divide {} KV heads (nor do they divide it)", q.tp, m.kv_heads);
    });
  if (graph && m.ffn_hidden % q.tp != 0)
    return refuse(message, "parallel.tp",
                  [&] { return fmt::format("TP {} does not divide the FFN size {}", q.tp, m.ffn_hidden); });
  const bool uneven = q.first_stage_layers > 0 || q.last_stage_layers > 0;
  if (uneven) {
    if constexpr (graph)
      if (auto e = spec::check_stage_layers(m.layers, q.pp, q.first_stage_layers, q.last_stage_layers); !e.empty())
        return refuse(message, q.first_stage_layers > 0 ? "parallel.first_stage_layers" : "parallel.last_stage_layers",
                      [&] { return std::string(e); });
    // Virtual stages over uneven stages: the busiest stage sets the pace,
    // and its layers must split into equal chunks for the interleaved
    // schedule's bubble (engine::finish_time) to be its; a lighter end
    // stage's chunks may hold one layer fewer, as Megatron-Core's
    // --account-for-embedding-in-pipeline-split and
    // --account-for-loss-in-pipeline-split build them (transformer_block.py
    // get_num_layers_to_build: the embedding or loss counts as a layer of
    // the first or last chunk).
    if (step && q.virtual_stages > 1) {
      const int busiest = spec::max_stage_layers(m.layers, q.pp, q.first_stage_layers, q.last_stage_layers);
      if (busiest % q.virtual_stages != 0)
        return refuse(message, "parallel.virtual_stages", [&] {
          return fmt::format("uneven pipeline stages with virtual stages: the busiest stage's {} layers do not "
                             "split into {} virtual stages",
                             busiest, q.virtual_stages);
        });
    }
  }
  const long long stages = static_cast<long long>(q.pp) * std::max(1, q.virtual_stages);
  if (step && !uneven && m.layers % stages != 0 && spec::framework(p.framework).refuses_indivisible_layers)
    return refuse(message, "parallel.pp", [&] {
      return q.virtual_stages > 1
                 ? fmt::format("PP {} x {} virtual stages does not divide {} layers", q.pp, q.virtual_stages, m.layers)
                 : fmt::format("PP {} does not divide {} layers{}", q.pp, m.layers,
                               spec::stage_split_hint(m.layers, q.pp));
    });
  if (step && q.virtual_stages > 1 && q.pp == 1)
    return refuse(message, "parallel.virtual_stages",
                  [&] { return std::string("virtual pipeline stages need PP > 1"); });
  // DualPipe (github deepseek-ai/DualPipe dualpipe/dualpipe.py:332-333,
  // DualPipe.step): `assert num_ranks % 2 == 0` and `num_chunks % 2 == 0 and
  // num_chunks >= num_ranks * 2`; its two directions are two mirrored stages
  // per GPU, not virtual stages.
  if (step && q.pp_schedule == spec::PpSchedule::kDualPipe) {
    if (q.pp < 2 || q.pp % 2 != 0)
      return refuse(message, "parallel.pp_schedule",
                    [&] { return fmt::format("dualpipe needs an even PP of at least 2, got PP {}", q.pp); });
    if (q.virtual_stages > 1)
      return refuse(message, "parallel.pp_schedule", [&] {
        return fmt::format("dualpipe holds two mirrored stages per GPU, not virtual stages; got {} virtual stages",
                           q.virtual_stages);
      });
    const double n = micro_batches(p);
    if (std::fmod(n, 2.0) != 0 || n < 2.0 * q.pp)
      return refuse(message, "parallel.pp_schedule", [&] {
        return fmt::format("dualpipe needs an even number of micro-batches of at least 2 x PP = {}, got {:g}",
                           2 * q.pp, n);
      });
  }
  if (graph && seq % q.cp != 0)
    return refuse(message, "parallel.cp",
                  [&] { return fmt::format("CP {} does not divide the sequence length {}", q.cp, seq); });
  // megatron/core/transformer/transformer_config.py: "overlap_moe_expert_parallel_comm
  // is only supported with expert model parallelism".
  if (graph && q.ep_comm_overlap && q.ep <= 1)
    return refuse(message, "parallel.ep_comm_overlap",
                  [&] { return std::string("overlapping the expert all-to-alls needs expert parallelism (EP > 1)"); });
  // megatron/core/transformer/transformer_config.py: moe_shared_expert_overlap
  // needs shared experts (moe_shared_expert_intermediate_size) and overlaps
  // them with the token dispatcher's communication.
  if (graph && p.moe.shared_expert_overlap && (q.ep <= 1 || m.moe.shared_ffn <= 0))
    return refuse(message, "moe.shared_expert_overlap", [&] {
      return std::string(q.ep <= 1 ? "overlapping the shared expert with the all-to-alls needs expert parallelism (EP > 1)"
                                   : "overlapping the shared expert needs a model with a shared expert");
    });
  if (graph && q.ep > 1) {
    if (!m.is_moe())
      return refuse(message, "parallel.ep",
                    [&] { return std::string("expert parallelism needs a mixture-of-experts model"); });
    if (m.moe.experts % q.ep != 0)
      return refuse(message, "parallel.ep",
                    [&] { return fmt::format("EP {} does not divide {} experts", q.ep, m.moe.experts); });
    if ((q.dp * q.cp) % q.ep != 0)
      return refuse(message, "parallel.ep",
                    [&] { return fmt::format("EP {} must divide DP x CP = {}", q.ep, q.dp * q.cp); });
  }
  if (graph && p.global_batch > 0 && p.global_batch % (static_cast<long long>(p.micro_batch) * q.dp) != 0)
    return refuse(message, "global_batch", [&] {
      return fmt::format("global batch {} is not a multiple of micro-batch x DP = {} x {}", p.global_batch,
                         p.micro_batch, q.dp);
    });
  if (graph && p.precision == spec::Precision::kFp8 && !hw.supports(spec::Peak::kFp8))
    return refuse(message, "precision",
                  [&] { return fmt::format("fp8 needs fp8 tensor cores; {} has none", hw.name); });
  // MXFP8 and NVFP4 GEMMs need tensor cores that apply block scales inside
  // the MMA (Blackwell's tcgen05 block-scaled MMA); an fp4 peak of 0 is a
  // profile that does not state one.
  const bool blackwell = hw.generation == spec::Generation::kBlackwell;
  if (graph && p.precision == spec::Precision::kFp8 && p.fp8_recipe == spec::Fp8Recipe::kMxfp8 && !blackwell)
    return refuse(message, "fp8.recipe", [&] {
      return fmt::format("mxfp8 needs Blackwell block-scaled tensor cores; {} is {}", hw.name,
                         spec::name(hw.generation));
    });
  if (graph && p.precision == spec::Precision::kNvfp4 && !blackwell)
    return refuse(message, "precision", [&] {
      return fmt::format("nvfp4 needs Blackwell block-scaled tensor cores; {} is {}", hw.name,
                         spec::name(hw.generation));
    });
  if (graph && p.precision == spec::Precision::kNvfp4 && !hw.supports(spec::Peak::kFp4))
    return refuse(message, "precision",
                  [&] { return fmt::format("nvfp4 needs an fp4 peak; the {} profile gives none", hw.name); });
  // The remainder master completes a bf16 weight to fp32 (bf16 is fp32's
  // high 16 bits); an fp16 weight is not.
  if (graph && p.master_weights == spec::MasterWeights::kRemainder && p.precision == spec::Precision::kFp16)
    return refuse(message, "master_weights", [&] {
      return std::string("remainder masters complete bf16 weights to fp32 (bf16 is fp32's high 16 bits); fp16 "
                         "weights need fp32 masters");
    });
  if (graph && p.fp8_primary_weights && p.precision != spec::Precision::kFp8)
    return refuse(message, "fp8.primary_weights", [&] {
      return fmt::format("fp8 primary weights need --precision fp8, not {}", spec::to_string(p.precision));
    });
  // torchao's Float8Linear (rowwise; tensorwise under torchtitan)
  // quantizes the 16-bit weights in every forward and backward
  // (spec::quant_recipe): there are no fp8 weights to hold.
  if (graph && p.fp8_primary_weights && spec::torchao_float8(p))
    return refuse(message, "fp8.primary_weights", [&] {
      return fmt::format("the {} recipe (torchao) casts the 16-bit weights every micro-batch; it holds no fp8 "
                         "primary weights", spec::to_string(p.fp8_recipe));
    });
  // DeepSeek-V3's storage rides on its fine-grained (1x128) quantization.
  if (graph && p.fp8_activation_storage &&
      (p.precision != spec::Precision::kFp8 || p.fp8_recipe != spec::Fp8Recipe::kBlockwise))
    return refuse(message, "fp8.activation_storage", [&] {
      return p.precision != spec::Precision::kFp8
                 ? fmt::format("fp8 activation storage needs --precision fp8, not {}", spec::to_string(p.precision))
                 : fmt::format("fp8 activation storage is DeepSeek-V3's, on its 1x128 blockwise quantization: it "
                               "needs --fp8-recipe blockwise, not {}",
                               spec::to_string(p.fp8_recipe));
    });
  if (graph && p.fp8_primary_weights && p.master_weights == spec::MasterWeights::kRemainder)
    return refuse(message, "master_weights", [&] {
      return std::string("remainder masters complete a bf16 weight; fp8 primary weights keep none: use fp32 or none");
    });
  if (graph && p.precision == spec::Precision::kTf32 && !hw.supports(spec::Peak::kTf32))
    return refuse(message, "precision", [&] { return fmt::format("tf32 is not supported on {}", hw.name); });
  // FlashAttention-3 is written for Hopper's wgmma and TMA (Shah et al. 2024, Sec. 3).
  if (graph && p.attention == spec::AttentionKind::kFlash3 && !hw.has_fa3())
    return refuse(message, "attention", [&] {
      return fmt::format("flash3 needs Hopper (wgmma and TMA); {} is {}", hw.name, spec::name(hw.generation));
    });
  if (p.recompute.block_layers > 0) {
    if (step && q.virtual_stages > 1)
      return refuse(message, "recompute",
                    [&] { return std::string("block recomputation with virtual pipeline stages is not modelled"); });
    const int most = spec::max_stage_layers(m.layers, q.pp, q.first_stage_layers, q.last_stage_layers);
    if (graph && p.recompute.block_layers > most)
      return refuse(message, "recompute", [&] {
        return fmt::format("block:{} recomputes more layers than a stage holds ({})", p.recompute.block_layers, most);
      });
  }
  if (graph && p.finetune.mode != spec::FinetuneMode::kFull && p.finetune.rank > m.hidden)
    return refuse(message, "finetune.rank",
                  [&] { return fmt::format("LoRA rank {} exceeds the hidden size {}", p.finetune.rank, m.hidden); });
  if (!framework_first) {
    if (const auto f = check_framework<scope>(m, p, message); !f.empty()) return f;
    if constexpr (step)
      if (const auto f = check_offload(p, message); !f.empty()) return f;
  }
  // QLoRA's NF4 base is dequantized to bf16 before every GEMM (bitsandbytes):
  // no fp8 GEMM inputs without a permanent fp8 copy of the base weights.
  if (graph && p.finetune.mode == spec::FinetuneMode::kQlora &&
      (p.precision == spec::Precision::kFp8 || p.precision == spec::Precision::kNvfp4))
    return refuse(message, "precision", [&] {
      return fmt::format(
          "qlora with {} is not supported: the NF4 base weights are dequantized to "
          "bf16 for every GEMM",
          spec::to_string(p.precision));
    });
  return {};
}

}  // namespace

Problem check_plan(const spec::ModelSpec& m, const spec::PlanSpec& p, const spec::HardwareSpec& hw) {
  Problem out;
  if (const auto field = check_plan_into(m, p, hw, &out.message); !field.empty()) out.field = field;
  return out;
}

std::string_view check_plan_field(const spec::ModelSpec& m, const spec::PlanSpec& p, const spec::HardwareSpec& hw) {
  return check_plan_into(m, p, hw, nullptr);
}

std::string_view check_graph_field(const spec::ModelSpec& m, const spec::PlanSpec& p, const spec::HardwareSpec& hw) {
  return check_plan_into<Scope::kGraph>(m, p, hw, nullptr);
}

std::string_view check_step_field(const spec::ModelSpec& m, const spec::PlanSpec& p, const spec::HardwareSpec& hw) {
  return check_plan_into<Scope::kStep>(m, p, hw, nullptr);
}

namespace {

/// Adds one costed kernel to the running sums; per-micro-batch kernels go to
/// the micro-batch phase sums, per-step ones to the step sums.
void accumulate(KernelSums& s, const graph::Kernel& k, const cost::KernelCost& kc, double layer_scale) {
  const bool per_step = k.has(graph::kPerStep);
  const double t = kc.time_s * k.count;  // per micro-batch (or per step)
  const bool is_comm = k.cls == spec::KernelClass::kCollective || k.cls == spec::KernelClass::kP2p;
  if (per_step) {
    s.class_step_s[static_cast<int>(k.cls)] += t;
    s.phase_step_s[static_cast<int>(k.phase)] += t;
    if (kc.bound == cost::Bound::kCompute) s.compute_bound_step_s += t;
  } else {
    s.class_s[static_cast<int>(k.cls)] += t;
    s.phase_s[static_cast<int>(k.phase)] += t;
    if (kc.bound == cost::Bound::kCompute) s.compute_bound_s += t;
  }
  if (is_comm) {
    if (!per_step && (k.comm.kind == graph::Collective::kAllToAll || k.comm.kind == graph::Collective::kNodeAllToAll))
      s.all_to_all_s += t;
    if (!per_step) {
      if (k.has(graph::kOverlapped)) {
        s.overlappable_comm_s += t;
        s.overlappable_comm_sm_s += kc.sm_fraction * t;
        s.overlappable_comm_gemm_s += kc.gemm_overlap_loss * t;
      } else if (k.has(graph::kBesideSharedExpert) &&
                 (k.phase == spec::Phase::kForward || k.phase == spec::Phase::kBackward)) {
        const int i = k.phase == spec::Phase::kForward ? 0 : 1;
        s.beside_shared_comm_s[i] += t;
        s.beside_shared_sm_s[i] += kc.sm_fraction * t;
        s.beside_shared_gemm_s[i] += kc.gemm_overlap_loss * t;
      } else {
        s.exposed_comm_s += t;
      }
    }
    return;
  }
  if (per_step) {
    s.t_step_fixed += t;
    return;
  }
  switch (k.phase) {
    case spec::Phase::kForward: s.t_fwd += t; break;
    case spec::Phase::kBackward:
      s.t_bwd += t;
      // A weight's gradient GEMM (graph/backward.cpp wgrad_name: "<op>.wgrad";
      // the activation-activation GEMMs' second gradients are "dgrad_k/_v").
      if (k.cls == spec::KernelClass::kGemm && k.has(graph::kHasWeight) && k.name.ends_with(".wgrad"))
        s.t_wgrad += t;
      break;
    case spec::Phase::kRecompute: s.t_rec += t; break;
    default: s.t_step_fixed += t; break;
  }
  if (k.cls == spec::KernelClass::kGemm || k.cls == spec::KernelClass::kAttention) s.window_s += t;
  if (k.cls == spec::KernelClass::kGemm) s.gemm_window_s += t;
  if (k.has(graph::kSharedExpert) && (k.phase == spec::Phase::kForward || k.phase == spec::Phase::kBackward)) {
    const int i = k.phase == spec::Phase::kForward ? 0 : 1;
    s.shared_window_s[i] += t;
    if (k.cls == spec::KernelClass::kGemm) s.shared_gemm_window_s[i] += t;
  }
  const double scale = k.has(graph::kLayer) ? layer_scale : 1.0;
  if (k.phase == spec::Phase::kRecompute) s.recompute_flop += k.model_flops * k.count * scale;
  else s.model_flop += k.model_flops * k.count * scale;
  s.hardware_flop += k.flops * k.count * scale;
}

void keep(Prediction& out, const graph::Kernel& k, const cost::KernelCost& kc, double mb) {
  const double n = k.has(graph::kPerStep) ? k.count : k.count * mb;
  KernelResult r;
  r.name = k.name;
  r.phase = k.phase;
  r.cls = k.cls;
  r.dtype = k.dtype;
  r.count = n;
  r.flops = k.flops;
  r.hbm_bytes = k.hbm_bytes();
  r.intensity = k.intensity();
  r.bound = kc.bound;
  r.time_s = kc.time_s * n;
  r.gemm = k.gemm;
  r.compute_s = kc.compute_s * n;
  r.blocks = kc.blocks;
  r.waves = kc.waves;
  r.comm_group = k.comm.group;
  r.comm_span = k.comm.span;
  r.overlapped = k.has(graph::kOverlapped);
  r.per_step = k.has(graph::kPerStep);
  out.kernels.push_back(r);
}

}  // namespace

bool same_cost_inputs(const graph::Kernel& a, const graph::Kernel& b) {
  // The bindings list every field of Kernel, so a field added to it stops
  // this compiling until it is placed on one side of `count` or the other.
  const auto& [name, op, phase, cls, dtype, group, attention, flags, gemm, comm, flops, model_flops, read_bytes,
               write_bytes, chain_bytes, sram_bytes, launches, weight_params, count, saved_bytes, saved_core_bytes,
               saved_fraction, workspace_bytes] = a;
  (void)name, (void)op, (void)phase, (void)cls, (void)dtype, (void)group, (void)attention, (void)flags, (void)gemm;
  (void)comm, (void)flops, (void)model_flops, (void)read_bytes, (void)write_bytes, (void)chain_bytes;
  (void)sram_bytes, (void)launches, (void)weight_params, (void)count, (void)saved_bytes, (void)saved_core_bytes;
  (void)saved_fraction, (void)workspace_bytes;
  // The cost inputs are the bytes before `count`: their sizes add up to its
  // offset, so no padding lies among them, and they compare bytewise. Equal
  // bytes are equal inputs (names are string literals: the same text is the
  // same pointer); unequal bytes of equal values (-0 and 0; a copied name)
  // only cost the kernel again.
  constexpr size_t kInputs = sizeof(std::string_view) + 6 * sizeof(std::uint8_t) + sizeof(std::uint16_t) +
                             sizeof(graph::GemmShape) + sizeof(graph::CollectiveSpec) + 8 * sizeof(double);
  static_assert(sizeof(graph::GemmShape) == 4 * sizeof(double));
  static_assert(sizeof(graph::CollectiveSpec) == 6 * 8);
  static_assert(offsetof(graph::Kernel, count) == kInputs, "padding or a new field among Kernel's cost inputs");
  return std::memcmp(&a, &b, kInputs) == 0;
}

namespace {

/// Kernel i's cost: the memo's when its inputs are the kept kernel's, else costed and kept.
cost::KernelCost memo_cost(CostMemo& memo, size_t i, const graph::Kernel& k, const cost::CostParams& c,
                           bool cuda_graphs) {
  if (i < memo.kernels.size() && same_cost_inputs(memo.kernels[i], k)) {
    ++memo.reused;
    return memo.costs[i];
  }
  const cost::KernelCost kc = cost::cost_kernel(k, c, cuda_graphs, &memo.cache);
  ++memo.costed;
  if (i >= memo.kernels.size()) {
    memo.kernels.resize(i + 1);
    memo.costs.resize(i + 1);
  }
  memo.kernels[i] = k;
  memo.costs[i] = kc;
  return kc;
}

}  // namespace

void summarize_graph(MicrobatchSummary& s, graph::Graph& g, const spec::ModelSpec& m, const spec::MicrobatchPlan& p,
                     const spec::HardwareSpec& hw, const techniques::StageParams* params, const graph::Graph* base) {
  // Every field is set below (the sums by sum_costs, zeroed here until
  // then); zeroing the whole summary wrote its 1.9 KB of stage parameters twice.
  static_cast<KernelSums&>(s) = KernelSums{};
  if (base) {
    g = *base;  // the caller's techniques::build_microbatch_base of this plan
    techniques::finish_microbatch(g, m, p, hw);
  } else {
    techniques::build_microbatch(g, m, p, hw);
  }
  s.facts = memory::facts(g);
  const spec::ParamCounts pc = spec::count_params(m);
  if (params) s.params = *params;
  else techniques::stage_params_into(s.params, m, p, pc);
  s.model_params = pc;
}

namespace {

/// Every kernel of `g` costed (kept in `memo` when given, as kernel rows in
/// `out`) and summed in graph order.
void sum_costs(KernelSums& s, const graph::Graph& g, const spec::ModelSpec& m, const spec::MicrobatchPlan& p,
               const cost::CostParams& c, Prediction* out, double mb, CostMemo* memo, cost::KernelCache* cache) {
  s = KernelSums{};
  // The graph's layers (the busiest stage's, with the MTP blocks where they
  // are timed: graph::build_forward) scale to the model's and its MTP blocks.
  const double layer_scale = static_cast<double>(m.layers + g.mtp_layers) / std::max(1, g.layers);
  if (out) out->kernels.reserve(g.kernels.size() + 8);
  if (memo && (memo->params != &c || memo->cuda_graphs != p.cuda_graphs)) {
    memo->kernels.clear();
    memo->costs.clear();
    memo->params = &c;
    memo->cuda_graphs = p.cuda_graphs;
  }
  double launches = 0;
  for (size_t i = 0; i < g.kernels.size(); ++i) {
    const graph::Kernel& k = g.kernels[i];
    const cost::KernelCost kc =
        memo ? memo_cost(*memo, i, k, c, p.cuda_graphs) : cost::cost_kernel(k, c, p.cuda_graphs, cache);
    accumulate(s, k, kc, layer_scale);
    if (out) keep(*out, k, kc, mb);
    if (!k.has(graph::kPerStep)) launches += k.launches * k.count;
  }
  // The host dispatches every launched op (Python, autograd, framework
  // hooks); it runs ahead of the GPU, so a micro-batch takes at least its
  // dispatch time. CUDA graphs replay the step without the host.
  const spec::FrameworkSpec& fw = spec::framework(p.framework);
  const double dispatch = p.cuda_graphs ? 0.0 : p.fusion == spec::Fusion::kCompiled ? fw.dispatch_compiled_s
                                                                                      : fw.dispatch_s;
  s.host_s = launches * dispatch;
}

}  // namespace

void summarize_microbatch(MicrobatchSummary& s, graph::Graph& g, const spec::ModelSpec& m,
                          const spec::MicrobatchPlan& p, const spec::HardwareSpec& hw, const cost::CostParams& c,
                          Prediction* out, double mb, cost::KernelCache* cache) {
  summarize_graph(s, g, m, p, hw, nullptr, nullptr);
  sum_costs(s, g, m, p, c, out, mb, nullptr, cache);
}

void summarize_microbatch(MicrobatchSummary& s, graph::Graph& g, const spec::ModelSpec& m,
                          const spec::MicrobatchPlan& p, const spec::HardwareSpec& hw, const cost::CostParams& c,
                          CostMemo& memo, const techniques::StageParams* params, const graph::Graph* base) {
  summarize_graph(s, g, m, p, hw, params, base);
  sum_costs(s, g, m, p, c, nullptr, 1, &memo, nullptr);
}

void summarize_costs(MicrobatchSummary& s, const graph::Graph& g, const spec::ModelSpec& m,
                     const spec::MicrobatchPlan& p, const cost::CostParams& c, CostMemo& memo) {
  sum_costs(s, g, m, p, c, nullptr, 1, &memo, nullptr);
}

namespace {

/// The compute an overlapped collective slows (overlap_exposed_s): the
/// window's GEMMs lose gemm_s, the rest of it (attention) sm_s.
double overlap_contention_s(double sm_s, double gemm_s, double window_s, double gemm_window_s) {
  const double gemm_share = window_s > 0 ? gemm_window_s / window_s : 0.0;
  return sm_s + gemm_share * (gemm_s - sm_s);
}

}  // namespace

double overlap_exposed_s(double comm_s, double sm_s, double gemm_s, double window_s, double gemm_window_s) {
  return std::max(std::max(0.0, comm_s - window_s), overlap_contention_s(sm_s, gemm_s, window_s, gemm_window_s));
}

void finish_memory(Prediction& out, const MicrobatchSummary& sum, const spec::ModelSpec& m, const spec::PlanSpec& p,
                   const spec::HardwareSpec& hw, const memory::StageStates* states) {
  memory::estimate_into(out.memory, sum.facts, m, p, hw, micro_batches(p), sum.params, states);
  out.params = sum.model_params;
  out.trainable_params = sum.params.largest().model_trainable;
  out.status = out.memory.fits ? Status::kOk : Status::kDoesNotFit;
}

void finish(Prediction& out, const MicrobatchSummary& sum, StepKernels& step, const spec::ModelSpec& m,
            const spec::PlanSpec& p, const spec::HardwareSpec& hw, const cost::CostParams& c,
            const EvalOptions& opt) {
  finish_memory(out, sum, m, p, hw);
  build_step_kernels(step, sum, m, p, c, opt.cache);
  finish_time(out, sum, step, m, p, hw, opt);
}

void build_step_kernels(StepKernels& out, const MicrobatchSummary& sum, const spec::ModelSpec& m,
                        const spec::PlanSpec& p, const cost::CostParams& c, cost::KernelCache* cache) {
  // The layout-dependent kernels: pipeline p2p, DP/ZeRO collectives and the optimizer step.
  graph::Graph& sg = out.graph;
  sg.kernels.clear();
  sg.act_bytes = sum.facts.act_bytes;
  sg.layers = static_cast<int>(sum.facts.layers);
  sg.tokens = sum.facts.tokens;
  techniques::append_step_kernels(sg, m, p, sum.params.largest());  // local_params(m, p)
  out.costs.resize(sg.kernels.size());
  for (size_t i = 0; i < sg.kernels.size(); ++i)
    out.costs[i] = cost::cost_kernel(sg.kernels[i], c, p.cuda_graphs, cache);
}

void finish_time(Prediction& out, const MicrobatchSummary& sum, const StepKernels& sk, const spec::ModelSpec& m,
                 const spec::PlanSpec& p, const spec::HardwareSpec& hw, const EvalOptions& opt) {
  const auto& par = p.parallel;
  const double mb = micro_batches(p);
  const techniques::LocalParams& lp = sum.params.largest();  // local_params(m, p)
  KernelSums s = sum;  // the step kernels add to a copy of the sums alone
  const double layer_scale = (m.layers + sum.facts.mtp_layers) / std::max(1.0, sum.facts.layers);
  double pool_step = 0, comm_step = 0, pool_sm_step = 0, pool_gemm_step = 0;
  double fwd_pool_step = 0, fwd_pool_sm_step = 0, fwd_pool_gemm_step = 0;  // beside the next forward
  for (size_t i = 0; i < sk.graph.kernels.size(); ++i) {
    const graph::Kernel& k = sk.graph.kernels[i];
    const cost::KernelCost& kc = sk.costs[i];
    const bool is_comm = k.cls == spec::KernelClass::kCollective || k.cls == spec::KernelClass::kP2p;
    if (is_comm && k.has(graph::kPerStep) && k.has(graph::kNextForward)) {
      fwd_pool_step += kc.time_s * k.count;
      fwd_pool_sm_step += kc.sm_fraction * kc.time_s * k.count;
      fwd_pool_gemm_step += kc.gemm_overlap_loss * kc.time_s * k.count;
      s.class_step_s[static_cast<int>(k.cls)] += kc.time_s * k.count;
      s.phase_step_s[static_cast<int>(k.phase)] += kc.time_s * k.count;
    } else if (is_comm && k.has(graph::kPerStep)) {
      (k.has(graph::kOverlapped) ? pool_step : comm_step) += kc.time_s * k.count;
      if (k.has(graph::kOverlapped)) {
        pool_sm_step += kc.sm_fraction * kc.time_s * k.count;
        pool_gemm_step += kc.gemm_overlap_loss * kc.time_s * k.count;
      }
      s.class_step_s[static_cast<int>(k.cls)] += kc.time_s * k.count;
      s.phase_step_s[static_cast<int>(k.phase)] += kc.time_s * k.count;
    } else {
      accumulate(s, k, kc, layer_scale);
    }
    if (opt.keep_kernels) keep(out, k, kc, mb);
  }
  for (int i = 0; i < spec::kKernelClassCount; ++i) out.time_by_class[i] = s.class_s[i] * mb + s.class_step_s[i];
  for (int i = 0; i < spec::kPhaseCount; ++i) out.time_by_phase[i] = s.phase_s[i] * mb + s.phase_step_s[i];
  // Overlapped per-micro-batch communication (CP ring, ZeRO-3 prefetch, TP
  // overlap) hides behind the micro-batch's GEMM and attention time.
  // Overlap costs SMs (cost::KernelCost::sm_fraction): compute of length C
  // beside a collective of length T holding a fraction f of the SMs takes
  // max(T, C + f T), so the collective adds max(T - C, f T).
  // The GEMMs in the window lose gemm_overlap_loss of their throughput
  // (two waves of a persistent GEMM), the rest of it (attention) the SMs
  // the collective holds.
  auto overlap_cost = [&s](double sm_s, double gemm_s) {
    return overlap_contention_s(sm_s, gemm_s, s.window_s, s.gemm_window_s);
  };
  const double sm_cost = overlap_cost(s.overlappable_comm_sm_s, s.overlappable_comm_gemm_s);
  const double spill = std::max(0.0, s.overlappable_comm_s - s.window_s);  // what the window cannot hide
  // The all-to-alls beside the shared expert (moe.shared_expert_overlap):
  // what its kernels of the same phase cannot hide, or the SMs they cost.
  double beside_shared = 0;
  for (int i = 0; i < 2; ++i)
    if (s.beside_shared_comm_s[i] > 0)
      beside_shared += overlap_exposed_s(s.beside_shared_comm_s[i], s.beside_shared_sm_s[i], s.beside_shared_gemm_s[i],
                                         s.shared_window_s[i], s.shared_gemm_window_s[i]);
  const double exposed_per_microbatch =
      s.exposed_comm_s + std::max(spill, sm_cost) + beside_shared;  // overlap_exposed_s
  const double t_kernels = s.t_fwd + s.t_bwd + s.t_rec + exposed_per_microbatch;
  const double t_microbatch = std::max(t_kernels, s.host_s);
  // Pipeline bubble. 1F1B (Narayanan et al. 2021): (p - 1) / (v m) of the
  // ideal time, i.e. (p - 1)(F + B) at v = 1. DualPipe (dualpipe_bubble_s):
  // F&B is the engine's micro-batch (a forward and a backward with their
  // overlap), B the backward and recomputation kernels, W the weight-gradient GEMMs.
  const double pp = std::max(1, par.pp);
  const double v = std::max(1, par.virtual_stages);
  const double ideal = mb * t_microbatch;
  const bool dualpipe = par.pp_schedule == spec::PpSchedule::kDualPipe && pp > 1;
  const double dualpipe_s = dualpipe ? dualpipe_bubble_s(par.pp, t_microbatch, s.t_bwd + s.t_rec, s.t_wgrad) : 0.0;
  const double bubble_frac = dualpipe ? (ideal > 0 ? dualpipe_s / ideal : 0.0) : pp > 1 ? (pp - 1) / (v * mb) : 0.0;
  const double bubble = dualpipe ? dualpipe_s : bubble_frac * ideal;
  // DP gradient reduction overlaps the last micro-batch's backward, in the
  // compute time that per-micro-batch communication has not already used;
  // the last bucket (~5% of the gradients) is always exposed.
  const double dp_window = std::min(s.t_bwd, std::max(0.0, s.window_s - s.overlappable_comm_s));
  const double dp_spill = pool_step > 0 ? std::max(pool_step - dp_window, 0.05 * pool_step) : 0.0;
  const double exposed_reduce = pool_step > 0 ? std::max(dp_spill, overlap_cost(pool_sm_step, pool_gemm_step)) : 0.0;
  // The parameter all-gather overlapped with the next step's first forward
  // (--overlap-param-gather): what that forward cannot hide, or the SMs it costs.
  const double fwd_spill = std::max(0.0, fwd_pool_step - s.t_fwd);
  const double exposed_next_fwd =
      fwd_pool_step > 0 ? std::max(fwd_spill, overlap_cost(fwd_pool_sm_step, fwd_pool_gemm_step)) : 0.0;
  const double exposed_dp = exposed_reduce + exposed_next_fwd;
  // CPU offload: the host link's transfers and the CPU optimizer step
  // (techniques/offload.hpp); backward's window includes recomputation.
  techniques::OffloadCost offload = techniques::offload_cost(p, hw, lp, mb, s.t_fwd, s.t_bwd + s.t_rec);
  // Paged optimizer state beyond what the GPU holds beside the peak
  // (memory::MemoryResult::paged_to_host): bitsandbytes prefetches each
  // state to the GPU before its update (Optimizer8bit.prefetch_state,
  // cudaMemPrefetchAsync), and the driver evicts other pages of it to make
  // room: the excess comes in and goes out every step, the two directions
  // of the full-duplex host link side by side, the update waiting on them.
  if (out.memory.paged_to_host > 0) {
    offload.paged_bytes = out.memory.paged_to_host;
    offload.paged_s = offload.paged_bytes / std::max(1.0, hw.host.link_bytes_per_s);
    offload.exposed_s += offload.paged_s;
  }
  // Activation offloading (torchtune OffloadActivations, use_streams): each
  // micro-batch's saved activations go to the host on a side stream during
  // its forward and come back during its backward (recomputation included),
  // a copy engine's work beside the kernels; what a pass cannot hide waits.
  if (out.memory.offloaded_activations > 0) {
    const double copy_s = out.memory.offloaded_activations / std::max(1.0, hw.host.link_bytes_per_s);
    offload.activation_bytes = mb * 2 * out.memory.offloaded_activations;
    offload.activation_s = mb * 2 * copy_s;
    const double exposed =
        mb * (std::max(0.0, copy_s - s.t_fwd) + std::max(0.0, copy_s - (s.t_bwd + s.t_rec)));
    offload.hidden_s += offload.activation_s - exposed;
    offload.exposed_s += exposed;
  }
  double step = ideal + bubble + s.t_step_fixed + exposed_dp + comm_step + offload.exposed_s;
  step *= techniques::executed_steps_per_step(p);
  // A stack calibrated on the user's own runs (calibrate --runs,
  // --calibration): measured step time = predicted x the stack's time scale,
  // one multiplier on the whole step, so the search and predict agree.
  if (const spec::StackCorrection* sc = hw.stack_for(p.framework)) step *= sc->time_scale;
  const long long gpus = par.gpus();
  auto& st = out.step;
  // Every field is set below, without zeroing the whole first (a search
  // finishes ten thousand layouts). The binding names each field, so a field
  // added to StepResult stops this compiling until it is set here too.
  [[maybe_unused]] const auto& [time_s, tokens_per_step, tokens_per_s, model_flops, recompute_flops, hardware_flops,
                                mfu, mfu_dtype, hfu, micro_batches_, microbatch_time_s, compute_time_s, exposed_comm_s,
                                bubble_s, optimizer_s, bubble_fraction, host_s, host_bound, comm_slowdown_s,
                                all_to_all_s, compute_bound_s, offload_, gpus_, flops_convention] = st;
  st.offload = offload;
  st.gpus = gpus;
  st.time_s = step;
  st.micro_batches = mb;
  st.microbatch_time_s = t_microbatch;
  st.compute_time_s = mb * (s.t_fwd + s.t_bwd + s.t_rec) + s.t_step_fixed;
  st.exposed_comm_s = mb * exposed_per_microbatch + exposed_dp + comm_step;
  st.bubble_s = bubble;
  st.bubble_fraction = bubble_frac;
  st.host_s = mb * s.host_s;
  st.host_bound = s.host_s > t_kernels;
  // The share of the exposed time that is SM contention rather than spill.
  st.comm_slowdown_s = mb * std::max(0.0, sm_cost - spill) + (exposed_reduce - dp_spill) + (exposed_next_fwd - fwd_spill);
  st.optimizer_s = s.t_step_fixed;
  st.all_to_all_s = mb * s.all_to_all_s;
  const int seq = graph::seq_len(m, p);
  st.tokens_per_step = static_cast<double>(p.micro_batch) * seq * mb * par.dp;
  st.tokens_per_s = st.tokens_per_step / step;
  // Whole-job FLOPs: per-GPU shard x TP x CP ranks x DP replicas x micro-batches.
  const double replicas = static_cast<double>(par.tp) * par.cp * par.dp * mb;
  st.model_flops = s.model_flop * replicas;
  st.recompute_flops = s.recompute_flop * replicas;
  st.hardware_flops = s.hardware_flop * replicas;
  const double bf16 = hw.peak(spec::Peak::kBf16);
  spec::Peak used = spec::Peak::kBf16;
  switch (p.precision) {
    case spec::Precision::kFp32: used = spec::Peak::kFp32; break;
    case spec::Precision::kTf32: used = spec::Peak::kTf32; break;
    case spec::Precision::kFp16: used = spec::Peak::kFp16; break;
    case spec::Precision::kFp8: used = spec::Peak::kFp8; break;
    case spec::Precision::kNvfp4: used = spec::Peak::kFp4; break;
    default: break;
  }
  const double denom = step * gpus;
  st.mfu = st.model_flops / (denom * bf16);
  st.mfu_dtype = st.model_flops / (denom * std::max(1.0, hw.peak(used)));
  st.hfu = (st.model_flops + st.recompute_flops) / (denom * bf16);
  st.flops_convention = spec::name(p.attention_flops);
  if (opt.keep_kernels) {
    double total_time = 0;
    for (double x : out.time_by_phase) total_time += x;
    if (total_time > 0)
      for (auto& k : out.kernels) k.share = k.time_s / total_time;
  }

  // The compute-bound kernels' time over the step, as the step counts it.
  st.compute_bound_s = (s.compute_bound_s * mb + s.compute_bound_step_s) * techniques::executed_steps_per_step(p);
  if (opt.totals) training_totals(out.totals, st, lp, p, hw);
}

void finish_totals(Prediction& out, const MicrobatchSummary& s, const spec::PlanSpec& p,
                   const spec::HardwareSpec& hw) {
  training_totals(out.totals, out.step, s.params.largest(), p, hw);
}

void evaluate_into(Prediction& out, Workspace& ws, const spec::ModelSpec& m, const spec::PlanSpec& p,
                   const spec::HardwareSpec& hw, const cost::CostParams& c, const EvalOptions& opt) {
  out.status = Status::kOk;
  out.problem = {};
  out.kernels.clear();
  out.calibrated = c.calibrated;
  Problem pr = check_plan(m, p, hw);
  if (!pr.field.empty()) {
    out.status = Status::kInvalid;
    out.problem = std::move(pr);
    return;
  }
  const double mb = micro_batches(p);
  EvalOptions o = opt;
  if (!o.cache) o.cache = &ws.cache;
  summarize_microbatch(ws.summary, ws.microbatch, m, p, hw, c, opt.keep_kernels ? &out : nullptr, mb, o.cache);
  finish(out, ws.summary, ws.step, m, p, hw, c, o);
}

cost::CostParams resolve_for(const spec::HardwareSpec& hw, const spec::PlanSpec& p, const EvalOptions& opt) {
  cost::ResolveOptions r;
  r.use_calibration = opt.use_calibration;
  r.power_limit_w = p.power_limit_w;
  r.without_group = opt.fit_without_group;
  r.training_run = true;  // a plan is a training run, not a kernel benchmark
  return cost::resolve(hw, r);
}

Prediction evaluate(const spec::ModelSpec& m, const spec::PlanSpec& p, const spec::HardwareSpec& hw,
                    const EvalOptions& opt) {
  Workspace ws;
  Prediction out;
  const cost::CostParams c = resolve_for(hw, p, opt);
  evaluate_into(out, ws, m, p, hw, c, opt);
  return out;
}

}  // namespace ridgeline::engine
