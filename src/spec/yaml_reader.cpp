#include "ridgeline/spec/yaml_reader.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <yaml-cpp/eventhandler.h>

namespace ridgeline::spec {

support::SourceLoc loc_of(const std::string& file, const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  if (m.is_null()) return {file, 0, 0};
  return {file, m.line + 1, m.column + 1};
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw support::SpecError({path, 0, 0}, "", "cannot read file");
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw support::SpecError({path, 0, 0}, "", "cannot read file");
  std::string text = ss.str();
  if (text.find('\0') != std::string::npos)
    throw support::SpecError({path, 0, 0}, "", "not a text file (contains a NUL byte)");
  return text;
}

namespace {

/// Finds keys given twice in any map, from the parser's events: an alias is
/// one event, not its expansion, so a self-referencing or exponentially
/// aliased document costs one pass. Keys are compared by their text, as
/// yaml-cpp's operator[] finds them (it would silently return the first).
class DuplicateKeyFinder : public YAML::EventHandler {
 public:
  DuplicateKeyFinder(const std::string& file, support::DiagnosticList& diags) : file_(file), diags_(diags) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override { node(nullptr, {}); }
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { node(nullptr, {}); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string& value) override {
    node(&value, mark);
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    push(false);
  }
  void OnSequenceEnd() override { frames_.pop_back(); }
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    push(true);
  }
  void OnMapEnd() override { frames_.pop_back(); }

 private:
  struct Frame {
    bool is_map = false;
    std::string path;
    bool at_key = true;  // maps: the next node is a key
    std::string key;     // maps: the key of the value that follows
    size_t index = 0;    // lists: the next item's index
    std::map<std::string, int, std::less<>> first_line;
  };

  void push(bool is_map) {
    Frame f;
    f.is_map = is_map;
    f.path = node(nullptr, {});
    frames_.push_back(std::move(f));
  }

  /// Places one node in its parent and returns its dotted path; `scalar` is its text when it is a scalar.
  std::string node(const std::string* scalar, const YAML::Mark& mark) {
    if (frames_.empty()) return "";
    Frame& f = frames_.back();
    if (!f.is_map) return fmt::format("{}[{}]", f.path, f.index++);
    if (!f.at_key) {
      f.at_key = true;
      return f.key;
    }
    f.at_key = false;
    if (!scalar) {  // a null or complex key: MapReader::finish reports it
      f.key = f.path;
      return f.path;
    }
    f.key = f.path.empty() ? *scalar : f.path + "." + *scalar;
    const int line = mark.line + 1;
    if (auto it = f.first_line.find(*scalar); it != f.first_line.end()) {
      if (!diags_.full())
        diags_.error({file_, line, mark.column + 1}, f.key, fmt::format("given twice (first at line {})", it->second));
    } else {
      f.first_line.emplace(*scalar, line);
    }
    return f.key;
  }

  const std::string& file_;
  support::DiagnosticList& diags_;
  std::vector<Frame> frames_;
};

/// The same check on the loaded tree, for a document without anchors, where
/// every node has one parent: yaml-cpp keeps a repeated key as another pair
/// of its map (node_data::insert_map_pair appends), marked where it stands.
/// Visits keys and values in document order, as the parser's events come,
/// and names each field as DuplicateKeyFinder does; only the paths of
/// containers are built.
void find_duplicate_keys(const YAML::Node& node, const std::string& path, const std::string& file,
                         support::DiagnosticList& diags) {
  auto is_container = [](const YAML::Node& n) { return n.IsMap() || n.IsSequence(); };
  if (node.IsSequence()) {
    std::size_t index = 0;
    for (auto it = node.begin(); it != node.end(); ++it, ++index) {
      const YAML::Node item = *it;
      if (is_container(item)) find_duplicate_keys(item, fmt::format("{}[{}]", path, index), file, diags);
    }
    return;
  }
  if (!node.IsMap()) return;
  std::map<std::string_view, int> first_line;  // views of the keys' text, which the tree holds
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar()) {  // a null or complex key, and its value, under the map's own path
      if (is_container(key)) find_duplicate_keys(key, path, file, diags);
      if (is_container(value)) find_duplicate_keys(value, path, file, diags);
      continue;
    }
    const std::string& name = key.Scalar();
    const YAML::Mark mark = key.Mark();
    if (auto at = first_line.find(name); at != first_line.end()) {
      if (!diags.full())
        diags.error({file, mark.line + 1, mark.column + 1}, path.empty() ? name : path + "." + name,
                    fmt::format("given twice (first at line {})", at->second));
    } else {
      first_line.emplace(name, mark.line + 1);
    }
    if (is_container(value)) find_duplicate_keys(value, path.empty() ? name : path + "." + name, file, diags);
  }
}

}  // namespace

YAML::Node load_yaml_file(const std::string& path) {
  const std::string text = read_text_file(path);
  const char* kind = path.ends_with(".json") ? "malformed JSON: " : "malformed YAML: ";
  try {
    YAML::Node root = YAML::Load(text);
    if (!root.IsDefined() || root.IsNull())
      throw support::SpecError({path, 1, 1}, "", "file is empty; expected a mapping of fields");
    support::DiagnosticList diags;
    if (text.find('&') == std::string::npos) {
      // No anchor, so no alias: the tree is the document, each node once.
      find_duplicate_keys(root, "", path, diags);
    } else {
      // An aliased node is shared in the tree (a cycle, or exponentially many
      // paths to one node); its events name it once. The text parsed once, so
      // it parses again.
      std::istringstream in(text);
      YAML::Parser parser(in);
      DuplicateKeyFinder finder(path, diags);
      parser.HandleNextDocument(finder);
    }
    diags.throw_if_errors();
    return root;
  } catch (const YAML::ParserException& e) {
    throw support::SpecError({path, e.mark.line + 1, e.mark.column + 1}, "", kind + e.msg);
  } catch (const YAML::Exception& e) {
    throw support::SpecError({path, e.mark.line + 1, e.mark.column + 1}, "", kind + e.msg);
  }
}

bool valid_utf8(std::string_view s) {
  size_t i = 0;
  const auto* b = reinterpret_cast<const unsigned char*>(s.data());
  while (i < s.size()) {
    const unsigned c = b[i];
    int n = 0;
    unsigned cp = 0;
    if (c < 0x80) { ++i; continue; }
    if ((c >> 5) == 0x6) n = 1, cp = c & 0x1F;
    else if ((c >> 4) == 0xE) n = 2, cp = c & 0x0F;
    else if ((c >> 3) == 0x1E) n = 3, cp = c & 0x07;
    else return false;
    for (int k = 1; k <= n; ++k) {
      if (i + k >= s.size() || (b[i + k] >> 6) != 0x2) return false;
      cp = (cp << 6) | (b[i + k] & 0x3F);
    }
    static constexpr unsigned kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

std::optional<long long> parse_whole_number(const std::string& text, long long min, long long max,
                                            std::string& error) {
  auto out_of_range = [&](const std::string& got) {
    error = max >= (1LL << 53) ? fmt::format("expected a whole number >= {}, got {}", min, got)
                               : fmt::format("expected a whole number from {} to {}, got {}", min, max, got);
  };
  long long v = 0;
  size_t used = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::out_of_range&) {
    // Digits beyond 64 bits are still a whole number, just out of range.
    const size_t first = text.starts_with('-') ? 1 : 0;
    if (text.size() > first && text.find_first_not_of("0123456789", first) == std::string::npos) {
      out_of_range(text);
      return std::nullopt;
    }
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != text.size()) {
    error = fmt::format("expected a whole number, got \"{}\"", text);
    return std::nullopt;
  }
  if (v < min || v > max) {
    out_of_range(std::to_string(v));
    return std::nullopt;
  }
  return v;
}

std::optional<double> parse_real_number(const std::string& text, double min, double max, std::string& error) {
  double v = 0;
  size_t used = 0;
  try {
    v = std::stod(text, &used);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v)) {
    error = fmt::format("expected a number, got \"{}\"", text);
    return std::nullopt;
  }
  if (v < min || v > max) {
    error = fmt::format("expected a number from {} to {}, got {}", min, max, text);
    return std::nullopt;
  }
  return v;
}

std::vector<std::string> split_field_path(const std::string& field) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = field.find('.', start);
    parts.push_back(field.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

void apply_overrides(YAML::Node& root, std::span<const FieldOverride> overrides, support::DiagnosticList& d) {
  for (const FieldOverride& o : overrides) {
    const std::vector<std::string> parts = split_field_path(o.field);
    if (std::any_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty(); })) {
      d.error({}, o.label, "expected a field path such as memory.hbm_bandwidth");
      continue;
    }
    YAML::Node cur = root;  // shares root's nodes
    bool ok = true;
    for (size_t i = 0; i + 1 < parts.size() && ok; ++i) {
      if (!std::as_const(cur)[parts[i]].IsDefined()) cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
      YAML::Node next = cur[parts[i]];
      if (!next.IsMap()) {
        std::string prefix = parts[0];
        for (size_t k = 1; k <= i; ++k) prefix += "." + parts[k];
        d.error({}, o.label, fmt::format("'{}' holds a value, not a section of fields", prefix));
        ok = false;
      }
      cur.reset(next);
    }
    if (ok) cur[parts.back()] = YAML::Node(o.value);
  }
}

support::DiagnosticList relabel_overrides(const support::DiagnosticList& d, std::span<const FieldOverride> overrides) {
  if (overrides.empty()) return d;
  support::DiagnosticList out;
  for (const support::Diagnostic& diag : d.items()) {
    const FieldOverride* about = nullptr;
    for (const FieldOverride& o : overrides) {
      if (diag.field == o.label) about = &o;
      const std::string& f = diag.field;
      if (f == o.field || (f.starts_with(o.field) && (f[o.field.size()] == '.' || f[o.field.size()] == '[')))
        about = &o;
      const std::vector<std::string> parts = split_field_path(o.field);
      std::string parent;
      for (size_t i = 0; i < parts.size() && !about; ++i) {
        if (f == parent && diag.message.starts_with("unknown key '" + parts[i] + "'")) about = &o;
        parent += (i ? "." : "") + parts[i];
      }
      if (about) break;
    }
    if (about) out.add({{}, about->label, diag.message, diag.severity});
    else out.add(diag);
  }
  return out;
}

MapReader::MapReader(const YAML::Node& node, std::string file, std::string path, support::DiagnosticList& diags)
    : node_(node), file_(std::move(file)), path_(std::move(path)), diags_(&diags) {
  if (!node_.IsMap()) {
    valid_ = false;
    diags_->error(loc_of(file_, node_), path_, "expected a mapping of fields");
  }
}

bool MapReader::has(const std::string& key) const { return valid_ && node_[key].IsDefined() && !node_[key].IsNull(); }

void MapReader::allow(const std::string& key) { known_.push_back(key); }

void MapReader::error_at(const std::string& key, const std::string& message) {
  // Const lookups throughout: yaml-cpp's non-const operator[] inserts a
  // placeholder pair for a missing key, which would invalidate a caller's
  // iterator over this map.
  YAML::Node n = valid_ ? std::as_const(node_)[key] : YAML::Node();
  diags_->error(n.IsDefined() ? loc_of(file_, n) : loc_of(file_, node_), field(key), message);
}

void MapReader::error_null(const std::string& key, const std::string& expected) {
  // An empty value (`key:` and nothing) is marked where the next token starts,
  // often the next line: report it at its key instead.
  const YAML::Node n = std::as_const(node_)[key];
  support::SourceLoc at = loc_of(file_, n);
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const YAML::Node k = it->first;
    if (!k.IsScalar() || k.Scalar() != key) continue;
    if (const support::SourceLoc kl = loc_of(file_, k); kl.line != at.line) at = kl;
    break;
  }
  diags_->error(at, field(key), fmt::format("expected {}, got null", expected));
}

void MapReader::error_here(const std::string& message) { diags_->error(loc_of(file_, node_), path_, message); }

YAML::Node MapReader::get(const std::string& key, bool required) {
  known_.push_back(key);
  if (!valid_) return YAML::Node(YAML::NodeType::Undefined);
  YAML::Node n = std::as_const(node_)[key];
  if (!n.IsDefined()) {
    if (required) missing_.push_back(key);
    return YAML::Node(YAML::NodeType::Undefined);
  }
  return n;
}

std::optional<std::string> MapReader::scalar(const std::string& key, bool required, const std::string& expected) {
  YAML::Node n = get(key, required);
  if (!n.IsDefined()) return std::nullopt;
  if (n.IsNull()) {
    error_null(key, expected);
    return std::nullopt;
  }
  if (!n.IsScalar()) {
    error_at(key, "expected a single value");
    return std::nullopt;
  }
  if (!valid_utf8(n.Scalar())) {
    error_at(key, "expected UTF-8 text");
    return std::nullopt;
  }
  return n.Scalar();
}

std::optional<std::string> MapReader::string(const std::string& key, bool required) {
  return scalar(key, required, "text");
}

std::optional<long long> MapReader::integer(const std::string& key, bool required, long long min, long long max) {
  auto s = scalar(key, required, "a whole number");
  if (!s) return std::nullopt;
  std::string error;
  auto v = parse_whole_number(*s, min, max, error);
  if (!v) error_at(key, error);
  return v;
}

std::optional<double> MapReader::number(const std::string& key, bool required, double min, double max) {
  auto s = scalar(key, required, "a number");
  if (!s) return std::nullopt;
  std::string error;
  auto v = parse_real_number(*s, min, max, error);
  if (!v) error_at(key, error);
  return v;
}

std::optional<bool> MapReader::boolean(const std::string& key, bool required) {
  auto s = scalar(key, required, "true or false");
  if (!s) return std::nullopt;
  if (*s == "true" || *s == "yes" || *s == "on") return true;
  if (*s == "false" || *s == "no" || *s == "off") return false;
  error_at(key, fmt::format("expected true or false, got \"{}\"", *s));
  return std::nullopt;
}

std::optional<double> MapReader::quantity(const std::string& key, units::Dimension dim, bool required,
                                          bool allow_zero) {
  auto s = scalar(key, required, fmt::format("{} such as \"{}\"", units::describe(dim), units::example(dim)));
  if (!s) return std::nullopt;
  auto r = units::parse(*s, dim);
  if (!r.value) {
    error_at(key, r.error);
    return std::nullopt;
  }
  if (*r.value < 0.0 || (!allow_zero && *r.value == 0.0)) {
    error_at(key, fmt::format("expected {} greater than zero, got \"{}\"", units::describe(dim), *s));
    return std::nullopt;
  }
  return r.value;
}

std::optional<MapReader> MapReader::map(const std::string& key, bool required) {
  YAML::Node n = get(key, required);
  if (!n.IsDefined()) return std::nullopt;
  if (n.IsNull()) {
    error_null(key, "a mapping of fields");
    return std::nullopt;
  }
  if (!n.IsMap()) {
    error_at(key, "expected a mapping of fields");
    return std::nullopt;
  }
  return MapReader(n, file_, field(key), *diags_);
}

YAML::Node MapReader::sequence(const std::string& key, bool required) {
  YAML::Node n = get(key, required);
  if (!n.IsDefined()) return n;
  if (n.IsNull()) {
    error_null(key, "a list");
    return YAML::Node(YAML::NodeType::Undefined);
  }
  if (!n.IsSequence()) {
    error_at(key, "expected a list");
    return YAML::Node(YAML::NodeType::Undefined);
  }
  return n;
}

void MapReader::finish(bool strict) {
  if (!valid_) return;
  std::vector<std::string> misspelt;
  for (auto it = node_.begin(); strict && it != node_.end(); ++it) {
    const YAML::Node k = it->first;  // a copy: the iterator yields a temporary
    if (!k.IsScalar()) {
      diags_->error(loc_of(file_, k), path_, "expected a field name");
      continue;
    }
    const std::string& name = k.Scalar();
    if (std::find(known_.begin(), known_.end(), name) != known_.end()) continue;
    misspelt.push_back(support::closest_match(name, known_));
    diags_->error(loc_of(file_, k), path_,
                  fmt::format("unknown key '{}'{}", name, support::did_you_mean(name, known_)));
  }
  for (const auto& key : missing_)
    if (std::find(misspelt.begin(), misspelt.end(), key) == misspelt.end())
      diags_->error(loc_of(file_, node_), field(key), "missing required field");
  missing_.clear();
}

}  // namespace ridgeline::spec
