// The optimizer's memory savers a single-GPU fine-tune uses (torchtune's
// 8B_full_single_device config): each parameter stepped in backward with its
// gradient freed at once (optimizer.in_backward), and bitsandbytes' paged
// optimizer state in CUDA unified memory (optimizer.paged). Expected values
// are hand calculations from the model's shapes (Llama-3-8B config.json) and
// the sources' code named in each comment.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/published.hpp"
#include "ridgeline/validation/published.hpp"
#include "test_support.hpp"

using namespace ridgeline;

namespace {

/// Llama-3-8B fully fine-tuned on one RTX 4090 as torchtune's single-device
/// recipe runs it: pure bf16 (no master), 8-bit AdamW, full recomputation,
/// batch 2 x 2048 with no accumulation, the layers and the loss compiled.
spec::PlanSpec single_gpu_full() {
  spec::PlanSpec p;
  p.framework = *spec::find_framework("torchtitan");
  p.seq_len = 2048;
  p.micro_batch = 2;
  p.global_batch = 2;
  p.master_weights = spec::MasterWeights::kNone;
  p.optimizer.kind = spec::OptimizerKind::kAdam8bit;
  p.recompute = {spec::RecomputeKind::kFull, 0, 0};
  p.fusion = spec::Fusion::kCompiled;
  p.fusion_given = true;
  p.cross_entropy = spec::CrossEntropy::kFused;
  p.cross_entropy_given = true;
  return p;
}

}  // namespace

TEST_CASE("optimizer in backward: one tensor's gradient held, the embedding's (torchtune optimizer_in_bwd)") {
  const auto m = test::model("llama3_8b");
  const auto hw = test::gpu("rtx_4090");
  spec::PlanSpec p = single_gpu_full();
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  const auto whole = engine::evaluate(m, p, hw, opt);
  p.optimizer.in_backward = true;
  const auto hooked = engine::evaluate(m, p, hw, opt);
  // Without it: every parameter's bf16 gradient, 8,030,261,248 x 2 B.
  CHECK(whole.memory.gradients == doctest::Approx(8030261248.0 * 2).epsilon(1e-9));
  // With it: the largest tensor's, the untied embedding (and LM head),
  // vocab 128,256 x hidden 4,096 = 525,336,576 elements x 2 B.
  CHECK(hooked.memory.gradients == doctest::Approx(128256.0 * 4096 * 2).epsilon(1e-12));
  // The rest of the model state is the same; the step runs the same kernels.
  CHECK(hooked.memory.weights == whole.memory.weights);
  CHECK(hooked.memory.optimizer == whole.memory.optimizer);
  CHECK(hooked.step.time_s == doctest::Approx(whole.step.time_s).epsilon(1e-12));
}

TEST_CASE("paged optimizer: the state outside the peak; what does not fit beside it crosses the host link") {
  const auto m = test::model("llama3_8b");
  const auto hw = test::gpu("rtx_4090");
  spec::PlanSpec p = single_gpu_full();
  p.optimizer.in_backward = true;
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  const auto resident = engine::evaluate(m, p, hw, opt);
  p.optimizer.paged = true;
  const auto paged = engine::evaluate(m, p, hw, opt);
  // 8-bit Adam: two 1-byte states per parameter and an fp32 absmax per
  // 2048-element block of each (Dettmers et al. 2022): 8,030,261,248 x
  // (2 + 8 / 2048) B = 16.09 GB, now in unified memory.
  CHECK(resident.memory.optimizer == doctest::Approx(8030261248.0 * (2 + 8.0 / 2048)).epsilon(1e-9));
  CHECK(paged.memory.optimizer == 0);
  CHECK(paged.memory.paged_bytes == doctest::Approx(resident.memory.optimizer).epsilon(1e-12));
  // Out of the peak: allocated falls by exactly the state.
  CHECK(paged.memory.allocated == doctest::Approx(resident.memory.allocated - resident.memory.optimizer).epsilon(1e-9));
  CHECK(paged.memory.fits);
  CHECK_FALSE(resident.memory.fits);  // 15 GiB of weights and 15 GiB of state do not share 24 GB
  // What the GPU cannot hold beside the rest: state - (capacity - peak).
  const double free_bytes = paged.memory.capacity - paged.memory.total;
  REQUIRE(free_bytes > 0);
  CHECK(paged.memory.paged_to_host == doctest::Approx(paged.memory.paged_bytes - free_bytes).epsilon(1e-9));
  // Every step it comes in for the update and goes out again, both ways at
  // once over the PCIe 4.0 x16 host link (the profile's 25 GB/s a direction):
  // the step grows by those bytes / link, the rest unchanged.
  CHECK(hw.host.link_bytes_per_s == doctest::Approx(25e9));
  CHECK(paged.step.offload.paged_bytes == doctest::Approx(paged.memory.paged_to_host).epsilon(1e-12));
  CHECK(paged.step.offload.paged_s == doctest::Approx(paged.memory.paged_to_host / 25e9).epsilon(1e-12));
  CHECK(paged.step.time_s == doctest::Approx(resident.step.time_s + paged.step.offload.paged_s).epsilon(1e-12));
  // On an 80 GB GPU the whole state stays beside the rest: nothing pages.
  const auto big = engine::evaluate(m, p, test::gpu("a100_sxm_80gb"), opt);
  CHECK(big.memory.paged_to_host == 0);
  CHECK(big.step.offload.paged_s == 0);
}

TEST_CASE("optimizer memory savers: refused where the framework or the layout does not run them") {
  const auto m = test::model("llama3_8b");
  const auto hw = test::gpu("h100_sxm");
  spec::PlanSpec p = single_gpu_full();
  p.optimizer.in_backward = true;
  CHECK(engine::check_plan(m, p, hw).message.empty());
  // Megatron-Core's optimizer steps after the backward and is not bitsandbytes'.
  p.framework = *spec::find_framework("megatron");
  auto r = engine::check_plan(m, p, hw);
  CHECK(r.field == "optimizer.in_backward");
  CHECK(r.message == "megatron steps the optimizer after the backward, not in it (offered by torchtitan)");
  p.optimizer.in_backward = false;
  p.optimizer.paged = true;
  r = engine::check_plan(m, p, hw);
  CHECK(r.field == "optimizer.paged");
  CHECK(r.message == "megatron builds its own optimizer, not bitsandbytes' paged ones (offered by fsdp, hf and "
                     "torchtitan)");
  p.framework = *spec::find_framework("torchtitan");
  CHECK(engine::check_plan(m, p, hw).message.empty());
  // bitsandbytes pages Adam, AdamW and Lion state only.
  p.optimizer.kind = spec::OptimizerKind::kSgd;
  CHECK(engine::check_plan(m, p, hw).field == "optimizer.paged");
  p.optimizer = {};
  // torchtune: "Gradient accumulation is not supported with optimizer in
  // bwd": a global batch of 4 in micro-batches of 2 is two per step.
  p.optimizer.in_backward = true;
  p.global_batch = 4;
  r = engine::check_plan(m, p, hw);
  CHECK(r.field == "optimizer.in_backward");
  CHECK(r.message.find("got 2 (a global batch of 4 over micro-batch 2 x DP 1)") != std::string::npos);
  // torchtitan build_optimizers: NotImplementedError under pipeline parallelism.
  p.global_batch = 2;
  p.parallel.pp = 2;
  CHECK(engine::check_plan(m, p, hw).message ==
        "optimizer in backward is not supported with pipeline parallelism (torchtitan build_optimizers)");
}

TEST_CASE("torchtune's single-device full fine-tune of Llama 3.1 8B on a 4090 fits, as it ran") {
  // torchtune README (commit 0031bfb), 18.9 GiB reserved: its config
  // (8B_full_single_device.yaml) pages PagedAdamW8bit's state and steps in
  // backward; without those the plan needs 50.9 GiB of a 24 GB card.
  validation::PublishedOptions o;
  o.profiles_dir = std::string(RIDGELINE_SOURCE_DIR) + "/hardware_profiles";
  o.group = "torchtune_readme";
  const auto file = spec::load_published(std::string(RIDGELINE_SOURCE_DIR) + "/validation/published.yaml");
  const auto report = validation::validate_published(file, o);
  const validation::PublishedResult* row = nullptr;
  for (const auto& x : report.results)
    if (x.id == "torchtune_readme_llama3_1_8B_full_1x4090") row = &x;
  REQUIRE(row);
  REQUIRE(row->predicted);
  CHECK(row->fits);
  const auto says = [&](std::string_view line) {
    return std::find(row->assumptions.begin(), row->assumptions.end(), line) != row->assumptions.end();
  };
  CHECK(says("optimizer adam8bit, paged (training.optimizer 'bitsandbytes.optim.PagedAdamW8bit')"));
  CHECK(says("optimizer in backward (training.optimizer_in_bwd)"));
  REQUIRE(row->memory);
  // Within 10% of the 18.9 GiB torchtune measured.
  CHECK(std::abs(row->memory->error_pct) < 10);
}

TEST_CASE("advise offers the optimizer's memory savers where the framework runs them") {
  const std::string plan =
      "--gpu rtx_4090 --model llama3_8b --micro-batch 2 --global-batch 2 --seq 2048 --recompute full "
      "--master-weights none --optimizer adam8bit";
  const auto titan = test::run_cli("advise " + plan + " --framework torchtitan");
  REQUIRE(titan.status <= 1);
  CHECK(titan.out.find("--optimizer-in-backward") != std::string::npos);
  CHECK(titan.out.find("--paged-optimizer") != std::string::npos);
  const auto megatron = test::run_cli("advise " + plan + " --framework megatron");
  REQUIRE(megatron.status <= 1);
  CHECK(megatron.out.find("--optimizer-in-backward") == std::string::npos);
  CHECK(megatron.out.find("--paged-optimizer") == std::string::npos);
}
