#include "ridgeline/spec/yaml_node.hpp"

#include <yaml.h>

#include <fmt/format.h>

#include <unordered_map>
#include <utility>

#include "ridgeline/spec/yaml_reader.hpp"
#include "ridgeline/support/diagnostics.hpp"

namespace ridgeline::spec {

struct YamlNode::Data {
  Kind kind = Kind::kUndefined;
  Mark mark;
  std::string text;              // kScalar
  std::vector<YamlNode> items;   // kSequence
  std::vector<YamlPair> pairs;   // kMap
};

namespace {

const std::string kEmpty;
const std::vector<YamlNode> kNoItems;
const std::vector<YamlPair> kNoPairs;

}  // namespace

YamlNode YamlNode::scalar(std::string text) {
  auto d = std::make_shared<Data>();
  d->kind = Kind::kScalar;
  d->text = std::move(text);
  return YamlNode(std::move(d));
}

YamlNode YamlNode::map() {
  auto d = std::make_shared<Data>();
  d->kind = Kind::kMap;
  return YamlNode(std::move(d));
}

YamlNode::Kind YamlNode::kind() const { return d_ ? d_->kind : Kind::kUndefined; }
const std::string& YamlNode::Scalar() const { return d_ && d_->kind == Kind::kScalar ? d_->text : kEmpty; }
YamlNode::Mark YamlNode::mark() const { return d_ ? d_->mark : Mark{}; }

std::size_t YamlNode::size() const {
  if (!d_) return 0;
  return d_->kind == Kind::kSequence ? d_->items.size() : d_->kind == Kind::kMap ? d_->pairs.size() : 0;
}

YamlNode YamlNode::operator[](std::size_t i) const {
  if (!d_ || d_->kind != Kind::kSequence || i >= d_->items.size()) return {};
  return d_->items[i];
}

YamlNode YamlNode::operator[](std::string_view key) const {
  if (!d_ || d_->kind != Kind::kMap) return {};
  for (const YamlPair& p : d_->pairs)
    if (p.first.IsScalar() && p.first.Scalar() == key) return p.second;
  return {};
}

const std::vector<YamlPair>& YamlNode::pairs() const { return d_ && d_->kind == Kind::kMap ? d_->pairs : kNoPairs; }
const std::vector<YamlNode>& YamlNode::items() const {
  return d_ && d_->kind == Kind::kSequence ? d_->items : kNoItems;
}

void YamlNode::set(std::string_view key, YamlNode value) {
  if (!d_ || d_->kind != Kind::kMap) return;
  for (YamlPair& p : d_->pairs)
    if (p.first.IsScalar() && p.first.Scalar() == key) {
      p.second = std::move(value);
      return;
    }
  d_->pairs.push_back({scalar(std::string(key)), std::move(value)});
}

/// Builds the tree from libyaml's events: a stack of open lists and maps,
/// each node attached to its parent when complete.
class YamlBuilder {
 public:
  YamlBuilder(std::string_view text, const std::string& file, const char* language)
      : text_(text), file_(file), language_(language) {}

  YamlNode build() {
    // Checked here rather than by libyaml's reader, which names the byte
    // after a bad one ("invalid trailing UTF-8 octet").
    if (const std::size_t at = invalid_utf8_at(text_); at != std::string_view::npos)
      throw support::SpecError(loc(mark_at(at)), "",
                               fmt::format("not UTF-8 text (byte 0x{:02X} starts no UTF-8 character here)",
                                           static_cast<unsigned char>(text_[at])));
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) throw support::SpecError({file_, 0, 0}, "", "out of memory reading YAML");
    struct Closer {
      yaml_parser_t* p;
      ~Closer() { yaml_parser_delete(p); }
    } closer{&parser};
    yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text_.data()), text_.size());
    yaml_event_t event;
    for (bool done = false; !done;) {
      if (!yaml_parser_parse(&parser, &event)) fail(parser);
      struct EventDeleter {
        yaml_event_t* e;
        ~EventDeleter() { yaml_event_delete(e); }
      } deleter{&event};
      done = handle(event);
    }
    duplicates_.throw_if_errors();
    return root_;
  }

 private:
  struct Frame {
    std::shared_ptr<YamlNode::Data> node;
    std::string anchor;
    std::string path;      // the dotted path of this list or map ("" at the top)
    bool at_key = true;    // maps: the next node is a key
    YamlNode key;          // maps: the key of the value that follows
    std::string key_path;  // maps: the path of the value that follows
    std::unordered_map<std::string_view, int> first_line;  // maps, once past kScanned entries
  };
  static constexpr std::size_t kScanned = 16;
  static constexpr std::size_t kMaxDepth = 512;

  static YamlNode::Mark mark_of(const yaml_mark_t& m) {
    return {static_cast<int>(m.line), static_cast<int>(m.column)};
  }

  [[noreturn]] void fail(const yaml_parser_t& p) const {
    std::string what = p.problem ? p.problem : "unreadable text";
    if (p.problem_value != -1 && p.error == YAML_READER_ERROR)
      what += fmt::format(" (byte 0x{:02X} at offset {})", p.problem_value & 0xFF, p.problem_offset);
    // A reader error has an offset, not a line.
    const yaml_mark_t at = p.error == YAML_READER_ERROR ? mark_at(p.problem_offset) : p.problem_mark;
    if (p.context)
      what += fmt::format(" ({} at line {}, column {})", p.context, p.context_mark.line + 1, p.context_mark.column + 1);
    fail_at(at, what);
  }

  /// The 0-based line and column (in bytes) of byte `offset` of the text.
  yaml_mark_t mark_at(std::size_t offset) const {
    yaml_mark_t m{};
    for (std::size_t i = 0; i < offset && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++m.line;
        m.column = 0;
      } else {
        ++m.column;
      }
    }
    return m;
  }

  /// A parser mark (0-based) as a diagnostic's position (1-based).
  support::SourceLoc loc(const yaml_mark_t& m) const {
    return {file_, static_cast<int>(m.line) + 1, static_cast<int>(m.column) + 1};
  }

  [[noreturn]] void fail_at(const yaml_mark_t& m, const std::string& what) const {
    throw support::SpecError(loc(m), "", fmt::format("malformed {}: {}", language_, what));
  }

  static std::string text_of(const yaml_char_t* s) { return s ? reinterpret_cast<const char*>(s) : ""; }

  /// One event; true once the first document is complete (the rest of the
  /// stream is not read, as a single-document loader does).
  bool handle(const yaml_event_t& e) {
    switch (e.type) {
      case YAML_STREAM_END_EVENT:
      case YAML_DOCUMENT_END_EVENT: return true;
      case YAML_SCALAR_EVENT: {
        const auto& s = e.data.scalar;
        auto d = std::make_shared<YamlNode::Data>();
        d->mark = mark_of(e.start_mark);
        d->text.assign(reinterpret_cast<const char*>(s.value), s.length);
        const bool null_text = d->text.empty() || d->text == "~" || d->text == "null" || d->text == "Null" ||
                               d->text == "NULL";
        d->kind = s.style == YAML_PLAIN_SCALAR_STYLE && !s.tag && null_text ? YamlNode::Kind::kNull
                                                                            : YamlNode::Kind::kScalar;
        if (d->kind == YamlNode::Kind::kNull) d->text.clear();
        // An empty value (`key:` and nothing) is marked where the parser
        // noticed it was missing; it takes its key's position.
        const bool empty = s.length == 0 && s.style == YAML_PLAIN_SCALAR_STYLE && !s.tag;
        if (empty && !stack_.empty() && stack_.back().node->kind == YamlNode::Kind::kMap && !stack_.back().at_key)
          d->mark = stack_.back().key.mark();
        attach(YamlNode(d), text_of(s.anchor));
        return false;
      }
      case YAML_ALIAS_EVENT: {
        const std::string name = text_of(e.data.alias.anchor);
        auto it = anchors_.find(name);
        if (it == anchors_.end())
          fail_at(e.start_mark, fmt::format("the alias *{} names no complete anchor &{} before it", name, name));
        attach(it->second, "");
        return false;
      }
      case YAML_SEQUENCE_START_EVENT:
      case YAML_MAPPING_START_EVENT: {
        if (stack_.size() >= kMaxDepth) fail_at(e.start_mark, fmt::format("nested deeper than {} levels", kMaxDepth));
        const bool is_map = e.type == YAML_MAPPING_START_EVENT;
        Frame f;
        f.node = std::make_shared<YamlNode::Data>();
        f.node->kind = is_map ? YamlNode::Kind::kMap : YamlNode::Kind::kSequence;
        f.node->mark = mark_of(e.start_mark);
        f.anchor = text_of(is_map ? e.data.mapping_start.anchor : e.data.sequence_start.anchor);
        f.path = child_path();
        stack_.push_back(std::move(f));
        return false;
      }
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT: {
        Frame f = std::move(stack_.back());
        stack_.pop_back();
        attach(YamlNode(std::move(f.node)), f.anchor);
        return false;
      }
      default: return false;  // stream and document start
    }
  }

  /// The path of the node that comes next: a map's value has its key's path,
  /// a list's item its index; a key itself (a list or map used as a key) the map's path.
  std::string child_path() const {
    if (stack_.empty()) return "";
    const Frame& f = stack_.back();
    if (f.node->kind == YamlNode::Kind::kSequence) return fmt::format("{}[{}]", f.path, f.node->items.size());
    return f.at_key ? f.path : f.key_path;
  }

  void attach(YamlNode n, const std::string& anchor) {
    if (!anchor.empty()) anchors_[anchor] = n;  // complete: later aliases may name it
    if (stack_.empty()) {
      if (!root_.IsDefined()) root_ = std::move(n);
      return;
    }
    Frame& f = stack_.back();
    if (f.node->kind == YamlNode::Kind::kSequence) {
      f.node->items.push_back(std::move(n));
      return;
    }
    if (f.at_key) {
      f.at_key = false;
      f.key_path = n.IsScalar() ? (f.path.empty() ? n.Scalar() : f.path + "." + n.Scalar()) : f.path;
      f.key = std::move(n);
      return;
    }
    f.at_key = true;
    if (const int first = first_line_of(f); first > 0) {
      const YamlNode::Mark m = f.key.mark();
      if (!duplicates_.full())
        duplicates_.error({file_, m.line + 1, m.column + 1}, f.key_path,
                          fmt::format("given twice (first at line {})", first));
      return;  // the first stays, as a lookup finds it
    }
    f.node->pairs.push_back({std::move(f.key), std::move(n)});
    if (f.node->pairs.size() > kScanned) {
      if (f.first_line.empty())
        for (const YamlPair& p : f.node->pairs)
          if (p.first.IsScalar()) f.first_line.emplace(p.first.Scalar(), p.first.mark().line + 1);
      const YamlPair& p = f.node->pairs.back();
      if (p.first.IsScalar()) f.first_line.emplace(p.first.Scalar(), p.first.mark().line + 1);
    }
  }

  /// The line where the pending key of map `f` was first given, 0 when new
  /// (or not a scalar: such a key is reported by MapReader::finish).
  int first_line_of(const Frame& f) const {
    if (!f.key.IsScalar()) return 0;
    const std::string& k = f.key.Scalar();
    if (!f.first_line.empty()) {
      auto it = f.first_line.find(k);
      return it == f.first_line.end() ? 0 : it->second;
    }
    for (const YamlPair& p : f.node->pairs)
      if (p.first.IsScalar() && p.first.Scalar() == k) return p.first.mark().line + 1;
    return 0;
  }

  std::string_view text_;
  const std::string& file_;
  const char* language_;
  std::vector<Frame> stack_;
  std::unordered_map<std::string, YamlNode> anchors_;
  YamlNode root_;
  support::DiagnosticList duplicates_;
};

YamlNode parse_yaml(std::string_view text, const std::string& file, const char* language) {
  return YamlBuilder(text, file, language).build();
}

}  // namespace ridgeline::spec
