// A Google Benchmark suite whose benchmarks wrap their timed loop in a memtrack region (memtrack/control.h),
// so `memtrack record` + `memtrack stats --region NAME` give each benchmark's own allocations, without the
// harness's or the setup's. Without memtrack the region calls are no-ops (a few ns each, no allocation).
//
//   memtrack record -o bench.msgpack -- ./memtrack-example-region
//   memtrack stats bench.msgpack                      # every region occurrence, one row each
//   memtrack stats bench.msgpack --region BM_VectorPushBack/1024
//
// Each benchmark runs a fixed number of iterations (->Iterations), so its function runs once and its region has
// one occurrence: the figures divided by the iterations are per iteration. (Without a fixed count Google
// Benchmark calls the function several times while it picks one; each call is an occurrence of the region.)
#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <vector>

#include "memtrack/control.h"

namespace {

// The benchmark's timed loop as a region named after the benchmark and its argument, as Google Benchmark
// names the run ("BM_VectorPushBack/1024").
class Region {
 public:
  Region(const char* benchmark, const benchmark::State& state) {
    const std::string name = std::string(benchmark) + "/" + std::to_string(state.range(0));
    memtrack_region_begin(name.c_str());  // the library copies the name
  }
  ~Region() { memtrack_region_end(); }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
};

void BM_VectorPushBack(benchmark::State& state) {
  static constexpr const char* kName = "BM_VectorPushBack";
  const auto n = static_cast<int>(state.range(0));
  std::vector<int> unrelated(4096);  // setup: allocated before the region, not the benchmark's
  benchmark::DoNotOptimize(unrelated.data());
  const Region region(kName, state);
  for (auto _ : state) {
    std::vector<int> v;  // grows by doubling: about log2(n) allocations per iteration
    for (int i = 0; i < n; ++i) v.push_back(i);
    benchmark::DoNotOptimize(v.data());
  }
}
BENCHMARK(BM_VectorPushBack)->Arg(1024)->Iterations(1000);

void BM_VectorReserve(benchmark::State& state) {
  static constexpr const char* kName = "BM_VectorReserve";
  const auto n = static_cast<int>(state.range(0));
  const Region region(kName, state);
  for (auto _ : state) {
    std::vector<int> v;
    v.reserve(static_cast<std::size_t>(n));  // one allocation per iteration
    for (int i = 0; i < n; ++i) v.push_back(i);
    benchmark::DoNotOptimize(v.data());
  }
}
BENCHMARK(BM_VectorReserve)->Arg(1024)->Iterations(1000);

void BM_MapInsert(benchmark::State& state) {
  static constexpr const char* kName = "BM_MapInsert";
  const auto n = static_cast<int>(state.range(0));
  const Region region(kName, state);
  for (auto _ : state) {
    std::map<int, int> m;  // one node per element
    for (int i = 0; i < n; ++i) m.emplace(i, i);
    benchmark::DoNotOptimize(&m);
  }
}
BENCHMARK(BM_MapInsert)->Arg(64)->Iterations(1000);

}  // namespace

BENCHMARK_MAIN();
