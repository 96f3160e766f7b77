// Fuzz regressions: every input saved under tests/fuzz_regressions/<target>/
// (by scripts/fuzz.sh when a fuzzer found a crash, leak, timeout or bad number)
// is replayed through the same harness the fuzzer ran (fuzz/harness.hpp): the
// loader must reject it with a clean SpecError or load it, and what loads must
// evaluate to finite numbers. CLI inputs are replayed through the real binary.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../../fuzz/harness.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace ridgeline;

namespace {

std::vector<fs::path> inputs(const std::string& target) {
  std::vector<fs::path> files;
  const fs::path dir = fs::path(RIDGELINE_SOURCE_DIR) / "tests/fuzz_regressions" / target;
  if (!fs::is_directory(dir)) return files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename().string() != "README.md") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

using ridgeline::test::slurp;

/// The loaders decide JSON or YAML messages by the extension, as the fuzzers' temp files do.
std::string copy_with_extension(const fs::path& input, const char* ext) {
  const fs::path p = fs::temp_directory_path() /
                     ("ridgeline_fuzz_regression_" + std::to_string(::getpid()) + "_" + input.filename().string() + ext);
  fs::copy_file(input, p, fs::copy_options::overwrite_existing);
  return p.string();
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

TEST_CASE("fuzz regressions: saved inputs load cleanly or are rejected with a located error") {
  const std::map<std::string, std::pair<const char*, std::function<std::string(const std::string&)>>> targets = {
      {"hardware", {".yaml", fuzz::run_hardware}},   {"model", {".yaml", fuzz::run_model}},
      {"hf_config", {".json", fuzz::run_hf_config}}, {"plan", {".yaml", fuzz::run_plan}},
      {"measurements", {".json", fuzz::run_measurements}}, {"published", {".yaml", fuzz::run_published}},
  };
  int replayed = 0;
  for (const auto& [target, how] : targets) {
    for (const auto& input : inputs(target)) {
      CAPTURE(input.string());
      const std::string path = copy_with_extension(input, how.first);
      CHECK(how.second(path) == "");
      fs::remove(path);
      fs::remove(path + ".roundtrip.json");
      ++replayed;
    }
  }
  MESSAGE("fuzz regressions: " << replayed << " loader inputs replayed");
}

TEST_CASE("fuzz regressions: saved argument vectors run the CLI to a clean exit") {
  int replayed = 0;
  for (const auto& input : inputs("cli")) {
    CAPTURE(input.string());
    auto args = fuzz::cli_args(slurp(input));
    for (auto& a : args) a = a.substr(0, a.find('\0'));  // argv strings end at a NUL
    if (!fuzz::cli_args_allowed(args)) continue;
    std::string line;
    for (const auto& a : args) line += " " + shell_quote(a);
    const auto r = test::run_cli(line);
    CHECK(fuzz::cli_result_problem(r.status, r.out, r.err, args) == "");
    ++replayed;
  }
  MESSAGE("fuzz regressions: " << replayed << " argument vectors replayed");
}
