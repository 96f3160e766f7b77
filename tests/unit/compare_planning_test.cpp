// compare as users plan with it (issue 16, items 7, 8, 9 and 20): an invalid
// combination is a row with its status and problem, not an abort of the sweep
// (docs/errors.md, "Plans the model or GPU cannot run"); speed-up is on
// tokens/s; each row has its wall-clock days and cost for the plan's tokens;
// --vary takes gpu, model, framework and --set fields, each row on its own GPU
// and model; every output names gpu, model, framework and tokens.
//
// Expected figures come from `ridgeline predict` of the same plan, run on its
// own: a compare row must say what predict says of that plan.
#include <doctest/doctest.h>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ridgeline/search/compare.hpp"
#include "test_support.hpp"

using namespace ridgeline;
using nlohmann::json;

namespace {

json cli_json(const std::string& args) {
  const auto r = test::run_cli(args);
  INFO(args, "\n", r.err);
  REQUIRE(r.status <= 1);  // 1: predict's "does not fit", its JSON still written
  return json::parse(r.out);
}

/// predict's JSON for the same flags.
json predict(const std::string& flags) { return cli_json("predict " + flags + " --format json"); }

/// The line of `text` that starts with `prefix`; "" when none does.
std::string line_starting(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (l.starts_with(prefix)) return l;
  return "";
}

}  // namespace

TEST_SUITE("compare planning") {

TEST_CASE("compare planning: an invalid combination is a row with its problem; the sweep goes on") {
  const auto hw = test::gpu("h100_sxm");
  const auto m = test::model("llama3_8b");
  spec::PlanSpec base;
  base.seq_len = 8192;
  std::vector<search::Variation> vars(1);
  REQUIRE(search::parse_variation("tp=1,3,8", vars[0]).empty());
  std::string err;
  const auto rows = search::compare(m, base, hw, vars, true, err);
  CHECK(err.empty());
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].pred.status != engine::Status::kInvalid);
  // docs/errors.md: "TP does not divide heads": Llama-3-8B has 32 heads.
  CHECK(rows[1].pred.status == engine::Status::kInvalid);
  CHECK(rows[1].pred.problem.field == "parallel.tp");
  CHECK(rows[1].pred.problem.message == "TP 3 does not divide 32 attention heads");
  CHECK_FALSE(rows[1].compared);
  CHECK(rows[2].pred.status != engine::Status::kInvalid);
  CHECK(rows[2].compared);
  CHECK(rows[2].gpu->id == "h100_sxm");
  CHECK(rows[2].model->id == "llama3_8b");
}

TEST_CASE("compare planning: the table shows the invalid row's reason in place of its figures, exit 0") {
  const auto r = test::run_cli("compare --vary tp=1,3,8 --wide");
  REQUIRE(r.status == 0);
  CHECK(r.err.empty());
  // The value column is as wide as its head "tp", then the GPU count (TP x DP: 3, 1 and 8 differ) as wide
  // as "GPUs"; the reason follows the padded values.
  CHECK(line_starting(r.out, "  3 ") == "  3   3     invalid: parallel.tp: TP 3 does not divide 32 attention heads");
  CHECK(r.out.find("speed-up (tokens/s)") != std::string::npos);
  const std::string head = line_starting(r.out, "  tp ");
  CHECK(head.find("wall clock") != std::string::npos);
  CHECK(head.find("cost") != std::string::npos);
}

TEST_CASE("compare planning: JSON and CSV give the invalid row's status and problem") {
  const auto j = cli_json("compare --vary tp=1,3,8 --format json");
  CHECK(j["schema"] == "ridgeline.compare/2");
  REQUIRE(j["rows"].size() == 3);
  const auto& bad = j["rows"][1];
  CHECK(bad["status"] == "invalid");
  CHECK(bad["problem"] == json{{"field", "parallel.tp"}, {"message", "TP 3 does not divide 32 attention heads"}});
  CHECK(bad["step_time_s"].is_null());
  CHECK(bad["speedup"].is_null());
  CHECK(bad["cost_usd"].is_null());
  CHECK(bad["best"] == false);
  CHECK(j["rows"][0]["problem"].is_null());
  // TP1 on one H100 needs 166 GiB of 80 GiB (predict's does-not-fit line): a row, not an error.
  CHECK(j["rows"][0]["status"] == "does_not_fit");
  CHECK(j["rows"][2]["status"] == "ok");

  const auto c = test::run_cli("compare --vary tp=1,3,8 --format csv");
  REQUIRE(c.status == 0);
  std::istringstream in(c.out);
  std::string head, row0, row1;
  std::getline(in, head);
  std::getline(in, row0);
  std::getline(in, row1);
  CHECK(head ==
        "tp,gpu,model,framework,tokens,status,step_time_s,step_time_lo_s,step_time_hi_s,tokens_per_s,tokens_per_s_lo,"
        "tokens_per_s_hi,mfu,hfu,peak_memory_bytes,fits,speedup,memory_saved_bytes,wall_clock_days,gpu_hours,cost_usd,"
        "tokens_per_usd,standing,distinguishable_from_best,problem");
  // Every figure empty; the tokens are the plan's (none given: Chinchilla, known only once evaluated).
  CHECK(row1 == "3,h100_sxm,llama3_8b,megatron,,invalid,,,,,,,,,,,,,,,,,,,parallel.tp: TP 3 does not divide 32 "
                "attention heads");
}

TEST_CASE("compare planning: speed-up is the ratio of tokens/s, > 1 when a doubled micro-batch raises tokens/s") {
  // Without --global-batch a step is one micro-batch per GPU, so micro-batch 2 takes twice the tokens per step:
  // a longer step (the old step-time speed-up read 0.51x) that delivers more tokens per second.
  const double t1 = predict("--micro-batch 1")["step"]["tokens_per_s"];
  const double t2 = predict("--micro-batch 2")["step"]["tokens_per_s"];
  const double s1 = predict("--micro-batch 1")["step"]["step_time_s"];
  const double s2 = predict("--micro-batch 2")["step"]["step_time_s"];
  REQUIRE(t2 > t1);
  REQUIRE(s2 > s1);
  const auto j = cli_json("compare --vary micro_batch=1,2 --format json");
  REQUIRE(j["rows"].size() == 2);
  CHECK(j["rows"][0]["speedup"].get<double>() == doctest::Approx(1.0));
  CHECK(j["rows"][1]["speedup"].get<double>() == doctest::Approx(t2 / t1).epsilon(1e-9));
  CHECK(j["rows"][1]["speedup"].get<double>() > 1);
  const auto r = test::run_cli("compare --vary micro_batch=1,2");
  CHECK(r.out.find(fmt::format("{:.2f}x", t2 / t1)) != std::string::npos);
}

TEST_CASE("compare planning: days, GPU-hours and cost are predict's for the same plan") {
  const std::string plan = "--dp 8 --zero 3 --global-batch 64";
  const auto p = predict(plan + " --recompute selective");
  const auto j = cli_json("compare " + plan + " --vary recompute=none,selective --format json");
  const auto& row = j["rows"][1];
  CHECK(row["wall_clock_days"].get<double>() == doctest::Approx(p["training"]["wall_clock_days"].get<double>()));
  CHECK(row["gpu_hours"].get<double>() == doctest::Approx(p["training"]["gpu_hours"].get<double>()));
  CHECK(row["cost_usd"].get<double>() == doctest::Approx(p["training"]["cost_usd"].get<double>()));
  CHECK(row["tokens"].get<double>() == doctest::Approx(p["training"]["tokens"].get<double>()));
  // The cost is GPU-hours at the profile's price (hardware_profiles/h100_sxm.yaml: 2.99 USD/h).
  CHECK(row["cost_usd"].get<double>() == doctest::Approx(row["gpu_hours"].get<double>() * 2.99));
  CHECK(row["gpu"] == "h100_sxm");
  CHECK(row["gpu_name"] == "NVIDIA H100 SXM5 80GB");
  CHECK(row["model"] == "llama3_8b");
  CHECK(row["model_name"] == "Llama-3-8B");
  CHECK(row["framework"] == "megatron");
}

TEST_CASE("compare planning: without a price the cost is unknown: \"unknown\", null, empty; never $0.00") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ridgeline_compare_noprice_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string text = test::shipped_text("h100_sxm");
  std::string no_price;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (l.find("price_per_gpu_hour") == std::string::npos) no_price += l + "\n";
  REQUIRE(no_price.size() < text.size());
  const fs::path file = dir / "h100_noprice.yaml";
  std::ofstream(file) << no_price;
  const std::string q = "compare --gpu " + file.string() + " --vary recompute=none,full";
  const auto t = test::run_cli(q);
  INFO(t.err);
  REQUIRE(t.status == 0);
  CHECK(t.out.find("$0.00") == std::string::npos);
  CHECK(line_starting(t.out, "  full ").find(" unknown ") != std::string::npos);
  const auto j = cli_json(q + " --format json");
  CHECK(j["rows"][1]["cost_usd"].is_null());
  CHECK(j["rows"][1]["gpu_hours"].get<double>() > 0);
  const auto c = test::run_cli(q + " --format csv");
  std::istringstream cs(c.out);
  std::string head, row;
  std::getline(cs, head);
  std::getline(cs, row);
  // cost_usd is the 21st column after the one variation; everything from it: ",standing,distinguishable,problem".
  const auto cells = [](const std::string& s) {
    std::vector<std::string> v;
    std::string cell;
    std::istringstream ss(s);
    while (std::getline(ss, cell, ',')) v.push_back(cell);
    if (!s.empty() && s.back() == ',') v.emplace_back();
    return v;
  };
  const auto h = cells(head), r = cells(row);
  REQUIRE(h.size() == r.size());
  const auto at = std::find(h.begin(), h.end(), "cost_usd") - h.begin();
  CHECK(r[at].empty());
  fs::remove_all(dir);
}

TEST_CASE("compare planning: --vary gpu runs each row on its own GPU, as predict --gpu does") {
  const std::string plan = "--dp 8 --zero 3 --global-batch 64";
  const auto j = cli_json("compare " + plan + " --vary gpu=h100_sxm,h200,b200,mi300x --format json");
  const std::vector<std::string> ids{"h100_sxm", "h200", "b200", "mi300x"};
  REQUIRE(j["rows"].size() == ids.size());
  int best = -1;
  double best_tps = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    CAPTURE(ids[i]);
    const auto p = predict(plan + " --gpu " + ids[i]);
    const auto& row = j["rows"][i];
    CHECK(row["gpu"] == ids[i]);
    CHECK(row["settings"]["gpu"] == ids[i]);
    CHECK(row["gpu_name"] == p["gpu"]["name"]);
    CHECK(row["capacity_bytes"].get<double>() == doctest::Approx(p["gpu"]["memory_bytes"].get<double>()));
    CHECK(row["tokens_per_s"].get<double>() == doctest::Approx(p["step"]["tokens_per_s"].get<double>()));
    CHECK(row["cost_usd"].get<double>() == doctest::Approx(p["training"]["cost_usd"].get<double>()));
    const double tps = p["step"]["tokens_per_s"];
    const bool fits = p["status"] == "ok";
    if (fits && (best < 0 || tps > best_tps)) best = static_cast<int>(i), best_tps = tps;
  }
  // The best is the fastest that fits, each on its own GPU.
  REQUIRE(best >= 0);
  CHECK(j["best_row"] == best);
  const auto t = test::run_cli("compare " + plan + " --vary gpu=h100_sxm,h200,b200,mi300x");
  REQUIRE(t.status == 0);
  CHECK(t.out.starts_with("Llama-3-8B on each row's GPU; base plan: "));
  CHECK(line_starting(t.out, "  gpu ") != "");
  // Across generations an unstated attention kernel is each GPU's own
  // (Transformer Engine's cuDNN on Hopper and Blackwell, FlashAttention-2
  // before): the header says so rather than naming one.
  CHECK(t.out.find("megatron, bf16, the framework's attention on each GPU,") != std::string::npos);
}

TEST_CASE("compare planning: --vary model and framework; a GPU that is not there names the value") {
  const std::string plan = "--dp 8 --zero 3 --global-batch 64";
  const auto j = cli_json("compare " + plan + " --vary model=llama3_8b,llama3_70b --vary framework=megatron,fsdp "
                          "--format json");
  REQUIRE(j["rows"].size() == 4);
  const std::vector<std::pair<std::string, std::string>> want{
      {"llama3_8b", "megatron"}, {"llama3_8b", "fsdp"}, {"llama3_70b", "megatron"}, {"llama3_70b", "fsdp"}};
  for (size_t i = 0; i < want.size(); ++i) {
    const auto& [m, fw] = want[i];
    CAPTURE(m);
    CAPTURE(fw);
    const auto p = predict(plan + " --model " + m + " --framework " + fw);
    const auto& row = j["rows"][i];
    CHECK(row["model"] == m);
    CHECK(row["model_name"] == p["model"]["name"]);
    CHECK(row["framework"] == fw);
    CHECK(row["tokens"].get<double>() == doctest::Approx(p["training"]["tokens"].get<double>()));
    CHECK(row["step_time_s"].get<double>() == doctest::Approx(p["step"]["step_time_s"].get<double>()));
  }
  const auto p = test::run_cli("predict --gpu h1000");
  REQUIRE(p.status == 2);
  REQUIRE(p.err.starts_with("error: --gpu: "));
  const auto r = test::run_cli("compare --vary gpu=h100_sxm,h1000");
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(r.err == "error: --vary: gpu=h1000: " + p.err.substr(std::string("error: --gpu: ").size()));
}

TEST_CASE("compare planning: --vary values split at commas outside quotes") {
  search::Variation v;
  REQUIRE(search::parse_variation("lora_targets=\"q,v\",'q,k,v,o'", v).empty());
  CHECK(v.key == "lora_targets");
  CHECK(v.values == std::vector<std::string>{"q,v", "q,k,v,o"});
  REQUIRE(search::parse_variation("gpu.memory.hbm_bandwidth=\"3.35 TB/s\",\"4.8 TB/s\",8 TB/s", v).empty());
  CHECK(v.values == std::vector<std::string>{"3.35 TB/s", "4.8 TB/s", "8 TB/s"});
  CHECK(search::is_subject_key(v.key));
  CHECK(search::parse_variation("tp=1,,2", v) == "empty value in \"tp=1,,2\"");
  CHECK(search::parse_variation("gpu=\"h100_sxm,h200", v) == "unmatched \" in \"gpu=\"h100_sxm,h200\"");
  const auto r = test::run_cli("compare --vary tp=1,2 --vary tp=4");
  CHECK(r.status == 2);
  CHECK(r.err == "error: --vary: tp is varied twice\n");
}

TEST_CASE("compare planning: --format markdown is a pipe table under the header") {
  const auto r = test::run_cli("compare --vary recompute=none,full --format markdown");
  REQUIRE(r.status == 0);
  CHECK(r.out.starts_with("Llama-3-8B on NVIDIA H100 SXM5 80GB; base plan: "));
  // On one Hopper GPU the base plan's attention is what its rows run:
  // megatron's cuDNN fused attention there (spec::attention_on).
  CHECK(r.out.starts_with("Llama-3-8B on NVIDIA H100 SXM5 80GB; base plan: megatron, bf16, cudnn attention,"));
  CHECK(line_starting(r.out, "| recompute ") ==
        "| recompute | step time | 80% step time | tokens/s | 80% tokens/s | MFU | HFU | peak memory | fits | "
        "speed-up (tokens/s) | memory saved | wall clock | cost | tokens/$ | vs best |");
  CHECK(line_starting(r.out, "| :--- ") ==
        "| :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | :--- |");
  CHECK(line_starting(r.out, "| full |") != "");
  const auto bad = test::run_cli("compare --vary recompute=none,full --format yaml");
  CHECK(bad.status == 2);
  CHECK(bad.err == "error: --format: expected one of table, json, csv, markdown, got \"yaml\"\n");
}

TEST_CASE("compare planning: --set in the header; --vary gpu.FIELD resolves each row's GPU with it") {
  // Needs gpu.* --set (src/cli/common.cpp resolve_gpu with sets).
  const auto probe = test::run_cli("predict --set gpu.memory.hbm_bandwidth=\"4.8 TB/s\" --format json");
  if (probe.status != 0) {
    MESSAGE("gpu.* --set not available yet: ", probe.err);
    return;
  }
  const std::vector<std::string> bw{"3.35 TB/s", "4.8 TB/s", "8 TB/s"};
  const auto j = cli_json(
      "compare --vary gpu.memory.hbm_bandwidth=\"3.35 TB/s\",\"4.8 TB/s\",\"8 TB/s\" --format json");
  REQUIRE(j["rows"].size() == bw.size());
  for (size_t i = 0; i < bw.size(); ++i) {
    CAPTURE(bw[i]);
    const auto p = predict("--set gpu.memory.hbm_bandwidth=\"" + bw[i] + "\"");
    CHECK(j["rows"][i]["settings"]["gpu.memory.hbm_bandwidth"] == bw[i]);
    CHECK(j["rows"][i]["step_time_s"].get<double>() == doctest::Approx(p["step"]["step_time_s"].get<double>()));
  }
  const auto t = test::run_cli("compare --set gpu.price_per_gpu_hour=\"2.10 USD/h\" --vary recompute=none,full");
  INFO(t.err);
  REQUIRE(t.status == 0);
  std::istringstream in(t.out);
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  CHECK(second == "set gpu.price_per_gpu_hour=2.10 USD/h");
  const auto sj = cli_json("compare --set gpu.price_per_gpu_hour=\"2.10 USD/h\" --vary recompute=none,full --format json");
  CHECK(sj["set"] == json::array({"gpu.price_per_gpu_hour=2.10 USD/h"}));
  CHECK(sj["rows"][0]["cost_usd"].get<double>() == doctest::Approx(sj["rows"][0]["gpu_hours"].get<double>() * 2.10));
}

}  // TEST_SUITE

TEST_CASE("compare planning: the wall clock and cost columns say which tokens they are for") {
  // A LoRA fine-tune without --tokens is priced per 1B tokens (engine::TokensBasis),
  // a pre-training run at Chinchilla's 20 per parameter; given tokens are stated as given.
  const auto lora = test::run_cli("compare --finetune lora --vary lora_rank=8,64");
  REQUIRE(lora.status == 0);
  CHECK(lora.out.find("\nwall clock and cost: per 1B tokens for a fine-tune (it has no compute-optimal length; "
                      "--tokens sets the run)\n") != std::string::npos);
  const auto given = test::run_cli("compare --finetune lora --tokens 2B --vary lora_rank=8,64");
  REQUIRE(given.status == 0);
  CHECK(given.out.find("\nwall clock and cost: for 2.00B tokens (--tokens)\n") != std::string::npos);
  const auto pre = test::run_cli("compare --dp 8 --zero 3 --global-batch 64 --vary recompute=none,full");
  REQUIRE(pre.status == 0);
  CHECK(pre.out.find("\nwall clock and cost: for 20 tokens per parameter (Chinchilla; --tokens sets the run)\n") !=
        std::string::npos);
}

TEST_CASE("compare planning: a GPUs column where the rows' layouts differ in GPU count") {
  // --dp 8 with TP 1, 2 and 8: 8 x 1, 8 x 2 and 8 x 8 = 8, 16 and 64 GPUs.
  const auto r = test::run_cli("compare --model llama3_70b --dp 8 --zero 1 --recompute full --vary tp=1,2,8 --wide");
  REQUIRE(r.status == 0);
  CHECK(r.out.find("  tp  GPUs  step time") != std::string::npos);
  CHECK(r.out.find("\n  1   8   ") != std::string::npos);
  CHECK(r.out.find("\n  2   16  ") != std::string::npos);
  CHECK(r.out.find("\n  8   64  ") != std::string::npos);
  // One GPU count throughout: no such column.
  const auto same = test::run_cli("compare --model llama3_8b --dp 8 --zero 3 --vary recompute=none,full");
  CHECK(same.out.find("GPUs") == std::string::npos);
}

// Cost-first planning (issue 38, F12-F14): --sort cost ranks by cost per
// token, the best is best by the sort key and says so, tokens per dollar is
// a column, --price replaces the profile's price. Expected figures come from
// predict's own JSON of each row's plan (cost over tokens), or by hand.
TEST_SUITE("compare planning: cost") {

TEST_CASE("--sort cost: the best is the least cost per token by predict's own cost of each row") {
  const std::string flags = "--model llama3_8b --seq 8192 --global-batch 64 --tokens 100B --dp 8 --zero 1";
  const json j = cli_json("compare " + flags + " --vary gpu=h100_sxm,h200,b200 --sort cost --format json");
  CHECK(j["best_by"] == "cost_per_token");
  double best = 0;
  std::string best_gpu;
  for (const auto& row : j["rows"]) {
    const json p = predict("--gpu " + row["gpu"].get<std::string>() + " " + flags);
    const double usd = p["training"]["cost_usd"].get<double>(), tokens = p["training"]["tokens"].get<double>();
    CHECK(row["tokens_per_usd"].get<double>() == doctest::Approx(tokens / usd).epsilon(1e-9));
    if (best_gpu.empty() || usd / tokens < best) best = usd / tokens, best_gpu = row["gpu"];
  }
  REQUIRE(j["best_row"].is_number());
  CHECK(j["rows"][j["best_row"].get<int>()]["gpu"] == best_gpu);
  // The table's legend says what the best is best by; the header, what the cost is for.
  const auto r = test::run_cli("compare " + flags + " --vary gpu=h100_sxm,h200,b200 --sort cost");
  REQUIRE(r.status == 0);
  CHECK(r.out.find("best: the configuration that fits with the least cost per token (--sort cost)\n") !=
        std::string::npos);
  CHECK(r.out.find("wall clock and cost: for 100B tokens (--tokens)\n") != std::string::npos);
  CHECK(r.out.find("tokens/$") != std::string::npos);
}

TEST_CASE("--sort memory: the best is the least peak memory, and the legend says so") {
  const json j = cli_json("compare --dp 8 --vary zero=0,1,3 --sort memory --format json");
  CHECK(j["best_by"] == "peak_memory");
  double least = -1;
  int at = -1;
  for (size_t i = 0; i < j["rows"].size(); ++i) {
    const auto& row = j["rows"][i];
    if (row["status"] != "ok") continue;
    if (least < 0 || row["peak_memory_bytes"].get<double>() < least) least = row["peak_memory_bytes"], at = int(i);
  }
  CHECK(j["best_row"] == at);
}

TEST_CASE("--price replaces the profile's price: cost = GPU-hours x the price") {
  const json p = predict("--dp 8 --zero 1 --global-batch 64 --seq 8192 --tokens 10B --price 3.25");
  CHECK(p["training"]["cost_usd"].get<double>() ==
        doctest::Approx(p["training"]["gpu_hours"].get<double>() * 3.25).epsilon(1e-12));
  const json c = cli_json("compare --dp 8 --global-batch 64 --seq 8192 --tokens 10B --price '$3.25' --vary zero=1 "
                          "--format json");
  CHECK(c["rows"][0]["cost_usd"].get<double>() == doctest::Approx(p["training"]["cost_usd"].get<double>()));
}

TEST_CASE("--price: zero, negative, NaN and words are refused, exit 2, one line naming the flag") {
  for (const std::string bad : {"0", "-1", "nan", "inf", "cheap", "2.5.0"}) {
    for (const std::string cmd : {"predict", "compare --vary zero=1", "search", "advise"}) {
      const auto r = test::run_cli(cmd + " --price " + bad);
      INFO(cmd, " --price ", bad);
      CHECK(r.status == 2);
      CHECK(r.out.empty());
      CHECK(r.err == "error: --price: expected a positive price in US dollars per GPU-hour such as 2.50, got \"" +
                         bad + "\"\n");
    }
  }
}

}  // TEST_SUITE
