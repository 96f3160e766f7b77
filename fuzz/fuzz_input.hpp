// What the libFuzzer targets share: the input written to a file (the loaders
// take a path) and the way a finding ends the run.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace ridgeline::fuzz {

/// Folder of the input files, made on first use and removed at exit. Never
/// destroyed, so the exit handler can still read it after static destructors.
inline std::filesystem::path* input_dir = nullptr;

inline void remove_input_dir() {
  std::error_code ec;
  if (input_dir) std::filesystem::remove_all(*input_dir, ec);
}

/// Writes the input to <tmp>/ridgeline-fuzz-<pid>/input<ext>, in /dev/shm when
/// it exists (no disk traffic per execution).
inline std::string write_input(const std::uint8_t* data, size_t size, const char* ext) {
  namespace fs = std::filesystem;
  if (!input_dir) {
    const fs::path base = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    input_dir = new fs::path(base / ("ridgeline-fuzz-" + std::to_string(::getpid())));
    fs::create_directories(*input_dir);
    std::atexit(remove_input_dir);
  }
  const std::string path = (*input_dir / (std::string("input") + ext)).string();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    std::perror(path.c_str());
    std::abort();
  }
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

/// A finding: says what, then aborts so libFuzzer saves the input as a crash.
[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "ridgeline fuzz finding: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace ridgeline::fuzz

/// Declares the target: `RIDGELINE_FUZZ_FILE_TARGET(".yaml", run_hardware)`.
#define RIDGELINE_FUZZ_FILE_TARGET(ext, run)                                          \
  extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, size_t size) {     \
    const std::string path = ::ridgeline::fuzz::write_input(data, size, ext);         \
    if (const std::string bad = ::ridgeline::fuzz::run(path); !bad.empty())           \
      ::ridgeline::fuzz::fail(bad);                                                    \
    return 0;                                                                          \
  }
