// Peak heap of a benchmark, for Google Benchmark's MemoryManager (max_bytes_used in the JSON output): the
// process-wide heap counter (bench/heap_counter, memtrack/heap_counter.h says what it counts and what not)
// switched on between Start() and Stop().
#pragma once

#include <benchmark/benchmark.h>

#include "memtrack/heap_counter.h"

namespace memtrack::bench {

class HeapCounter : public benchmark::MemoryManager {
 public:
  void Start() override { heap_counter::start(); }
  void Stop(Result& result) override {
    const heap_counter::Counts c = heap_counter::stop();
    result.num_allocs = c.allocations;
    result.max_bytes_used = c.peak_bytes;
    result.total_allocated_bytes = c.allocated_bytes;
    result.net_heap_growth = c.net_bytes;
  }
  void Stop(Result* result) override { Stop(*result); }  // Google Benchmark 1.7's deprecated overload
};

}  // namespace memtrack::bench
