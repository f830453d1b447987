#include "memtrack/analysis/resident.h"

#include <algorithm>

namespace memtrack::analysis {
namespace {

void add_to(ResidentPoint& sum, const codec::Resident& r) {
  sum.resident += r.resident();
  sum.anon += r.anon;
  sum.file += r.file;
  sum.shmem += r.shmem;
  sum.swap += r.swap;
  sum.own += r.own;
}

void take_from(ResidentPoint& sum, const codec::Resident& r) {
  sum.resident -= r.resident();
  sum.anon -= r.anon;
  sum.file -= r.file;
  sum.shmem -= r.shmem;
  sum.swap -= r.swap;
  sum.own -= r.own;
}

}  // namespace

void ResidentBooks::add(const codec::ContextRecord& record, const LiveHeap& heap) {
  if (const auto* exit = std::get_if<codec::ProcessExit>(&record)) {
    // An exited process holds nothing from its exit on.
    if (const auto it = current_.find(exit->pid); it != current_.end()) {
      take_from(sum_, it->second);
      current_.erase(it);
    }
    return;
  }
  if (const auto* pages = std::get_if<codec::ResidentPages>(&record)) {
    if (pages->part != 0) return;
    ++page_snapshots_;
    if (const auto it = pids_.find(pages->pid); it != pids_.end()) ++it->second.page_snapshots;
    return;
  }
  const auto* r = std::get_if<codec::Resident>(&record);
  if (r == nullptr) return;
  ++samples_;
  own_max_ = std::max(own_max_, r->own);
  if (const auto it = current_.find(r->pid); it != current_.end()) take_from(sum_, it->second);
  current_[r->pid] = *r;
  add_to(sum_, *r);

  PidResident& p = pids_[r->pid];
  ++p.samples;
  p.hwm = r->hwm;
  if (p.samples == 1 || r->resident() > p.peak.resident) {
    p.peak = ResidentPoint{r->resident(), r->anon,     r->file, r->shmem, r->swap, r->own, heap.live_bytes_of(r->pid),
                           r->event,      r->timestamp};
  }
  if (samples_ == 1 || sum_.resident > peak_.resident) {
    peak_ = sum_;
    peak_.live_heap = heap.total_live_bytes();
    peak_.event = r->event;
    peak_.timestamp = r->timestamp;
  }
}

}  // namespace memtrack::analysis
