// What `predict` and the capacity report show of the framework-dependent
// results: the peak pipeline stage and both end stages' footprints, the
// caching allocator's reserve, the host's dispatch time and the SMs that
// overlapped collectives take.
//
// Expected values come from the model's own definitions, not from its
// output:
//  - 1F1B (Narayanan et al. 2021) keeps p micro-batches in flight on the
//    first stage and one on the last, so at PP 8 with 8 of Llama-3-8B's 32
//    layers' activations x 8 against x 1 (plus the last stage's logits) the
//    first stage peaks;
//  - reserved = allocated x (1 + allocator_reserve), the reserve as the
//    framework files state it: 0.10 in frameworks/hf.yaml, 0.05 in
//    frameworks/megatron.yaml; total = reserved + workspace;
//  - GPT-3 125M at sequence 128 on an H100 runs kernels of a few
//    microseconds, shorter than the Hugging Face Trainer's 10 us of eager
//    dispatch per launch (frameworks/hf.yaml), so the host sets the pace.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "ridgeline/memory/memory.hpp"
#include "ridgeline/report/capacity_text.hpp"
#include "ridgeline/report/capacity_view.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "test_support.hpp"

using namespace ridgeline;
using nlohmann::json;

namespace {

json predict_json(const std::string& args) {
  const auto r = test::run_cli("predict " + args + " --format json");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  return json::parse(r.out);
}

double bytes(const json& j, const char* key) { return j.at(key).get<double>(); }

}  // namespace

TEST_CASE("predict json: under PP 8 the first stage peaks and both end stages are shown") {
  const json j = predict_json("--model llama3_8b --gpu h100_sxm --pp 8 --dp 1 --global-batch 64");
  const json& m = j["memory"];
  CHECK(m["peak_stage"] == "first");
  REQUIRE(m.contains("first_stage"));
  REQUIRE(m.contains("last_stage"));
  const json& first = m["first_stage"];
  const json& last = m["last_stage"];
  CHECK(bytes(first, "total_bytes") > bytes(last, "total_bytes"));
  // The peak is the first stage's, category by category.
  CHECK(bytes(m, "peak_memory_bytes") == doctest::Approx(bytes(first, "total_bytes")));
  for (const auto& c : memory::kMemoryCategories) {
    const std::string key(c.json_key);
    CAPTURE(key);
    REQUIRE(first.contains(key));
    REQUIRE(last.contains(key));
    CHECK(first[key].get<double>() == doctest::Approx(m[key].get<double>()));
  }
  // Each stage's categories sum to its total.
  for (const json* s : {&first, &last}) {
    double sum = 0;
    for (const auto& c : memory::kMemoryCategories) sum += bytes(*s, c.json_key.data());
    CHECK(sum == doctest::Approx(bytes(*s, "total_bytes")));
  }
  CHECK(first["in_flight_microbatches"].get<double>() == 8);
  CHECK(last["in_flight_microbatches"].get<double>() == 1);

  const auto table = test::run_cli("predict --model llama3_8b --gpu h100_sxm --pp 8 --dp 1 --global-batch 64");
  CHECK(table.out.find("(peak on the first pipeline stage; first ") != std::string::npos);
}

TEST_CASE("predict json: without PP the only stage, no stage objects") {
  const json j = predict_json("--model gpt3_125m --seq 128");
  CHECK(j["memory"]["peak_stage"] == "only");
  CHECK_FALSE(j["memory"].contains("first_stage"));
  CHECK_FALSE(j["memory"].contains("last_stage"));
  CHECK(j["plan"]["framework"] == "megatron");
}

TEST_CASE("predict json: a Hugging Face Trainer step on a tiny model is host-bound") {
  const json j = predict_json("--framework hf --model gpt3_125m --seq 128");
  CHECK(j["plan"]["framework"] == "hf");
  const json& s = j["step"];
  CHECK(s["host_bound"] == true);
  // The micro-batch lasts as long as its dispatch.
  CHECK(s["host_s"].get<double>() == doctest::Approx(s["micro_batches"].get<double>() *
                                                     s["microbatch_time_s"].get<double>()));
  CHECK(s["comm_slowdown_s"].get<double>() == 0);  // one GPU: no collectives

  const auto table = test::run_cli("predict --framework hf --model gpt3_125m --seq 128");
  CHECK(table.out.find("(host-bound: the GPU waits for the framework's Python dispatch)") != std::string::npos);
  CHECK(table.out.find("(hf allocator reserve 10.0%)") != std::string::npos);
}

TEST_CASE("predict json: reserved = allocated x (1 + the framework's allocator reserve)") {
  struct Case {
    const char* framework;
    double reserve;  // frameworks/NAME.yaml allocator_reserve
  };
  for (const Case c : {Case{"hf", 0.10}, Case{"megatron", 0.05}}) {
    CAPTURE(c.framework);
    const json m = predict_json(std::string("--framework ") + c.framework + " --model gpt3_125m --seq 128")["memory"];
    CHECK(m["allocator_reserve"].get<double>() == doctest::Approx(c.reserve));
    const double allocated = bytes(m, "allocated_bytes");
    CHECK(allocated == doctest::Approx(bytes(m, "weights_bytes") + bytes(m, "gradients_bytes") +
                                       bytes(m, "master_weights_bytes") + bytes(m, "optimizer_bytes") +
                                       bytes(m, "activations_bytes") + bytes(m, "buffers_bytes")));
    CHECK(bytes(m, "reserved_bytes") == doctest::Approx(allocated * (1 + c.reserve)));
    CHECK(bytes(m, "fragmentation_bytes") == doctest::Approx(allocated * c.reserve));
    CHECK(bytes(m, "peak_memory_bytes") == doctest::Approx(bytes(m, "reserved_bytes") + bytes(m, "workspace_bytes")));
  }
}

TEST_CASE("capacity report: the framework, its allocator reserve and both pipeline stages") {
  // DeepSpeed (its PipelineEngine) with its 10% reserve; the Hugging Face
  // Trainer, with the same reserve, runs no pipeline parallelism.
  const auto hw = test::gpu("h100_sxm");
  const auto m = test::model("llama3_8b");
  report::CapacityInputs in;
  in.gpu = &hw;
  in.model = &m;
  REQUIRE(spec::apply_setting(in.plan, "framework", "deepspeed") == "");
  in.plan.parallel.pp = 4;
  in.plan.global_batch = 16;
  in.prediction = engine::evaluate(m, in.plan, hw);
  REQUIRE(in.prediction.status != engine::Status::kInvalid);
  const report::CapacityView v = report::make_capacity_view(in);

  CHECK(v.plan.framework_id == "deepspeed");
  bool cited = false;
  for (const auto& a : v.assumptions)
    if (a.name == "Fragmentation allowance") {
      cited = true;
      CHECK(a.value == "10.0% of allocated memory: reserved = allocated x 1.1");
      CHECK(a.source.find("frameworks/deepspeed.yaml allocator_reserve") != std::string::npos);
    }
  CHECK(cited);
  bool plan_fact = false;
  for (const auto& f : report::text::question(v))
    if (f.label == "Plan") {
      plan_fact = true;
      CHECK(f.note.find("frameworks/deepspeed.yaml") != std::string::npos);
    }
  CHECK(plan_fact);

  const auto t = report::text::memory_breakdown(v);
  REQUIRE(t.head.size() == 3);
  CHECK(t.head[1] == (v.answer.memory.peak_stage == "first" ? "first stage (peak)" : "first stage"));
  CHECK(t.head[2] == (v.answer.memory.peak_stage == "last" ? "last stage (peak)" : "last stage"));

  const json j = report::capacity_json(v);
  const json& mj = j["answer"]["memory"];
  CHECK(mj["peak_stage"] == v.answer.memory.peak_stage);
  CHECK(mj["first_stage"]["total_bytes"].get<double>() == doctest::Approx(v.answer.memory.first_stage.total));
  CHECK(mj["last_stage"]["total_bytes"].get<double>() == doctest::Approx(v.answer.memory.last_stage.total));
  CHECK(j["question"]["plan"]["framework"]["id"] == "deepspeed");
  CHECK(j["answer"].contains("host_s"));
}
