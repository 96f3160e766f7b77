#include "commands.hpp"
namespace ridgeline::cli {
void register_calibration(CLI::App&, int&) {}
void register_report(CLI::App&, int&) {}
void register_validate_published(CLI::App&, int&) {}
}
