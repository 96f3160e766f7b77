// A YAML document as Ridgeline's loaders read it: maps, lists, scalars and
// nulls, each with the position where it starts. parse_yaml builds it from
// yaml-cpp's parser events (YAML::Parser with an EventHandler) in one pass,
// and rejects in that pass what a spec must not hold: a key given twice in
// any map, an alias to an anchor not yet complete (so the document is a tree
// with shared parts, never a cycle), nesting deeper than 256 levels. An alias shares its anchor's node, so an exponentially
// aliased document costs its events, not its expansion.
//
// A null is what YAML's core schema reads as one: an empty value, `~`,
// `null`, `Null` or `NULL`, unquoted and untagged. Every other scalar keeps
// its text ("32", "true", "3.35 TB/s"); MapReader converts it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ridgeline::spec {

class YamlNode;

/// One entry of a map: its key node and its value node.
struct YamlPair;

class YamlNode {
 public:
  enum class Kind : std::uint8_t { kUndefined, kNull, kScalar, kSequence, kMap };
  /// Where a node starts: yaml-cpp's mark (0-based line and column, the
  /// column in bytes); line -1 when the node was not read from a file (an
  /// override, an absent key).
  struct Mark {
    int line = -1;
    int column = -1;
    bool is_null() const { return line < 0; }
  };

  /// An undefined node: what a lookup of an absent key returns.
  YamlNode() = default;
  /// A scalar with no position (a --set override's value).
  static YamlNode scalar(std::string text);
  /// An empty map with no position.
  static YamlNode map();

  Kind kind() const;
  bool IsDefined() const { return kind() != Kind::kUndefined; }
  explicit operator bool() const { return IsDefined(); }
  bool IsNull() const { return kind() == Kind::kNull; }
  bool IsScalar() const { return kind() == Kind::kScalar; }
  bool IsSequence() const { return kind() == Kind::kSequence; }
  bool IsMap() const { return kind() == Kind::kMap; }
  /// A scalar's text; "" for any other node.
  const std::string& Scalar() const;
  Mark mark() const;
  /// Items of a list, entries of a map, 0 otherwise.
  std::size_t size() const;

  /// A list's item `i`, undefined past the end or for a node that is not a list.
  YamlNode operator[](std::size_t i) const;
  /// The value of a map's scalar key `key`, undefined when absent or not a map.
  YamlNode operator[](std::string_view key) const;
  YamlNode operator[](const char* key) const { return (*this)[std::string_view(key)]; }
  YamlNode operator[](const std::string& key) const { return (*this)[std::string_view(key)]; }
  /// A map's entries in document order (a key given twice is rejected by
  /// parse_yaml, so each scalar key is here once); empty for other nodes.
  const std::vector<YamlPair>& pairs() const;
  /// A list's items; empty for other nodes.
  const std::vector<YamlNode>& items() const;

  /// Sets a map's `key` to `value`, in place of its value when present, else
  /// added at the end. Shared with every handle of this node. A no-op on
  /// anything but a map.
  void set(std::string_view key, YamlNode value);


 private:
  struct Data;
  friend class YamlBuilder;
  explicit YamlNode(std::shared_ptr<Data> d) : d_(std::move(d)) {}
  std::shared_ptr<Data> d_;
};

struct YamlPair {
  YamlNode first;   // the key
  YamlNode second;  // the value
};

/// Parses the first document of `text` (`file` names it in errors). A syntax
/// error throws SpecError "malformed YAML: <yaml-cpp's words>", with the flow
/// list or map it is in as context ("malformed JSON: ..." with `language`
/// "JSON"), at the problem's position; keys given twice ("KEY: given twice (first at
/// line N)", KEY the dotted path, list items as `rows[3]`) are collected and
/// thrown together once the document is read. An empty document (nothing,
/// comments only) is an undefined node.
YamlNode parse_yaml(std::string_view text, const std::string& file, const char* language = "YAML");

}  // namespace ridgeline::spec
