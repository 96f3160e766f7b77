#include "ridgeline/spec/yaml_reader.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <utility>

namespace ridgeline::spec {

support::SourceLoc loc_of(const std::string& file, const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  if (m.is_null()) return {file, 0, 0};
  return {file, m.line + 1, m.column + 1};
}

YAML::Node load_yaml_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw support::SpecError({path, 0, 0}, "", "cannot read file");
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw support::SpecError({path, 0, 0}, "", "cannot read file");
  const std::string text = ss.str();
  if (text.find('\0') != std::string::npos)
    throw support::SpecError({path, 0, 0}, "", "not a text file (contains a NUL byte)");
  try {
    YAML::Node root = YAML::Load(text);
    if (!root.IsDefined() || root.IsNull())
      throw support::SpecError({path, 1, 1}, "", "file is empty; expected a mapping of fields");
    return root;
  } catch (const YAML::ParserException& e) {
    const char* kind = path.ends_with(".json") ? "malformed JSON: " : "malformed YAML: ";
    throw support::SpecError({path, e.mark.line + 1, e.mark.column + 1}, "", kind + e.msg);
  } catch (const YAML::Exception& e) {
    const char* kind = path.ends_with(".json") ? "malformed JSON: " : "malformed YAML: ";
    throw support::SpecError({path, e.mark.line + 1, e.mark.column + 1}, "", kind + e.msg);
  }
}

namespace {

/// True when `s` is well-formed UTF-8 (no overlongs, surrogates or code points above U+10FFFF).
bool valid_utf8(const std::string& s) {
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

}  // namespace

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

void MapReader::error_here(const std::string& message) { diags_->error(loc_of(file_, node_), path_, message); }

YAML::Node MapReader::get(const std::string& key, bool required) {
  known_.push_back(key);
  if (!valid_) return YAML::Node(YAML::NodeType::Undefined);
  YAML::Node n = std::as_const(node_)[key];
  if (!n.IsDefined() || n.IsNull()) {
    if (required) missing_.push_back(key);
    return YAML::Node(YAML::NodeType::Undefined);
  }
  return n;
}

std::optional<std::string> MapReader::string(const std::string& key, bool required) {
  YAML::Node n = get(key, required);
  if (!n.IsDefined()) return std::nullopt;
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

std::optional<long long> MapReader::integer(const std::string& key, bool required, long long min, long long max) {
  auto s = string(key, required);
  if (!s) return std::nullopt;
  long long v = 0;
  size_t used = 0;
  try {
    v = std::stoll(*s, &used);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != s->size()) {
    error_at(key, fmt::format("expected a whole number, got \"{}\"", *s));
    return std::nullopt;
  }
  if (v < min || v > max) {
    if (max >= (1LL << 53))
      error_at(key, fmt::format("expected a whole number >= {}, got {}", min, v));
    else
      error_at(key, fmt::format("expected a whole number from {} to {}, got {}", min, max, v));
    return std::nullopt;
  }
  return v;
}

std::optional<double> MapReader::number(const std::string& key, bool required, double min, double max) {
  auto s = string(key, required);
  if (!s) return std::nullopt;
  double v = 0;
  size_t used = 0;
  try {
    v = std::stod(*s, &used);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != s->size() || !std::isfinite(v)) {
    error_at(key, fmt::format("expected a number, got \"{}\"", *s));
    return std::nullopt;
  }
  if (v < min || v > max) {
    error_at(key, fmt::format("expected a number from {} to {}, got {}", min, max, *s));
    return std::nullopt;
  }
  return v;
}

std::optional<bool> MapReader::boolean(const std::string& key, bool required) {
  auto s = string(key, required);
  if (!s) return std::nullopt;
  if (*s == "true" || *s == "yes" || *s == "on") return true;
  if (*s == "false" || *s == "no" || *s == "off") return false;
  error_at(key, fmt::format("expected true or false, got \"{}\"", *s));
  return std::nullopt;
}

std::optional<double> MapReader::quantity(const std::string& key, units::Dimension dim, bool required,
                                          bool allow_zero) {
  auto s = string(key, required);
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
  if (!n.IsMap()) {
    error_at(key, "expected a mapping of fields");
    return std::nullopt;
  }
  return MapReader(n, file_, field(key), *diags_);
}

YAML::Node MapReader::sequence(const std::string& key, bool required) {
  YAML::Node n = get(key, required);
  if (!n.IsDefined()) return n;
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
