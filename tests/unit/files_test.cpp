// Output files: every command writes through cli::write_output, which writes a
// temporary file beside the target and renames it over the target, so a reader
// sees the old file or the whole new one, never a half report, and a run that
// fails leaves nothing behind. An existing output file is overwritten
// (docs/errors.md, "Output files").
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace fs = std::filesystem;
using ridgeline::test::run_cli;

namespace {

using ridgeline::test::slurp;

/// A fresh, empty folder for one test case.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("ridgeline_files_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::set<std::string> entries() const {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(path)) names.insert(e.path().filename().string());
    return names;
  }
};

}  // namespace

TEST_CASE("files: a failing run leaves no file and no temporary file behind") {
  TempDir dir("failing");
  const std::string out = (dir.path / "report.json").string();
  for (const char* args : {"predict --model lama3_8b", "predict --tp 3", "predict --precision bf17",
                           "predict --gpu tests/diagnostics/malformed_yaml.yaml", "predict --format yaml",
                           "predict --plan tests/diagnostics/no_such_plan.yaml"}) {
    CAPTURE(args);
    const auto r = run_cli(std::string(args) + " --format json --output " + out);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(dir.entries().empty());
  }
}

TEST_CASE("files: a run that does not fit still writes its whole report, atomically") {
  TempDir dir("nofit");
  const fs::path out = dir.path / "report.json";
  const auto r = run_cli("predict --format json --output " + out.string());
  CHECK(r.status == 1);  // Llama-3-8B with AdamW on one H100: does not fit
  CHECK(r.out.empty());
  CHECK(dir.entries() == std::set<std::string>{"report.json"});
  const auto doc = nlohmann::json::parse(slurp(out));
  CHECK(doc["memory"]["fits"] == false);
}

TEST_CASE("files: an existing output file is overwritten") {
  TempDir dir("overwrite");
  const fs::path out = dir.path / "report.csv";
  std::ofstream(out) << "an old report that is much longer than nothing\n";
  fs::permissions(out, fs::perms::owner_read);  // read-only: the rename replaces it all the same
  const auto r = run_cli("predict --dp 8 --zero 3 --global-batch 8 --format csv --output " + out.string());
  CHECK(r.status == 0);
  const std::string text = slurp(out);
  CHECK(text.find("an old report") == std::string::npos);
  CHECK(text == run_cli("predict --dp 8 --zero 3 --global-batch 8 --format csv").out);
  CHECK(dir.entries() == std::set<std::string>{"report.csv"});
}

TEST_CASE("files: output to a missing folder or onto a folder is a clean error") {
  TempDir dir("badpath");
  auto r = run_cli("predict --dp 8 --zero 3 --global-batch 8 --output " + (dir.path / "no/such/report.txt").string());
  CHECK(r.status == 2);
  CHECK(r.err == "error: --output: no such directory '" + (dir.path / "no/such").string() + "'\n");
  CHECK(dir.entries().empty());

  fs::create_directories(dir.path / "taken");
  r = run_cli("predict --dp 8 --zero 3 --global-batch 8 --output " + (dir.path / "taken").string());
  CHECK(r.status == 2);
  CHECK(r.err == "error: --output: cannot write to '" + (dir.path / "taken").string() + "'\n");
  CHECK(dir.entries() == std::set<std::string>{"taken"});  // no temporary file left beside it
  CHECK(fs::is_empty(dir.path / "taken"));
}

TEST_CASE("files: concurrent writers to one path leave one whole report") {
  TempDir dir("concurrent");
  const fs::path out = dir.path / "report.txt";
  const std::vector<std::string> formats = {"json", "csv", "table", "json", "csv", "table"};
  std::string cmd = "predict --dp 8 --zero 3 --global-batch 8 --output " + out.string() + " --format ";
  // Six writers at once through the shell; each replaces the file with its complete text.
  std::string script = "sh -c '";
  for (const auto& f : formats) script += std::string(RIDGELINE_BINARY) + " " + cmd + f + " & ";
  script += "wait'";
  REQUIRE(run_cli("list gpus").status == 0);
  REQUIRE(std::system(("cd " + std::string(RIDGELINE_SOURCE_DIR) + " && " + script).c_str()) == 0);
  std::set<std::string> whole;
  for (const char* f : {"json", "csv", "table"})
    whole.insert(run_cli("predict --dp 8 --zero 3 --global-batch 8 --format " + std::string(f)).out);
  CHECK(whole.count(slurp(out)) == 1);
  CHECK(dir.entries() == std::set<std::string>{"report.txt"});
}

TEST_CASE("files: --output - writes to standard output") {
  const auto a = run_cli("predict --dp 8 --zero 3 --global-batch 8 --format csv --output -");
  const auto b = run_cli("predict --dp 8 --zero 3 --global-batch 8 --format csv");
  CHECK(a.status == 0);
  CHECK(a.out == b.out);
  CHECK_FALSE(fs::exists(fs::path(RIDGELINE_SOURCE_DIR) / "-"));
}

TEST_CASE("files: report writes its three files together, or none") {
  TempDir dir("report");
  const std::string stem = (dir.path / "plan").string();
  auto r = run_cli("report --gpu h100_sxm --model gpt3_125m --dp 8 --global-batch 8 -o " + stem);
  CHECK(r.status == 0);
  CHECK(dir.entries() == std::set<std::string>{"plan.html", "plan.json", "plan.md"});
  CHECK(nlohmann::json::accept(slurp(dir.path / "plan.json")));

  // Written again over the old ones: replaced, nothing else left.
  std::ofstream(dir.path / "plan.md") << "old\n";
  r = run_cli("report --gpu h100_sxm --model gpt3_125m --dp 8 --global-batch 8 -o " + stem);
  CHECK(r.status == 0);
  CHECK(slurp(dir.path / "plan.md") != "old\n");
  CHECK(dir.entries() == std::set<std::string>{"plan.html", "plan.json", "plan.md"});

  // Bad input: nothing written.
  TempDir bad("report_bad");
  r = run_cli("report --gpu h10 --model gpt3_125m -o " + (bad.path / "plan").string());
  CHECK(r.status == 2);
  CHECK(bad.entries().empty());

  // One target cannot be replaced (a folder of that name): no file of this run and no temporary file stays.
  fs::create_directories(bad.path / "plan.html");
  r = run_cli("report --gpu h100_sxm --model gpt3_125m --dp 8 --global-batch 8 -o " + (bad.path / "plan").string());
  CHECK(r.status == 2);
  CHECK(r.err.find("error: --output: cannot write to") == 0);
  CHECK(bad.entries() == std::set<std::string>{"plan.html"});
}
