#include "ridgeline/spec/yaml_node.hpp"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <istream>
#include <streambuf>
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

namespace {

/// The text as an input stream, without a copy (yaml-cpp's parser reads an
/// std::istream).
class TextBuffer : public std::streambuf {
 public:
  explicit TextBuffer(std::string_view text) {
    char* begin = const_cast<char*>(text.data());  // read only: the get area is never written
    setg(begin, begin, begin + text.size());
  }
};

constexpr std::size_t npos = std::string_view::npos;

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

}  // namespace

/// Builds the tree from yaml-cpp's parser events: a stack of open lists and
/// maps, each node attached to its parent when complete.
class YamlBuilder final : public YAML::EventHandler {
 public:
  YamlBuilder(std::string_view text, const std::string& file, const char* language)
      : text_(text), file_(file), language_(language) {}

  YamlNode build() {
    // yaml-cpp takes any bytes as text: checked first, at the first bad byte.
    if (const std::size_t at = invalid_utf8_at(text_); at != std::string_view::npos)
      throw support::SpecError(loc(mark_at(at)), "",
                               fmt::format("not UTF-8 text (byte 0x{:02X} starts no UTF-8 character here)",
                                           static_cast<unsigned char>(text_[at])));
    TextBuffer buffer(text_);
    std::istream in(&buffer);
    try {
      YAML::Parser parser(in);
      parser.HandleNextDocument(*this);  // the first document; the rest of the stream is not read
    } catch (const YAML::Exception& e) {
      fail(e);
    }
    duplicates_.throw_if_errors();
    return root_;
  }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnAnchor(const YAML::Mark&, const std::string& name) override { anchor_name_ = name; }

  void OnNull(const YAML::Mark& m, YAML::anchor_t anchor) override {
    name_anchor(anchor);
    auto d = std::make_shared<YamlNode::Data>();
    d->kind = YamlNode::Kind::kNull;
    d->mark = mark_of(m);
    // An empty value (`key:` and nothing) is marked where the next token
    // starts; it takes its key's position.
    if (!written_at(m) && !stack_.empty() && stack_.back().node->kind == YamlNode::Kind::kMap &&
        !stack_.back().at_key)
      d->mark = stack_.back().key.mark();
    attach(YamlNode(std::move(d)), anchor);
  }

  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor, const std::string& value) override {
    name_anchor(anchor);
    auto d = std::make_shared<YamlNode::Data>();
    d->kind = YamlNode::Kind::kScalar;
    d->mark = mark_of(m);
    d->text = value;
    attach(YamlNode(std::move(d)), anchor);
  }

  void OnAlias(const YAML::Mark& m, YAML::anchor_t anchor) override {
    if (anchor >= anchors_.size() || !anchors_[anchor].IsDefined()) {
      const std::string& name = anchor < names_.size() ? names_[anchor] : kEmpty;
      fail_at(m, fmt::format("the alias *{} names no complete anchor &{} before it", name, name));
    }
    attach(anchors_[anchor], YAML::NullAnchor);
  }

  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value style) override {
    open(m, anchor, YamlNode::Kind::kSequence, style);
  }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value style) override {
    open(m, anchor, YamlNode::Kind::kMap, style);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapEnd() override { close(); }

 private:
  struct Frame {
    std::shared_ptr<YamlNode::Data> node;
    YAML::anchor_t anchor = YAML::NullAnchor;
    bool flow = false;     // written in brackets or braces
    std::string path;      // the dotted path of this list or map ("" at the top)
    bool at_key = true;    // maps: the next node is a key
    YamlNode key;          // maps: the key of the value that follows
    std::string key_path;  // maps: the path of the value that follows
    std::unordered_map<std::string_view, int> first_line;  // maps, once past kScanned entries
  };
  static constexpr std::size_t kScanned = 16;
  // yaml-cpp's parser refuses a document nested 500 deep (its recursion
  // guard, "bad file"); this limit is met first and named.
  static constexpr std::size_t kMaxDepth = 256;

  static YamlNode::Mark mark_of(const YAML::Mark& m) { return {m.line, m.column}; }

  /// A parse error at yaml-cpp's mark, in yaml-cpp's words, or ours where
  /// they name what was expected; the flow list or map it happened in, if
  /// any, as context.
  [[noreturn]] void fail(const YAML::Exception& e) const {
    std::string what = e.msg;
    if (what.starts_with(YAML::ErrorMsg::UNKNOWN_ANCHOR)) {
      const std::string name = alias_name_at(e.mark);
      fail_at(e.mark, fmt::format("the alias *{} names no complete anchor &{} before it", name, name));
    }
    if (what == YAML::ErrorMsg::END_OF_SEQ_FLOW) what = "did not find expected ',' or ']'";
    if (what == YAML::ErrorMsg::END_OF_MAP_FLOW) what = "did not find expected ',' or '}'";
    for (auto f = stack_.rbegin(); f != stack_.rend(); ++f)
      if (f->flow) {
        what += fmt::format(" (while parsing a flow {} at line {}, column {})",
                            f->node->kind == YamlNode::Kind::kMap ? "mapping" : "sequence", f->node->mark.line + 1,
                            f->node->mark.column + 1);
        break;
      }
    fail_at(e.mark.is_null() ? mark_at(text_.size()) : mark_of(e.mark), what);
  }

  /// The name of the alias written at `m` (`*name`).
  std::string alias_name_at(const YAML::Mark& m) const {
    if (m.pos < 0 || static_cast<std::size_t>(m.pos) >= text_.size() || text_[m.pos] != '*') return "";
    const std::size_t begin = static_cast<std::size_t>(m.pos) + 1;
    std::size_t end = begin;
    while (end < text_.size() && !is_blank(text_[end]) && std::string_view(",[]{}").find(text_[end]) == npos) ++end;
    return std::string(text_.substr(begin, end - begin));
  }

  /// The 0-based line and column (in bytes) of byte `offset` of the text.
  YamlNode::Mark mark_at(std::size_t offset) const {
    YamlNode::Mark m{0, 0};
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
  support::SourceLoc loc(const YamlNode::Mark& m) const { return {file_, m.line + 1, m.column + 1}; }

  [[noreturn]] void fail_at(const YamlNode::Mark& m, const std::string& what) const {
    throw support::SpecError(loc(m), "", fmt::format("malformed {}: {}", language_, what));
  }
  [[noreturn]] void fail_at(const YAML::Mark& m, const std::string& what) const { fail_at(mark_of(m), what); }

  /// True when a null marked at `m` is written there: a null word (`~`,
  /// `null`, `Null`, `NULL`) that is not a key, or a tag or anchor. An empty
  /// value is marked at whatever follows it.
  bool written_at(const YAML::Mark& m) const {
    if (m.pos < 0 || static_cast<std::size_t>(m.pos) >= text_.size()) return false;
    const std::string_view rest = text_.substr(static_cast<std::size_t>(m.pos));
    if (rest[0] == '!' || rest[0] == '&') return true;
    for (const std::string_view word : {"~", "null", "Null", "NULL"}) {
      if (!rest.starts_with(word)) continue;
      std::size_t i = word.size();
      if (i < rest.size() && !is_blank(rest[i]) && rest[i] != ',' && rest[i] != ']' && rest[i] != '}' &&
          rest[i] != '#')
        return false;
      while (i < rest.size() && (rest[i] == ' ' || rest[i] == '\t')) ++i;
      return i == rest.size() || rest[i] != ':';  // `null:` is the next key
    }
    return false;
  }

  void open(const YAML::Mark& m, YAML::anchor_t anchor, YamlNode::Kind kind, YAML::EmitterStyle::value style) {
    if (stack_.size() >= kMaxDepth) fail_at(m, fmt::format("nested deeper than {} levels", kMaxDepth));
    name_anchor(anchor);
    Frame f;
    f.node = std::make_shared<YamlNode::Data>();
    f.node->kind = kind;
    f.node->mark = mark_of(m);
    f.anchor = anchor;
    f.flow = style == YAML::EmitterStyle::Flow;
    f.path = child_path();
    stack_.push_back(std::move(f));
  }

  void close() {
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    attach(YamlNode(std::move(f.node)), f.anchor);
  }

  /// Records the name OnAnchor gave for the node that opens with `anchor`.
  void name_anchor(YAML::anchor_t anchor) {
    if (anchor == YAML::NullAnchor) return;
    if (names_.size() <= anchor) names_.resize(anchor + 1);
    names_[anchor] = std::move(anchor_name_);
    anchor_name_.clear();
  }

  /// The path of the node that comes next: a map's value has its key's path,
  /// a list's item its index; a key itself (a list or map used as a key) the map's path.
  std::string child_path() const {
    if (stack_.empty()) return "";
    const Frame& f = stack_.back();
    if (f.node->kind == YamlNode::Kind::kSequence) return fmt::format("{}[{}]", f.path, f.node->items.size());
    return f.at_key ? f.path : f.key_path;
  }

  void attach(YamlNode n, YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor) {  // complete: later aliases may name it
      if (anchors_.size() <= anchor) anchors_.resize(anchor + 1);
      anchors_[anchor] = n;
    }
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
  std::string anchor_name_;           // the name OnAnchor gave for the node that follows
  std::vector<std::string> names_;    // by yaml-cpp's anchor number
  std::vector<YamlNode> anchors_;     // by anchor number; undefined until the node is complete
  YamlNode root_;
  support::DiagnosticList duplicates_;
};

YamlNode parse_yaml(std::string_view text, const std::string& file, const char* language) {
  return YamlBuilder(text, file, language).build();
}

}  // namespace ridgeline::spec
