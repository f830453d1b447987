// The transport between the preload library (producers, in every tracked process) and the recorder
// (the single consumer): one lock-free ring of event slots in a shared memfd, mapped by all of them. A ticket
// per event from one fetch_add on `head` is the artifact's order, causal across threads and processes
// (docs/RUNTIME.md, "Transport").
//
// Slot protocol (after Vyukov's bounded queue, one consumer): slot t % capacity holds `seq`, and the header
// holds `consumed`, the consumer's position.
//   seq == t + 1                committed: the event of ticket t is readable
//   t < consumed + capacity     the slot is free for ticket t (the consumer has read ticket t - capacity)
// In memory the slot holds seq_word(seq): `seq` less the slot's index (below). The consumer never writes a
// slot: it publishes `consumed` once per batch, and a producer keeps the bound it last read (a thread's
// tickets only grow), so it reads that line about once per capacity tickets. A slot line the consumer only
// read is clean in its cache, and the producer's next write to it costs an invalidation, not the transfer
// of a line the other core modified (the per-slot release word this replaced: docs/RUNTIME.md, "Transport").
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

#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace memtrack::runtime {

inline constexpr std::uint32_t kRingMagic = 0x4d54524bu;  // "MTRK"
// 6: the slot's payload is RingEvent (until 5 it was codec::Event, the same 48 bytes).
// 7: lifecycle notes (RingEventKind::Note*, RingNoteData) and RingHeader::detached == kDetachedQuiet.
// 8: call stacks: RingEvent::stack, RingHeader::stack_depth, NoteStackNodes and NoteModule.
// 9: harness control: RingHeader::control, NotePause/NoteResume/NoteRegionBegin/NoteRegionEnd.
// 10: RingHeader::outside_regions.
// 11: NotePythonCode (CPython frames in stacks, runtime/preload/python.cpp).
// 12: RingSlot::seq holds seq_word(seq), the sequence number less the slot's index.
// 13: the shared unwind rules after the owner words (ring_shared_rules), 2 MiB.
// 14: the shared unwind rules take 512 KiB.
// 15: RingPythonCodePayload::table_format.
// 16: RingHeader::consumed; the consumer no longer writes a slot's seq when it has read it.
inline constexpr std::uint32_t kRingVersion = 16;
// 4 MiB of 64-byte slots: enough to absorb the encoder's pauses between batches, and small enough to stay
// in L2/L3. To re-measure the choice, change this value and compare bench/record_overhead.sh runs.
inline constexpr std::uint64_t kDefaultRingSlots = 1u << 16;

// Environment variables the recorder sets for the tracked program (and which survive exec).
inline constexpr const char* kEnvRing = "MEMTRACK_RING";  // a path the preload opens: /proc/<pid>/fd/<n>
// The preload's diagnostics channel: a memfd of the recorder, also /proc/<pid>/fd/<n>, opened O_APPEND for each
// message. One write per line, "<pid> <text>\n" (an append is atomic, so processes never interleave); the
// recorder prints them, deduplicated, in record's summary (docs/RUNTIME.md, "Diagnostics").
inline constexpr const char* kEnvMessages = "MEMTRACK_MESSAGES";

// memtrack's own memory in a tracked process is in memfds named with this prefix, so the recorder's resident
// sampler finds it by name in /proc/<pid>/maps and leaves it out of the program's resident memory
// (docs/RUNTIME.md, "Resident memory"): the ring ("memtrack-ring", shared_ring.cpp) and the preload's tables
// ("memtrack-tables": the trace tree and the unwinder's rule cache, runtime/preload/stacks.cpp).
inline constexpr const char* kOwnMemfdPrefix = "memtrack-";
inline constexpr const char* kRingMemfdName = "memtrack-ring";
inline constexpr const char* kTablesMemfdName = "memtrack-tables";

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
  // Lifecycle notes: not events. A slot of one of these kinds carries a note about a process (the "Lifecycle
  // notes" section below); the recorder turns it into a context record positioned at the number of events
  // before it, and it takes no place in the event stream.
  NoteStart = 32,      // a fork child's first words: pid, addr = ppid
  NoteExec = 33,       // a new image attached: pid, addr = ppid, size = payload bytes, old_addr = data slots k
  NoteExit = 34,       // exit() ran (on_exit): pid, addr = exit status
  NoteUntracked = 35,  // an image that will not be tracked: pid (0: not known), addr = RingUntrackedReason,
                       // size = payload bytes, old_addr = data slots k; the payload is the executable's path
  NoteData = 36,       // a continuation slot of the note k tickets before it: RingNoteData
  // Stack notes (runtime/preload/stacks.cpp, modules.cpp; "Stack notes" below), blocks like the lifecycle
  // notes: a head slot, then old_addr = k NoteData slots of payload (size = payload bytes).
  NoteStackNodes = 40,  // pid, addr = first node id; payload: per node u32 parent, u64 return address (LE)
  NoteModule = 41,      // pid, addr = load bias, flags kRingModuleUnloaded; payload: RingModulePayload, then
                        // the build-id bytes, then the path (no NUL)
  // Control notes ("Control" below), blocks like the lifecycle notes (old_addr = k NoteData slots).
  NotePause = 42,        // pid, tid, addr = the control word this pause set; payload: the source ("library", ...)
  NoteResume = 43,       // likewise for a resume
  NoteRegionBegin = 44,  // pid, tid; payload: the region's name (at most kRingMaxRegionNameBytes)
  NoteRegionEnd = 45,    // pid, tid
  // Written by the recorder alone (its resident sampler, runtime/recorder/src/resident_sampler.h), so no
  // producer depends on it and the ring version stays: pid; payload: RingResidentPayload.
  NoteResident = 46,
  // Likewise: pid, addr = the id of the snapshot parked for the reader (runtime/recorder/src/page_snapshots.h).
  NoteResidentPages = 47,
  // A CPython code object met in a stack for the first time (runtime/preload/python.cpp), a block like the
  // stack notes: pid, addr = the code's pseudo-address prefix (its Python module's base | id << 20: stack
  // addresses prefix | (instruction index + 1) are frames of this code); payload: RingPythonCodePayload, then
  // the qualified name (the name in 3.10), the file name and the line table (co_linetable, in the format
  // table_format says).
  NotePythonCode = 48,
};

// A line table's format (RingPythonCodePayload.table_format, ring version 15; 0 before).
inline constexpr std::uint32_t kPythonLocationTable = 0;  // 3.11 to 3.13: the location table (locations.md)
inline constexpr std::uint32_t kPythonLineTable310 = 1;   // 3.10: (bytecode delta, line delta) byte pairs
struct RingPythonCodePayload {
  std::uint32_t first_line;  // co_firstlineno
  std::uint16_t name_bytes;
  std::uint16_t file_bytes;
  std::uint32_t linetable_bytes;
  std::uint32_t table_format;  // kPythonLocationTable or kPythonLineTable310
};
static_assert(sizeof(RingPythonCodePayload) == 16);

// NoteResident's payload: one sample of the pid's resident memory, in bytes (codec::Resident's fields).
struct RingResidentPayload {
  std::uint64_t anon, file, shmem, swap, own, hwm;
};
static_assert(sizeof(RingResidentPayload) == 48);

// Control (memtrack/control.h, `record --paused`, `memtrack ctl`). RingHeader::control is
// (generation << 1) | paused. While paused, producers record no allocation (frees still are: a block allocated
// while recording stays accounted right when it is freed during a pause). A toggle is a CAS that bumps the
// generation, then a NotePause/NoteResume carrying the new word; the recorder applies the notes in ticket
// order and ignores one whose generation is older than one it applied (two toggles racing on two threads:
// the word's last value wins, in the artifact as in the producers), so the records it writes alternate
// Pause, Resume, ... and end in the state the producers ended in.
inline constexpr std::uint64_t kRingControlPaused = 1;
// A NoteRegionBegin's name is cut to this many bytes by whoever writes the note (the format's limit too:
// the recorder checks that codec::kMaxRegionNameBytes agrees).
inline constexpr std::size_t kRingMaxRegionNameBytes = 256;
[[nodiscard]] inline constexpr std::uint64_t control_generation(std::uint64_t word) { return word >> 1; }
[[nodiscard]] inline constexpr std::uint64_t next_control(std::uint64_t word, bool paused) {
  return ((control_generation(word) + 1) << 1) | (paused ? kRingControlPaused : 0);
}

// Stack notes. A process image keeps its own trace tree (node = parent id + return address, id 0 = the empty
// stack) in memory it maps itself; a thread that adds nodes writes them as one NoteStackNodes block before
// the ticket of its event that uses them, so in that thread's order a node is defined before it is used
// (another thread may find the node in the tree and use it before the defining note's tickets: a reader
// resolves an image's stacks after reading its notes, not strictly in order). Ids are consecutive within a
// note. A fork child continues its parent's numbering in its own copy of the tree: an id the child has not
// defined is its parent's (as of the fork). Modules are noted when the image attaches and when a new node's
// address lies outside every module seen so far (after a dlopen), together with the unloads found then.
struct RingModulePayload {
  std::uint64_t start;  // lowest address of its PT_LOAD segments
  std::uint64_t end;    // one past the highest
  std::uint8_t build_id_size;
  std::uint8_t reserved[7];
};
static_assert(sizeof(RingModulePayload) == 24);
inline constexpr std::uint8_t kRingModuleUnloaded = 0x10;  // NoteModule::flags: the module was unmapped

// Lifecycle notes. A note that carries strings (NoteExec: the executable's path, NUL, then every argv
// string followed by NUL; NoteUntracked: the executable's path) takes 1 + k consecutive tickets in one
// fetch_add(1 + k): the head slot, then k NoteData slots holding up to kNoteDataBytes of payload each, in
// order. So the note is one block in ticket order, causal like the events, and no string area needs to be
// allocated, reclaimed or bounded separately. Each slot of the block is waited for, signed and published like
// an event's; a block whose owner died midway leaves abandoned slots the recorder reads as a truncated
// payload. The payload is capped at note_max_data_slots(capacity) slots (flags kRingNoteTruncated when it was
// cut), so a block is far shorter than the nested-ticket bound (capacity / 2) with any ring size.
// Notes are written once per process or image (fork, attach, exit, exec of an untrackable image), never per
// event.
inline constexpr std::size_t kNoteDataBytes = 40;
[[nodiscard]] inline constexpr std::uint64_t note_max_data_slots(std::uint64_t capacity) {
  return capacity / 8 < 256 ? capacity / 8 : 256;  // at most 10 KiB of path and argv
}
inline constexpr std::uint8_t kRingNoteTruncated = 0x02;  // RingEvent::flags of a note: payload was cut
inline constexpr std::uint8_t kRingNoteHasStatus = 0x04;  // NoteExit: addr holds the exit status
inline constexpr std::uint8_t kRingNoteSignal = 0x08;     // NoteExit: addr holds the signal that killed it

// NoteUntracked::addr. Setuid, Setgid and Static come from a tracked process about an image it starts; LeftRunning
// from the recorder (a process still running when the recording ended).
// NoAccess: an exec by a process whose credentials no longer reach the ring (privileges dropped before it:
// setpriv, su), noted by the exec hook before the exec (process_hooks.cpp).
enum class RingUntrackedReason : std::uint8_t { Setuid = 1, Static = 2, LeftRunning = 3, NoAccess = 4, Setgid = 5 };

// Notes are written by tracked processes (NoteStart, NoteExec, NoteExit from exit(), NoteUntracked before an
// exec or after a spawn) and by the recorder itself, which takes tickets like a producer: NoteExit for a
// process it reaped (with the wait status) or found gone (exit status unknown: _exit, a signal), and
// NoteUntracked(LeftRunning) when the recording ends. A process's exit can thus be noted twice (exit() and
// then its reaping); the first note in ticket order counts.

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
  std::uint8_t reserved[2];  // 0
  std::uint32_t stack;       // the allocation's leaf node in the image's trace tree; 0: none (a free)
};
static_assert(std::is_trivially_copyable_v<RingEvent> && std::is_standard_layout_v<RingEvent>);
static_assert(sizeof(RingEvent) == 48 && alignof(RingEvent) == 8, "RingEvent fills a 64-byte slot with seq and owner");

// A NoteData slot: the RingEvent's bytes reinterpreted (copied in and out with memcpy), with `kind` where
// RingEvent has it, so the recorder tells it from an event by the same byte.
struct RingNoteData {
  char bytes[kNoteDataBytes];
  RingEventKind kind;   // NoteData
  std::uint8_t length;  // payload bytes in `bytes`, 0..40
  std::uint8_t reserved[6];
};
static_assert(std::is_trivially_copyable_v<RingNoteData> && sizeof(RingNoteData) == sizeof(RingEvent) &&
              offsetof(RingNoteData, kind) == offsetof(RingEvent, kind));

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

// What the slot of `ticket` holds in memory for sequence number `seq` (the protocol above): `seq` less the
// slot's index. A new ring's slots, none committed (a committed slot's word is at least 1), are then all 0,
// as the memfd's pages come from the kernel, so the recorder does not write (and fault in) 4 MiB of slots before the
// program starts, and a short recording never touches the slots it does not reach (docs/RUNTIME.md, "Cost").
[[nodiscard]] inline constexpr std::uint64_t seq_word(std::uint64_t seq, std::uint64_t ticket, std::uint64_t capacity) {
  return seq - (ticket & (capacity - 1));
}

struct alignas(64) RingSlot {
  std::atomic<std::uint64_t> seq;  // seq_word() of the slot protocol above
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

inline constexpr std::uint32_t kDetachedFailed = 1;
inline constexpr std::uint32_t kDetachedQuiet = 2;

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
  // Set by a producer that found the recorder gone, or by the recorder when it cannot encode
  // (kDetachedFailed): every process stops recording, a process attaching says so on stderr. Set by the
  // recorder when the recording ended while processes still run (kDetachedQuiet: daemons left running):
  // they stop recording silently, and their new images do not attach. Read on every event, so it shares the line of the
  // fields above, which nobody writes after set-up, and not the line of `waiters`, which the recorder writes all the
  // time.
  std::atomic<std::uint32_t> detached;
  // Frames recorded per allocation (`record --stack-depth`); 0: no stacks (`record --no-stacks`), the
  // events carry stack 0 and no stack note is written.
  std::uint32_t stack_depth;
  // (generation << 1) | paused: the "Control" section above. Read on every allocation, so it shares this line;
  // written only by a toggle (rare).
  std::atomic<std::uint64_t> control;
  // Regions `memtrack ctl` opened and has not closed (begin and mark add one, end and mark take one off), so
  // a `ctl end` with nothing open says so instead of writing a note readers ignore. Written only by ctl.
  std::atomic<std::uint32_t> outside_regions;
  // Next ticket. On its own cache line: every producer writes it.
  alignas(64) std::atomic<std::uint64_t> head;
  // Producers that gave up spinning and sleep on `wake_futex`; the recorder wakes them after freeing slots.
  alignas(64) std::atomic<std::uint32_t> waiters;
  std::atomic<std::uint32_t> wake_futex;
  std::atomic<std::uint32_t> exec_count;  // notices written so far; notice i is in exec_notices[i % 64]
  std::atomic<std::uint64_t> exec_notices[kExecNotices];
  // The consumer's position: every ticket below it has been read, so slot t % capacity is free for ticket t
  // when t < consumed + capacity (the slot protocol above). Written by the consumer after each batch (release:
  // its reads of those slots happen before a producer that acquires it writes them again).
  alignas(64) std::atomic<std::uint64_t> consumed;
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

// The unwind rules the processes of a recording share (memtrack_unwind_use_shared_rules, runtime/unwind):
// 512 KiB, 32 Ki rules, zero until a process writes a rule, touched as used (a page per page of code unwound
// through). Not more: a process maps the pages it reads with a page fault per 64 KiB (the kernel's fault-around
// maps the present pages around a read fault), and 2 MiB cost each `git --version` about 17 page faults more
// (bench/record_cost.sh's extra faults per git process measure it; docs/UNWIND.md).
inline constexpr std::size_t kSharedRulesBytes = std::size_t{512} << 10;

// Layout: the header, `slots` slots, 2 * slots owner words, then, at the next 4 KiB boundary (a group of the
// shared rules is a page), kSharedRulesBytes of shared unwind rules.
[[nodiscard]] inline constexpr std::size_t ring_shared_rules_offset(std::uint64_t slots) {
  const std::size_t owners_end = sizeof(RingHeader) + slots * sizeof(RingSlot) + 2 * slots * sizeof(std::uint64_t);
  return (owners_end + 4095) & ~std::size_t{4095};
}
[[nodiscard]] inline constexpr std::size_t ring_bytes(std::uint64_t slots) {
  return ring_shared_rules_offset(slots) + kSharedRulesBytes;
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
  MEMTRACK_RING_FIELD(RingEvent, stack);
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
  MEMTRACK_RING_FIELD(RingHeader, stack_depth);
  MEMTRACK_RING_FIELD(RingHeader, control);
  MEMTRACK_RING_FIELD(RingHeader, outside_regions);
  MEMTRACK_RING_FIELD(RingHeader, head);
  MEMTRACK_RING_FIELD(RingHeader, waiters);
  MEMTRACK_RING_FIELD(RingHeader, wake_futex);
  MEMTRACK_RING_FIELD(RingHeader, exec_count);
  MEMTRACK_RING_FIELD(RingHeader, exec_notices);
  MEMTRACK_RING_FIELD(RingHeader, consumed);
  add(sizeof(RingNoteData));
  MEMTRACK_RING_FIELD(RingNoteData, bytes);
  MEMTRACK_RING_FIELD(RingNoteData, kind);
  MEMTRACK_RING_FIELD(RingNoteData, length);
  add(kNoteDataBytes);
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
    case 7:
      return 0xf384e526542bb216u;
    case 8:
      return 0xbfa50f6845ae88e2u;
    case 9:
      return 0xdf3ed784650a169au;
    case 10:
      return 0xbca35e9322650f6eu;
    case 11:  // NotePythonCode, a meaning: the layout of 10
      return 0xbca35e9322650f6eu;
    case 12:  // seq_word, a meaning: the layout of 10
      return 0xbca35e9322650f6eu;
    case 13:  // the shared unwind rules after the owners
      return 0xa5098def2f9a9d7fu;
    case 14:  // 512 KiB of them
      return 0xff6ccd47ace27f47u;
    case 15:  // RingPythonCodePayload.table_format, a meaning: the layout of 14
      return 0xff6ccd47ace27f47u;
    case 16:  // RingHeader::consumed
      return 0x3ad3593ff5c9c1eeu;
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

// kSharedRulesBytes for the unwinder's shared rules (zeroed by the memfd, written only by the preloads).
[[nodiscard]] inline void* ring_shared_rules(RingHeader* h) {
  return reinterpret_cast<char*>(h) + ring_shared_rules_offset(h->capacity);
}

// ---- What both sides write: the producers (libmemtrack-preload.so) and the recorder, which takes tickets
// like a producer for its own notes. Header-only, no allocation, async-signal-safe given a safe `wait`.

// RingEvent::timestamp: the raw TSC when `tsc` (RingHeader::timestamp_tsc == 1), else CLOCK_MONOTONIC ns.
[[nodiscard]] inline std::uint64_t ring_timestamp(bool tsc) {
#if defined(__x86_64__)
  if (tsc) return __builtin_ia32_rdtsc();
#endif
  (void)tsc;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

// The tickets below this have a free slot: `consumed` + capacity (the slot protocol above). Acquire (or
// stronger): what the consumer read in those slots happens before the caller writes them.
[[nodiscard]] inline std::uint64_t free_below(const RingHeader* h,
                                              std::memory_order order = std::memory_order_acquire) {
  return h->consumed.load(order) + h->capacity;
}

// Whether the slot of `ticket` (a ticket taken and not yet committed, so at or past `consumed`) is free for it:
// the consumer has read the ticket one lap before.
[[nodiscard]] inline bool slot_free(const RingHeader* h, std::uint64_t ticket,
                                    std::memory_order order = std::memory_order_acquire) {
  return ticket < free_below(h, order);
}

// Writes one note block ("Lifecycle notes"): 1 + k tickets in one fetch_add for `len` bytes of `payload`
// (cut to note_max_data_slots(capacity), then flags |= kRingNoteTruncated); the head slot carries pid, tid,
// addr, flags, the kept length (size) and k (old_addr). Every slot is signed with `owner_tid`, a thread the
// recorder can check for life. `wait(ticket)` is called when a slot is not free yet (slot_free): it returns true
// once it is, false to give up (the ring was detached or the recorder is gone: nobody reads the rest).
// *last_ticket is set to the block's last ticket once taken. Returns false when the ring is detached or
// `wait` gave up.
template <typename Wait>
bool write_note_block(RingHeader* h, RingEventKind kind, std::int32_t pid, std::int32_t tid, std::int32_t owner_tid,
                      std::uint64_t addr, std::uint8_t flags, const char* payload, std::size_t len, Wait&& wait,
                      std::uint64_t* last_ticket) {
  if (h->detached.load(std::memory_order_relaxed) != 0) return false;
  const std::uint64_t capacity = h->capacity;
  RingSlot* const slots = ring_slots(h);
  std::atomic<std::uint64_t>* const owners = ring_owners(h);
  const std::uint64_t max_slots = note_max_data_slots(capacity);
  std::uint64_t k = (len + kNoteDataBytes - 1) / kNoteDataBytes;
  if (k > max_slots) {
    k = max_slots;
    len = k * kNoteDataBytes;
    flags |= kRingNoteTruncated;
  }
  const std::uint64_t t = h->head.fetch_add(1 + k, std::memory_order_relaxed);
  *last_ticket = t + k;
  const std::uint64_t timestamp = ring_timestamp(h->timestamp_tsc == 1);
  for (std::uint64_t j = 0; j <= k; ++j) {
    RingSlot& slot = slots[(t + j) & (capacity - 1)];
    const std::uint64_t owner = slot_owner(t + j, owner_tid);
    if (!slot_free(h, t + j)) {
      owners[(t + j) & (2 * capacity - 1)].store(owner, std::memory_order_release);
      if (!wait(t + j)) return false;
    }
    slot.owner.store(owner, std::memory_order_release);
    if (j == 0) {
      RingEvent& e = slot.event;
      e.timestamp = timestamp;
      e.addr = addr;
      e.size = len;
      e.old_addr = k;
      e.pid = pid;
      e.tid = tid;
      e.kind = kind;
      e.flags = flags;
      std::memset(e.reserved, 0, sizeof e.reserved);
      e.stack = 0;
    } else {
      RingNoteData d;
      const std::size_t off = (j - 1) * kNoteDataBytes;
      const std::size_t n = len - off < kNoteDataBytes ? len - off : kNoteDataBytes;
      std::memset(&d, 0, sizeof d);
      std::memcpy(d.bytes, payload + off, n);
      d.kind = RingEventKind::NoteData;
      d.length = static_cast<std::uint8_t>(n);
      std::memcpy(&slot.event, &d, sizeof d);
    }
    slot.seq.store(seq_word(t + j + 1, t + j, capacity), std::memory_order_release);
  }
  return true;
}

// Pause (`pause` true) or resume: the generation-bumping CAS of "Control". Returns the new control word, for
// the NotePause/NoteResume the caller then writes; 0 when the state already was so (no toggle, no note; a new
// word is never 0, its generation being at least 1).
[[nodiscard]] inline std::uint64_t toggle_control(RingHeader* h, bool pause) {
  std::uint64_t word = h->control.load(std::memory_order_acquire);
  for (;;) {
    if (((word & kRingControlPaused) != 0) == pause) return 0;
    const std::uint64_t next = next_control(word, pause);
    if (h->control.compare_exchange_weak(word, next, std::memory_order_acq_rel, std::memory_order_acquire)) return next;
  }
}

}  // namespace memtrack::runtime
