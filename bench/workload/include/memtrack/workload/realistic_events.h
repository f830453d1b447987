// The realistic event workload: the one deterministic generator behind every benchmark (bench/), the
// pipeline tests (tests/pipeline/) and `memtrack-gen-events` (raw records for the shell benchmarks).
//
// What the stream looks like, and why (each choice mirrors what a traced C/C++ program emits):
//   - pids: 4242 for 15/16 of the events, 4243 for the rest (a parent and one child).
//   - tids: pid + 0..5, uniform (a handful of threads per process).
//   - timestamps: CLOCK_MONOTONIC-like nanoseconds starting at 1.7e12, +20..919 ns per event, strictly
//     increasing (events arrive in time order from the recorder).
//   - addresses: 48-bit, 16-byte aligned, bump-allocated from a PIE-like heap base 0x5555'5600'0000; mmaps
//     step down 1 MiB at a time from 0x7f3a'0000'0000; brk grows by 132 KiB from 0x5555'5580'0000.
//   - sizes: 70% 8..128 bytes, 27% 129..4096, 3% 4 KiB..260 KiB (mostly small, as malloc traces are).
//   - kinds, per 1000 events: 440 Malloc, 440 Free (of a live block: 3/4 one of the 8 most recent, LIFO-ish,
//     1/4 any live block), 60 Realloc (9/10 move a live block, 1/10 realloc(NULL) without old_addr),
//     35 Calloc, 13 AlignedAlloc (64 B..2 KiB), 6 Mmap (64 KiB..1 MiB), 4 Munmap, 2 Brk.
// With these, a 65,536-event frame serializes to about 64 msgpack bytes per event (BM_Serialize_Frame reports
// bytes_per_event), as CodSpeed's realistic data does (~64 B/event).
//
// Determinism: the same seed gives the same events on every platform and compiler (a splitmix64 stream and
// integer arithmetic only, no <random> distributions, whose results are implementation-defined). Changing
// the distribution changes every benchmark's input: re-run the suite and regenerate docs/PERFORMANCE.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "memtrack/codec/event.h"

namespace memtrack::workload {

class EventGenerator {
 public:
  explicit EventGenerator(std::uint64_t seed = 1) : state_(seed) {}

  // The next event of the stream.
  codec::Event next();
  // The next n events.
  std::vector<codec::Event> take(std::size_t n);

 private:
  std::uint64_t rand();
  std::uint64_t small_size();
  std::uint64_t new_heap_addr(std::uint64_t size);
  codec::Event alloc(codec::EventKind kind, std::int32_t pid, std::int32_t tid, std::uint64_t size);
  std::uint64_t take_live();

  std::uint64_t state_;
  std::uint64_t timestamp_ = 1'700'000'000'000ull;
  std::uint64_t heap_ = 0x5555'5600'0000ull;
  std::uint64_t mmap_top_ = 0x7f3a'0000'0000ull;
  std::uint64_t brk_ = 0x5555'5580'0000ull;
  std::vector<std::uint64_t> live_;  // addresses allocated and not yet freed, so frees are of real blocks
};

// The first n events of the stream for `seed` (the benchmarks' input: seed 1).
std::vector<codec::Event> realistic_events(std::size_t n, std::uint64_t seed = 1);

}  // namespace memtrack::workload
