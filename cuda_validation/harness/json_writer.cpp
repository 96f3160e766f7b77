#include "harness/json_writer.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace ridgeline::cuda_bench {

std::string json_quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
  return out;
}

void JsonWriter::newline_indent() {
  out_.push_back('\n');
  out_.append(2 * stack_.size(), ' ');
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (stack_.empty()) {
    if (!out_.empty()) throw std::logic_error("JsonWriter: second top-level value");
    return;
  }
  Level& level = stack_.back();
  if (level.object) throw std::logic_error("JsonWriter: value in an object without a key");
  if (level.count++ > 0) out_.push_back(',');
  if (level.compact) {
    if (level.count > 1) out_.push_back(' ');
  } else {
    newline_indent();
  }
}

void JsonWriter::key(std::string_view name) {
  if (stack_.empty() || !stack_.back().object || after_key_) throw std::logic_error("JsonWriter: misplaced key");
  Level& level = stack_.back();
  if (level.count++ > 0) out_.push_back(',');
  if (level.compact) {
    if (level.count > 1) out_.push_back(' ');
  } else {
    newline_indent();
  }
  out_ += json_quote(name);
  out_ += ": ";
  after_key_ = true;
}

void JsonWriter::open(char bracket, bool object, bool compact) {
  before_value();
  out_.push_back(bracket);
  // A compact container inside a compact one stays compact.
  bool inherited = !stack_.empty() && stack_.back().compact;
  stack_.push_back(Level{object, compact || inherited, 0});
}

void JsonWriter::close(char bracket, bool object) {
  if (stack_.empty() || stack_.back().object != object || after_key_)
    throw std::logic_error("JsonWriter: unbalanced close");
  Level level = stack_.back();
  stack_.pop_back();
  if (level.count > 0 && !level.compact) newline_indent();
  out_.push_back(bracket);
  if (stack_.empty()) out_.push_back('\n');
}

void JsonWriter::begin_object(bool compact) { open('{', true, compact); }
void JsonWriter::end_object() { close('}', true); }
void JsonWriter::begin_array(bool compact) { open('[', false, compact); }
void JsonWriter::end_array() { close(']', false); }

void JsonWriter::value(std::string_view s) {
  before_value();
  out_ += json_quote(s);
}

void JsonWriter::value(double x) {
  if (!std::isfinite(x)) throw std::invalid_argument("JsonWriter: non-finite number");
  before_value();
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof buf, x);
  out_.append(buf, result.ptr);
}

void JsonWriter::value(std::int64_t x) {
  before_value();
  out_ += std::to_string(x);
}

void JsonWriter::value(bool b) {
  before_value();
  out_ += b ? "true" : "false";
}

}  // namespace ridgeline::cuda_bench
