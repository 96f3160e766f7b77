// Subcommand registration. Each register_* adds one subcommand whose callback
// stores its exit code in `rc`.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "plan_flags.hpp"
#include "ridgeline/advise/advise.hpp"

namespace ridgeline::cli {

void register_predict(CLI::App& app, int& rc);
void register_advise(CLI::App& app, int& rc);  // bottlenecks and the changes that relieve them
void register_list(CLI::App& app, int& rc);
void register_check(CLI::App& app, int& rc);
void register_compare(CLI::App& app, int& rc);
void register_calibration(CLI::App& app, int& rc);  // microbench, calibrate, validate
void register_search(CLI::App& app, int& rc);
void register_report(CLI::App& app, int& rc);
void register_validate_published(CLI::App& app, int& rc);
void register_kernel(CLI::App& app, int& rc);  // kernel gemm|attention|elementwise|norm|softmax|cast

/// Fills each suggestion's `ridgeline predict` command (predict_command) for
/// `gpu` and `model` as the user named them, with the --set overrides of `flags`.
void set_predict_commands(advise::Advice& a, const std::string& gpu, const std::string& model, const PlanFlags& flags);

}  // namespace ridgeline::cli
