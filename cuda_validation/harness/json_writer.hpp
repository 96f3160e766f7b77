// A minimal streaming JSON writer (no external library, so the suite builds
// with nothing but the CUDA toolkit). Strings are escaped per RFC 8259;
// doubles are written in the shortest form that reads back to the same value;
// a non-finite double is refused (std::invalid_argument), since JSON has no
// spelling for it. A container opened with `compact` is written on one line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ridgeline::cuda_bench {

class JsonWriter {
 public:
  void begin_object(bool compact = false);
  void end_object();
  void begin_array(bool compact = false);
  void end_array();

  /// Inside an object: the next value's key.
  void key(std::string_view name);

  void value(std::string_view s);
  void value(const char* s) { value(std::string_view(s)); }
  void value(double x);
  void value(std::int64_t x);
  void value(int x) { value(static_cast<std::int64_t>(x)); }
  void value(bool b);

  template <typename T>
  void field(std::string_view name, const T& v) {
    key(name);
    value(v);
  }

  /// The document so far, newline-terminated once the outermost container is closed.
  const std::string& str() const { return out_; }

 private:
  struct Level {
    bool object;
    bool compact;
    int count;
  };
  void before_value();
  void open(char bracket, bool object, bool compact);
  void close(char bracket, bool object);
  void newline_indent();

  std::string out_;
  std::vector<Level> stack_;
  bool after_key_ = false;
};

/// `s` as a quoted, escaped JSON string.
std::string json_quote(std::string_view s);

}  // namespace ridgeline::cuda_bench
