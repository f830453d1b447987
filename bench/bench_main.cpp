// memtrack-bench's main: Google Benchmark's, plus the heap counter as MemoryManager (so every benchmark
// gets max_bytes_used in the JSON output) and the workload's sizes recorded in the output's context, so
// bench/render_performance.py reads them from the same run as the timings.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "bench_common.h"
#include "memory_manager.h"
#include "memtrack/workload/realistic_events.h"

namespace memtrack::bench {

bool smoke() {
  static const bool on = [] {
    const char* v = std::getenv("MEMTRACK_BENCH_SMOKE");
    return v != nullptr && *v != '\0' && std::string(v) != "0";
  }();
  return on;
}

std::size_t stream_events() { return (smoke() ? 4 : 64) * kFrameEvents; }
std::size_t peak_stream_events() { return (smoke() ? 4 : 64) * kFrameEvents; }
std::size_t decode_stream_events() { return (smoke() ? 2 : 16) * kFrameEvents; }

std::span<const codec::Event> workload(std::size_t n) {
  static const std::vector<codec::Event> events =
      workload::realistic_events(std::max({stream_events(), peak_stream_events(), decode_stream_events()}));
  return std::span(events).first(std::min(n, events.size()));
}

}  // namespace memtrack::bench

namespace {

// Google Benchmark 1.7.1 keeps each repetition's memory result in a std::vector and hands the reporter a
// pointer into it, so with --benchmark_repetitions > 1 every repetition but the last reports max_bytes_used
// from freed memory (seen here as 2314885530818475619 = "c       "). Such runs get no heap counter: time
// them with repetitions and take the heap figures from a run without (bench/run_suite.sh does both).
bool repeats(int argc, char** argv) {
  const std::string flag = "--benchmark_repetitions=";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind(flag, 0) == 0 && std::atoi(arg.c_str() + flag.size()) > 1) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  namespace mb = memtrack::bench;
  const bool count_heap = !repeats(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("memtrack_smoke", mb::smoke() ? "1" : "0");
  benchmark::AddCustomContext("memtrack_frame_events", std::to_string(mb::kFrameEvents));
  benchmark::AddCustomContext("memtrack_stream_events", std::to_string(mb::stream_events()));
  benchmark::AddCustomContext("memtrack_peak_stream_events", std::to_string(mb::peak_stream_events()));
  benchmark::AddCustomContext("memtrack_decode_stream_events", std::to_string(mb::decode_stream_events()));
  benchmark::AddCustomContext("memtrack_heap_counter", count_heap ? "on" : "off (repetitions > 1)");
  mb::HeapCounter heap;
  if (count_heap) benchmark::RegisterMemoryManager(&heap);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::RegisterMemoryManager(nullptr);
  benchmark::Shutdown();
  return 0;
}
