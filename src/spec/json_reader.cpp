#include "ridgeline/spec/json_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <unordered_map>

#include "ridgeline/spec/yaml_reader.hpp"
#include "ridgeline/support/mapped_file.hpp"

namespace ridgeline::spec {

namespace {

constexpr int kMaxDepth = 512;

/// The dotted path of the value being read ("rows[3].id"), a chain up the
/// parser's stack, spelt out only when a diagnostic names it.
struct Path {
  const Path* parent = nullptr;  // nullptr: the document's root, ""
  std::string_view key;          // an object member's key
  std::size_t index = 0;         // an array item's index, when is_index
  bool is_index = false;

  std::string str() const {
    if (!parent) return "";
    const std::string up = parent->str();
    if (is_index) return fmt::format("{}[{}]", up, index);
    return up.empty() ? std::string(key) : up + "." + std::string(key);
  }
};

/// A position in the text, made a SourceLoc (which holds the file name) only for a diagnostic.
struct Pos {
  int line = 0;
  int col = 0;
};

/// A recursive-descent reader of RFC 8259 JSON that tracks line and column.
/// A syntax error throws at once; keys given twice are collected (up to the
/// diagnostics limit) and thrown when the document is complete.
class Parser {
 public:
  /// `stream_key` and `stream`: the top-level list whose items go to `stream` (parse_json_streaming).
  Parser(std::string_view text, const std::string& file, std::string_view stream_key = {},
         const JsonItemFn* stream = nullptr)
      : t_(text),
        file_(file),
        shared_file_(std::make_shared<const std::string>(file)),
        stream_key_(stream_key),
        stream_(stream) {
    if (t_.starts_with("\xEF\xBB\xBF")) i_ = line_start_ = 3;  // a UTF-8 byte-order mark
  }

  JsonValue document() {
    skip_ws();
    if (i_ == t_.size()) throw support::SpecError({file_, 1, 1}, "", "file is empty; expected a mapping of fields");
    JsonValue root = value(Path{}, 0);
    skip_ws();
    if (i_ != t_.size()) fail(fmt::format("expected the end of the file after the top-level value, got {}", got()));
    duplicates_.throw_if_errors();
    return root;
  }

 private:
  Pos pos() const { return {line_, static_cast<int>(i_ - line_start_) + 1}; }
  support::SourceLoc loc(Pos p) const { return {file_, p.line, p.col}; }
  support::SourceLoc here() const { return loc(pos()); }
  JsonLoc value_loc() const { return {shared_file_, line_, static_cast<int>(i_ - line_start_) + 1}; }
  [[noreturn]] void fail_at(const support::SourceLoc& at, const std::string& message) const {
    throw support::SpecError(at, "", "malformed JSON: " + message);
  }
  [[noreturn]] void fail_at(Pos at, const std::string& message) const { fail_at(loc(at), message); }
  [[noreturn]] void fail(const std::string& message) const { fail_at(here(), message); }
  bool at_end() const { return i_ >= t_.size(); }
  char peek() const { return at_end() ? '\0' : t_[i_]; }

  /// The next character, as a message names it.
  std::string got() const {
    if (at_end()) return "end of file";
    const auto c = static_cast<unsigned char>(t_[i_]);
    if (c == '\'') return "a single quote (JSON strings take double quotes)";
    if (c > 0x20 && c < 0x7F) return fmt::format("'{}'", static_cast<char>(c));
    return fmt::format("byte 0x{:02X}", c);
  }

  void skip_ws() {
    while (!at_end()) {
      const char c = t_[i_];
      if (c == '\n') {
        line_start_ = ++i_;
        ++line_;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        ++i_;
      } else {
        break;
      }
    }
  }

  JsonValue value(const Path& path, int depth) {
    JsonValue v;
    value_into(v, path, depth);
    return v;
  }

  /// Reads the value at the cursor into `v` (a fresh JsonValue): each value
  /// is built where it ends up, in its parent's list, not moved there.
  void value_into(JsonValue& v, const Path& path, int depth) {
    if (depth > kMaxDepth) fail(fmt::format("nested deeper than {} levels", kMaxDepth));
    const char c = peek();
    if (c == '{') return object(v, path, depth);
    if (c == '[') return array(v, path, depth);
    if (c == '"') {
      v.kind = JsonValue::Kind::kString;
      v.loc = value_loc();
      string_into(v.text, path);
      return;
    }
    if (c == '-' || (c >= '0' && c <= '9')) return number(v);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return word(v);
    fail(fmt::format("expected a value, got {}", got()));
  }

  void object(JsonValue& v, const Path& path, int depth) {
    v.kind = JsonValue::Kind::kObject;
    v.loc = value_loc();
    ++i_;
    // The line of each member's key, for "given twice (first at line N)":
    // the first members' searched in order, an index once there are more.
    constexpr std::size_t kScanned = 16;
    std::array<int, kScanned> scanned_lines;
    std::unordered_map<std::string, int> indexed_lines;
    skip_ws();
    if (peek() == '}') {
      ++i_;
      return;
    }
    std::vector<JsonMember>& ms = v.members;
    ms.reserve(kScanned);  // one allocation for most objects (a residual row has 9 or 10 members)
    for (;;) {
      if (peek() != '"') fail(fmt::format("expected a key in double quotes, got {}", got()));
      const Pos key_pos = pos();
      const std::size_t n = ms.size();
      JsonMember& member = ms.emplace_back();
      const std::string& key = member.key;
      string_into(member.key, path);
      skip_ws();
      if (peek() != ':') fail(fmt::format("expected ':' after the key, got {}", got()));
      ++i_;
      skip_ws();
      const Path field{&path, key};
      value_into(member.value, field, depth + 1);
      if (n == kScanned && indexed_lines.empty())
        for (std::size_t m = 0; m < n; ++m) indexed_lines.emplace(ms[m].key, scanned_lines[m]);
      int first_line = 0;  // lines count from 1: 0 = a new key
      if (indexed_lines.empty()) {
        for (std::size_t m = 0; m < n && first_line == 0; ++m)
          if (ms[m].key == key) first_line = scanned_lines[m];
        if (first_line == 0) scanned_lines[n] = key_pos.line;
      } else if (auto [it, fresh] = indexed_lines.emplace(key, key_pos.line); !fresh) {
        first_line = it->second;
      }
      if (first_line != 0) {
        if (!duplicates_.full())
          duplicates_.error(loc(key_pos), field.str(), fmt::format("given twice (first at line {})", first_line));
        ms.pop_back();
      }
      skip_ws();
      if (peek() == '}') {
        ++i_;
        return;
      }
      if (peek() != ',') fail(fmt::format("expected ',' or '}}' after a value, got {}", got()));
      const Pos comma = pos();
      ++i_;
      skip_ws();
      if (peek() == '}') fail_at(comma, "trailing comma before '}'");
    }
  }

  void array(JsonValue& v, const Path& path, int depth) {
    v.kind = JsonValue::Kind::kArray;
    v.loc = value_loc();
    ++i_;
    skip_ws();
    if (peek() == ']') {
      ++i_;
      return;
    }
    // The streamed list: the top-level object's member `stream_key_`.
    const bool streamed = stream_ && depth == 1 && path.parent && !path.parent->parent && !path.is_index &&
                          path.key == stream_key_;
    JsonValue one;  // a streamed item, its memory reused by the next
    for (std::size_t index = 0;; ++index) {
      const Path item{&path, {}, index, true};
      if (streamed) {
        one = JsonValue{};
        value_into(one, item, depth + 1);
        (*stream_)(one, index);
      } else {
        value_into(v.items.emplace_back(), item, depth + 1);
      }
      skip_ws();
      if (peek() == ']') {
        ++i_;
        return;
      }
      if (peek() != ',') fail(fmt::format("expected ',' or ']' after a value, got {}", got()));
      const Pos comma = pos();
      ++i_;
      skip_ws();
      if (peek() == ']') fail_at(comma, "trailing comma before ']'");
    }
  }

  unsigned hex4() {
    unsigned cp = 0;
    for (int k = 0; k < 4; ++k, ++i_) {
      const char c = peek();
      cp <<= 4;
      if (c >= '0' && c <= '9') cp |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') cp |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') cp |= static_cast<unsigned>(c - 'A' + 10);
      else fail(fmt::format("expected 4 hex digits after \\u, got {}", got()));
    }
    return cp;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  /// A string at the opening quote, decoded into `out`; `path` names it when its bytes are not UTF-8.
  void string_into(std::string& out, const Path& path) {
    const Pos start = pos();
    ++i_;
    out.clear();
    bool ascii = true;  // ASCII is UTF-8: only text with a byte >= 0x80 is checked
    for (;;) {
      // The run of characters up to a quote, an escape or a control character, at once.
      std::size_t end = i_;
      unsigned char high = 0;
      for (; end < t_.size(); ++end) {
        const auto c = static_cast<unsigned char>(t_[end]);
        if (c == '"' || c == '\\' || c < 0x20) break;
        high |= c;
      }
      out.append(t_.data() + i_, end - i_);
      ascii = ascii && high < 0x80;
      i_ = end;
      if (at_end()) fail_at(start, "string not closed (missing '\"')");
      const auto c = static_cast<unsigned char>(t_[i_]);
      if (c == '"') {
        ++i_;
        break;
      }
      if (c < 0x20) fail("control character in a string; write it as an escape such as \\n");
      const Pos esc = pos();
      ++i_;
      const char e = peek();
      ++i_;
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (!(peek() == '\\' && i_ + 1 < t_.size() && t_[i_ + 1] == 'u'))
              fail_at(esc, "unpaired surrogate in a \\u escape");
            i_ += 2;
            const unsigned lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) fail_at(esc, "unpaired surrogate in a \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail_at(esc, "unpaired surrogate in a \\u escape");
          } else if (cp == 0) {
            fail_at(esc, "\\u0000 (a NUL character) in a string");
          }
          append_utf8(out, cp);
          ascii = ascii && cp < 0x80;
          break;
        }
        default:
          if (e == '\0' && i_ > t_.size()) fail_at(start, "string not closed (missing '\"')");
          fail_at(esc, fmt::format("invalid escape '\\{}' in a string", e));
      }
    }
    if (!ascii && !valid_utf8(out)) throw support::SpecError(loc(start), path.str(), "expected UTF-8 text");
  }

  void digits() {
    while (peek() >= '0' && peek() <= '9') ++i_;
  }

  void number(JsonValue& v) {
    v.kind = JsonValue::Kind::kNumber;
    v.loc = value_loc();
    const size_t start = i_;
    if (peek() == '-') {
      ++i_;
      if (peek() == 'I') {
        i_ = start;
        return word(v);
      }
    }
    if (peek() == '0') {
      ++i_;
      if (peek() >= '0' && peek() <= '9') fail_at(v.loc, "a number must not start with 0 (leading zero)");
    } else if (peek() >= '1' && peek() <= '9') {
      digits();
    } else {
      fail(fmt::format("expected a digit after '-', got {}", got()));
    }
    if (peek() == '.') {
      ++i_;
      if (!(peek() >= '0' && peek() <= '9')) fail(fmt::format("expected a digit after '.', got {}", got()));
      digits();
    }
    if (peek() == 'e' || peek() == 'E') {
      ++i_;
      if (peek() == '+' || peek() == '-') ++i_;
      if (!(peek() >= '0' && peek() <= '9')) fail(fmt::format("expected a digit in the exponent, got {}", got()));
      digits();
    }
    v.text.assign(t_.substr(start, i_ - start));
  }

  /// true, false, null; anything else spelt with letters is an error.
  void word(JsonValue& v) {
    v.loc = value_loc();
    const size_t start = i_;
    if (peek() == '-') ++i_;
    while (!at_end() && (std::isalnum(static_cast<unsigned char>(t_[i_])) || t_[i_] == '_')) ++i_;
    const std::string w(t_.substr(start, std::min<size_t>(i_ - start, 40)));
    if (w == "true" || w == "false") {
      v.kind = JsonValue::Kind::kBool;
      v.text = w;
      return;
    }
    if (w == "null") return;
    if (w == "NaN" || w == "Infinity" || w == "-Infinity")
      fail_at(v.loc, fmt::format("{} is not a JSON value; write a number or null", w));
    std::string lower;
    for (char c : w) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string hint;
    if (lower == "true" || lower == "false" || lower == "null") hint = fmt::format("; did you mean '{}'?", lower);
    if (lower == "none") hint = "; did you mean 'null'?";
    fail_at(v.loc, fmt::format("expected a value, got '{}'{}", w, hint));
  }

  std::string_view t_;
  const std::string& file_;
  std::shared_ptr<const std::string> shared_file_;
  std::string_view stream_key_;
  const JsonItemFn* stream_ = nullptr;
  size_t i_ = 0;
  size_t line_start_ = 0;
  int line_ = 1;
  support::DiagnosticList duplicates_;
};

}  // namespace

const JsonValue* JsonValue::find(std::string_view key) const {
  for (const auto& [k, v] : members)
    if (k == key) return &v;
  return nullptr;
}

std::string describe(const JsonValue& v) {
  switch (v.kind) {
    case JsonValue::Kind::kNull: return "null";
    case JsonValue::Kind::kBool:
    case JsonValue::Kind::kNumber: return v.text;
    case JsonValue::Kind::kString: return fmt::format("the string \"{}\"", v.text);
    case JsonValue::Kind::kArray: return "a list";
    case JsonValue::Kind::kObject: return "an object";
  }
  return "";
}

JsonValue parse_json(std::string_view text, const std::string& file) { return Parser(text, file).document(); }

JsonValue load_json_file(const std::string& path) { return parse_json(read_text_file(path), path); }

JsonValue parse_json_streaming(std::string_view text, const std::string& file, std::string_view key,
                               const JsonItemFn& item) {
  return Parser(text, file, key, &item).document();
}

JsonValue load_json_file_streaming(const std::string& path, std::string_view key, const JsonItemFn& item) {
  // Mapped from the page cache rather than copied into fresh heap pages: the
  // residuals behind every interval are 78 KiB. An unmappable file (empty, a
  // pipe) is read as usual.
  const support::MappedFile mapped(path);
  if (mapped.text().empty()) return parse_json_streaming(read_text_file(path), path, key, item);
  // read_text_file's check, on the mapped bytes.
  if (mapped.text().find('\0') != std::string_view::npos)
    throw support::SpecError({path, 0, 0}, "", "not a text file (contains a NUL byte)");
  return parse_json_streaming(mapped.text(), path, key, item);
}

void apply_overrides(JsonValue& root, std::span<const FieldOverride> overrides, support::DiagnosticList& d) {
  for (const FieldOverride& o : overrides) {
    const std::vector<std::string> parts = split_field_path(o.field);
    JsonValue* cur = &root;
    bool ok = true;
    for (size_t i = 0; i < parts.size() && ok; ++i) {
      if (cur->kind != JsonValue::Kind::kObject) {
        std::string prefix = parts[0];
        for (size_t k = 1; k < i; ++k) prefix += "." + parts[k];
        d.error({}, o.label, fmt::format("'{}' holds a value, not an object of fields", prefix));
        ok = false;
        break;
      }
      auto it = std::find_if(cur->members.begin(), cur->members.end(),
                             [&](const JsonMember& m) { return m.key == parts[i]; });
      if (it == cur->members.end()) {
        cur->members.push_back({parts[i], JsonValue{}});
        it = cur->members.end() - 1;
        if (i + 1 < parts.size()) it->value.kind = JsonValue::Kind::kObject;
      }
      cur = &it->value;
    }
    if (!ok) continue;
    JsonValue v;
    try {
      v = parse_json(o.value, "");
    } catch (const support::SpecError&) {
      v = JsonValue{};
      v.kind = JsonValue::Kind::kString;
      v.text = o.value;
    }
    v.loc = {};
    *cur = std::move(v);
  }
}

JsonMapReader::JsonMapReader(const JsonValue& object, std::string path, support::DiagnosticList& diags)
    : object_(&object), path_(std::move(path)), diags_(&diags) {
  read_.reserve(16);  // one allocation for a row's or a config's keys (growing from one was a fifth of reading a row)
  if (object.kind != JsonValue::Kind::kObject) {
    valid_ = false;
    diags_->error(object.loc, path_, "expected a mapping of fields");
  }
}

bool JsonMapReader::has(const std::string& key) const {
  read_.push_back(key);
  const JsonValue* v = valid_ ? object_->find(key) : nullptr;
  return v && v->kind != JsonValue::Kind::kNull;
}

std::optional<support::SourceLoc> JsonMapReader::loc(const std::string& key) const {
  read_.push_back(key);
  const JsonValue* v = valid_ ? object_->find(key) : nullptr;
  if (!v) return std::nullopt;
  return v->loc;
}

void JsonMapReader::error_at(const std::string& key, const std::string& message) {
  diags_->error(loc(key).value_or(object_->loc), field(key), message);
}

const JsonValue* JsonMapReader::get(const std::string& key, bool required, JsonValue::Kind kind,
                                    const char* expected) {
  read_.push_back(key);
  const JsonValue* v = valid_ ? object_->find(key) : nullptr;
  if (!v) {
    if (required && valid_) missing_.push_back(key);
    return nullptr;
  }
  if (v->kind == JsonValue::Kind::kNull && !required) return nullptr;
  if (v->kind != kind) {
    error_at(key, fmt::format("expected {}, got {}", expected, describe(*v)));
    return nullptr;
  }
  return v;
}

std::optional<std::string> JsonMapReader::string(const std::string& key, bool required) {
  const JsonValue* v = get(key, required, JsonValue::Kind::kString, "a string");
  if (!v) return std::nullopt;
  return v->text;
}

std::optional<long long> JsonMapReader::integer(const std::string& key, bool required, long long min,
                                                long long max) {
  const JsonValue* v = get(key, required, JsonValue::Kind::kNumber, "a whole number");
  if (!v) return std::nullopt;
  if (v->text.find_first_of(".eE") != std::string::npos) {
    error_at(key, fmt::format("expected a whole number, got {}", v->text));
    return std::nullopt;
  }
  std::string error;
  auto n = parse_whole_number(v->text, min, max, error);
  if (!n) error_at(key, error);
  return n;
}

std::optional<double> JsonMapReader::number(const std::string& key, bool required, double min, double max) {
  const JsonValue* v = get(key, required, JsonValue::Kind::kNumber, "a number");
  if (!v) return std::nullopt;
  std::string error;
  auto n = parse_real_number(v->text, min, max, error);
  if (!n) error_at(key, error);
  return n;
}

std::optional<bool> JsonMapReader::boolean(const std::string& key, bool required) {
  const JsonValue* v = get(key, required, JsonValue::Kind::kBool, "true or false");
  if (!v) return std::nullopt;
  return v->text == "true";
}

void JsonMapReader::finish() {
  for (const auto& key : missing_) diags_->error(object_->loc, field(key), "missing required field");
  missing_.clear();
}

}  // namespace ridgeline::spec
