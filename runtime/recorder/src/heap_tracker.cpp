#include "heap_tracker.h"

namespace memtrack::runtime {

using codec::EventKind;

codec::AddressMap& HeapTracker::blocks_of(std::int32_t pid) {
  if (last_blocks_ == nullptr || pid != last_pid_) {
    last_blocks_ = &blocks_[pid];  // unordered_map keeps references stable across inserts
    last_pid_ = pid;
  }
  return *last_blocks_;
}

std::vector<std::int32_t> HeapTracker::pids() const {
  std::vector<std::int32_t> out;
  out.reserve(blocks_.size());
  for (const auto& [pid, blocks] : blocks_) out.push_back(pid);
  return out;
}

void HeapTracker::apply(std::span<const codec::Event> events) {
  // One pass, the process's map looked up only when the pid changes, and the kind reduced to two flags:
  // the kinds arrive in random order, so every branch avoided here is a misprediction avoided
  // (bench/record_overhead.sh measures the recorder as a whole).
  std::uint64_t live = live_;
  std::uint64_t peak = peak_;
  codec::AddressMap* blocks = last_blocks_;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const codec::Event& e = events[i];
    if (blocks == nullptr || e.pid != last_pid_) [[unlikely]]
      blocks = &blocks_of(e.pid);
    const bool is_realloc = e.kind == EventKind::Realloc;
    const bool allocates = e.kind == EventKind::Malloc || e.kind == EventKind::Calloc ||
                           e.kind == EventKind::AlignedAlloc || is_realloc;
    const bool releases = e.kind == EventKind::Free || (is_realloc && e.has_old_addr());
    // Mappings and the break are not heap blocks; blocks_of above still counted their process.
    std::uint64_t size = 0;
    // Not found: e.g. a forked child freeing its parent's block, which is not in our books.
    if (releases && blocks->erase(is_realloc ? e.old_addr : e.addr, size)) live -= size;
    if (allocates) {
      std::uint64_t replaced = 0;
      // An address already live is a block whose free we missed: the new block replaces it.
      if (blocks->insert(e.addr, e.size, replaced)) live -= replaced;
      live += e.size;
      peak = live > peak ? live : peak;
    }
  }
  live_ = live;
  peak_ = peak;
}

}  // namespace memtrack::runtime
