// validation/residuals.json as the build found it, built into the program:
// its bytes, and its rows as the file spells them. Every planning command
// draws its intervals from the shipped residuals; reading them from the
// file (a JSON parse and 375 checked rows, 4.5M of `ridgeline predict`'s
// 10.9M instructions) cost about a millisecond of every run. Where
// data_dir()'s file has exactly these bytes, uncertainty::shipped() takes
// these rows; where it differs in any byte (regenerated since the build, or
// another data directory), it reads the file as before.
//
// The source defining built_in_residuals() is generated at build time by
// cmake/built_in_residuals.cmake from validation/residuals.json (a rebuild
// follows a regenerated file). It checks the file's shape (fields, their
// JSON types); a file it cannot read gives an empty table, and the program
// then reads the file, and reports its errors, as before.
#pragma once

#include <span>
#include <string_view>

namespace ridgeline::uncertainty {

/// One row as the file writes it; words and numbers unparsed.
struct BuiltInRow {
  std::string_view id, group, kind, framework, generation, dominant, dtype;
  double gpus, params, log_residual;  // 0 where the row has no such field
};

struct BuiltInResiduals {
  std::string_view text;    // the file's bytes; empty: nothing built in
  std::string_view source;  // its "source" field
  std::span<const BuiltInRow> rows;
};

const BuiltInResiduals& built_in_residuals();

}  // namespace ridgeline::uncertainty
