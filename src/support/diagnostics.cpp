#include "ridgeline/support/diagnostics.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fstream>

namespace ridgeline::support {

std::string Diagnostic::format() const {
  std::string out;
  if (!loc.file.empty()) {
    out += loc.file;
    if (loc.line > 0) {
      out += fmt::format(":{}", loc.line);
      if (loc.col > 0) out += fmt::format(":{}", loc.col);
    }
    out += ": ";
  }
  out += severity == Severity::kError ? "error: " : "warning: ";
  if (!field.empty()) out += field + ": ";
  out += message;
  return out;
}

std::string Diagnostic::excerpt() const {
  if (loc.file.empty() || loc.line <= 0) return "";
  std::ifstream in(loc.file, std::ios::binary);
  if (!in) return "";
  std::string text;
  for (int i = 0; i < loc.line; ++i)
    if (!std::getline(in, text)) {
      if (i + 1 < loc.line) return "";
      text.clear();  // the line after the last: the end of the file
    }
  if (!text.empty() && text.back() == '\r') text.pop_back();
  size_t col = loc.col > 0 ? static_cast<size_t>(loc.col - 1) : 0;
  col = std::min(col, text.size());
  constexpr size_t kWidth = 120;
  std::string head, tail;
  if (text.size() > kWidth) {
    const size_t from = col > kWidth / 2 ? std::min(col - kWidth / 2, text.size() - kWidth) : 0;
    if (from > 0) head = "...";
    if (from + kWidth < text.size()) tail = "...";
    text = text.substr(from, kWidth);
    col = col - from + head.size();
  }
  // The caret's indent keeps the line's tabs, so it lines up under them.
  std::string indent;
  const std::string shown = head + text;
  for (size_t i = 0; i < col && i < shown.size(); ++i) indent += shown[i] == '\t' ? '\t' : ' ';
  return fmt::format("  {}{}\n  {}^\n", shown, tail, indent);
}

void DiagnosticList::add(Diagnostic d) {
  if (d.severity == Severity::kError && full()) return;
  items_.push_back(std::move(d));
}

void DiagnosticList::error(SourceLoc loc, std::string field, std::string message) {
  add(Diagnostic{std::move(loc), std::move(field), std::move(message), Severity::kError});
}

void DiagnosticList::warning(SourceLoc loc, std::string field, std::string message) {
  add(Diagnostic{std::move(loc), std::move(field), std::move(message), Severity::kWarning});
}

int DiagnosticList::count_errors() const {
  return static_cast<int>(std::count_if(items_.begin(), items_.end(),
                                        [](const Diagnostic& d) { return d.severity == Severity::kError; }));
}

bool DiagnosticList::has_errors() const { return count_errors() > 0; }

void DiagnosticList::throw_if_errors() const {
  if (!has_errors()) return;
  std::vector<Diagnostic> errors;
  for (const auto& d : items_)
    if (d.severity == Severity::kError) errors.push_back(d);
  throw SpecError(std::move(errors));
}

SpecError::SpecError(std::vector<Diagnostic> diags)
    : std::runtime_error(diags.empty() ? std::string("error") : diags.front().format()), diags_(std::move(diags)) {}

SpecError::SpecError(SourceLoc loc, std::string field, std::string message)
    : SpecError(std::vector<Diagnostic>{Diagnostic{std::move(loc), std::move(field), std::move(message)}}) {}

int edit_distance(std::string_view a, std::string_view b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      int sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  // A candidate the word is a prefix of ("h100" -> "h100_sxm") beats an edit.
  std::string prefixed;
  for (const auto& c : candidates)
    if (word.size() >= 3 && c.size() > word.size() && c.compare(0, word.size(), word) == 0 &&
        (prefixed.empty() || c.size() < prefixed.size()))
      prefixed = c;
  if (!prefixed.empty()) return prefixed;
  int best = 1 << 30;
  std::string best_name;
  for (const auto& c : candidates) {
    int d = edit_distance(word, c);
    if (d < best) {
      best = d;
      best_name = c;
    }
  }
  const int limit = std::max<int>(2, static_cast<int>(word.size()) / 3);
  return best <= limit ? best_name : std::string();
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  auto m = closest_match(word, candidates);
  return m.empty() ? std::string() : fmt::format("; did you mean '{}'?", m);
}

}  // namespace ridgeline::support
