#include "heap_tracker.h"

namespace memtrack::runtime {

using codec::EventKind;

// Small to start (it stays in L1/L2 for typical live sets) and doubled when half full.
HeapTracker::HeapTracker() : table_(1u << 12), mask_((1u << 12) - 1) {}

std::size_t HeapTracker::slot_of(std::int32_t pid, std::uint64_t addr) const {
  std::uint64_t h =
      (addr ^ (static_cast<std::uint64_t>(static_cast<std::uint32_t>(pid)) << 40)) * 0x9E3779B97F4A7C15ull;
  return static_cast<std::size_t>(h >> 20) & mask_;
}

void HeapTracker::grow() {
  std::vector<Entry> old = std::move(table_);
  table_.assign(old.size() * 2, Entry{});
  mask_ = table_.size() - 1;
  count_ = 0;
  for (const Entry& e : old) {
    if (e.addr == 0) continue;
    std::size_t i = slot_of(e.pid, e.addr);
    while (table_[i].addr != 0) i = (i + 1) & mask_;
    table_[i] = e;
    ++count_;
  }
}

void HeapTracker::insert(std::int32_t pid, std::uint64_t addr, std::uint64_t size) {
  if (addr == 0) return;
  if ((count_ + 1) * 2 > table_.size()) grow();
  std::size_t i = slot_of(pid, addr);
  while (table_[i].addr != 0) {
    if (table_[i].addr == addr && table_[i].pid == pid) {  // a block we missed the free of: replace it
      live_ -= table_[i].size;
      table_[i].size = size;
      live_ += size;
      return;
    }
    i = (i + 1) & mask_;
  }
  table_[i] = Entry{addr, size, pid};
  ++count_;
  live_ += size;
  if (live_ > peak_) peak_ = live_;
}

void HeapTracker::erase(std::int32_t pid, std::uint64_t addr) {
  std::size_t i = slot_of(pid, addr);
  while (table_[i].addr != 0 && !(table_[i].addr == addr && table_[i].pid == pid)) i = (i + 1) & mask_;
  if (table_[i].addr == 0) return;  // e.g. a forked child freeing its parent's block: not in our books
  live_ -= table_[i].size;
  --count_;
  // Backward-shift deletion keeps probe chains intact without tombstones.
  std::size_t hole = i;
  for (std::size_t j = (i + 1) & mask_; table_[j].addr != 0; j = (j + 1) & mask_) {
    const std::size_t home = slot_of(table_[j].pid, table_[j].addr);
    // Move j into the hole unless its home lies cyclically in (hole, j].
    const bool home_in_range = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (!home_in_range) {
      table_[hole] = table_[j];
      hole = j;
    }
  }
  table_[hole] = Entry{};
}

void HeapTracker::apply(std::span<const codec::Event> events) {
  for (const codec::Event& e : events) {
    if (e.pid != last_pid_) {
      pids_.insert(e.pid);
      last_pid_ = e.pid;
    }
    switch (e.kind) {
      case EventKind::Malloc:
      case EventKind::Calloc:
      case EventKind::AlignedAlloc:
        insert(e.pid, e.addr, e.size);
        break;
      case EventKind::Free:
        erase(e.pid, e.addr);
        break;
      case EventKind::Realloc:
        if (e.has_old_addr()) erase(e.pid, e.old_addr);
        insert(e.pid, e.addr, e.size);
        break;
      default:  // mappings and the break are not heap blocks
        break;
    }
  }
}

}  // namespace memtrack::runtime
