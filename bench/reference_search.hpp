// The search space the README's `search` examples document, enumerated
// plainly: one plan per layout, nothing shared. tests/unit/
// search_equivalence_test.cpp runs each through engine::evaluate to check
// search::run's answer; bench/search_bench.cpp times the same loop as the
// reference the search's throughput is measured against.
#pragma once

#include "ridgeline/search/search.hpp"

namespace ridgeline::bench {

/// Calls f(layout, plan) for every layout of the space a search varies when
/// no dimension is fixed: TP in {1, 2, 4, 8, 16, 32}; PP every divisor of
/// the layers up to the GPU count; CP in {1, 2, 4, 8} with at least 128
/// tokens per CP rank; EP 1 (dense models); DP = GPUs / (TP PP CP);
/// micro-batch in {1, 2, 4, 8, 16}; virtual stages {1, 2, 4} (interleaving
/// needs PP > 1 and whole chunks); ZeRO 0-3 (a stage > 0 with one
/// data-parallel rank shards nothing and is the same layout as ZeRO-0);
/// recomputation none, selective, full; SP on with TP > 1; the base plan's
/// precision and framework. Layouts whose global batch is not a multiple of
/// micro-batch x DP are left out (no plan holds them).
template <class F>
void for_each_layout(const spec::ModelSpec& m, const spec::PlanSpec& base, int gpus, int global_batch, F&& f) {
  const int seq = graph::seq_len(m, base);
  const spec::Recompute recs[] = {{spec::RecomputeKind::kNone, 0},
                                  {spec::RecomputeKind::kSelective, 0},
                                  {spec::RecomputeKind::kFull, 0}};
  for (int tp : {1, 2, 4, 8, 16, 32})
    for (int pp = 1; pp <= m.layers && pp <= gpus; ++pp) {
      if (m.layers % pp != 0) continue;
      for (int cp : {1, 2, 4, 8}) {
        if (gpus % (tp * pp * cp) != 0 || seq % cp != 0 || (cp > 1 && seq / cp < 128)) continue;
        const int dp = gpus / (tp * pp * cp);
        for (int mb : {1, 2, 4, 8, 16}) {
          if (global_batch % (mb * dp) != 0) continue;
          for (int vpp : {1, 2, 4}) {
            if (vpp > 1 && (pp == 1 || m.layers % (pp * vpp) != 0)) continue;
            for (int zero = 0; zero <= 3; ++zero) {
              if (zero > 0 && dp * cp == 1) continue;
              for (const auto& rec : recs) {
                search::Layout l;
                l.tp = tp, l.pp = pp, l.cp = cp, l.dp = dp, l.micro_batch = mb, l.vpp = vpp, l.zero = zero;
                l.sp = tp > 1;
                l.recompute = rec;
                l.precision = base.precision;
                l.framework = base.framework;
                l.fp8_recipe = base.fp8_recipe;
                f(l, search::plan_for(base, l, global_batch));
              }
            }
          }
        }
      }
    }
}

}  // namespace ridgeline::bench
