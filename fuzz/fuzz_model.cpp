// Fuzz target: a model YAML (spec::load_model); what loads is evaluated
// against fixed counterparts and must give finite, non-negative numbers (harness.hpp).
#include "fuzz_input.hpp"
#include "harness.hpp"

RIDGELINE_FUZZ_FILE_TARGET(".yaml", run_model)
