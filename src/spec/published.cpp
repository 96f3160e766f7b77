#include "ridgeline/spec/published.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>

#include "ridgeline/spec/runs.hpp"
#include "ridgeline/spec/yaml_reader.hpp"

namespace ridgeline::spec {

namespace {

constexpr std::pair<std::string_view, PublishedCategory> kCategories[] = {
    {"end_to_end_training", PublishedCategory::kEndToEndTraining},
    {"attention_kernel", PublishedCategory::kAttentionKernel},
    {"gemm_kernel", PublishedCategory::kGemmKernel},
    {"memory_microbenchmark", PublishedCategory::kMemoryMicrobenchmark},
    {"tensor_core_instruction", PublishedCategory::kTensorCoreInstruction},
    {"launch_overhead", PublishedCategory::kLaunchOverhead},
    {"layer_time", PublishedCategory::kLayerTime},
    {"clock_observation", PublishedCategory::kClockObservation},
};

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::optional<double> parse_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

std::string_view name(PublishedCategory c) {
  for (const auto& [w, v] : kCategories)
    if (v == c) return w;
  return "end_to_end_training";
}

std::optional<PublishedCategory> parse_published_category(std::string_view s) {
  for (const auto& [w, v] : kCategories)
    if (w == s) return v;
  return std::nullopt;
}

const std::vector<PublishedCategory>& published_categories() {
  static const std::vector<PublishedCategory> all = [] {
    std::vector<PublishedCategory> v;
    for (const auto& [w, c] : kCategories) v.push_back(c);
    return v;
  }();
  return all;
}

std::optional<bool> parse_published_bool(std::string_view s) {
  const std::string l = lower(s);
  if (l == "true" || l == "yes" || l == "on") return true;
  if (l == "false" || l == "no" || l == "off") return false;
  return std::nullopt;
}

const std::vector<std::string>& published_category_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& [w, c] : kCategories) v.emplace_back(w);
    return v;
  }();
  return names;
}

const PublishedValue* PublishedSection::get(const std::string& key) const {
  auto it = fields.find(key);
  return it == fields.end() ? nullptr : &it->second;
}

std::optional<double> PublishedSection::number(const std::string& key) const {
  const PublishedValue* v = get(key);
  return v ? v->number : std::nullopt;
}

std::string PublishedSection::text(const std::string& key) const {
  const PublishedValue* v = get(key);
  return v ? v->text : std::string();
}

namespace {

/// Whole-number fields Ridgeline reads, per section (must be >= 1 when present).
const std::map<std::string, std::vector<std::string>>& whole_fields() {
  static const std::map<std::string, std::vector<std::string>> f = {
      {"hardware", {"num_gpus"}},
      {"model", {"layers", "hidden", "heads", "kv_heads", "head_dim", "ffn_hidden", "vocab", "seq_len"}},
      {"training", {"global_batch", "micro_batch", "tp", "pp", "dp", "cp", "ep", "virtual_pp_interleave", "grad_accum"}},
      {"kernel", {"M", "N", "K", "batch", "seq_len", "seqlen", "heads", "kv_heads", "head_dim"}},
  };
  return f;
}

/// Positive real-number fields Ridgeline reads. measured.peak_memory_gib: a
/// run's peak device memory per GPU in GiB (2^30 bytes), the figure
/// torch.cuda.max_memory_reserved / max_memory_allocated gives divided by
/// 1024**3, as runs.yaml's field of the same name.
const std::map<std::string, std::vector<std::string>>& positive_fields() {
  static const std::map<std::string, std::vector<std::string>> f = {
      {"hardware", {"peak_tflops_used_by_source"}},
      {"training", {"global_batch_tokens", "moe_imbalance"}},
      {"measured", {"peak_memory_gib"}},
  };
  return f;
}

/// Fields Ridgeline reads that take one of a few words. measured.memory_kind:
/// which peak measured.peak_memory_gib is, spec::MemoryKind's words (runs.yaml's
/// memory_kind): reserved (torch.cuda.max_memory_reserved, the default) or
/// allocated (max_memory_allocated).
const std::map<std::string, std::vector<std::pair<std::string, std::vector<std::string>>>>& word_fields() {
  static const std::map<std::string, std::vector<std::pair<std::string, std::vector<std::string>>>> f = {
      {"measured", {{"memory_kind", {std::string(name(MemoryKind::kReserved)), std::string(name(MemoryKind::kAllocated))}}}},
  };
  return f;
}

/// Boolean fields Ridgeline reads.
const std::map<std::string, std::vector<std::string>>& bool_fields() {
  static const std::map<std::string, std::vector<std::string>> f = {
      {"source", {"interval_pool"}},
      {"training", {"sequence_parallel", "cpu_offload"}},
      {"kernel", {"causal"}},
  };
  return f;
}

constexpr const char* kSections[] = {"source", "hardware", "model", "training", "kernel", "measured", "derived"};

class RowReader {
 public:
  RowReader(const std::string& file, support::DiagnosticList& d) : file_(file), d_(d) {}

  void error(const YamlNode& at, const std::string& label, const std::string& message) {
    d_.error(loc_of(file_, at), label, message);
  }

  /// Reads a section's scalars and checks the fields Ridgeline reads.
  void section(const YamlNode& row, const char* key, const std::string& label, PublishedSection& out) {
    nulls_.clear();
    const YamlNode n = row[key];
    if (!n.IsDefined() || n.IsNull()) return;
    if (!n.IsMap()) {
      error(n, label, fmt::format("{}: expected a mapping of fields", key));
      return;
    }
    for (const YamlPair& p : n.pairs()) {
      const YamlNode& k = p.first;
      const YamlNode& v = p.second;
      if (!k.IsScalar()) {
        error(k, label, fmt::format("{}: expected a field name", key));
        continue;
      }
      if (v.IsNull()) {
        nulls_.emplace(k.Scalar(), loc_of(file_, v));
        continue;
      }
      if (!v.IsScalar()) continue;  // nested detail (lists, maps) is for readers, not for predictions
      PublishedValue pv;
      pv.text = v.Scalar();
      pv.number = parse_number(pv.text);
      pv.loc = loc_of(file_, v);
      out.fields.emplace(k.Scalar(), std::move(pv));
    }
    const std::string sec = key;
    auto check = [&](const auto& table, auto ok, const char* expected) {
      auto it = table.find(sec);
      if (it == table.end()) return;
      for (const auto& f : it->second) {
        // A field Ridgeline reads left empty ("peak_memory_gib: null" or "~")
        // is an error, not a silent absence.
        if (auto n = nulls_.find(f); n != nulls_.end())
          d_.error(n->second, label, fmt::format("{}.{}: expected {}, got null", sec, f, expected));
        const PublishedValue* v = out.get(f);
        if (!v || ok(*v)) continue;
        d_.error(v->loc, label, fmt::format("{}.{}: expected {}, got \"{}\"", sec, f, expected, v->text));
        out.fields.erase(f);
      }
    };
    check(whole_fields(), [](const PublishedValue& v) {
      return v.number && *v.number >= 1 && std::floor(*v.number) == *v.number && *v.number <= kPublishedMaxWhole;
    }, "a whole number from 1 to 1073741824");
    check(positive_fields(), [](const PublishedValue& v) { return v.number && *v.number > 0; },
          "a number greater than zero");
    check(bool_fields(), [](const PublishedValue& v) { return parse_published_bool(v.text).has_value(); },
          "true or false");
    if (auto it = word_fields().find(sec); it != word_fields().end()) {
      for (const auto& [f, words] : it->second) {
        std::string choices;
        for (const auto& w : words) choices += (choices.empty() ? "" : " or ") + w;
        if (auto n = nulls_.find(f); n != nulls_.end())
          d_.error(n->second, label, fmt::format("{}.{}: expected {}, got null", sec, f, choices));
        const PublishedValue* v = out.get(f);
        if (!v || std::find(words.begin(), words.end(), v->text) != words.end()) continue;
        d_.error(v->loc, label, fmt::format("{}.{}: expected {}, got \"{}\"{}", sec, f, choices, v->text,
                                            support::did_you_mean(v->text, words)));
        out.fields.erase(f);
      }
    }
    // runs.yaml's rule (spec/runs.cpp): the kind says what the peak measured.
    if (sec == "measured" && out.has("memory_kind") && !out.has("peak_memory_gib") && !nulls_.count("peak_memory_gib"))
      d_.error(out.get("memory_kind")->loc, label,
               "measured.memory_kind says what measured.peak_memory_gib measured; give peak_memory_gib too");
  }

 private:
  const std::string& file_;
  support::DiagnosticList& d_;
  std::map<std::string, support::SourceLoc> nulls_;  // the current section's fields left null, at their values
};

}  // namespace

PublishedFile load_published(const std::string& path) {
  YamlNode root = load_yaml_file(path);
  support::DiagnosticList d;
  PublishedFile out;
  out.path = path;
  MapReader top(root, path, "", d);
  if (!top.valid()) d.throw_if_errors();
  if (auto v = top.integer("schema_version", false, 0); v && *v != 1)
    top.error_at("schema_version", fmt::format("unsupported schema version {}; this Ridgeline reads version 1", *v));
  top.string("description");
  top.allow("confidence_levels");
  top.allow("conventions");
  const auto row_count = top.integer("row_count", false, 0);
  YamlNode rows = top.sequence("rows", true);
  top.finish();
  if (!rows.IsDefined() || !rows.IsSequence()) {
    d.throw_if_errors();
    return out;
  }
  if (row_count && static_cast<size_t>(*row_count) != rows.size())
    top.error_at("row_count", fmt::format("row_count says {} but the file has {} rows", *row_count, rows.size()));

  RowReader rr(path, d);
  std::map<std::string, int> first_line;  // id -> line of its first row
  std::string previous_id;
  for (size_t i = 0; i < rows.size() && !d.full(); ++i) {
    const YamlNode row = rows[i];
    const std::string at = fmt::format("rows[{}]", i);
    if (!row.IsMap()) {
      rr.error(row, previous_id.empty() ? at : fmt::format("{} (after id {})", at, previous_id),
               "expected a mapping of fields (id, group, category, ...)");
      continue;
    }
    PublishedRow r;
    r.index = static_cast<int>(i);
    r.loc = loc_of(path, row);
    std::string label = at;
    const YamlNode id = row["id"];
    if (!id.IsDefined() || id.IsNull()) {
      rr.error(row, previous_id.empty() ? at : fmt::format("{} (after id {})", at, previous_id),
               "missing required field 'id'");
      continue;
    }
    if (!id.IsScalar() || id.Scalar().empty()) {
      rr.error(id, at, "id: expected a single word");
      continue;
    }
    r.id = id.Scalar();
    previous_id = r.id;
    label = fmt::format("{} (id {})", at, r.id);
    if (auto it = first_line.find(r.id); it != first_line.end())
      rr.error(id, label, fmt::format("duplicate id (first used at line {})", it->second));
    else
      first_line.emplace(r.id, r.loc.line);
    bool ok = true;
    auto scalar = [&](const char* key, bool required, std::string& dst) {
      const YamlNode n = row[key];
      if (!n.IsDefined() || n.IsNull()) {
        if (required) {
          rr.error(row, label, fmt::format("missing required field '{}'", key));
          ok = false;
        }
        return false;
      }
      if (!n.IsScalar()) {
        rr.error(n, label, fmt::format("{}: expected a single value", key));
        ok = false;
        return false;
      }
      dst = n.Scalar();
      return true;
    };
    scalar("group", true, r.group);
    std::string category;
    if (scalar("category", true, category)) {
      if (auto c = parse_published_category(category)) {
        r.category = *c;
      } else {
        std::string choices;
        for (const auto& n : published_category_names()) choices += (choices.empty() ? "" : ", ") + n;
        rr.error(row["category"], label,
                 fmt::format("category: expected one of {}, got \"{}\"{}", choices, category,
                             support::did_you_mean(category, published_category_names())));
        ok = false;
      }
    }
    scalar("confidence", false, r.confidence);
    scalar("notes", false, r.notes);
    PublishedSection* secs[] = {&r.source, &r.hardware, &r.model, &r.training, &r.kernel, &r.measured, &r.derived};
    for (size_t k = 0; k < std::size(kSections); ++k) rr.section(row, kSections[k], label, *secs[k]);
    if (ok) out.rows.push_back(std::move(r));
  }
  d.throw_if_errors();
  return out;
}

std::vector<std::string> published_groups(const PublishedFile& file) {
  std::vector<std::string> g;
  for (const auto& r : file.rows)
    if (std::find(g.begin(), g.end(), r.group) == g.end()) g.push_back(r.group);
  return g;
}

}  // namespace ridgeline::spec
