// Fuzz target: command-line argument vectors, one argument per line of the
// input (harness.hpp: cli_args), run in process through the real CLI.
//
// src/cli/main.cpp is compiled with main renamed to ridgeline_cli_main (a
// definition on that one file; see fuzz/CMakeLists.txt), so each input is one
// call of the unmodified main(): the same parser, subcommands, guarded() error
// mapping and exit codes as the shipped binary, at in-process speed (a
// subprocess per input would run ~100x slower and hide sanitizer reports in
// the child). This works because the CLI keeps no state between calls (the
// CLI::App and its options are locals of main) and never calls exit(); its
// output goes through std::cout and std::cerr, which are captured per input
// and checked for exit status 0, 1 or 2 and for "nan"/"inf" printed as numbers.
// Only read-only subcommands run (harness.hpp: cli_args_allowed), from the
// repository root so shipped names and relative paths resolve as in the tests.
#include <unistd.h>

#include <cstdint>
#include <iostream>
#include <sstream>

#include "fuzz_input.hpp"
#include "harness.hpp"

int ridgeline_cli_main(int argc, char** argv);

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (::chdir(RIDGELINE_SOURCE_DIR) != 0) ::ridgeline::fuzz::fail("cannot chdir to " RIDGELINE_SOURCE_DIR);
  ::setenv("RIDGELINE_DATA_DIR", RIDGELINE_SOURCE_DIR, 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, size_t size) {
  using namespace ridgeline::fuzz;
  const auto args = cli_args(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!cli_args_allowed(args)) return -1;  // not added to the corpus
  std::vector<std::string> storage{"ridgeline"};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);

  std::ostringstream out, err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  const int rc = ridgeline_cli_main(static_cast<int>(storage.size()), argv.data());
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  std::cout.clear();
  std::cerr.clear();
  if (const std::string bad = cli_result_problem(rc, out.str(), err.str(), args); !bad.empty()) {
    std::string line;
    for (const auto& a : args) line += " '" + a + "'";
    fail("ridgeline" + line + ": " + bad);
  }
  return 0;
}
