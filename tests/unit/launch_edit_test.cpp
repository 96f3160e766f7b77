// A plan change as the edit to the launch config it was imported from
// (spec/launch_edit.hpp), and `advise` on an imported plan. The expected key
// names and values are the frameworks' own, read from their sources:
//  - torchtitan/config/job_config.py at 238fa99 (the train config of
//    tests/data/launch/torchtitan_llama3_8b.toml): line 253 local_batch_size,
//    256-258 global_batch_size (-1: local x DP), 313 / 324
//    data_parallel_replicate_degree / data_parallel_shard_degree, 351
//    tensor_parallel_degree, 652-655 activation_checkpoint.mode and
//    selective_ac_option, 722 compile.enable, 738 recipe_name: Literal["tensorwise",
//    "rowwise", "rowwise_with_gw_hp"]; components/quantization/float8.py
//    line 238 registers the converter "quantize.linear.float8"; the 2024
//    layout (1a303b3 config_manager.py) keeps training.tensor_parallel_degree
//    and a per-rank training.batch_size without accumulation;
//  - Megatron-LM d98e8a6: transformer_config.py line 532
//    recompute_granularity, 543 recompute_method, 551 recompute_num_layers,
//    594 fp8_recipe ('tensorwise', 'delayed', 'mxfp8', 'blockwise'), 1075
//    cuda_graph_impl ('none', 'local', ...), 151 attention_backend
//    (AttnBackend: flash, fused, unfused, local, auto); arguments.py line
//    3156 --use-distributed-optimizer;
//  - DeepSpeed edaa722: runtime/zero/config.py line 95 stage, 164
//    offload_optimizer (zero/offload_config.py line 58 device), constants.py
//    line 95 train_micro_batch_size_per_gpu, 107 gradient_accumulation_steps.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "ridgeline/spec/launch_edit.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "test_support.hpp"

using namespace ridgeline;
using nlohmann::json;

namespace {

const std::string kDir = std::string(RIDGELINE_SOURCE_DIR) + "/tests/data/launch/";

struct Imported {
  spec::ImportReport report;
  spec::PlanSpec plan;
  spec::ModelSpec model;
};

/// The file imported into a plan for `model_id`, with `dp` given as the flag
/// would (the corpus files leave it to the GPU count) and the global batch
/// stated, as `advise` states it before it changes anything.
Imported import(const std::string& kind, const std::string& file, const std::string& model_id, int dp) {
  Imported x;
  x.model = test::model(model_id);
  x.report = kind == "torchtitan"  ? spec::import_torchtitan(kDir + file)
             : kind == "megatron" ? spec::import_megatron(kDir + file)
                                  : spec::import_deepspeed(kDir + file);
  x.plan.parallel.dp = dp;
  std::vector<std::string> overridden;
  if (dp > 0) overridden.push_back("parallel.dp");
  spec::apply_launch(x.report.values, x.plan, x.model, x.report, overridden);
  if (x.plan.global_batch == 0) x.plan.global_batch = static_cast<int>(x.plan.effective_global_batch());
  return x;
}

std::optional<std::string> edit(const Imported& x, const std::function<void(spec::PlanSpec&)>& change) {
  spec::PlanSpec to = x.plan;
  change(to);
  return spec::launch_edit(x.report, x.plan, to, x.model);
}

}  // namespace

TEST_SUITE("launch edit") {
  TEST_CASE("torchtitan: TOML keys of the file's release, and only the options torchtitan offers") {
    // torchtitan_llama3_8b.toml: local_batch_size 1, no global_batch_size,
    // data_parallel_shard_degree -1 (FSDP over the 8 GPUs: ZeRO-3), mode
    // "selective" with option "op", compile off, a [quantize.linear.float8]
    // section but no converter (bf16).
    const Imported x = import("torchtitan", "torchtitan_llama3_8b.toml", "llama3_8b", 8);
    REQUIRE(x.plan.global_batch == 8);  // 1 x 8 GPUs
    REQUIRE(x.plan.parallel.zero == 3);
    // The main knob: the global batch it keeps (8) is stated, since the
    // file's -1 would follow the local batch (job_config.py line 256).
    CHECK(edit(x, [](auto& p) { p.micro_batch = 2; }) ==
          "training.local_batch_size = 2; training.global_batch_size = 8");
    // With the global batch it gives (2 x 8 = 16), the local batch alone.
    CHECK(edit(x, [](auto& p) {
            p.micro_batch = 2;
            p.global_batch = 16;
          }) == "training.local_batch_size = 2");
    CHECK(edit(x, [](auto& p) {
            p.precision = spec::Precision::kFp8;
            p.fp8_recipe = spec::Fp8Recipe::kRowwise;
          }) == "model.converters = [\"quantize.linear.float8\"]; quantize.linear.float8.recipe_name = \"rowwise\"");
    CHECK(edit(x, [](auto& p) {
            p.precision = spec::Precision::kFp8;
            p.fp8_recipe = spec::Fp8Recipe::kTensorwise;
          }) == "model.converters = [\"quantize.linear.float8\"]; quantize.linear.float8.recipe_name = \"tensorwise\"");
    // torchao's Float8LinearRecipeName.ROWWISE_WITH_GW_HP (config.py line 176).
    CHECK(edit(x, [](auto& p) {
            p.precision = spec::Precision::kFp8;
            p.fp8_recipe = spec::Fp8Recipe::kRowwiseGwHp;
          }) == "model.converters = [\"quantize.linear.float8\"]; quantize.linear.float8.recipe_name = "
                "\"rowwise_with_gw_hp\"");
    // Transformer Engine's recipes are not torchao's: not offered.
    for (auto r : {spec::Fp8Recipe::kDelayed, spec::Fp8Recipe::kBlockwise})
      CHECK_FALSE(edit(x, [&](auto& p) {
                    p.precision = spec::Precision::kFp8;
                    p.fp8_recipe = r;
                  }).has_value());
    CHECK(edit(x, [](auto& p) { p.fusion = spec::Fusion::kCompiled; }) == "compile.enable = true");
    CHECK_FALSE(edit(x, [](auto& p) { p.fusion = spec::Fusion::kFused; }).has_value());
    CHECK(edit(x, [](auto& p) { p.recompute = {spec::RecomputeKind::kFull}; }) ==
          "activation_checkpoint.mode = \"full\"");
    CHECK(edit(x, [](auto& p) { p.recompute = {spec::RecomputeKind::kEvery, 2}; }) ==
          "activation_checkpoint.mode = \"selective\"; activation_checkpoint.selective_ac_option = \"2\"");
    // Korthikanti's selective recomputation (the attention core) is Megatron's.
    CHECK_FALSE(edit(x, [](auto& p) { p.recompute = {spec::RecomputeKind::kSelective}; }).has_value());
    // FSDP2 (ZeRO-3) to DDP: the 8 ranks replicate instead.
    CHECK(edit(x, [](auto& p) { p.parallel.zero = 0; }) ==
          "parallelism.data_parallel_replicate_degree = 8; parallelism.data_parallel_shard_degree = 1");
    CHECK_FALSE(edit(x, [](auto& p) { p.parallel.zero = 2; }).has_value());
    // TP 2: DP falls to 4, which the file's -1 follows; SP comes with TP.
    CHECK(edit(x, [](auto& p) {
            p.parallel.tp = 2;
            p.parallel.dp = 4;
            p.parallel.sp = true;
          }) == "parallelism.tensor_parallel_degree = 2");
    CHECK_FALSE(edit(x, [](auto& p) { p.cuda_graphs = true; }).has_value());
    CHECK_FALSE(edit(x, [](auto& p) { p.attention = spec::AttentionKind::kCudnn; }).has_value());
    CHECK_FALSE(edit(x, [](auto& p) { p.optimizer.kind = spec::OptimizerKind::kAdafactor; }).has_value());
    CHECK(edit(x, [](auto& p) { p.optimizer.kind = spec::OptimizerKind::kAdam; }) == "optimizer.name = \"Adam\"");
    // FSDP2's CPU offload moves the optimizer and the parameters together
    // (training.enable_cpu_offload, configs.py line 70 at b5bcd76): one key
    // for both; one without the other is not torchtitan's.
    CHECK(edit(x, [](auto& p) {
            p.offload.optimizer = spec::OffloadDevice::kCpu;
            p.offload.params = spec::OffloadDevice::kCpu;
          }) == "training.enable_cpu_offload = true");
    CHECK_FALSE(edit(x, [](auto& p) { p.offload.optimizer = spec::OffloadDevice::kCpu; }).has_value());
    // optimizer.early_step_in_backward (job_config.py at 9810191~1 line 160).
    CHECK(edit(x, [](auto& p) { p.optimizer.in_backward = true; }) == "optimizer.early_step_in_backward = true");
  }

  TEST_CASE("torchtitan 2024: its own key names; its per-rank batch_size takes the global batch with it") {
    const Imported x = import("torchtitan", "torchtitan_2024_llama3_8b.toml", "llama3_8b", 8);
    CHECK(edit(x, [](auto& p) {
            p.parallel.tp = 2;
            p.parallel.dp = 4;
            p.parallel.sp = true;
          }).value_or("").starts_with("training.tensor_parallel_degree = 2"));
    CHECK_FALSE(edit(x, [](auto& p) { p.micro_batch = 2; }).has_value());
    CHECK(edit(x, [](auto& p) {
            p.micro_batch = 2;
            p.global_batch = 16;
          }) == "training.batch_size = 2");
  }

  TEST_CASE("Megatron-LM: arguments to add or drop, DP left to the GPU count") {
    // megatron_llama3_8b_h100_fp8.sh: 8 GPUs, TP 1, --fp8-format hybrid with
    // no --fp8-recipe (delayed, transformer_config.py line 594's default),
    // --use-distributed-optimizer, --sequence-parallel, micro 1 of global
    // 128, --attention-backend fused, no recomputation.
    const Imported x = import("megatron", "megatron_llama3_8b_h100_fp8.sh", "llama3_8b", 0);
    REQUIRE(x.plan.precision == spec::Precision::kFp8);
    REQUIRE(x.plan.parallel.dp == 8);
    CHECK(edit(x, [](auto& p) { p.fp8_recipe = spec::Fp8Recipe::kTensorwise; }) == "--fp8-recipe tensorwise");
    CHECK(edit(x, [](auto& p) { p.fp8_recipe = spec::Fp8Recipe::kBlockwise; }) == "--fp8-recipe blockwise");
    CHECK_FALSE(edit(x, [](auto& p) { p.fp8_recipe = spec::Fp8Recipe::kRowwise; }).has_value());
    CHECK_FALSE(edit(x, [](auto& p) { p.fp8_recipe = spec::Fp8Recipe::kRowwiseGwHp; }).has_value());
    CHECK(edit(x, [](auto& p) { p.recompute = {spec::RecomputeKind::kSelective}; }) ==
          "--recompute-granularity selective");
    CHECK(edit(x, [](auto& p) { p.recompute = {spec::RecomputeKind::kFull, 0, 16}; }) ==
          "--recompute-granularity full --recompute-method block --recompute-num-layers 16");
    CHECK_FALSE(edit(x, [](auto& p) { p.recompute = {spec::RecomputeKind::kOp}; }).has_value());
    // TP 2: DP is the world size over TP x PP x CP; no argument for it.
    CHECK(edit(x, [](auto& p) {
            p.parallel.tp = 2;
            p.parallel.dp = 4;
          }) == "--tensor-model-parallel-size 2");
    CHECK(edit(x, [](auto& p) { p.parallel.zero = 0; }) == "drop --use-distributed-optimizer");
    CHECK_FALSE(edit(x, [](auto& p) { p.parallel.zero = 2; }).has_value());
    CHECK(edit(x, [](auto& p) { p.micro_batch = 2; }) == "--micro-batch-size 2");
    CHECK(edit(x, [](auto& p) { p.cuda_graphs = true; }) == "--cuda-graph-impl local");
    CHECK(edit(x, [](auto& p) {
            p.attention = spec::AttentionKind::kFlash2;
            p.attention_given = true;
          }) == "--attention-backend flash");
    CHECK_FALSE(edit(x, [](auto& p) { p.fusion = spec::Fusion::kCompiled; }).has_value());
  }

  TEST_CASE("DeepSpeed: JSON keys; what the model code decides is not offered") {
    // deepspeed_bf16_zero3.json: micro 4, accumulation 1, ZeRO-3, AdamW, bf16;
    // on 8 GPUs the global batch is 4 x 1 x 8 = 32.
    const Imported x = import("deepspeed", "deepspeed_bf16_zero3.json", "llama3_8b", 8);
    REQUIRE(x.plan.global_batch == 32);
    CHECK(edit(x, [](auto& p) { p.parallel.zero = 2; }) == "zero_optimization.stage: 2");
    // Micro 2 keeps 32 with 32 / (2 x 8) = 2 accumulation steps.
    CHECK(edit(x, [](auto& p) { p.micro_batch = 2; }) ==
          "train_micro_batch_size_per_gpu: 2; gradient_accumulation_steps: 2");
    // Micro 8 would need 32 / (8 x 8) = 0.5 steps.
    CHECK_FALSE(edit(x, [](auto& p) { p.micro_batch = 8; }).has_value());
    CHECK(edit(x, [](auto& p) { p.offload.optimizer = spec::OffloadDevice::kCpu; }) ==
          "zero_optimization.offload_optimizer.device: \"cpu\"");
    CHECK(edit(x, [](auto& p) { p.optimizer.kind = spec::OptimizerKind::kAdam; }) == "optimizer.type: \"Adam\"");
    CHECK_FALSE(edit(x, [](auto& p) { p.recompute = {spec::RecomputeKind::kFull}; }).has_value());
    CHECK_FALSE(edit(x, [](auto& p) { p.fusion = spec::Fusion::kCompiled; }).has_value());
    CHECK_FALSE(edit(x, [](auto& p) {
                  p.precision = spec::Precision::kFp8;
                  p.fp8_recipe = spec::Fp8Recipe::kTensorwise;
                }).has_value());
  }

  TEST_CASE("a plan not imported has no edit") {
    const Imported x = import("deepspeed", "deepspeed_bf16_zero3.json", "llama3_8b", 8);
    spec::PlanSpec to = x.plan;
    to.parallel.zero = 2;
    CHECK_FALSE(spec::launch_edit(spec::ImportReport{}, x.plan, to, x.model).has_value());
  }
}

TEST_SUITE("advise on an imported plan") {
  TEST_CASE("torchtitan: every suggestion is a TOML edit; no Ridgeline flag and no delayed scaling") {
    const auto r = test::run_cli("advise --gpu h100_sxm --model llama3_8b --dp 8 --from-torchtitan "
                                 "tests/data/launch/torchtitan_llama3_8b.toml --format json");
    REQUIRE_MESSAGE(r.status == 0, r.err);
    const json j = json::parse(r.out);
    REQUIRE(j["edits"]["format"] == "torchtitan TOML");
    CHECK(j["edits"]["not_offered"].get<int>() > 0);
    // The keys torchtitan's job_config.py (238fa99) defines for what advise changes.
    const std::vector<std::string> keys = {
        "training.local_batch_size", "training.global_batch_size", "parallelism.tensor_parallel_degree",
        "parallelism.pipeline_parallel_degree", "parallelism.context_parallel_degree",
        "parallelism.data_parallel_shard_degree", "parallelism.data_parallel_replicate_degree",
        "parallelism.enable_async_tensor_parallel", "compile.enable", "model.converters",
        "quantize.linear.float8.recipe_name", "activation_checkpoint.mode",
        "activation_checkpoint.selective_ac_option", "optimizer.name"};
    int seen = 0;
    bool local_batch = false;
    for (const char* list : {"suggestions", "memory_suggestions"})
      for (const auto& s : j[list]) {
        ++seen;
        const std::string e = s["edit"].get<std::string>();
        CAPTURE(e);
        CHECK(e.find("--") == std::string::npos);
        CHECK(e.find("delayed") == std::string::npos);
        local_batch = local_batch || e.find("training.local_batch_size") != std::string::npos;
        // Each setting names one of the keys.
        for (size_t a = 0; a < e.size();) {
          const size_t b = std::min(e.find("; ", a), e.size());
          const std::string part = e.substr(a, b - a);
          const std::string key = part.substr(0, part.find(" = "));
          CHECK_MESSAGE(std::find(keys.begin(), keys.end(), key) != keys.end(), key);
          a = b + 2;
        }
      }
    CHECK(seen >= 3);
    CHECK(local_batch);
    const auto t = test::run_cli("advise --gpu h100_sxm --model llama3_8b --dp 8 --from-torchtitan "
                                 "tests/data/launch/torchtitan_llama3_8b.toml");
    REQUIRE(t.status == 0);
    CHECK(t.out.find("changes as edits to tests/data/launch/torchtitan_llama3_8b.toml (torchtitan TOML)") !=
          std::string::npos);
    CHECK(t.out.find("apply #1 to tests/data/launch/torchtitan_llama3_8b.toml: ") != std::string::npos);
  }

  TEST_CASE("a plan from flags keeps Ridgeline's flags") {
    const auto r = test::run_cli("advise --gpu h100_sxm --model llama3_8b --dp 8 --format json");
    REQUIRE(r.status == 0);
    const json j = json::parse(r.out);
    CHECK(j["edits"].is_null());
    REQUIRE(!j["suggestions"].empty());
    CHECK(j["suggestions"][0]["edit"].is_null());
    CHECK(j["suggestions"][0]["flags"].get<std::string>().starts_with("--"));
  }
}
