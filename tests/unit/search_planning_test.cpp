// search as users plan (issue 16): a plan flag given is fixed and a
// dimension is searched only when not given (or when --search names it); the
// header says which were searched and which fixed; a layout qualifies only
// when its peak memory's upper end leaves the headroom; exact ties are one
// row; each row carries the predict command that reproduces it; MoE models
// search expert parallelism; nothing qualifying says why, per cause.
// Expected values: the header and message texts are the specification;
// counts are derived by hand in the comments; reproduced figures come from
// running `predict` itself.
#include <doctest/doctest.h>

#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ridgeline/search/search.hpp"
#include "ridgeline/uncertainty/interval.hpp"
#include "test_support.hpp"

using namespace ridgeline;
using nlohmann::json;

namespace {

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

const std::string k8b = "search --model llama3_8b --gpu h100_sxm --gpus 8 --global-batch 64 --threads 2";

json run_json(const std::string& args) {
  const auto r = test::run_cli(args + " --format json");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  return json::parse(r.out);
}

/// 80 GiB x (1 - 5%) = 76 GiB, the h100_sxm profile's capacity less the default headroom.
constexpr double kLimit80 = 80.0 * 1024 * 1024 * 1024 * 0.95;

}  // namespace

TEST_SUITE("search planning") {

TEST_CASE("the header names the searched and the fixed dimensions and the headroom") {
  const auto r = test::run_cli(k8b + " --top 3");
  REQUIRE(r.status == 0);
  const auto l = lines(r.out);
  REQUIRE(l.size() > 4);
  CHECK(l[0] == "Llama-3-8B on 8 x NVIDIA H100 SXM5 80GB, global batch 64, sequence 8192; objective time");
  // Precision is not searched unless asked; the framework is the plan's.
  CHECK(l[1] == "searched: tp, pp, dp, cp, mb, vpp, zero, recompute; fixed: precision bf16, framework megatron");
  // The tokens the days and cost are for (none given: Chinchilla's 20 per parameter).
  CHECK(l[2] == "days and cost: for 20 tokens per parameter (Chinchilla; --tokens sets the run)");
  CHECK(l[3] == "memory headroom 5%: a layout qualifies when its peak memory's upper end is at most 76.0 GiB of "
                "80.0 GiB");
}

TEST_CASE("a plan flag given is fixed: --micro-batch, --recompute, --precision pin their dimensions") {
  const auto j = run_json(k8b + " --micro-batch 2 --recompute full --precision bf16 --top 5");
  const auto& q = j["query"];
  CHECK(q["searched"] == json({"tp", "pp", "dp", "cp", "vpp", "zero"}));
  REQUIRE(j["top"].size() == 5);
  for (const auto& row : j["top"]) {
    CHECK(row["micro_batch"] == 2);
    CHECK(row["recompute"] == "full");
    CHECK(row["precision"] == "bf16");
  }
  const auto t = lines(test::run_cli(k8b + " --micro-batch 2 --recompute full --top 1").out);
  REQUIRE(t.size() > 1);
  CHECK(t[1] == "searched: tp, pp, dp, cp, vpp, zero; fixed: mb 2, recompute full, precision bf16, framework megatron");
  // --fix means the same as the flag.
  const auto f = run_json(k8b + " --fix micro_batch=2 --fix recompute=full --top 5");
  CHECK(f["query"]["searched"] == q["searched"]);
  CHECK(f["top"] == j["top"]);
}

TEST_CASE("--search lists exactly the dimensions searched; the rest take the plan's values") {
  const auto r = test::run_cli(k8b + " --search tp,zero --top 3");
  REQUIRE(r.status == 0);
  const auto l = lines(r.out);
  // dp is what the 8 GPUs leave once TP is chosen (PP and CP are the plan's 1).
  CHECK(l[1] == "searched: tp, dp, zero; fixed: pp 1, cp 1, mb 1, vpp 1, recompute none, precision bf16, "
                "framework megatron");
  const auto j = run_json(k8b + " --search tp,zero --top 10");
  for (const auto& row : j["top"]) {
    CHECK(row["pp"] == 1);
    CHECK(row["cp"] == 1);
    CHECK(row["micro_batch"] == 1);
    CHECK(row["recompute"] == "none");
    CHECK(row["tp"].get<int>() * row["dp"].get<int>() == 8);
  }
  const auto bad = test::run_cli(k8b + " --search tp,zoom");
  CHECK(bad.status == 2);
  CHECK(bad.err == "error: --search: unknown dimension 'zoom'; expected tp, pp, dp, cp, ep, mb, vpp, zero, recompute, "
                   "precision, framework, tp_overlap, fp8_recipe, offload, recompute_layers, stages, sp, dispatcher\n");
  const auto both = test::run_cli(k8b + " --search tp,pp --tp 8");
  CHECK(both.status == 2);
  CHECK(both.err == "error: --search: tp is fixed by --tp; leave it out of --search or drop the flag\n");
}

TEST_CASE("--search +NAME and -NAME change the default dimensions") {
  // The defaults (no --search): tp, pp, dp, cp, mb, vpp, zero, recompute.
  // +precision,+framework adds two; -zero,-vpp takes two, which then take
  // the plan's values (ZeRO 0, 1 virtual stage).
  const auto r = test::run_cli(k8b + " --search +precision,+framework,-zero,-vpp --top 3");
  REQUIRE(r.status == 0);
  const auto l = lines(r.out);
  CHECK(l[1] == "searched: tp, pp, dp, cp, mb, recompute, precision, framework; fixed: vpp 1, zero 0");
  const auto j = run_json(k8b + " --search +precision,-zero --top 10");
  REQUIRE(!j["top"].empty());
  for (const auto& row : j["top"]) CHECK(row["zero"] == 0);
  const auto mixed = test::run_cli(k8b + " --search tp,+precision");
  CHECK(mixed.status == 2);
  CHECK(mixed.err == "error: --search: either list exactly the dimensions to search (tp,pp,zero) or change the "
                     "defaults (+precision,-zero), not both\n");
  const auto dp = test::run_cli(k8b + " --search -dp");
  CHECK(dp.status == 2);
  CHECK(dp.err == "error: --search: dp is what the GPU count leaves; give --dp to fix it\n");
  const auto given = test::run_cli(k8b + " --search +precision --precision bf16");
  CHECK(given.status == 2);
  CHECK(given.err == "error: --search: precision is fixed by --precision; leave it out of --search or drop the flag\n");
}

TEST_CASE("fp8 only when allowed: never by default, never for QLoRA, never where the GPU has none") {
  // The document is bound first: ranging over a member of a temporary would outlive it.
  const auto top20 = run_json(k8b + " --top 20");
  for (const auto& row : top20["top"]) CHECK(row["precision"] == "bf16");
  const auto h100 = test::gpu("h100_sxm"), a100 = test::gpu("a100_sxm_80gb");
  spec::PlanSpec full, qlora;
  qlora.finetune.mode = spec::FinetuneMode::kQlora;
  using P = spec::Precision;
  CHECK(search::searchable_precisions(h100, full) == std::vector<P>{P::kBf16, P::kFp8});
  CHECK(search::searchable_precisions(h100, qlora) == std::vector<P>{P::kBf16});
  CHECK(search::searchable_precisions(a100, full) == std::vector<P>{P::kBf16});
  // Asked for: --search precision tries fp8 on the H100.
  const auto j = run_json(k8b + " --search tp,dp,precision --top 1");
  CHECK(j["query"]["searched"] == json({"tp", "dp", "precision"}));
  // A fixed fp8 the GPU cannot run is an impossible request.
  const auto r = test::run_cli("search --gpu a100_sxm_80gb --gpus 8 --global-batch 64 --precision fp8");
  CHECK(r.status == 2);
  CHECK(r.err == "error: --precision: fp8 needs fp8 tensor cores; NVIDIA A100 SXM4 80GB has none\n");
  const auto q = test::run_cli("search --gpus 1 --global-batch 1 --finetune qlora --precision fp8");
  CHECK(q.status == 2);
  CHECK(q.err == "error: --precision: qlora with fp8 is not supported: the NF4 base weights are dequantized to bf16 "
                 "for every GEMM\n");
}

TEST_CASE("invalid fixed values are an impossible request, exit 2, named by the flag used") {
  const auto tp = test::run_cli(k8b + " --tp 3");
  CHECK(tp.status == 2);
  CHECK(tp.err == "error: --tp: TP 3 does not divide 32 attention heads\n");
  const auto fix = test::run_cli(k8b + " --fix tp=3");
  CHECK(fix.status == 2);
  CHECK(fix.err == "error: --fix tp: TP 3 does not divide 32 attention heads\n");
  const auto h = test::run_cli(k8b + " --headroom lots");
  CHECK(h.status == 2);
  CHECK(h.err == "error: --headroom: expected a percentage such as 10%, got \"lots\"\n");
}

TEST_CASE("headroom: every row's peak-memory upper end is within capacity x (1 - headroom)") {
  // memory_upper_bytes is memory_interval's upper end, without its text.
  const auto hw = test::gpu("h100_sxm");
  const auto m = test::model("llama3_8b");
  auto p = test::plan(2, 8192);
  p.parallel.dp = 1;
  const auto pred = engine::evaluate(m, p, hw);
  CHECK(search::memory_upper_bytes(pred.memory) == uncertainty::memory_interval(pred.memory).hi);

  const auto j5 = run_json(k8b + " --top 10");
  CHECK(j5["query"]["headroom"] == 0.05);
  for (const auto& row : j5["top"]) CHECK(row["peak_memory_hi_bytes"].get<double>() <= kLimit80);
  const auto j30 = run_json(k8b + " --top 10 --headroom 30%");
  CHECK(j30["query"]["headroom"] == doctest::Approx(0.3));
  for (const auto& row : j30["top"])
    CHECK(row["peak_memory_hi_bytes"].get<double>() <= 80.0 * 1024 * 1024 * 1024 * 0.7);
  // More headroom leaves no more qualifying configurations.
  const auto ok = [](const json& j) { return j["counts"]["evaluated"].get<long>() - j["counts"]["infeasible"].get<long>(); };
  CHECK(ok(j30) <= ok(j5));
  // What fails memory at 5% fails it at 30%, pruned there by the model-state bound or over memory.
  const auto out_of_memory = [](const json& j) {
    return j["counts"]["over_memory"].get<double>() + j["counts"]["model_state"].get<double>();
  };
  CHECK(out_of_memory(j30) >= out_of_memory(j5));
}

TEST_CASE("exact ties collapse into one row listing the variants; --top 3 is the first 3 rows of --top 10") {
  search::Candidate c;
  c.layout.cp = 1;
  c.layout.recompute = {spec::RecomputeKind::kSelective, 0};
  search::Layout other = c.layout;
  other.cp = 2;
  other.recompute = {spec::RecomputeKind::kNone, 0};
  c.equivalent = {other};
  CHECK(search::tie_text(c) == "CP1/CP2 · selective/none");
  c.equivalent.clear();
  CHECK(search::tie_text(c) == "");

  const std::string k8b_unthreaded = "search --model llama3_8b --gpu h100_sxm --gpus 8 --global-batch 64";
  const auto three = run_json(k8b_unthreaded + " --top 3 --threads 1");
  const auto ten = run_json(k8b_unthreaded + " --top 10 --threads 3");
  REQUIRE(three["top"].size() == 3);
  REQUIRE(ten["top"].size() == 10);
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(three["top"][i] == ten["top"][i]);
  }
  // No two rows are an exact tie (they would be one row).
  for (size_t i = 1; i < ten["top"].size(); ++i)
    CHECK_FALSE((ten["top"][i]["step_time_s"] == ten["top"][i - 1]["step_time_s"] &&
                 ten["top"][i]["peak_memory_bytes"] == ten["top"][i - 1]["peak_memory_bytes"]));
}

TEST_CASE("merge collapses ties across parts into one row, whichever part held each layout") {
  std::vector<search::Candidate> all;
  for (int cp : {1, 2})
    for (auto kind : {spec::RecomputeKind::kNone, spec::RecomputeKind::kSelective}) {
      search::Candidate c;
      c.layout.cp = cp;
      c.layout.recompute = {kind, 0};
      c.score = c.step_time_s = 1.0;
      c.memory_bytes = 10;
      all.push_back(c);
    }
  search::Candidate slower;
  slower.score = slower.step_time_s = 2.0;
  all.push_back(slower);
  search::SearchResult a, b;
  a.top = {all[3], all[0]};
  b.top = {all[1], all[2], all[4]};
  const auto m = search::merge({a, b}, 5);
  REQUIRE(m.top.size() == 2);
  // The row is the plainest layout (CP1, none); its ties in rank order.
  CHECK(m.top[0].layout.cp == 1);
  CHECK(m.top[0].layout.recompute.kind == spec::RecomputeKind::kNone);
  CHECK(search::tie_text(m.top[0]) == "CP1/CP2 · none/selective");
  CHECK(m.top[1].step_time_s == 2.0);
  CHECK(search::merge({a, b}, 1).top.size() == 1);
}

TEST_CASE("each row's predict command reproduces its step time and memory; --explain prints it") {
  const auto j = run_json(k8b + " --top 3");
  for (const auto& row : j["top"]) {
    const std::string cmd = row["predict_command"];
    CAPTURE(cmd);
    REQUIRE(cmd.starts_with("ridgeline predict --gpu h100_sxm --model llama3_8b "));
    // SP stated either way, so predict's own default does not matter.
    CHECK((cmd.find(" --sp") != std::string::npos || cmd.find(" --no-sp") != std::string::npos));
    const auto p = test::run_cli(cmd.substr(std::string("ridgeline ").size()) + " --format json");
    REQUIRE_MESSAGE(p.status == 0, p.err);
    const auto pj = json::parse(p.out);
    CHECK(pj["step"]["step_time_s"].get<double>() == doctest::Approx(row["step_time_s"].get<double>()).epsilon(1e-9));
    // predict prints whole bytes.
    CHECK(pj["memory"]["peak_memory_bytes"].get<double>() ==
          doctest::Approx(row["peak_memory_bytes"].get<double>()).epsilon(1e-9));
  }
  const auto t = test::run_cli(k8b + " --top 3 --explain 2");
  REQUIRE(t.status == 0);
  CHECK(t.out.find("\nrow 2 as a predict command:\n  " + j["top"][1]["predict_command"].get<std::string>() + "\n") !=
        std::string::npos);
  const auto bad = test::run_cli(k8b + " --top 3 --explain 4");
  CHECK(bad.status == 2);
  CHECK(bad.err == "error: --explain: row 4 does not exist; the search shows 3 rows\n");
}

TEST_CASE("expert parallelism is searched for a mixture-of-experts model") {
  // Mixtral 8x7B: 8 experts, so EP in {1, 2, 4, 8}, each dividing DP x CP.
  const auto j = run_json("search --model mixtral_8x7b --gpu h100_sxm --gpus 16 --global-batch 64 --seq 4096 "
                          "--threads 2 --top 10");
  const auto& s = j["query"]["searched"];
  CHECK(std::find(s.begin(), s.end(), "ep") != s.end());
  REQUIRE(!j["top"].empty());
  for (const auto& row : j["top"]) {
    const int ep = row["ep"];
    CHECK(8 % ep == 0);
    CHECK((row["dp"].get<int>() * row["cp"].get<int>()) % ep == 0);
  }
  // A dense model has no EP to search and none to show.
  CHECK(run_json(k8b + " --top 1")["query"]["searched"] == json({"tp", "pp", "dp", "cp", "mb", "vpp", "zero",
                                                                  "recompute"}));
  const auto dense = test::run_cli(k8b + " --ep 2");
  CHECK(dense.status == 2);
  CHECK(dense.err == "error: --ep: expert parallelism needs a mixture-of-experts model\n");
}

TEST_CASE("nothing qualifies: counts per cause; exit 2 for an impossible request, 1 for does not fit") {
  // 7 GPUs, batch 64. Enumerated: TP 6 values x PP {1, 2, 4} (divisors of 32
  // up to 7) x CP 4 x mb 5 x recompute 3 = 1,080 graphs x (vpp 3 x ZeRO 4) =
  // 12,960 layouts. Only TP = PP = CP = 1 divides 7 GPUs: 5 x 3 = 15 graphs,
  // 180 layouts, all with DP 7, and 64 is no multiple of mb x 7.
  const auto r = test::run_cli("search --model llama3_8b --gpus 7 --global-batch 64 --threads 1 --wide");
  CHECK(r.status == 2);
  const auto l = lines(r.out);
  REQUIRE(l.size() >= 9);
  CHECK(l[5] == "");
  CHECK(l[6] == "no configuration qualifies; 12,960 layouts:");
  CHECK(l[7] == "  12,780 do not divide (TP x PP x CP does not divide the GPU count, or TP, PP, CP or EP does not "
                "divide the heads, layers, sequence or experts)");
  CHECK(l[8] == "  180 have a global batch of 64 that is not a multiple of micro-batch x DP");

  // GPT-3 175B on 8 H100s: the model state alone cannot fit. Its 174.6B
  // parameters x 18 bytes (bf16 weights, Megatron's fp32 main gradients, fp32
  // master and two Adam moments) = 3.14 TB, over 76 GiB = 81.6 GB per GPU: at
  // least 39 GPUs at ZeRO-3 (3.143e12 / 81.6e9 = 38.5).
  const auto s = test::run_cli("search --model gpt3_175b --gpus 8 --global-batch 64 --seq 2048 --threads 1 --wide");
  CHECK(s.status == 1);
  CHECK(s.out.find("; model state alone needs >= 39 GPUs at ZeRO-3") != std::string::npos);
  // F17: nothing qualifies for memory at 5% headroom: the way to use the whole card is named.
  CHECK(s.out.find("\n  --headroom 0 lets a layout use the whole 80.0 GiB") != std::string::npos);
  const auto j = json::parse(test::run_cli("search --model gpt3_175b --gpus 8 --global-batch 64 --seq 2048 "
                                           "--threads 1 --format json").out);
  CHECK(j["state_min_gpus"] == 39);
  CHECK(j["top"].empty());
}

TEST_CASE("search --gpu a,b searches each GPU and prints one best row per GPU; no price is unknown") {
  // A copy of the H100 profile without its price.
  std::string text = test::shipped_text("h100_sxm");
  text = test::edited(text, "price_per_gpu_hour: 2.99 USD/h\n", "");
  const size_t at = text.find("  price_per_gpu_hour: \"");
  REQUIRE(at != std::string::npos);
  text.erase(at, text.find('\n', at) + 1 - at);
  const std::string file = fmt::format("/tmp/ridgeline_noprice_{}.yaml", ::getpid());
  {
    std::ofstream out(file);
    out << text;
  }
  const std::string q = "search --model llama3_8b --gpus 8 --global-batch 64 --threads 2 --gpu h100_sxm,a100_sxm_80gb," + file;
  const auto t = test::run_cli(q);
  const auto j = test::run_cli(q + " --format json");
  const auto c = test::run_cli(q + " --format csv");
  std::filesystem::remove(file);
  REQUIRE_MESSAGE(t.status == 0, t.err);
  const auto l = lines(t.out);
  CHECK(l[0] == "Llama-3-8B on 8 GPUs of each kind, global batch 64, sequence 8192; objective time; one best row per GPU");
  const auto row_of = [&](const std::string& gpu) {
    for (const auto& x : l)
      if (x.starts_with("  " + gpu + " ")) return x;
    return std::string();
  };
  CHECK(!row_of("h100_sxm").empty());
  CHECK(!row_of("a100_sxm_80gb").empty());
  const std::string none = row_of(fmt::format("ridgeline_noprice_{}", ::getpid()));
  REQUIRE(!none.empty());
  CHECK(none.ends_with("unknown  unknown"));
  CHECK(none.find("$0.00") == std::string::npos);
  // Each GPU's best row is that GPU's own search's best.
  const auto one = run_json("search --model llama3_8b --gpus 8 --global-batch 64 --threads 2 --gpu a100_sxm_80gb --top 1");
  const auto jj = json::parse(j.out);
  REQUIRE(jj["gpus"].size() == 3);
  CHECK(jj["gpus"][1]["top"][0]["step_time_s"] == one["top"][0]["step_time_s"]);
  CHECK(jj["gpus"][2]["top"][0]["cost_usd"].is_null());
  CHECK(jj["gpus"][2]["tokens_per_usd"].is_null());
  // tokens per dollar = tokens/s x 3600 / (8 GPUs x $2.99 per GPU-hour).
  const auto& h = jj["gpus"][0];
  CHECK(h["tokens_per_usd"].get<double>() ==
        doctest::Approx(h["top"][0]["tokens_per_s"].get<double>() * 3600 / (8 * 2.99)));
  const auto cl = lines(c.out);
  REQUIRE(cl.size() == 4);
  CHECK(cl[3].find(",,") != std::string::npos);  // cost and tokens/$ empty
}

TEST_CASE("--deadline finds the fewest GPUs that finish in time; --budget the fastest count that fits the budget") {
  // 8B on 1T tokens within 30 days: the answer N must finish in time and
  // the count tried before it (N - 8 for N > 8, else N / 2) must not.
  const std::string base = "search --model llama3_8b --global-batch 256 --tokens 1T --threads 2";
  const auto r = test::run_cli(base + " --deadline 30d --top 1");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const auto head = lines(r.out).front();
  CAPTURE(head);
  REQUIRE(head.starts_with("deadline 30d: fewest is "));
  const int n = std::stoi(head.substr(std::string("deadline 30d: fewest is ").size()));
  const auto at = [&](int g) {
    const auto x = test::run_cli(base + fmt::format(" --gpus {} --top 1 --format json", g));
    const auto j = json::parse(x.out);
    return j["top"].empty() ? 1e300 : j["top"][0]["wall_clock_days"].get<double>();
  };
  CHECK(at(n) <= 30);
  const int before = n > 8 ? n - 8 : n / 2;
  if (before >= 1) CHECK(at(before) > 30);

  const auto b = test::run_cli(base + " --budget 500K --max-gpus 256 --top 1 --format json");
  REQUIRE_MESSAGE(b.status == 0, b.err);
  CHECK(json::parse(b.out)["top"][0]["cost_usd"].get<double>() <= 500e3);
  const auto bad = test::run_cli(base + " --deadline 2w");
  CHECK(bad.status == 2);
  CHECK(bad.err == "error: --deadline: expected a duration such as 14d or 36h, got \"2w\"\n");
  const auto bb = test::run_cli(base + " --budget lots");
  CHECK(bb.status == 2);
  CHECK(bb.err == "error: --budget: expected US dollars such as 2M or 500K, got \"lots\"\n");
}

TEST_CASE("outputs: schema /2 names, CSV gpu/model/framework/tokens columns, Markdown, --set in the header") {
  const auto j = run_json(k8b + " --top 2 --set 'gpu.price_per_gpu_hour=3.00 USD/h'");
  CHECK(j["schema"] == "ridgeline.search/2");
  CHECK(j["query"]["set"] == json({"gpu.price_per_gpu_hour=3.00 USD/h"}));
  const auto& row = j["top"][0];
  for (const char* k : {"gpu", "model", "framework", "tokens", "peak_memory_bytes", "wall_clock_days", "cost_usd",
                        "step_time_s", "tokens_per_s", "mfu", "gpu_hours", "vpp", "predict_command"})
    CHECK_MESSAGE(row.contains(k), k);
  CHECK_FALSE(row.contains("memory_bytes"));
  CHECK_FALSE(row.contains("days"));
  CHECK(row["gpu"] == "h100_sxm");
  CHECK(row["model"] == "llama3_8b");
  CHECK(row["framework"] == "megatron");
  // $3.00 per GPU-hour: cost = GPU-hours x 3.
  CHECK(row["cost_usd"].get<double>() == doctest::Approx(row["gpu_hours"].get<double>() * 3.0));
  CHECK(row["predict_command"].get<std::string>().ends_with(" --set 'gpu.price_per_gpu_hour=3.00 USD/h'"));
  const auto t = lines(test::run_cli(k8b + " --top 2 --set 'gpu.price_per_gpu_hour=3.00 USD/h'").out);
  CHECK(t[2] == "set gpu.price_per_gpu_hour=3.00 USD/h");
  const auto c = lines(test::run_cli(k8b + " --top 2 --format csv").out);
  CHECK(c[0] == "rank,gpu,model,framework,tokens,tp,pp,dp,cp,ep,micro_batch,vpp,zero,sp,recompute,precision,"
                "step_time_s,step_time_lo_s,step_time_hi_s,mfu,hfu,peak_memory_bytes,tokens_per_s,tokens_per_s_lo,"
                "tokens_per_s_hi,wall_clock_days,gpu_hours,cost_usd,standing,distinguishable_from_best,equivalent,"
                "predict_command");
  CHECK(c[1].starts_with("1,h100_sxm,llama3_8b,megatron,"));
  const auto md = test::run_cli(k8b + " --top 2 --format markdown");
  REQUIRE(md.status == 0);
  CHECK(md.out.starts_with("## Search\n\n- Llama-3-8B on 8 x NVIDIA H100 SXM5 80GB"));
  CHECK(md.out.find("\n| # | TP | PP | DP | CP | SP | mb | v | ZeRO | recompute | prec | step |") != std::string::npos);
}

}  // TEST_SUITE

TEST_CASE("a fine-tune's search says its days and cost are per 1B tokens") {
  const std::string note =
      "days and cost: per 1B tokens for a fine-tune (it has no compute-optimal length; --tokens sets the run)\n";
  const auto lora = test::run_cli(k8b + " --finetune lora --top 1");
  REQUIRE(lora.status == 0);
  CHECK(lora.out.find(note) != std::string::npos);
  const auto given = test::run_cli(k8b + " --finetune lora --tokens 2B --top 1");
  REQUIRE(given.status == 0);
  CHECK(given.out.find("per 1B tokens") == std::string::npos);
}

// --deadline and --budget over several GPU kinds (issue 38, F11): each kind's
// answer is what its own single-GPU scan answers, and the winner is the
// cheapest of them (--objective cost) by the costs printed, not a choice of
// the view's own.
TEST_SUITE("search planning: what to rent") {

const std::string k8bScan = "search --model llama3_8b --global-batch 1M --seq 8192 --tokens 200B --threads 2";

TEST_CASE("a GPU list with --deadline answers per GPU kind as each kind's own scan does, and names the cheapest") {
  const json j = run_json(k8bScan + " --gpu h100_sxm,h200,b200 --deadline 7d --objective cost --max-gpus 256");
  REQUIRE(j.contains("scan"));
  CHECK(j["scan"]["kind"] == "deadline");
  CHECK(j["scan"]["by"] == "cost");
  REQUIRE(j["gpus"].size() == 3);
  double best_cost = 0;
  std::string best;
  for (const auto& g : j["gpus"]) {
    const std::string id = g["query"]["gpu"];
    REQUIRE_MESSAGE(!g["top"].empty(), id);
    const auto& row = g["top"][0];
    // The deadline: 7 days.
    CHECK(row["wall_clock_days"].get<double>() <= 7.0);
    // The same answer as the scan of this kind alone.
    const json one = run_json(k8bScan + " --gpu " + id + " --deadline 7d --objective cost --max-gpus 256");
    CHECK(g["query"]["gpus"] == one["query"]["gpus"]);
    CHECK(row["cost_usd"].get<double>() == one["top"][0]["cost_usd"].get<double>());
    if (best.empty() || row["cost_usd"].get<double>() < best_cost) best_cost = row["cost_usd"], best = id;
  }
  CHECK(j["scan"]["winner"] == best);
}

TEST_CASE("the table leads with the answer and states the token basis; --gpu all takes every priced profile") {
  const auto r = test::run_cli(k8bScan + " --gpu all --deadline 7d --objective cost --max-gpus 256");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const auto ls = lines(r.out);
  REQUIRE(!ls.empty());
  CHECK(ls[0].starts_with("deadline 7d: the cheapest is "));
  CHECK(r.out.find("days and cost: for 200B tokens (--tokens)\n") != std::string::npos);
  // Every shipped profile that states price_per_gpu_hour, counted from the files.
  int priced = 0, all = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(RIDGELINE_SOURCE_DIR) + "/hardware_profiles")) {
    if (e.path().extension() != ".yaml") continue;
    ++all;
    priced += test::slurp(e.path()).find("\nprice_per_gpu_hour:") != std::string::npos;
  }
  const json j = run_json(k8bScan + " --gpu all --deadline 7d --objective cost --max-gpus 256");
  CHECK(static_cast<int>(j["gpus"].size()) == priced);
  if (priced < all)
    CHECK(r.out.find(fmt::format("note: {} GPU profile{} without a price left out", all - priced,
                                 all - priced == 1 ? "" : "s")) != std::string::npos);
  // With --price every profile has one.
  const json every = run_json(k8bScan + " --gpu all --deadline 7d --objective cost --max-gpus 256 --price 2");
  CHECK(static_cast<int>(every["gpus"].size()) == all);
}

TEST_CASE("a note says when --max-gpus bounds the answer") {
  // $100M buys far more than 8 GPUs for 200B tokens: the fastest within it is at the cap.
  const auto at_cap = test::run_cli(k8bScan + " --gpu h100_sxm --budget 100M --max-gpus 8");
  REQUIRE_MESSAGE(at_cap.status == 0, at_cap.err);
  CHECK(at_cap.out.find("note: the answer is at --max-gpus 8 (the largest count tried); a larger --max-gpus may find "
                        "a faster one\n") != std::string::npos);
  // One GPU cannot train on 200B tokens in a day (Llama-3-8B: ~6 x 8e9 x 2e11 = 1e22 FLOP; an H100's 989
  // TFLOP/s dense bf16 peak does 8.5e19 a day): nothing qualifies up to the cap, which the note names.
  const auto none = test::run_cli(k8bScan + " --gpu h100_sxm --deadline 1d --max-gpus 1");
  CHECK(none.status == 1);
  CHECK(none.out.find("no GPU count up to 1 finishes the run within 1d") == 0);
  CHECK(none.out.find("note: --max-gpus 1 bounds the search; a larger --max-gpus tries more GPUs\n") !=
        std::string::npos);
}

}  // TEST_SUITE

TEST_CASE("search on an MoE model shows each row's all-to-all time; without a price no cost column") {
  const std::string args =
      "search --gpu h800_sxm --model deepseek_v3 --gpus 1024 --precision fp8 --seq 4096 --global-batch 4096 --top 5";
  const auto r = test::run_cli(args);
  REQUIRE(r.status == 0);
  CHECK(r.out.find(" EP ") != std::string::npos);
  CHECK(r.out.find(" a2a ") != std::string::npos);
  CHECK(r.out.find("cost: not shown, the profile has no price per GPU-hour (--price USD sets one)") !=
        std::string::npos);
  CHECK(r.out.find("unknown") == std::string::npos);
  const auto j = nlohmann::json::parse(test::run_cli(args + " --format json").out);
  bool ep_row = false;
  for (const auto& row : j["top"]) {
    // Under EP the row carries its all-to-all seconds; without EP it has none.
    CHECK(row.contains("all_to_all_s") == (row["ep"].get<int>() > 1));
    if (row["ep"].get<int>() > 1) {
      ep_row = true;
      CHECK(row["all_to_all_s"].get<double>() > 0);
    }
  }
  CHECK(ep_row);
}
