#include "memtrack/analysis/live_heap.h"

#include <algorithm>

#include "memtrack/analysis/event_kinds.h"

namespace memtrack::analysis {

using codec::Event;
using codec::EventKind;

LiveHeap::Pid LiveHeap::pid(std::int32_t id) {
  if (last_.heap == nullptr || id != last_pid_) {
    last_pid_ = id;
    last_ = {&heaps_[id], &books_[id]};
  }
  return last_;
}

void LiveHeap::allocate(Pid p, std::uint64_t addr, std::uint64_t size, std::uint64_t ts) {
  std::uint64_t old_size = 0;
  if (p.books->live.insert(addr, size, old_size)) {  // a missed free: the new block replaces the old one
    p.heap->live_bytes -= old_size;
    total_live_ -= old_size;
    --p.heap->live_count;
  }
  p.heap->live_bytes += size;
  ++p.heap->live_count;
  total_live_ += size;
  if (p.heap->live_bytes > p.heap->peak_bytes) {
    p.heap->peak_bytes = p.heap->live_bytes;
    p.heap->peak_timestamp = ts;
  }
  if (total_live_ > total_peak_) {
    total_peak_ = total_live_;
    total_peak_ts_ = ts;
  }
}

void LiveHeap::release(Pid p, std::uint64_t addr) {
  std::uint64_t size = 0;
  if (!p.books->live.erase(addr, size)) {
    ++p.heap->unmatched_frees;
    return;
  }
  p.heap->live_bytes -= size;
  total_live_ -= size;
  --p.heap->live_count;
}

void LiveHeap::map(Pid p, std::uint64_t addr, std::uint64_t size, std::uint64_t ts) {
  if (size == 0) return;
  unmap(p, addr, size);  // MAP_FIXED over an old mapping replaces the overlap
  p.books->mappings[addr] = size;
  p.heap->mapped_bytes += size;
  if (p.heap->mapped_bytes > p.heap->peak_mapped_bytes) {
    p.heap->peak_mapped_bytes = p.heap->mapped_bytes;
    p.heap->peak_mapped_timestamp = ts;
  }
}

// Removes [addr, addr + size) from the mappings, cutting mappings that overlap it partly.
void LiveHeap::unmap(Pid p, std::uint64_t addr, std::uint64_t size) {
  auto& mappings = p.books->mappings;
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
    p.heap->mapped_bytes -= cut_to - cut_from;
    it = mappings.erase(it);
    if (start < cut_from) mappings.emplace(start, cut_from - start);
    if (cut_to < stop) it = mappings.emplace(cut_to, stop - cut_to).first;
  }
}

void LiveHeap::add(std::span<const Event> events) {
  // The block tables are far larger than the cache: fetch the line an event a few places ahead will touch.
  constexpr std::size_t kPrefetchDistance = 8;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (i + kPrefetchDistance < events.size() && last_.books != nullptr) {
      const Event& ahead = events[i + kPrefetchDistance];
      if (ahead.pid == last_pid_) {
        last_.books->live.prefetch(ahead.kind == EventKind::Realloc && ahead.has_old_addr() ? ahead.old_addr
                                                                                            : ahead.addr);
      }
    }
    const Event& e = events[i];
    const Pid p = pid(e.pid);  // every pid is in pids(), even one that only moved the break
    std::uint64_t released = 0;
    if (releases(e, released)) release(p, released);
    if (allocates(e.kind)) {
      allocate(p, e.addr, e.size, e.timestamp);
    } else if (e.kind == EventKind::Mmap) {
      map(p, e.addr, e.size, e.timestamp);
    } else if (e.kind == EventKind::Munmap) {
      const std::uint64_t before = p.heap->mapped_bytes;
      unmap(p, e.addr, e.size);
      if (p.heap->mapped_bytes == before) ++p.heap->unmatched_munmaps;
    }
  }
}

}  // namespace memtrack::analysis
