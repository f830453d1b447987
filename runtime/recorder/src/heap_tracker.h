// Live-heap accounting for the summary line: bytes currently allocated per (pid, address), and the peak.
// An open-addressing table with linear probing and backward-shift deletion: the reader thread updates it
// for every event, so it must cost a few nanoseconds, not an unordered_map node allocation.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_set>
#include <vector>

#include "memtrack/codec/event.h"

namespace memtrack::runtime {

class HeapTracker {
 public:
  HeapTracker();
  void apply(std::span<const codec::Event> events);
  [[nodiscard]] std::uint64_t peak_bytes() const { return peak_; }
  [[nodiscard]] std::uint64_t live_bytes() const { return live_; }
  // Distinct pids seen in the events: the processes that were recorded.
  [[nodiscard]] std::size_t processes() const { return pids_.size(); }
  [[nodiscard]] const std::unordered_set<std::int32_t>& pids() const { return pids_; }

 private:
  struct Entry {
    std::uint64_t addr;  // 0 = empty (malloc never returns NULL as a success)
    std::uint64_t size;
    std::int32_t pid;
  };
  void insert(std::int32_t pid, std::uint64_t addr, std::uint64_t size);
  void erase(std::int32_t pid, std::uint64_t addr);
  void grow();
  [[nodiscard]] std::size_t slot_of(std::int32_t pid, std::uint64_t addr) const;

  std::vector<Entry> table_;
  std::size_t mask_;
  std::size_t count_ = 0;
  std::uint64_t live_ = 0;
  std::uint64_t peak_ = 0;
  std::unordered_set<std::int32_t> pids_;
  std::int32_t last_pid_ = 0;
};

}  // namespace memtrack::runtime
