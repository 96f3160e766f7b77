// Small text helpers the diagnostics and views share.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ridgeline::support {

/// "a, b, c": a list's items as messages and headers print them.
inline std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

/// "a", "a and b", "a, b and c": a list's items as a sentence names them.
inline std::string join_and(const std::vector<std::string_view>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    s += i == 0 ? "" : i + 1 == v.size() ? " and " : ", ";
    s += v[i];
  }
  return s;
}

}  // namespace ridgeline::support
