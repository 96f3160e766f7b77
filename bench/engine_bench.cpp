// Engine throughput: full predict evaluations (graph, passes, cost, memory,
// metrics; no printing) per second, on one core, and heap allocations per
// evaluation in the timed loop (allocs_per_eval; 0 is the target once the
// warm-up call has sized the workspace and prediction).
#include <benchmark/benchmark.h>

#include "bench_plans.hpp"
#include "counting_allocator.hpp"
#include "ridgeline/engine/engine.hpp"

using namespace ridgeline;

namespace {

const std::string kRoot = RIDGELINE_SOURCE_DIR;

void BM_PredictLlama3_70B_H100(benchmark::State& state) {
  const auto hw = spec::load_hardware(kRoot + "/hardware_profiles/h100_sxm.yaml");
  const auto m = spec::load_model(kRoot + "/models/llama3_70b.yaml");
  const spec::PlanSpec p = bench::llama3_70b_plan(state.range(0) != 0);
  const auto c = cost::resolve(hw);
  engine::Workspace ws;
  engine::Prediction out;
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  engine::evaluate_into(out, ws, m, p, hw, c, opt);  // warm-up: sizes the workspace and out
  if (out.status != engine::Status::kOk) {  // an early return would time nothing
    state.SkipWithError("the benchmark plan does not evaluate to ok");
    return;
  }
  alloc_count::Scope allocs;
  for (auto _ : state) {
    engine::evaluate_into(out, ws, m, p, hw, c, opt);
    benchmark::DoNotOptimize(out.step.time_s);
  }
  const auto n_allocs = static_cast<double>(allocs.count());
  state.counters["evals_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["allocs_per_eval"] = benchmark::Counter(n_allocs, benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_PredictLlama3_70B_H100)->Arg(0)->Arg(1)->ArgName("all_passes");

}  // namespace


