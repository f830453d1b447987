#include "heap_tracker.h"

namespace memtrack::runtime {

using codec::EventKind;

codec::AddressMap& HeapTracker::blocks_of(std::int32_t pid) {
  if (last_blocks_ == nullptr || pid != last_pid_) {
    pids_.insert(pid);
    last_blocks_ = &blocks_[pid];  // unordered_map keeps references stable across inserts
    last_pid_ = pid;
  }
  return *last_blocks_;
}

void HeapTracker::allocate(std::int32_t pid, std::uint64_t addr, std::uint64_t size) {
  std::uint64_t replaced = 0;
  // An address already live is a block whose free we missed: the new block replaces it.
  if (blocks_of(pid).insert(addr, size, replaced)) live_ -= replaced;
  live_ += size;
  if (live_ > peak_) peak_ = live_;
}

void HeapTracker::release(std::int32_t pid, std::uint64_t addr) {
  std::uint64_t size = 0;
  // Not found: e.g. a forked child freeing its parent's block, which is not in our books.
  if (blocks_of(pid).erase(addr, size)) live_ -= size;
}

void HeapTracker::apply(std::span<const codec::Event> events) {
  for (const codec::Event& e : events) {
    switch (e.kind) {
      case EventKind::Malloc:
      case EventKind::Calloc:
      case EventKind::AlignedAlloc:
        allocate(e.pid, e.addr, e.size);
        break;
      case EventKind::Free:
        release(e.pid, e.addr);
        break;
      case EventKind::Realloc:
        if (e.has_old_addr()) release(e.pid, e.old_addr);
        allocate(e.pid, e.addr, e.size);
        break;
      default:  // mappings and the break are not heap blocks, but their process was recorded
        blocks_of(e.pid);
        break;
    }
  }
}

}  // namespace memtrack::runtime
