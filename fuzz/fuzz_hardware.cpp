// Fuzz target: a hardware profile (spec::load_hardware); what loads is evaluated
// against fixed counterparts and must give finite, non-negative numbers (harness.hpp).
#include "fuzz_input.hpp"
#include "harness.hpp"

RIDGELINE_FUZZ_FILE_TARGET(".yaml", run_hardware)
