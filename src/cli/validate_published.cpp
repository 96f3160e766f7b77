// ridgeline validate-published [FILE] [--group G] [--leave-out G | --leave-one-group-out]
//                              [--format table|json|csv|markdown] [--output F]
//
// Predicts every row of a published-measurements file (validation/
// published.yaml by default) and prints measured vs predicted per row, then
// error statistics per group, per subset of a group (GPU profile and
// precision), per category, per training framework and per GPU generation
// (end-to-end rows) and the reasons rows were skipped.
// --leave-out G predicts with the cost-model defaults fitted on group G at
// their priors; --leave-one-group-out prints, per group, the in-sample error
// beside the error with that group's own fits left out, and the same per
// framework and per GPU generation. The numbers come from
// validation::validate_published and validation::leave_one_group_out, the
// tables from report/validation_view.
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>

#include "commands.hpp"
#include "common.hpp"
#include "ridgeline/report/validation_view.hpp"
#include "ridgeline/spec/published.hpp"
#include "ridgeline/validation/coverage.hpp"
#include "ridgeline/validation/published.hpp"

namespace ridgeline::cli {

namespace {

namespace fs = std::filesystem;
using validation::LeaveOneOutReport;
using validation::PublishedReport;
using validation::PublishedResult;
using nlohmann::json;

struct ValidatePublishedArgs {
  std::string file;
  std::string group;
  std::string format = "table";
  std::string output;
  std::string leave_out;
  bool leave_one_group_out = false;
  bool show_skipped = false;
  bool no_calibration = false;
  std::string residuals;  // --residuals FILE (with --leave-one-group-out)
  int anchored = 0;       // --anchored K
};

/// validation/published.yaml of the data directory (the repository's copy),
/// as a relative path when the data directory is the working directory; ""
/// when there is none.
std::string default_published_file() {
  const fs::path rel = fs::path("validation") / "published.yaml";
  for (const fs::path& base : {fs::path(data_dir()), fs::path(RIDGELINE_SOURCE_DIR)}) {
    std::error_code ec;
    const fs::path p = base / rel;
    if (fs::is_regular_file(p, ec)) return (base == fs::path(".") ? rel : p.lexically_normal()).string();
  }
  return "";
}

/// The named group of `file`, or the usage error for `flag` naming the groups it has.
void check_group(const spec::PublishedFile& file, const std::string& group, const char* flag) {
  const auto groups = spec::published_groups(file);
  if (std::find(groups.begin(), groups.end(), group) != groups.end()) return;
  std::string known;
  for (const auto& g : groups) known += (known.empty() ? "" : ", ") + g;
  throw UsageError{flag, fmt::format("no rows of group '{}'{} (groups: {})", group,
                                     support::did_you_mean(group, groups), known)};
}

}  // namespace

void register_validate_published(Commands& commands, int& rc) {
  auto args = std::make_shared<ValidatePublishedArgs>();
  auto* cmd = commands.add(
      "validate-published",
      "Check predictions against published measurements (papers' tables, framework benchmarks, microbenchmarks)");
  if (!cmd) return;
  cmd->add_option("file", args->file,
                  "Published-measurements YAML (default: validation/published.yaml of the repository)");
  cmd->add_option("--group", args->group, "Only rows of this group (e.g. korthikanti2022)");
  add_format_and_output(*cmd, args->format, args->output,
                        {Format::kTable, Format::kJson, Format::kCsv, Format::kMarkdown}, "(summary tables only)");
  auto* leave_out = cmd->add_option("--leave-out", args->leave_out,
                                    "Predict with the cost-model defaults fitted on this group's rows at their priors");
  cmd->add_flag("--leave-one-group-out", args->leave_one_group_out,
                "Per group: the in-sample error beside the error with that group's own fits left out")
      ->excludes(leave_out);
  cmd->add_option("--residuals", args->residuals,
                  "With --leave-one-group-out: write the out-of-sample residuals (the prediction intervals' pools) "
                  "to FILE, as validation/residuals.json")
      ->needs(cmd->get_option("--leave-one-group-out"));
  cmd->add_option("--anchored", args->anchored,
                  "Each stack (group, GPU profile, framework) calibrated on K of its runs (the fewest GPUs first), "
                  "weighed against the prior of the published sources' offsets as calibrate --runs does, and its "
                  "other runs predicted with it, beside the same runs unanchored, with the share inside their "
                  "anchored 80% interval; base predictions and the prior with each group's own rows left out")
      ->check(CLI::Range(1, 1000))
      ->excludes(leave_out)
      ->excludes(cmd->get_option("--leave-one-group-out"));
  cmd->add_flag("--show-skipped", args->show_skipped, "Table: list every skipped row with its reason");
  cmd->add_flag("--no-calibration", args->no_calibration, "Ignore the profiles' calibration blocks");
  cmd->callback([args, &rc] {
    rc = guarded([&] {
      const std::string& f = args->format;
      (void)parse_format(f, {Format::kTable, Format::kJson, Format::kCsv, Format::kMarkdown});
      std::string path = args->file;
      if (path.empty()) {
        path = default_published_file();
        if (path.empty())
          throw UsageError{"FILE", "no file given, and validation/published.yaml is not in the data directory "
                                   "(RIDGELINE_DATA_DIR); pass the published-measurements YAML"};
      }
      const spec::PublishedFile file = spec::load_published(path);
      if (!args->group.empty()) check_group(file, args->group, "--group");
      if (!args->leave_out.empty()) check_group(file, args->leave_out, "--leave-out");
      validation::PublishedOptions opt;
      opt.profiles_dir = (fs::path(data_dir()) / "hardware_profiles").string();
      opt.group = args->group;
      opt.use_calibration = !args->no_calibration;
      opt.fit_without_group = args->leave_out;
      std::string text;
      if (args->anchored > 0) {
        if (f == "csv") throw UsageError{"--format", "--anchored writes table, json or markdown"};
        const LeaveOneOutReport rep = validation::leave_one_group_out(file, opt);
        write_output(args->output,
                     report::render_anchored(validation::anchored(rep.left_out_rows, args->anchored), path, f));
        return kExitOk;
      }
      if (args->leave_one_group_out) {
        const LeaveOneOutReport rep = validation::leave_one_group_out(file, opt);
        const auto residuals = validation::residuals_of(rep.left_out_rows);
        const validation::CoverageReport cov = validation::coverage_of(residuals);
        text = report::render_leave_one_group_out(rep, cov, f);
        if (!args->residuals.empty()) write_output(args->residuals, uncertainty::write_residuals(residuals, path));
        write_output(args->output, text);
        return kExitOk;
      }
      const PublishedReport rep = validation::validate_published(file, opt);
      text = report::render_published(rep, f, args->show_skipped);
      write_output(args->output, text);
      return kExitOk;
    });
  });
}

}  // namespace ridgeline::cli
