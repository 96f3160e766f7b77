// Fuzz target: a Hugging Face config.json (spec::load_hf_config); what loads is evaluated
// against fixed counterparts and must give finite, non-negative numbers (harness.hpp).
#include "fuzz_input.hpp"
#include "harness.hpp"

RIDGELINE_FUZZ_FILE_TARGET(".json", run_hf_config)
