// Strict input: a key given twice in any YAML map or JSON object, a null
// where a value belongs, and a Hugging Face config.json read as strict JSON
// (RFC 8259: no trailing comma, no NaN, a quoted number is a string). Each
// diagnostic is checked as exact text: file:line:col (1-based) of the second
// key or of the offending value, the dotted field path, the message.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/json_reader.hpp"
#include "ridgeline/spec/model.hpp"
#include "ridgeline/spec/plan.hpp"
#include "ridgeline/spec/yaml_reader.hpp"

using namespace ridgeline;
namespace fs = std::filesystem;

namespace {

/// Where write_temp puts a file named `name`.
std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("ridgeline_strict_" + std::to_string(::getpid())) / name).string();
}

/// Writes `text` to a fresh temporary file named `name`.
std::string write_temp(const std::string& name, const std::string& text) {
  const fs::path p = temp_path(name);
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

/// Every diagnostic the loader throws, formatted; empty when it loads.
template <class Load>
std::vector<std::string> errors(Load load, const std::string& path) {
  std::vector<std::string> out;
  try {
    load(path);
  } catch (const support::SpecError& e) {
    for (const auto& d : e.diagnostics()) out.push_back(d.format());
  }
  return out;
}

std::vector<std::string> model_errors(const std::string& f) { return errors(spec::load_model, f); }
std::vector<std::string> plan_errors(const std::string& f) { return errors(spec::load_plan, f); }
std::vector<std::string> hf_errors(const std::string& f) { return errors(spec::load_hf_config, f); }
std::vector<std::string> yaml_errors(const std::string& f) { return errors(spec::load_yaml_file, f); }

/// The duplicate-key errors of `text`, checked to be the same with a trailing
/// comment that holds a '&' (an anchor's sign, which the reader once took as a
/// cue to read the text a second way).
std::vector<std::string> tree_and_event_errors(const std::string& name, const std::string& text) {
  const auto from_tree = yaml_errors(write_temp(name, text));
  const auto from_events = yaml_errors(write_temp(name, text + "# & read as events\n"));
  CHECK(from_tree == from_events);
  return from_tree;
}

/// A shipped file's text with `line` inserted after the first line that
/// starts with `after`; the 1-based numbers of that line and of the new one.
struct Edited {
  std::string text;
  int first = 0;
  int inserted = 0;
};
Edited insert_after(const std::string& shipped, const std::string& after, const std::string& line) {
  std::ifstream in(fs::path(RIDGELINE_SOURCE_DIR) / shipped);
  Edited e;
  std::string l;
  int n = 0;
  while (std::getline(in, l)) {
    e.text += l + "\n";
    ++n;
    if (e.first == 0 && l.starts_with(after)) {
      e.first = n;
      e.text += line + "\n";
      e.inserted = ++n;
    }
  }
  return e;
}

const char* kModel =
    "name: M\n"
    "layers: 2\n"
    "hidden: 64\n"
    "heads: 4\n"
    "ffn_hidden: 256\n"
    "vocab: 1000\n"
    "max_seq_len: 128\n";

/// A valid Llama config.json with `extra` lines before the last field.
std::string llama_json(const std::string& extra = "") {
  return "{\n"
         "  \"model_type\": \"llama\",\n"
         "  \"hidden_size\": 64,\n"
         "  \"num_hidden_layers\": 2,\n"
         "  \"num_attention_heads\": 4,\n"
         "  \"intermediate_size\": 256,\n" +
         extra +
         "  \"vocab_size\": 1000\n"
         "}\n";
}

}  // namespace

TEST_CASE("strict YAML: a key given twice is an error at the second, in every map of the file") {
  const auto top = write_temp("dup_top.yaml", std::string(kModel) + "heads: 8\n");
  CHECK(model_errors(top) == std::vector<std::string>{top + ":8:1: error: heads: given twice (first at line 4)"});

  const auto nested = write_temp("dup_nested.yaml", "parallel:\n  tp: 2\n  dp: 4\n  tp: 4\n");
  CHECK(plan_errors(nested) ==
        std::vector<std::string>{nested + ":4:3: error: parallel.tp: given twice (first at line 2)"});

  // Inside a list item (published rows, measurement records): the item is named as other diagnostics name it.
  const auto rows = write_temp("dup_rows.yaml", "rows:\n  - id: a\n    model:\n      hidden: 1\n      hidden: 2\n");
  CHECK(yaml_errors(rows) ==
        std::vector<std::string>{rows + ":5:7: error: rows[0].model.hidden: given twice (first at line 4)"});

  // Quoted and plain spellings are one key (a lookup finds either); every repeat is reported.
  const auto two = write_temp("dup_two.yaml", "a: 1\n\"a\": 2\nb: 1\nb: 2\n");
  CHECK(yaml_errors(two) == std::vector<std::string>{two + ":2:1: error: a: given twice (first at line 1)",
                                                     two + ":4:1: error: b: given twice (first at line 3)"});

  // A flow map, and a JSON measurement file (read as YAML): located at the second key's opening quote.
  const auto flow = write_temp("dup_flow.json", "{\"schema\": \"x\", \"schema\": \"y\"}\n");
  CHECK(yaml_errors(flow) == std::vector<std::string>{flow + ":1:17: error: schema: given twice (first at line 1)"});

  // The same key in two different maps is not a repeat.
  const auto siblings = write_temp("siblings.yaml", "parallel:\n  tp: 2\nfp8:\n  recipe: delayed\nloss_scaling: {}\n");
  CHECK(yaml_errors(siblings).empty());
}

TEST_CASE("strict YAML: a key given twice is found in lists of lists, under complex keys, past the first repeat") {
  // Hand-placed repeats: line and column of each second key counted in the text (1-based).
  const auto lists = tree_and_event_errors("dup_lists.yaml",
                                           "rows:\n"                    // 1
                                           "  - - x: 1\n"               // 2
                                           "      y: 2\n"               // 3
                                           "    - x: 3\n"               // 4
                                           "      x: 4\n"               // 5: rows[0][1].x, column 7
                                           "  - {a: 1, b: 2, a: 3}\n");  // 6: rows[1].a, column 18
  CHECK(lists == std::vector<std::string>{temp_path("dup_lists.yaml") +
                                              ":5:7: error: rows[0][1].x: given twice (first at line 4)",
                                          temp_path("dup_lists.yaml") +
                                              ":6:18: error: rows[1].a: given twice (first at line 6)"});

  // A complex key and its value are under the map's own path; a repeat inside either is still found.
  const auto complex = tree_and_event_errors("dup_complex.yaml",
                                             "top:\n"               // 1
                                             "  ? {k: 1, k: 2}\n"   // 2: top.k, column 12
                                             "  : {v: 1, v: 2}\n");  // 3: top.v, column 12
  CHECK(complex ==
        std::vector<std::string>{temp_path("dup_complex.yaml") + ":2:12: error: top.k: given twice (first at line 2)",
                                 temp_path("dup_complex.yaml") + ":3:12: error: top.v: given twice (first at line 3)"});

  // A key given three times is reported at the second and the third, each against the first.
  const auto thrice = tree_and_event_errors("dup_thrice.yaml", "a: 1\na: 2\na: 3\n");
  const std::string f = temp_path("dup_thrice.yaml");
  CHECK(thrice == std::vector<std::string>{f + ":2:1: error: a: given twice (first at line 1)",
                                           f + ":3:1: error: a: given twice (first at line 1)"});
}

TEST_CASE("strict YAML: a key given twice in a map of more than 16 keys (looked up by index past 16)") {
  // Keys k0..k19 on lines 1..20, then k3 again (first on line 4) and k19 again (first on line 20), each at
  // column 1 of lines 21 and 22; the first value stays.
  std::string big;
  for (int k = 0; k < 20; ++k) big += "k" + std::to_string(k) + ": " + std::to_string(k) + "\n";
  big += "k3: 0\nk19: 0\n";
  const auto f = write_temp("big_map.yaml", big);
  CHECK(yaml_errors(f) == std::vector<std::string>{f + ":21:1: error: k3: given twice (first at line 4)",
                                                   f + ":22:1: error: k19: given twice (first at line 20)"});
  const auto once = write_temp("big_map_once.yaml", big.substr(0, big.find("k3: 0")));
  const spec::YamlNode root = spec::load_yaml_file(once);
  CHECK(root.size() == 20);
  CHECK(root["k19"].Scalar() == "19");
}

TEST_CASE("strict YAML: a key given twice in a framework profile or a GPU profile names its line and column") {
  const Edited fw = insert_after("frameworks/megatron.yaml", "name:", "name: Again");
  REQUIRE(fw.first > 0);
  const auto fw_file = write_temp("megatron.yaml", fw.text);
  CHECK(errors(spec::load_framework, fw_file) ==
        std::vector<std::string>{fw_file + ":" + std::to_string(fw.inserted) +
                                 ":1: error: name: given twice (first at line " + std::to_string(fw.first) + ")"});

  const Edited gpu = insert_after("hardware_profiles/h100_sxm.yaml", "  hbm_bandwidth:", "  hbm_bandwidth: 4 TB/s");
  REQUIRE(gpu.first > 0);
  const auto gpu_file = write_temp("h100_sxm.yaml", gpu.text);
  CHECK(errors(spec::load_hardware, gpu_file) ==
        std::vector<std::string>{gpu_file + ":" + std::to_string(gpu.inserted) +
                                 ":3: error: memory.hbm_bandwidth: given twice (first at line " +
                                 std::to_string(gpu.first) + ")"});
}

TEST_CASE("strict YAML: an aliased map is checked once, and aliases cannot make the check loop or explode") {
  const auto alias = write_temp("alias.yaml", "a: &x {b: 1, b: 2}\nc: *x\nd: *x\n");
  CHECK(yaml_errors(alias) == std::vector<std::string>{alias + ":1:14: error: a.b: given twice (first at line 1)"});
  // A sequence that contains itself is refused (an alias names only a
  // complete anchor); a billion-laughs chain shares its nodes and is read
  // in one pass over its events.
  const auto cycle = write_temp("cycle.yaml", "a: &x [*x]\n");
  CHECK(yaml_errors(cycle) ==
        std::vector<std::string>{cycle + ":1:8: error: malformed YAML: the alias *x names no complete anchor &x before it"});
  std::string laughs = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 30; ++i)
    laughs += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [" + std::string(9, ' ') + "*l" +
              std::to_string(i - 1) + ", *l" + std::to_string(i - 1) + ", *l" + std::to_string(i - 1) + "]\n";
  const auto bomb = write_temp("laughs.yaml", laughs);
  CHECK(yaml_errors(bomb).empty());
  // An alias to an anchor that is never given, and one given only later.
  const auto unknown = write_temp("unknown_alias.yaml", "a: *nowhere\nb: &nowhere 1\n");
  CHECK(yaml_errors(unknown) ==
        std::vector<std::string>{unknown +
                                 ":1:4: error: malformed YAML: the alias *nowhere names no complete anchor &nowhere "
                                 "before it"});
}

TEST_CASE("strict YAML: text that is not UTF-8 is refused at its first bad byte") {
  // "name: L" is 7 bytes: the lone 0xDE (it opens a 2-byte character, and 'a' does not continue one) is column 8.
  const auto f = write_temp("not_utf8.yaml", "name: L\xde" "ama\nlayers: 2\n");
  CHECK(yaml_errors(f) ==
        std::vector<std::string>{f + ":1:8: error: not UTF-8 text (byte 0xDE starts no UTF-8 character here)"});
  // On a later line, after valid multi-byte text (columns count bytes): "b: \xc3\xa9" is 5 bytes.
  const auto g = write_temp("not_utf8_2.yaml", "a: \xc3\xa9\nb: \xc3\xa9\xff\n");
  CHECK(yaml_errors(g) ==
        std::vector<std::string>{g + ":2:6: error: not UTF-8 text (byte 0xFF starts no UTF-8 character here)"});
}

TEST_CASE("strict YAML: nesting deeper than 256 levels is refused at the first list past the limit") {
  // 300 nested flow lists after "a: ": the top-level map is level 1, so the
  // 256th '[' (column 259) is level 257, one too deep.
  const auto deep = write_temp("deep.yaml", "a: " + std::string(300, '[') + std::string(300, ']') + "\n");
  CHECK(yaml_errors(deep) ==
        std::vector<std::string>{deep + ":1:259: error: malformed YAML: nested deeper than 256 levels"});
  // 256 levels (the top-level map and 255 lists) read.
  const auto fine = write_temp("fine.yaml", "a: " + std::string(255, '[') + std::string(255, ']') + "\n");
  CHECK(yaml_errors(fine).empty());
  // Far deeper: refused by the same check, before yaml-cpp's own recursion guard (500).
  const auto deeper = write_temp("deeper.yaml", "a: " + std::string(100000, '[') + std::string(100000, ']') + "\n");
  CHECK(yaml_errors(deeper) ==
        std::vector<std::string>{deeper + ":1:259: error: malformed YAML: nested deeper than 256 levels"});
}

TEST_CASE("strict YAML: null is never taken as absent; each typed field says what it expected") {
  // MapReader directly, so the test does not depend on one loader's field list.
  const auto quantity = write_temp("null_l2.yaml", "memory:\n  l2_cache: null\n  capacity: ~\ntokens:\n");
  const spec::YamlNode root = spec::load_yaml_file(quantity);
  support::DiagnosticList d;
  spec::MapReader r(root, quantity, "", d);
  auto mem = r.map("memory");
  REQUIRE(mem);
  CHECK_FALSE(mem->quantity("l2_cache", units::Dimension::kBytes));
  CHECK_FALSE(mem->quantity("capacity", units::Dimension::kBytes, true));
  CHECK_FALSE(r.quantity("tokens", units::Dimension::kCount));
  std::vector<std::string> got;
  for (const auto& diag : d.items()) got.push_back(diag.format());
  CHECK(got == std::vector<std::string>{
                   quantity + ":2:13: error: memory.l2_cache: expected a size such as \"80 GiB\", got null",
                   quantity + ":3:13: error: memory.capacity: expected a size such as \"80 GiB\", got null",
                   quantity + ":4:1: error: tokens: expected a count such as \"15T\", got null"});

  const auto required = write_temp("null_layers.yaml", std::string(kModel).replace(16, 1, "null"));
  CHECK(model_errors(required) ==
        std::vector<std::string>{required + ":2:9: error: layers: expected a whole number, got null"});

  const auto optional = write_temp("null_kv.yaml", std::string(kModel) + "kv_heads: null\n");
  CHECK(model_errors(optional) ==
        std::vector<std::string>{optional + ":8:11: error: kv_heads: expected a whole number, got null"});

  // An empty value is marked where the next token starts; it is reported at its key.
  const auto empty = write_temp("empty_dropout.yaml", std::string(kModel) + "dropout:\nbias: false\n");
  CHECK(model_errors(empty) == std::vector<std::string>{empty + ":8:1: error: dropout: expected a number, got null"});

  const auto words = write_temp("null_words.yaml",
                                std::string(kModel) + "activation: null\nbias: NULL\ndropout: ~\nmoe:\nsource: x\n");
  CHECK(model_errors(words) ==
        std::vector<std::string>{
            words + ":8:13: error: activation: expected one of gelu, relu, squared_relu, swiglu, geglu, got null",
            words + ":9:7: error: bias: expected true or false, got null",
            words + ":10:10: error: dropout: expected a number, got null",
            words + ":11:1: error: moe: expected a mapping of fields, got null"});

  const auto text = write_temp("null_name.yaml", std::string(kModel).replace(6, 1, "~"));
  CHECK(model_errors(text) == std::vector<std::string>{text + ":1:7: error: name: expected text, got null"});

  // A quoted "null" is text, not a null.
  const auto quoted = write_temp("quoted_null.yaml", std::string(kModel).replace(6, 1, "\"null\""));
  CHECK(spec::load_model(quoted).name == "null");
}

TEST_CASE("strict YAML: a plan's packed documents longer than its sequence are refused at the value") {
  const auto f = write_temp("packed.yaml", "seq_len: 4096\npacked_doc_len: 5000\n");
  CHECK(plan_errors(f) ==
        std::vector<std::string>{
            f + ":2:17: error: packed_doc_len: packed documents of 5000 tokens exceed the sequence length 4096"});
  const auto ok = write_temp("packed_ok.yaml", "seq_len: 4096\npacked_doc_len: 4096\n");
  CHECK(spec::load_plan(ok).packed_doc_len == 4096);
}

TEST_CASE("strict JSON: syntax errors are located and say what was found") {
  auto one = [](const std::string& name, const std::string& text) {
    const auto f = write_temp(name, text);
    const auto e = hf_errors(f);
    REQUIRE(e.size() == 1);
    return e[0].substr(f.size());
  };
  CHECK(one("trailing.json", "{\n  \"model_type\": \"llama\",\n}\n") ==
        ":2:24: error: malformed JSON: trailing comma before '}'");
  CHECK(one("trailing_list.json", "{\"architectures\": [\"A\", ]}") ==
        ":1:23: error: malformed JSON: trailing comma before ']'");
  CHECK(one("nan.json", "{\"rope_theta\": NaN}") ==
        ":1:16: error: malformed JSON: NaN is not a JSON value; write a number or null");
  CHECK(one("inf.json", "{\"rope_theta\": -Infinity}") ==
        ":1:16: error: malformed JSON: -Infinity is not a JSON value; write a number or null");
  CHECK(one("true.json", "{\"use_cache\": True}") ==
        ":1:15: error: malformed JSON: expected a value, got 'True'; did you mean 'true'?");
  CHECK(one("single.json", "{'model_type': 'llama'}") ==
        ":1:2: error: malformed JSON: expected a key in double quotes, got a single quote (JSON strings take double "
        "quotes)");
  CHECK(one("zero.json", "{\"hidden_size\": 0640}") ==
        ":1:17: error: malformed JSON: a number must not start with 0 (leading zero)");
  CHECK(one("colon.json", "{\"hidden_size\" 64}") == ":1:16: error: malformed JSON: expected ':' after the key, got '6'");
  CHECK(one("comma.json", "{\"a\": 1 \"b\": 2}") ==
        ":1:9: error: malformed JSON: expected ',' or '}' after a value, got '\"'");
  CHECK(one("open.json", "{\"model_type\": \"llama}") ==
        ":1:16: error: malformed JSON: string not closed (missing '\"')");
  CHECK(one("escape.json", "{\"model_type\": \"ll\\ama\"}") ==
        ":1:19: error: malformed JSON: invalid escape '\\a' in a string");
  CHECK(one("surrogate.json", "{\"name\": \"\\ud83d\"}") ==
        ":1:11: error: malformed JSON: unpaired surrogate in a \\u escape");
  CHECK(one("control.json", "{\"name\": \"a\tb\"}") ==
        ":1:12: error: malformed JSON: control character in a string; write it as an escape such as \\n");
  CHECK(one("after.json", "{}\n{}\n") ==
        ":2:1: error: malformed JSON: expected the end of the file after the top-level value, got '{'");
  CHECK(one("eof.json", "{\n  \"model_type\": \"llama\",\n") ==
        ":3:1: error: malformed JSON: expected a key in double quotes, got end of file");
  CHECK(one("deep.json", std::string(100000, '[')) == ":1:514: error: malformed JSON: nested deeper than 512 levels");
  CHECK(one("empty.json", " \n") == ":1:1: error: file is empty; expected a mapping of fields");
  CHECK(one("list.json", "[1]") == ":1:1: error: expected a mapping of fields");
}

TEST_CASE("strict JSON: a key given twice, at any depth, is an error at the second") {
  const auto f = write_temp("dup.json", llama_json("  \"hidden_size\": 64,\n  \"rope_scaling\": {\"type\": \"a\",\n"
                                                   "    \"type\": \"b\"},\n"));
  CHECK(hf_errors(f) == std::vector<std::string>{f + ":7:3: error: hidden_size: given twice (first at line 3)",
                                                 f + ":9:5: error: rope_scaling.type: given twice (first at line 8)"});
  const auto list = write_temp("dup_list.json", llama_json("  \"layers\": [{\"a\": 1, \"a\": 2}],\n"));
  CHECK(hf_errors(list) ==
        std::vector<std::string>{list + ":7:23: error: layers[0].a: given twice (first at line 7)"});

  // An object of more than 16 keys (the reader indexes them past 16): keys k0..k19 on lines 2..21, then
  // k3 again (first on line 5) and k19 again (first on line 21), each at column 3 of lines 22 and 23.
  std::string big = "{\n";
  for (int k = 0; k < 20; ++k) big += "  \"k" + std::to_string(k) + "\": " + std::to_string(k) + ",\n";
  big += "  \"k3\": 0,\n  \"k19\": 0\n}\n";
  std::vector<std::string> got;
  try {
    spec::parse_json(big, "big.json");
  } catch (const support::SpecError& e) {
    for (const auto& d : e.diagnostics()) got.push_back(d.format());
  }
  CHECK(got == std::vector<std::string>{"big.json:22:3: error: k3: given twice (first at line 5)",
                                        "big.json:23:3: error: k19: given twice (first at line 21)"});
}

TEST_CASE("strict JSON: a streamed list's items are the items parse_json keeps, with the same errors") {
  const std::string text =
      "{\"note\": \"n\",\n \"rows\": [{\"id\": \"a\", \"x\": 1},\n  {\"id\": \"b\", \"x\": [2, 3]},\n"
      "  7],\n \"tail\": {\"rows\": [1, 2]}}\n";
  const spec::JsonValue whole = spec::parse_json(text, "t.json");
  std::vector<std::string> seen;
  const spec::JsonValue rest = spec::parse_json_streaming(
      text, "t.json", "rows", [&](const spec::JsonValue& item, std::size_t i) {
        const spec::JsonValue& kept = whole.find("rows")->items.at(i);
        CHECK(item.kind == kept.kind);
        CHECK(item.loc.line == kept.loc.line);
        CHECK(item.loc.col == kept.loc.col);
        CHECK(describe(item) == describe(kept));
        const spec::JsonValue* id = item.find("id");
        seen.push_back(fmt::format("{}:{}", i, id ? id->text : describe(item)));
      });
  CHECK(seen == std::vector<std::string>{"0:a", "1:b", "2:7"});
  // The streamed list is left empty; a list of the same name deeper down is kept.
  REQUIRE(rest.find("rows"));
  CHECK(rest.find("rows")->kind == spec::JsonValue::Kind::kArray);
  CHECK(rest.find("rows")->items.empty());
  CHECK(rest.find("tail")->find("rows")->items.size() == 2);
  CHECK(rest.find("note")->text == "n");
  // A key given twice inside a streamed row: the same error, named by its row.
  const std::string dup = "{\"rows\": [{\"id\": 1}, {\"id\": 2, \"id\": 3}]}";
  std::vector<std::string> got;
  try {
    spec::parse_json_streaming(dup, "d.json", "rows", [](const spec::JsonValue&, std::size_t) {});
  } catch (const support::SpecError& e) {
    for (const auto& d : e.diagnostics()) got.push_back(d.format());
  }
  CHECK(got == std::vector<std::string>{"d.json:1:32: error: rows[1].id: given twice (first at line 1)"});
}

TEST_CASE("strict JSON: each field must have the JSON type it is read as") {
  auto one = [](const std::string& name, const std::string& extra) {
    const auto f = write_temp(name, llama_json(extra));
    const auto e = hf_errors(f);
    REQUIRE(e.size() == 1);
    return e[0].substr(f.size());
  };
  CHECK(one("q_int.json", "  \"num_key_value_heads\": \"2\",\n") ==
        ":7:26: error: num_key_value_heads: expected a whole number, got the string \"2\"");
  CHECK(one("q_bool.json", "  \"tie_word_embeddings\": \"true\",\n") ==
        ":7:26: error: tie_word_embeddings: expected true or false, got the string \"true\"");
  CHECK(one("num_bool.json", "  \"tie_word_embeddings\": 0,\n") ==
        ":7:26: error: tie_word_embeddings: expected true or false, got 0");
  CHECK(one("frac.json", "  \"max_position_embeddings\": 2048.0,\n") ==
        ":7:30: error: max_position_embeddings: expected a whole number, got 2048.0");
  CHECK(one("big.json", "  \"max_position_embeddings\": 99999999999999999999,\n") ==
        ":7:30: error: max_position_embeddings: expected a whole number from 1 to 1073741824, got "
        "99999999999999999999");
  CHECK(one("act.json", "  \"hidden_act\": 1,\n") == ":7:17: error: hidden_act: expected a string, got 1");
  CHECK(one("list_int.json", "  \"head_dim\": [16],\n") == ":7:15: error: head_dim: expected a whole number, got a list");

  const auto gpt2 = write_temp("gpt2.json",
                               "{\"model_type\": \"gpt2\", \"n_embd\": 64, \"n_layer\": 2, \"n_head\": 4, "
                               "\"vocab_size\": 100, \"resid_pdrop\": \"0.1\"}");
  CHECK(hf_errors(gpt2) ==
        std::vector<std::string>{gpt2 + ":1:99: error: resid_pdrop: expected a number, got the string \"0.1\""});
  const auto type = write_temp("type.json", "{\"model_type\": 5}");
  CHECK(hf_errors(type) == std::vector<std::string>{type + ":1:16: error: model_type: expected a string, got 5"});
}

TEST_CASE("strict JSON: null is the default of an optional field and an error for a required one") {
  const auto opt = write_temp("null_opt.json", llama_json("  \"num_key_value_heads\": null,\n  \"head_dim\": null,\n"
                                                          "  \"rope_scaling\": null,\n"));
  const auto m = spec::load_hf_config(opt);
  CHECK(m.kv_heads == 4);   // transformers: num_key_value_heads None means num_attention_heads
  CHECK(m.head_dim == 16);  // hidden_size / num_attention_heads
  const auto req = write_temp("null_req.json", "{\"model_type\": \"llama\", \"hidden_size\": null}");
  CHECK(hf_errors(req) ==
        std::vector<std::string>{req + ":1:40: error: hidden_size: expected a whole number, got null",
                                 req + ":1:1: error: num_hidden_layers: missing required field",
                                 req + ":1:1: error: num_attention_heads: missing required field",
                                 req + ":1:1: error: intermediate_size: missing required field",
                                 req + ":1:1: error: vocab_size: missing required field"});
}

TEST_CASE("strict JSON: what loads matches the YAML reading of the same config") {
  // \u escapes decode (to "llama"), a byte-order mark is skipped, unknown keys of any type are ignored.
  const auto f = write_temp("escaped.json", "\xEF\xBB\xBF" + llama_json("  \"x\": {\"y\": [1, -2.5e-3, true, null]},\n")
                                                                  .replace(19, 5, "\\u006c\\u006c\\u0061ma"));
  const auto m = spec::load_hf_config(f);
  CHECK(m.name == "escaped (llama)");
  CHECK(m.hidden == 64);
  CHECK(m.layers == 2);
  CHECK(m.heads == 4);
  CHECK(m.kv_heads == 4);
  CHECK(m.ffn_hidden == 256);
  CHECK(m.vocab == 1000);
  CHECK(m.max_seq_len == 2048);  // the loader's default for max_position_embeddings
  CHECK(m.activation == spec::Activation::kSwiglu);

  const auto root = spec::parse_json("{\"a\": [1, \"\\u00e9\\ud83d\\ude00\"]}", "x.json");
  REQUIRE(root.kind == spec::JsonValue::Kind::kObject);
  const spec::JsonValue* a = root.find("a");
  REQUIRE(a);
  REQUIRE(a->items.size() == 2);
  CHECK(a->items[0].kind == spec::JsonValue::Kind::kNumber);
  CHECK(a->items[1].text == "\xC3\xA9\xF0\x9F\x98\x80");  // U+00E9, U+1F600
  CHECK(a->items[1].loc.col == 11);
}
