// Subcommand registration. Each register_* adds one subcommand whose callback
// stores its exit code in `rc`.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <utility>

#include "plan_flags.hpp"
#include "ridgeline/advise/advise.hpp"

namespace ridgeline::cli {

/// The top-level subcommands as they are registered. Every one is added with
/// its name and description, which the top-level --help lists; only the one
/// the command line runs gets its options and callback, since adding CLI11
/// options is most of the start-up of a short command (each new option is
/// checked against the subcommand's others). With no subcommand named, every
/// one gets them.
class Commands {
 public:
  /// `invoked`: the subcommand the command line names, or "" for every one.
  Commands(CLI::App& app, std::string invoked) : app_(app), invoked_(std::move(invoked)) {}

  /// Adds subcommand `name`; returns it when its options are to be added,
  /// nullptr when another subcommand runs.
  CLI::App* add(const std::string& name, std::string description) {
    CLI::App* cmd = app_.add_subcommand(name, std::move(description));
    if (invoked_.empty()) return cmd;
    return name == invoked_ ? cmd : nullptr;
  }

 private:
  CLI::App& app_;
  std::string invoked_;
};

void register_predict(Commands& commands, int& rc);
void register_advise(Commands& commands, int& rc);  // bottlenecks and the changes that relieve them
void register_list(Commands& commands, int& rc);
void register_check(Commands& commands, int& rc);
void register_compare(Commands& commands, int& rc);
void register_calibration(Commands& commands, int& rc);  // microbench, calibrate, validate
void register_search(Commands& commands, int& rc);
void register_report(Commands& commands, int& rc);
void register_validate_published(Commands& commands, int& rc);
void register_kernel(Commands& commands, int& rc);  // kernel gemm|attention|elementwise|norm|softmax|cast

/// Fills each suggestion's `ridgeline predict` command (predict_command) for
/// `gpu` and `model` as the user named them, with the --set overrides of `flags`.
void set_predict_commands(advise::Advice& a, const std::string& gpu, const std::string& model, const PlanFlags& flags);

}  // namespace ridgeline::cli
