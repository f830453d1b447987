// The allocation event: one heap or mapping call of a tracked program, as the program's code handles it.
//
// Event is the in-memory form only. Its wire forms convert to and from it explicitly: the raw record
// (memtrack/codec/raw_record.h: pack_raw_record, unpack_raw_record) and the msgpack map of the artifact
// (the msgpack encoder and decoder); the recorder's shared ring has its own record (runtime/ring.h:
// RingEvent). Its layout is not a format, so fields may be added without changing any of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace memtrack::codec {

// Explicit values: they are the `kind` byte of the raw record (kept equal so a record's kind is a cast).
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
  std::uint8_t reserved[6] = {};  // always zero; validate_record() rejects an event where it is not
  // The allocation's call stack: its leaf node in the process image's trace tree (docs/FORMAT.md, "Call
  // stacks"); 0 = none. In memory only: the msgpack map and the raw record do not carry it (the artifact
  // keeps it in EventStacks context records, so data frames stay byte-identical without stacks).
  std::uint32_t stack = 0;
  // Explicit tail padding, always zero: an Event has no indeterminate bytes, so memcmp of events is defined.
  std::uint32_t padding = 0;

  [[nodiscard]] bool has_old_addr() const { return (flags & kFlagHasOldAddr) != 0; }
  friend bool operator==(const Event&, const Event&) = default;
};

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
