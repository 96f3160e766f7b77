// Strict JSON (RFC 8259) with a position on every value, for the inputs that
// are JSON by contract (a Hugging Face config.json). The YAML parser accepts
// JSON too, but also a trailing comma, NaN, a key given twice, and reads
// "32" and 32 alike; this reader rejects the first three as malformed JSON
// (file:line:col, 1-based, columns in bytes) and keeps each value's kind, so
// JsonMapReader can say "expected a whole number, got the string \"32\"".
// Diagnostics have the same shape and wording as MapReader's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/spec/field_override.hpp"
#include "ridgeline/support/diagnostics.hpp"

namespace ridgeline::spec {

struct JsonMember;

/// Where a value starts: a SourceLoc whose file name is shared by every value
/// of the document (a string per value was a third of a large file's tree).
struct JsonLoc {
  std::shared_ptr<const std::string> file;
  int line = 0;  // 1-based; 0 = unknown
  int col = 0;   // 1-based; 0 = unknown
  operator support::SourceLoc() const { return {file ? *file : std::string(), line, col}; }
};

struct JsonValue {
  enum class Kind : std::uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  JsonLoc loc;  // where the value starts
  std::string text;        // kString: the decoded text; kNumber: the literal; kBool: "true" or "false"
  std::vector<JsonValue> items;                            // kArray
  std::vector<JsonMember> members;  // kObject, in file order, keys unique

  const JsonValue* find(std::string_view key) const;
};

struct JsonMember {
  std::string key;
  JsonValue value;
};

/// What a message says it got: `the string "32"`, `32`, `true`, `null`, `a list`, `an object`.
std::string describe(const JsonValue& v);

/// Parses one JSON document. Malformed JSON ("malformed JSON: ..."), a key
/// given twice in an object ("KEY: given twice (first at line N)", KEY the
/// dotted path) or text that is not UTF-8 throws SpecError.
JsonValue parse_json(std::string_view text, const std::string& file);
/// read_text_file + parse_json; an empty file is "file is empty; expected a mapping of fields".
JsonValue load_json_file(const std::string& path);

/// Called with each item of the streamed list and its index; the item is
/// gone once the call returns.
using JsonItemFn = std::function<void(const JsonValue& item, std::size_t index)>;

/// parse_json for a file of many rows: the items of the top-level object's
/// list `key` go to `item` one at a time, as they are read, and are not
/// kept (the returned tree holds `key` as an empty list). The rows' memory is
/// one row's, not the file's: the residuals behind every prediction interval
/// are 375 rows whose tree was three quarters of a `ridgeline predict`'s heap.
/// The same checks and errors as parse_json.
JsonValue parse_json_streaming(std::string_view text, const std::string& file, std::string_view key,
                               const JsonItemFn& item);
/// read_text_file + parse_json_streaming.
JsonValue load_json_file_streaming(const std::string& path, std::string_view key, const JsonItemFn& item);

/// Puts each override into the object `root` (adding the key when absent):
/// the value is read as a JSON literal (`40`, `true`, `null`, `"silu"`), and
/// text that is not one is a string, so `hidden_act=gelu` works unquoted.
/// Labelled diagnostics (field_override.hpp) for a path through a non-object.
void apply_overrides(JsonValue& root, std::span<const FieldOverride> overrides, support::DiagnosticList& d);

/// MapReader's typed getters over a JSON object: a value must have the JSON
/// kind the getter reads (a number, true/false, a string), so `"32"` for a
/// count is an error at the value. A null is the field's default when the
/// field is optional (Hugging Face writes `"num_key_value_heads": null` for
/// "same as the heads") and an error when it is required. Keys no getter
/// reads are ignored: configs carry many fields Ridgeline has no use for.
class JsonMapReader {
 public:
  /// `path`: the dotted prefix of the object's fields ("" at the top); each
  /// value carries its file and position (JsonLoc).
  JsonMapReader(const JsonValue& object, std::string path, support::DiagnosticList& diags);

  bool valid() const { return valid_; }
  /// Present and not null.
  bool has(const std::string& key) const;
  /// The location of the key's value, or nullopt when absent.
  std::optional<support::SourceLoc> loc(const std::string& key) const;
  support::SourceLoc self_loc() const { return object_->loc; }

  std::optional<std::string> string(const std::string& key, bool required = false);
  std::optional<long long> integer(const std::string& key, bool required = false, long long min = 0,
                                   long long max = (1LL << 53));
  std::optional<double> number(const std::string& key, bool required = false, double min = 0.0,
                               double max = 1e300);
  std::optional<bool> boolean(const std::string& key, bool required = false);

  /// Reports the required fields that are absent, at this object.
  void finish();
  /// The keys a getter (or has/loc) asked for, in order, repeats included.
  const std::vector<std::string>& read_keys() const { return read_; }

  void error_at(const std::string& key, const std::string& message);
  std::string field(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

 private:
  /// The value when present with the wanted kind; reports a required null
  /// or a wrong kind ("expected <expected>, got <what>").
  const JsonValue* get(const std::string& key, bool required, JsonValue::Kind kind, const char* expected);
  const JsonValue* object_;
  std::string path_;
  support::DiagnosticList* diags_;
  std::vector<std::string> missing_;
  mutable std::vector<std::string> read_;
  bool valid_ = true;
};

}  // namespace ridgeline::spec
