// Diagnostics: located, collected errors for everything a user can get wrong.
//
// A Diagnostic names a place (file, 1-based line and column; 0 when unknown),
// the field it concerns (a dotted path such as "memory.hbm_bandwidth") and a
// message. Loaders collect up to kMaxDiagnostics per file, then throw a
// SpecError carrying the list. Only src/cli prints them, as
//   file:line:col: error: field: message
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ridgeline::support {

struct SourceLoc {
  std::string file;
  int line = 0;  // 1-based; 0 = unknown
  int col = 0;   // 1-based; 0 = unknown
};

enum class Severity { kError, kWarning };

struct Diagnostic {
  SourceLoc loc;
  std::string field;  // dotted path, may be empty
  std::string message;
  Severity severity = Severity::kError;

  /// "file:line:col: error: field: message" (parts that are unknown are left out).
  std::string format() const;
  /// The located line of its file and a caret under the column, each line
  /// indented two spaces and ended by a newline ("  hbm_bandwidth: 3350\n
  /// ^" under the value); a line over 120 characters is shown as the 120
  /// around the column, cut ends marked "...". Empty without a file and
  /// line, or when the file cannot be read again (standard input).
  std::string excerpt() const;
};

inline constexpr int kMaxDiagnostics = 20;

class DiagnosticList {
 public:
  void add(Diagnostic d);
  void error(SourceLoc loc, std::string field, std::string message);
  void warning(SourceLoc loc, std::string field, std::string message);
  bool has_errors() const;
  bool full() const { return count_errors() >= kMaxDiagnostics; }
  const std::vector<Diagnostic>& items() const { return items_; }
  /// Throws SpecError when any error was collected.
  void throw_if_errors() const;

 private:
  int count_errors() const;
  std::vector<Diagnostic> items_;
};

/// Bad user input. what() is the first diagnostic, formatted.
class SpecError : public std::runtime_error {
 public:
  explicit SpecError(std::vector<Diagnostic> diags);
  SpecError(SourceLoc loc, std::string field, std::string message);
  const std::vector<Diagnostic>& diagnostics() const { return diags_; }

 private:
  std::vector<Diagnostic> diags_;
};

/// Levenshtein distance, for did-you-mean suggestions.
int edit_distance(std::string_view a, std::string_view b);

/// The closest candidate within a distance that scales with the word's length,
/// or "" when none is close.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

/// ", did you mean 'x'?" or "".
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace ridgeline::support
