// ridgeline: training-step performance and memory prediction from GPU
// profiles, model configs and a training plan.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "common.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/support/diagnostics.hpp"
#include "ridgeline/support/heap.hpp"
#include "ridgeline/support/text.hpp"
#include <fmt/format.h>
#include <algorithm>

namespace {

using ridgeline::support::closest_match;

std::vector<std::string> command_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
  return names;
}

using ridgeline::support::join;

/// The flags of `app` and the apps above it, as typed: "--micro-batch", "-o".
std::vector<std::string> flag_names(const CLI::App* app) {
  std::vector<std::string> names;
  for (; app; app = app->get_parent())
    for (const CLI::Option* o : app->get_options()) {
      for (const auto& l : o->get_lnames()) names.push_back("--" + l);
      for (const auto& s : o->get_snames()) names.push_back("-" + s);
    }
  return names;
}

/// Other tools' spellings of Ridgeline's flags (DeepSpeed's --zero-stage,
/// vLLM-style --tp-size), and --gpus where a command takes the count from
/// the layout: what to write instead.
std::string other_spelling(const std::string& flag, const std::vector<std::string>& known) {
  static constexpr std::pair<std::string_view, std::string_view> kSpellings[] = {
      {"--zero-stage", "--zero"}, {"--zero_stage", "--zero"}, {"--tp-size", "--tp"},
      {"--tp_size", "--tp"},      {"--pp-size", "--pp"},      {"--pp_size", "--pp"},
      {"--dp-size", "--dp"},      {"--dp_size", "--dp"},      {"--cp-size", "--cp"},
      {"--ep-size", "--ep"},      {"--mbs", "--micro-batch"}, {"--gbs", "--global-batch"},
      {"--seq-len", "--seq"},     {"--seq_len", "--seq"},     {"--sequence-length", "--seq"}};
  for (const auto& [other, ours] : kSpellings)
    if (flag == other && std::find(known.begin(), known.end(), std::string(ours)) != known.end())
      return fmt::format("error: unknown flag '{}'; Ridgeline spells it '{}'", flag, ours);
  if (flag == "--gpus" && std::find(known.begin(), known.end(), "--dp") != known.end())
    return "error: unknown flag '--gpus'; this command takes the GPU count from TP x PP x DP x CP: give --dp N "
           "(search takes --gpus)";
  return "";
}

/// One line naming the unknown command or flag a parse error is about, with a
/// did-you-mean, or "" when the error is of another kind. Walks argv as CLI11
/// does: words that name a subcommand select it; a word after "--" is a value.
std::string unknown_word(const CLI::App& app, int argc, char** argv) {
  const CLI::App* cur = &app;
  bool command_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") break;
    if (a.size() > 1 && a[0] == '-') {
      if (a == "-h" || a == "--help") continue;
      if (a.find_first_not_of("-0123456789.eE") == std::string::npos) continue;  // a negative number
      const std::string flag = a.substr(0, a.find('='));
      const auto known = flag_names(cur);
      if (std::find(known.begin(), known.end(), flag) != known.end()) continue;
      if (flag.size() > 2 && flag[1] != '-') continue;  // -ofile, -v3: short flags with values
      if (auto other = other_spelling(flag, known); !other.empty()) return other;
      const std::string guess = closest_match(flag, known);
      const std::string where = cur == &app ? "" : fmt::format(" for '{}'", cur->get_name());
      return guess.empty() ? fmt::format("error: unknown flag '{}'{}; run 'ridgeline {}--help' for the flags", flag,
                                         where, cur == &app ? "" : cur->get_name() + " ")
                           : fmt::format("error: unknown flag '{}'; did you mean '{}'?", flag, guess);
    }
    bool is_sub = false;
    for (const CLI::App* sub : cur->get_subcommands([](const CLI::App*) { return true; }))
      if (sub->get_name() == a) cur = sub, is_sub = true, command_given = true;
    if (is_sub) continue;
    if (!command_given && cur == &app) {
      const auto names = command_names(app);
      const std::string guess = closest_match(a, names);
      return guess.empty() ? fmt::format("error: unknown command '{}'; commands: {}", a, join(names))
                           : fmt::format("error: unknown command '{}'; did you mean '{}'?", a, guess);
    }
  }
  return "";
}

/// What `ridgeline --version` prints.
const std::string kVersionLine = std::string("ridgeline ") + RIDGELINE_VERSION;

/// The command line's app: every subcommand, with the options of `invoked`
/// only (Commands), or of every one when `invoked` is "".
std::unique_ptr<CLI::App> make_app(const std::string& invoked, int& rc) {
  using namespace ridgeline::cli;
  auto app = std::make_unique<CLI::App>(
      "Ridgeline predicts how fast an LLM training run goes, whether it fits in GPU memory, what MFU it reaches\n"
      "and which efficiency techniques to use, from a kernel-level roofline model of one training step.",
      "ridgeline");
  app->set_version_flag("--version", kVersionLine);
  app->require_subcommand(1);
  Commands commands(*app, invoked);
  register_predict(commands, rc);
  register_advise(commands, rc);
  register_compare(commands, rc);
  register_search(commands, rc);
  register_kernel(commands, rc);
  register_report(commands, rc);
  register_calibration(commands, rc);
  register_validate_published(commands, rc);
  register_list(commands, rc);
  register_check(commands, rc);
  return app;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ridgeline::cli;
  // `ridgeline --version` alone needs no subcommand and no profile: answered
  // here, before every subcommand's options are registered (what the app
  // does with no subcommand named) and the default framework profile read.
  if (argc == 2 && std::string(argv[1]) == "--version") {
    std::cout << kVersionLine << "\n";
    return 0;
  }
  ridgeline::support::keep_freed_heap();
  // The framework profiles (frameworks/*.yaml) are listed here and the
  // default (megatron) read, so that a missing or malformed default is one
  // located error before any command runs; the others are read when a plan,
  // a list or a search first needs them.
  if (const int e = guarded([] {
        ridgeline::spec::framework(0);
        return 0;
      });
      e != 0)
    return e;
  int rc = 0;
  // The top-level app has no option that takes a value, so a first word that
  // is not a flag is the subcommand, if it names one (a misspelt one is an
  // error that needs only the subcommands' names); with none (--help), every
  // subcommand gets its options.
  const std::string first = argc > 1 && argv[1][0] != '-' ? argv[1] : "";
  std::unique_ptr<CLI::App> made = make_app(first, rc);
  CLI::App& app = *made;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (const std::string line = unknown_word(app, argc, argv); !line.empty()) {
      std::cerr << line << "\n";
      return kExitBadInput;
    }
    std::cerr << "error: " << e.what() << "\n";
    std::cerr << "run 'ridgeline --help' for usage\n";
    return kExitBadInput;
  }
  return rc;
}
