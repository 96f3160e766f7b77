// ridgeline: training-step performance and memory prediction from GPU
// profiles, model configs and a training plan.
#include <iostream>

#include "commands.hpp"
#include "common.hpp"

int main(int argc, char** argv) {
  using namespace ridgeline::cli;
  CLI::App app{
      "Ridgeline predicts how fast an LLM training run goes, whether it fits in GPU memory, what MFU it reaches\n"
      "and which efficiency techniques to use, from a kernel-level roofline model of one training step.",
      "ridgeline"};
  app.set_version_flag("--version", std::string("ridgeline ") + RIDGELINE_VERSION);
  app.require_subcommand(1);
  int rc = 0;
  register_predict(app, rc);
  register_compare(app, rc);
  register_search(app, rc);
  register_kernel(app, rc);
  register_report(app, rc);
  register_calibration(app, rc);
  register_validate_published(app, rc);
  register_list(app, rc);
  register_check(app, rc);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: " << e.what() << "\n";
    std::cerr << "run 'ridgeline --help' for usage\n";
    return kExitBadInput;
  }
  return rc;
}
