// The transport between the preload library (producers, in every tracked process) and the recorder
// (the single consumer): one lock-free ring of event slots in a shared memfd, mapped by all of them.
//
// Why one shared ring with a ticket per event, and not per-thread buffers flushed in bulk:
// the ticket is taken with one atomic fetch_add on `head`. Atomic read-modify-writes on one variable form a
// single total order that is consistent with happens-before, so if thread A's malloc returned p and thread B
// (or a forked child) later frees p, A's ticket precedes B's ticket. The recorder reads slots strictly in
// ticket order, so the artifact order is causal by construction, across threads and processes, with no
// merge step and no reorder window. Per-thread buffers flushed at different times cannot give that without
// a global sequence plus a recorder-side merge that must wait for every idle thread to flush (unbounded
// buffering), and the sequence counter costs the same fetch_add anyway. No lock is taken per event.
//
// Slot protocol (Vyukov's bounded queue, one consumer): slot i % capacity holds `seq`.
//   seq == t            free for the producer holding ticket t
//   seq == t + 1        committed: the event of ticket t is readable
//   seq == t + capacity released by the consumer: free for ticket t + capacity
// A producer whose slot is not free yet (the recorder is behind) waits: lossless backpressure.
//
// This header is the ABI between two binaries built separately (libmemtrack-preload.so, possibly of another
// build, and the recorder), so it depends on nothing else of memtrack: the event a producer writes is
// RingEvent, the ring's own record, which the recorder converts to codec::Event as it reads. The artifact's
// and the raw record's formats can change without touching the ring, and the ring without touching them.
//
// Versioning: the preload attaches only to a ring whose header has its own kRingMagic and kRingVersion (an
// older or newer preload stays unattached and says so). Any change to the layout of RingEvent, RingSlot or
// RingHeader, to ring_bytes(), or to the meaning of a field bumps kRingVersion. The layout half of that rule
// is checked at compile time: ring_layout_fingerprint() (below) is a hash of every field's offset and size,
// and it must equal the layout recorded for kRingVersion, so a layout change does not compile until the
// version is bumped and its layout recorded.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace memtrack::runtime {

inline constexpr std::uint32_t kRingMagic = 0x4d54524bu;  // "MTRK"
// 6: the slot's payload is RingEvent (until 5 it was codec::Event, the same 48 bytes).
inline constexpr std::uint32_t kRingVersion = 6;
// 4 MiB of 64-byte slots: enough to absorb the encoder's pauses between batches, and small enough to stay
// in L2/L3. To re-measure the choice, change this value and compare bench/record_overhead.sh runs.
inline constexpr std::uint64_t kDefaultRingSlots = 1u << 16;

// Environment variables the recorder sets for the tracked program (and which survive exec).
inline constexpr const char* kEnvRing = "MEMTRACK_RING";  // a path the preload opens: /proc/<pid>/fd/<n>
// Where a tracked process notes a process the preload cannot enter (one "PID\tPATH\tREASON\n" line each):
// /proc/<recorder pid>/fd/<n>, a memfd the recorder reads when everything has exited.
inline constexpr const char* kEnvUntracked = "MEMTRACK_UNTRACKED";

// RingEvent::kind. The values are the artifact's kinds (codec::EventKind) on purpose, so the recorder's
// conversion is a copy, but they belong to this ABI: ring_reader.cpp checks they still agree.
enum class RingEventKind : std::uint8_t {
  None = 0,  // a committed slot that carries no event (a realloc that failed after taking its ticket)
  Malloc = 1,
  Free = 2,
  Calloc = 3,
  Realloc = 4,
  AlignedAlloc = 5,
  Mmap = 6,
  Munmap = 7,
  Brk = 8,
};

inline constexpr std::uint8_t kRingFlagHasOldAddr = 0x01;  // RingEvent::flags: Realloc with an old address

// One event as a producer writes it into its slot. Plain data: written field by field by the producer before
// it publishes the slot (RingSlot::seq), read by the recorder after it sees the slot published.
struct RingEvent {
  std::uint64_t timestamp;  // raw TSC when RingHeader::timestamp_tsc is 1, else CLOCK_MONOTONIC nanoseconds
  std::uint64_t addr;       // returned, freed or unmapped address; Realloc: the new block; Brk: the new break
  std::uint64_t size;       // 0 for Free
  std::uint64_t old_addr;   // Realloc with kRingFlagHasOldAddr: the old block; else 0
  std::int32_t pid;
  std::int32_t tid;
  RingEventKind kind;
  std::uint8_t flags;        // kRingFlagHasOldAddr; other bits 0
  std::uint8_t reserved[6];  // 0
};
static_assert(std::is_trivially_copyable_v<RingEvent> && std::is_standard_layout_v<RingEvent>);
static_assert(sizeof(RingEvent) == 48 && alignof(RingEvent) == 8, "RingEvent fills a 64-byte slot with seq and owner");

// Who took a ticket: slot_owner(ticket, tid), stored by the producer in its slot (RingSlot::owner) when the
// slot is free at once, else in owners[ticket % (2 * capacity)] before it waits for the slot. The recorder
// uses it when a slot stays unfilled: if that thread no longer exists (its process was killed, or exec
// replaced the image), the slot never will be filled and is skipped. Tickets never run more than capacity +
// (number of waiting threads) past the recorder, so with 2 * capacity entries an entry is not overwritten
// while its ticket is still unread. The ticket bits in the value tell a current entry from a stale one.
inline constexpr unsigned kOwnerTidBits = 22;  // pid_max (and so every tid) is at most 2^22 on Linux
inline constexpr std::uint64_t kOwnerTidMask = (std::uint64_t{1} << kOwnerTidBits) - 1;
inline constexpr std::uint64_t kOwnerTicketMask = ~std::uint64_t{0} >> kOwnerTidBits;
[[nodiscard]] inline constexpr std::uint64_t slot_owner(std::uint64_t ticket, std::int32_t tid) {
  return (ticket << kOwnerTidBits) | static_cast<std::uint64_t>(tid);
}

struct alignas(64) RingSlot {
  std::atomic<std::uint64_t> seq;  // the slot protocol above
  RingEvent event;
  // slot_owner(ticket, tid) of the producer holding the slot, written as soon as the slot is its own: in the
  // line the producer writes anyway, where the owners array would cost each event a second cache line
  // (shared by 8 consecutive tickets, so written by alternating threads). A producer that must wait for its
  // slot signs the owners array instead, before waiting.
  std::atomic<std::uint64_t> owner;
};
static_assert(sizeof(RingSlot) == 64, "one cache line per event");

// A new program image (the first one, or one started by exec) notes (pid, head when it attached). After an
// exec by another thread, the old main thread's unfilled tickets carry a tid that lives on as the new
// image's pid; a notice with head > ticket says they belong to the replaced image.
inline constexpr std::uint32_t kExecNotices = 64;
[[nodiscard]] inline constexpr std::uint64_t exec_notice(std::uint64_t head, std::int32_t pid) {
  return slot_owner(head, pid);
}

struct alignas(64) RingHeader {
  std::uint32_t magic;
  std::uint32_t version;
  std::uint64_t capacity;  // slots, a power of two
  std::int32_t recorder_pid;
  // 1: producers write the raw TSC as the event timestamp and the recorder converts it to CLOCK_MONOTONIC
  // nanoseconds: the TSC read is cheaper per event than clock_gettime (compare `memtrack record` of the same
  // program with and without MEMTRACK_CLOCK=monotonic, which forces clock_gettime).
  // Set only where the kernel itself derives CLOCK_MONOTONIC from an invariant TSC. 0: clock_gettime.
  std::uint32_t timestamp_tsc;
  // Set by a producer that found the recorder gone, or by the recorder when it cannot encode: every process
  // stops recording (one warning each). Read on every event, so it shares the line of the fields above,
  // which nobody writes after set-up, and not the line of `waiters`, which the recorder writes all the time.
  std::atomic<std::uint32_t> detached;
  // Next ticket. On its own cache line: every producer writes it.
  alignas(64) std::atomic<std::uint64_t> head;
  // Producers that gave up spinning and sleep on `wake_futex`; the recorder wakes them after freeing slots.
  alignas(64) std::atomic<std::uint32_t> waiters;
  std::atomic<std::uint32_t> wake_futex;
  std::atomic<std::uint32_t> exec_count;  // notices written so far; notice i is in exec_notices[i % 64]
  std::atomic<std::uint64_t> exec_notices[kExecNotices];
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

// Layout: the header, `slots` slots, then 2 * slots owner words.
[[nodiscard]] inline constexpr std::size_t ring_bytes(std::uint64_t slots) {
  return sizeof(RingHeader) + slots * sizeof(RingSlot) + 2 * slots * sizeof(std::uint64_t);
}

// A hash (FNV-1a) of the ring's layout: every field's offset and size, each struct's size and alignment,
// and the constants that place data in the mapping. Any layout change changes it.
[[nodiscard]] constexpr std::uint64_t ring_layout_fingerprint() {
  std::uint64_t h = 0xcbf29ce484222325u;
  auto add = [&h](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 0x100000001b3u;
  };
#define MEMTRACK_RING_FIELD(T, f) (add(offsetof(T, f)), add(sizeof(T::f)))
  add(sizeof(RingEvent));
  add(alignof(RingEvent));
  MEMTRACK_RING_FIELD(RingEvent, timestamp);
  MEMTRACK_RING_FIELD(RingEvent, addr);
  MEMTRACK_RING_FIELD(RingEvent, size);
  MEMTRACK_RING_FIELD(RingEvent, old_addr);
  MEMTRACK_RING_FIELD(RingEvent, pid);
  MEMTRACK_RING_FIELD(RingEvent, tid);
  MEMTRACK_RING_FIELD(RingEvent, kind);
  MEMTRACK_RING_FIELD(RingEvent, flags);
  MEMTRACK_RING_FIELD(RingEvent, reserved);
  add(sizeof(RingSlot));
  add(alignof(RingSlot));
  MEMTRACK_RING_FIELD(RingSlot, seq);
  MEMTRACK_RING_FIELD(RingSlot, event);
  MEMTRACK_RING_FIELD(RingSlot, owner);
  add(sizeof(RingHeader));
  add(alignof(RingHeader));
  MEMTRACK_RING_FIELD(RingHeader, magic);
  MEMTRACK_RING_FIELD(RingHeader, version);
  MEMTRACK_RING_FIELD(RingHeader, capacity);
  MEMTRACK_RING_FIELD(RingHeader, recorder_pid);
  MEMTRACK_RING_FIELD(RingHeader, timestamp_tsc);
  MEMTRACK_RING_FIELD(RingHeader, detached);
  MEMTRACK_RING_FIELD(RingHeader, head);
  MEMTRACK_RING_FIELD(RingHeader, waiters);
  MEMTRACK_RING_FIELD(RingHeader, wake_futex);
  MEMTRACK_RING_FIELD(RingHeader, exec_count);
  MEMTRACK_RING_FIELD(RingHeader, exec_notices);
#undef MEMTRACK_RING_FIELD
  add(ring_bytes(1));
  add(kOwnerTidBits);
  return h;
}

// The layout each version of the ring has: one case per version since 6, the first with RingEvent. A layout
// change makes the static_assert below fail (the compiler's note shows the new fingerprint): then bump
// kRingVersion and add its case here. Never edit an existing case. (A bump for a change of meaning alone adds
// a case with the same fingerprint.)
[[nodiscard]] constexpr std::uint64_t ring_layout_of_version(std::uint32_t version) {
  switch (version) {
    case 6:
      return 0x955f5a330e446607u;
    default:
      return 0;
  }
}
static_assert(ring_layout_fingerprint() == ring_layout_of_version(kRingVersion),
              "the ring's layout changed: bump kRingVersion and add its layout to ring_layout_of_version()");

[[nodiscard]] inline RingSlot* ring_slots(RingHeader* h) {
  return reinterpret_cast<RingSlot*>(reinterpret_cast<char*>(h) + sizeof(RingHeader));
}

[[nodiscard]] inline std::atomic<std::uint64_t>* ring_owners(RingHeader* h) {
  return reinterpret_cast<std::atomic<std::uint64_t>*>(ring_slots(h) + h->capacity);
}

}  // namespace memtrack::runtime
