// The backward's memory as it runs: the loss and head first, then the
// layers one by one (memory::stage_memory), with gradients that a framework
// frees every step formed as the activations are freed; the chunked loss
// (torchtune CEWithChunkedOutputLoss: one chunk of the logits' gradient at a
// time); activation offloading (torchtune enable_activation_offloading: the
// layers' saved tensors in host memory, copied on a side stream). Expected
// values are hand calculations from the models' shapes (config.json) and the
// sources' code named in each comment.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/precision.hpp"
#include "test_support.hpp"

using namespace ridgeline;

namespace {

/// A torchtune-style single-GPU fine-tune: pure bf16 (no master copy),
/// AdamW, the layers and loss compiled, micro-batch 2 x `seq`; the global
/// batch sets the micro-batches per step.
spec::PlanSpec single_gpu(int seq, long long global_batch, spec::RecomputeKind recompute) {
  spec::PlanSpec p;
  p.framework = *spec::find_framework("torchtitan");
  p.seq_len = seq;
  p.micro_batch = 2;
  p.global_batch = global_batch;
  p.master_weights = spec::MasterWeights::kNone;
  p.recompute = {recompute, 0, 0};
  p.fusion = spec::Fusion::kCompiled;
  p.fusion_given = true;
  p.cross_entropy = spec::CrossEntropy::kFused;
  p.cross_entropy_given = true;
  return p;
}

engine::Prediction run(const spec::ModelSpec& m, const spec::PlanSpec& p, const spec::HardwareSpec& hw) {
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  return engine::evaluate(m, p, hw, opt);
}

/// "field: message" of check_plan's refusal; empty when it accepts the plan.
std::string refusal(const spec::ModelSpec& m, const spec::PlanSpec& p, const spec::HardwareSpec& hw) {
  const auto r = engine::check_plan(m, p, hw);
  return r.message.empty() ? std::string() : std::string(r.field) + ": " + r.message;
}

}  // namespace

TEST_CASE("gradients freed each step: a step of one micro-batch peaks at one end of the backward, not both") {
  // Llama-3-8B on an A100-80GB, full recomputation. With two micro-batches
  // the gradients of the first are held through the second (persistent in
  // effect); with one, torchtitan's zero_grad has set them to None
  // (frameworks/torchtitan.yaml gradients: freed_each_step) and the backward
  // forms them as it frees the activations.
  const auto m = test::model("llama3_8b");
  const auto hw = test::gpu("a100_sxm_80gb");
  const auto held = run(m, single_gpu(2048, 4, spec::RecomputeKind::kFull), hw).memory;
  const auto freed = run(m, single_gpu(2048, 2, spec::RecomputeKind::kFull), hw).memory;
  // Every bf16 gradient: 8,030,261,248 parameters x 2 B.
  const double grads = 8030261248.0 * 2;
  CHECK(held.gradients == doctest::Approx(grads).epsilon(1e-12));
  // Start of the backward: the activations and the head's buffers as the
  // held plan has them (no fp8, CP or ZeRO-3 buffers here), and the LM
  // head's weight gradient, 128,256 x 4,096 x 2 B = 1,050,673,152 B. End:
  // every gradient and the first layer's recomputation.
  const double start = held.activations + held.buffers + 128256.0 * 4096 * 2;
  const double end = grads + held.recompute_working;
  CHECK(end > start);  // 16.1 GB of gradients against about 4 GB
  const double state = held.weights + held.optimizer + held.master_weights;
  CHECK(freed.allocated == doctest::Approx(state + std::max(start, end)).epsilon(1e-12));
  CHECK(freed.gradients == doctest::Approx(grads).epsilon(1e-12));
  CHECK(freed.activations == doctest::Approx(held.recompute_working).epsilon(1e-12));
  CHECK(freed.peak_phase == "end");
  // Both ends at once is what the held plan counts, and more.
  CHECK(held.allocated > freed.allocated);

  // LoRA: the adapters' gradients are small, so the start peaks: the
  // activations and the logits, with the largest trainable tensor's
  // gradient formed by then (an adapter's, as params.cpp bounds it:
  // rank 8 x max(h 4,096, f 14,336) x 2 B = 229,376 B).
  auto lora = single_gpu(2048, 2, spec::RecomputeKind::kFull);
  lora.finetune.mode = spec::FinetuneMode::kLora;
  auto lora_held = lora;
  lora_held.global_batch = 4;
  const auto lh = run(m, lora_held, hw).memory;
  const auto lf = run(m, lora, hw).memory;
  CHECK(lf.activations == doctest::Approx(lh.activations).epsilon(1e-12));
  CHECK(lf.buffers == doctest::Approx(lh.buffers).epsilon(1e-12));
  CHECK(lf.gradients == doctest::Approx(8.0 * 14336 * 2).epsilon(1e-12));
  CHECK(lf.peak_phase == "head");
  CHECK(lh.gradients > lf.gradients);
}

TEST_CASE("the backward's head and layers do not overlap: the logits and a recomputed layer, the larger of the two") {
  // Persistent gradients (two micro-batches): without recomputation nothing
  // is rebuilt, so the head's logits count; with it, the larger of the
  // head's tensors and one recomputed layer's (graph facts both).
  const auto m = test::model("llama3_8b");
  const auto hw = test::gpu("a100_sxm_80gb");
  const auto none = run(m, single_gpu(2048, 4, spec::RecomputeKind::kNone), hw).memory;
  CHECK(none.recompute_working == 0);
  CHECK(none.peak_phase == "head");
  // The fused loss's logit gradient, T x V x 2 B = 4,096 x 128,256 x 2.
  CHECK(none.buffers == doctest::Approx(4096.0 * 128256 * 2).epsilon(1e-12));
}

TEST_CASE("chunked cross-entropy: one chunk of the logits' gradient at a time (torchtune CEWithChunkedOutputLoss)") {
  // Llama-3.2-3B, 2 x 4,096 tokens, no recomputation (so the head's phase
  // is the peak's): the fused loss's gradient is T x V x 2 B =
  // 8,192 x 128,256 x 2 = 2,101,346,304 B; chunked into torchtune's 8
  // output chunks (num_output_chunks = 8), 262,668,288 B.
  const auto m = test::model("llama3_2_3b");
  const auto hw = test::gpu("a100_sxm_80gb");
  auto p = single_gpu(4096, 4, spec::RecomputeKind::kNone);
  const auto fused = run(m, p, hw);
  p.cross_entropy = spec::CrossEntropy::kChunked;
  const auto chunked = run(m, p, hw);
  CHECK(fused.memory.buffers - chunked.memory.buffers == doctest::Approx(2101346304.0 * 7 / 8).epsilon(1e-12));
  CHECK(chunked.memory.activations == doctest::Approx(fused.memory.activations).epsilon(1e-12));
  // The same kernels: a fused loss per chunk.
  CHECK(chunked.step.time_s == doctest::Approx(fused.step.time_s).epsilon(1e-12));
  // Offered where a framework's profile says so (torchtitan, standing for torchtune).
  p.framework = *spec::find_framework("megatron");
  p.fusion = spec::Fusion::kFused;
  CHECK(refusal(m, p, hw) == "cross_entropy: megatron has no chunked cross-entropy (offered by torchtitan)");
}

TEST_CASE("activation offloading: the layers' saved tensors in host memory, one layer's kept, copies beside the passes") {
  // Llama-3.2-3B, 2 x 4,096 tokens, full recomputation: each of the 28
  // layers keeps its input for the backward, as its first norm saves it:
  // T x h x 2 B and the fp32 statistic per token, 8,192 x (3,072 x 2 + 4) =
  // 50,364,416 B. Offloaded: all but one layer's, 27 x 50,364,416 =
  // 1,359,839,232 B (torchtune OffloadActivations; the LM head's kept).
  const auto m = test::model("llama3_2_3b");
  auto hw = test::gpu("a100_sxm_80gb");
  auto p = single_gpu(4096, 4, spec::RecomputeKind::kFull);
  const auto kept = run(m, p, hw);
  p.offload.activations = spec::OffloadDevice::kCpu;
  const auto off = run(m, p, hw);
  const double offloaded = 27.0 * 8192 * (3072 * 2 + 4);
  CHECK(off.memory.offloaded_activations == doctest::Approx(offloaded).epsilon(1e-12));
  CHECK(off.memory.host_bytes == doctest::Approx(offloaded).epsilon(1e-12));
  CHECK(kept.memory.activations - off.memory.activations == doctest::Approx(offloaded).epsilon(1e-12));
  // Over PCIe Gen4 (25 GB/s, the profile's host.link_bandwidth) 54 ms each
  // way, behind a forward of hundreds of milliseconds: nothing exposed;
  // 2 micro-batches x 2 directions cross the link.
  CHECK(off.step.offload.activation_bytes == doctest::Approx(2 * 2 * offloaded).epsilon(1e-12));
  CHECK(off.step.offload.exposed_s == 0);
  CHECK(off.step.time_s == doctest::Approx(kept.step.time_s).epsilon(1e-12));
  // A link of 0.5 GB/s: 2.7 s a copy, longer than either pass, so each
  // micro-batch waits 2 x copy - (forward + backward + recomputation):
  // exposed = 2 micro-batches x 2 x copy - the kernels' time.
  hw.host.link_bytes_per_s = 0.5e9;
  const auto slow = run(m, p, hw);
  const double copy_s = offloaded / 0.5e9;
  const double kernels_s = slow.step.compute_time_s - slow.step.optimizer_s;
  CHECK(slow.step.offload.exposed_s == doctest::Approx(2 * 2 * copy_s - kernels_s).epsilon(1e-9));
  CHECK(slow.step.time_s == doctest::Approx(kept.step.time_s + slow.step.offload.exposed_s).epsilon(1e-9));
}

TEST_CASE("activation offloading: refused where the framework has none, and with pipeline parallelism") {
  const auto m = test::model("llama3_8b");
  const auto hw = test::gpu("a100_sxm_80gb");
  auto p = single_gpu(2048, 2, spec::RecomputeKind::kFull);
  p.offload.activations = spec::OffloadDevice::kCpu;
  CHECK(refusal(m, p, hw).empty());
  p.parallel.pp = 2;
  p.global_batch = 8;
  CHECK(refusal(m, p, hw) ==
        "offload.activations: activation offloading is modelled without pipeline parallelism (torchtune's recipes), "
        "got PP 2");
  p.parallel.pp = 1;
  p.framework = *spec::find_framework("megatron");
  p.fusion = spec::Fusion::kFused;
  CHECK(refusal(m, p, hw) == "offload.activations: megatron has no activation offloading (offered by torchtitan)");
}

TEST_CASE("advise and the does-not-fit hint offer activation offloading and the chunked loss where the framework runs them") {
  // Llama-3.2-3B on a 40 GB A100 without recomputation, eager: 60 GiB.
  const std::string plan =
      "--gpu a100_sxm_40gb --model llama3_2_3b --micro-batch 2 --global-batch 2 --seq 4096 --master-weights none "
      "--recompute none";
  const auto titan = test::run_cli("advise " + plan + " --framework torchtitan");
  REQUIRE(titan.status <= 1);
  CHECK(titan.out.find("--offload-activations cpu") != std::string::npos);
  CHECK(titan.out.find("--cross-entropy chunked") != std::string::npos);
  const auto hint = test::run_cli("predict " + plan + " --framework torchtitan");
  CHECK(hint.status == 1);
  CHECK(hint.err.find("--offload-activations cpu, --cross-entropy chunked") != std::string::npos);
  const auto megatron = test::run_cli("advise " + plan + " --framework megatron");
  REQUIRE(megatron.status <= 1);
  CHECK(megatron.out.find("--offload-activations") == std::string::npos);
  CHECK(megatron.out.find("--cross-entropy chunked") == std::string::npos);
}

TEST_CASE("ZeRO-3 gathers a QLoRA base as stored: its linear weights in NF4 (torchao NF4Tensor under FSDP2)") {
  // Llama-3-8B over 8 GPUs, FSDP FULL_SHARD (ZeRO-3): each GPU holds two
  // gathered layers (current and prefetched). A decoder layer's linear
  // weights: q and o 4,096 x 4,096, k and v 4,096 x 1,024, the MLP's three
  // 4,096 x 14,336: 218,103,808 parameters. Under LoRA they are gathered in
  // bf16 (2 B), under QLoRA in NF4 (4.127 bits: spec::kNf4BytesPerWeight);
  // its norms, 2 x 4,096 a layer and the final norm's 4,096 over the 32
  // layers, go the other way, fp32 under QLoRA (4 B against 2). The two
  // layers' buffers differ by
  // 2 x (218,103,808 x (2 - 4.127 / 8) - (8,192 + 4,096 / 32) x 2) B.
  const auto m = test::model("llama3_8b");
  const auto hw = test::gpu("a100_sxm_80gb");
  auto p = single_gpu(2048, 16, spec::RecomputeKind::kFull);
  p.parallel.dp = 8;
  p.parallel.zero = 3;
  p.finetune.mode = spec::FinetuneMode::kLora;
  const auto lora = run(m, p, hw);
  p.finetune.mode = spec::FinetuneMode::kQlora;
  const auto qlora = run(m, p, hw);
  REQUIRE(lora.memory.peak_phase == qlora.memory.peak_phase);
  CHECK(lora.memory.buffers - qlora.memory.buffers ==
        doctest::Approx(2 * (218103808.0 * (2 - spec::kNf4BytesPerWeight) - (8192 + 4096.0 / 32) * 2)).epsilon(1e-9));
  // The all-gathers themselves carry NF4 too: less time on the same ring.
  engine::EvalOptions opt;
  opt.keep_kernels = true;
  auto gathered_s = [&](spec::FinetuneMode mode) {
    p.finetune.mode = mode;
    double s = 0;
    for (const auto& k : engine::evaluate(m, p, hw, opt).kernels)
      if (k.name == "zero3_param_all_gather") s += k.time_s;
    return s;
  };
  const double lora_s = gathered_s(spec::FinetuneMode::kLora);
  const double qlora_s = gathered_s(spec::FinetuneMode::kQlora);
  CHECK(lora_s > 0);
  CHECK(qlora_s < lora_s);
}
