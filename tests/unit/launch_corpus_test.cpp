// Published launch configs (tests/data/launch/, their sources and commits
// in tests/data/launch/SOURCES.md) imported as the frameworks read them.
// Each expected value is read from the file by hand (its line in the
// comment) or derived from it with the framework's rule (the rule's source
// in the comment); none is taken from Ridgeline's own output.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "ridgeline/spec/launch_config.hpp"
#include "ridgeline/spec/launch_edit.hpp"
#include "ridgeline/spec/model.hpp"
#include "test_support.hpp"

namespace rl = ridgeline;

namespace {

const std::string kDir = "tests/data/launch/";

/// The plan object of a JSON prediction.
nlohmann::json plan_of(const std::string& args) {
  const auto r = rl::test::run_cli("predict " + args + " --format json");
  INFO(args << "\n" << r.err);
  REQUIRE(r.status <= 1);
  return nlohmann::json::parse(r.out).at("plan");
}

/// --print-plan's "Not read" lines (the keys Ridgeline does not know).
std::string unknown_of(const std::string& args) {
  const auto r = rl::test::run_cli("predict " + args + " --print-plan");
  REQUIRE(r.status == 0);
  const auto at = r.out.find("Not read");
  if (at == std::string::npos) return "";
  const auto start = r.out.find('\n', at) + 1;
  return r.out.substr(start, r.out.find("Plan:", start) - start);
}

/// The first line of a refusal, from the colon after the file name.
std::string refusal_of(const std::string& args) {
  const auto r = rl::test::run_cli("predict " + args);
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  const auto line = r.err.substr(0, r.err.find('\n'));
  return line.substr(line.find(':'));
}

}  // namespace

TEST_SUITE("launch corpus") {
  TEST_CASE("Megatron-LM examples/gpt3/train_gpt3_175b_distributed.sh") {
    // As published it runs TP 8 x PP 16 = 128 GPUs on GPUS_PER_NODE=8 x
    // NUM_NODES=1 = 8 (lines 7, 11, 22-23, 56-57): refused at line 22.
    CHECK(refusal_of("--model gpt3_175b --from-megatron " + kDir + "megatron_gpt3_175b.sh") ==
          ":22:5: error: --nproc_per_node: 8 GPUs are not a multiple of TP x PP x CP = 128");
    const auto p = plan_of("--model gpt3_175b --dp 1 --from-megatron " + kDir + "megatron_gpt3_175b.sh");
    CHECK(p["framework"] == "megatron");
    CHECK(p["parallel"]["tp"] == 8);   // line 56
    CHECK(p["parallel"]["pp"] == 16);  // line 57
    CHECK(p["parallel"]["dp"] == 1);   // --dp
    CHECK(p["parallel"]["sp"] == false);  // no --sequence-parallel
    CHECK(p["parallel"]["zero"] == 0);    // no --use-distributed-optimizer
    // No --overlap-grad-reduce: arguments.py line 3121, default False.
    CHECK(p["parallel"]["grad_reduce"] == "exposed");
    CHECK(p["micro_batch"] == 1);      // line 38
    CHECK(p["global_batch"] == 1536);  // line 39
    CHECK(p["seq_len"] == 2048);       // line 32
    CHECK(p["precision"] == "fp16");   // line 47
    // --attention-backend auto (line 34): TE's choice, cuDNN fused attention
    // on Hopper (the default GPU, h100_sxm).
    CHECK(p["attention"] == "cudnn");
    CHECK(p["cross_entropy"] == "eager");  // no --cross-entropy-loss-fusion
    CHECK(p["recompute"] == "none");
    // --train-iters 500000 (line 41) x 1536 x 2048 = 1,572,864,000,000 tokens.
    CHECK(p["tokens"].get<double>() == 1572864000000.0);
    // The batch-size ramp (line 40) is listed, not read.
    CHECK(unknown_of("--model gpt3_175b --dp 1 --from-megatron " + kDir + "megatron_gpt3_175b.sh") ==
          "  --step-batch-size-schedule 0:16 2.4B:320 4.8B:624 7.2B:928 9.6B:1232 12B:1536 (line 40)\n");
  }

  TEST_CASE("Megatron-LM examples/llama/train_llama3_8b_h100_fp8.sh") {
    const std::string args = "--model llama3_8b --from-megatron " + kDir + "megatron_llama3_8b_h100_fp8.sh";
    const auto p = plan_of(args);
    CHECK(p["parallel"]["tp"] == 1);  // TP_SIZE=1 (line 33), line 117
    CHECK(p["parallel"]["cp"] == 1);  // CP_SIZE=1 (line 34), line 118
    CHECK(p["parallel"]["pp"] == 1);  // line 119 is a comment
    CHECK(p["parallel"]["dp"] == 8);  // GPUS_PER_NODE=8 x NUM_NODES=1 (lines 22-23) / 1
    CHECK(p["parallel"]["sp"] == true);                    // line 120
    CHECK(p["parallel"]["zero"] == 1);                     // line 126
    CHECK(p["parallel"]["grad_reduce"] == "overlapped");   // line 127
    CHECK(p["parallel"]["overlap_param_gather"] == true);  // line 128
    CHECK(p["micro_batch"] == 1);                          // MICRO_BATCH_SIZE=1 (line 36)
    CHECK(p["global_batch"] == 128);                       // GLOBAL_BATCH_SIZE=128 (line 37)
    CHECK(p["seq_len"] == 8192);                           // SEQ_LENGTH=8192 (line 40)
    // DTYPE="fp8" (line 39) takes the `if` of line 106: "--fp8-format hybrid"
    // (line 108, split when ${DTYPE_ARGS[@]} expands unquoted), the
    // recipe Megatron-Core's default, delayed (transformer_config.py line 594).
    CHECK(p["precision"] == "fp8");
    CHECK(p["fp8"]["recipe"] == "delayed");
    CHECK(p["fp8"]["primary_weights"] == true);  // --fp8-param-gather, line 111
    CHECK(p["attention"] == "cudnn");            // --attention-backend fused, line 74
    CHECK(p["main_grads"] == "working");         // --grad-reduce-in-bf16, line 96
    CHECK(p["cross_entropy"] == "fused");        // --cross-entropy-loss-fusion, line 97
    CHECK(p["recompute"] == "none");
    CHECK(p["tokens"].get<double>() == 1953125000.0 * 8192);  // --train-samples 1953125000, line 83
    CHECK(unknown_of(args) == "  --empty-unused-memory-level 1 (line 100)\n");
  }

  TEST_CASE("torchtitan torchtitan/models/llama3/train_configs/llama3_8b.toml") {
    // "a preset for 64 A100 GPUs" (line 1): data_parallel_shard_degree = -1
    // (line 40) takes them all, given as --dp 64.
    const std::string file = kDir + "torchtitan_llama3_8b.toml";
    CHECK(refusal_of("--from-torchtitan " + file) ==
          ":40:30: error: parallelism.data_parallel_shard_degree: -1 takes the GPUs the other degrees leave: give "
          "--dp N (GPUs / (TP x PP x CP))");
    const std::string args = "--gpu a100_sxm_80gb --dp 64 --from-torchtitan " + file;
    const auto p = plan_of(args);
    CHECK(p["framework"] == "torchtitan");
    CHECK(p["parallel"]["tp"] == 1);  // line 41
    CHECK(p["parallel"]["pp"] == 1);  // line 42
    CHECK(p["parallel"]["cp"] == 1);  // line 43
    CHECK(p["parallel"]["dp"] == 64);
    CHECK(p["parallel"]["zero"] == 3);  // FSDP2 over the shard degree
    CHECK(p["micro_batch"] == 1);       // local_batch_size, line 32
    CHECK(p["global_batch"] == 64);     // 1 x DP 64
    CHECK(p["seq_len"] == 8192);        // line 33
    // mixed_precision_param absent: "bfloat16" (job_config.py line 282).
    CHECK(p["precision"] == "bf16");
    CHECK(p["fusion"] == "eager");      // compile.enable = false, line 54
    CHECK(p["optimizer"]["kind"] == "adamw");  // line 24
    CHECK(p["recompute"] == "op");      // mode "selective", selective_ac_option "op", lines 58-59
    CHECK(p["tokens"].get<double>() == 1000.0 * 64 * 8192);  // steps = 1000, line 35
    CHECK(unknown_of(args).empty());
  }

  TEST_CASE("torchtitan torchtitan/models/llama3/train_configs/llama3_70b.toml") {
    // 64 GPUs (line 1) / tensor_parallel_degree 8 (line 41) = DP 8.
    const std::string args = "--gpu a100_sxm_80gb --dp 8 --from-torchtitan " + kDir + "torchtitan_llama3_70b.toml";
    const auto p = plan_of(args);
    CHECK(p["parallel"]["tp"] == 8);
    CHECK(p["parallel"]["sp"] == true);  // torchtitan's TP runs SP (frameworks/torchtitan.yaml)
    CHECK(p["parallel"]["dp"] == 8);
    CHECK(p["parallel"]["zero"] == 3);
    CHECK(p["micro_batch"] == 8);        // local_batch_size, line 32
    CHECK(p["global_batch"] == 64);      // 8 x DP 8
    CHECK(p["seq_len"] == 8192);         // line 33
    CHECK(p["recompute"] == "full");     // mode = "full", line 54
    CHECK(p["fusion"] == "eager");       // line 57
    CHECK(p["tokens"].get<double>() == 1000.0 * 64 * 8192);  // steps = 1000, line 35
    CHECK(unknown_of(args).empty());
  }

  TEST_CASE("torchtitan train_configs/llama3_8b.toml of August 2024") {
    // The 2024 layout (torchtitan 1a303b3, torchtitan/config_manager.py):
    // [training] batch_size, data_parallel_degree = -1 (FSDP over the GPUs
    // left, data_parallel_type "fsdp", line 316), tensor_parallel_degree,
    // compile; [experimental] pipeline_parallel_degree; [float8] off.
    const std::string args = "--gpu a100_sxm_80gb --dp 64 --from-torchtitan " + kDir + "torchtitan_2024_llama3_8b.toml";
    const auto p = plan_of(args);
    CHECK(p["parallel"]["tp"] == 1);   // line 35
    CHECK(p["parallel"]["pp"] == 1);   // line 40
    CHECK(p["parallel"]["dp"] == 64);
    CHECK(p["parallel"]["zero"] == 3);
    CHECK(p["micro_batch"] == 1);      // batch_size, line 29
    CHECK(p["seq_len"] == 8192);       // line 30
    CHECK(p["precision"] == "bf16");   // enable_float8_linear = false, line 56
    CHECK(p["fusion"] == "eager");     // compile = false, line 36
    CHECK(p["recompute"] == "op");     // lines 52-53
    CHECK(p["tokens"].get<double>() == 1000.0 * 64 * 8192);  // steps = 1000, line 33
    CHECK(unknown_of(args).empty());
  }

  TEST_CASE("DeepSpeedExamples training/tensor_parallel/hf_integration/configs/ds_config.json") {
    // Every size "auto" (the Hugging Face Trainer's): refused until the flags say them.
    const std::string file = kDir + "deepspeed_autotp.json";
    CHECK(refusal_of("--model llama3_8b --dp 2 --micro-batch 1 --global-batch 16 --from-deepspeed " + file) ==
          ":3:18: error: bf16: \"auto\" is the Hugging Face Trainer's --bf16 / --fp16: give --precision");
    const std::string args = "--model llama3_8b --dp 2 --micro-batch 1 --global-batch 16 --precision bf16 "
                             "--from-deepspeed " + file;
    const auto p = plan_of(args);
    CHECK(p["framework"] == "deepspeed");
    CHECK(p["parallel"]["tp"] == 4);    // autotp_size, line 28
    CHECK(p["parallel"]["zero"] == 2);  // line 24
    // No overlap_comm at stage 2: off (zero/config.py lines 383-385).
    CHECK(p["parallel"]["grad_reduce"] == "exposed");
    CHECK(p["optimizer"]["kind"] == "adamw");  // line 6
    CHECK(unknown_of(args).empty());
  }

  TEST_CASE("DeepSpeedExamples training/bf16_master_weight/configs/baseline.json") {
    const std::string args = "--model llama3_8b --dp 8 --from-deepspeed " + kDir + "deepspeed_bf16_zero3.json";
    const auto p = plan_of(args);
    CHECK(p["parallel"]["zero"] == 3);                    // line 21
    CHECK(p["parallel"]["grad_reduce"] == "overlapped");  // overlap_comm: true, line 22
    CHECK(p["micro_batch"] == 4);                         // line 2
    CHECK(p["global_batch"] == 32);                       // 4 x gradient_accumulation_steps 1 (line 3) x DP 8
    CHECK(p["precision"] == "bf16");                      // line 17
    CHECK(p["optimizer"]["kind"] == "adamw");             // line 7
    CHECK(unknown_of(args).empty());
  }

  TEST_CASE("Megatron-DeepSpeed examples_deepspeed/pretrain_llama2_distributed.sh") {
    // The model its arguments build (lines 24-29, 105-108, 136-144): 24
    // layers, hidden 2048, FFN 5504, 16 heads, 4 KV heads (--num-key-value-
    // heads), SwiGLU, RMSNorm, rotary, untied, no biases, dropout 0; the
    // official Llama tokenizer (line 12), vocabulary 32000; 2048 positions
    // (--max-position-embeddings $SEQ_LENGTH, line 112).
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("ridgeline_corpus_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const std::string model = (dir / "llama2_script_1b.yaml").string();
    std::ofstream(model) << "name: Llama-2-style 24-layer model of pretrain_llama2_distributed.sh\n"
                            "layers: 24\nhidden: 2048\nheads: 16\nkv_heads: 4\nffn_hidden: 5504\nvocab: 32000\n"
                            "max_seq_len: 2048\nactivation: swiglu\nnorm: rmsnorm\nposition: rope\n"
                            "tied_embeddings: false\nbias: false\ndropout: 0.0\n"
                            "source: \"the script's own arguments\"\n";
    const std::string file = kDir + "megatron_deepspeed_llama2.sh";
    const std::string args = "--model " + model + " --from-megatron " + file;
    const auto p = plan_of(args);
    CHECK(p["framework"] == "deepspeed");     // --deepspeed, line 82: the DeepSpeed engine
    CHECK(p["parallel"]["tp"] == 2);          // --tensor-model-parallel-size $TP, line 103; TP=2, line 14
    CHECK(p["parallel"]["pp"] == 2);          // --pipeline-model-parallel-size $PP, line 104; PP=2, line 15
    // torchrun $DISTRIBUTED_ARGS (line 101): --nproc_per_node $GPUS_PER_NODE
    // --nnodes $NNODES (line 99) = 8 x 1 (lines 18, 21) GPUs / (TP 2 x PP 2).
    CHECK(p["parallel"]["dp"] == 2);
    // --zero-stage=$ZERO_STAGE (line 84), ZERO_STAGE=0 (line 16); the
    // ds_config's "stage": $ZERO_STAGE (line 73) agrees. Stage 0 with bf16
    // (line 135) and PP 2 runs DeepSpeed's BF16_Optimizer
    // (deepspeed/runtime/engine.py, DeepSpeed edaa722, lines 1978-2021),
    // which partitions the fp32 masters and optimizer states: ZeRO-1.
    CHECK(p["parallel"]["zero"] == 1);
    CHECK(p["micro_batch"] == 4);     // --micro-batch-size $MICRO_BATCH_SIZE, line 109; line 31
    CHECK(p["global_batch"] == 32);   // --global-batch-size $GLOBAL_BATCH_SIZE, line 110; line 32
    CHECK(p["seq_len"] == 2048);      // --seq-length $SEQ_LENGTH, line 111; line 28
    CHECK(p["precision"] == "bf16");  // --bf16, line 135; the ds_config's "bf16" enabled, lines 75-76
    CHECK(p["optimizer"]["kind"] == "adamw");  // --optimizer adam, line 128 (decoupled weight decay)
    // activation_checkpoint="false" (line 42): the `if` of line 86 is not
    // taken, so no --recompute-granularity.
    CHECK(p["recompute"] == "none");
    // --train-iters $TRAIN_STEPS (line 113), TRAIN_STEPS=250000 (line 33):
    // 250,000 x 32 x 2048 = 16,384,000,000 tokens.
    CHECK(p["tokens"].get<double>() == 16384000000.0);
    // The ds_config comes from the here-document of lines 67-79 written to
    // $DS_CONFIG = ${BASE_PATH}/deepspeed.json = ./tmp/deepspeed.json (lines
    // 7-8), the path --deepspeed_config=$DS_CONFIG passes (line 83).
    const auto printed = rl::test::run_cli("predict " + args + " --print-plan");
    REQUIRE(printed.status == 0);
    CHECK(printed.out.find("here-document of line 67 that writes ./tmp/deepspeed.json") != std::string::npos);
    // `if [ $LOG_TO_WANDB -eq 1 ]` (line 46), LOG_TO_WANDB=0 (line 44): the
    // wandb arguments of lines 48-52 are not passed.
    CHECK(printed.out.find("wandb") == std::string::npos);

    // advise's launch edit speaks Megatron-DeepSpeed: --zero-stage N
    // (launch_edit.cpp, megatron_edit), not --use-distributed-optimizer.
    const auto m = rl::spec::load_model(model);
    rl::spec::ImportReport r = rl::spec::import_megatron(std::string(RIDGELINE_SOURCE_DIR) + "/" + file);
    rl::spec::PlanSpec from;
    rl::spec::apply_launch(r.values, from, m, r, {});
    rl::spec::PlanSpec to = from;
    to.parallel.zero = 2;
    CHECK(rl::spec::launch_edit(r, from, to, m) == std::optional<std::string>("--zero-stage 2"));
    to.parallel.zero = 3;
    CHECK(rl::spec::launch_edit(r, from, to, m) == std::optional<std::string>("--zero-stage 3"));
  }

  TEST_CASE("Megatron-DeepSpeed: a ds_config here-document with an expansion it cannot read is refused at its line") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("ridgeline_corpus_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const std::string sh = (dir / "heredoc.sh").string();
    std::ofstream(sh) << "DS_CONFIG=ds.json\nMBS=2\ncat <<EOT > $DS_CONFIG\n{\n  \"train_micro_batch_size_per_gpu\": "
                         "$MBS,\n  \"train_batch_size\": $((MBS * 8))\n}\nEOT\n"
                         "torchrun pretrain_gpt.py --bf16 --deepspeed --deepspeed_config $DS_CONFIG\n";
    const auto r = rl::test::run_cli("predict --model llama3_8b --dp 8 --from-megatron " + sh);
    CHECK(r.status == 2);
    CHECK(rl::test::first_line(r.err) ==
          sh + ":6:23: error: --deepspeed_config: the ds_config written by the here-document of line 3 uses an "
               "expansion Ridgeline does not read ($NAME, ${NAME}, ${NAME:-default} over the script's assignments): "
               "write the value\n");
    // The same here-document with the value read: micro-batch 2 from it.
    std::ofstream(sh) << "DS_CONFIG=ds.json\nMBS=2\ncat <<EOT > $DS_CONFIG\n{\n  \"train_micro_batch_size_per_gpu\": "
                         "$MBS\n}\nEOT\n"
                         "torchrun pretrain_gpt.py --bf16 --deepspeed --deepspeed_config $DS_CONFIG\n";
    CHECK(plan_of("--model llama3_8b --dp 8 --from-megatron " + sh)["micro_batch"] == 2);
  }
}
