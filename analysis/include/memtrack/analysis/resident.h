// Resident memory over the recording, from the `Resident` records (docs/FORMAT.md, "Context section:
// resident"): the peak of the whole recording (the sum of the latest sample of every process alive at each
// moment, as the heap peak sums the live heaps) and of each process, each with the live heap at that moment,
// so the gap between resident anonymous memory and the live heap (the allocator's overhead and retention)
// can be told. Fed in stream order by Stats (stats.h), with the live heap at the record's position.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>

#include "memtrack/analysis/live_heap.h"
#include "memtrack/codec/context.h"

namespace memtrack::analysis {

// One moment's figures: the resident split (memtrack's own pages left out), the live heap then, where.
struct ResidentPoint {
  std::uint64_t resident = 0;  // anon + file + shmem
  std::uint64_t anon = 0, file = 0, shmem = 0, swap = 0;
  std::uint64_t own = 0;        // memtrack's own resident pages left out of the figures above
  std::uint64_t live_heap = 0;  // live malloc-family bytes at that moment (of the pid, or of every process)
  std::uint64_t event = 0, timestamp = 0;
  // Resident anonymous memory minus the live heap: negative when part of the heap is not resident (allocated
  // but never touched, or swapped out).
  [[nodiscard]] std::int64_t gap() const {
    return static_cast<std::int64_t>(anon) - static_cast<std::int64_t>(live_heap);
  }
};

struct PidResident {
  std::uint64_t samples = 0;
  ResidentPoint peak;
  std::uint64_t hwm = 0;  // the kernel's VmHWM at the last sample (memtrack's pages included)
  std::uint64_t page_snapshots = 0;  // ResidentPages snapshots (their part 0 records)
};

class ResidentBooks {
 public:
  // A record at its position; `heap` has applied every event before it.
  void add(const codec::ContextRecord& record, const LiveHeap& heap);

  [[nodiscard]] std::uint64_t samples() const { return samples_; }
  // The whole recording's peak (meaningful when samples() != 0).
  [[nodiscard]] const ResidentPoint& peak() const { return peak_; }
  // Per pid, every pid with at least one sample.
  [[nodiscard]] const std::map<std::int32_t, PidResident>& pids() const { return pids_; }
  // The latest sample of every process alive now, summed (resident, its split and own; no live heap).
  [[nodiscard]] const ResidentPoint& current() const { return sum_; }
  // The most of memtrack's own pages left out of any sample.
  [[nodiscard]] std::uint64_t own_max() const { return own_max_; }
  // ResidentPages snapshots (resident per site, sites.h), of every pid.
  [[nodiscard]] std::uint64_t page_snapshots() const { return page_snapshots_; }

 private:
  std::uint64_t samples_ = 0, own_max_ = 0, page_snapshots_ = 0;
  ResidentPoint peak_;
  ResidentPoint sum_;  // the latest sample of every process alive now, summed
  std::unordered_map<std::int32_t, codec::Resident> current_;
  std::map<std::int32_t, PidResident> pids_;
};

}  // namespace memtrack::analysis
