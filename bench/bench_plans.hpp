// The plans bench/engine_bench.cpp times and tests/unit/allocation_test.cpp
// checks for allocations: Llama-3-70B on H100 with TP8 PP4 DP16 SP, ZeRO-1,
// selective recomputation; with `all_passes`, also fp8, full recomputation,
// compiled fusion, CP2 and interleaved 1F1B (v = 2), so every pass runs.
#pragma once

#include "ridgeline/spec/plan.hpp"

namespace ridgeline::bench {

inline spec::PlanSpec llama3_70b_plan(bool all_passes) {
  spec::PlanSpec p;
  p.seq_len = 8192;
  p.micro_batch = 1;
  p.global_batch = 512;
  p.parallel.tp = 8;
  p.parallel.pp = 4;
  p.parallel.dp = 16;
  p.parallel.sp = true;
  p.parallel.zero = 1;
  p.recompute = {spec::RecomputeKind::kSelective, 0};
  if (all_passes) {
    p.precision = spec::Precision::kFp8;
    p.recompute = {spec::RecomputeKind::kFull, 0};
    p.fusion = spec::Fusion::kCompiled;
    p.parallel.cp = 2;
    p.parallel.dp = 8;
    p.parallel.virtual_stages = 2;
  }
  return p;
}

}  // namespace ridgeline::bench
