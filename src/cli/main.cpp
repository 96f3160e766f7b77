// ridgeline: training-step performance and memory prediction from GPU
// profiles, model configs and a training plan.
#include <iostream>

#include "commands.hpp"
#include "common.hpp"
#include "ridgeline/spec/framework.hpp"

int main(int argc, char** argv) {
  using namespace ridgeline::cli;
  // The framework profiles (frameworks/*.yaml) are read once, here, so that a
  // malformed one is one located error before any command (or --help, which
  // lists their names) runs.
  if (const int e = guarded([] {
        ridgeline::spec::frameworks();
        return 0;
      });
      e != 0)
    return e;
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
