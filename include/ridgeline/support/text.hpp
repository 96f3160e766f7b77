// Small text helpers the diagnostics and views share.
#pragma once

#include <string>
#include <vector>

namespace ridgeline::support {

/// "a, b, c": a list's items as messages and headers print them.
inline std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

}  // namespace ridgeline::support
