#include "ridgeline/support/diagnostics.hpp"

#include <algorithm>
#include <fmt/format.h>

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
