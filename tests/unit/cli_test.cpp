// End-to-end tests of the command line: exact diagnostics, golden outputs.
#include <algorithm>
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

#include "test_support.hpp"

using namespace ridgeline;
namespace fs = std::filesystem;

namespace {

using ridgeline::test::slurp;

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n')) s.pop_back();
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  return s;
}

/// A search's measurements of its own run (wall seconds, the threads it
/// ran on, their ratio): present in both files, compared only for type.
bool is_timing(const std::string& key) { return key == "seconds" || key == "threads" || key == "evaluated_per_s"; }

/// Numbers within a relative 1e-9, everything else equal.
void check_json_equal(const nlohmann::json& a, const nlohmann::json& b, const std::string& path) {
  CAPTURE(path);
  REQUIRE(a.type() == b.type());
  if (a.is_object()) {
    REQUIRE(a.size() == b.size());
    for (auto it = a.begin(); it != a.end(); ++it) {
      REQUIRE(b.contains(it.key()));
      if (is_timing(it.key())) continue;
      check_json_equal(it.value(), b[it.key()], path + "." + it.key());
    }
  } else if (a.is_array()) {
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) check_json_equal(a[i], b[i], path + "[" + std::to_string(i) + "]");
  } else if (a.is_number_float()) {
    CHECK(a.get<double>() == doctest::Approx(b.get<double>()).epsilon(1e-9));
  } else {
    CHECK(a == b);
  }
}

}  // namespace

TEST_CASE("cli: every bad input is one exact line (then, located in a file, its line and a caret), exit 2, and no output file") {
  const fs::path dir = fs::path(RIDGELINE_SOURCE_DIR) / "tests/diagnostics";
  std::ifstream cases(dir / "cases.txt");
  std::string line;
  int count = 0;
  while (std::getline(cases, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto a = line.find(" | "), b = line.rfind(" | ");
    const std::string name = trim(line.substr(0, a));
    const std::string args = trim(line.substr(a + 3, b - a - 3));
    const int expected_rc = std::stoi(line.substr(b + 3));
    CAPTURE(name);
    const fs::path out = fs::temp_directory_path() / ("ridgeline_diag_" + name + ".out");
    fs::remove(out);
    const auto r = test::run_cli(args + " --output " + out.string());
    CHECK(r.status == expected_rc);
    const std::string expected = slurp(dir / (name + ".expected"));
    const std::string first = r.err.substr(0, r.err.find('\n') + 1);
    CHECK(first == expected);
    // Located at file:line:col: the file's line and a caret under the column
    // (STYLE.md's diagnostics); a flag's error is its one line.
    const std::string rest = r.err.substr(first.size());
    const auto colon = expected.find(": error: ");
    const std::string where = colon == std::string::npos ? "" : expected.substr(0, colon);
    const size_t c2 = where.rfind(':'), c1 = c2 == std::string::npos ? c2 : where.rfind(':', c2 - 1);
    const bool located = c1 != std::string::npos && c1 > 0 &&
                         std::all_of(where.begin() + c1 + 1, where.begin() + c2, ::isdigit) &&
                         std::all_of(where.begin() + c2 + 1, where.end(), ::isdigit) && c2 + 1 < where.size();
    if (located) {
      REQUIRE(std::count(rest.begin(), rest.end(), '\n') == 2);
      const std::string caret = rest.substr(rest.find('\n') + 1);
      const int col = std::stoi(where.substr(c2 + 1));
      // Two spaces of indent, then the column's offset (tabs kept), then ^.
      CHECK(caret.size() == static_cast<size_t>(2 + col - 1 + 2));
      CHECK(caret.substr(caret.size() - 2) == "^\n");
    } else {
      CHECK(rest.empty());
    }
    CHECK_FALSE(fs::exists(out));                               // no partial output
    ++count;
  }
  CHECK(count >= 12);
}

TEST_CASE("cli: golden predictions (regenerate with scripts/regen_golden.sh)") {
  for (const auto& e : fs::directory_iterator(fs::path(RIDGELINE_SOURCE_DIR) / "tests/golden")) {
    const fs::path expected = e.path() / "expected.json";
    if (!fs::exists(expected)) continue;
    CAPTURE(e.path().string());
    const auto r = test::run_cli(trim(slurp(e.path() / "args")));
    CHECK(r.status <= 1);
    check_json_equal(nlohmann::json::parse(r.out), nlohmann::json::parse(slurp(expected)), "");
  }
}

TEST_CASE("cli: --version prints the project's version, alone or after other flags") {
  // CMakeLists.txt's project(ridgeline VERSION ...) is RIDGELINE_VERSION.
  const auto alone = test::run_cli("--version");
  CHECK(alone.status == 0);
  CHECK(alone.out == std::string("ridgeline ") + RIDGELINE_VERSION + "\n");
  CHECK(alone.err.empty());
  // Through CLI11 (the app's version flag): the same line.
  const auto before_a_command = test::run_cli("--version predict");
  CHECK(before_a_command.status == 0);
  CHECK(before_a_command.out == alone.out);
}

TEST_CASE("cli: the shipped default runs and says whether it fits") {
  const auto r = test::run_cli("predict");
  // Llama-3-8B with AdamW needs 16 bytes per parameter of model state (ZeRO paper): 128 GB > 80 GiB.
  CHECK(r.status == 1);
  CHECK(r.out.find("DOES NOT FIT") != std::string::npos);
  CHECK(r.err.find("does not fit") != std::string::npos);
  const auto j = test::run_cli("predict --dp 8 --zero 3 --global-batch 8 --format json");
  CHECK(j.status == 0);
  const auto doc = nlohmann::json::parse(j.out);
  for (const char* k : {"step_time_s", "tokens_per_s", "mfu", "hfu", "model_flops"}) CHECK(doc["step"].contains(k));
  for (const char* k : {"weights_bytes", "gradients_bytes", "master_weights_bytes", "optimizer_bytes",
                        "activations_bytes", "buffers_bytes", "peak_memory_bytes", "capacity_bytes", "fits"})
    CHECK(doc["memory"].contains(k));
  CHECK(doc["memory"]["fits"] == true);
  const auto& k0 = doc["kernels"][0];
  for (const char* k : {"name", "phase", "class", "dtype", "count", "flops", "hbm_bytes", "intensity", "bound", "time_s"})
    CHECK(k0.contains(k));
}

TEST_CASE("cli: check validates every shipped spec file") {
  const auto r = test::run_cli("check hardware_profiles/*.yaml models/*.yaml plans/*.yaml");
  CHECK(r.status == 0);
  CHECK(r.err.empty());
}

TEST_CASE("cli: check tells the kind of a file outside the shipped folders from its keys") {
  const auto ok = test::run_cli(
      "check tests/data/hf/gpt2_config.json tests/data/measurements/too_few.json tests/data/published/skipped_rows.yaml");
  CHECK(ok.status == 0);
  CHECK(ok.out ==
        "tests/data/hf/gpt2_config.json: ok (Hugging Face config)\n"
        "tests/data/measurements/too_few.json: ok (measurement file)\n"
        "tests/data/published/skipped_rows.yaml: ok (published-measurements file)\n");
  // A profile-like file (memory:, sources:) outside hardware_profiles/ is
  // checked as a profile: its errors are a profile's, not "unknown key" for
  // every field of a plan.
  const auto bad = test::run_cli("check tests/fuzz_regressions/hardware/use-after-free-sources-non-scalar-key.yaml");
  CHECK(bad.status == 2);
  CHECK(bad.err.find("3:3: error: sources: expected a field name") != std::string::npos);
  CHECK(bad.err.find("memory: missing required field") != std::string::npos);
  CHECK(bad.err.find("unknown key 'name'") == std::string::npos);
}

TEST_CASE("cli: plan flags parse in each form, and errors and help name every flag") {
  // Each case's plan, as predict reports it, checked by hand against what
  // the flags say: the "=" form, a switch's --no- form, a Megatron spelling.
  const auto plan_of = [](const std::string& flags) {
    const auto r = test::run_cli("predict --format json " + flags);
    CAPTURE(flags);
    CAPTURE(r.err);
    REQUIRE(r.status <= 1);
    return nlohmann::json::parse(r.out)["plan"];
  };
  const auto a = plan_of("--tp=2 --no-sp --dp 4 --zero=1 --micro-batch 2 --global-batch 16 --recompute selective");
  CHECK(a["parallel"]["tp"] == 2);
  CHECK(a["parallel"]["sp"] == false);  // Megatron's default with TP 2 is on: the --no- form was read
  CHECK(a["parallel"]["dp"] == 4);
  CHECK(a["parallel"]["zero"] == 1);
  CHECK(a["micro_batch"] == 2);
  CHECK(a["global_batch"] == 16);
  CHECK(a["recompute"] == "selective");
  const auto b = plan_of("--tensor-model-parallel-size 2 --dp 4 --global-batch 8 --sp");
  CHECK(b["parallel"]["tp"] == 2);
  CHECK(b["parallel"]["sp"] == true);
  // Nothing named: every field its default (megatron, one GPU).
  const auto c = plan_of("");
  CHECK(c["parallel"]["tp"] == 1);
  CHECK(c["micro_batch"] == 1);

  // A misspelt flag is matched against flags the line does not name, and
  // help lists them.
  const auto typo = test::run_cli("predict --tp 2 --micro-batchh 2");
  CHECK(typo.status == 2);
  CHECK(typo.err == "error: unknown flag '--micro-batchh'; did you mean '--micro-batch'?\n");
  const auto help = test::run_cli("predict --tp 2 --help");
  CHECK(help.status == 0);
  for (const char* flag : {"--last-stage-layers", "--tensor-model-parallel-size", "--no-sp", "--grid-carbon"})
    CHECK(help.out.find(flag) != std::string::npos);
  // A bad value of a named flag: the full app's message.
  const auto bad = test::run_cli("search --tp x");
  CHECK(bad.status == 2);
  CHECK(bad.err.find("--tp") != std::string::npos);
}

TEST_CASE("cli: other tools' spellings, --gpus on predict and a part of a GPU's name get their answer") {
  // DeepSpeed's zero_optimization.stage as a flag, vLLM's --tensor-parallel-size short form:
  const auto zero = test::run_cli("predict --zero-stage 3");
  CHECK(zero.status == 2);
  CHECK(zero.err == "error: unknown flag '--zero-stage'; Ridgeline spells it '--zero'\n");
  CHECK(test::run_cli("compare --tp-size 2").err == "error: unknown flag '--tp-size'; Ridgeline spells it '--tp'\n");
  // predict's GPU count is the layout's; search takes --gpus.
  CHECK(test::run_cli("predict --gpus 8").err ==
        "error: unknown flag '--gpus'; this command takes the GPU count from TP x PP x DP x CP: give --dp N "
        "(search takes --gpus)\n");
  // "4090" is part of one profile's id only.
  const auto gpu = test::run_cli("predict --gpu 4090");
  CHECK(gpu.status == 2);
  CHECK(gpu.err.rfind("error: --gpu: unknown GPU '4090' (did you mean 'rtx_4090'?); known: ", 0) == 0);
  // "A100" is an alias of hardware_profiles/a100_sxm_80gb.yaml alone (its
  // aliases line), and three other profiles' names begin with it: the
  // choice is said, not made silently. An id names one profile: no note.
  const auto a100 = test::run_cli("predict --gpu A100 --dp 8 --zero 3");
  CHECK(a100.status <= 1);
  CHECK(a100.err.find("note: --gpu A100 is taken as a100_sxm_80gb; also these profiles: a100_pcie_40gb, "
                      "a100_pcie_80gb, a100_sxm_40gb\n") != std::string::npos);
  CHECK(test::run_cli("predict --gpu a100_sxm_80gb --dp 8 --zero 3").err.find("note: --gpu") == std::string::npos);
}

TEST_CASE("cli: predict says how the step counts a model's MTP module (DeepSeek-V3's)") {
  // models/deepseek_v3.yaml: mtp_layers 1 (num_nextn_predict_layers in its config.json).
  const auto r = test::run_cli("predict --gpu h800_sxm --model deepseek_v3 --precision fp8 --pp 16 --ep 64 --dp 128 "
                               "--seq 4096 --global-batch 15360 --first-stage-layers 1");
  CHECK(r.status <= 1);
  // Under PP the module is the last stage's: with 1 layer on the first of
  // 16 stages the last holds 4 and the module and sets the pace; with 3 on
  // the first and 2 on the last, a middle stage's 4 do.
  CHECK(r.out.find("note: the MTP module (mtp_layers 1) makes the last pipeline stage (4 layers) the busiest: it "
                   "sets the pace\n") != std::string::npos);
  const auto balanced = test::run_cli("predict --gpu h800_sxm --model deepseek_v3 --precision fp8 --pp 16 --ep 64 "
                                      "--dp 128 --seq 4096 --global-batch 15360 --first-stage-layers 3 "
                                      "--last-stage-layers 2");
  CHECK(balanced.out.find("note: the MTP module (mtp_layers 1) is on the last pipeline stage (2 layers); a busier "
                          "stage sets the pace\n") != std::string::npos);
  const auto one = test::run_cli("predict --gpu h800_sxm --model deepseek_v3 --seq 4096");
  CHECK(one.out.find("note: the step includes the model's MTP module (mtp_layers 1); its parameter count leaves it "
                     "out\n") != std::string::npos);
  const auto dense = test::run_cli("predict --model llama3_8b --dp 8 --zero 3");
  CHECK(dense.out.find("MTP") == std::string::npos);
}

TEST_CASE("cli: check FOLDER checks every input file in it, launch configs as --from-* reads them") {
  const auto r = test::run_cli("check plans");
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  // plans/ as shipped, in name order.
  CHECK(r.out ==
        "plans/deepspeed_zero3.json: ok (DeepSpeed config)\n"
        "plans/lora_finetune.yaml: ok (training plan)\n"
        "plans/megatron_llama3_8b.sh: ok (Megatron-LM launch script)\n"
        "plans/pretrain_8k.yaml: ok (training plan)\n"
        "plans/torchtitan_llama3_8b.toml: ok (torchtitan config)\n");
  const fs::path empty = fs::temp_directory_path() / ("ridgeline_check_empty_" + std::to_string(::getpid()));
  fs::create_directories(empty);
  const auto none = test::run_cli("check " + empty.string());
  fs::remove_all(empty);
  CHECK(none.status == 2);
  CHECK(none.out.empty());
  CHECK(none.err == "error: check: '" + empty.string() +
                        "' is a folder with no .yaml, .yml, .json, .csv, .toml or .sh file in it\n");
}

TEST_CASE("cli: flags without effect are warned about, once, and change nothing") {
  const auto lora = test::run_cli("predict --lora-rank 8 --dp 8 --global-batch 8 --zero 1");
  CHECK(lora.err.find("warning: --lora-rank: no effect without --finetune lora or --finetune qlora (this plan trains "
                      "every weight: --finetune full)\n") != std::string::npos);
  CHECK(lora.err.find("warning: --zero") == std::string::npos);  // DP 8: ZeRO shards
  const auto plain = test::run_cli("predict --dp 8 --global-batch 8 --zero 1");
  CHECK(lora.out == plain.out);
  CHECK(lora.status == plain.status);
  const auto adapters = test::run_cli("predict --finetune lora --lora-rank 8");
  CHECK(adapters.err.find("warning") == std::string::npos);
  // ZeRO shards over DP x CP ranks (Rajbhandari et al. 2020; techniques::data_parallel_groups): one rank, nothing shards.
  const auto zero = test::run_cli("advise --zero 1 --top 1");
  CHECK(zero.status == 0);
  CHECK(zero.err == "warning: --zero: ZeRO-1 shards over the data-parallel ranks (DP x CP), and this plan has one "
                    "(--dp 1): it frees no memory\n");
}

TEST_CASE("cli: the does-not-fit hint offers only the levers the plan has not pulled") {
  const auto full = test::run_cli("predict --gpu rtx_4090");
  CHECK(full.status == 1);
  CHECK(full.err.find("--optimizer adafactor|adam8bit, --optimizer-state-dtype bf16, --finetune lora, or a smaller "
                      "--micro-batch") != std::string::npos);
  // Moments already in bf16 (or in the weights' dtype without masters): not offered.
  const auto bf16 = test::run_cli("predict --gpu rtx_4090 --optimizer-state-dtype bf16");
  REQUIRE(bf16.status == 1);
  CHECK(bf16.err.find("--optimizer-state-dtype") == std::string::npos);
  CHECK(test::run_cli("predict --gpu rtx_4090 --master-weights none").err.find("--optimizer-state-dtype") ==
        std::string::npos);
  const auto lora = test::run_cli("predict --gpu rtx_4090 --finetune lora");
  REQUIRE(lora.status == 1);
  CHECK(lora.err.find("--finetune lora") == std::string::npos);
  CHECK(lora.err.find("--optimizer") == std::string::npos);  // adapters' optimizer state is small
  CHECK(lora.err.find("--finetune qlora, or a smaller --micro-batch") != std::string::npos);
  const auto q = test::run_cli("predict --gpu rtx_4090 --finetune qlora --seq 65536 --micro-batch 4");
  REQUIRE(q.status == 1);
  CHECK(q.err.find("--finetune") == std::string::npos);
}

TEST_CASE("cli: the hf framework runs data parallelism only: TP or PP above 1 is refused") {
  const auto tp = test::run_cli("predict --framework hf --tp 2 --dp 4");
  CHECK(tp.status == 2);
  CHECK(tp.out.empty());
  CHECK(tp.err.starts_with("error: parallel.tp (--tp): hf runs no tensor parallelism (TP 2): the Trainer replicates"));
  const auto pp = test::run_cli("predict --framework hf --pp 2");
  CHECK(pp.status == 2);
  CHECK(pp.err.starts_with("error: parallel.pp (--pp): hf runs no pipeline parallelism (PP 2): "));
  // A search over frameworks ranks hf only at TP 1 and PP 1.
  const auto s = test::run_cli("search --gpu h100_sxm --model llama3_8b --gpus 8 --global-batch 64 --framework hf "
                               "--top 20 --format json");
  REQUIRE(s.status == 0);
  const auto j = nlohmann::json::parse(s.out);
  REQUIRE(!j["top"].empty());
  for (const auto& r : j["top"]) {
    CHECK(r["framework"] == "hf");
    CHECK(r["tp"] == 1);
    CHECK(r["pp"] == 1);
  }
}

TEST_CASE("cli: --top 0 prints no kernel section; JSON bytes and parameter counts are integers") {
  for (const char* f : {"table", "markdown"}) {
    const auto r = test::run_cli(std::string("predict --dp 8 --zero 3 --global-batch 8 --top 0 --format ") + f);
    CHECK(r.status == 0);
    CHECK(r.out.find("op kernels") == std::string::npos);
    CHECK(r.out.find("emory per GPU") != std::string::npos);
  }
  const auto p = nlohmann::json::parse(test::run_cli("predict --dp 8 --zero 3 --global-batch 8 --format json").out);
  // Llama-3-8B: 8,030,261,248 parameters (meta-llama/Meta-Llama-3-8B's safetensors index, total_size / 2 bytes).
  CHECK(p["model"]["params"].is_number_integer());
  CHECK(p["model"]["params"] == 8030261248LL);
  CHECK(p["model"]["trainable_params"].is_number_integer());
  for (const char* precision : {"bf16", "fp8"}) {
    CAPTURE(precision);
    const auto s = nlohmann::json::parse(
        test::run_cli(std::string("search --gpu h100_sxm --model llama3_8b --gpus 8 --global-batch 64 --top 5 "
                                  "--format json --precision ") + precision)
            .out);
    CHECK(s["query"]["capacity_bytes"].is_number_integer());
    REQUIRE(!s["top"].empty());
    for (const auto& r : s["top"]) {
      CHECK(r["precision"] == precision);
      CHECK(r["peak_memory_bytes"].is_number_integer());
      CHECK(r["traits"]["params"].is_number_integer());
      // A recipe only on the rows that run fp8.
      CHECK(r.contains("fp8_recipe") == (std::string(precision) == "fp8"));
    }
  }
  const auto c = nlohmann::json::parse(test::run_cli("compare --vary tp=1,2 --dp 2 --global-batch 2 --format json").out);
  for (const auto& r : c["rows"]) CHECK(r["peak_memory_bytes"].is_number_integer());
}
