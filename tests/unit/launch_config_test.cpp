// Launch configurations read as plans (spec/launch_config.hpp), the
// Megatron-LM spellings of the plan flags, the global batch in tokens, the
// framework's sequence-parallel default, uneven pipeline stages and block
// recomputation. An imported launch file must predict exactly what the
// equivalent Ridgeline flags predict: the flags are the independent source.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/memory/memory.hpp"
#include "ridgeline/spec/launch_config.hpp"
#include "test_support.hpp"
#include "ridgeline/spec/framework.hpp"

// What plans/megatron_llama3_8b.sh says, line by line (cat -n), and the
// derivations by hand: 8 GPUs / TP 2 = DP 4; 1953125000 x 8192 = 16T tokens.
#define PRINT_PLAN_MEGATRON \
  "Imported from plans/megatron_llama3_8b.sh (Megatron-LM args):\n"\
  "  framework            megatron     (Megatron-LM args)\n"\
  "  tp                   2            line 17: --tensor-model-parallel-size 2\n"\
  "  sp                   true         line 17: --sequence-parallel\n"\
  "  zero                 1            line 19: --use-distributed-optimizer\n"\
  "  overlap_param_gather true         line 19: --overlap-param-gather\n"\
  "  grad_reduce          overlapped   line 19: --overlap-grad-reduce\n"\
  "  micro_batch          1            line 13: --micro-batch-size 1\n"\
  "  seq                  8192         line 11: --seq-length 8192\n"\
  "  precision            bf16         line 16: --bf16\n"\
  "  recompute            selective    line 18: --recompute-granularity selective\n"\
  "  dp                   4            line 8: --nproc_per_node 8, --nnodes 1\n"\
  "  global_batch         128          line 13: --global-batch-size 128\n"\
  "  tokens               16.0T        line 14: --train-samples 1953125000\n"\
  "  note: the model (Llama-3-8B) matches --num-layers 32 (line 9), --hidden-size 4096 (line 9), "\
  "--num-attention-heads 32 (line 10), --ffn-hidden-size 14336 (line 9), --group-query-attention "\
  "--num-query-groups 8 (line 10)\n"\
  "  note: dp 4 = 8 GPUs / (TP 2 x PP 1 x CP 1)\n"\
  "  note: tokens 16.0T = 1953125000 samples x 8192 sequence\n"\
  "Ignored (no effect on step time or memory):\n"\
  "  --max-position-embeddings 8192 (line 11): the model's architecture: the model file gives it\n"\
  "  --position-embedding-type rope (line 12): the model's architecture: the model file gives it\n"\
  "  --swiglu (line 12): the model's architecture: the model file gives it\n"\
  "  --lr 0.00015 (line 15): learning rate\n"\
  "  --min-lr 0.00001 (line 15): learning rate\n"\
  "  --lr-decay-style cosine (line 15): learning-rate schedule\n"\
  "  --save $CHECKPOINT_PATH (line 20): checkpoint path\n"\
  "  --log-interval 1 (line 20): logging\n"\
  "Plan: megatron, bf16, flash2 attention, fusion fused, recompute selective, adamw, fp32 main grads, eager "\
  "cross-entropy, TP2 PP1 DP4 +SP ZeRO-1 +param-gather-overlap\n"\
  "  framework megatron, micro-batch 1, global batch 128 sequences (1048576 tokens), sequence 8192, tokens 16.0T\n"

namespace rl = ridgeline;

namespace {

/// The step and memory objects of a JSON prediction (the plan's own object
/// names where it came from, so it is left out).
/// An error's first line from its ":LINE:COL:" on (the temporary file's path left out).
std::string located(const std::string& err) {
  const size_t colon = err.find(':');
  return err.substr(colon, err.find('\n') - colon);
}

nlohmann::json step_and_memory(const std::string& args) {
  const auto r = rl::test::run_cli("predict " + args + " --format json");
  INFO(args << "\n" << r.err);
  REQUIRE(r.status <= 1);  // 1: does not fit, the prediction still written
  const auto j = nlohmann::json::parse(r.out);
  return {{"step", j.at("step")}, {"memory", j.at("memory")}, {"training", j.at("training")}};
}

/// Writes `text` to a temporary file named `name` and returns its path.
std::string temp_file(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("ridgeline_launch_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace

TEST_SUITE("launch config") {
  TEST_CASE("a Megatron args file predicts what the equivalent flags predict") {
    // plans/megatron_llama3_8b.sh by hand: 8 GPUs / TP 2 = DP 4; the
    // distributed optimizer is ZeRO-1; 1953125000 samples x 8192 = 16T tokens; --overlap-param-gather.
    const auto imported = step_and_memory("--model llama3_8b --from-megatron plans/megatron_llama3_8b.sh");
    const auto flags = step_and_memory(
        "--model llama3_8b --framework megatron --tp 2 --dp 4 --sp --zero 1 --overlap-param-gather --micro-batch 1 "
        "--global-batch 128 --seq 8192 --precision bf16 --recompute selective --tokens 16T");
    CHECK(imported == flags);
  }

  TEST_CASE("the Megatron-spelt flags are the plan flags") {
    const auto megatron = step_and_memory(
        "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --sequence-parallel --dp 2 "
        "--micro-batch-size 1 --global-batch-size 16 --seq-length 4096 --use-distributed-optimizer "
        "--recompute-granularity full --recompute-method uniform --recompute-num-layers 2");
    const auto flags = step_and_memory("--tp 2 --pp 2 --sp --dp 2 --micro-batch 1 --global-batch 16 --seq 4096 "
                                       "--zero 1 --recompute every:2");
    CHECK(megatron == flags);
  }

  TEST_CASE("Megatron's --fp8-param-gather is fp8 primary weights") {
    // megatron/training/arguments.py: --fp8-param-gather "Keep the compute
    // param in fp8 (do not use any other intermediate dtype)".
    const auto megatron = step_and_memory(
        "--framework megatron --fp8-format hybrid --fp8-param-gather --dp 8 --use-distributed-optimizer "
        "--micro-batch-size 1 --seq-length 4096");
    const auto flags = step_and_memory("--framework megatron --precision fp8 --fp8-primary-weights --dp 8 --zero 1 "
                                       "--micro-batch 1 --seq 4096");
    CHECK(megatron == flags);
    const auto plain = step_and_memory("--framework megatron --precision fp8 --dp 8 --zero 1 --micro-batch 1 --seq 4096");
    CHECK(flags["memory"]["weights_bytes"].get<double>() < plain["memory"]["weights_bytes"].get<double>());
  }

  TEST_CASE("Megatron's precision-aware optimizer: --exp-avg-dtype and --exp-avg-sq-dtype are optimizer.state_dtype") {
    // megatron/core/optimizer/optimizer_config.py: the moments' dtypes other
    // than fp32 only with use_precision_aware_optimizer (TE's FusedAdam).
    const std::string args = "torchrun pretrain_gpt.py --num-layers 32 --hidden-size 4096 --num-attention-heads 32 "
                             "--group-query-attention --num-query-groups 8 --bf16 --use-distributed-optimizer "
                             "--micro-batch-size 1 --global-batch-size 64 --seq-length 4096 ";
    const auto megatron = step_and_memory(
        "--model llama3_8b --dp 8 --from-megatron " +
        temp_file("moments.sh", args + "--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16\n"));
    const auto flags = step_and_memory("--model llama3_8b --framework megatron --dp 8 --zero 1 --micro-batch 1 "
                                       "--global-batch 64 --seq 4096 --grad-reduce exposed --optimizer-state-dtype bf16");
    CHECK(megatron == flags);
    // fp32 moments sharded over 8 ranks: 8 bytes a parameter / 8; bf16: 4 / 8.
    const auto fp32 = step_and_memory("--model llama3_8b --framework megatron --dp 8 --zero 1 --micro-batch 1 "
                                      "--global-batch 64 --seq 4096");
    CHECK(flags["memory"]["optimizer_bytes"].get<double>() ==
          doctest::Approx(fp32["memory"]["optimizer_bytes"].get<double>() / 2).epsilon(1e-12));
    // Megatron refuses bf16 moments without the precision-aware optimizer;
    // one dtype for both moments is what is modelled.
    const auto refused = rl::test::run_cli("predict --model llama3_8b --dp 8 --from-megatron " +
                                           temp_file("plain.sh", args + "--exp-avg-dtype bf16 --exp-avg-sq-dtype bf16\n"));
    CHECK(refused.status == 2);
    CHECK(refused.err.find("--exp-avg-sq-dtype: bf16 Adam moments need --use-precision-aware-optimizer") !=
          std::string::npos);
    const auto mixed = rl::test::run_cli(
        "predict --model llama3_8b --dp 8 --from-megatron " +
        temp_file("mixed.sh", args + "--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype fp32\n"));
    CHECK(mixed.status == 2);
    CHECK(mixed.err.find("the first moment in bf16 and the second in fp32 are not modelled") != std::string::npos);
  }

  TEST_CASE("Megatron's --overlap-moe-expert-parallel-comm is --ep-comm-overlap") {
    const auto megatron = step_and_memory("--model mixtral_8x7b --framework megatron --expert-model-parallel-size 8 "
                                          "--dp 8 --overlap-moe-expert-parallel-comm --seq-length 4096");
    const auto flags = step_and_memory("--model mixtral_8x7b --framework megatron --ep 8 --dp 8 --ep-comm-overlap "
                                       "--seq 4096");
    CHECK(megatron == flags);
  }

  TEST_CASE("Megatron's --cross-entropy-loss-fusion is --cross-entropy fused; the default is its unfused loss") {
    // megatron/core/model_parallel_config.py:320 cross_entropy_loss_fusion: bool = False.
    const auto fused = step_and_memory("--framework megatron --cross-entropy-loss-fusion --dp 8 --seq-length 4096");
    const auto flags = step_and_memory("--framework megatron --cross-entropy fused --dp 8 --seq 4096");
    CHECK(fused == flags);
    const auto plain = step_and_memory("--framework megatron --dp 8 --seq 4096");
    const auto eager = step_and_memory("--framework megatron --cross-entropy eager --dp 8 --seq 4096");
    CHECK(plain == eager);
    CHECK(plain["step"]["step_time_s"].get<double>() > fused["step"]["step_time_s"].get<double>());
  }

  TEST_CASE("a torchtitan TOML predicts what the equivalent flags predict") {
    // plans/torchtitan_llama3_8b.toml by hand: DP = shard 4 x replicate 1,
    // FSDP2 sharding = ZeRO-3, torchtitan's TP runs SP; 1000 steps x global
    // batch 1 x 4 x 8192 tokens = 32768000 tokens; activation_checkpoint mode "selective" with
    // selective_ac_option "op" is torchtitan's per-op policy (Ridgeline's op).
    const auto imported = step_and_memory("--from-torchtitan plans/torchtitan_llama3_8b.toml");
    const auto flags = step_and_memory(
        "--model llama3_8b --framework torchtitan --tp 2 --dp 4 --zero 3 --micro-batch 1 --seq 8192 "
        "--recompute op --optimizer adamw --fusion eager --precision bf16 --tokens 32768000");
    CHECK(imported == flags);
  }

  TEST_CASE("a DeepSpeed JSON predicts what the equivalent flags predict") {
    // plans/deepspeed_zero3.json by hand: DP = 64 / (1 x 8 accumulation steps) = 8.
    const auto imported = step_and_memory("--from-deepspeed plans/deepspeed_zero3.json");
    const auto flags = step_and_memory("--framework deepspeed --zero 3 --micro-batch 1 --global-batch 64 --dp 8 "
                                       "--precision bf16 --optimizer adamw");
    CHECK(imported == flags);
  }

  TEST_CASE("explicit flags override the imported file") {
    const auto imported = step_and_memory("--from-deepspeed plans/deepspeed_zero3.json --zero 1");
    const auto flags = step_and_memory("--framework deepspeed --zero 1 --micro-batch 1 --global-batch 64 --dp 8 "
                                       "--precision bf16 --optimizer adamw");
    CHECK(imported == flags);
  }

  TEST_CASE("the Megatron file's plan, as --print-plan shows it") {
    const auto m = rl::test::model("llama3_8b");
    rl::spec::PlanSpec p;
    p.seq_len = 8192;
    auto r = rl::spec::import_megatron(std::string(RIDGELINE_SOURCE_DIR) + "/plans/megatron_llama3_8b.sh");
    rl::spec::apply_launch(r.values, p, m, r);
    rl::spec::apply_framework_defaults(p);
    r.file = "plans/megatron_llama3_8b.sh";
    CHECK(rl::spec::describe_plan(p, r) == PRINT_PLAN_MEGATRON);
  }

  TEST_CASE("Megatron args: errors at the file's line and column") {
    auto error_of = [](const std::string& text) {
      const auto path = temp_file("args.sh", text);
      try {
        (void)rl::spec::import_megatron(path);
      } catch (const rl::support::SpecError& e) {
        auto s = e.diagnostics().front().format();
        return s.substr(s.find(':'));  // without the temporary path
      }
      return std::string("no error");
    };
    CHECK(error_of("torchrun pretrain_gpt.py \\\n    --tensor-model-parallel-size $TP --bf16\n") ==
          ":2:5: error: --tensor-model-parallel-size: \"$TP\" is a shell variable the script does not assign "
          "(from the environment or computed): write the value");
    CHECK(error_of("--nnodes $((N / 8))\n") ==
          ":1:1: error: --nnodes: \"$((N\" is a shell variable the script does not assign (from the environment "
          "or computed): write the value");
    CHECK(error_of("--cpu-offloading\n") == ":1:1: error: --cpu-offloading: activation CPU offload is not modelled");
    CHECK(error_of("--bf16 --fp8-format e5m2\n") ==
          ":1:8: error: --fp8-format: expected one of e4m3, hybrid, got \"e5m2\"");
    CHECK(error_of("--micro-batch-size\n--bf16\n") == ":1:1: error: --micro-batch-size: expected a value after it");
  }

  TEST_CASE("Megatron args: the embedding and loss counted in the pipeline split are lighter end stages") {
    // Megatron-Core get_num_layers_to_build: Llama 3.1 405B's 126 layers +
    // the embedding + the loss = 128 over PP 8 x VP 8 chunks of 2 (NeMo's
    // llama31_405b recipe sets both): 16 a stage, the first and last 15.
    const std::string both =
        "torchrun --nproc_per_node 8 --nnodes 16 pretrain_gpt.py --tensor-model-parallel-size 8 "
        "--pipeline-model-parallel-size 8 --num-virtual-stages-per-pipeline-rank 8 "
        "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split --bf16 "
        "--micro-batch-size 1 --global-batch-size 64 --seq-length 8192\n";
    const auto m = rl::test::model("llama3_405b");
    REQUIRE(m.layers == 126);
    {
      auto r = rl::spec::import_megatron(temp_file("account.sh", both));
      rl::spec::PlanSpec p;
      rl::spec::apply_launch(r.values, p, m, r);
      CHECK(p.parallel.first_stage_layers == 15);
      CHECK(p.parallel.last_stage_layers == 15);
      CHECK(p.parallel.virtual_stages == 8);
      // 15 + 6 x 16 + 15 = 126; the busiest stage's 16 split into 8 chunks of 2: the engine takes it.
      CHECK(rl::spec::max_stage_layers(m.layers, 8, 15, 15) == 16);
      CHECK(rl::engine::check_plan(m, p, rl::test::gpu("h100_sxm")).field.empty());
    }
    // A refusal at import, Megatron-LM's own: its message.
    auto refusal = [&](const std::string& name, const std::string& args) {
      auto r = rl::spec::import_megatron(temp_file(name, args));
      rl::spec::PlanSpec p;
      try {
        rl::spec::apply_launch(r.values, p, m, r);
      } catch (const rl::support::SpecError& e) {
        return e.diagnostics().front().format();
      }
      return std::string("no error");
    };
    // The embedding alone: 127 do not split over 64 chunks (Megatron asserts the same).
    CHECK(refusal("account_one.sh", "--pipeline-model-parallel-size 8 --num-virtual-stages-per-pipeline-rank 8 "
                                    "--account-for-embedding-in-pipeline-split --bf16\n")
              .find("126 layers + the embedding do not split evenly over PP 8 x 8 virtual stages") != std::string::npos);
    // Exclusive of the explicit first-stage count, as in Megatron-LM.
    CHECK(refusal("account_mixed.sh", "--pipeline-model-parallel-size 8 --decoder-first-pipeline-num-layers 14 "
                                      "--account-for-loss-in-pipeline-split --bf16\n")
              .find("cannot be combined with --decoder-first-pipeline-num-layers") != std::string::npos);
  }

  TEST_CASE("Megatron args: --moe-enable-deepep is the deepep dispatcher, --moe-shared-expert-overlap the overlap") {
    // megatron/training/arguments.py: both store_true.
    const std::string text =
        "torchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py --expert-model-parallel-size 16 "
        "--moe-token-dispatcher-type flex --moe-enable-deepep --moe-shared-expert-overlap --bf16 "
        "--micro-batch-size 1 --global-batch-size 16 --seq-length 4096\n";
    const auto path = temp_file("deepep.sh", text);
    auto r = rl::spec::import_megatron(path);
    rl::spec::PlanSpec p;
    const auto m = rl::test::model("deepseek_v3");
    rl::spec::apply_launch(r.values, p, m, r);
    CHECK(p.moe.dispatcher == rl::spec::MoeDispatcher::kDeepEp);
    CHECK(p.moe.shared_expert_overlap);
    CHECK(p.parallel.ep == 16);
  }

  TEST_CASE("Megatron args: the attention the script builds is the model's") {
    // Megatron-LM d98e8a6: argument_utils.py lines 330-333 pass
    // num_query_groups to the TransformerConfig only under
    // --group-query-attention (else None: one KV head per attention head,
    // transformer_config.py lines 1458-1459); --num-query-groups defaults
    // to 1 (transformer_config.py line 175, argparse_meta); kv_channels is
    // hidden / heads = 4096 / 32 = 128 for Llama-3-8B unless given.
    auto error_of = [](const std::string& text) {
      const auto path = temp_file("gqa.sh", text);
      const auto r = rl::test::run_cli("predict --model llama3_8b --from-megatron " + path);
      CHECK(r.status == 2);
      CHECK(r.out.empty());
      const auto line = r.err.substr(0, r.err.find('\n'));
      return line.substr(line.find(':'));
    };
    // Column 29: four spaces, --group-query-attention (23 characters), a space.
    CHECK(error_of("--num-layers 32 --num-attention-heads 32 \\\n    --group-query-attention --num-query-groups 16\n") ==
          ":2:29: error: --num-query-groups: 16 query groups (KV heads), but the model (Llama-3-8B) has 8; pass the "
          "run's model with --model");
    CHECK(error_of("--group-query-attention --bf16\n") ==
          ":1:1: error: --group-query-attention: 1 query groups (KV heads) (Megatron-LM's default without "
          "--num-query-groups), but the model (Llama-3-8B) has 8; pass the run's model with --model");
    CHECK(error_of("--num-attention-heads 32 --num-query-groups 8\n") ==
          ":1:26: error: --num-query-groups: has no effect without --group-query-attention: Megatron-LM then builds "
          "one KV head per attention head (32), but the model (Llama-3-8B) has 8 KV heads; add "
          "--group-query-attention");
    CHECK(error_of("--num-attention-heads 32 --bf16\n") ==
          ":1:1: error: --num-attention-heads: without --group-query-attention Megatron-LM builds one KV head per "
          "attention head, but the model (Llama-3-8B) has 8 KV heads for 32 heads; add --group-query-attention "
          "--num-query-groups 8");
    CHECK(error_of("--group-query-attention --num-query-groups 8 --kv-channels 64\n") ==
          ":1:46: error: --kv-channels: 64 channels per attention head, but the model (Llama-3-8B) has 128; pass "
          "the run's model with --model");
    // Megatron-DeepSpeed's --num-key-value-heads needs no switch.
    const auto ok = temp_file("kvh.sh", "--num-attention-heads 32 --num-key-value-heads 8 --kv-channels 128\n");
    const auto r = rl::test::run_cli("predict --model llama3_8b --from-megatron " + ok + " --print-plan");
    CHECK(r.status == 0);
    CHECK(r.out.find("note: the model (Llama-3-8B) matches --num-attention-heads 32 (line 1), --kv-channels 128 "
                     "(line 1), --num-key-value-heads 8 (line 1)") != std::string::npos);
  }

  TEST_CASE("the gradient reduction overlaps the backward only where the framework is told to") {
    // Megatron-LM d98e8a6 arguments.py line 3121: --overlap-grad-reduce,
    // store_true, default False. DeepSpeed edaa722 zero/config.py lines
    // 383-385: overlap_comm defaults to stage == 3.
    const std::string run = "--micro-batch-size 1 --global-batch-size 64 --seq-length 4096 --bf16 ";
    const auto without = temp_file("noovl.sh", "torchrun --nproc_per_node 8 pretrain_gpt.py " + run + "\n");
    const auto with = temp_file("ovl.sh", "torchrun --nproc_per_node 8 pretrain_gpt.py " + run + "--overlap-grad-reduce\n");
    const std::string flags = "--model llama3_8b --framework megatron --dp 8 --micro-batch 1 --global-batch 64 --seq 4096 "
                              "--precision bf16";
    const auto exposed = step_and_memory("--model llama3_8b --from-megatron " + without);
    const auto overlapped = step_and_memory("--model llama3_8b --from-megatron " + with);
    CHECK(exposed == step_and_memory(flags + " --grad-reduce exposed"));
    CHECK(overlapped == step_and_memory(flags + " --grad-reduce overlapped"));
    CHECK(overlapped == step_and_memory(flags));  // a hand-written plan: overlapped, as before
    // 8 GPUs all-reducing 8B fp32 main gradients take time the backward no longer hides.
    CHECK(exposed["step"]["step_time_s"].get<double>() > overlapped["step"]["step_time_s"].get<double>());
    CHECK(exposed["memory"] == overlapped["memory"]);
    auto ds = [](const std::string& zero) {
      return temp_file("ovl" + std::to_string(zero.size()) + ".json",
                       "{\"train_micro_batch_size_per_gpu\": 1, \"gradient_accumulation_steps\": 8,\n"
                       " \"bf16\": {\"enabled\": true},\n \"zero_optimization\": {" + zero + "}}\n");
    };
    const std::string ds_flags = "--model llama3_8b --framework deepspeed --dp 8 --micro-batch 1 --global-batch 64 "
                                 "--precision bf16 --seq 4096 ";
    CHECK(step_and_memory("--model llama3_8b --dp 8 --seq 4096 --from-deepspeed " + ds("\"stage\": 1")) ==
          step_and_memory(ds_flags + "--zero 1 --grad-reduce exposed"));
    CHECK(step_and_memory("--model llama3_8b --dp 8 --seq 4096 --from-deepspeed " + ds("\"stage\": 1, \"overlap_comm\": true")) ==
          step_and_memory(ds_flags + "--zero 1 --grad-reduce overlapped"));
    CHECK(step_and_memory("--model llama3_8b --dp 8 --seq 4096 --from-deepspeed " + ds("\"stage\": 3")) ==
          step_and_memory(ds_flags + "--zero 3 --grad-reduce overlapped"));
  }

  TEST_CASE("--print-plan lists what it ignores with the reason, and what it does not know") {
    const auto path = temp_file("unknown.sh", "--bf16 --lr 3e-4 --seed 1234 --foo-bar 3\n");
    const auto r = rl::test::run_cli("predict --model llama3_8b --from-megatron " + path + " --print-plan");
    CHECK(r.status == 0);
    CHECK(r.out.find("Ignored (no effect on step time or memory):\n"
                     "  --lr 3e-4 (line 1): learning rate\n"
                     "  --seed 1234 (line 1): random seed\n"
                     "Not read (unknown to Ridgeline; check that they change neither step time nor memory):\n"
                     "  --foo-bar 3 (line 1)\n") != std::string::npos);
  }

  TEST_CASE("torchtitan's keys as they moved across its releases") {
    // The 2024 layout (torchtitan 1a303b3, torchtitan/config_manager.py):
    // training.batch_size, training.data_parallel_degree (FSDP over it,
    // training.data_parallel_type = "fsdp" by default, line 316),
    // training.tensor_parallel_degree, experimental.pipeline_parallel_degree,
    // training.compile, [float8] enable_float8_linear with dynamic scaling
    // (lines 466-510) - the same run as today's [parallelism] layout.
    const std::string y2024 = "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nbatch_size = 1\n"
                              "seq_len = 8192\nsteps = 10\ndata_parallel_degree = 4\ntensor_parallel_degree = 2\n"
                              "compile = false\n[experimental]\npipeline_parallel_degree = 1\n"
                              "[activation_checkpoint]\nmode = 'full'\n[float8]\nenable_float8_linear = true\n";
    const std::string y2026 = "[model]\nname = \"llama3\"\nflavor = \"8B\"\nconverters = [\"quantize.linear.float8\"]\n"
                              "[training]\nlocal_batch_size = 1\nseq_len = 8192\nsteps = 10\n"
                              "[parallelism]\ndata_parallel_shard_degree = 4\ntensor_parallel_degree = 2\n"
                              "[activation_checkpoint]\nmode = \"full\"\n"
                              "[quantize.linear.float8]\nrecipe_name = \"tensorwise\"\n";
    // By hand: DP 4 sharded (ZeRO-3), TP 2, fp8 tensorwise (torchao's
    // dynamic scaling), full recomputation, 10 x 4 x 8192 = 327680 tokens.
    const std::string flags = "--model llama3_8b --framework torchtitan --tp 2 --dp 4 --zero 3 --micro-batch 1 --seq 8192 "
                              "--precision fp8 --fp8-recipe tensorwise --recompute full --fusion eager --tokens 327680";
    const auto expected = step_and_memory(flags);
    CHECK(step_and_memory("--from-torchtitan " + temp_file("y2024.toml", y2024)) == expected);
    CHECK(step_and_memory("--from-torchtitan " + temp_file("y2026.toml", y2026)) == expected);
    // data_parallel_type = "ddp": the degree replicates (DDP, no sharding).
    const auto ddp = temp_file("ddp.toml", "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nbatch_size = 1\n"
                                           "seq_len = 8192\nsteps = 10\ndata_parallel_degree = 4\n"
                                           "data_parallel_type = \"ddp\"\n[activation_checkpoint]\nmode = \"full\"\n");
    CHECK(step_and_memory("--from-torchtitan " + ddp) ==
          step_and_memory("--model llama3_8b --framework torchtitan --dp 4 --zero 0 --micro-batch 1 --seq 8192 "
                          "--recompute full --tokens 327680"));
  }

  TEST_CASE("torchtitan: its default activation checkpointing, pure bf16, float8 without a recipe") {
    // No [activation_checkpoint]: mode "selective", selective_ac_option "2"
    // (torchtitan/config/job_config.py lines 651-656): every 2nd layer,
    // torchtitan's selective_layer:2.
    const std::string base = "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nlocal_batch_size = 1\n"
                             "seq_len = 4096\nsteps = 10\n[parallelism]\ndata_parallel_shard_degree = 8\n";
    const std::string flags = "--model llama3_8b --framework torchtitan --dp 8 --zero 3 --micro-batch 1 --seq 4096 "
                              "--tokens 327680 --fusion eager ";
    CHECK(step_and_memory("--from-torchtitan " + temp_file("noac.toml", base)) ==
          step_and_memory(flags + "--recompute selective_layer:2"));
    // training.dtype = "bfloat16" (job_config.py lines 275-280): parameters,
    // gradients and optimizer state in bf16, no fp32 master copy.
    CHECK(step_and_memory("--from-torchtitan " + temp_file("bf16.toml", std::string(base).insert(base.find("[training]\n") + 11, "dtype = \"bfloat16\"\n"))) ==
          step_and_memory(flags + "--recompute selective_layer:2 --precision bf16 --master-weights none --main-grads working"));
    // float8 without a recipe_name: torchao's Float8LinearConfig, dynamic tensorwise.
    CHECK(step_and_memory("--from-torchtitan " +
                          temp_file("f8.toml", "[model]\nconverters = [\"float8\"]\n" + base.substr(base.find("[training]")) +
                                                   "[activation_checkpoint]\nmode = \"none\"\n") + " --model llama3_8b") ==
          step_and_memory(flags + "--recompute none --precision fp8 --fp8-recipe tensorwise"));
  }

  TEST_CASE("torchtitan: training.enable_cpu_offload is FSDP2's CPU offload, optimizer and parameters") {
    // torchtitan/config/configs.py line 70 (b5bcd76): "Whether to apply CPU
    // offloading of parameters, gradients, and optimizer states in FSDP";
    // distributed/fsdp.py lines 231-232 pass CPUOffloadPolicy to fully_shard.
    const std::string base = "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nlocal_batch_size = 1\n"
                             "seq_len = 4096\nsteps = 10\n[parallelism]\ndata_parallel_shard_degree = 8\n"
                             "[activation_checkpoint]\nmode = \"full\"\n";
    const std::string flags = "--model llama3_8b --framework torchtitan --dp 8 --zero 3 --micro-batch 1 --seq 4096 "
                              "--tokens 327680 --fusion eager --recompute full ";
    const std::string on = std::string(base).insert(base.find("[training]\n") + 11, "enable_cpu_offload = true\n");
    CHECK(step_and_memory("--from-torchtitan " + temp_file("off.toml", on)) ==
          step_and_memory(flags + "--offload-optimizer cpu --offload-params cpu"));
    const auto pred = nlohmann::json::parse(
        rl::test::run_cli("predict --format json --from-torchtitan " + temp_file("off2.toml", on)).out);
    CHECK(pred.at("plan").at("offload").at("optimizer") == "cpu");
    CHECK(pred.at("plan").at("offload").at("params") == "cpu");
    // false is torchtitan's default: the plan without offload.
    const std::string off = std::string(base).insert(base.find("[training]\n") + 11, "enable_cpu_offload = false\n");
    CHECK(step_and_memory("--from-torchtitan " + temp_file("nooff.toml", off)) == step_and_memory(flags));
    // Not a boolean: an error at its line.
    const std::string bad = std::string(base).insert(base.find("[training]\n") + 11, "enable_cpu_offload = \"yes\"\n");
    const auto r = rl::test::run_cli("predict --from-torchtitan " + temp_file("bad.toml", bad));
    CHECK(r.status == 2);
    CHECK(r.err.find(":5:22: error: training.enable_cpu_offload: expected true or false, got \"yes\"") !=
          std::string::npos);
  }

  TEST_CASE("torchtitan: optimizer.early_step_in_backward is the optimizer in the backward") {
    // torchtitan/components/optimizer.py (9810191~1) build_optimizers line
    // 277: OptimizersInBackwardContainer steps each parameter and zeroes its
    // gradient in a post-accumulate-grad hook; NotImplementedError with
    // pipeline parallelism.
    const std::string base = "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nlocal_batch_size = 1\n"
                             "seq_len = 4096\nsteps = 10\n[optimizer]\nearly_step_in_backward = true\n";
    const std::string flags = "--model llama3_8b --framework torchtitan --dp 8 --zero 3 --micro-batch 1 --seq 4096 "
                              "--tokens 327680 --fusion eager --recompute selective_layer:2 ";
    const std::string dp8 = base + "[parallelism]\ndata_parallel_shard_degree = 8\n";
    CHECK(step_and_memory("--from-torchtitan " + temp_file("inbwd.toml", dp8)) ==
          step_and_memory(flags + "--optimizer-in-backward"));
    // On one GPU the whole gradient it frees shows: 16 GB of bf16 gradients
    // of Llama-3-8B against its largest tensor's (the 128256 x 4096
    // embedding's, 1.05 GB).
    const std::string one = base + "[parallelism]\ndata_parallel_shard_degree = 1\n";
    const auto j = nlohmann::json::parse(
        rl::test::run_cli("predict --format json --from-torchtitan " + temp_file("inbwd1.toml", one)).out);
    CHECK(j.at("memory").at("gradients_bytes").get<double>() == doctest::Approx(128256.0 * 4096 * 2));
    const auto r = rl::test::run_cli("predict --from-torchtitan " +
                                     temp_file("inbwd_pp.toml", base + "[parallelism]\ndata_parallel_shard_degree = 4\n"
                                                                       "pipeline_parallel_degree = 2\n"));
    CHECK(r.status == 2);
    CHECK(r.err.find("optimizer in backward is not supported with pipeline parallelism") != std::string::npos);
  }

  TEST_CASE("torchtitan: fsdp_reshard_after_forward is read with the pipeline degree") {
    // torchtitan/distributed/fsdp.py get_fsdp_reshard_after_forward_policy:
    // "always" -> True, "never" -> False, "default" -> not pp_enabled. The
    // profile models the default (frameworks/torchtitan.yaml pp_params).
    const std::string head = "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nlocal_batch_size = 1\n"
                             "seq_len = 4096\nsteps = 10\n[parallelism]\ndata_parallel_shard_degree = 8\n";
    const std::string flags = "--model llama3_8b --framework torchtitan --dp 8 --zero 3 --micro-batch 1 --seq 4096 "
                              "--tokens 327680 --fusion eager --recompute selective_layer:2";
    const auto with = [&](const std::string& name, const std::string& policy) {
      return temp_file(name, head + "fsdp_reshard_after_forward = \"" + policy + "\"\n");
    };
    // Without PP, "always" and "default" both reshard: the plan of the flags.
    CHECK(step_and_memory("--from-torchtitan " + with("always.toml", "always")) == step_and_memory(flags));
    CHECK(step_and_memory("--from-torchtitan " + with("default.toml", "default")) == step_and_memory(flags));
    // "never" without PP keeps the parameters gathered: not modelled, an
    // error at its line (10) and column (30), not the default's answer.
    auto r = rl::test::run_cli("predict --from-torchtitan " + with("never.toml", "never"));
    CHECK(r.status == 2);
    CHECK(r.err.find(":10:30: error: parallelism.fsdp_reshard_after_forward: \"never\" without pipeline parallelism "
                     "is not modelled") != std::string::npos);
    r = rl::test::run_cli("predict --from-torchtitan " + with("bad.toml", "sometimes"));
    CHECK(r.status == 2);
    CHECK(r.err.find("expected \"default\", \"always\" or \"never\", got \"sometimes\"") != std::string::npos);
  }

  TEST_CASE("DeepSpeed: AutoTP, parameter offload alone, gradient accumulation dtype, bf16 at stage 0") {
    const std::string head = "{\"train_micro_batch_size_per_gpu\": 1, \"gradient_accumulation_steps\": 8,\n"
                             " \"bf16\": {\"enabled\": true},\n";
    const std::string flags = "--model llama3_8b --framework deepspeed --micro-batch 1 --precision bf16 --seq 4096 ";
    // deepspeed/runtime/tensor_parallel/config.py line 45 autotp_size;
    // fp32 accumulation (runtime/constants.py line 485). Global batch
    // 1 x 8 x DP 4 = 32.
    const auto a = temp_file("autotp.json", head + " \"tensor_parallel\": {\"autotp_size\": 2},\n"
                                                   " \"data_types\": {\"grad_accum_dtype\": \"fp32\"},\n"
                                                   " \"zero_optimization\": {\"stage\": 3}}\n");
    CHECK(step_and_memory("--model llama3_8b --dp 4 --seq 4096 --from-deepspeed " + a) ==
          step_and_memory(flags + "--tp 2 --dp 4 --zero 3 --global-batch 32 --main-grads fp32 --grad-reduce overlapped"));
    // The parameters on the CPU and the optimizer not (ZeRO-Infinity's
    // offload_param alone): refused at its line, not left out.
    const auto po = temp_file("po.json", head + " \"zero_optimization\": {\"stage\": 3,\n"
                                                "  \"offload_param\": {\"device\": \"cpu\"}}}\n");
    const auto refused = rl::test::run_cli("predict --model llama3_8b --dp 4 --from-deepspeed " + po);
    CHECK(refused.status == 2);
    CHECK(located(refused.err) ==
          ":4:31: error: zero_optimization.offload_param.device: parameter offload without optimizer offload "
          "(zero_optimization.offload_optimizer) is not modelled");
    // bf16 at stage 0 under PP: BF16_Optimizer (runtime/engine.py lines
    // 2012-2016), which partitions the fp32 masters over DP: ZeRO-1.
    const auto z0 = temp_file("z0.json", head + " \"zero_optimization\": {\"stage\": 0}}\n");
    CHECK(step_and_memory("--model llama3_8b --pp 2 --dp 4 --seq 4096 --from-deepspeed " + z0) ==
          step_and_memory(flags + "--pp 2 --dp 4 --zero 1 --global-batch 32 --grad-reduce exposed"));
    CHECK(step_and_memory("--model llama3_8b --dp 4 --seq 4096 --from-deepspeed " + z0) ==
          step_and_memory(flags + "--dp 4 --zero 0 --global-batch 32 --grad-reduce exposed"));
    // fp32 accumulation of bf16 gradients at stage 0: DeepSpeed raises
    // NotImplementedError (engine.py line 2021).
    const auto bad = temp_file("bad.json", head + " \"data_types\": {\"grad_accum_dtype\": \"fp32\"}}\n");
    const auto r = rl::test::run_cli("predict --model llama3_8b --dp 4 --from-deepspeed " + bad);
    CHECK(r.status == 2);
    CHECK(located(r.err) ==
          ":3:37: error: data_types.grad_accum_dtype: fp32 accumulation of bf16 gradients at ZeRO stage 0: DeepSpeed "
          "raises NotImplementedError (unsupported mix of model and gradient accumulation dtypes)");
  }

  TEST_CASE("Megatron-DeepSpeed: --zero-stage, and Ulysses refused at its line") {
    const auto z = temp_file("mds.sh", "--bf16 --zero-stage 1 --seq-length 4096\n");
    CHECK(step_and_memory("--model llama3_8b --dp 8 --from-megatron " + z) ==
          step_and_memory("--model llama3_8b --framework megatron --dp 8 --zero 1 --precision bf16 --seq 4096 "
                          "--grad-reduce exposed"));
    const auto u = temp_file("uly.sh", "--bf16 --ds-sequence-parallel-size 4\n");
    const auto r = rl::test::run_cli("predict --model llama3_8b --from-megatron " + u);
    CHECK(r.status == 2);
    CHECK(located(r.err) ==
          ":1:8: error: --ds-sequence-parallel-size: DeepSpeed-Ulysses sequence parallelism (4 ranks) is not "
          "modelled; the plan's context parallelism (--cp) is ring attention");
  }

  TEST_CASE("Megatron args: an `if` over the script's assignments takes its branch; another is refused") {
    // DTYPE="fp8" makes the first branch the one bash runs; the else
    // branch's --bf16 alone is never passed.
    const auto taken = temp_file("if.sh", "DTYPE=\"fp8\"\nif [[ \"$DTYPE\" == \"fp8\" ]]; then\n"
                                          "  ARGS=(\"--fp8-format hybrid\" --bf16)\nelse\n  ARGS=(--fp16)\nfi\n"
                                          "torchrun pretrain_gpt.py ${ARGS[@]} --seq-length 4096\n");
    CHECK(step_and_memory("--model llama3_8b --dp 8 --from-megatron " + taken) ==
          step_and_memory("--model llama3_8b --framework megatron --dp 8 --precision fp8 --seq 4096 "
                          "--grad-reduce exposed"));
    // An argument of an assignment is located at the assignment (column 3).
    const auto unsure = temp_file("if2.sh", "if [ -n \"$FP8\" ]; then\n  ARGS=(--fp8-format hybrid)\nfi\n");
    const auto r = rl::test::run_cli("predict --model llama3_8b --from-megatron " + unsure);
    CHECK(r.status == 2);
    CHECK(located(r.err) ==
          ":2:3: error: --fp8-format: is inside the `if` of line 1, whose condition Ridgeline does not evaluate (it "
          "reads [[ \"$VAR\" == value ]] over the script's assignments): write the branch the run takes");
  }

  TEST_CASE("Megatron-DeepSpeed: --deepspeed with its --deepspeed_config beside the script") {
    const auto dir = std::filesystem::temp_directory_path() / ("ridgeline_mds_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "ds.json") << "{\"zero_optimization\": {\"stage\": 1, \"overlap_comm\": true}}\n";
    std::ofstream(dir / "run.sh") << "deepspeed pretrain_gpt.py --bf16 --seq-length 4096 \\\n"
                                     "  --deepspeed --deepspeed_config ds.json\n";
    // The arguments give bf16 and the sequence; the JSON the ZeRO stage and overlap_comm.
    CHECK(step_and_memory("--model llama3_8b --dp 8 --from-megatron " + (dir / "run.sh").string()) ==
          step_and_memory("--model llama3_8b --framework deepspeed --dp 8 --zero 1 --precision bf16 --seq 4096 "
                          "--grad-reduce overlapped"));
    std::ofstream(dir / "missing.sh") << "--bf16 --deepspeed --deepspeed_config nowhere.json\n";
    const auto r = rl::test::run_cli("predict --model llama3_8b --from-megatron " + (dir / "missing.sh").string());
    CHECK(r.status == 2);
    CHECK(r.err.find(":1:20: error: --deepspeed_config: cannot read \"nowhere.json\" beside the script or from here") !=
          std::string::npos);
  }

  TEST_CASE("Megatron args: the script's own assignments resolve its variables") {
    // NVIDIA's style (examples/gpt3/train_gpt3_175b_distributed.sh): sizes
    // assigned at the top, ${VAR:-default}, export, and the arguments kept in
    // a string expanded on the launch line. By hand: TP 4, PP 2 (the
    // default, PP unset), 8 GPUs per node x 2 nodes = 16 GPUs / (4 x 2) = DP 2;
    // micro-batch 1, global batch 64, sequence 4096.
    const std::string text =
        "#!/bin/bash\n"
        "GPUS_PER_NODE=8\n"
        "export NNODES=2\n"
        "TP=4\n"
        "MODEL_ARGS=\"--tensor-model-parallel-size $TP --pipeline-model-parallel-size ${PP:-2} --bf16\"\n"
        "torchrun --nproc_per_node $GPUS_PER_NODE --nnodes ${NNODES} pretrain_gpt.py \\\n"
        "    $MODEL_ARGS --micro-batch-size 1 --global-batch-size 64 --seq-length 4096\n";
    const auto path = temp_file("vars.sh", text);
    auto r = rl::spec::import_megatron(path);
    rl::spec::PlanSpec p;
    const auto m = rl::test::model("llama3_8b");
    rl::spec::apply_launch(r.values, p, m, r);
    CHECK(p.parallel.tp == 4);
    CHECK(p.parallel.pp == 2);
    CHECK(p.parallel.dp == 2);
    CHECK(p.micro_batch == 1);
    CHECK(p.global_batch == 64);
    CHECK(p.seq_len == 4096);
    const auto note = std::find_if(r.notes.begin(), r.notes.end(),
                                   [](const std::string& n) { return n.starts_with("--nproc_per_node $GPUS_PER_NODE = 8"); });
    CHECK(note != r.notes.end());
  }

  TEST_CASE("torchtitan's -1 and DeepSpeed's \"auto\" come from the flags, never a silent 1") {
    // torchtitan: data_parallel_shard_degree = -1 takes the GPUs left
    // (torchtitan/distributed/parallel_dims.py); DeepSpeed "auto" is filled by
    // the HF Trainer (transformers/integrations/deepspeed.py). Without the
    // flags that give them: exit 2 with the key's line; with them: the plan.
    std::string toml = rl::test::slurp(std::string(RIDGELINE_SOURCE_DIR) + "/plans/torchtitan_llama3_8b.toml");
    toml.replace(toml.find("data_parallel_shard_degree = 4"), 30, "data_parallel_shard_degree = -1");
    const auto tt = temp_file("shard.toml", toml);
    const auto refused = rl::test::run_cli("predict --from-torchtitan " + tt);
    CHECK(refused.status == 2);
    CHECK(refused.err.find(":28:30: error: parallelism.data_parallel_shard_degree: -1 takes the GPUs the other "
                           "degrees leave: give --dp N (GPUs / (TP x PP x CP))") != std::string::npos);
    CHECK(refused.out.empty());
    const auto with_dp = step_and_memory("--from-torchtitan " + tt + " --dp 4");
    const auto plain = step_and_memory("--from-torchtitan plans/torchtitan_llama3_8b.toml");
    CHECK(with_dp == plain);
    std::string json = rl::test::slurp(std::string(RIDGELINE_SOURCE_DIR) + "/plans/deepspeed_zero3.json");
    json.replace(json.find("\"train_micro_batch_size_per_gpu\": 1"), 35, "\"train_micro_batch_size_per_gpu\": \"auto\"");
    const auto ds = temp_file("auto.json", json);
    const auto no_mb = rl::test::run_cli("predict --model llama3_8b --from-deepspeed " + ds);
    CHECK(no_mb.status == 2);
    CHECK(no_mb.err.find("train_micro_batch_size_per_gpu: \"auto\" is the Hugging Face Trainer's "
                         "per_device_train_batch_size: give --micro-batch") != std::string::npos);
    const auto given = step_and_memory("--model llama3_8b --from-deepspeed " + ds + " --micro-batch 1");
    CHECK(given == step_and_memory("--model llama3_8b --from-deepspeed plans/deepspeed_zero3.json"));
  }

  TEST_CASE("Megatron args: combined settings and their errors") {
    const auto m = rl::test::model("llama3_8b");
    auto apply = [&](const std::string& text) {
      const auto path = temp_file("combined.sh", text);
      auto r = rl::spec::import_megatron(path);
      rl::spec::PlanSpec p;
      rl::spec::apply_launch(r.values, p, m, r);
      return p;
    };
    auto error_of = [&](const std::string& text) {
      try {
        (void)apply(text);
      } catch (const rl::support::SpecError& e) {
        auto s = e.diagnostics().front().format();
        return s.substr(s.find(':'));
      }
      return std::string("no error");
    };
    // block with 4 layers: the first 4 layers of each stage recompute.
    CHECK(rl::spec::to_string(apply("--bf16 --recompute-granularity full --recompute-method block "
                                    "--recompute-num-layers 4").recompute) == "block:4");
    CHECK(rl::spec::to_string(apply("--bf16 --recompute-granularity full --recompute-method uniform "
                                    "--recompute-num-layers 1").recompute) == "full");
    // --recompute-modules takes every word up to the next flag (arguments.py
    // nargs='*'); Ridgeline prints Megatron-Core's words in its own order.
    const auto mods = apply("--bf16 --recompute-granularity selective --recompute-modules mla_up_proj layernorm "
                            "moe_act --micro-batch-size 1\n");
    CHECK(rl::spec::to_string(mods.recompute) == "selective:layernorm+mla_up_proj+moe_act");
    CHECK(mods.micro_batch == 1);
    CHECK(error_of("--bf16 --recompute-granularity selective --recompute-modules moe\n") ==
          ":1:42: error: --recompute-modules: expected words of core_attn, layernorm, mla_up_proj, mlp, "
          "shared_experts, moe_act (moe: recomputing the whole MoE layer, its all-to-alls included, is not "
          "modelled), got \"moe\"");
    CHECK(error_of("--bf16 --recompute-modules core_attn\n") ==
          ":1:8: error: --recompute-modules: applies under --recompute-granularity selective only (Megatron-Core "
          "reads recompute_modules there)");
    // 32 layers / PP 4 = 8 per stage, 2 per virtual stage: VPP 4.
    CHECK(apply("--bf16 --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 2")
              .parallel.virtual_stages == 4);
    // No --bf16 / --fp16: Megatron-LM trains in fp32; no --sequence-parallel: off even with TP.
    const auto plain = apply("--tensor-model-parallel-size 2\n");
    CHECK(plain.precision == rl::spec::Precision::kFp32);
    CHECK_FALSE(plain.parallel.sp);
    CHECK(plain.sp_given);
    CHECK(error_of("--bf16\n--recompute-granularity full\n") ==
          ":2:1: error: --recompute-granularity: full needs --recompute-method uniform or block (Megatron-LM refuses "
          "it without one)");
    CHECK(error_of("--bf16 --num-layers 80\n") ==
          ":1:8: error: --num-layers: 80 layers, but the model (Llama-3-8B) has 32; pass the run's model with --model");
    CHECK(error_of("--nproc_per_node 8 --tensor-model-parallel-size 3 --bf16\n") ==
          ":1:1: error: --nproc_per_node: 8 GPUs are not a multiple of TP x PP x CP = 3");
  }

  TEST_CASE("torchtitan and DeepSpeed: unsupported settings are errors at their line") {
    const auto toml = temp_file("t.toml", "[model]\nconverters = [\"int8\"]\n");
    CHECK_THROWS_WITH_AS(rl::spec::import_torchtitan(toml), doctest::Contains("2:"), rl::support::SpecError);
    const auto json = temp_file("ds.json", "{\n  \"zero_optimization\": {\"stage\": 3,\n    \"offload_optimizer\": "
                                           "{\"device\": \"nvme\"}}\n}\n");
    try {
      (void)rl::spec::import_deepspeed(json);
      FAIL("no error");
    } catch (const rl::support::SpecError& e) {
      const auto s = e.diagnostics().front().format();
      CHECK(s.substr(s.find(':')) == ":3:26: error: zero_optimization.offload_optimizer: offload to nvme is not modelled");
    }
  }

  TEST_CASE("the global batch in tokens") {
    // 4M = 4 x 2^20 = 4194304 tokens = 512 sequences of 8192.
    auto r = rl::test::run_cli("predict --global-batch 4M --dp 8 --zero 3 --format json");
    auto j = nlohmann::json::parse(r.out);
    CHECK(j.at("plan").at("global_batch") == 512);
    r = rl::test::run_cli("predict --global-batch-tokens 512K --seq 4096 --format json");
    j = nlohmann::json::parse(r.out);
    CHECK(j.at("plan").at("global_batch") == 128);  // 524288 / 4096
    r = rl::test::run_cli("predict --global-batch 1M --seq 3000");
    CHECK(r.status == 2);
    CHECK(r.err == "error: --global-batch: 1M tokens = 1048576 is not a whole number of 3000-token sequences (349.53)\n");
    r = rl::test::run_cli("predict --global-batch 4M --global-batch-tokens 4M");
    CHECK(r.err == "error: --global-batch: give the global batch once: in sequences or in tokens\n");
  }

  TEST_CASE("SP defaults on with TP > 1 under megatron and torchtitan, unless given") {
    auto sp_of = [](const std::string& args) {
      const auto r = rl::test::run_cli("predict " + args + " --format json");
      return nlohmann::json::parse(r.out).at("plan").at("parallel").at("sp").get<bool>();
    };
    CHECK(sp_of("--tp 2"));
    CHECK_FALSE(sp_of("--tp 2 --no-sp"));
    // --set under each spelling of the field is as given as the flag.
    for (const char* key : {"sp", "parallel.sp", "plan.sp", "plan.parallel.sp"}) {
      CAPTURE(key);
      CHECK_FALSE(sp_of(std::string("--tp 2 --set ") + key + "=false"));
    }
    CHECK_FALSE(sp_of("--tp 1"));
    CHECK(sp_of("--tp 2 --framework torchtitan"));
    CHECK_FALSE(sp_of("--tp 2 --framework fsdp"));
  }

  TEST_CASE("uneven pipeline stages: Llama 3 405B's 126 layers on PP16") {
    // Meta's Llama 3 paper (Sec. 3.3.2): the first and last stages hold one
    // layer fewer: 7 + 14 x 8 + 7 = 126.
    using rl::spec::stage_layers;
    CHECK(stage_layers(126, 16, 7, 7, 0) == 7);
    CHECK(stage_layers(126, 16, 7, 7, 1) == 8);
    CHECK(stage_layers(126, 16, 7, 7, 15) == 7);
    CHECK(rl::spec::max_stage_layers(126, 16, 7, 7) == 8);
    CHECK(rl::spec::check_stage_layers(126, 16, 7, 7) == "");
    CHECK(rl::spec::check_stage_layers(126, 16, 8, 7) ==
          "126 layers less the first stage's 8 and the last stage's 7 leave 111, which 14 other stages do not divide");
    CHECK(rl::spec::check_stage_layers(32, 1, 8, 0) == "uneven pipeline stages need PP > 1");
    const auto m = rl::test::model("llama3_405b");
    const auto hw = rl::test::gpu("h100_sxm");
    rl::spec::PlanSpec p;
    p.seq_len = 8192;
    p.micro_batch = 1;
    p.parallel.tp = 8;
    p.parallel.sp = true;
    p.parallel.pp = 16;
    p.parallel.dp = 8;
    p.parallel.zero = 1;
    p.global_batch = 8 * 16;
    p.parallel.first_stage_layers = 7;
    p.parallel.last_stage_layers = 7;
    const auto pred = rl::engine::evaluate(m, p, hw);
    REQUIRE(pred.status != rl::engine::Status::kInvalid);
    const auto& mem = pred.memory;
    CHECK(mem.first_stage.layers == 7);
    CHECK(mem.middle_stage.layers == 8);
    CHECK(mem.last_stage.layers == 7);
    // 1F1B: stage 0 holds 16 micro-batches of 7 layers, stage 1 holds 15 of
    // 8 (120 > 112 layer-activations): the busiest stage is stage 1.
    CHECK(mem.peak_stage == "middle");
    CHECK(mem.first_stage.in_flight_microbatches == 16);
    CHECK(mem.middle_stage.in_flight_microbatches == 15);
    rl::spec::PlanSpec bad = p;
    bad.parallel.first_stage_layers = 9;
    const auto invalid = rl::engine::evaluate(m, bad, hw);
    CHECK(invalid.status == rl::engine::Status::kInvalid);
    CHECK(invalid.problem.message ==
          "126 layers less the first stage's 9 and the last stage's 7 leave 110, which 14 other stages do not divide");
  }

  TEST_CASE("block recomputation: K of the stage's L layers recompute") {
    const auto m = rl::test::model("llama3_8b");
    const auto hw = rl::test::gpu("h100_sxm");
    auto run = [&](const char* rec) {
      auto p = rl::test::plan(1, 4096);
      p.recompute = *rl::spec::parse_recompute(rec);
      return rl::engine::evaluate(m, p, hw);
    };
    const auto none = run("none"), full = run("full"), block8 = run("block:8");
    // Recomputed FLOPs: 8 of 32 layers' forward = a quarter of full's.
    CHECK(block8.step.recompute_flops == doctest::Approx(full.step.recompute_flops * 8.0 / 32.0));
    CHECK(full.memory.activations < block8.memory.activations);
    CHECK(block8.memory.activations < none.memory.activations);
    auto p = rl::test::plan(1, 4096);
    p.recompute = *rl::spec::parse_recompute("block:33");
    const auto too_many = rl::engine::evaluate(m, p, hw);
    CHECK(too_many.problem.message == "block:33 recomputes more layers than a stage holds (32)");
    p.recompute = *rl::spec::parse_recompute("block:8");
    p.framework = *rl::spec::find_framework("torchtitan");
    CHECK(rl::engine::evaluate(m, p, hw).problem.field == "recompute");
  }
  TEST_CASE("block recomputation re-runs only its layers' TP collectives") {
    // Megatron TP all-reduces twice per layer in the forward (after attention
    // and after the MLP; Shoeybi et al. 2019), so recomputing layers re-runs
    // 2 per recomputed layer: 2 x 8 = 16 for block:8, 2 x 32 = 64 for full.
    const auto m = ridgeline::test::model("llama3_8b");
    auto p = ridgeline::test::plan(1, 4096);
    p.parallel.tp = 2;
    const auto recompute_all_reduces = [&](ridgeline::spec::Recompute r) {
      p.recompute = r;
      double n = 0;
      for (const auto& k : ridgeline::test::step(m, p).kernels)
        if (k.phase == ridgeline::spec::Phase::kRecompute && k.name == "tp_all_reduce") n += k.count;
      return n;
    };
    ridgeline::spec::Recompute block{ridgeline::spec::RecomputeKind::kFull, 0};
    block.block_layers = 8;
    CHECK(recompute_all_reduces(block) == 16);
    CHECK(recompute_all_reduces({ridgeline::spec::RecomputeKind::kFull, 0}) == 64);
  }

  TEST_CASE("--use-flash-attn is TE's FlashAttention by GPU; an explicit --attention-backend decides") {
    // Megatron-Core with Transformer Engine: --use-flash-attn names no backend, TE's get_attention_backend
    // picks cuDNN fused attention on compute capability >= 9.0 (H100) and flash-attn 2 on A100.
    namespace spec = ridgeline::spec;
    const auto m = ridgeline::test::model("llama3_8b");
    auto plan_of = [&](const std::string& args, spec::Generation g) {
      const auto file = temp_file("attn.sh", "--bf16 --seq-length 4096 " + args + "\n");
      spec::ImportReport r = spec::import_megatron(file);
      spec::PlanSpec p;
      spec::apply_launch(r.values, p, m, r);
      spec::apply_generation_defaults(p, g);
      return std::pair{p, r};
    };
    CHECK(plan_of("--use-flash-attn", spec::Generation::kHopper).first.attention == spec::AttentionKind::kCudnn);
    CHECK(plan_of("--use-flash-attn", spec::Generation::kAmpere).first.attention == spec::AttentionKind::kFlash2);
    CHECK(plan_of("--attention-backend auto", spec::Generation::kHopper).first.attention ==
          spec::AttentionKind::kCudnn);
    // Both given: the explicit backend, in either order (no "later one wins").
    for (const char* args : {"--use-flash-attn --attention-backend flash", "--attention-backend flash --use-flash-attn"}) {
      const auto [p, r] = plan_of(args, spec::Generation::kHopper);
      CHECK(p.attention == spec::AttentionKind::kFlash2);
      CHECK(p.attention_given);
    }
    CHECK(plan_of("--use-flash-attn --attention-backend fused", spec::Generation::kAmpere).first.attention ==
          spec::AttentionKind::kCudnn);
    CHECK(plan_of("--attention-backend unfused", spec::Generation::kHopper).first.attention ==
          spec::AttentionKind::kNaive);
    // --print-plan lists the attention line and why.
    const auto [p, r] = plan_of("--use-flash-attn", spec::Generation::kHopper);
    const std::string d = spec::describe_plan(p, r);
    CHECK(d.find("  attention            by GPU       line 1: --use-flash-attn\n") != std::string::npos);
    CHECK(d.find("note: attention by GPU: megatron's default, flash2, cudnn on hopper, cudnn on blackwell, cudnn "
                 "on rtx_blackwell (--use-flash-attn)") != std::string::npos);
  }
}
