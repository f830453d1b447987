// The processes the recorded events came from: process liveness for the ring reader (is a tracked process
// gone, so a ticket it took will never be filled?) and the recorder's process count. Kept apart from the
// heap accounting (memtrack::analysis::LiveHeap), which says nothing about which processes still run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_set>
#include <vector>

#include "memtrack/codec/event.h"

namespace memtrack::runtime {

// Fed by the reader thread with every event it returns; not thread-safe.
class SeenProcesses {
 public:
  void add(std::span<const codec::Event> events);
  // Distinct pids seen so far: the processes that were recorded.
  [[nodiscard]] std::size_t count() const { return pids_.size(); }
  [[nodiscard]] std::vector<std::int32_t> pids() const { return {pids_.begin(), pids_.end()}; }

 private:
  std::unordered_set<std::int32_t> pids_;
  bool any_ = false;
  std::int32_t last_pid_ = 0;  // pids repeat in long runs: the set is looked up only when the pid changes
};

}  // namespace memtrack::runtime
