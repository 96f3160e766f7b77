// CPU offload (spec::OffloadSpec, techniques::offload_cost, memory::model_state):
// the bytes that leave the GPU, the host memory they take, the time the step
// waits for the host link and CPU Adam, the refused combinations and the
// launch-config imports. Independent expectations, by hand:
//  - Llama-3-8B has Psi = 8,030,261,248 parameters: embedding and LM head
//    2 x 128256 x 4096 = 1,050,673,152; each of 32 layers q 4096^2 + k, v
//    2 x 4096 x 1024 + o 4096^2 + MLP 3 x 4096 x 14336 + 2 norms x 4096 =
//    218,112,000 (6,979,584,000 for 32); final norm 4096.
//  - ZeRO-Offload's model state (DeepSpeed memory docs, "Memory
//    Requirements"): on the host 16 bytes per parameter (fp32 weights,
//    gradients, momentum and variance), sharded over the DP ranks; on the
//    GPU under ZeRO-2 only the 16-bit weights ("2 * params"); with the
//    parameters offloaded (ZeRO-3) the host also holds the 16-bit weights
//    (18 bytes).
//  - Time (Ren et al. 2021, Sec. 4): per step the gradient shard goes
//    device-to-host (behind backward), CPU Adam updates the shard, the 16-bit
//    parameter shard comes back host-to-device; the last two are exposed.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/memory/memory.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/launch_config.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "ridgeline/techniques/offload.hpp"
#include "test_support.hpp"

using namespace ridgeline;
namespace fs = std::filesystem;

namespace {

constexpr double kPsi = 8'030'261'248.0;  // Llama-3-8B, counted above

spec::PlanSpec offload_plan(std::string_view framework, int zero, int dp) {
  spec::PlanSpec p;
  REQUIRE(spec::apply_setting(p, "framework", framework) == "");
  p.precision = spec::Precision::kBf16;
  p.seq_len = 8192;
  p.micro_batch = 1;
  p.parallel.dp = dp;
  p.parallel.zero = zero;
  p.offload.optimizer = spec::OffloadDevice::kCpu;
  // 16-bit gradients (Megatron's --grad-reduce-in-bf16), as the host-link figures below count them.
  REQUIRE(spec::apply_setting(p, "main_grads", "working") == "");
  return p;
}

std::string temp_file(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / ("ridgeline_offload_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string f = (dir / name).string();
  std::ofstream(f) << text;
  return f;
}

/// The first diagnostic of a failing call, without the temporary path.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const support::SpecError& e) {
    const auto s = e.diagnostics().front().format();
    return s.substr(s.find(':'));
  }
  return "no error";
}

}  // namespace

TEST_CASE("offload: the optimizer state leaves the GPU for the host by DeepSpeed's documented bytes") {
  const auto m = test::model("llama3_8b");
  spec::PlanSpec p = offload_plan("deepspeed", 2, 8);
  REQUIRE(techniques::local_params(m, p).trainable == kPsi);
  spec::PlanSpec on_gpu = p;
  on_gpu.offload = {};
  const memory::ModelState gpu = memory::model_state(m, on_gpu);
  const memory::ModelState off = memory::model_state(m, p);
  // Without offload, ZeRO-2 over 8: weights 2 Psi, gradients 2 Psi / 8,
  // masters 4 Psi / 8, Adam moments 8 Psi / 8 (Rajbhandari et al. 2020).
  CHECK(gpu.master_weights == doctest::Approx(4 * kPsi / 8));
  CHECK(gpu.optimizer == doctest::Approx(8 * kPsi / 8));
  CHECK(gpu.host == 0);
  // Offloaded: 12 Psi / 8 of masters and moments and the 2 Psi / 8 gradient
  // shard leave the GPU; the GPU keeps the 2 Psi weights.
  CHECK(off.weights == doctest::Approx(2 * kPsi));
  CHECK(off.master_weights == 0);
  CHECK(off.optimizer == 0);
  CHECK(off.gradients == 0);
  CHECK(gpu.total() - off.total() == doctest::Approx(14 * kPsi / 8));  // 14,052,957,184 bytes
  // Host: 16 Psi / 8 = 16,060,522,496 bytes (4 master + 8 moments + 4 fp32 gradients).
  CHECK(off.host == doctest::Approx(16 * kPsi / 8));
  // ZeRO-1 keeps its whole 16-bit gradients on the GPU until the step.
  p.parallel.zero = 1;
  CHECK(memory::model_state(m, p).gradients == doctest::Approx(2 * kPsi));
  // ZeRO-3 with the parameters offloaded too: 18 Psi / 8 on the host, no
  // weight shard on the GPU.
  p.parallel.zero = 3;
  p.offload.params = spec::OffloadDevice::kCpu;
  const memory::ModelState infinity = memory::model_state(m, p);
  CHECK(infinity.host == doctest::Approx(18 * kPsi / 8));
  CHECK(infinity.weights == 0);
  CHECK(infinity.total() == 0);

  // The prediction carries the host bytes and the profile's host memory:
  // DGX H100, 2 TB for 8 GPUs = 256 GiB per GPU (hardware_profiles/h100_sxm.yaml).
  const auto hw = test::gpu("h100_sxm");
  p = offload_plan("deepspeed", 2, 8);
  const auto pred = engine::evaluate(m, p, hw);
  REQUIRE(pred.status == engine::Status::kOk);
  CHECK(pred.memory.host_bytes == doctest::Approx(16 * kPsi / 8));
  CHECK(pred.memory.host_capacity == 256.0 * 1024 * 1024 * 1024);
  CHECK(pred.memory.host_fits);
  CHECK(pred.memory.master_weights == 0);
  CHECK(pred.memory.optimizer == 0);
}

TEST_CASE("offload: the step adds the host link's transfers and CPU Adam, from the profile's figures") {
  const auto m = test::model("llama3_8b");
  const auto hw = test::gpu("h100_sxm");
  // h100_sxm.yaml host: link 50 GB/s per direction, CPU Adam 1.1G params/s per GPU.
  REQUIRE(hw.host.link_bytes_per_s == 50e9);
  REQUIRE(hw.host.cpu_adam_params_per_s == 1.1e9);
  // Megatron, distributed optimizer (ZeRO-1) over DP 8, one micro-batch.
  spec::PlanSpec p = offload_plan("megatron", 1, 8);
  spec::PlanSpec base = p;
  base.offload = {};
  const auto off = engine::evaluate(m, p, hw);
  const auto gpu = engine::evaluate(m, base, hw);
  REQUIRE(off.status == engine::Status::kOk);
  const auto& o = off.step.offload;
  // Shard P = Psi / 8 = 1,003,782,656 parameters.
  CHECK(o.cpu_params == doctest::Approx(kPsi / 8));
  // CPU Adam: 1,003,782,656 / 1.1e9 = 0.912530 s.
  CHECK(o.cpu_optimizer_s == doctest::Approx(0.912530).epsilon(1e-5));
  // Parameters back (bf16): 2 x 1,003,782,656 / 50e9 = 0.0401513 s; the
  // gradients out the same, once per step (Megatron reduces at the step).
  CHECK(o.param_h2d_bytes == doctest::Approx(2 * kPsi / 8));
  CHECK(o.param_h2d_s == doctest::Approx(0.0401513).epsilon(1e-5));
  CHECK(o.grad_d2h_bytes == doctest::Approx(2 * kPsi / 8));
  CHECK(o.grad_d2h_s == doctest::Approx(0.0401513).epsilon(1e-5));
  // A micro-batch's backward of 8192 tokens is longer than 40 ms: the
  // gradient copy hides behind it; CPU Adam and the copy back are exposed.
  CHECK(o.hidden_s == doctest::Approx(o.grad_d2h_s));
  CHECK(o.exposed_s == doctest::Approx(0.912530 + 0.0401513).epsilon(1e-5));
  // The GPU's optimizer kernel no longer runs; the step is the GPU-only
  // step less that kernel plus the exposed offload time.
  const double gpu_optimizer_kernel_s = gpu.step.optimizer_s - off.step.optimizer_s;
  CHECK(gpu_optimizer_kernel_s > 0);
  CHECK(off.step.time_s == doctest::Approx(gpu.step.time_s - gpu_optimizer_kernel_s + o.exposed_s).epsilon(1e-9));
  bool has_optimizer_kernel = false;
  for (const auto& k : off.kernels) has_optimizer_kernel = has_optimizer_kernel || k.name == "optimizer_step";
  CHECK_FALSE(has_optimizer_kernel);

  // DeepSpeed ZeRO-2 reduces and copies every micro-batch's gradients
  // (frameworks/deepspeed.yaml grad_reduce: per_microbatch): 4 micro-batches
  // of a global batch of 32 over DP 8 copy 4 x 2 x Psi / 8 bytes.
  p = offload_plan("deepspeed", 2, 8);
  p.global_batch = 32;
  const auto ds = engine::evaluate(m, p, hw);
  REQUIRE(ds.status == engine::Status::kOk);
  CHECK(ds.step.offload.grad_d2h_bytes == doctest::Approx(4 * 2 * kPsi / 8));
  CHECK(ds.step.offload.param_h2d_bytes == doctest::Approx(2 * kPsi / 8));

  // ZeRO-Infinity: every micro-batch fetches the 16-bit shard twice
  // (forward, backward), 2 x 2 x Psi / 8 bytes; nothing comes back after the step.
  p = offload_plan("deepspeed", 3, 8);
  p.offload.params = spec::OffloadDevice::kCpu;
  const auto inf = techniques::offload_cost(m, p, hw, 1, 1.0, 2.0);
  CHECK(inf.param_fetch_bytes == doctest::Approx(2 * 2 * kPsi / 8));
  CHECK(inf.param_fetch_s == doctest::Approx(4 * kPsi / 8 / 50e9));
  CHECK(inf.param_h2d_bytes == 0);
  // 80 ms of fetches hide behind 3 s of compute.
  CHECK(inf.exposed_s == doctest::Approx(0.912530 + 0.0).epsilon(1e-5));
  // A plan without offload costs nothing.
  const auto none = techniques::offload_cost(m, base, hw, 1, 1.0, 2.0);
  CHECK(none.exposed_s == 0);
  CHECK(none.cpu_params == 0);
}

TEST_CASE("offload: a plan whose host memory is short does not fit, with the reason") {
  // Llama-3-8B, DeepSpeed ZeRO-2 on one GPU: 16 x 8,030,261,248 =
  // 128,484,179,968 bytes = 119.7 GiB on the host, over a 64 GiB host.
  const auto r = test::run_cli(
      "predict --model llama3_8b --gpu h100_sxm --framework deepspeed --zero 2 --offload-optimizer cpu "
      "--seq 4096 --set 'gpu.host.memory_per_gpu=64 GiB'");
  CHECK(r.status == 1);
  CHECK(r.err == "does not fit: the offloaded model state needs 120 GiB of host memory per GPU, the host has "
                 "64.0 GiB (host.memory_per_gpu of the GPU profile); try more data-parallel GPUs (--dp N shards "
                 "it) or a host with more memory (--set gpu.host.memory_per_gpu=...)\n");
  CHECK(r.out.find("host memory        120 GiB of 64.0 GiB per GPU   DOES NOT FIT") != std::string::npos);
  // The JSON says the same.
  const auto j = nlohmann::json::parse(test::run_cli(
      "predict --model llama3_8b --gpu h100_sxm --framework deepspeed --zero 2 --offload-optimizer cpu "
      "--seq 4096 --set 'gpu.host.memory_per_gpu=64 GiB' --format json").out);
  CHECK(j.at("memory").at("host_bytes") == 128484179968LL);
  CHECK(j.at("memory").at("host_fits") == false);
  CHECK(j.at("memory").at("fits") == false);
}

TEST_CASE("offload: refused combinations, each with its exact error") {
  const auto m = test::model("llama3_8b");
  const auto hw = test::gpu("h100_sxm");
  auto problem = [&](const spec::PlanSpec& p) {
    const auto pr = engine::check_plan(m, p, hw);
    return pr.field + ": " + pr.message;
  };
  spec::PlanSpec p = offload_plan("deepspeed", 2, 8);
  p.offload.params = spec::OffloadDevice::kCpu;
  CHECK(problem(p) == "offload.params: parameter offload needs ZeRO-3 (ZeRO-Infinity), got ZeRO-2");
  p = offload_plan("deepspeed", 0, 8);
  CHECK(problem(p) ==
        "offload.optimizer: optimizer offload needs ZeRO stage 1, 2 or 3 (the distributed optimizer), got ZeRO-0");
  p = offload_plan("megatron", 3, 8);
  p.offload.params = spec::OffloadDevice::kCpu;
  CHECK(problem(p) == "offload.params: megatron has no parameter CPU offload; deepspeed and torchtitan offer it");
  p = offload_plan("fsdp", 3, 8);
  CHECK(problem(p) ==
        "offload.optimizer: fsdp has no optimizer CPU offload; megatron, deepspeed and torchtitan offer it");
  p = offload_plan("deepspeed", 3, 8);
  p.offload = {spec::OffloadDevice::kNone, spec::OffloadDevice::kCpu};
  CHECK(problem(p) == "offload.params: parameter offload without optimizer offload is not modelled; set "
                      "offload.optimizer to cpu as well");
  p = offload_plan("deepspeed", 1, 8);
  p.optimizer.kind = spec::OptimizerKind::kSgd;
  CHECK(problem(p) == "offload.optimizer: optimizer offload is modelled for adam and adamw (CPU Adam), not sgd");
  // Valid: ZeRO-Offload on stages 1-3, ZeRO-Infinity on 3.
  for (int z = 1; z <= 3; ++z) CHECK(problem(offload_plan("deepspeed", z, 8)) == ": ");
  p = offload_plan("deepspeed", 3, 8);
  p.offload.params = spec::OffloadDevice::kCpu;
  CHECK(problem(p) == ": ");
  // From the command line, the flag is named.
  const auto r = test::run_cli("predict --zero 2 --dp 8 --framework deepspeed --offload-optimizer cpu "
                               "--offload-params cpu");
  CHECK(r.status == 2);
  CHECK(r.err == "error: offload.params (--offload-params): parameter offload needs ZeRO-3 (ZeRO-Infinity), got ZeRO-2\n");
}

TEST_CASE("offload: plan fields in YAML, flags and settings, one spelling") {
  spec::PlanSpec p;
  CHECK(spec::apply_setting(p, "offload_optimizer", "cpu") == "");
  CHECK(p.offload.optimizer_on_cpu());
  CHECK(spec::apply_setting(p, "offload.params", "cpu") == "");
  CHECK(p.offload.params_on_cpu());
  CHECK(spec::apply_setting(p, "offload_params", "nvme") ==
        "offload_params: expected one of none, cpu, got \"nvme\"");
  p.framework = *spec::find_framework("deepspeed");
  p.parallel.zero = 3;
  CHECK(spec::plan_summary(p).find("optimizer offload cpu, parameter offload cpu") != std::string::npos);
  const auto f = temp_file("plan.yaml", "parallel:\n  zero: 3\noffload:\n  optimizer: cpu\n  params: cpu\n");
  const auto loaded = spec::load_plan(f);
  CHECK(loaded.offload.optimizer_on_cpu());
  CHECK(loaded.offload.params_on_cpu());
  const auto bad = temp_file("bad.yaml", "offload:\n  optimizer: gpu\n");
  CHECK(error_of([&] { (void)spec::load_plan(bad); }) ==
        ":2:14: error: offload.optimizer: expected one of none, cpu, got \"gpu\"");
}

TEST_CASE("offload: DeepSpeed and Megatron launch configs map to the plan") {
  const auto m = test::model("llama3_8b");
  const auto json = temp_file("ds.json",
                              "{\n  \"zero_optimization\": {\"stage\": 3,\n"
                              "    \"offload_optimizer\": {\"device\": \"cpu\", \"pin_memory\": true},\n"
                              "    \"offload_param\": {\"device\": \"cpu\"}}\n}\n");
  auto r = spec::import_deepspeed(json);
  spec::PlanSpec p;
  spec::apply_launch(r.values, p, m, r);
  CHECK(p.parallel.zero == 3);
  CHECK(p.offload.optimizer_on_cpu());
  CHECK(p.offload.params_on_cpu());
  const auto nvme = temp_file("nvme.json", "{\n  \"zero_optimization\": {\"stage\": 3,\n    \"offload_param\": "
                                           "{\"device\": \"nvme\"}}\n}\n");
  CHECK(error_of([&] { (void)spec::import_deepspeed(nvme); }) ==
        ":3:22: error: zero_optimization.offload_param: offload to nvme is not modelled");
  const auto ratio = temp_file("ratio.json", "{\n  \"zero_optimization\": {\"stage\": 2,\n    \"offload_optimizer\": "
                                             "{\"device\": \"cpu\", \"ratio\": 0.3}}\n}\n");
  CHECK(error_of([&] { (void)spec::import_deepspeed(ratio); }) ==
        ":3:53: error: zero_optimization.offload_optimizer.ratio: a partial offload (ratio 0.3) is not modelled; "
        "only the whole optimizer on the CPU is");

  auto megatron = [&](const std::string& text) {
    auto rr = spec::import_megatron(temp_file("args.sh", text));
    spec::PlanSpec q;
    spec::apply_launch(rr.values, q, m, rr);
    return q;
  };
  const auto q = megatron("--bf16 --use-distributed-optimizer --optimizer-cpu-offload --optimizer-offload-fraction 1.0\n");
  CHECK(q.offload.optimizer_on_cpu());
  CHECK(q.parallel.zero == 1);
  CHECK(error_of([&] { (void)megatron("--bf16 --use-distributed-optimizer --optimizer-cpu-offload "
                                      "--optimizer-offload-fraction 0.5\n"); }) ==
        ":1:60: error: --optimizer-offload-fraction: a fraction of 0.5 is not modelled; only 1.0 (the whole optimizer "
        "on the CPU) is");
}

TEST_CASE("offload: the profile's host section, its defaults and its errors") {
  const auto h100 = test::gpu("h100_sxm");
  CHECK(h100.host.memory_bytes == 256.0 * 1024 * 1024 * 1024);
  CHECK(h100.host.link_bytes_per_s == 50e9);
  CHECK(h100.host.cpu_adam_params_per_s == 1.1e9);
  // Without a host section: DGX A100 320GB's 1 TiB / 8, PCIe Gen4's 25 GB/s,
  // a DGX-2 GPU's share of the paper's CPU Adam, 10e9 / 2.57 / 16 = 0.2432e9.
  const auto l4 = test::gpu("l4");
  CHECK(l4.host.memory_bytes == 128.0 * 1024 * 1024 * 1024);
  CHECK(l4.host.link_bytes_per_s == 25e9);
  CHECK(l4.host.cpu_adam_params_per_s == doctest::Approx(0.2432e9).epsilon(1e-3));
  const auto bad = temp_file("h100_bad.yaml", test::edited(test::shipped_text("h100_sxm"), "cpu_adam_rate: 1.1G params/s",
                                                           "cpu_adam_rate: 1.1G"));
  CHECK(error_of([&] { (void)spec::load_hardware(bad); }) ==
        ":46:18: error: host.cpu_adam_rate: expected a parameter update rate such as \"1.1G params/s\", got "
        "\"1.1G\"");
  const auto bare = temp_file("h100_bare.yaml", test::edited(test::shipped_text("h100_sxm"), "link_bandwidth: 50 GB/s",
                                                             "link_bandwidth: 50"));
  CHECK(error_of([&] { (void)spec::load_hardware(bare); }) .find(":45:19: error: host.link_bandwidth: ") == 0);
}
