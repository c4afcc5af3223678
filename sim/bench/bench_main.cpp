// The main of every simulator benchmark: Google Benchmark's, after the allocator settings
// `stepsim` itself runs with (cli/main.cpp; stepsim/core/heap.hpp), so that a benchmark
// times what a user's process does rather than glibc unmapping and faulting its buffers.

#include <benchmark/benchmark.h>

#include "stepsim/base/heap.hpp"

int main(int argc, char** argv) {
  stepsim::keep_freed_memory();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
