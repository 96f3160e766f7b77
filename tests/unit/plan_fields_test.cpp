// The plan field table (spec/plan_fields.hpp) drives the YAML loader, the CLI
// flags, --vary/--fix settings, the JSON plan and the summaries, so each
// source must read the same words into the same PlanSpec member:
//  - every field's printed text reads back to the same value (set_field is
//    the inverse of field_text);
//  - a plan file and the equivalent flags give the same plan;
//  - the JSON "plan" object of a prediction, written out as YAML, loads back
//    as the same plan (JSON is YAML);
//  - a flag not given leaves the plan file's value alone.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ridgeline/report/prediction_view.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "test_support.hpp"

using namespace ridgeline;
namespace fs = std::filesystem;

namespace {

/// A plan with every field away from its default.
spec::PlanSpec unusual_plan() {
  spec::PlanSpec p;
  p.micro_batch = 2;
  p.global_batch = 64;
  p.seq_len = 2048;
  p.packed_doc_len = 512;
  p.precision = spec::Precision::kFp8;
  p.fp8_recipe = spec::Fp8Recipe::kTensorwise;
  p.fp8_primary_weights = true;
  p.master_weights = spec::MasterWeights::kNone;
  p.cross_entropy = spec::CrossEntropy::kEager;
  p.cross_entropy_given = true;
  p.fused_gate_up = false;  // megatron's is fused
  p.gate_up_given = true;
  p.rms_norm = spec::RmsNormImpl::kNative;  // megatron's is fused
  p.rms_norm_given = true;
  p.power_limit_w = 500;
  p.attention = spec::AttentionKind::kFlash3;
  p.fusion = spec::Fusion::kCompiled;
  p.recompute = {spec::RecomputeKind::kEvery, 4};
  p.cuda_graphs = true;
  p.optimizer.kind = spec::OptimizerKind::kSgd;
  p.optimizer.momentum = false;
  p.finetune.mode = spec::FinetuneMode::kLora;
  p.finetune.rank = 32;
  p.finetune.targets = spec::kTargetQ | spec::kTargetK | spec::kTargetUp;
  p.parallel = {.dp = 4, .tp = 2, .pp = 2, .cp = 1, .ep = 1, .sp = true, .zero = 1, .virtual_stages = 2};
  p.parallel.tp_comm_overlap = true;
  p.parallel.overlap_param_gather = true;
  p.parallel.grad_reduce_exposed = true;
  p.main_grads = spec::MainGrads::kFp32;
  p.main_grads_given = true;
  p.tokens = 3e11;
  p.attention_flops = spec::AttentionFlops::kFull;
  p.power_utilization = 0.7;
  p.failure_rate_per_gpu_hour = 3e-5;
  p.checkpoint_bandwidth_bytes_per_s = 5e10;
  p.restart_s = 300;
  p.checkpoint_interval_s = 1800;
  p.pue = 1.2;
  p.grid_carbon_g_per_kwh = 350;
  return p;
}

/// The fields unusual_plan cannot move in a plan that predicts (each applies
/// only beside another choice): fp16's skipped steps, Adafactor's first
/// moment, a MoE model's EP, capacity, dispatcher and shared-expert overlap, uneven stages without virtual ones,
/// DualPipe (no virtual stages either), CP, offload under DeepSpeed, the
/// optimizer stepped in backward and paged state (torchtitan, hf, fsdp; one
/// micro-batch per step), fp8 activation storage (fp8 blockwise), activation
/// offloading (torchtitan, without PP).
spec::PlanSpec conditional_plan(spec::OptimizerKind optimizer) {
  spec::PlanSpec p;
  p.framework = *spec::find_framework("deepspeed");
  p.precision = spec::Precision::kFp16;
  p.skipped_step_rate = 0.002;
  p.optimizer.kind = optimizer;
  p.optimizer.first_moment = true;
  p.optimizer.hessian_interval = 5;
  p.optimizer.in_backward = true;
  p.optimizer.paged = true;
  p.fp8_activation_storage = true;  // needs fp8 blockwise
  p.optimizer.state_dtype = spec::StateDtype::kBf16;
  p.parallel.cp = 2;
  p.parallel.ep = 2;
  p.parallel.ep_comm_overlap = true;
  p.parallel.pp = 4;
  p.parallel.first_stage_layers = 3;
  p.parallel.last_stage_layers = 5;
  p.parallel.pp_schedule = spec::PpSchedule::kDualPipe;
  p.offload.optimizer = spec::OffloadDevice::kCpu;
  p.offload.params = spec::OffloadDevice::kCpu;
  p.offload.activations = spec::OffloadDevice::kCpu;
  p.moe.capacity_factor = 1.25;
  p.moe.imbalance = 1.3;
  p.moe.dispatcher = spec::MoeDispatcher::kDeepEp;
  p.moe.shared_expert_overlap = true;
  return p;
}

void check_same(const spec::PlanSpec& a, const spec::PlanSpec& b) {
  for (const auto& f : spec::plan_fields()) CHECK_MESSAGE(spec::field_text(f, a) == spec::field_text(f, b), f.key);
}

fs::path temp_dir() {
  const fs::path d = fs::temp_directory_path() / ("ridgeline_plan_fields_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST_CASE("plan fields: every field's text reads back to the same value") {
  const spec::PlanSpec p = unusual_plan();
  for (const auto& f : spec::plan_fields()) {
    spec::PlanSpec q;
    CHECK_MESSAGE(spec::set_field(f, q, spec::field_text(f, p)).empty(), f.key);
    CHECK_MESSAGE(spec::field_text(f, q) == spec::field_text(f, p), f.key);
    // Every field is reachable by its setting key and by its YAML key.
    CHECK(spec::find_plan_field(f.key) == &f);
    if (!f.setting.empty()) CHECK(spec::find_plan_field(f.setting) == &f);
  }
}

TEST_CASE("plan fields: range and word errors read as the YAML loader words them") {
  spec::PlanSpec p;
  CHECK(spec::apply_setting(p, "tp", "0") == "tp: expected a whole number from 1 to 4096, got 0");
  CHECK(spec::apply_setting(p, "zero", "4") == "zero: expected a whole number from 0 to 3, got 4");
  CHECK(spec::apply_setting(p, "precision", "bf17") ==
        "precision: expected one of fp32, tf32, fp16, bf16, fp8, nvfp4, got \"bf17\"");
  CHECK(spec::apply_setting(p, "sp", "maybe") == "sp: expected true or false, got \"maybe\"");
  // Only the modelled fp8 recipes are accepted: any other is rejected, not ignored.
  CHECK(spec::apply_setting(p, "fp8_recipe", "hybrid") ==
        "fp8_recipe: expected one of delayed, tensorwise, blockwise, mxfp8, rowwise, rowwise_with_gw_hp, got \"hybrid\"");
  CHECK(spec::apply_setting(p, "tp_degree", "2").starts_with("unknown setting 'tp_degree'"));
}

TEST_CASE("plan fields: the JSON plan loads back as the same plan, and flags equal the YAML") {
  const auto m = test::model("llama3_8b");
  const spec::PlanSpec p = unusual_plan();
  nlohmann::json j = report::plan_json(p, m);
  j["parallel"].erase("gpus");  // derived: DP x TP x PP x CP
  // The JSON names virtual stages `vpp` (docs/json.md), the YAML parallel.virtual_stages.
  j["parallel"]["virtual_stages"] = j["parallel"]["vpp"];
  j["parallel"].erase("vpp");
  const fs::path file = temp_dir() / "plan.yaml";
  std::ofstream(file) << j.dump(2);
  const spec::PlanSpec back = spec::load_plan(file.string());
  check_same(p, back);

  // The same plan as flags, each field's flag with its text.
  std::string args = "predict --model llama3_8b --format json";
  for (const auto& f : spec::plan_fields()) {
    if (f.flag.empty() || spec::is_default(f, p)) continue;
    if (f.type == spec::FieldType::kBool)
      args += " --" + std::string(spec::field_text(f, p) == "true" ? "" : "no-") + std::string(f.flag);
    else
      args += " --" + std::string(f.flag) + " '" + spec::field_text(f, p) + "'";
  }
  const auto r = test::run_cli(args);
  INFO(args, "\n", r.err);
  REQUIRE(r.status <= 1);
  auto from_flags = nlohmann::json::parse(r.out)["plan"];
  from_flags["parallel"].erase("gpus");
  from_flags["parallel"]["virtual_stages"] = from_flags["parallel"]["vpp"];
  from_flags["parallel"].erase("vpp");
  CHECK(from_flags == j);
}

TEST_CASE("plan fields: a flag not given leaves the plan file's value alone") {
  // CLI11 assigns false to an absent optional<bool> flag; the plan file's
  // sp: true and SGD's default momentum must survive that.
  const fs::path file = temp_dir() / "sp.yaml";
  std::ofstream(file) << "parallel:\n  tp: 2\n  sp: true\noptimizer: sgd\n";
  const auto r = test::run_cli("predict --model llama3_8b --format json --plan " + file.string());
  REQUIRE(r.status <= 1);
  const auto plan = nlohmann::json::parse(r.out)["plan"];
  CHECK(plan["parallel"]["sp"] == true);
  CHECK(plan["optimizer"]["momentum"] == true);
  const auto off = test::run_cli("predict --model llama3_8b --format json --no-sp --plan " + file.string());
  REQUIRE(off.status <= 1);
  CHECK(nlohmann::json::parse(off.out)["plan"]["parallel"]["sp"] == false);
}

TEST_CASE("plan fields: summaries") {
  spec::PlanSpec p;
  CHECK(spec::plan_summary(p) == "megatron, bf16, flash2 attention, fusion fused, recompute none, adamw, TP1 PP1 DP1");
  p.finetune.mode = spec::FinetuneMode::kLora;
  p.finetune.rank = 16;
  p.parallel.tp = 8;
  p.parallel.sp = true;
  p.parallel.zero = 1;
  CHECK(spec::plan_summary(p) ==
        "megatron, bf16, flash2 attention, fusion fused, recompute none, adamw, lora r=16 on q,v, TP8 PP1 DP1 +SP ZeRO-1");
  CHECK(spec::summary_of(p, {"micro_batch", "tp"}) == "mb1 TP8");
}

TEST_CASE("plan fields: every field moves from its default in one of the test plans, and reads back") {
  // unusual_plan moves what a predicting plan can; conditional_plan (under
  // Adafactor and under Sophia) the fields that apply only beside another
  // choice. Every field's text then differs from a default plan's in one of
  // them, and reads back to itself.
  const spec::PlanSpec d;
  const std::vector<spec::PlanSpec> plans = {unusual_plan(), conditional_plan(spec::OptimizerKind::kAdafactor),
                                             conditional_plan(spec::OptimizerKind::kSophia)};
  for (const auto& f : spec::plan_fields()) {
    bool moved = false;
    for (const auto& p : plans) {
      if (spec::field_text(f, p) == spec::field_text(f, d)) continue;
      moved = true;
      spec::PlanSpec q;
      CHECK_MESSAGE(spec::set_field(f, q, spec::field_text(f, p)).empty(), f.key);
      CHECK_MESSAGE(spec::field_text(f, q) == spec::field_text(f, p), f.key);
    }
    CHECK_MESSAGE(moved, f.key);
  }
}

TEST_CASE("plan fields: every field states its scope; a step or run field leaves the micro-batch graph alone") {
  // The contract the search's memos rely on (spec::Scope): a field of step or
  // run scope is not read by the micro-batch graph, and one of run scope
  // moves neither the step time nor the peak memory. Each field takes its
  // value from the plans above that move it, on a default plan otherwise.
  const auto m = test::model("llama3_8b");
  const auto hw = test::gpu("h100_sxm");
  const spec::PlanSpec base = test::plan(1, 2048);
  auto graph_of = [&](const spec::PlanSpec& p) {
    graph::Graph g;
    techniques::build_microbatch(g, m, p, hw);
    return g;
  };
  auto same_graph = [](const graph::Graph& a, const graph::Graph& b) {
    if (a.kernels.size() != b.kernels.size()) return false;
    for (size_t i = 0; i < a.kernels.size(); ++i) {
      const auto &x = a.kernels[i], &y = b.kernels[i];
      if (x.name != y.name || x.phase != y.phase || x.flops != y.flops || x.read_bytes != y.read_bytes ||
          x.write_bytes != y.write_bytes || x.count != y.count || x.saved_bytes != y.saved_bytes ||
          x.dtype != y.dtype || x.flags != y.flags)
        return false;
    }
    return true;
  };
  const graph::Graph g0 = graph_of(base);
  const auto r0 = engine::evaluate(m, base, hw);
  int step_fields = 0, run_fields = 0;
  for (const auto& f : spec::plan_fields()) {
    CHECK_MESSAGE(f.scope != spec::Scope::kNone, f.key);
    if (f.scope != spec::Scope::kStep && f.scope != spec::Scope::kRun) continue;
    for (const spec::PlanSpec& from : {unusual_plan(), conditional_plan(spec::OptimizerKind::kAdamW)}) {
      if (spec::is_default(f, from)) continue;
      spec::PlanSpec p = base;
      if (!spec::set_field(f, p, spec::field_text(f, from)).empty()) continue;  // applies beside another choice only
      CHECK_MESSAGE(same_graph(graph_of(p), g0), f.key);
      if (f.scope == spec::Scope::kRun) {
        const auto r = engine::evaluate(m, p, hw);
        CHECK_MESSAGE(r.step.time_s == r0.step.time_s, f.key);
        CHECK_MESSAGE(r.memory.total == r0.memory.total, f.key);
        ++run_fields;
      } else {
        ++step_fields;
      }
      break;
    }
  }
  // Moved here: the global batch, ZeRO, virtual stages, the parameter
  // gather's overlap and the gradient reduction (step); the tokens and the
  // seven power, failure, checkpoint and carbon settings (run).
  CHECK(step_fields >= 5);
  CHECK(run_fields >= 8);
}
