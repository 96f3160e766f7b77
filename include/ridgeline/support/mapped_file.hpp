// A file's bytes mapped read-only into memory: what the residual loader and
// the JSON reader read without copying the file into the heap first (the
// heap's fresh pages are a page fault each, about 10 us on the development
// VM; the page cache's are mapped a 64 KiB run per fault).
#pragma once

#include <string>
#include <string_view>

namespace ridgeline::support {

class MappedFile {
 public:
  /// Maps the regular file at `path`; text() is empty when it cannot be
  /// opened, is not a regular file or is empty (the caller reads it the
  /// usual way then, for the usual error).
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::string_view text() const { return data_; }

 private:
  std::string_view data_;
};

}  // namespace ridgeline::support
