// A plan change in the words of the launch config the plan was imported
// from: the torchtitan TOML keys, Megatron-LM arguments or DeepSpeed JSON
// keys to set, each with its new value, and only where that framework
// offers the option. `advise` words its suggestions for an imported plan
// with it; a change the framework has no setting for is not suggested.
// Each mapping cites the framework source that defines the key:
//  - torchtitan: torchtitan/config/job_config.py (238fa99, the last release
//    with TOML train configs; the 2024 layout of 1a303b3 where the file
//    uses it), its float8 converter torchtitan/components/quantization/float8.py;
//  - Megatron-LM: megatron/training/arguments.py and
//    megatron/core/{transformer/transformer_config.py, model_parallel_config.py}
//    (d98e8a6); Megatron-DeepSpeed's --zero-stage;
//  - DeepSpeed: deepspeed/runtime/constants.py and zero/config.py (edaa722).
// Units: counts (degrees, sequences, layers).
#pragma once

#include <optional>
#include <string>

#include "ridgeline/spec/launch_config.hpp"
#include "ridgeline/spec/model.hpp"
#include "ridgeline/spec/plan.hpp"

namespace ridgeline::spec {

/// The edit that turns plan `from` (imported as `r` says) into `to`, as the
/// settings to write in the imported file: "training.local_batch_size = 2;
/// training.global_batch_size = 64" (torchtitan), "--micro-batch-size 2"
/// (Megatron-LM), "train_micro_batch_size_per_gpu: 2" (DeepSpeed). What the
/// framework derives needs no edit (Megatron's and DeepSpeed's DP degree
/// from the GPU count, torchtitan's sequence parallelism with TP). nullopt
/// when the framework has no setting for the change, or when nothing was
/// imported (r.kind empty).
std::optional<std::string> launch_edit(const ImportReport& r, const PlanSpec& from, const PlanSpec& to,
                                       const ModelSpec& m);

}  // namespace ridgeline::spec
