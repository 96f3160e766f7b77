// Helpers shared by the unit tests: shipped specs by name, running the CLI.
#pragma once

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/model.hpp"

namespace ridgeline::test {

inline spec::HardwareSpec gpu(const std::string& id) {
  return spec::load_hardware(std::string(RIDGELINE_SOURCE_DIR) + "/hardware_profiles/" + id + ".yaml");
}
inline spec::ModelSpec model(const std::string& id) {
  return spec::load_model(std::string(RIDGELINE_SOURCE_DIR) + "/models/" + id + ".yaml");
}

struct RunResult {
  int status = 0;
  std::string out;  // stdout
  std::string err;  // stderr
};

/// Runs the ridgeline binary with `args` (a shell-quoted string) from the repo root.
inline RunResult run_cli(const std::string& args) {
  const std::string err_file = "/tmp/ridgeline_test_stderr_" + std::to_string(::getpid());
  const std::string cmd = std::string("cd ") + RIDGELINE_SOURCE_DIR + " && " + RIDGELINE_BINARY + " " + args +
                          " 2>" + err_file;
  RunResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return {127, "", "popen failed"};
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int raw = ::pclose(p);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128;
  if (FILE* f = std::fopen(err_file.c_str(), "r")) {
    while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) r.err.append(buf.data(), n);
    std::fclose(f);
  }
  std::remove(err_file.c_str());
  return r;
}

}  // namespace ridgeline::test
