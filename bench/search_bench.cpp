// Search throughput: configurations evaluated per second by `ridgeline
// search`, on one thread and on two, for GPT-3 175B on 1024 A100s (global
// batch 1536, sequence 2048: the README's example), and heap allocations per
// evaluated configuration (allocs_per_eval: the whole search, threads and
// result lists included, over the configurations it evaluated).
// BM_SearchReference175B is the same space evaluated plainly, one full
// engine::evaluate_into per layout with nothing shared (bench::for_each_layout,
// the loop tests/unit/search_equivalence_test.cpp checks the search against),
// in the same run: the ratio of the two rates is the figure that holds on a
// busy machine.
#include <benchmark/benchmark.h>

#include "counting_allocator.hpp"
#include "reference_search.hpp"
#include "ridgeline/search/search.hpp"
#include "ridgeline/spec/framework.hpp"

using namespace ridgeline;

namespace {

const std::string kRoot = RIDGELINE_SOURCE_DIR;

struct Space175B {
  spec::HardwareSpec hw = spec::load_hardware(kRoot + "/hardware_profiles/a100_sxm_80gb.yaml");
  spec::ModelSpec m = spec::load_model(kRoot + "/models/gpt3_175b.yaml");
  spec::PlanSpec base;
  Space175B() {
    base.seq_len = 2048;
    base.global_batch = 1536;
  }
};

/// Runs search `s` (its thread count from the benchmark's argument) over
/// the 175B space until the benchmark is done; counters: evaluated layouts
/// per second of search, layouts enumerated, the search's seconds, and heap
/// allocations per evaluated layout (the whole search's, over them).
void time_search(benchmark::State& state, search::SearchSpec s) {
  const Space175B sp;
  s.gpus = 1024;
  s.global_batch = 1536;
  s.threads = static_cast<int>(state.range(0));
  double evaluated = 0, enumerated = 0, seconds = 0;
  search::Workspace ws;  // the caller's, kept across searches as a planning loop keeps it
  alloc_count::Scope allocs;
  for (auto _ : state) {
    auto r = search::run(s, sp.m, sp.base, sp.hw, true, &ws);
    evaluated += static_cast<double>(r.counts.evaluated);
    enumerated += static_cast<double>(r.counts.enumerated);
    seconds += r.seconds;
    benchmark::DoNotOptimize(r.top.data());
  }
  state.counters["evaluated_per_s"] = evaluated / seconds;
  state.counters["enumerated"] = enumerated / state.iterations();
  state.counters["search_s"] = seconds / state.iterations();
  state.counters["allocs_per_eval"] = static_cast<double>(allocs.count()) / evaluated;
}

void BM_Search175B_1024xA100(benchmark::State& state) { time_search(state, {}); }
BENCHMARK(BM_Search175B_1024xA100)->Arg(1)->Arg(2)->ArgName("threads")->Unit(benchmark::kMillisecond)->UseRealTime();

// The wide space (bench/cli_bench.cpp's BM_Cli_SearchWide175B): framework,
// TP overlap and offload searched as well, 1,555,200 layouts enumerated.
void BM_SearchWide175B_1024xA100(benchmark::State& state) {
  search::SearchSpec s;
  for (size_t i = 0; i < spec::framework_count(); ++i) s.frameworks.push_back(static_cast<std::uint8_t>(i));
  s.tp_overlap = {false, true};
  s.offload = search::searchable_offloads();
  time_search(state, s);
}
BENCHMARK(BM_SearchWide175B_1024xA100)->Arg(1)->Arg(2)->ArgName("threads")->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SearchReference175B_1024xA100(benchmark::State& state) {
  const Space175B sp;
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  const auto c = engine::resolve_for(sp.hw, sp.base, opt);
  engine::Workspace ws;
  engine::Prediction out;
  double evaluated = 0;
  for (auto _ : state) {
    bench::for_each_layout(sp.m, sp.base, 1024, 1536, [&](const search::Layout&, const spec::PlanSpec& p) {
      engine::evaluate_into(out, ws, sp.m, p, sp.hw, c, opt);
      if (out.status != engine::Status::kInvalid) evaluated += 1;
      benchmark::DoNotOptimize(out.step.time_s);
    });
  }
  state.counters["evaluated_per_s"] = benchmark::Counter(evaluated, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SearchReference175B_1024xA100)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
