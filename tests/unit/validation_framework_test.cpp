// The training framework of a published row (validation::framework_of):
// read from the row's own fields (training.framework, training.implementation,
// the source's citation, training.dp_type, the notes), never from its id,
// carried into the mapped plan (its fusion unless the row says eager) and
// into the row's assumptions; and the error statistics of the end-to-end
// rows split by framework and by GPU generation. The rows are written as
// published.yaml states such rows (citations as the sources print them);
// expected statistics are hand calculations from the errors given
// (percentiles by linear interpolation, numpy.percentile's default).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

#include "ridgeline/report/validation_view.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/published.hpp"
#include "ridgeline/validation/mapping.hpp"
#include "ridgeline/validation/published.hpp"
#include "ridgeline/validation/stats.hpp"
#include "test_support.hpp"

using namespace ridgeline;
namespace fs = std::filesystem;

namespace {

/// Rows of each stack as published.yaml states them; the ids name a
/// different stack than the row's fields on purpose (the id is never read).
constexpr const char* kRows = R"(schema_version: 1
row_count: 9
rows:
- id: foundry_like_row
  group: llm_foundry
  category: end_to_end_training
  source:
    citation: mosaicml/llm-foundry scripts/train/benchmarking/README.md ('MPT Training Benchmarks')
    url: https://github.com/mosaicml/llm-foundry/tree/main/scripts/train/benchmarking
  hardware: {gpu: 'H100-80GB (SXM, MosaicML platform)', num_gpus: 8}
  model: {architecture: 'MPT (LayerNorm, GeLU MLP expansion 4, no bias)', name: MPT-1b, layers: 24, hidden: 2048,
          heads: 16, kv_heads: 16, ffn_hidden: 8192, vocab: 50368, seq_len: 2048}
  training: {dp_type: FSDP FULL_SHARD, global_batch: 512, micro_batch: 8, tp: 1, pp: 1, precision: amp_bf16,
             flash_attention: 'yes (attn_impl flash/triton per yaml)', recompute: none}
  measured: {tokens_per_s_per_gpu: 24000}
- id: megatron_named_but_korthikanti
  group: korthikanti2022
  category: end_to_end_training
  source:
    citation: Korthikanti et al., 'Reducing Activation Recomputation in Large Transformer Models', MLSys 2023
  hardware: {gpu: A100-SXM4-80GB, num_gpus: 8, peak_tflops_used_by_source: 312}
  model: {architecture: 'gpt-style dense decoder (LayerNorm, GeLU MLP 4h)', layers: 48, hidden: 6144, heads: 64,
          kv_heads: 64, ffn_hidden: 24576, vocab: 51200, seq_len: 2048}
  training: {global_batch: 4, micro_batch: 4, tp: 8, pp: 1, dp: 1, precision: mixed 16-bit, flash_attention: false,
             sequence_parallel: true, recompute: selective}
  measured: {iteration_time_s: 1.1}
- id: llmfoundry_named_but_deepspeed
  group: mtnlg
  category: end_to_end_training
  source:
    citation: Smith et al., 'Using DeepSpeed and Megatron to Train Megatron-Turing NLG 530B', arXiv:2201.11990
  hardware: {gpu: A100-SXM4-80GB, num_gpus: 8}
  model: {layers: 24, hidden: 2048, heads: 16, ffn_hidden: 8192, vocab: 51200, seq_len: 2048}
  training: {global_batch: 512, micro_batch: 4, dp: 8, zero: 1, precision: bf16, recompute: none}
  measured: {model_tflops_per_gpu: 150}
- id: bloom_row
  group: bloom
  category: end_to_end_training
  source: {citation: "BigScience Workshop, 'BLOOM: A 176B-Parameter Open-Access Multilingual Language Model'"}
  hardware: {gpu: A100-SXM4-80GB, num_gpus: 8}
  measured: {model_tflops_per_gpu: 150}
- id: flash_chart_huggingface
  group: flashattention_repo
  category: end_to_end_training
  source: {citation: Dao-AILab/flash-attention training/README.md ('Training speed' section)}
  hardware: {gpu: A100-SXM4-80GB, num_gpus: 8}
  training: {implementation: huggingface, precision: bf16,
             flop_formula: 'Megatron-LM paper Sec 5.1 formula scaled by 3/4 (model FLOPs, no recompute)'}
  measured: {model_tflops_per_gpu: 60}
- id: flash_repo_tokens
  group: flashattention_repo
  category: end_to_end_training
  source: {citation: Dao-AILab/flash-attention training/README.md ('Training speed' section)}
  hardware: {gpu: 'A100-SXM4-80GB (400W), NVLink', num_gpus: 8}
  training: {dp: 8, precision: bf16}
  measured: {tokens_per_s_total: 1000000}
- id: titan_row
  group: titan
  category: end_to_end_training
  hardware: {gpu: H100-SXM, num_gpus: 8}
  training: {framework: torchtitan}
  measured: {tokens_per_s_per_gpu: 7000}
- id: unstated_row
  group: titan
  category: end_to_end_training
  hardware: {gpu: TPU-v5e (pod slice), num_gpus: 8}
  measured: {tokens_per_s_per_gpu: 7000}
- id: gemm_row
  group: mamf
  category: gemm_kernel
  hardware: {gpu: H100-SXM, num_gpus: 1}
  kernel: {op: torch.matmul, dtype: bf16, M: 8192, N: 8192, K: 8192}
  measured: {tflops: 750}
)";

/// kRows in a file of its own (the loader reads files), removed with the fixture.
struct RowsFile {
  fs::path dir = fs::temp_directory_path() / ("ridgeline_framework_rows_" + std::to_string(::getpid()));
  std::string path = (dir / "rows.yaml").string();
  spec::PublishedFile file;
  RowsFile() {
    fs::create_directories(dir);
    std::ofstream(path) << kRows;
    file = spec::load_published(path);
  }
  ~RowsFile() { fs::remove_all(dir); }
  const spec::PublishedRow& row(const std::string& id) const {
    for (const auto& r : file.rows)
      if (r.id == id) return r;
    FAIL("no row " << id);
    return file.rows.front();
  }
};

std::uint8_t index_of(const char* id) {
  const auto i = spec::find_framework(id);
  REQUIRE(i);
  return *i;
}

validation::PublishedOptions options() {
  validation::PublishedOptions o;
  o.profiles_dir = std::string(RIDGELINE_SOURCE_DIR) + "/hardware_profiles";
  return o;
}

bool has_line_starting(const std::vector<std::string>& lines, const std::string& prefix) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& s) { return s.rfind(prefix, 0) == 0; });
}

}  // namespace

TEST_CASE("validation framework: an llm-foundry row runs under fsdp, with its fusion, in its assumptions") {
  const RowsFile f;
  const auto& row = f.row("foundry_like_row");
  const auto choice = validation::framework_of(row);
  CHECK(choice.index == index_of("fsdp"));
  CHECK(choice.why == "framework fsdp: PyTorch FSDP via Composer (llm-foundry); source.citation names 'llm-foundry'");
  const auto tc = validation::map_training_row(row, test::gpu("h100_sxm"));
  REQUIRE(tc);
  CHECK(tc->plan.framework == index_of("fsdp"));
  // The row states no implementation: the framework's fusion (frameworks/fsdp.yaml: eager).
  CHECK(tc->plan.fusion == spec::framework(index_of("fsdp")).fusion);
  CHECK(tc->plan.parallel.zero == 3);  // FULL_SHARD, as before
  CHECK(has_line_starting(tc->assumptions, "framework fsdp: "));
  CHECK(validation::describe(*tc).find("| fsdp, bf16,") != std::string::npos);
}

TEST_CASE("validation framework: a Korthikanti et al. row runs under megatron, whatever its id says") {
  const RowsFile f;
  const auto& row = f.row("megatron_named_but_korthikanti");
  const auto choice = validation::framework_of(row);
  CHECK(choice.index == index_of("megatron"));
  CHECK(choice.why == "framework megatron: Megatron-LM (Korthikanti et al.); source.citation names 'korthikanti'");
  const auto tc = validation::map_training_row(row, test::gpu("a100_sxm_80gb"));
  REQUIRE(tc);
  CHECK(tc->plan.framework == 0);
  CHECK(tc->plan.fusion == spec::Fusion::kFused);  // Megatron's fused kernels
}

TEST_CASE("validation framework: DeepSpeed rows run under deepspeed, Megatron-DeepSpeed before Megatron") {
  const RowsFile f;
  // The citation names DeepSpeed and Megatron both: the stack that ran is Megatron-DeepSpeed.
  const auto& mtnlg = f.row("llmfoundry_named_but_deepspeed");
  CHECK(validation::framework_of(mtnlg).index == index_of("deepspeed"));
  CHECK(validation::framework_of(mtnlg).why == "framework deepspeed: DeepSpeed; source.citation names 'deepspeed'");
  const auto tc = validation::map_training_row(mtnlg, test::gpu("a100_sxm_80gb"));
  REQUIRE(tc);
  CHECK(tc->plan.framework == index_of("deepspeed"));
  CHECK(tc->plan.fusion == spec::Fusion::kFused);  // frameworks/deepspeed.yaml: Megatron's fused kernels
  CHECK(tc->plan.parallel.zero == 1);
  CHECK(validation::framework_of(f.row("bloom_row")).index == index_of("deepspeed"));
}

TEST_CASE("validation framework: the row's implementation before its source, training.framework first of all") {
  const RowsFile f;
  // A FlashAttention chart row run in the Hugging Face Trainer; its FLOP
  // formula names Megatron-LM and is not read.
  const auto& hf = f.row("flash_chart_huggingface");
  CHECK(validation::framework_of(hf).index == index_of("hf"));
  CHECK(validation::framework_of(hf).why ==
        "framework hf: Hugging Face Trainer; training.implementation names 'huggingface'");
  // The FlashAttention repo's own training code: megatron, the closest profile, saying why.
  const auto repo = validation::framework_of(f.row("flash_repo_tokens"));
  CHECK(repo.index == index_of("megatron"));
  CHECK(repo.why.rfind("framework megatron: the FlashAttention repo's training code", 0) == 0);
  CHECK(repo.why.find("source.citation names 'flash-attention'") != std::string::npos);
  CHECK(validation::framework_of(f.row("titan_row")).index == index_of("torchtitan"));
  CHECK(validation::framework_of(f.row("titan_row")).why == "framework torchtitan (training.framework)");
  const auto unstated = validation::framework_of(f.row("unstated_row"));
  CHECK(unstated.index == 0);
  CHECK(unstated.why == "framework not stated: megatron, the default");
}

TEST_CASE("validation framework: the end-to-end rows split by framework and generation, hand-computed") {
  using validation::compare;
  using validation::PublishedResult;
  auto row = [](const char* framework, const char* generation, std::optional<validation::Comparison> c,
                spec::PublishedCategory cat = spec::PublishedCategory::kEndToEndTraining) {
    PublishedResult r;
    r.category = cat;
    r.framework = framework;
    r.generation = generation;
    r.predicted = c.has_value();
    if (c) r.primary = *c;
    return r;
  };
  const std::vector<PublishedResult> rows = {
      // fsdp: errors +10%, -20%, +30% (throughputs) and one skipped row.
      row("fsdp", "hopper", compare("tokens_per_s_per_gpu", "tokens/s", 100, 110, true)),
      row("fsdp", "ampere", compare("tokens_per_s_per_gpu", "tokens/s", 100, 80, true)),
      row("fsdp", "hopper", compare("tokens_per_s_per_gpu", "tokens/s", 100, 130, true)),
      row("fsdp", "", std::nullopt),
      // megatron: a throughput at -5% and a time at -20% (predicted 0.8 s of
      // a measured 1 s: speed 1 / 0.8 - 1 = +25%).
      row("megatron", "ampere", compare("model_tflops_per_gpu", "TFLOP/s", 100, 95, true)),
      row("megatron", "ampere", compare("iteration_time_s", "s", 1.0, 0.8, false)),
      row("hf", "ampere", std::nullopt),
      // A kernel row runs under no framework and is in neither split.
      row("", "hopper", compare("tflops", "TFLOP/s", 100, 150, true), spec::PublishedCategory::kGemmKernel),
  };
  std::vector<const PublishedResult*> p;
  for (const auto& r : rows) p.push_back(&r);

  const auto fw = validation::split_by_framework(p);
  // spec::frameworks() order: megatron first, then by id.
  REQUIRE(fw.size() == 3);
  CHECK(fw[0].name == "megatron");
  CHECK(fw[0].stats.rows == 2);
  CHECK(fw[0].stats.predicted == 2);
  CHECK(fw[0].stats.median_abs_pct == doctest::Approx(12.5));    // |err| 5, 20
  CHECK(fw[0].stats.p90_abs_pct == doctest::Approx(18.5));       // 5 + 0.9 x 15
  CHECK(fw[0].stats.median_speed_pct == doctest::Approx(10.0));  // speed -5, +25
  CHECK(fw[1].name == "fsdp");
  CHECK(fw[1].stats.rows == 4);
  CHECK(fw[1].stats.predicted == 3);
  CHECK(fw[1].stats.skipped == 1);
  CHECK(fw[1].stats.median_abs_pct == doctest::Approx(20.0));    // |err| 10, 20, 30
  CHECK(fw[1].stats.p90_abs_pct == doctest::Approx(28.0));       // 20 + 0.8 x 10
  CHECK(fw[1].stats.median_speed_pct == doctest::Approx(10.0));  // speed -20, +10, +30
  CHECK(fw[2].name == "hf");
  CHECK(fw[2].stats.rows == 1);
  CHECK(fw[2].stats.predicted == 0);

  // Generation order, not first appearance: ampere before hopper; a row without a profile apart.
  const auto gen = validation::split_by_generation(p);
  REQUIRE(gen.size() == 3);
  CHECK(gen[0].name == "ampere");
  CHECK(gen[0].stats.rows == 4);
  CHECK(gen[0].stats.predicted == 3);
  CHECK(gen[0].stats.median_abs_pct == doctest::Approx(20.0));  // |err| 20 (fsdp), 5, 20 (megatron)
  CHECK(gen[1].name == "hopper");
  CHECK(gen[1].stats.rows == 2);  // the hopper kernel row left out
  CHECK(gen[1].stats.median_abs_pct == doctest::Approx(20.0));  // |err| 10, 30
  CHECK(gen[2].name == "no profile");
  CHECK(gen[2].stats.rows == 1);
}

TEST_CASE("validation framework: the report, the command and leave-one-group-out split by framework") {
  const RowsFile f;
  const auto rep = validation::validate_published(f.file, options());
  for (const auto& r : rep.results) {
    CAPTURE(r.id);
    CHECK(r.framework.empty() == (r.category != spec::PublishedCategory::kEndToEndTraining));
  }
  // Eight end-to-end rows, skipped ones too (the BLOOM row states no model),
  // in spec::frameworks() order; the GEMM row in none.
  std::vector<std::pair<std::string, int>> got;
  for (const auto& g : rep.by_framework) got.emplace_back(g.name, g.stats.rows);
  const std::vector<std::pair<std::string, int>> want = {
      {"megatron", 3}, {"deepspeed", 2}, {"fsdp", 1}, {"hf", 1}, {"torchtitan", 1}};
  CHECK(got == want);
  CHECK(rep.end_to_end.rows == 8);
  int by_generation = 0;
  for (const auto& g : rep.by_generation) by_generation += g.stats.rows;
  CHECK(by_generation == 8);
  CHECK(rep.by_generation.back().name == "no profile");  // the TPU row

  const auto logo = validation::leave_one_group_out(f.file, options());
  REQUIRE(logo.by_framework.size() >= 1);
  for (const auto& g : logo.by_framework) {
    CAPTURE(g.group);
    CHECK(g.in_sample.rows == g.left_out.rows);
    CHECK(g.in_sample.predicted == g.left_out.predicted);
  }
  CHECK(logo.end_to_end.in_sample.predicted == rep.end_to_end.predicted);

  auto r = test::run_cli("validate-published " + f.path + " --format json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["by_framework"].is_array());
  CHECK(j["by_framework"][0]["framework"] == "megatron");
  CHECK(j["by_framework"][0]["rows"] == 3);
  CHECK(j["by_generation"][0]["generation"] == "ampere");
  CHECK(j["rows"][0]["framework"] == "fsdp");
  CHECK(j["rows"][0]["generation"] == "hopper");
  CHECK(j["rows"].back()["framework"].is_null());
  r = test::run_cli("validate-published " + f.path);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("\nBy framework (") != std::string::npos);
  CHECK(r.out.find("\nBy GPU generation (") != std::string::npos);
  r = test::run_cli("validate-published " + f.path + " --leave-one-group-out --format markdown");
  REQUIRE(r.status == 0);
  CHECK(r.out.find("#### By framework") != std::string::npos);
}

TEST_CASE("validation framework: the shipped file's end-to-end rows by framework") {
  const std::string shared = std::string(RIDGELINE_SOURCE_DIR) + "/validation/published.yaml";
  REQUIRE(fs::exists(shared));  // the repository's copy (validation/README.md)
  const auto rep = validation::validate_published(spec::load_published(shared), options());
  int rows = 0;
  for (const auto& g : rep.by_framework) rows += g.stats.rows;
  CHECK(rows == rep.end_to_end.rows);
  for (const auto& r : rep.results) {
    if (r.category != spec::PublishedCategory::kEndToEndTraining) continue;
    CAPTURE(r.id);
    if (r.group == "llm_foundry") CHECK(r.framework == "fsdp");
    if (r.group == "korthikanti2022") CHECK(r.framework == "megatron");
  }
}

TEST_CASE("anchored validation: each stack's fewest-GPU run sets its time scale; the others are predicted with it") {
  // One stack (group g, profile p, framework f) of three runs whose
  // predicted speed is measured x 1.10 (8 GPUs), x 1.21 (16) and x 0.99 (32),
  // and a second stack of one run (no runs beyond its anchor: left out).
  // Anchored on 1: the 8-GPU run's ln 1.10 is the scale, so the others'
  // predicted speeds become 1.21 / 1.10 = 1.10 and 0.99 / 1.10 = 0.90 of the
  // measured: |err| 10% and 10%, median 10%. Unanchored: 21% and 1%, median
  // 11%, p90 = 1 + 0.9 x (21 - 1) = 19%.
  namespace v = ridgeline::validation;
  auto run = [](std::string id, std::string profile, long long gpus, double speed) {
    v::PublishedResult r;
    r.id = std::move(id);
    r.group = "g";
    r.profile = std::move(profile);
    r.framework = "f";
    r.predicted = true;
    r.primary = v::compare("tokens_per_s_total", "tokens/s", 1000, 1000 * speed, true);
    r.run = ridgeline::uncertainty::RunTraits{};
    r.run->gpus = gpus;
    return r;
  };
  const std::vector<v::PublishedResult> rows = {run("c", "p", 32, 0.99), run("a", "p", 8, 1.10),
                                                run("b", "p", 16, 1.21), run("z", "q", 8, 1.5)};
  // No residuals, so no prior: the anchor's ratio is the scale.
  const auto r = v::anchored(rows, 1, ridgeline::uncertainty::IntervalModel());
  REQUIRE(r.groups.size() == 1);
  const auto& g = r.groups[0];
  CHECK(g.stacks == 1);
  CHECK(g.anchors == 1);
  CHECK(g.anchored.predicted == 2);
  CHECK(g.anchored.median_abs_pct == doctest::Approx(10.0).epsilon(1e-9));
  CHECK(g.unanchored.median_abs_pct == doctest::Approx(11.0).epsilon(1e-9));
  CHECK(g.unanchored.p90_abs_pct == doctest::Approx(19.0).epsilon(1e-9));
  CHECK(r.all.anchored.predicted == 2);
  CHECK(g.interval_rows == 0);  // one run and no residuals: no spread to draw an interval from

  // With a prior (uncertainty/scale_prior.hpp) from two sources of two runs each: a at 0.1, -0.1 and b at
  // 0.3, 0.1. sigma_w^2 = (0.02 + 0.02) / (4 - 2) = 0.02; the means 0 and 0.2 vary by 0.02, less 0.02 x
  // mean(1/2, 1/2): tau^2 = 0.01. One run weighs 1 / (1 + 0.02 / 0.01) = 1/3: the scale is 1.10^(1/3) =
  // 1.0322801, the others' predicted speeds 1.21 / 1.0322801 = 1.1721626 and 0.99 / 1.0322801 = 0.9590421
  // of the measured: |err| 17.216% and 4.096%, median 10.656%.
  namespace u = ridgeline::uncertainty;
  auto residual = [](std::string group, double r) {
    u::Residual x;
    x.id = group;
    x.group = std::move(group);
    x.run.gpus = 8;
    x.log_residual = r;
    return x;
  };
  const u::IntervalModel model({residual("a", 0.1), residual("a", -0.1), residual("b", 0.3), residual("b", 0.1)});
  const auto p = v::anchored(rows, 1, model);
  const double k = std::cbrt(1.10);
  const double median = 50 * ((1.21 / k - 1) + (1 - 0.99 / k));
  CHECK(p.groups[0].anchored.median_abs_pct == doctest::Approx(median).epsilon(1e-9));
  // Their 80% intervals: posterior variance 1 / (1/0.01 + 1/0.02) = 0.0066667, a new run's 0.02 (all
  // runs at 8 GPUs: no distance growth): half-width z sqrt(0.0266667) = 0.2093: [0.811, 1.233] of the
  // calibrated time; both measurements (1.172 and 0.959 of it) inside.
  CHECK(p.groups[0].interval_rows == 2);
  CHECK(p.groups[0].interval_covered == 2);
  // The views: the share inside as a column of the table (within 120 columns), the counts in the JSON.
  const std::string table = ridgeline::report::render_anchored(p, "f.yaml", "table");
  CHECK(table.find("in 80%\n") != std::string::npos);
  CHECK(table.find("   100%\nall ") != std::string::npos);  // group g: 2 of 2 inside
  size_t widest = 0, from = table.find("\ngroup ");
  REQUIRE(from != std::string::npos);
  for (size_t at = from + 1, end; at < table.size(); at = end + 1) {
    end = table.find('\n', at);
    widest = std::max(widest, end - at);
  }
  CHECK(widest <= 120);
  const auto j = nlohmann::json::parse(ridgeline::report::render_anchored(p, "f.yaml", "json"));
  CHECK(j["all"]["anchored_interval_80"]["rows"] == 2);
  CHECK(j["all"]["anchored_interval_80"]["covered"] == 2);
  CHECK(ridgeline::report::render_anchored(p, "f.yaml", "markdown").find("| in anchored 80% interval |") !=
        std::string::npos);
}

TEST_CASE("validation framework: a row naming its model file (model.spec) maps MoE layouts the fields cannot state") {
  // A NeMo AutoModel row as published.yaml states it
  // (examples/benchmark/configs/qwen3_moe_30b_te_deepep.yaml): Qwen3-30B-A3B
  // from models/qwen3_30b_a3b.yaml (128 experts, top-8), EP 8 within the 8
  // data-parallel ranks, DeepEP, compiled, the loss over 16-bit logits.
  const fs::path dir = fs::temp_directory_path() / ("ridgeline_spec_rows_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "rows.yaml").string();
  std::ofstream(path) << R"(schema_version: 1
row_count: 3
rows:
- id: moe_row
  group: g
  category: end_to_end_training
  source: {citation: NVIDIA NeMo AutoModel docs, 'Performance Summary'}
  hardware: {gpu: H100-SXM-80GB, num_gpus: 8}
  model: {name: Qwen3-30B-A3B, spec: qwen3_30b_a3b, seq_len: 4096}
  training: {implementation: 'NeMo AutoModel (FSDP2 + EP)', global_batch: 512, micro_batch: 4, tp: 1, pp: 1, ep: 8,
             dp: 8, zero: 3, precision: bf16, recompute: full, attention: cudnn, moe_dispatcher: deepep,
             moe_imbalance: 1.25, compile: true, cross_entropy: fused, master_weights: none}
  measured: {tokens_per_s_per_gpu: 12040}
- id: unknown_spec
  group: g
  category: end_to_end_training
  hardware: {gpu: H100-SXM-80GB, num_gpus: 8}
  model: {spec: no_such_model, seq_len: 4096}
  training: {global_batch: 8, micro_batch: 1, dp: 8, precision: bf16, recompute: none}
  measured: {tokens_per_s_per_gpu: 1000}
- id: spec_without_seq
  group: g
  category: end_to_end_training
  hardware: {gpu: H100-SXM-80GB, num_gpus: 8}
  model: {spec: qwen3_30b_a3b}
  training: {global_batch: 8, micro_batch: 1, dp: 8, precision: bf16, recompute: none}
  measured: {tokens_per_s_per_gpu: 1000}
)";
  const auto file = spec::load_published(path);
  fs::remove_all(dir);
  REQUIRE(file.rows.size() == 3);
  validation::PredictOptions opt;
  opt.models_dir = std::string(RIDGELINE_SOURCE_DIR) + "/models";
  const auto hw = test::gpu("h100_sxm");
  const auto tc = validation::map_training_row(file.rows[0], hw, opt);
  REQUIRE(tc);
  // The file's model: 48 layers, 128 experts of 768, top-8 (Qwen3-30B-A3B config.json).
  CHECK(tc->model.layers == 48);
  CHECK(tc->model.moe.experts == 128);
  CHECK(tc->model.moe.top_k == 8);
  CHECK(tc->model.max_seq_len == 4096);  // the row's sequence, not the file's 40960
  CHECK(tc->plan.seq_len == 4096);
  CHECK(tc->plan.parallel.ep == 8);
  CHECK(tc->plan.parallel.dp == 8);
  CHECK(tc->plan.parallel.zero == 3);
  CHECK(tc->plan.moe.dispatcher == spec::MoeDispatcher::kDeepEp);
  CHECK(tc->plan.moe.imbalance == 1.25);
  CHECK(tc->plan.fusion == spec::Fusion::kCompiled);
  CHECK(tc->plan.cross_entropy == spec::CrossEntropy::kFused);
  CHECK(tc->plan.master_weights == spec::MasterWeights::kNone);
  CHECK(tc->plan.attention == spec::AttentionKind::kCudnn);
  // AutoModel is PyTorch FSDP2 over DTensor meshes: torchtitan's profile.
  CHECK(tc->plan.framework == index_of("torchtitan"));
  CHECK(has_line_starting(tc->assumptions, "model from models/qwen3_30b_a3b.yaml (model.spec)"));
  CHECK(has_line_starting(tc->assumptions, "framework torchtitan: NeMo AutoModel"));
  // A model file that is not there, and a file without the row's sequence: skipped with the reason.
  const auto none = validation::map_training_row(file.rows[1], hw, opt);
  REQUIRE_FALSE(none);
  CHECK(none.reason() == "model.spec 'no_such_model': no models/no_such_model.yaml");
  const auto noseq = validation::map_training_row(file.rows[2], hw, opt);
  REQUIRE_FALSE(noseq);
  CHECK(noseq.reason().find("seq_len") != std::string::npos);
}

TEST_CASE("validation framework: an unstated recomputation is chosen among those the framework offers") {
  // Under torchtitan (NeMo AutoModel) there is no Megatron-style selective
  // recomputation (frameworks/torchtitan.yaml recompute: none, op, every:K,
  // full): the mapping tries none, selective and full, and a refused try is
  // not a reason to skip the row. Llama-3-8B at micro-batch 1, 8192 tokens on
  // one 80 GB H100 under ZeRO-3 over 8: without recomputation its activations
  // (~34 B h s per layer in 16 bits, Korthikanti et al. 2022: 32 x 4096 x 8192
  // x 34 B = 34 GiB) and the 2 B + 4 B + 4 B of state of 1/8 of 8B (9.4 GiB)
  // fit, so "none", the fastest, is the choice.
  const fs::path dir = fs::temp_directory_path() / ("ridgeline_unstated_rc_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "rows.yaml").string();
  std::ofstream(path) << R"(schema_version: 1
row_count: 1
rows:
- id: automodel_like
  group: g
  category: end_to_end_training
  source: {citation: NVIDIA NeMo AutoModel docs, 'Performance Summary'}
  hardware: {gpu: H100-SXM-80GB, num_gpus: 8}
  model: {name: Llama-3-8B, spec: llama3_8b, seq_len: 8192}
  training: {implementation: 'NeMo AutoModel (FSDP2)', global_batch: 8, micro_batch: 1, tp: 1, pp: 1, dp: 8,
             zero: 3, precision: bf16, recompute: 'not stated (the config changed after the run)'}
  measured: {tokens_per_s_per_gpu: 9000}
)";
  const auto file = spec::load_published(path);
  fs::remove_all(dir);
  REQUIRE(file.rows.size() == 1);
  validation::PredictOptions opt;
  opt.models_dir = std::string(RIDGELINE_SOURCE_DIR) + "/models";
  const auto tc = validation::map_training_row(file.rows[0], test::gpu("h100_sxm"), opt);
  REQUIRE(tc);
  CHECK(tc->plan.framework == index_of("torchtitan"));
  CHECK(tc->plan.recompute.kind == spec::RecomputeKind::kNone);
  CHECK(has_line_starting(tc->assumptions, "training.recompute not stated: none"));
}
