// Which events put a heap block in the books and which give one back: the one definition every consumer
// (counts, the live heap, the recorder's summary) uses, after docs/FORMAT.md "Meaning".
#pragma once

#include <cstdint>

#include "memtrack/codec/event.h"

namespace memtrack::analysis {

// Malloc, Calloc, AlignedAlloc and Realloc return a heap block: their size is "bytes allocated" and goes
// into the size histogram, and their addr becomes live. Mmap/Munmap are mappings, not heap blocks; Brk is
// not heap either (malloc's chunks carved from the break are already counted by the allocation events).
[[nodiscard]] constexpr bool allocates(codec::EventKind k) {
  return k == codec::EventKind::Malloc || k == codec::EventKind::Calloc || k == codec::EventKind::AlignedAlloc ||
         k == codec::EventKind::Realloc;
}

// The heap block an event gives back, if any: Free's addr, or Realloc's old_addr when present. A Realloc
// releases its old block before its new one is added (the new one may be at the same address).
[[nodiscard]] inline bool releases(const codec::Event& e, std::uint64_t& addr) {
  if (e.kind == codec::EventKind::Free) {
    addr = e.addr;
    return true;
  }
  if (e.kind == codec::EventKind::Realloc && e.has_old_addr()) {
    addr = e.old_addr;
    return true;
  }
  return false;
}

}  // namespace memtrack::analysis
