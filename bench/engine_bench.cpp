// Engine throughput: full predict evaluations (graph, passes, cost, memory,
// metrics; no printing) per second, on one core.
#include <benchmark/benchmark.h>

#include "ridgeline/engine/engine.hpp"

using namespace ridgeline;

namespace {

const std::string kRoot = RIDGELINE_SOURCE_DIR;

void BM_PredictLlama3_70B_H100(benchmark::State& state) {
  const auto hw = spec::load_hardware(kRoot + "/hardware_profiles/h100_sxm.yaml");
  const auto m = spec::load_model(kRoot + "/models/llama3_70b.yaml");
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
  const bool all_passes = state.range(0) != 0;
  if (all_passes) {
    p.precision = spec::Precision::kFp8;
    p.recompute = {spec::RecomputeKind::kFull, 0};
    p.fusion = spec::Fusion::kCompiled;
    p.parallel.cp = 2;
    p.parallel.dp = 8;
    p.parallel.virtual_stages = 2;
    p.parallel.schedule = spec::PipelineSchedule::kInterleaved;
  }
  const auto c = cost::resolve(hw);
  graph::Graph g;
  engine::Prediction out;
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  for (auto _ : state) {
    engine::evaluate_into(out, g, m, p, hw, c, opt);
    benchmark::DoNotOptimize(out.step.time_s);
  }
  state.counters["evals_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PredictLlama3_70B_H100)->Arg(0)->Arg(1)->ArgName("all_passes");

}  // namespace


