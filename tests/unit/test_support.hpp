// Helpers shared by the unit tests: shipped specs by name, running the CLI.
#pragma once

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/spec/hardware.hpp"
#include "ridgeline/spec/model.hpp"
#include "ridgeline/techniques/passes.hpp"

namespace ridgeline::test {

inline spec::HardwareSpec gpu(const std::string& id) {
  return spec::load_hardware(std::string(RIDGELINE_SOURCE_DIR) + "/hardware_profiles/" + id + ".yaml");
}
inline spec::ModelSpec model(const std::string& id) {
  return spec::load_model(std::string(RIDGELINE_SOURCE_DIR) + "/models/" + id + ".yaml");
}

/// A plan of micro-batch b, sequence s and one micro-batch per step.
inline spec::PlanSpec plan(int b, int s) {
  spec::PlanSpec p;
  p.micro_batch = b;
  p.seq_len = s;
  p.global_batch = b;
  return p;
}

/// The whole step graph (micro-batch and step kernels) of a plan.
inline graph::Graph step(const spec::ModelSpec& m, const spec::PlanSpec& p, const char* gpu_id = "h100_sxm") {
  graph::Graph g;
  techniques::build_step(g, m, p, gpu(gpu_id));
  return g;
}

/// An error output's first line with its newline: the located message
/// (a diagnostic located in a file is followed by that line and a caret).
inline std::string first_line(const std::string& err) { return err.substr(0, err.find('\n') + 1); }

/// A file's whole text ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A shipped hardware profile's text.
inline std::string shipped_text(const std::string& id) {
  std::ifstream in(std::string(RIDGELINE_SOURCE_DIR) + "/hardware_profiles/" + id + ".yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// `text` with its first occurrence of `from` replaced by `to`.
inline std::string edited(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
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
