// The harness control API without memtrack (memtrack/control.h): what a benchmark pays for wrapping its loop
// in a region, or a harness for pausing, when the program runs on its own. The floor is the same loop with
// only benchmark::DoNotOptimize in it, so the ratio reads from one run; the heap counter (the MemoryManager)
// shows that no call allocates. memtrack-bench is never run under `memtrack record`, so these are the no-op
// path: libmemtrack-control's weak reference is null.
#include "memtrack/control.h"

#include <benchmark/benchmark.h>

namespace {

void BM_Floor_EmptyLoop(benchmark::State& state) {
  int i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(++i);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Floor_EmptyLoop);

// One region around one iteration: begin + end (two calls).
void BM_Control_RegionNoop(benchmark::State& state) {
  int i = 0;
  for (auto _ : state) {
    memtrack_region_begin("bench");
    benchmark::DoNotOptimize(++i);
    memtrack_region_end();
  }
  state.SetItemsProcessed(state.iterations() * 2);  // calls
}
BENCHMARK(BM_Control_RegionNoop);

void BM_Control_PauseResumeNoop(benchmark::State& state) {
  int i = 0;
  for (auto _ : state) {
    memtrack_pause();
    benchmark::DoNotOptimize(++i);
    memtrack_resume();
  }
  state.SetItemsProcessed(state.iterations() * 2);
}
BENCHMARK(BM_Control_PauseResumeNoop);

void BM_Control_IsRecordingNoop(benchmark::State& state) {
  int n = 0;
  for (auto _ : state) benchmark::DoNotOptimize(n += memtrack_is_recording());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Control_IsRecordingNoop);

}  // namespace
