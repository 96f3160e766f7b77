// Search throughput: configurations evaluated per second by `ridgeline
// search`, on one thread and on all cores, for GPT-3 175B on 1024 A100s
// (global batch 1536, sequence 2048), and heap allocations per evaluated
// configuration (allocs_per_eval: the whole search, threads and result lists
// included, over the configurations it evaluated).
#include <benchmark/benchmark.h>

#include "counting_allocator.hpp"
#include "ridgeline/search/search.hpp"

using namespace ridgeline;

namespace {

void BM_Search175B_1024xA100(benchmark::State& state) {
  const std::string root = RIDGELINE_SOURCE_DIR;
  const auto hw = spec::load_hardware(root + "/hardware_profiles/a100_sxm_80gb.yaml");
  const auto m = spec::load_model(root + "/models/gpt3_175b.yaml");
  spec::PlanSpec base;
  base.seq_len = 2048;
  base.global_batch = 1536;
  search::SearchSpec s;
  s.gpus = 1024;
  s.global_batch = 1536;
  s.threads = static_cast<int>(state.range(0));
  double evaluated = 0, seconds = 0;
  alloc_count::Scope allocs;
  for (auto _ : state) {
    auto r = search::run(s, m, base, hw);
    evaluated += static_cast<double>(r.counts.evaluated);
    seconds += r.seconds;
    benchmark::DoNotOptimize(r.top.data());
  }
  state.counters["evaluated_per_s"] = evaluated / seconds;
  state.counters["search_s"] = seconds / state.iterations();
  state.counters["allocs_per_eval"] = static_cast<double>(allocs.count()) / evaluated;
}
BENCHMARK(BM_Search175B_1024xA100)->Arg(1)->Arg(2)->ArgName("threads")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
