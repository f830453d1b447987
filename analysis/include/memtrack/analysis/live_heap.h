// The live-heap model: which heap blocks and mappings each process holds, event by event, and the peaks.
// The one model behind the recorder's summary line and `memtrack stats`.
//
// Rules (docs/FORMAT.md "Meaning"; which kinds allocate is event_kinds.h):
// - The live heap of a pid is the bytes of its allocating events not yet released. Free releases its
//   address; Realloc releases old_addr (when present) and then adds addr. Addresses are per pid (processes
//   have separate address spaces). An allocation at an address already live (a missed free) replaces it; a
//   release of an unknown address counts as an unmatched free (e.g. a forked child freeing its parent's
//   block, which is not in the child's books).
// - Mmap/Munmap are tracked separately as mapped bytes, by address range (a munmap may cut part of a
//   mapping; a mapping over an old one replaces the overlap, as the kernel does).
// - Brk is not heap; its pid still appears in pids().
// - Peaks are sampled after every event, per pid and for the sum over pids.
// - Live and mapped bytes are exact while they stay below 2^64, which only hostile input can exceed.
//
// Order matters (an allocation must be seen before its free), so a LiveHeap is fed every event exactly once,
// in artifact order, from one thread at a time. Not thread-safe; no allocation per event except when a pid,
// a block table's growth or a mapping is new.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <unordered_map>

#include "memtrack/codec/address_map.h"
#include "memtrack/codec/event.h"

namespace memtrack::analysis {

struct PidHeap {
  std::uint64_t live_bytes = 0, live_count = 0;  // at the end: what leaked
  std::uint64_t peak_bytes = 0, peak_timestamp = 0;
  std::uint64_t mapped_bytes = 0, peak_mapped_bytes = 0, peak_mapped_timestamp = 0;
  std::uint64_t unmatched_frees = 0, unmatched_munmaps = 0;
};

class LiveHeap {
 public:
  LiveHeap() = default;
  // Copies and moves keep the books consistent (they hold pointers into the results and a cache of the last
  // pid's books); a moved-from LiveHeap is empty.
  LiveHeap(const LiveHeap& other);
  LiveHeap(LiveHeap&& other) noexcept;
  LiveHeap& operator=(const LiveHeap& other);
  LiveHeap& operator=(LiveHeap&& other) noexcept;
  ~LiveHeap() = default;

  void add(std::span<const codec::Event> events);  // in artifact order

  // Every pid seen in the events, whatever their kinds. References stay valid while events are added.
  [[nodiscard]] const std::map<std::int32_t, PidHeap>& pids() const { return heaps_; }
  // Summed over pids: the live heap now, and the peak of that sum and when it happened.
  [[nodiscard]] std::uint64_t total_live_bytes() const { return total_live_; }
  [[nodiscard]] std::uint64_t total_peak_bytes() const { return total_peak_; }
  [[nodiscard]] std::uint64_t total_peak_timestamp() const { return total_peak_ts_; }

 private:
  struct Books {
    PidHeap* heap = nullptr;                          // the pid's entry in heaps_
    codec::AddressMap live;                           // addr -> size
    std::map<std::uint64_t, std::uint64_t> mappings;  // start -> length, non-overlapping
  };
  Books& books_of(std::int32_t pid);
  void relink();
  void map(Books& b, std::uint64_t addr, std::uint64_t size, std::uint64_t ts);
  void unmap(Books& b, std::uint64_t addr, std::uint64_t size);

  std::map<std::int32_t, PidHeap> heaps_;  // the results, in pid order: what pids() returns
  // Node-based: references stay valid as pids are added, so the last pid's books can be cached.
  std::unordered_map<std::int32_t, Books> books_;
  std::int32_t last_pid_ = 0;
  Books* last_ = nullptr;  // the last pid's books: pids repeat in long runs
  std::uint64_t total_live_ = 0, total_peak_ = 0, total_peak_ts_ = 0;
};

}  // namespace memtrack::analysis
