// Where the resident sampler leaves a ResidentPages snapshot (docs/RUNTIME.md, "Resident pages") for the
// reader thread: the snapshot's bits are too many for the ring (a note block carries at most 10 KiB), so the
// sampler parks them here under an id and writes a NoteResidentPages carrying the id; the reader, meeting the
// note in ticket order, takes them and turns them into records at the note's position.
//
// Thread safety: put() from the sampler, take() from the reader; a mutex (once per snapshot, never per event).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

#include "memtrack/codec/context.h"

namespace memtrack::runtime {

class PageSnapshots {
 public:
  void put(std::uint64_t id, codec::ResidentPages snapshot) {
    const std::lock_guard lock(mutex_);
    waiting_.emplace(id, std::move(snapshot));
  }
  // The snapshot parked under `id`, once; none for an id never put (or taken already).
  std::optional<codec::ResidentPages> take(std::uint64_t id) {
    const std::lock_guard lock(mutex_);
    const auto it = waiting_.find(id);
    if (it == waiting_.end()) return std::nullopt;
    codec::ResidentPages s = std::move(it->second);
    waiting_.erase(it);
    return s;
  }

 private:
  std::mutex mutex_;
  std::map<std::uint64_t, codec::ResidentPages> waiting_;
};

}  // namespace memtrack::runtime
