// Located, collecting access to a YAML (or JSON) document. Every loader reads
// through a MapReader: each getter records the key as known, converts the
// value and, on failure, adds a located diagnostic (file:line:col, dotted
// field path) to the shared DiagnosticList instead of throwing. finish()
// reports unknown keys with a did-you-mean suggestion. A key given twice in
// any map of the file is rejected by load_yaml_file, and a null value (`~`,
// `null`, nothing) is never taken as absent: each getter reports it as the
// wrong type. Nothing outside spec/ and calibrate/ loaders sees a YamlNode.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/spec/field_override.hpp"
#include "ridgeline/spec/yaml_node.hpp"
#include "ridgeline/support/diagnostics.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::spec {

/// Location of a node (parser marks are 0-based; this is 1-based).
support::SourceLoc loc_of(const std::string& file, const YamlNode& node);

/// The bytes of a spec file; an unreadable file or one with a NUL byte throws SpecError.
std::string read_text_file(const std::string& path);

/// Parses a whole file; a syntax error, an unreadable file or a key given
/// twice in any map ("KEY: given twice (first at line N)", KEY the dotted
/// path, list items as `rows[3]`) throws SpecError.
YamlNode load_yaml_file(const std::string& path);

/// True when `s` is well-formed UTF-8 (no overlongs, surrogates or code points above U+10FFFF).
bool valid_utf8(std::string_view s);
/// The offset of the first byte of the first sequence in `s` that is not
/// well-formed UTF-8, or npos when there is none.
std::size_t invalid_utf8_at(std::string_view s);

/// The text of a whole number within [min, max], or nullopt with `error` set
/// ("expected a whole number, got \"x\"", "expected a whole number from 1 to 64, got 65").
std::optional<long long> parse_whole_number(const std::string& text, long long min, long long max,
                                            std::string& error);
/// The text of a finite number within [min, max], or nullopt with `error` set.
std::optional<double> parse_real_number(const std::string& text, double min, double max, std::string& error);

/// Puts each override's value into `root` as a text value, creating the maps
/// on its path (a field the file lacks is added). A path through a value that
/// is not a map is reported under the override's label.
void apply_overrides(YamlNode& root, std::span<const FieldOverride> overrides, support::DiagnosticList& d);

/// The diagnostics of `d`, those about an overridden field relabelled: no file
/// position (the value came from elsewhere) and the override's label as the
/// field. A diagnostic is about an override when its field is the override's
/// field (or inside it), or when it reports an unknown key that is a step of
/// the override's path ("unknown key 'hbm_bandwith'; did you mean ...").
support::DiagnosticList relabel_overrides(const support::DiagnosticList& d, std::span<const FieldOverride> overrides);

/// The dotted path split at its dots ("memory.hbm_bandwidth" -> memory, hbm_bandwidth).
std::vector<std::string> split_field_path(const std::string& field);

class MapReader {
 public:
  /// `path` is the dotted prefix of this map's fields ("" at top level).
  MapReader(const YamlNode& node, std::string file, std::string path, support::DiagnosticList& diags);

  bool valid() const { return valid_; }
  /// Present and not null (a getter reports a null value; has() only steers which getter to call).
  bool has(const std::string& key) const;
  /// Marks a key as known without reading it.
  void allow(const std::string& key);

  std::optional<std::string> string(const std::string& key, bool required = false);
  std::optional<long long> integer(const std::string& key, bool required = false, long long min = 0,
                                   long long max = (1LL << 53));
  std::optional<double> number(const std::string& key, bool required = false, double min = 0.0,
                               double max = 1e300);
  std::optional<bool> boolean(const std::string& key, bool required = false);
  /// A dimensioned value such as "3.35 TB/s"; must be > 0 unless allow_zero.
  std::optional<double> quantity(const std::string& key, units::Dimension dim, bool required = false,
                                 bool allow_zero = false);
  /// A word from a fixed list; the parser returns nullopt for unknown words.
  template <class Parse>
  auto word(const std::string& key, Parse parse, const std::string& choices, bool required = false)
      -> decltype(parse(std::string_view{})) {
    auto s = scalar(key, required, "one of " + choices);
    if (!s) return std::nullopt;
    auto v = parse(*s);
    if (!v) error_at(key, "expected one of " + choices + ", got \"" + *s + "\"");
    return v;
  }
  /// A nested map; returns nullopt (and reports) when the key holds something else.
  std::optional<MapReader> map(const std::string& key, bool required = false);
  /// A sequence node, or an undefined node when absent.
  YamlNode sequence(const std::string& key, bool required = false);
  YamlNode node(const std::string& key) const { return node_[key]; }
  const YamlNode& self() const { return node_; }

  /// Reports every key that no getter asked for (strict), then missing
  /// required fields, except those an unknown key was a misspelling of.
  void finish(bool strict = true);

  void error_at(const std::string& key, const std::string& message);
  void error_here(const std::string& message);
  /// "expected <expected>, got null", at the value (at the key for an empty value).
  void error_null(const std::string& key, const std::string& expected);
  std::string field(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  const std::string& file() const { return file_; }
  support::DiagnosticList& diags() { return *diags_; }

 private:
  /// The value node (null included), or an undefined node when absent.
  YamlNode get(const std::string& key, bool required);
  /// The scalar text; a null, a list, a map or non-UTF-8 text is reported
  /// ("expected <expected>, got null" for a null).
  std::optional<std::string> scalar(const std::string& key, bool required, const std::string& expected);
  YamlNode node_;
  std::string file_;
  std::string path_;
  support::DiagnosticList* diags_;
  std::vector<std::string> known_;
  std::vector<std::string> missing_;
  bool valid_ = true;
};

}  // namespace ridgeline::spec
