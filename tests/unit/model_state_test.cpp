// One precision policy and one model-state function (memory::model_state):
// the memory model and the search's pruning bound read the same numbers, so
// the bound can never prune a layout that `predict` says fits.
//  - Bound: model_state(m, p) without the fp8 weight copies is a sum of
//    non-negative terms of MemoryResult::total (weights, gradients, masters,
//    optimizer; activations, buffers, workspace and fragmentation are >= 0),
//    so it is <= the predicted peak for every plan.
//  - Rajbhandari et al. 2020 (ZeRO, Sec. 3): mixed-precision Adam keeps
//    2 + 2 + 4 + 4 + 4 = 16 bytes per parameter; stage 1 leaves 4 + 12/N_d,
//    stage 2 2 + 14/N_d, stage 3 16/N_d.
//  - Dettmers et al. 2023 (QLoRA, Sec. 3): frozen base in NF4 with double
//    quantization, 4.127 bits per weight; adapters in bf16, no fp32 masters.
#include <doctest/doctest.h>

#include <filesystem>

#include "ridgeline/memory/memory.hpp"
#include "ridgeline/search/search.hpp"
#include "ridgeline/spec/precision.hpp"
#include "ridgeline/techniques/params.hpp"
#include "test_support.hpp"

using namespace ridgeline;

TEST_CASE("precision policy") {
  spec::PlanSpec p;
  p.precision = spec::Precision::kBf16;
  auto pol = spec::precision_policy(p);
  CHECK(pol.weight_bytes == 2);
  // Megatron (the default framework) keeps fp32 main gradients for bf16; the working precision's are 2 bytes.
  CHECK(pol.gradient_bytes == 4);
  REQUIRE(spec::apply_setting(p, "main_grads", "working") == "");
  pol = spec::precision_policy(p);
  CHECK(pol.gradient_bytes == 2);
  CHECK(pol.master_bytes == 4);
  CHECK(pol.activation == spec::Dtype::kBf16);
  p.precision = spec::Precision::kTf32;
  pol = spec::precision_policy(p);
  CHECK(pol.weight_bytes == 4);
  CHECK(pol.master_bytes == 0);
  CHECK(pol.linear_gemm == spec::Dtype::kTf32);
  CHECK(pol.activation == spec::Dtype::kFp32);
  p.precision = spec::Precision::kFp8;
  pol = spec::precision_policy(p);
  CHECK(pol.fp8_linear);
  CHECK(pol.activation_bytes == 2);
  p.precision = spec::Precision::kBf16;
  p.finetune.mode = spec::FinetuneMode::kQlora;
  pol = spec::precision_policy(p);
  CHECK(pol.frozen_weight_bytes == doctest::Approx(4.127 / 8));
  CHECK(pol.master_bytes == 0);
}

TEST_CASE("model state: ZeRO stages reproduce Rajbhandari et al.'s bytes per parameter") {
  const auto m = test::model("llama2_7b");
  spec::PlanSpec p;
  p.parallel.dp = 8;
  p.optimizer.kind = spec::OptimizerKind::kAdam;
  REQUIRE(spec::apply_setting(p, "main_grads", "working") == "");  // the paper's 16-bit gradients
  const double psi = techniques::local_params(m, p).trainable;
  const double nd = 8;
  const double expect[4] = {16 * psi, 4 * psi + 12 * psi / nd, 2 * psi + 14 * psi / nd, 16 * psi / nd};
  for (int z = 0; z <= 3; ++z) {
    p.parallel.zero = z;
    CHECK(memory::model_state(m, p).total() == doctest::Approx(expect[z]).epsilon(1e-12));
  }
}

TEST_CASE("search pruning bound <= predicted peak memory over the shipped grid") {
  namespace fs = std::filesystem;
  const char* models[] = {"llama2_7b", "llama3_8b", "mixtral_8x7b", "gpt3_1.3b", "llama1_65b"};
  const char* gpus[] = {"h100_sxm", "a100_sxm_40gb", "l40s", "rtx_4090", "mi300x"};
  const spec::FinetuneMode modes[] = {spec::FinetuneMode::kFull, spec::FinetuneMode::kLora,
                                      spec::FinetuneMode::kQlora};
  const spec::Precision precs[] = {spec::Precision::kFp32, spec::Precision::kBf16, spec::Precision::kFp16,
                                   spec::Precision::kFp8};
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  int checked = 0;
  for (const char* g : gpus) {
    const auto hw = test::gpu(g);
    for (const char* mid : models) {
      const auto m = test::model(mid);
      for (auto mode : modes)
        for (auto prec : precs)
          for (int zero : {0, 1, 3})
            for (int dp : {1, 8}) {
              spec::PlanSpec p;
              p.seq_len = 1024;
              p.precision = prec;
              p.finetune.mode = mode;
              p.finetune.targets = 127;
              p.parallel.dp = dp;
              p.parallel.zero = zero;
              if (m.is_moe() && dp == 8) p.parallel.ep = 2;
              const auto pred = engine::evaluate(m, p, hw, opt);
              if (pred.status == engine::Status::kInvalid) continue;
              const double bound = memory::model_state(m, p).total();
              CHECK_MESSAGE(bound <= pred.memory.total, g, " ", mid, " ", spec::to_string(mode), " ",
                            spec::to_string(prec), " zero ", zero, " dp ", dp);
              // The bound is the memory model's own model state (without fp8 weight copies).
              const auto& mm = pred.memory;
              if (prec != spec::Precision::kFp8)
                CHECK(bound == doctest::Approx(mm.weights + mm.gradients + mm.master_weights + mm.optimizer));
              ++checked;
            }
    }
  }
  MESSAGE(checked, " plans checked");
  CHECK(checked > 500);
}

TEST_CASE("QLoRA search: a 65B fine-tune on one 48 GB GPU is evaluated, not pruned by the model-state bound") {
  // Dettmers et al. 2023 fine-tune LLaMA-65B on one 48 GB GPU (r = 64 on all
  // linear layers). The search must not prune it with a bound that prices the
  // NF4 base at 16 bits or adds fp32 masters.
  const auto m = test::model("llama1_65b");
  const auto hw = test::gpu("l40s");
  spec::PlanSpec base;
  base.seq_len = 512;
  base.global_batch = 1;
  base.finetune.mode = spec::FinetuneMode::kQlora;
  base.finetune.rank = 64;
  base.finetune.targets = 127;
  REQUIRE(spec::apply_setting(base, "main_grads", "working") == "");  // the adapters' bf16 gradients (qlora.py)
  search::SearchSpec s;
  s.gpus = 1;
  s.global_batch = 1;
  s.threads = 1;
  s.recompute = {{spec::RecomputeKind::kFull, 0}};
  s.precision = {spec::Precision::kBf16};
  const auto r = search::run(s, m, base, hw);
  // The model-state bound does not prune it: the one layout of one GPU is evaluated.
  CHECK(r.counts.state == 0);
  REQUIRE(r.counts.evaluated == 1);
  // predict says it fits at the point estimate (48.02 GB of 48.3 GB); the
  // search asks more since issue 16: its peak memory's upper end (allocator
  // reserve twice over, 50.2 GB) within 95% of capacity, so it does not qualify.
  search::Layout l;
  l.recompute = {spec::RecomputeKind::kFull, 0};
  const auto pred = engine::evaluate(m, search::plan_for(base, l, 1), hw);
  CHECK(pred.status == engine::Status::kOk);
  CHECK(pred.memory.total < hw.memory_bytes);
  CHECK(search::memory_upper_bytes(pred.memory) > hw.memory_bytes * (1 - search::kDefaultHeadroom));
  CHECK(r.top.empty());
  CHECK(r.counts.over_memory == 1);
}
