// The JSON outputs against their JSON Schema files (docs/schemas/*.schema.json,
// draft 2020-12), with a small validator of the keywords those files use:
// type (a name or a list of names), properties, required, items, enum and
// additionalProperties (false or a schema). No Debian package ships a JSON
// Schema validator for C++, so the subset is implemented here and tested on
// its own first.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>
#include <unistd.h>

#include "test_support.hpp"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

bool has_type(const json& v, const std::string& t) {
  if (t == "null") return v.is_null();
  if (t == "boolean") return v.is_boolean();
  if (t == "string") return v.is_string();
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "number") return v.is_number();
  // JSON Schema: an integer is a number without a fractional part (1.0 is one).
  if (t == "integer") return v.is_number_integer() || (v.is_number_float() && v.get<double>() == std::floor(v.get<double>()));
  return false;
}

/// Appends "PATH: what is wrong" for each violation of `schema` by `v`.
void validate(const json& schema, const json& v, const std::string& path, std::vector<std::string>& errors) {
  if (schema.contains("type")) {
    const json& t = schema["type"];
    bool ok = false;
    std::string names;
    for (const auto& n : t.is_array() ? t : json::array({t})) {
      ok = ok || has_type(v, n.get<std::string>());
      names += (names.empty() ? "" : " or ") + n.get<std::string>();
    }
    if (!ok) {
      errors.push_back(path + ": expected " + names + ", got " + v.dump());
      return;
    }
  }
  if (schema.contains("enum")) {
    bool ok = false;
    for (const auto& e : schema["enum"]) ok = ok || e == v;
    if (!ok) errors.push_back(path + ": " + v.dump() + " is not one of " + schema["enum"].dump());
  }
  if (v.is_object()) {
    if (schema.contains("required"))
      for (const auto& k : schema["required"])
        if (!v.contains(k.get<std::string>())) errors.push_back(path + ": missing '" + k.get<std::string>() + "'");
    const json props = schema.value("properties", json::object());
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string p = path + "." + it.key();
      if (props.contains(it.key())) validate(props[it.key()], it.value(), p, errors);
      else if (schema.contains("additionalProperties")) {
        const json& a = schema["additionalProperties"];
        if (a.is_boolean() && !a.get<bool>()) errors.push_back(p + ": not in the schema");
        else if (a.is_object()) validate(a, it.value(), p, errors);
      }
    }
  }
  if (v.is_array() && schema.contains("items"))
    for (size_t i = 0; i < v.size(); ++i) validate(schema["items"], v[i], path + "[" + std::to_string(i) + "]", errors);
}

std::vector<std::string> errors_of(const json& schema, const json& v) {
  std::vector<std::string> e;
  validate(schema, v, "$", e);
  return e;
}

json load_schema(const std::string& name) {
  std::ifstream in(fs::path(RIDGELINE_SOURCE_DIR) / "docs/schemas" / (name + ".schema.json"));
  REQUIRE(in.good());
  return json::parse(in);
}

/// The command's standard output as JSON, its status at most `max_rc`.
json output_of(const std::string& args, int max_rc = 1) {
  const auto r = ridgeline::test::run_cli(args);
  INFO(args, "\n", r.err);
  REQUIRE(r.status <= max_rc);
  return json::parse(r.out);
}

void check_valid(const json& schema, const json& doc, const std::string& what) {
  const auto e = errors_of(schema, doc);
  std::string all;
  for (const auto& x : e) all += x + "\n";
  INFO(what, "\n", all);
  CHECK(e.empty());
}

}  // namespace

TEST_SUITE("schemas") {

TEST_CASE("schemas: the validator reports each keyword's violation") {
  const json s = json::parse(R"({
    "type": "object", "required": ["a", "b"], "additionalProperties": false,
    "properties": {
      "a": {"type": "integer"},
      "b": {"type": ["number", "null"]},
      "c": {"enum": ["ok", "invalid"]},
      "d": {"type": "array", "items": {"type": "string"}},
      "e": {"type": "object", "additionalProperties": {"type": "boolean"}}
    }})");
  CHECK(errors_of(s, json::parse(R"({"a": 1, "b": null, "c": "ok", "d": ["x"], "e": {"k": true}})")).empty());
  CHECK(errors_of(s, json::parse(R"({"a": 2.0, "b": 0.5})")).empty());  // 2.0 is an integer
  CHECK(errors_of(s, json::parse(R"({"a": 1.5, "b": 1})")) ==
        std::vector<std::string>{"$.a: expected integer, got 1.5"});
  CHECK(errors_of(s, json::parse(R"({"a": 1})")) == std::vector<std::string>{"$: missing 'b'"});
  CHECK(errors_of(s, json::parse(R"({"a": 1, "b": "x"})")) ==
        std::vector<std::string>{"$.b: expected number or null, got \"x\""});
  CHECK(errors_of(s, json::parse(R"({"a": 1, "b": 1, "c": "maybe"})")) ==
        std::vector<std::string>{"$.c: \"maybe\" is not one of [\"ok\",\"invalid\"]"});
  CHECK(errors_of(s, json::parse(R"({"a": 1, "b": 1, "d": ["x", 3]})")) ==
        std::vector<std::string>{"$.d[1]: expected string, got 3"});
  CHECK(errors_of(s, json::parse(R"({"a": 1, "b": 1, "e": {"k": 1}})")) ==
        std::vector<std::string>{"$.e.k: expected boolean, got 1"});
  CHECK(errors_of(s, json::parse(R"({"a": 1, "b": 1, "z": 0})")) == std::vector<std::string>{"$.z: not in the schema"});
  CHECK(errors_of(s, json::parse("[]")) == std::vector<std::string>{"$: expected object, got []"});
}

TEST_CASE("schemas: each schema file is a draft 2020-12 schema naming its output's schema string") {
  for (const auto& [name, id] : std::vector<std::pair<std::string, std::string>>{
           {"prediction", "ridgeline.prediction/2"}, {"search", "ridgeline.search/2"},
           {"compare", "ridgeline.compare/2"}, {"advice", "ridgeline.advice/1"}}) {
    CAPTURE(name);
    const json s = load_schema(name);
    CHECK(s["$schema"] == "https://json-schema.org/draft/2020-12/schema");
    CHECK(s["properties"]["schema"]["enum"] == json::array({id}));
    CHECK(s["type"] == "object");
  }
}

TEST_CASE("schemas: predict's JSON validates against prediction.schema.json") {
  const json s = load_schema("prediction");
  for (const std::string args : {
           "predict --dp 8 --zero 3 --global-batch 8 --format json",
           "predict --dp 8 --zero 3 --global-batch 8 --precision fp8 --format json",
           "predict --pp 4 --dp 2 --vpp 2 --global-batch 64 --format json",
           "predict --finetune lora --micro-batch 2 --seq 4096 --format json",
           "predict --finetune qlora --gpu rtx_4090 --seq 2048 --dataset-tokens 2B --format json",
           "predict --dp 8 --zero 3 --micro-batch max --format json",
           "predict --format json",  // does not fit
           "predict --gpu a100_sxm_80gb --model gpt3_1.3b --seq 2048 --micro-batch 4 --tokens 300B --format json",
           // An MoE plan under EP: step.all_to_all_s.
           "predict --gpu h800_sxm --model deepseek_v3 --precision fp8 --pp 16 --first-stage-layers 1 --ep 64 "
           "--dp 128 --zero 1 --global-batch 15360 --format json"}) {
    check_valid(s, output_of(args), args);
  }
  // An invalid plan: {schema, status, problem}, exit 2.
  const auto r = ridgeline::test::run_cli("predict --tp 3 --format json");
  CHECK(r.status == 2);
  check_valid(s, json::parse(r.out), "predict --tp 3");
}

// search and compare rows in the common scheme (ridgeline.search/2, ridgeline.compare/2).
TEST_CASE("schemas: search's JSON validates against search.schema.json") {
  const json s = load_schema("search");
  for (const std::string args : {"search --gpus 8 --global-batch 64 --format json",
                                 "search --gpus 64 --global-batch 512 --model llama3_70b --top 5 --format json",
                                 // EP rows carry all_to_all_s.
                                 "search --gpu h800_sxm --model deepseek_v3 --gpus 1024 --precision fp8 --seq 4096 "
                                 "--global-batch 4096 --top 3 --format json"})
    check_valid(s, output_of(args), args);
}

TEST_CASE("schemas: compare's JSON validates against compare.schema.json") {
  const json s = load_schema("compare");
  for (const std::string args :
       {"compare --dp 8 --zero 3 --global-batch 8 --vary recompute=none,selective,full --format json",
        "compare --dp 8 --zero 3 --global-batch 8 --vary tp=1,3,8 --format json"})
    check_valid(s, output_of(args), args);
}

TEST_CASE("schemas: advise's JSON validates against advice.schema.json") {
  const json s = load_schema("advice");
  for (const std::string args :
       {"advise --dp 8 --zero 2 --global-batch 64 --format json",
        "advise --gpu h100_sxm --model llama3_70b --tp 8 --pp 4 --dp 16 --global-batch 2048 --format json",
        "advise --gpu rtx_4090 --finetune lora --seq 2048 --recompute full --format json",
        "advise --dp 8 --global-batch 64 --format json",  // does not fit
        // imported: each suggestion's edit, the edits object
        "advise --model llama3_8b --dp 8 --from-torchtitan tests/data/launch/torchtitan_llama3_8b.toml --format json",
        "advise --model llama3_8b --from-megatron tests/data/launch/megatron_llama3_8b_h100_fp8.sh --format json"})
    check_valid(s, output_of(args, 0), args);
  const auto r = ridgeline::test::run_cli("advise --tp 3 --format json");
  CHECK(r.status == 2);
  check_valid(s, json::parse(r.out), "advise --tp 3");
}

TEST_CASE("schemas: the calibration object of --calibration validates, applied or not") {
  // A stack calibration fitted to the sample runs (tests/data/runs/).
  const std::string stack = (fs::temp_directory_path() / ("ridgeline_schema_stack_" + std::to_string(::getpid()) +
                                                          ".yaml")).string();
  REQUIRE(ridgeline::test::run_cli("calibrate --runs tests/data/runs/runs.yaml -o " + stack).status == 0);
  const std::string plan = " --framework torchtitan --dp 8 --zero 3 --global-batch 64 --recompute op --calibration " +
                           stack + " --format json";
  for (const std::string gpu : {"h100_sxm", "h200"}) {
    const std::string args = "predict --gpu " + gpu + plan;
    const json doc = output_of(args);
    CHECK(doc.contains("calibration"));
    check_valid(load_schema("prediction"), doc, args);
  }
  check_valid(load_schema("advice"), output_of("advise" + plan, 0), "advise --calibration");
  check_valid(load_schema("compare"), output_of("compare --vary gpu=h100_sxm,h200" + plan), "compare --calibration");
  check_valid(load_schema("search"), output_of("search --gpus 8 --top 2" + plan), "search --calibration");
  fs::remove(stack);
}

}  // TEST_SUITE
