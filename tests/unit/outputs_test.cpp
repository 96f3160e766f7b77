// predict's outputs as a reader meets them (issue 16, "numbers a reader
// cannot misread"): MFU that names its peak, a fine-tune's totals per 1B
// tokens, durations in the unit that reads, whole counts, the summary CSV, the
// Markdown, the invalid-plan JSON and --micro-batch max. Exact text where it
// is text; each number from a hand calculation or a second, independent run.
#include <doctest/doctest.h>

#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/memory/memory.hpp"
#include "ridgeline/report/markdown.hpp"
#include "ridgeline/report/prediction_view.hpp"
#include "ridgeline/units/units.hpp"
#include "test_support.hpp"

using namespace ridgeline;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

json predict_json(const std::string& flags, int rc = 0) {
  const auto r = test::run_cli("predict " + flags + " --format json");
  INFO(flags, "\n", r.err);
  REQUIRE(r.status == rc);
  return json::parse(r.out);
}

/// predict's text with --wide: each line whole, not wrapped at 120 columns.
std::string predict_text(const std::string& flags, int rc = 0) {
  const auto r = test::run_cli("predict " + flags + " --wide");
  INFO(flags, "\n", r.err);
  REQUIRE(r.status == rc);
  return r.out;
}

/// The line of `text` that starts with `prefix` ("" when none).
std::string line_starting(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (l.rfind(prefix, 0) == 0) return l;
  return "";
}

const std::string kBase = "--dp 8 --zero 3 --global-batch 8";  // Llama-3-8B, 8 x H100, seq 8192

}  // namespace

TEST_SUITE("outputs") {

TEST_CASE("outputs: a run's length reads in minutes, hours or days; whole counts with separators") {
  using units::format_duration;
  CHECK(format_duration(42) == "42.0 s");
  CHECK(format_duration(270) == "4.5 min");          // 4.5 x 60
  CHECK(format_duration(18 * 60) == "18 min");
  CHECK(format_duration(3.5 * 3600) == "3.5 h");
  CHECK(format_duration(36 * 3600) == "36.0 h");     // below two days: hours
  CHECK(format_duration(17.9 * 86400) == "17.9 days");
  CHECK(format_duration(-1) == "unknown");
  CHECK(units::format_whole(305175.78) == "305,176");
  CHECK(units::format_whole(32) == "32");
  CHECK(units::format_whole(1234567) == "1,234,567");
}

TEST_CASE("outputs: bf16 MFU is quoted against the dense bf16 peak, named") {
  const json j = predict_json(kBase);
  const double mfu = j["step"]["mfu"];
  CHECK(j["step"]["mfu_precision"] == "bf16");
  // H100 SXM5 dense bf16: 989.4 TFLOP/s (H100 whitepaper v1.04, Table 1).
  CHECK(j["step"]["precision_peak_flop_per_s"].get<double>() == doctest::Approx(989.4e12));
  const std::string t = predict_text(kBase);
  CHECK(line_starting(t, "  MFU").rfind("  MFU                " + units::format_percent(mfu) +
                                            " of the dense bf16 peak (989 TFLOP/s)   80% interval ",
                                        0) == 0);
}

TEST_CASE("outputs: fp8 MFU names the fp8 peak first and the bf16 peak second") {
  const std::string flags = kBase + " --precision fp8";
  const json j = predict_json(flags);
  const double mfu = j["step"]["mfu"], mfu_fp8 = j["step"]["mfu_dtype"];
  CHECK(j["step"]["mfu_precision"] == "fp8");
  // H100 SXM5 dense fp8: 1978.9 TFLOP/s, twice bf16's 989.4 (whitepaper Table 1).
  CHECK(j["step"]["precision_peak_flop_per_s"].get<double>() == doctest::Approx(1978.9e12));
  CHECK(mfu / mfu_fp8 == doctest::Approx(1978.9 / 989.4));
  CHECK(mfu_fp8 <= 1.0);
  const std::string t = predict_text(flags);
  const std::string head = line_starting(t, "  MFU");
  CHECK(head.rfind("  MFU                " + units::format_percent(mfu_fp8) + " of the fp8 peak (1979 TFLOP/s)   80% interval ",
                   0) == 0);
  CHECK(t.find("\n                     " + units::format_percent(mfu) +
               " of the dense bf16 peak (989 TFLOP/s); attention FLOPs causal\n") != std::string::npos);
}

TEST_CASE("outputs: no MFU headline exceeds 100%: above the bf16 peak it is a ratio") {
  // An fp8 step at 56% of the fp8 peak is 1.12 x the bf16 peak (1978.9 / 989.4 = 2.0):
  // the headline is the 56%, the bf16 figure "1.12x", never "112.0%".
  const auto gpu = test::gpu("h100_sxm");
  const auto model = test::model("llama3_8b");
  spec::PlanSpec plan = test::plan(1, 4096);
  plan.precision = spec::Precision::kFp8;
  auto pred = engine::evaluate(model, plan, gpu);
  pred.step.mfu_dtype = 0.56;
  pred.step.mfu = 0.56 * 1978.9 / 989.4;
  const uncertainty::IntervalModel none;  // no interval text in the way
  const report::Inputs in{&gpu, &model, &plan, 0.8, &none};
  const auto lines = report::prediction_summary(pred, in);
  size_t at = 0;
  while (at < lines.size() && lines[at].label != "MFU") ++at;
  REQUIRE(at + 1 < lines.size());
  CHECK(lines[at].text == "56.0% of the fp8 peak (1979 TFLOP/s)");
  CHECK(lines[at + 1].label.empty());
  CHECK(lines[at + 1].text == "1.12x the dense bf16 peak (989 TFLOP/s); attention FLOPs causal");
}

TEST_CASE("outputs: pre-training keeps Chinchilla's 20 tokens per parameter, in whole steps") {
  const json j = predict_json(kBase);
  const double params = j["model"]["params"];
  CHECK(params == doctest::Approx(8.03e9).epsilon(0.001));  // Llama-3-8B: 8.03B parameters
  CHECK(j["training"]["tokens"].get<double>() == doctest::Approx(20 * params));
  CHECK(j["training"]["tokens_source"] == "chinchilla_20_per_param");
  // 160,605,224,960 tokens / (8 x 8192 tokens per step) = 2,450,641.25 -> 2,450,642 whole steps.
  CHECK(j["training"]["tokens"].get<double>() == 160605224960.0);
  CHECK(j["training"]["steps"] == 2450642);
  CHECK(j["training"]["steps"].is_number_integer());
  const std::string t = predict_text(kBase);
  CHECK(line_starting(t, "training run: ")
            .rfind("training run: 161B tokens (Chinchilla: 20 per parameter; --tokens sets the run) -> 2,450,642 steps, " +
                       units::format_duration(j["training"]["wall_clock_days"].get<double>() * 86400) + " (ideal " +
                       units::format_duration(j["training"]["ideal_wall_clock_days"].get<double>() * 86400) + "), ",
                   0) == 0);
}

TEST_CASE("outputs: a LoRA fine-tune without --tokens is priced per 1B tokens and says so") {
  const std::string flags = "--finetune lora --micro-batch 2 --seq 4096 --recompute full";
  const json j = predict_json(flags);
  CHECK(j["training"]["tokens"].get<double>() == 1e9);
  CHECK(j["training"]["tokens_source"] == "per_billion_tokens");
  // 1e9 / (2 x 4096 tokens per step) = 122,070.3 -> 122,071 steps; the time is tokens / (tokens/s).
  CHECK(j["training"]["steps"] == 122071);
  const double tokens_per_s = j["step"]["tokens_per_s"];
  // The ideal time is tokens / (tokens/s); the expected one adds checkpoints and interruptions (goodput).
  CHECK(j["training"]["ideal_wall_clock_days"].get<double>() == doctest::Approx(1e9 / tokens_per_s / 86400));
  const double wall_s = j["training"]["ideal_wall_clock_days"].get<double>() * 86400 / j["training"]["goodput"].get<double>();
  CHECK(j["training"]["wall_clock_days"].get<double>() * 86400 == doctest::Approx(wall_s));
  const std::string t = predict_text(flags);
  CHECK(line_starting(t, "per 1B tokens")
            .rfind("per 1B tokens (a fine-tune has no compute-optimal length: --tokens N or --dataset-tokens N for "
                   "the run) -> 122,071 steps, " +
                       units::format_duration(wall_s) + " (ideal " + units::format_duration(1e9 / tokens_per_s) + "), ",
                   0) == 0);
  // With --tokens the plan's count is the run.
  CHECK(predict_json(flags + " --tokens 5B")["training"]["tokens_source"] == "plan");
}

TEST_CASE("outputs: --dataset-tokens prices one epoch; with --tokens it is one exact error") {
  const std::string flags = "--finetune qlora --gpu rtx_4090 --seq 2048 --dataset-tokens 2B";
  const json j = predict_json(flags);
  CHECK(j["training"]["tokens"].get<double>() == 2e9);
  CHECK(j["training"]["tokens_source"] == "dataset_epoch");
  CHECK(j["training"]["steps"] == 976563);  // 2e9 / 2048 tokens per step = 976,562.5
  const std::string t = predict_text(flags);
  CHECK(line_starting(t, "one epoch: ").rfind("one epoch: 2.00B tokens (--dataset-tokens) -> 976,563 steps, ", 0) == 0);
  const auto both = test::run_cli("predict " + flags + " --tokens 1B");
  CHECK(both.status == 2);
  CHECK(both.err ==
        "error: --dataset-tokens: the plan's tokens (--tokens or tokens:) already set the run's length; give one of "
        "them\n");
  const auto bad = test::run_cli("predict --dataset-tokens lots");
  CHECK(bad.status == 2);
  CHECK(bad.err == "error: --dataset-tokens: expected a token count such as \"2B\" or \"500M\", got \"lots\"\n");
}

TEST_CASE("outputs: micro-batches singular and plural, the bubble as a share of the step") {
  CHECK(predict_text(kBase).find("   (1 micro-batch of ") != std::string::npos);
  const std::string flags = "--pp 4 --dp 2 --vpp 2 --global-batch 64";  // does not fit (exit 1): printed in full
  const json j = predict_json(flags, 1);
  // 64 / (micro-batch 1 x DP 2) = 32 micro-batches per step.
  CHECK(j["step"]["micro_batches"] == 32);
  CHECK(j["step"]["micro_batches"].is_number_integer());
  const double bubble = j["step"]["bubble_s"], step = j["step"]["step_time_s"];
  CHECK(j["step"]["bubble_share_of_step"].get<double>() == doctest::Approx(bubble / step));
  const std::string t = predict_text(flags, 1);
  CHECK(t.find("   (32 micro-batches of ") != std::string::npos);
  CHECK(t.find("   pipeline bubble " + units::format_seconds(bubble) + " (" + units::format_percent(bubble / step) +
               " of the step)\n") != std::string::npos);
}

TEST_CASE("outputs: the memory table labels its percentages of capacity; counts and bytes are whole") {
  const std::string t = predict_text(kBase);
  CHECK(t.find("\nmemory per GPU\n" + std::string(2 + 16 + 1 + 11 + 2, ' ') + "of capacity\n") != std::string::npos);
  CHECK(t.find("\n  capacity            80.0 GiB       100.0%\n") != std::string::npos);
  const json j = predict_json(kBase);
  CHECK(j["memory"]["peak_memory_bytes"].is_number_integer());
  CHECK(j["memory"]["capacity_bytes"] == 85899345920LL);  // 80 GiB = 80 x 2^30
  CHECK(j["memory"]["weights_bytes"].is_number_integer());
  for (const auto& k : j["kernels"]) {
    CHECK(k["count"].is_number_integer());
    CHECK(k["hbm_bytes"].is_number_integer());
  }
  // 32 layers: each layer's kernels run 32 times per step.
  CHECK(line_starting(t, "  mlp_up_proj ").find("           32 ") != std::string::npos);
}

TEST_CASE("outputs: predict --format csv is one summary row; --kernels the kernel table") {
  const auto r = test::run_cli("predict " + kBase + " --format csv");
  REQUIRE(r.status == 0);
  std::istringstream in(r.out);
  std::string head, row, extra;
  std::getline(in, head);
  std::getline(in, row);
  CHECK_FALSE(std::getline(in, extra));
  CHECK(head ==
        "gpu,model,framework,tokens,step_time_s,tokens_per_s,mfu,peak_memory_bytes,fits,wall_clock_days,gpu_hours,"
        "cost_usd,energy_kwh,status,gpus,tp,pp,dp,cp,ep,vpp,sp,zero,micro_batch,global_batch,seq_len,precision,"
        "recompute,micro_batches,mfu_dtype,mfu_precision,hfu,capacity_bytes,step_time_lo_s,step_time_hi_s,"
        "tokens_source");
  std::vector<std::string> cells;
  std::stringstream ss(row);
  for (std::string c; std::getline(ss, c, ',');) cells.push_back(c);
  REQUIRE(cells.size() == 36);
  const json j = predict_json(kBase);
  CHECK(cells[0] == "h100_sxm");
  CHECK(cells[1] == "llama3_8b");
  CHECK(cells[2] == "megatron");
  CHECK(std::stod(cells[4]) == doctest::Approx(j["step"]["step_time_s"].get<double>()));
  CHECK(cells[7] == std::to_string(j["memory"]["peak_memory_bytes"].get<long long>()));
  CHECK(cells[8] == "true");
  CHECK(std::stod(cells[9]) == doctest::Approx(j["training"]["wall_clock_days"].get<double>()));
  CHECK(cells[13] == "ok");
  CHECK(cells[14] == "8");
  CHECK(cells[22] == "3");  // zero
  CHECK(cells[35] == "chinchilla_20_per_param");

  const auto k = test::run_cli("predict " + kBase + " --format csv --kernels");
  REQUIRE(k.status == 0);
  CHECK(k.out.rfind("name,phase,class,dtype,count,flops,hbm_bytes,intensity,bound,time_s,share,time_lo_s,time_hi_s\n"
                    "embedding,forward,embedding,bf16,1,0,",
                    0) == 0);
  const auto wrong = test::run_cli("predict --kernels");
  CHECK(wrong.status == 2);
  CHECK(wrong.err == "error: --kernels: the kernel table is CSV output: add --format csv (the table, the JSON and the "
                     "Markdown list the kernels already)\n");
}

TEST_CASE("outputs: predict --format markdown shows the table's figures as Markdown tables") {
  const auto r = test::run_cli("predict " + kBase + " --format markdown");
  REQUIRE(r.status == 0);
  const std::string& md = r.out;
  const json j = predict_json(kBase);
  CHECK(md.rfind("# Llama-3-8B on 8 x NVIDIA H100 SXM5 80GB\n\nPlan: micro-batch 1, global batch 8, sequence 8192; ", 0) ==
        0);
  CHECK(md.find("\n| | |\n|---|---|\n| step time | " + units::format_seconds(j["step"]["step_time_s"]) + "   ") !=
        std::string::npos);
  CHECK(md.find("\n| MFU | " + units::format_percent(j["step"]["mfu"]) + " of the dense bf16 peak (989 TFLOP/s)   ") !=
        std::string::npos);
  CHECK(md.find("\n## Top kernels by time (per step)\n\n| kernel | phase | class | count | FLOPs | bytes | FLOP/B | "
                "bound | time | share |\n|---|---|---|---:|---:|---:|---:|---|---:|---:|\n") != std::string::npos);
  CHECK(md.find("\n## Memory per GPU\n\n| per GPU | size | of capacity |\n|---|---:|---:|\n") != std::string::npos);
  CHECK(md.find("\n| capacity | 80.0 GiB | 100.0% |\n") != std::string::npos);
  CHECK(md.find("\n## Training run\n\ntraining run: 161B tokens (Chinchilla: 20 per parameter; --tokens sets the run) "
                "-> 2,450,642 steps, ") != std::string::npos);
  const auto bad = test::run_cli("predict --format yaml");
  CHECK(bad.err == "error: --format: expected one of table, json, csv, markdown, got \"yaml\"\n");
}

TEST_CASE("outputs: an invalid plan's JSON is status invalid with its problem; exit 2, one line, no file") {
  const auto r = test::run_cli("predict --tp 3 --format json");
  CHECK(r.status == 2);
  CHECK(r.err == "error: parallel.tp (--tp): TP 3 does not divide 32 attention heads\n");
  CHECK(json::parse(r.out) == json::parse(R"({"schema": "ridgeline.prediction/2", "status": "invalid",
      "problem": {"field": "parallel.tp", "message": "TP 3 does not divide 32 attention heads"}})"));
  const fs::path out = fs::temp_directory_path() / "ridgeline_outputs_invalid.json";
  fs::remove(out);
  const auto f = test::run_cli("predict --tp 3 --format json --output " + out.string());
  CHECK(f.status == 2);
  CHECK(f.out.empty());
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("outputs: --micro-batch max finds the largest micro-batch that fits") {
  // Selective recompute, sequence 2048, ZeRO-3 on 8 x H100: each micro-batch
  // adds activations; the answer is checked by predicting max and max + 1.
  const std::string plan = "--dp 8 --zero 3 --recompute selective --seq 2048";
  const json j = predict_json(plan + " --micro-batch max");
  const int max = j["micro_batch_max"]["micro_batch"];
  CHECK(j["plan"]["micro_batch"] == max);
  CHECK(max == 5);
  predict_json(plan + " --micro-batch " + std::to_string(max));             // fits: exit 0
  const json next = predict_json(plan + " --micro-batch " + std::to_string(max + 1), 1);  // does not
  const std::string line = "micro-batch max: 5 (6 does not fit: needs " +
                           units::format_bytes(next["memory"]["peak_memory_bytes"].get<double>()) + " of 80.0 GiB)";
  CHECK(j["micro_batch_max"]["why"] == line);
  CHECK(j["micro_batch_max"]["next"] == 6);
  CHECK(predict_text(plan + " --micro-batch max").rfind(line + "\nLlama-3-8B on 8 x NVIDIA H100 SXM5 80GB\n", 0) == 0);
  // With a global batch only divisors of global batch / DP are plans: 64 / 8 = 8 fits (full
  // recompute, the fused loss: Megatron's default unfused loss saves 4 bytes a logit).
  CHECK(predict_text("--dp 8 --zero 3 --recompute full --cross-entropy fused --global-batch 64 --micro-batch max")
            .rfind("micro-batch max: 8 (the global batch 64 allows no larger micro-batch with DP 8)\n", 0) == 0);
  // Not even 1 fits: said, exit 1 with the prediction at 1.
  const auto none = test::run_cli("predict --micro-batch max");
  CHECK(none.status == 1);
  CHECK(none.out.rfind("micro-batch max: none (1 does not fit: needs ", 0) == 0);
}

}  // TEST_SUITE

// Issue 38, F21: the default text of predict, compare, search and advise
// keeps to 120 terminal columns (--wide shows the rest). Every example the
// documents show (the commands scripts/regen_readme_examples.py reruns) is
// run as the user would run it, and every line it prints is measured.
TEST_CASE("the documents' predict, compare, search and advise examples print at most 120 columns") {
  const auto columns = [](const std::string& s) {
    return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
  };
  int examples = 0;
  for (const char* doc : {"README.md", "docs/examples.md", "docs/commands.md"}) {
    std::istringstream in(ridgeline::test::slurp(std::string(RIDGELINE_SOURCE_DIR) + "/" + doc));
    bool block = false;
    for (std::string l; std::getline(in, l);) {
      if (l.starts_with("```")) block = !block;
      if (!block || !l.starts_with("$ ") || l.find("ridgeline ") == std::string::npos) continue;
      std::string cmd = l.substr(2);
      while (!cmd.empty() && cmd.back() == '\\') {
        cmd.pop_back();
        std::string more;
        if (!std::getline(in, more)) break;
        cmd += more;
      }
      std::istringstream words(cmd);
      std::string bin, sub;
      words >> bin >> sub;
      if (sub != "predict" && sub != "compare" && sub != "search" && sub != "advise") continue;
      if (cmd.find("--wide") != std::string::npos) continue;
      const auto r = ridgeline::test::run_cli(cmd.substr(cmd.find(sub)));
      ++examples;
      std::istringstream out(r.out);
      for (std::string o; std::getline(out, o);) {
        INFO(doc, ": ", cmd, "\n", o);
        // A command line (advise's "apply #1", search --explain) stays whole so it can be copied.
        if (o.find("ridgeline predict ") == std::string::npos) CHECK(columns(o) <= 120);
      }
    }
  }
  CHECK(examples >= 10);
}

TEST_CASE("predict JSON: fits is memory::fit's word, yes / tight / no") {
  // The rule (docs/json.md, memory::fit): "yes" when the peak memory
  // interval's upper end (the allocator reserve twice over) leaves 5% of
  // capacity free, "tight" when only the point estimate fits, "no" otherwise.
  // GPT-3 Medium at micro-batch 1 on an H100: about 6 GiB of 79.6: yes.
  CHECK(predict_json("--gpu h100_sxm --model gpt3_350m --seq 2048")["fits"] == "yes");
  // Llama-3-70B on one GPU: 70.6e9 parameters x 16 bytes of mixed-precision
  // Adam state alone are 1.1 TB: no (status does_not_fit, exit 1).
  const json big = predict_json("--gpu h100_sxm --model llama3_70b --seq 8192", 1);
  CHECK(big["status"] == "does_not_fit");
  CHECK(big["fits"] == "no");
  // Over micro-batches 1-8 of Llama-3-8B at sequence 2048 (DP 8, ZeRO 2, no
  // recomputation) the peak climbs past capacity (about 43 GiB at 1, 75 at
  // 4, 96 at 6): the JSON word follows the rule at each, and the three words
  // all occur.
  const auto m = test::model("llama3_8b");
  const auto hw = test::gpu("h100_sxm");
  int tight = 0, yes = 0, no = 0;
  for (int mb = 1; mb <= 8; ++mb) {
    spec::PlanSpec p;
    p.seq_len = 2048;
    p.micro_batch = mb;
    p.parallel.dp = 8;
    p.parallel.zero = 2;
    const auto pred = engine::evaluate(m, p, hw);
    if (pred.status == engine::Status::kInvalid) continue;
    const json j = report::prediction_json(pred, report::Inputs{&hw, &m, &p});
    const auto& mem = pred.memory;
    const double cap = mem.capacity;
    const std::string want = memory::upper_bytes(mem) <= cap * 0.95 && mem.host_fits ? "yes"
                             : mem.total <= cap                                   ? "tight"
                                                                                  : "no";
    CAPTURE(mb);
    CHECK(j["fits"] == want);
    (want == "yes" ? yes : want == "tight" ? tight : no)++;
  }
  CHECK(yes > 0);
  CHECK(tight > 0);
  CHECK(no > 0);
}

TEST_CASE("a single-GPU LoRA plan that names no framework says which it assumed") {
  // The default framework is megatron (PlanSpec::framework 0); a one-GPU
  // LoRA fine-tune is more often a PEFT run, so the plan line says so.
  const auto r = test::run_cli("predict --gpu rtx_4090 --model llama3_8b --finetune lora --seq 2048 --recompute full");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.out.find("megatron (assumed: no --framework)") != std::string::npos);
  // Named, it is not an assumption; on two GPUs, or a full fine-tune, the default stands unmarked.
  for (const char* flags : {"--framework megatron --finetune lora --dp 1", "--framework hf --finetune lora",
                            "--finetune lora --dp 2", "--finetune full --dp 8"}) {
    const auto x = test::run_cli(std::string("predict --gpu h100_sxm --model llama3_8b --seq 2048 --recompute full ") +
                                 flags);
    CAPTURE(flags);
    CHECK(x.out.find("(assumed") == std::string::npos);
  }
  // --print-plan says it too.
  const auto pp = test::run_cli("predict --gpu rtx_4090 --model llama3_8b --finetune lora --print-plan");
  CHECK(pp.out.find("Plan: megatron (assumed: no --framework)") != std::string::npos);
}
