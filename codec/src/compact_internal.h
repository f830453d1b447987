// What the compact encoder and decoder share (docs/FORMAT.md, "Compact data frames"): the address tags, which
// addresses of an event are releases and which allocations, zigzag, and the LEB128 writers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "memtrack/codec/event.h"

namespace memtrack::codec::compact {

// The low 2 bits of an address code; the value is code >> 2.
enum Tag : unsigned {
  kTagAllocationRef = 0,  // the thread's k-th most recent allocation address in the frame (k = value >= 1)
  kTagDelta = 1,          // zigzag(address - the thread's previous address in the frame), mod 2^64
  kTagReleaseRef = 2,     // the thread's k-th most recent release address in the frame (k = value >= 1)
};

inline constexpr std::uint8_t kKindMask = 0x0F;
inline constexpr std::uint8_t kKindOldAddr = 0x10;  // Realloc only: an old_addr follows in the addresses

// Version 2's token byte: the kind byte above, bit 5 the mode of the event's release address (a Free's or
// Munmap's addr, a Realloc's old_addr), bits 6-7 the mode of its allocation address (every other addr).
inline constexpr unsigned kReleaseModeShift = 5;
inline constexpr unsigned kAllocationModeShift = 6;
enum ReleaseMode : unsigned {
  kReleaseDelta = 0,  // zigzag(address - the thread's previous address), in the deltas column
  kReleaseLive = 1,   // the thread's r-th most recent live allocation (r = value, 0-based), in the live column
};
enum AllocationMode : unsigned {
  kAllocationDelta = 0,    // zigzag(address - the thread's latest allocation's end), in the deltas column
  kAllocationClass = 1,    // the r-th most recent free block of the size's class in the thread's window
  kAllocationRelease = 2,  // the thread's k-th most recent release address (k = value + 1)
  kAllocationSame = 3,     // the event's own old_addr (a Realloc with one only)
};
// A class reference names one of the thread's most recent kClassWindow release addresses.
inline constexpr std::uint32_t kClassWindow = 256;
// The size class of an allocation: glibc's chunk size for it (the request plus 8 rounded up to 16, at least
// 32), so that a block freed and handed out again by the allocator's per-size lists is found by its class.
// Modulo 2^64, as a reader computes it for any size.
inline std::uint64_t size_class(std::uint64_t size) {
  const std::uint64_t chunk = (size + 23) & ~std::uint64_t{15};
  return chunk < 32 ? 32 : chunk;
}
// A release entry's key: the freed block's size class while it is a free block of a known class (released
// by a live reference, not taken again by a class or release reference), else kNotFree (no class is odd).
inline constexpr std::uint64_t kNotFree = 1;

// The kind byte of an event, as the msgpack map keeps it: old_addr only on a Realloc with kFlagHasOldAddr.
inline std::uint8_t kind_byte(const Event& e) {
  const auto k = static_cast<std::uint8_t>(e.kind);
  return static_cast<std::uint8_t>(k | (e.kind == EventKind::Realloc && e.has_old_addr() ? kKindOldAddr : 0));
}

// Free and Munmap name a block they release; everything else (a Realloc's new pointer included) names one it
// gets. A Realloc's old_addr is a release.
inline bool addr_is_release(std::uint8_t kind) {
  return kind == static_cast<std::uint8_t>(EventKind::Free) || kind == static_cast<std::uint8_t>(EventKind::Munmap);
}
inline bool has_size(std::uint8_t kind) { return kind != static_cast<std::uint8_t>(EventKind::Free); }

// Version 3's timestamp groups: an event's timestamp goes to group 3 * class(its kind) + class(the previous
// event's kind in the frame; the first event's previous class is 0), class 0 a Free or Munmap, 1 a Realloc,
// 2 any other kind. Each group's values sit together in the timestamp columns, in group order, so zstd's
// entropy coder sees the gaps before a free after an allocation apart from those before an allocation after
// a free (docs/FORMAT.md, "Version 3").
inline constexpr unsigned kTimestampGroups = 9;
inline unsigned timestamp_class(std::uint8_t kind) {
  return addr_is_release(kind) ? 0u : kind == static_cast<std::uint8_t>(EventKind::Realloc) ? 1u : 2u;
}

// Version 4's timestamp modes, one per group: split values as in version 3, or *short gaps*: a byte per
// event, the gap itself (timestamp - the previous event's, 0..254) or kShortEscape, after which the value
// zigzag64(gap) is a split value in the group's escape columns (docs/FORMAT.md, "Version 4").
enum TimestampMode : unsigned { kTimestampSplit = 0, kTimestampShort = 1 };
inline constexpr std::uint8_t kShortEscape = 255;
// The writer gives a group short gaps when at least kShortShare / 16 of its gaps are below kShortEscape
// (with fewer, its escapes cost more than the short gaps save). 5 was chosen by one sweep of thresholds over
// bench/compact_vs_heaptrack.sh's workloads' events (commit c0d755f's message has its figures); no benchmark
// here sweeps it again: change it with memtrack-compact-breakdown's bytes per column before and after.
inline constexpr unsigned kShortShare = 5;

// Version 4's live and class columns: a value below 255 is one byte, any other the byte 255 then
// varint(value - 255).
inline std::byte* put_byte_value(std::byte* p, std::uint64_t v) {
  if (v < 255) {
    *p++ = static_cast<std::byte>(v);
    return p;
  }
  *p++ = std::byte{0xFF};
  v -= 255;
  while (v >= 0x80) {
    *p++ = static_cast<std::byte>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<std::byte>(v);
  return p;
}

// The set bits of each byte of `v`, one count per byte (SWAR): inline arithmetic, where std::popcount without
// a -mpopcnt target is a call into libgcc (5% of a compact decode).
inline std::uint64_t byte_popcounts(std::uint64_t v) {
  v -= (v >> 1) & 0x5555555555555555ull;
  v = (v & 0x3333333333333333ull) + ((v >> 2) & 0x3333333333333333ull);
  return (v + (v >> 4)) & 0x0F0F0F0F0F0F0F0Full;
}
inline unsigned popcount64(std::uint64_t v) {
  return static_cast<unsigned>((byte_popcounts(v) * 0x0101010101010101ull) >> 56);
}

inline std::uint64_t zigzag64(std::uint64_t delta) {
  return (delta << 1) ^ static_cast<std::uint64_t>(static_cast<std::int64_t>(delta) >> 63);
}
inline std::uint64_t unzigzag64(std::uint64_t z) { return (z >> 1) ^ (~(z & 1) + 1); }
inline std::uint32_t zigzag32(std::int32_t v) {
  return (static_cast<std::uint32_t>(v) << 1) ^ static_cast<std::uint32_t>(v >> 31);
}
inline std::int32_t unzigzag32(std::uint32_t z) { return static_cast<std::int32_t>((z >> 1) ^ (~(z & 1) + 1)); }

// Version 5's deltas (docs/FORMAT.md, "Version 5"): heap addresses are 16-byte aligned, so a delta d is
// stored as zigzag64 of d >> 4 (arithmetic: below 2^61) shifted left once, bit 0 set when d & 15 (its
// remainder, then a byte of the remainders column) is not 0.
inline constexpr std::uint64_t kDeltaUnit = 16;
inline std::uint64_t aligned_delta_value(std::uint64_t d) {
  const auto units = static_cast<std::uint64_t>(static_cast<std::int64_t>(d) >> 4);
  return zigzag64(units) << 1 | ((d & (kDeltaUnit - 1)) != 0 ? 1u : 0u);
}
// The delta of value v and remainder r (0 when v's bit 0 is clear), modulo 2^64.
inline std::uint64_t aligned_delta(std::uint64_t v, std::uint64_t remainder) {
  return unzigzag64(v >> 1) << 4 | remainder;
}

inline std::byte* put_varint(std::byte* p, std::uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<std::byte>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<std::byte>(v);
  return p;
}
inline unsigned varint_size(std::uint64_t v) {
  unsigned n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// An address code: value * 4 + tag, a 66-bit integer in at most 10 LEB128 bytes.
inline std::byte* put_tagged(std::byte* p, std::uint64_t value, unsigned tag) {
  if (value < (std::uint64_t{1} << 62)) return put_varint(p, (value << 2) | tag);
  *p++ = static_cast<std::byte>(((value << 2) | tag) | 0x80);  // the low 5 value bits and the tag
  return put_varint(p, value >> 5);
}
inline unsigned tagged_size(std::uint64_t value) {
  return value < (std::uint64_t{1} << 62) ? varint_size(value << 2) : 1 + varint_size(value >> 5);
}

}  // namespace memtrack::codec::compact
