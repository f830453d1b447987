// Peak heap of the encoder per worker count: BM_Pipeline_Peak/workers:N, N = 1 .. 64.
//
// Each run encodes the 64-frame realistic stream (~4.2M events, bench_common.h) from memory to a null sink
// with the default options (default memory budget, so K = derive_in_flight_cap) and N workers. The figure
// is max_bytes_used in the JSON output: the heap counter (memtrack/heap_counter.h) is on for one extra run of the
// benchmark, with everything the encoder allocates through operator new or malloc (slot buffers, zstd
// contexts, threads' bookkeeping) counted at malloc_usable_size. The input events are allocated before the
// window and not counted, as in CodSpeed's measurement.
//
// What it must show (issue 6): flat past the in-flight cap, since buffers belong to the K slots and not to
// threads; at 64 workers no more than 1.25x the figure at 4. The counters K and slot_bytes give the bound
// the figure should sit under: K * slot_bytes plus a constant.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "bench_common.h"
#include "memtrack/pipeline/stream_encoder.h"

namespace {

namespace bench = memtrack::bench;
namespace pipeline = memtrack::pipeline;

void BM_Pipeline_Peak(benchmark::State& state) {
  const auto events = bench::workload(bench::peak_stream_events());
  pipeline::EncoderOptions options;
  options.workers = static_cast<unsigned>(state.range(0));
  for (auto _ : state) {
    bench::MemorySource source(events);
    bench::NullSink sink;
    pipeline::EncoderStats stats;
    const auto status = pipeline::encode_stream(source, sink, options, &stats);
    if (!status.is_ok()) state.SkipWithError(status.message().c_str());
    if (stats.events != events.size()) state.SkipWithError("encoder lost events");
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * events.size()));
  state.counters["K"] = static_cast<double>(pipeline::derive_in_flight_cap(options));
  state.counters["slot_bytes"] = static_cast<double>(pipeline::slot_bytes(options));
  state.counters["events"] = static_cast<double>(events.size());
}
// One iteration: the stream is long enough to reach steady state by itself, and Google Benchmark's memory
// run repeats min(16, iterations) iterations, so the peak comes from exactly one encode of the stream.
BENCHMARK(BM_Pipeline_Peak)
    ->ArgName("workers")
    ->RangeMultiplier(2)
    ->Range(1, 64)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The heap counter's calibration: 16 MiB through each allocation entry point the encoder and its libraries
// use, all alive at once. max_bytes_used must be 96 MiB plus at most a page of rounding per block; the
// renderer prints the ratio, so a counter that misses an entry point shows up beside the figures it backs.
void BM_HeapCounter_Calibration(benchmark::State& state) {
  constexpr std::size_t kBlock = std::size_t{16} << 20;
  for (auto _ : state) {
    void* a = std::malloc(kBlock);
    void* b = std::calloc(kBlock / 16, 16);
    void* c = std::realloc(std::malloc(kBlock / 4), kBlock);
    void* d = nullptr;
    if (posix_memalign(&d, 64, kBlock) != 0) d = nullptr;
    void* e = std::aligned_alloc(4096, kBlock);
    auto f = std::make_unique_for_overwrite<std::byte[]>(kBlock);  // operator new[]
    for (void* p : {a, b, c, d, e, static_cast<void*>(f.get())}) {
      if (p == nullptr) state.SkipWithError("allocation failed");
      benchmark::DoNotOptimize(p);
    }
    std::free(a);
    std::free(b);
    std::free(c);
    std::free(d);
    std::free(e);
  }
  state.counters["allocated_bytes"] = static_cast<double>(6 * kBlock);
}
BENCHMARK(BM_HeapCounter_Calibration)->Iterations(1);

}  // namespace
