// Fuzz target: a measurement file (spec::load_measurements); what loads must
// have finite numbers and survive a to_json round trip (harness.hpp).
#include "fuzz_input.hpp"
#include "harness.hpp"

RIDGELINE_FUZZ_FILE_TARGET(".json", run_measurements)
