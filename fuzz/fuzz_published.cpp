// Fuzz target: a published-measurements file (calibrate::load_published); what
// loads is validated against the shipped profiles (calibrate::validate_published)
// and every compared number must be finite (harness.hpp).
#include "fuzz_input.hpp"
#include "harness.hpp"

RIDGELINE_FUZZ_FILE_TARGET(".yaml", run_published)
