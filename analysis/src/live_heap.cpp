#include "memtrack/analysis/live_heap.h"

#include <algorithm>
#include <utility>

#include "memtrack/analysis/event_kinds.h"

namespace memtrack::analysis {

using codec::Event;
using codec::EventKind;

LiveHeap::LiveHeap(const LiveHeap& o)
    : heaps_(o.heaps_),
      books_(o.books_),
      total_live_(o.total_live_),
      total_peak_(o.total_peak_),
      total_peak_ts_(o.total_peak_ts_) {
  relink();
}

LiveHeap::LiveHeap(LiveHeap&& o) noexcept { *this = std::move(o); }

LiveHeap& LiveHeap::operator=(const LiveHeap& o) {
  if (this != &o) {
    LiveHeap copy(o);
    *this = std::move(copy);
  }
  return *this;
}

// Node-based containers move their nodes: the pointers into them stay valid in the new owner.
LiveHeap& LiveHeap::operator=(LiveHeap&& o) noexcept {
  if (this != &o) {
    heaps_ = std::move(o.heaps_);
    books_ = std::move(o.books_);
    last_pid_ = o.last_pid_;
    last_ = o.last_;
    total_live_ = o.total_live_;
    total_peak_ = o.total_peak_;
    total_peak_ts_ = o.total_peak_ts_;
    o.heaps_.clear();
    o.books_.clear();
    o.last_ = nullptr;
    o.total_live_ = o.total_peak_ = o.total_peak_ts_ = 0;
  }
  return *this;
}

void LiveHeap::relink() {
  for (auto& [pid, b] : books_) b.heap = &heaps_[pid];
  last_ = nullptr;
}

LiveHeap::Books& LiveHeap::books_of(std::int32_t pid) {
  auto [it, inserted] = books_.try_emplace(pid);
  if (inserted) it->second.heap = &heaps_[pid];  // std::map: the entry stays where it is
  last_pid_ = pid;
  last_ = &it->second;
  return it->second;
}

void LiveHeap::map(Books& b, std::uint64_t addr, std::uint64_t size, std::uint64_t ts) {
  if (size == 0) return;
  unmap(b, addr, size);  // MAP_FIXED over an old mapping replaces the overlap
  b.mappings[addr] = size;
  PidHeap& h = *b.heap;
  h.mapped_bytes += size;
  if (h.mapped_bytes > h.peak_mapped_bytes) {
    h.peak_mapped_bytes = h.mapped_bytes;
    h.peak_mapped_timestamp = ts;
  }
}

// Removes [addr, addr + size) from the mappings, cutting mappings that overlap it partly.
void LiveHeap::unmap(Books& b, std::uint64_t addr, std::uint64_t size) {
  auto& mappings = b.mappings;
  const std::uint64_t end = addr + size < addr ? UINT64_MAX : addr + size;
  auto it = mappings.upper_bound(addr);
  if (it != mappings.begin()) --it;
  while (it != mappings.end() && it->first < end) {
    const std::uint64_t start = it->first, stop = it->first + it->second;
    if (stop <= addr) {
      ++it;
      continue;
    }
    const std::uint64_t cut_from = std::max(start, addr), cut_to = std::min(stop, end);
    b.heap->mapped_bytes -= cut_to - cut_from;
    it = mappings.erase(it);
    if (start < cut_from) mappings.emplace(start, cut_from - start);
    if (cut_to < stop) it = mappings.emplace(cut_to, stop - cut_to).first;
  }
}

void LiveHeap::add(std::span<const Event> events) {
  // The recorder's reader thread runs this on every event, so the loop keeps its state in locals, looks the
  // pid up only when it changes, and leaves the rare kinds (mappings) out of line.
  // The block tables outgrow the caches: fetch the slot an event a few places ahead will touch.
  constexpr std::size_t kPrefetchDistance = 8;
  std::uint64_t total_live = total_live_, total_peak = total_peak_, total_peak_ts = total_peak_ts_;
  Books* b = last_;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (b == nullptr || e.pid != last_pid_) [[unlikely]]
      b = &books_of(e.pid);  // every pid is in pids(), even one that only moved the break
    if (i + kPrefetchDistance < events.size()) {
      const Event& ahead = events[i + kPrefetchDistance];
      if (ahead.pid == last_pid_)
        b->live.prefetch(ahead.kind == EventKind::Realloc && ahead.has_old_addr() ? ahead.old_addr : ahead.addr);
    }
    PidHeap& h = *b->heap;
    std::uint64_t addr = 0, size = 0;
    if (releases(e, addr)) {
      if (b->live.erase(addr, size)) {
        h.live_bytes -= size;
        --h.live_count;
        total_live -= size;
      } else {
        ++h.unmatched_frees;
      }
    }
    if (allocates(e.kind)) {
      if (b->live.insert(e.addr, e.size, size)) {  // a missed free: the new block replaces the old one
        h.live_bytes -= size;
        --h.live_count;
        total_live -= size;
      }
      h.live_bytes += e.size;
      ++h.live_count;
      total_live += e.size;
      if (h.live_bytes > h.peak_bytes) {
        h.peak_bytes = h.live_bytes;
        h.peak_timestamp = e.timestamp;
      }
      if (total_live > total_peak) {
        total_peak = total_live;
        total_peak_ts = e.timestamp;
      }
    } else if (e.kind == EventKind::Mmap) [[unlikely]] {
      map(*b, e.addr, e.size, e.timestamp);
    } else if (e.kind == EventKind::Munmap) [[unlikely]] {
      const std::uint64_t before = h.mapped_bytes;
      unmap(*b, e.addr, e.size);
      if (h.mapped_bytes == before) ++h.unmatched_munmaps;
    }
  }
  total_live_ = total_live;
  total_peak_ = total_peak;
  total_peak_ts_ = total_peak_ts;
}

}  // namespace memtrack::analysis
