#include "ridgeline/spec/yaml_reader.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <utility>

namespace ridgeline::spec {

support::SourceLoc loc_of(const std::string& file, const YamlNode& node) {
  const YamlNode::Mark m = node.mark();
  if (m.is_null()) return {file, 0, 0};
  return {file, m.line + 1, m.column + 1};
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw support::SpecError({path, 0, 0}, "", "cannot read file");
  // Read into one buffer of the file's size where the size is known (a
  // stringstream's growth and copy touched three times the file's bytes of
  // fresh memory, at a page fault per 4 KiB), else in chunks (a pipe).
  std::string text;
  std::error_code ec;
  if (const auto size = std::filesystem::file_size(path, ec); !ec && size > 0) text.reserve(size + 1);
  char chunk[16384];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) text.append(chunk, static_cast<std::size_t>(in.gcount()));
  if (in.bad()) throw support::SpecError({path, 0, 0}, "", "cannot read file");
  if (text.find('\0') != std::string::npos)
    throw support::SpecError({path, 0, 0}, "", "not a text file (contains a NUL byte)");
  return text;
}

YamlNode load_yaml_file(const std::string& path) {
  const std::string text = read_text_file(path);
  YamlNode root = parse_yaml(text, path, path.ends_with(".json") ? "JSON" : "YAML");
  if (!root.IsDefined() || root.IsNull())
    throw support::SpecError({path, 1, 1}, "", "file is empty; expected a mapping of fields");
  return root;
}

std::size_t invalid_utf8_at(std::string_view s) {
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
    else return i;
    for (int k = 1; k <= n; ++k) {
      if (i + k >= s.size() || (b[i + k] >> 6) != 0x2) return i;
      cp = (cp << 6) | (b[i + k] & 0x3F);
    }
    static constexpr unsigned kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += n + 1;
  }
  return std::string_view::npos;
}

bool valid_utf8(std::string_view s) { return invalid_utf8_at(s) == std::string_view::npos; }

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

void apply_overrides(YamlNode& root, std::span<const FieldOverride> overrides, support::DiagnosticList& d) {
  for (const FieldOverride& o : overrides) {
    const std::vector<std::string> parts = split_field_path(o.field);
    if (std::any_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty(); })) {
      d.error({}, o.label, "expected a field path such as memory.hbm_bandwidth");
      continue;
    }
    YamlNode cur = root;  // shares root's nodes
    bool ok = true;
    for (size_t i = 0; i + 1 < parts.size() && ok; ++i) {
      if (!cur[parts[i]].IsDefined()) cur.set(parts[i], YamlNode::map());
      YamlNode next = cur[parts[i]];
      if (!next.IsMap()) {
        std::string prefix = parts[0];
        for (size_t k = 1; k <= i; ++k) prefix += "." + parts[k];
        d.error({}, o.label, fmt::format("'{}' holds a value, not a section of fields", prefix));
        ok = false;
      }
      cur = next;
    }
    if (ok) cur.set(parts.back(), YamlNode::scalar(o.value));
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
    if (!about) {
      out.add(diag);
      continue;
    }
    // The flag's diagnostic: no file location (GCC 12 flags a braced empty
    // SourceLoc as maybe-uninitialized, hence the copy with its loc reset).
    support::Diagnostic flag = diag;
    flag.loc = support::SourceLoc();
    flag.field = about->label;
    out.add(std::move(flag));
  }
  return out;
}

MapReader::MapReader(const YamlNode& node, std::string file, std::string path, support::DiagnosticList& diags)
    : node_(node), file_(std::move(file)), path_(std::move(path)), diags_(&diags) {
  if (!node_.IsMap()) {
    valid_ = false;
    diags_->error(loc_of(file_, node_), path_, "expected a mapping of fields");
  }
}

bool MapReader::has(const std::string& key) const { return valid_ && node_[key].IsDefined() && !node_[key].IsNull(); }

void MapReader::allow(const std::string& key) { known_.push_back(key); }

void MapReader::error_at(const std::string& key, const std::string& message) {
  YamlNode n = valid_ ? node_[key] : YamlNode();
  diags_->error(n.IsDefined() ? loc_of(file_, n) : loc_of(file_, node_), field(key), message);
}

void MapReader::error_null(const std::string& key, const std::string& expected) {
  // An empty value (`key:` and nothing) is marked where the next token starts,
  // often the next line: report it at its key instead.
  const YamlNode n = node_[key];
  support::SourceLoc at = loc_of(file_, n);
  for (const YamlPair& p : node_.pairs()) {
    const YamlNode& k = p.first;
    if (!k.IsScalar() || k.Scalar() != key) continue;
    if (const support::SourceLoc kl = loc_of(file_, k); kl.line != at.line) at = kl;
    break;
  }
  diags_->error(at, field(key), fmt::format("expected {}, got null", expected));
}

void MapReader::error_here(const std::string& message) { diags_->error(loc_of(file_, node_), path_, message); }

YamlNode MapReader::get(const std::string& key, bool required) {
  known_.push_back(key);
  if (!valid_) return YamlNode();
  YamlNode n = node_[key];
  if (!n.IsDefined()) {
    if (required) missing_.push_back(key);
    return YamlNode();
  }
  return n;
}

std::optional<std::string> MapReader::scalar(const std::string& key, bool required, const std::string& expected) {
  YamlNode n = get(key, required);
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
  YamlNode n = get(key, required);
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

YamlNode MapReader::sequence(const std::string& key, bool required) {
  YamlNode n = get(key, required);
  if (!n.IsDefined()) return n;
  if (n.IsNull()) {
    error_null(key, "a list");
    return YamlNode();
  }
  if (!n.IsSequence()) {
    error_at(key, "expected a list");
    return YamlNode();
  }
  return n;
}

void MapReader::finish(bool strict) {
  if (!valid_) return;
  std::vector<std::string> misspelt;
  for (const YamlPair& p : node_.pairs()) {
    if (!strict) break;
    const YamlNode& k = p.first;
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
