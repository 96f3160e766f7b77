// The benchmark program's only translation unit with the counting operator
// new (bench/counting_allocator.hpp): engine and search benchmarks report
// allocs_per_eval from it.
#include <benchmark/benchmark.h>

#define RIDGELINE_DEFINE_COUNTING_NEW
#include "counting_allocator.hpp"
#include "ridgeline/support/heap.hpp"

// The process's heap set as the ridgeline program sets it
// (support::keep_freed_heap), so that the library is measured as the CLI
// runs it. With glibc's defaults a search's freed memory went back to the
// system between iterations and was faulted in again by the next.
int main(int argc, char** argv) {
  ridgeline::support::keep_freed_heap();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
