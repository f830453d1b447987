// The process's heap, counted: peak and net live bytes and allocation counts between start() and stop().
// Used by the benchmarks (Google Benchmark's MemoryManager, bench/heap_counter_manager.h) and by tests that
// bound a component's memory. Link memtrack::heap_counter only into executables that need it: it replaces
// malloc for the whole process.
//
// How: in plain builds the executable defines malloc, free, calloc, realloc, reallocarray and the aligned
// variants on top of glibc's __libc_* entry points. An executable's definitions preempt libc's for every
// shared library, so libzstd's and libstdc++'s allocations (operator new calls malloc) are counted too. A
// block counts for malloc_usable_size(p) bytes, what the process actually reserved for it. Sanitizer builds
// cannot replace malloc (the sanitizer owns it); they count through the sanitizer's malloc/free hooks
// instead, at the requested sizes. Either way, every thread's allocations are counted while a measurement is
// active, and other code pays one relaxed load per call.
//
// Not counted: memory that never goes through malloc. Thread stacks (mmap), glibc's per-thread arenas' own
// overhead, and oneTBB's small task objects (oneTBB allocates those with libtbbmalloc, which maps its own
// memory, when libtbbmalloc.so.2 is installed). bench/encode_rss.sh measures all of it as peak RSS.
#pragma once

#include <cstdint>

namespace memtrack::heap_counter {

struct Counts {
  std::int64_t peak_bytes = 0;       // the peak of live bytes since start()
  // Live bytes at stop(), relative to start(). A block allocated before start() and freed inside the window
  // lowers both figures (so the peak is never more than the true peak): a balanced window shows ~0 here.
  std::int64_t net_bytes = 0;
  std::int64_t allocations = 0;      // allocation calls (a realloc counts as one)
  std::int64_t allocated_bytes = 0;  // their bytes, added up
};

// Starts counting from zero.
void start();
// Stops counting and returns what was counted since start().
Counts stop();

}  // namespace memtrack::heap_counter
