// The benchmark program's only translation unit with the counting operator
// new (bench/counting_allocator.hpp): engine and search benchmarks report
// allocs_per_eval from it.
#include <benchmark/benchmark.h>

#define RIDGELINE_DEFINE_COUNTING_NEW
#include "counting_allocator.hpp"

BENCHMARK_MAIN();
