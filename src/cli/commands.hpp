// Subcommand registration. Each register_* adds one subcommand whose callback
// stores its exit code in `rc`.
#pragma once

#include <CLI/CLI.hpp>

namespace ridgeline::cli {

void register_predict(CLI::App& app, int& rc);
void register_list(CLI::App& app, int& rc);
void register_check(CLI::App& app, int& rc);
void register_compare(CLI::App& app, int& rc);
void register_calibration(CLI::App& app, int& rc);  // microbench, calibrate, validate
void register_search(CLI::App& app, int& rc);
void register_report(CLI::App& app, int& rc);
void register_validate_published(CLI::App& app, int& rc);
void register_kernel(CLI::App& app, int& rc);  // kernel gemm|attention|elementwise|norm|softmax|cast

}  // namespace ridgeline::cli
