// The allocation event: one heap or mapping call of a tracked program.
//
// Event has exactly the layout of the 48-byte raw record (docs/FORMAT.md, "raw record") on a little-endian
// host, so a block of raw records is read with one memcpy and then validated, and written with one write.
#pragma once

#include <cstdint>
#include <string_view>

namespace memtrack::codec {

// Explicit values: they are the `kind` byte of the raw record.
enum class EventKind : std::uint8_t {
  Malloc = 1,
  Free = 2,
  Calloc = 3,
  Realloc = 4,
  AlignedAlloc = 5,
  Mmap = 6,
  Munmap = 7,
  Brk = 8,
};

inline constexpr std::uint8_t kFlagHasOldAddr = 0x01;  // Realloc only: old_addr is present.

struct Event {
  std::uint64_t timestamp = 0;  // CLOCK_MONOTONIC nanoseconds
  std::uint64_t addr = 0;       // returned, freed or unmapped address; Realloc: the new pointer
  std::uint64_t size = 0;       // 0 for Free
  std::uint64_t old_addr = 0;   // Realloc: the old pointer when flags has kFlagHasOldAddr, else 0
  std::int32_t pid = 0;
  std::int32_t tid = 0;
  EventKind kind = EventKind::Malloc;
  std::uint8_t flags = 0;
  std::uint8_t reserved[6] = {};

  [[nodiscard]] bool has_old_addr() const { return (flags & kFlagHasOldAddr) != 0; }
  friend bool operator==(const Event&, const Event&) = default;
};

static_assert(sizeof(Event) == 48, "Event must match the 48-byte raw record");
static_assert(alignof(Event) == 8);

inline constexpr std::size_t kRawRecordSize = sizeof(Event);

[[nodiscard]] constexpr bool is_valid_kind(std::uint8_t k) { return k >= 1 && k <= 8; }

// The variant name written as the msgpack "type" value ("Malloc", "AlignedAlloc", ...).
[[nodiscard]] std::string_view kind_name(EventKind kind);

// Convenience constructors for tests, tools and the recorder.
[[nodiscard]] inline Event make_event(EventKind kind, std::int32_t pid, std::int32_t tid, std::uint64_t timestamp,
                                      std::uint64_t addr, std::uint64_t size = 0) {
  Event e;
  e.kind = kind;
  e.pid = pid;
  e.tid = tid;
  e.timestamp = timestamp;
  e.addr = addr;
  e.size = size;
  return e;
}
[[nodiscard]] inline Event make_realloc(std::int32_t pid, std::int32_t tid, std::uint64_t timestamp,
                                        std::uint64_t new_addr, std::uint64_t old_addr, std::uint64_t size) {
  Event e = make_event(EventKind::Realloc, pid, tid, timestamp, new_addr, size);
  e.old_addr = old_addr;
  e.flags = kFlagHasOldAddr;
  return e;
}

}  // namespace memtrack::codec
