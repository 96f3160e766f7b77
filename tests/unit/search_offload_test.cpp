// CPU offload as a searched dimension (search::SearchSpec::offload).
#include <doctest/doctest.h>

#include "ridgeline/search/search.hpp"
#include "ridgeline/spec/framework.hpp"
#include "test_support.hpp"

using namespace ridgeline;

namespace {

struct Case70B {
  spec::HardwareSpec hw = test::gpu("h100_sxm");
  spec::ModelSpec m = test::model("llama3_70b");
  spec::PlanSpec base;
  search::SearchSpec s;
  Case70B() {
    base.framework = *spec::find_framework("deepspeed");
    base.seq_len = 4096;
    base.global_batch = 32;
    s.gpus = 8;
    s.global_batch = 32;
    s.cp = 1;
    s.vpp = 1;
    s.threads = 1;
  }
};

}  // namespace

TEST_CASE("search offload: Llama-3-70B on 8 H100 under DeepSpeed fits only with the optimizer state on the CPU") {
  Case70B c;
  // Without offload: bf16 weights and gradients (4 bytes a parameter) and
  // 12 bytes of fp32 masters and Adam moments, sharded at best 8 ways by
  // ZeRO-3: 16 x 70.6e9 / 8 = 141 GB a GPU, over the 80 GB card; with
  // ZeRO-1/2 more. So nothing qualifies.
  const auto without = search::run(c.s, c.m, c.base, c.hw);
  CHECK(without.top.empty());
  // With the three offload settings, every other dimension the same: the
  // enumeration is three times as large, and the best row offloads.
  c.s.offload = search::searchable_offloads();
  REQUIRE(c.s.offload.size() == 3);
  const auto with = search::run(c.s, c.m, c.base, c.hw);
  CHECK(with.counts.enumerated == 3 * without.counts.enumerated);
  REQUIRE(!with.top.empty());
  const auto& best = with.top.front();
  CHECK(best.layout.offload.optimizer_on_cpu());
  CHECK(best.layout.zero >= 1);
  // The row is what `predict` says of its plan: the same engine path.
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  const auto p = search::plan_for(c.base, best.layout, c.s.global_batch);
  const auto pred = engine::evaluate(c.m, p, c.hw, opt);
  REQUIRE(pred.status == engine::Status::kOk);
  CHECK(pred.step.time_s == doctest::Approx(best.step_time_s).epsilon(1e-12));
  CHECK(pred.step.offload.cpu_optimizer_s > 0);
  CHECK(pred.memory.total == doctest::Approx(best.memory_bytes).epsilon(1e-12));
}

TEST_CASE("search offload: a framework without offload refuses it as a plan, not a crash") {
  Case70B c;
  // Composer's FSDP1 (the fsdp profile): no CPU offload (torchtitan's
  // training.enable_cpu_offload and DeepSpeed's offload_* have it).
  c.base.framework = *spec::find_framework("fsdp");
  c.s.offload = search::searchable_offloads();
  const auto r = search::run(c.s, c.m, c.base, c.hw);
  for (const auto& row : r.top) CHECK(!row.layout.offload.any());
  CHECK(r.counts.plan > 0);
  CHECK(search::offload_text({spec::OffloadDevice::kCpu, spec::OffloadDevice::kCpu}) == "offload optimizer+params");
}
