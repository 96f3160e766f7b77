// Framework profiles (frameworks/*.yaml): loading, defaults, refusals and
// the data-parallel traffic each framework's documented behaviour implies.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "ridgeline/cost/cost.hpp"
#include "ridgeline/memory/memory.hpp"
#include "ridgeline/search/search.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "ridgeline/support/diagnostics.hpp"
#include "ridgeline/techniques/params.hpp"
#include "ridgeline/techniques/passes.hpp"
#include "test_support.hpp"

using namespace ridgeline;

namespace {

spec::PlanSpec with(std::string_view framework) {
  spec::PlanSpec p;
  REQUIRE(spec::apply_setting(p, "framework", framework) == "");
  return p;
}

/// Bytes of the named collectives in a plan's step, per step (per-micro-batch
/// kernels times the micro-batches).
double step_bytes(const spec::ModelSpec& m, const spec::PlanSpec& p, const spec::HardwareSpec& hw,
                  std::string_view name) {
  graph::Graph g;
  techniques::build_step(g, m, p, hw);
  const double mb = engine::micro_batches(p);
  double bytes = 0;
  for (const auto& k : g.kernels)
    if (k.name == name) bytes += k.comm.bytes * k.count * (k.has(graph::kPerStep) ? 1.0 : mb);
  return bytes;
}

}  // namespace

TEST_CASE("frameworks: the five shipped profiles load, megatron first and the default") {
  const auto& all = spec::frameworks();
  REQUIRE(all.size() >= 5);
  CHECK(all.front().id == "megatron");
  for (const char* id : {"megatron", "torchtitan", "fsdp", "deepspeed", "hf"}) CHECK(spec::find_framework(id));
  CHECK(spec::framework_choices() == "deepspeed, fsdp, hf, megatron, torchtitan");
  // A default plan is megatron's, with megatron's default kernels.
  const spec::PlanSpec p;
  CHECK(p.framework == 0);
  CHECK(p.fusion == spec::framework(0).fusion);
  CHECK(p.attention == spec::framework(0).attention);
}

TEST_CASE("frameworks: each profile is found by its id before any is read, and reads as that id") {
  // The folder's listing, read here independently: every .yaml is a framework, megatron first, then by name.
  std::vector<std::string> ids;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(RIDGELINE_SOURCE_DIR) / "frameworks"))
    if (e.path().extension() == ".yaml") ids.push_back(e.path().stem().string());
  std::sort(ids.begin(), ids.end());
  std::stable_partition(ids.begin(), ids.end(), [](const std::string& id) { return id == "megatron"; });
  REQUIRE(spec::framework_count() == ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto index = static_cast<std::uint8_t>(i);
    CHECK(spec::framework_id(index) == ids[i]);
    CHECK(spec::find_framework(ids[i]) == index);
    CHECK(spec::framework(index).id == ids[i]);
    CHECK(spec::framework(index).source_file.ends_with(ids[i] + ".yaml"));
  }
  CHECK_FALSE(spec::find_framework("megatron_lm"));
  // Out of range is megatron, as a plan's default.
  CHECK(spec::framework(static_cast<std::uint8_t>(ids.size())).id == "megatron");
  // The whole list is the same objects framework() hands out.
  const auto& all = spec::frameworks();
  REQUIRE(all.size() == ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) CHECK(&all[i] == &spec::framework(static_cast<std::uint8_t>(i)));
}

TEST_CASE("frameworks: choosing one sets its default kernels unless the plan gives them") {
  // frameworks/fsdp.yaml: eager modules; hf.yaml: eager; deepspeed.yaml: Megatron-DeepSpeed's fused kernels.
  CHECK(with("fsdp").fusion == spec::Fusion::kEager);
  CHECK(with("hf").fusion == spec::Fusion::kEager);
  CHECK(with("deepspeed").fusion == spec::Fusion::kFused);
  spec::PlanSpec p;
  REQUIRE(spec::apply_setting(p, "fusion", "compiled") == "");
  REQUIRE(spec::apply_setting(p, "framework", "hf") == "");
  CHECK(p.fusion == spec::Fusion::kCompiled);  // given before: kept
  CHECK(spec::apply_setting(p, "framework", "jax") ==
        "framework: expected one of deepspeed, fsdp, hf, megatron, torchtitan, got \"jax\"");
}

TEST_CASE("frameworks: recompute policies under the framework's own names") {
  spec::PlanSpec p = with("fsdp");
  REQUIRE(spec::apply_setting(p, "recompute", "activation_checkpointing") == "");
  CHECK(p.recompute.kind == spec::RecomputeKind::kFull);
  spec::PlanSpec t = with("torchtitan");
  REQUIRE(spec::apply_setting(t, "recompute", "selective_layer:4") == "");
  CHECK(t.recompute.kind == spec::RecomputeKind::kEvery);
  CHECK(t.recompute.every_k == 4);
  // A policy the framework does not offer is refused, naming the framework.
  const auto hw = test::gpu("h100_sxm");
  const auto m = test::model("llama3_8b");
  spec::PlanSpec s = with("fsdp");
  s.recompute = {spec::RecomputeKind::kSelective, 0};
  const engine::Problem e = engine::check_plan(m, s, hw);
  CHECK(e.field == "recompute");
  CHECK(e.message == "fsdp offers recompute none, activation_checkpointing (full); selective is not one of them");
}

TEST_CASE("frameworks: refused combinations, each with its exact error") {
  const auto hw = test::gpu("h100_sxm");
  const auto m = test::model("llama3_8b");
  // DeepSpeed's PipelineEngine asserts ZeRO < 2 (deepspeed/runtime/pipe/engine.py).
  spec::PlanSpec d = with("deepspeed");
  d.parallel.pp = 2;
  d.parallel.dp = 4;
  d.parallel.zero = 2;
  d.global_batch = 32;
  engine::Problem e = engine::check_plan(m, d, hw);
  CHECK(e.field == "parallel.zero");
  CHECK(e.message == "deepspeed refuses ZeRO-2 with pipeline parallelism (PP 2): ZeRO-2 and ZeRO-3 are "
                     "incompatible with pipeline parallelism; use ZeRO-1");
  d.parallel.zero = 1;
  CHECK(engine::check_plan(m, d, hw).field.empty());
  // Megatron's interleaved schedule: micro-batches a multiple of PP. 32 / (1 x 4 DP) = 8 micro-batches, PP 4
  // divides 8; 24 / 4 = 6 micro-batches does not.
  spec::PlanSpec g;
  g.parallel.pp = 4;
  g.parallel.dp = 4;
  g.parallel.virtual_stages = 2;
  g.global_batch = 32;
  CHECK(engine::check_plan(m, g, hw).field.empty());
  g.global_batch = 24;
  e = engine::check_plan(m, g, hw);
  CHECK(e.field == "parallel.virtual_stages");
  CHECK(e.message == "megatron refuses the interleaved schedule with 6 micro-batches: the number of "
                     "micro-batches must be a multiple of PP 4");
  // The same layout under torchtitan is accepted.
  g.framework = *spec::find_framework("torchtitan");
  CHECK(engine::check_plan(m, g, hw).field.empty());
}

TEST_CASE("frameworks: ZeRO-2 gradient traffic per micro-batch under DeepSpeed, per step under Megatron") {
  // ZeRO paper (Rajbhandari et al. 2020, Sec. 7.2): ZeRO-2 moves Psi (reduce-scatter of the gradients) + Psi
  // (all-gather of the updated parameters) per step, as DP's all-reduce does. DeepSpeed stage 2 reduces after
  // every micro-batch's backward under gradient accumulation (DeepSpeed#2252): m x Psi of reduce-scatter.
  const auto hw = test::gpu("h100_sxm");
  const auto m = test::model("llama3_8b");
  spec::PlanSpec p;
  p.seq_len = 4096;
  p.parallel.dp = 8;
  p.parallel.zero = 2;
  p.global_batch = 32;  // 32 / 8 = 4 micro-batches
  const double psi = techniques::local_params(m, p).trainable * 2;  // bf16 gradients, bytes
  // Megatron reduces its fp32 main gradients once per step: 2 x the bf16 bytes.
  const double mega = step_bytes(m, p, hw, "dp_grad_reduce_scatter");
  CHECK(mega == doctest::Approx(2 * psi));
  p.framework = *spec::find_framework("deepspeed");
  const double ds = step_bytes(m, p, hw, "dp_grad_reduce_scatter");
  CHECK(ds == doctest::Approx(4 * psi));
  // The parameter all-gather stays once per step under both.
  CHECK(step_bytes(m, p, hw, "dp_param_all_gather") == doctest::Approx(psi));
  // Predicted: the extra reductions make ZeRO-2 slower than ZeRO-1 under DeepSpeed, not free.
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  const double z2 = engine::evaluate(m, p, hw, opt).step.time_s;
  p.parallel.zero = 1;
  const double z1 = engine::evaluate(m, p, hw, opt).step.time_s;
  CHECK(z2 > z1);
}

namespace {

/// GPT-3 1.3B under the fsdp profile at sequence 2048, DP 8, global batch 16
/// (2 micro-batches of 1), ZeRO stage `zero`.
spec::PlanSpec fsdp_gpt3_1_3b(int zero) {
  spec::PlanSpec p = with("fsdp");
  p.seq_len = 2048;
  p.parallel.dp = 8;
  p.parallel.zero = zero;
  p.global_batch = 16;
  return p;
}

}  // namespace

TEST_CASE("frameworks: FSDP reduces gradients in fp32 every micro-batch (Composer mixed_precision DEFAULT)") {
  const auto hw = test::gpu("a100_sxm_80gb");
  const auto m = test::model("gpt3_1.3b");
  const spec::PlanSpec p = fsdp_gpt3_1_3b(3);  // 2 micro-batches of 1
  // 4-byte gradients, reduce-scattered after each of the 2 micro-batches.
  const double psi = techniques::local_params(m, p).trainable;
  CHECK(step_bytes(m, p, hw, "dp_grad_reduce_scatter") == doctest::Approx(2 * 4 * psi));
  // Parameters gathered before every forward and every backward in bf16: 2 x 2 micro-batches x 2 bytes.
  CHECK(step_bytes(m, p, hw, "zero3_param_all_gather") ==
        doctest::Approx(2 * 2 * 2 * techniques::local_params(m, p).weights));
}

TEST_CASE("frameworks: FSDP's ZeRO-2 (SHARD_GRAD_OP) gathers each unit before its forward, not once after the step") {
  // torch/distributed/fsdp/api.py, ShardingStrategy.SHARD_GRAD_OP: "unshards before the forward, does
  // not reshard them after the forward, and only reshards them after the backward computation". GPT-3
  // 1.3B (24 layers, one FSDP unit each), DP 8, global batch 16: 2 micro-batches of 1. Per step:
  //   parameter all-gather: 2 micro-batches x 2 bytes x Psi_w, in 24 calls each (one per unit), the
  //                         first of each forward waiting, the other 23 beside the previous unit;
  //   no all-gather after the optimizer step (Megatron's distributed optimizer has that one).
  const auto hw = test::gpu("a100_sxm_80gb");
  const auto m = test::model("gpt3_1.3b");
  spec::PlanSpec p = fsdp_gpt3_1_3b(2);
  const auto lp = techniques::local_params(m, p);
  CHECK(step_bytes(m, p, hw, "zero3_param_all_gather") == doctest::Approx(2 * 2 * lp.weights));
  CHECK(step_bytes(m, p, hw, "dp_param_all_gather") == 0);
  graph::Graph g;
  techniques::build_step(g, m, p, hw);
  double waiting = 0, beside = 0, backward = 0;
  for (const auto& k : g.kernels) {
    if (k.name != "zero3_param_all_gather") continue;
    CHECK(k.comm.bytes == doctest::Approx(2 * lp.weights / 24));
    if (k.phase == spec::Phase::kBackward) backward += k.count;
    else (k.has(graph::kOverlapped) ? beside : waiting) += k.count;
  }
  CHECK(waiting == 1);
  CHECK(beside == 23);
  CHECK(backward == 0);  // the forward's gathered parameters serve the backward
  // The same plan under Megatron (the distributed optimizer): one all-gather of the updated shards per step.
  p.framework = *spec::find_framework("megatron");
  CHECK(step_bytes(m, p, hw, "zero3_param_all_gather") == 0);
  CHECK(step_bytes(m, p, hw, "dp_param_all_gather") == doctest::Approx(2 * techniques::local_params(m, p).trainable));
}

TEST_CASE("frameworks: Composer evaluates two training metrics on each micro-batch's logits; Megatron none") {
  // composer/trainer/trainer.py _train_microbatch: after each micro-batch's backward,
  // _eval_train_metrics runs llm-foundry's LanguageCrossEntropy and LanguagePerplexity, each a
  // torch.nn.CrossEntropyLoss over the logits under no_grad and autocast. GPT-3 1.3B (vocabulary
  // 50,257), micro-batch 1 x 2,048 tokens: T V = 2,048 x 50,257 = 102,926,336 logits; each metric
  // upcasts the 16-bit logits (reads 2, writes 4 bytes a logit), takes log_softmax (reads 4, writes
  // 4) and nll (reads 4): 10 read and 8 written bytes per logit.
  const auto hw = test::gpu("a100_sxm_80gb");
  const auto m = test::model("gpt3_1.3b");
  spec::PlanSpec p = fsdp_gpt3_1_3b(3);
  graph::Graph g;
  techniques::build_step(g, m, p, hw);
  const double logits = 2048.0 * 50257;
  int found = 0;
  for (const auto& k : g.kernels) {
    if (k.name != "train_metrics") continue;
    ++found;
    CHECK(k.count == 2);  // per micro-batch, one each
    CHECK(k.phase == spec::Phase::kBackward);
    CHECK_FALSE(k.has(graph::kPerStep));
    CHECK(k.read_bytes == doctest::Approx(logits * 10));
    CHECK(k.write_bytes == doctest::Approx(logits * 8));
    CHECK(k.saved_bytes == 0);  // no gradient: nothing kept for a backward
  }
  CHECK(found == 1);
  // Megatron's training loop (megatron/training/training.py train_step) evaluates no metric on the logits.
  p.framework = *spec::find_framework("megatron");
  techniques::build_step(g, m, p, hw);
  CHECK(std::none_of(g.kernels.begin(), g.kernels.end(), [](const auto& k) { return k.name == "train_metrics"; }));
}

TEST_CASE("frameworks: a small model with a large vocabulary peaks in the training metrics") {
  // GPT-3 125M at micro-batch 32 x 2,048 tokens under fsdp with full recomputation: the metrics after
  // the backward hold the 16-bit logits (2 bytes a logit) with a metric's fp32 upcast and
  // log-probabilities (4 + 4): 65,536 x 50,257 x 10 = 32.9 GB. The backward's head phase holds less:
  // the 12 checkpointed layer inputs (2 s b h = 2 x 65,536 x 768 = 0.10 GB each, 1.2 GB) with the
  // logits and their gradient (65,536 x 50,257 x 4 = 13.2 GB) and one layer's recomputed activations.
  const auto hw = test::gpu("a100_sxm_80gb");
  const auto m = test::model("gpt3_125m");
  spec::PlanSpec p = with("fsdp");
  p.seq_len = 2048;
  p.micro_batch = 32;
  p.global_batch = 32;
  REQUIRE(spec::apply_setting(p, "recompute", "full") == "");
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  const auto r = engine::evaluate(m, p, hw, opt);
  const double metrics = 65536.0 * 50257 * 10;
  CHECK(r.memory.peak_phase == "metrics");
  CHECK(r.memory.activations == 0);
  CHECK(r.memory.buffers >= metrics);
  CHECK(r.memory.buffers < metrics + 2.0 * (1ull << 30));  // the fixed buffers beside them are small
  // Under Megatron the same plan peaks in the backward, with its checkpointed activations.
  p.framework = *spec::find_framework("megatron");
  const auto meg = engine::evaluate(m, p, hw, opt);
  CHECK(meg.memory.peak_phase != "metrics");
  CHECK(meg.memory.activations > 0);
}

TEST_CASE("frameworks: eager PyTorch's LayerNorm backward reads its inputs twice; a frozen or fused norm once") {
  // aten/src/ATen/native/cuda/layer_norm_kernel.cu, LayerNormBackwardKernelImplInternal:
  // layer_norm_grad_input_kernel reads dY, X and gamma and writes dX; GammaBetaBackwardCUDAKernel
  // reads dY and X again (with the fp32 mean and rstd) for dgamma and dbeta. GPT-3 1.3B, micro-batch
  // 1 x 2,048 tokens, hidden 2,048, bf16: X and dY are 2,048 x 2,048 x 2 = 8,388,608 bytes each,
  // gamma and beta 2 x 2,048 x 2 = 8,192: one pass 16,785,408 bytes, two 33,570,816.
  const auto hw = test::gpu("a100_sxm_80gb");
  const auto m = test::model("gpt3_1.3b");
  spec::PlanSpec p = fsdp_gpt3_1_3b(3);
  const auto norm_backward_reads = [&](const spec::PlanSpec& plan) {
    graph::Graph g;
    techniques::build_step(g, m, plan, hw);
    for (const auto& k : g.kernels)
      if (k.phase == spec::Phase::kBackward && k.name.find("norm1") != std::string::npos) return k.read_bytes;
    return 0.0;
  };
  const double once = 2.0 * 2048 * 2048 * 2 + 2.0 * 2048 * 2;
  REQUIRE(p.fusion == spec::Fusion::kEager);
  CHECK(norm_backward_reads(p) == doctest::Approx(2 * once));
  // LoRA freezes the norm: no weight gradient, the input-gradient kernel alone.
  spec::PlanSpec lora = p;
  REQUIRE(spec::apply_setting(lora, "finetune", "lora") == "");
  CHECK(norm_backward_reads(lora) == doctest::Approx(once));
  // Transformer Engine's fused LayerNorm backward forms dgamma in the same pass.
  spec::PlanSpec fused = p;
  fused.fusion = spec::Fusion::kFused;
  CHECK(norm_backward_reads(fused) == doctest::Approx(once));
}

TEST_CASE("frameworks: torchtitan under PP reduces gradients once per step in fp32 and gathers once") {
  // Under PP torchtitan keeps parameters gathered (torchtitan/distributed/fsdp.py:129-132) and
  // PyTorch's pipeline stage syncs FSDP gradients only in the last micro-batch's backward
  // (frameworks/torchtitan.yaml pp_params, pp_grads). Llama-3-8B, PP 2, DP 4, ZeRO-3, global batch
  // 32: 8 micro-batches per pipeline. Per step, with Psi the larger stage's parameters:
  //   gradient reduce-scatter: 4 bytes x Psi once (not 8 x 4 Psi);
  //   parameter all-gather:    2 bytes x Psi once (not 8 x 2 x 2 Psi).
  const auto hw = test::gpu("h100_sxm");
  const auto m = test::model("llama3_8b");
  spec::PlanSpec p = with("torchtitan");
  p.seq_len = 4096;
  p.parallel.pp = 2;
  p.parallel.dp = 4;
  p.parallel.zero = 3;
  p.global_batch = 32;
  const auto lp = techniques::local_params(m, p);
  CHECK(step_bytes(m, p, hw, "dp_grad_reduce_scatter") == doctest::Approx(4 * lp.trainable));
  CHECK(step_bytes(m, p, hw, "zero3_param_all_gather") == doctest::Approx(2 * lp.weights));
  // Without PP: FSDP2 reduce-scatters after every micro-batch's backward, 32 / 4 = 8 of them.
  p.parallel.pp = 1;
  const auto flat = techniques::local_params(m, p);
  CHECK(step_bytes(m, p, hw, "dp_grad_reduce_scatter") == doctest::Approx(8 * 4 * flat.trainable));
}

TEST_CASE("frameworks: eager dispatch makes a small model host-bound; CUDA graphs remove it") {
  // GPT-3 125M at micro-batch 1 x 128 tokens: each kernel runs a few microseconds, less than the 10 us the
  // hf profile's host takes to dispatch it, so the micro-batch takes its dispatch time.
  const auto hw = test::gpu("h100_sxm");
  const auto m = test::model("gpt3_125m");
  spec::PlanSpec p = with("hf");
  p.seq_len = 128;
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  const auto eager = engine::evaluate(m, p, hw, opt);
  CHECK(eager.step.host_bound);
  CHECK(eager.step.microbatch_time_s == doctest::Approx(eager.step.host_s));
  p.cuda_graphs = true;
  const auto graphs = engine::evaluate(m, p, hw, opt);
  CHECK_FALSE(graphs.step.host_bound);
  CHECK(graphs.step.time_s < eager.step.time_s);
}

TEST_CASE("frameworks: a malformed profile is one located error") {
  const auto dir = std::filesystem::temp_directory_path() / "ridgeline_fw_test";
  std::filesystem::create_directories(dir);
  const auto file = (dir / "bad.yaml").string();
  {
    std::ofstream f(file);
    f << "name: Bad\nfusion:\n  value: sometimes\n  source: none\n";
  }
  try {
    spec::load_framework(file);
    FAIL("expected an error");
  } catch (const support::SpecError& e) {
    const std::string d = e.diagnostics().front().format();
    CHECK(d.find("bad.yaml:3:10") != std::string::npos);
    CHECK(d.find("fusion.value") != std::string::npos);
    CHECK(d.find("expected one of eager, fused, compiled, xla") != std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("frameworks: pp_params, pp_grads, cross_entropy.compiled and train_metrics take only their words, located") {
  const auto dir = std::filesystem::temp_directory_path() / "ridgeline_fw_pp_test";
  std::filesystem::create_directories(dir);
  const auto file = (dir / "bad.yaml").string();
  auto error_of = [&](const std::string& text) {
    {
      std::ofstream f(file);
      f << text;
    }
    try {
      spec::load_framework(file);
    } catch (const support::SpecError& e) {
      std::string all;  // every diagnostic (the file also lacks required behaviours)
      for (const auto& d : e.diagnostics()) all += d.format() + "\n";
      return all;
    }
    return std::string("no error");
  };
  const std::string head = "name: Bad\nfusion:\n  value: eager\n  source: s\nattention:\n  value: flash2\n  source: s\n";
  const std::string pp = error_of(head + "pp_params:\n  value: gathered\n  source: s\n");
  CHECK(pp.find("bad.yaml:9:10: error: pp_params.value: expected one of sharded, unsharded, got \"gathered\"") !=
        std::string::npos);
  const std::string tm = error_of(head + "train_metrics:\n  value: 1.5\n  source: s\n");
  CHECK(tm.find("bad.yaml:9:10: error: train_metrics.value") != std::string::npos);
  const std::string ce = error_of(head + "cross_entropy:\n  value: eager\n  compiled: inductor\n  source: s\n");
  CHECK(ce.find("bad.yaml:10:13: error: cross_entropy.compiled: expected one of fused, eager, got \"inductor\"") !=
        std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("overlap costs SMs: compute beside a collective takes max(T, C + f T)") {
  // ZeRO-3 on 8 GPUs gathers the parameters before every forward and backward, one all-gather per
  // decoder layer (FSDP unit), overlapped with the micro-batch's GEMMs. The gathers' NCCL thread blocks hold
  // f of the SMs (cost::KernelCost::sm_fraction: NCCL channels / SMs). Attention beside them runs on the
  // other 1 - f. A GEMM beside them loses f on A100, whose cuBLAS kernels launch tiles in waves over the
  // free SMs; on H100 cuBLAS's GEMMs are persistent, one CTA per SM, so the CTAs whose SM NCCL holds wait
  // for a second wave and the GEMM loses 1 - 1/2 = 0.5 (pytorch#143988). The micro-batch takes its compute
  // C plus, for the overlapped transfers of length T, max(T - C, f T + g (loss - f) T) with g the GEMMs'
  // share of the GEMM and attention time, plus the exposed first-layer gather. DP 1 is the same micro-batch
  // without any collective.
  const auto m = test::model("llama3_8b");
  for (const char* gpu : {"h100_sxm", "a100_sxm_80gb"}) {
    CAPTURE(gpu);
    const auto hw = test::gpu(gpu);
    const bool persistent = std::string(gpu) == "h100_sxm";
    const cost::CostParams c = cost::resolve(hw);
    spec::PlanSpec alone;
    alone.seq_len = 4096;
    spec::PlanSpec sharded = alone;
    sharded.parallel.dp = 8;
    sharded.parallel.zero = 3;
    graph::Graph g;
    techniques::build_step(g, m, sharded, hw);
    double T = 0, fT = 0, lossT = 0, exposed = 0, gathers = 0;
    for (const auto& k : g.kernels) {
      if (k.cls != spec::KernelClass::kCollective || k.has(graph::kPerStep)) continue;
      const cost::KernelCost kc = cost::cost_kernel(k, c, false);
      REQUIRE(kc.sm_fraction > 0);
      REQUIRE(kc.sm_fraction < 0.5);
      // A100: the gather's own f; H100: ceil(1 / (1 - f)) = 2 waves for any f < 1/2, so 1 - 1/2.
      CHECK(kc.gemm_overlap_loss == doctest::Approx(persistent ? 0.5 : kc.sm_fraction));
      if (k.name == std::string_view("zero3_param_all_gather")) gathers += k.count;
      if (k.has(graph::kOverlapped)) {
        T += kc.time_s * k.count;
        fT += kc.sm_fraction * kc.time_s * k.count;
        lossT += kc.gemm_overlap_loss * kc.time_s * k.count;
      } else {
        exposed += kc.time_s * k.count;
      }
    }
    CHECK(gathers == 2 * m.layers);  // one per layer before its forward and again before its backward
    REQUIRE(T > 0);
    engine::EvalOptions opt;
    opt.keep_kernels = false;
    const auto a = engine::evaluate(m, alone, hw, opt);
    const auto b = engine::evaluate(m, sharded, hw, opt);
    const double C = a.step.microbatch_time_s;
    const double gemm = a.time_by_class[static_cast<int>(spec::KernelClass::kGemm)];
    const double attention = a.time_by_class[static_cast<int>(spec::KernelClass::kAttention)];
    const double share = gemm / (gemm + attention);
    REQUIRE(T < C);  // the gathers hide behind the GEMMs in time...
    // ...but not in SMs: the overlapped compute is slower than the same compute alone.
    CHECK(b.step.microbatch_time_s == doctest::Approx(C + fT + share * (lossT - fT) + exposed));
    CHECK(b.step.microbatch_time_s > C + exposed);
  }
}

TEST_CASE("frameworks: Megatron's default attention is cuDNN fused attention on Hopper+, flash2 before") {
  // frameworks/megatron.yaml attention.by_generation, from TE's get_attention_backend: FlashAttention is
  // disabled "to give FusedAttention preference on Hopper+" (compute capability >= 9.0).
  const auto& mega = spec::framework(0);
  CHECK(mega.attention_on(spec::Generation::kAmpere) == spec::AttentionKind::kFlash2);  // sm_80: flash-attn 2
  CHECK(mega.attention_on(spec::Generation::kHopper) == spec::AttentionKind::kCudnn);   // sm_90
  CHECK(mega.attention_on(spec::Generation::kBlackwell) == spec::AttentionKind::kCudnn);  // sm_100
  // Other frameworks keep one kernel on every generation (torchtitan: SDPA's flash backend).
  CHECK(spec::framework(*spec::find_framework("torchtitan")).attention_on(spec::Generation::kHopper) ==
        spec::AttentionKind::kFlash2);
  // A plan's own attention stays; the framework's default follows the GPU.
  spec::PlanSpec p;
  spec::apply_generation_defaults(p, spec::Generation::kHopper);
  CHECK(p.attention == spec::AttentionKind::kCudnn);
  spec::PlanSpec q;
  REQUIRE(spec::apply_setting(q, "attention", "flash2") == "");
  spec::apply_generation_defaults(q, spec::Generation::kHopper);
  CHECK(q.attention == spec::AttentionKind::kFlash2);
  // The engine runs the framework's kernel on the GPU whatever the plan showed: the attention kernel of a
  // default Megatron plan on an H100 is the cuDNN one (kind stored in Kernel::attention).
  const auto hw = test::gpu("h100_sxm");
  const auto m = test::model("llama3_8b");
  spec::PlanSpec r;
  r.seq_len = 4096;
  graph::Graph g;
  techniques::build_step(g, m, r, hw);
  bool seen = false;
  for (const auto& k : g.kernels)
    if (k.cls == graph::KernelClass::kAttention) {
      seen = true;
      CHECK(k.impl == static_cast<std::uint8_t>(spec::AttentionKind::kCudnn));
    }
  CHECK(seen);
}

TEST_CASE("frameworks: an unknown generation in attention.by_generation is a located error") {
  const auto dir = std::filesystem::temp_directory_path() / "ridgeline_fw_gen_test";
  std::filesystem::create_directories(dir);
  const auto file = (dir / "bad.yaml").string();
  {
    std::ofstream f(file);
    f << "name: Bad\nattention:\n  value: flash2\n  by_generation:\n    - {generation: volta, value: cudnn}\n"
         "  source: none\n";
  }
  try {
    spec::load_framework(file);
    FAIL("expected an error");
  } catch (const support::SpecError& e) {
    const std::string d = e.diagnostics().front().format();
    // Line 5; column 20: four spaces, "- {", "generation: " (19 characters) before the value.
    CHECK(d.find("bad.yaml:5:20: error: attention.by_generation[0].generation: expected one of ampere, ada, "
                 "hopper, blackwell, rtx_blackwell, cdna2, cdna3, cdna4, host, got \"volta\"") != std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("frameworks: Megatron keeps fp32 main gradients for bf16 and reduce-scatters them in fp32") {
  // megatron/training/arguments.py: --bf16 sets accumulate_allreduce_grads_in_fp32 (frameworks/megatron.yaml
  // main_grads). Llama-3-8B at DP 8 under the distributed optimizer (ZeRO-1), Psi parameters:
  //   weights 2 Psi (bf16), gradients 4 Psi (fp32 main_grad), masters + Adam 12 Psi / 8
  //   = 2 + 4 + 1.5 = 7.5 Psi bytes per GPU, against 2 + 2 + 1.5 = 5.5 Psi with bf16 gradients;
  //   the DP reduce-scatter moves the 4 Psi-byte buffer, twice the bf16 one.
  const auto hw = test::gpu("h100_sxm");
  const auto m = test::model("llama3_8b");
  const double psi = spec::count_params(m).total;
  spec::PlanSpec p;
  p.seq_len = 8192;
  p.parallel.dp = 8;
  p.parallel.zero = 1;
  p.global_batch = 64;
  CHECK(spec::main_grads_of(p) == spec::MainGrads::kFp32);
  const auto mm = memory::model_state(m, p);
  CHECK(mm.gradients == doctest::Approx(4 * psi));
  CHECK(mm.total() == doctest::Approx(7.5 * psi));
  CHECK(step_bytes(m, p, hw, "dp_grad_reduce_scatter") == doctest::Approx(4 * psi));
  // --main-grads working (Megatron's --grad-reduce-in-bf16): 2-byte gradients, 5.5 Psi.
  spec::PlanSpec w = p;
  REQUIRE(spec::apply_setting(w, "main_grads", "working") == "");
  CHECK(memory::model_state(m, w).total() == doctest::Approx(5.5 * psi));
  CHECK(step_bytes(m, w, hw, "dp_grad_reduce_scatter") == doctest::Approx(2 * psi));
  // fp16 under Megatron: accumulate_allreduce_grads_in_fp32 stays off (only the bf16 branch sets it).
  spec::PlanSpec h = p;
  h.precision = spec::Precision::kFp16;
  CHECK(spec::main_grads_of(h) == spec::MainGrads::kWorking);
  // A profile that states no main_grads keeps the working precision's (hf.yaml).
  spec::PlanSpec t = with("hf");
  CHECK(spec::main_grads_of(t) == spec::MainGrads::kWorking);
}

TEST_CASE("frameworks: --overlap-param-gather leaves only the first bucket of the ZeRO-1 all-gather exposed") {
  // Megatron's buckets hold max(40M, 1M x DP) parameters (distributed_data_parallel.py): at DP 8, 40M. The
  // bf16 all-gather of Llama-3-8B's Psi parameters (2 Psi bytes) becomes one exposed gather of the first
  // bucket, 2 x 40M = 80 MB, and 2 Psi - 80 MB beside the next step's first forward.
  const auto hw = test::gpu("h100_sxm");
  const auto m = test::model("llama3_8b");
  spec::PlanSpec p;
  p.seq_len = 8192;
  p.parallel.dp = 8;
  p.parallel.zero = 1;
  p.global_batch = 64;
  const double psi = techniques::local_params(m, p).trainable;
  CHECK_FALSE(spec::overlap_param_gather_of(p));  // frameworks/megatron.yaml: store_true, default False
  graph::Graph off;
  techniques::build_step(off, m, p, hw);
  spec::PlanSpec q = p;
  REQUIRE(spec::apply_setting(q, "overlap_param_gather", "true") == "");
  graph::Graph on;
  techniques::build_step(on, m, q, hw);
  double exposed = 0, hidden = 0;
  for (const auto& k : on.kernels)
    if (k.name == "dp_param_all_gather") (k.has(graph::kNextForward) ? hidden : exposed) += k.comm.bytes * k.count;
  CHECK(exposed == doctest::Approx(80e6));
  CHECK(hidden == doctest::Approx(2 * psi - 80e6));
  // The step: the gather of ~16 GB at DP 8 over NVLink takes tens of ms; the first forward (a 8192-token
  // micro-batch of an 8B model, ~0.1 s) hides it, so the step loses about that time.
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  const auto a = engine::evaluate(m, p, hw, opt);
  const auto b = engine::evaluate(m, q, hw, opt);
  CHECK(b.step.time_s < a.step.time_s);
  CHECK(b.step.exposed_comm_s < a.step.exposed_comm_s);
}

TEST_CASE("frameworks: Megatron refuses ZeRO-2/3 with PP; torchtitan refuses TP that does not divide the KV heads") {
  const auto hw = test::gpu("h100_sxm");
  const auto m = test::model("llama3_8b");  // 32 heads, 8 KV heads
  // Megatron: the distributed optimizer is ZeRO-1; its FSDP paths refuse PP (frameworks/megatron.yaml).
  spec::PlanSpec g;
  g.parallel.pp = 2;
  g.parallel.dp = 4;
  g.parallel.zero = 2;
  g.global_batch = 32;
  engine::Problem e = engine::check_plan(m, g, hw);
  CHECK(e.field == "parallel.zero");
  CHECK(e.message == "megatron refuses ZeRO-2 with pipeline parallelism (PP 2): its distributed optimizer shards only "
                     "the optimizer state (ZeRO-1), and its FSDP paths do not run with pipeline parallelism; use ZeRO-1");
  g.parallel.zero = 1;
  CHECK(engine::check_plan(m, g, hw).field.empty());
  // torchtitan's decoder raises unless TP divides n_kv_heads: TP 16 over 8 KV heads (16 % 8 = 0 the other way,
  // which Megatron-Core accepts by sub-sharding QKV since #2565) is refused; TP 8 divides them.
  spec::PlanSpec t = with("torchtitan");
  t.parallel.tp = 16;
  e = engine::check_plan(m, t, hw);
  CHECK(e.field == "parallel.tp");
  CHECK(e.message == "torchtitan refuses TP 16 with 8 KV heads: its tensor parallelism shards the KV heads, so TP "
                     "must divide them");
  t.parallel.tp = 8;
  CHECK(engine::check_plan(m, t, hw).field.empty());
  spec::PlanSpec mt;
  mt.parallel.tp = 16;
  CHECK(engine::check_plan(m, mt, hw).field.empty());
  // The search skips the refused layouts: over 16 GPUs under torchtitan no row has TP 16, and every refusal
  // is counted as a plan refusal.
  search::SearchSpec s;
  s.gpus = 16;
  s.global_batch = 16;
  s.threads = 1;
  s.top = 1000;
  s.recompute = {{spec::RecomputeKind::kFull, 0}};
  s.precision = {spec::Precision::kBf16};
  spec::PlanSpec base = with("torchtitan");
  base.seq_len = 4096;
  const auto r = search::run(s, m, base, hw);
  REQUIRE_FALSE(r.top.empty());
  for (const auto& c : r.top) CHECK(m.kv_heads % c.layout.tp == 0);
  CHECK(r.counts.plan > 0);
}

TEST_CASE("frameworks: an overlapped collective costs the compute beside it by how it runs") {
  // H100 SXM: 132 SMs (hardware_profiles/h100_sxm.yaml), persistent cuBLAS GEMMs (one CTA per SM).
  const auto hw = test::gpu("h100_sxm");
  const cost::CostParams c = engine::resolve_for(hw, spec::PlanSpec{}, engine::EvalOptions{});
  REQUIRE(c.sms == 132);
  graph::Kernel k;
  k.name = "tp_reduce_scatter";
  k.op = graph::Op::kCollective;
  k.cls = spec::KernelClass::kCollective;
  k.comm = {graph::Collective::kReduceScatter, 64.0 * (1 << 20), 8, 8};
  k.flags = graph::kOverlapped;
  // NCCL beside a persistent GEMM: a kernel holding fewer than 66 of the 132 SMs leaves 132 - ch SMs, so the
  // GEMM's 132 CTAs run in ceil(132 / (132 - ch)) = 2 waves: half its throughput (pytorch#143988).
  const cost::KernelCost nccl = cost::cost_kernel(k, c, false);
  REQUIRE(nccl.sm_fraction * 132 < 66);
  CHECK(nccl.gemm_overlap_loss == doctest::Approx(0.5));
  // TE userbuffers (pipeline / bulk): num_sm 16 (module/base.py get_default_config), the GEMM launched on
  // 132 - 16 = 116 SMs (CommOverlapBase: _math_sms = sm_count - num_comm_sm): it loses 16 / 132 = 0.1212.
  graph::Kernel u = k;
  u.flags |= graph::kCommUserbuffers;
  u.comm.sms = 16;
  const cost::KernelCost ub = cost::cost_kernel(u, c, false);
  CHECK(ub.gemm_overlap_loss == doctest::Approx(16.0 / 132));
  CHECK(ub.sm_fraction == doctest::Approx(16.0 / 132));
  CHECK(ub.time_s == doctest::Approx(nccl.time_s));  // the same bytes over the same link
  // Copy-engine ring exchange (TE ring_exchange, use_ce): no SM held, nothing lost.
  graph::Kernel ce = k;
  ce.flags |= graph::kCommCopyEngine;
  const cost::KernelCost cek = cost::cost_kernel(ce, c, false);
  CHECK(cek.gemm_overlap_loss == 0);
  CHECK(cek.sm_fraction == 0);
  // NCCL send/recv beside attention (CP's ring): the channels' SMs only, ch / 132.
  graph::Kernel a = k;
  a.flags |= graph::kBesideAttention;
  const cost::KernelCost at = cost::cost_kernel(a, c, false);
  CHECK(at.gemm_overlap_loss == doctest::Approx(nccl.sm_fraction));
  // Megatron's --tp-comm-overlap with SP marks each TP collective as TE runs it (frameworks/megatron.yaml
  // tp_overlap_mechanism): the forward all-gather by ring exchange, the forward reduce-scatter on 16 SMs;
  // torchtitan's (tp_overlap_mechanism absent) stay NCCL.
  const auto m = test::model("llama3_8b");
  for (const char* fw : {"megatron", "torchtitan"}) {
    spec::PlanSpec p = with(fw);
    p.seq_len = 4096;
    p.parallel.tp = 8;
    p.parallel.sp = true;
    p.parallel.tp_comm_overlap = true;
    graph::Graph g;
    techniques::build_step(g, m, p, hw);
    const bool te = std::string_view(fw) == "megatron";
    // The hidden share of each forward collective's count (2 per layer, 32
    // layers: 64): under userbuffers the ring-exchange all-gather hides
    // 1 - 1/8 = 7/8 (TE base.py:387, num_splits = TP), the pipelined
    // reduce-scatter 3/4 (num_splits 4); torchtitan its profile's 0.5 of each.
    double ag_hidden = 0, ag_all = 0, rs_hidden = 0, rs_all = 0;
    for (const auto& x : g.kernels) {
      if (x.phase != spec::Phase::kForward) continue;
      if (x.name == "tp_all_gather") (x.has(graph::kOverlapped) ? ag_hidden : ag_all) += x.count;
      if (x.name == "tp_reduce_scatter") (x.has(graph::kOverlapped) ? rs_hidden : rs_all) += x.count;
    }
    CHECK(ag_hidden + ag_all == doctest::Approx(64));
    CHECK(rs_hidden + rs_all == doctest::Approx(64));
    CHECK(ag_hidden / 64 == doctest::Approx(te ? 7.0 / 8 : 0.5));
    CHECK(rs_hidden / 64 == doctest::Approx(te ? 3.0 / 4 : 0.5));
    int seen = 0;
    for (const auto& x : g.kernels) {
      if (!x.has(graph::kOverlapped) || x.phase != spec::Phase::kForward) continue;
      if (x.name == "tp_all_gather") {
        CHECK(x.has(graph::kCommCopyEngine) == te);
        ++seen;
      }
      if (x.name == "tp_reduce_scatter") {
        CHECK(x.has(graph::kCommUserbuffers) == te);
        CHECK(x.comm.sms == (te ? 16 : 0));
        ++seen;
      }
    }
    CHECK(seen == 2);
  }
}

TEST_CASE("frameworks: DeepSpeed ZeRO-3 gathers per module, each call paying its latency; FSDP per layer") {
  // frameworks/deepspeed.yaml zero3_fetch: per module, stage3_prefetch_bucket_size 5e7 elements. A tensor of
  // at least 5e7 elements is a call; smaller ones coalesce into ceil(elements / 5e7) calls.
  const auto& ds = spec::framework(*spec::find_framework("deepspeed"));
  const auto& fsdp = spec::framework(*spec::find_framework("fsdp"));
  // GPT-3 175B (h 12288, FFN 49152, GELU), TP 1: QKV 12288 x 36864 = 4.53e8, projection 1.51e8, FC1 and
  // FC2 6.04e8 each: 4 calls per layer and pass.
  const auto gpt = test::model("gpt3_175b");
  CHECK(spec::zero3_gathers_per_layer(ds, gpt, 1, 1) == 4);
  // Llama-3-8B (h 4096, 8 KV heads of 128, FFN 14336, SwiGLU), TP 1: QKV 4096 x 6144 = 2.52e7 and the
  // projection 1.68e7 coalesce (4.19e7 < 5e7: 1 call); FC1 (gate and up) 1.17e8 and FC2 5.87e7: 3 calls.
  const auto llama = test::model("llama3_8b");
  CHECK(spec::zero3_gathers_per_layer(ds, llama, 1, 1) == 3);
  CHECK(spec::zero3_gathers_per_layer(fsdp, gpt, 1, 1) == 1);
  // The step of GPT-3 175B under DeepSpeed ZeRO-3 at DP 64: 96 layers x 4 = 384 gathers before the forward
  // and 384 before the backward per micro-batch, each 1/384 of the 16-bit weights.
  const auto hw = test::gpu("h100_sxm");
  spec::PlanSpec p = with("deepspeed");
  p.seq_len = 2048;
  p.parallel.dp = 64;
  p.parallel.zero = 3;
  p.global_batch = 64;
  graph::Graph g;
  techniques::build_step(g, gpt, p, hw);
  const double weights = techniques::local_params(gpt, p).weights;
  double calls = 0;
  for (const auto& k : g.kernels)
    if (k.name == "zero3_param_all_gather") {
      calls += k.count;
      CHECK(k.comm.bytes == doctest::Approx(2 * weights / 384));
    }
  CHECK(calls == 768);
  // The same step under FSDP (per layer): 96 + 96 calls of 1/96 each; DeepSpeed's calls are 4 x as many, each
  // paying the ring's latency, so its gathers take longer for the same bytes.
  spec::PlanSpec f = p;
  f.framework = *spec::find_framework("fsdp");
  graph::Graph gf;
  techniques::build_step(gf, gpt, f, hw);
  double fsdp_calls = 0;
  for (const auto& k : gf.kernels)
    if (k.name == "zero3_param_all_gather") fsdp_calls += k.count;
  CHECK(fsdp_calls == 192);
}

TEST_CASE("frameworks: Megatron overlaps pipeline p2p under the interleaved schedule only") {
  // arguments.py: overlap_p2p_comm on unless --no-overlap-p2p-communication, turned off without virtual stages.
  const auto hw = test::gpu("h100_sxm");
  const auto m = test::model("llama3_8b");
  spec::PlanSpec p;
  p.seq_len = 4096;
  p.parallel.pp = 4;
  p.parallel.dp = 2;
  p.global_batch = 32;
  auto p2p_overlapped = [&](const spec::PlanSpec& q) {
    graph::Graph g;
    techniques::build_step(g, m, q, hw);
    int seen = 0, overlapped = 0;
    for (const auto& k : g.kernels)
      if (k.name == "pp_send_recv") ++seen, overlapped += k.has(graph::kOverlapped);
    REQUIRE(seen == 2);
    return overlapped == 2;
  };
  CHECK_FALSE(p2p_overlapped(p));
  p.parallel.virtual_stages = 2;
  CHECK(p2p_overlapped(p));
  p.framework = *spec::find_framework("deepspeed");
  CHECK_FALSE(p2p_overlapped(p));
}
