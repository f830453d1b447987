// Live-heap accounting for the summary line: bytes currently allocated per (pid, address), and the peak.
// The reader thread updates it for every event, so each pid's blocks live in a codec::AddressMap (a flat
// open-addressing table, the one `memtrack stats` uses), not in unordered_map nodes.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "memtrack/codec/address_map.h"
#include "memtrack/codec/event.h"

namespace memtrack::runtime {

class HeapTracker {
 public:
  void apply(std::span<const codec::Event> events);
  [[nodiscard]] std::uint64_t peak_bytes() const { return peak_; }
  [[nodiscard]] std::uint64_t live_bytes() const { return live_; }
  // Distinct pids seen in the events (each has its map of blocks): the processes that were recorded.
  [[nodiscard]] std::size_t processes() const { return blocks_.size(); }
  [[nodiscard]] std::vector<std::int32_t> pids() const;

 private:
  codec::AddressMap& blocks_of(std::int32_t pid);

  std::unordered_map<std::int32_t, codec::AddressMap> blocks_;  // per pid: addresses are per process
  codec::AddressMap* last_blocks_ = nullptr;                    // the last pid's map: pids rarely change
  std::int32_t last_pid_ = 0;
  std::uint64_t live_ = 0;
  std::uint64_t peak_ = 0;
};

}  // namespace memtrack::runtime
