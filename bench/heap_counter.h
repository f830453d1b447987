// Peak heap of a benchmark, for Google Benchmark's MemoryManager (max_bytes_used in the JSON output).
//
// The bench binary defines malloc, free, calloc, realloc, reallocarray, posix_memalign, aligned_alloc,
// memalign, valloc and pvalloc itself (heap_counter.cpp), forwarding to glibc's __libc_* entry points. A
// definition in the executable wins over libc's for every library in the process, so both allocators of
// the encoder are counted: its slot buffers and bookkeeping (operator new, which calls malloc) and zstd's
// compression contexts (plain malloc). A block counts for malloc_usable_size(p) bytes, what the process
// actually reserved for it. Counting is switched on only between Start() and Stop(), so other benchmarks
// pay one relaxed load per call.
//
// Not counted: memory that never goes through malloc. Thread stacks (mmap), glibc's per-thread arenas'
// own overhead, and oneTBB's small task objects (oneTBB allocates those with libtbbmalloc, which maps its
// own memory, when libtbbmalloc.so.2 is installed). bench/encode_rss.sh measures all of it as peak RSS.
// A block allocated before Start() and freed inside the window would lower the count: net_heap_growth
// (bytes still allocated at Stop) is reported so a benchmark that leaves the window balanced shows ~0.
#pragma once

#include <benchmark/benchmark.h>

namespace memtrack::bench {

class HeapCounter : public benchmark::MemoryManager {
 public:
  void Start() override;
  void Stop(Result& result) override;
  void Stop(Result* result) override { Stop(*result); }  // Google Benchmark 1.7's deprecated overload
};

}  // namespace memtrack::bench
