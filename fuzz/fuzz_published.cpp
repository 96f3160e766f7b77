// Fuzz target: a published-measurements file (spec::load_published); what
// loads is validated against the shipped profiles (validation::validate_published)
// and every compared number must be finite (harness.hpp).
#include "fuzz_input.hpp"
#include "harness.hpp"

RIDGELINE_FUZZ_FILE_TARGET(".yaml", run_published)
