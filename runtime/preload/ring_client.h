// The producer's side of the recorder's ring (memtrack/runtime/ring.h): attaching to it once per process
// image (ring_client.cpp), and recording one event, which is inline here because every hook's fast path runs
// it: begin_event takes a ticket (and waits for its slot when the recorder is behind), commit_event fills the
// slot and publishes it.
#pragma once

#include <stdint.h>

#include <atomic>

#include "memtrack/runtime/ring.h"
#include "preload_internal.h"

#pragma GCC visibility push(hidden)

namespace memtrack::preload {

using runtime::RingEvent;
using runtime::RingEventKind;
using runtime::RingHeader;
using runtime::RingSlot;

// This process image's connection to the recorder.
enum State : int { kUnattached = 0, kAttaching = 1, kRecording = 2, kOff = 3 };
extern std::atomic<int> g_state;
// Set by attach() before g_state becomes kRecording, never changed after (a forked child keeps them: it
// shares the mapping).
extern RingHeader* g_ring;
extern RingSlot* g_slots;
extern uint64_t g_mask;  // capacity - 1
extern std::atomic<uint64_t>* g_owners;
extern uint64_t g_owner_mask;  // 2 * capacity - 1
extern bool g_timestamp_tsc;
extern int g_pid;  // refreshed in the child after fork/_Fork

extern MEMTRACK_TLS bool t_busy;  // the reentrancy guard while attaching
inline constexpr uint64_t kNoTicket = ~uint64_t{0};
// The oldest ticket this thread took and has not filled yet: set between begin_event and commit, so a
// signal handler that allocates on this thread meanwhile knows an outer event is pending.
extern MEMTRACK_TLS uint64_t t_pending;
extern MEMTRACK_TLS uint64_t t_last_ticket;  // tickets only grow, so this bounds the next one from below
extern MEMTRACK_TLS int t_tid;               // cached gettid(); reset in the child after fork
// Tickets below it have a free slot: RingHeader::consumed + capacity as this thread last read it (it only
// grows, and so do a thread's tickets, so the thread reads the shared line about once per capacity tickets).
// A fork child keeps it (the same ring); a new image starts at 0. A process attaches to one ring only.
extern MEMTRACK_TLS uint64_t t_free_below;

// Maps the ring named by MEMTRACK_RING and sets g_state to kRecording, or to kOff (with one line on stderr)
// when there is none or it cannot be used. Runs once per process image (a forked child inherits the mapping;
// exec starts over and attaches again, which is how tracking continues across exec); a thread that finds
// another one attaching waits for it.
void attach();

// Waits until the slot of ticket `t` is free (runtime::slot_free). Spins briefly (the recorder usually frees
// slots within microseconds), then sleeps on a futex the recorder bumps after freeing slots. Returns false
// when the process must stop recording (the ring was detached, or the recorder is gone); g_state is then kOff.
bool wait_for_slot(uint64_t t);

// In a child after fork or _Fork: the pid changed, and only the forking thread survives, with a new tid.
// Writes the child's NoteStart.
void after_fork_in_child();

// Writes one lifecycle note (ring.h, "Lifecycle notes"): a block of 1 + k tickets for `payload` of `len`
// bytes (cut to note_max_data_slots). The head slot carries `pid`, `addr`, the payload's kept length and k.
// Returns false when nothing was written (the ring is detached or the recorder gone). The caller checks that
// this image is attached (g_ring set). Per process or image, never per event; not async-signal-reentrant on
// one thread (events of a signal handler that interrupts it are passed through unrecorded).
bool write_note(RingEventKind kind, int32_t pid, uint64_t addr, const char* payload, size_t len, uint8_t flags = 0);

// True when this image records and the recording has not ended: its children should be tracked too.
inline bool recording_now() {
  return g_state.load(std::memory_order_acquire) == kRecording && g_ring->detached.load(std::memory_order_relaxed) == 0;
}

// process_hooks.cpp: at attach, before this image records: takes LD_PRELOAD's first entry and MEMTRACK_RING
// out of environ (kept for the children's environments) and notes the new image (NoteExec), and registers the
// exit note. Returns false when the image must not record (the note could not be written).
bool begin_image();

// attach.cpp: whether this library was loaded by `memtrack attach` (dlopen'd into a running process) rather
// than preloaded by `memtrack record`.
bool loaded_for_attach();

// `memtrack attach` (attach.cpp): the variables the recorder would have put in the environment, kept as
// begin_image keeps them (the environment itself is left as the program has it). process_hooks.cpp.
void set_attached_environment(const char* ring, const char* messages, const char* preload);

// The event's time: the raw TSC when the recorder converts it (ring.h, timestamp_tsc), else CLOCK_MONOTONIC.
inline uint64_t timestamp_now() { return runtime::ring_timestamp(g_timestamp_tsc); }

// Whether this thread may record now: it is not attaching, this image is attached (attaching first if it has
// not tried yet), and the ring is not detached (then the image stops recording: g_state becomes kOff).
inline bool may_record() {
  if (t_busy) return false;
  int s = g_state.load(std::memory_order_acquire);
  if (s != kRecording) [[unlikely]] {
    if (s == kOff) return false;
    attach();
    if (g_state.load(std::memory_order_acquire) != kRecording) return false;
  }
  if (g_ring->detached.load(std::memory_order_relaxed)) [[unlikely]] {
    g_state.store(kOff, std::memory_order_release);
    return false;
  }
  return true;
}

// The nested-ticket bound of begin_event (below) for a thread whose oldest unfilled ticket is `outer`.
inline bool nested_ticket_allowed(uint64_t outer) {
  return outer == kNoTicket || g_ring->head.load(std::memory_order_relaxed) - outer < (g_mask + 1) / 2;
}

struct Ticket {
  RingSlot* slot;
  uint64_t t;
  uint64_t timestamp;
  uint64_t outer;  // t_pending when this event began (kNoTicket unless we interrupted our own thread)
};

// Takes the next ticket and waits for its slot. Returns false, taking no ticket (or, when the recorder turned
// out to be gone while waiting, abandoning it), when this call is not recorded: this thread is attaching, the
// process is not recording, or the nested-ticket bound below says no.
//
// Reentrancy from signal handlers: if this thread already holds an unfilled ticket `outer` (the handler
// interrupted an event between begin and commit, possibly while it waited for a slot or sat in the real
// realloc), the recorder cannot read past `outer` until the handler returns. A nested ticket t2 can
// still get its slot iff t2 < outer + capacity (its slot's previous lap, t2 - capacity, is before
// `outer`). Every thread holds at most one unfilled ticket per nesting level while it waits, so tickets run
// at most a few per thread past the last one the recorder can reach; taking a nested ticket only while
// head - outer < capacity / 2 keeps t2 < outer + capacity with any realistic thread count. Otherwise the
// nested event is passed through unrecorded (it is not lost silently: it never entered the stream).
//
// `allocation`: the event adds a block or a mapping (not a free or munmap). While recording is paused
// (RingHeader::control, memtrack/control.h) such events are not recorded; releases always are, so a block
// allocated while recording is still released in the artifact when it is freed during a pause.
inline bool begin_event(Ticket& tk, bool allocation = false) {
  if (!may_record()) return false;
  // The same cache line as `detached`, which nobody writes while recording: no cost beyond the load.
  if (allocation && (g_ring->control.load(std::memory_order_relaxed) & runtime::kRingControlPaused) != 0) [[unlikely]]
    return false;
  tk.outer = t_pending;
  if (!nested_ticket_allowed(tk.outer)) [[unlikely]]
    return false;
  // Relaxed is enough for causality: read-modify-writes of one atomic are totally ordered consistently
  // with happens-before whatever their memory order.
  if (t_tid == 0) t_tid = static_cast<int>(syscall(SYS_gettid));
  // A handler that interrupts us between the fetch_add and the line after it must already see a pending
  // ticket. The last ticket this thread took is a lower bound of the one it is taking (head only grows),
  // and a lower bound only makes the handler's check stricter.
  if (tk.outer == kNoTicket) t_pending = t_last_ticket;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  tk.t = g_ring->head.fetch_add(1, std::memory_order_relaxed);
  t_last_ticket = tk.t;
  if (tk.outer == kNoTicket) t_pending = tk.t;
  const uint64_t owner = runtime::slot_owner(tk.t, t_tid);
  tk.slot = &g_slots[tk.t & g_mask];
  tk.timestamp = timestamp_now();
  if (tk.t >= t_free_below) [[unlikely]] {
    t_free_below = runtime::free_below(g_ring);
    if (tk.t >= t_free_below) {
      // The recorder is behind: sign the owners array, where it looks while we wait (ring.h).
      g_owners[tk.t & g_owner_mask].store(owner, std::memory_order_release);
      if (!wait_for_slot(tk.t)) {
        t_pending = tk.outer;
        return false;
      }
    }
  }
  tk.slot->owner.store(owner, std::memory_order_release);
  return true;
}

// Fills the ticket's slot and publishes it. `old_addr` is written only when `has_old` (a Realloc of a block).
inline void commit_event(Ticket& tk, RingEventKind kind, const void* addr, uint64_t size,
                         const void* old_addr = nullptr, bool has_old = false, uint32_t stack = 0) {
  RingEvent& e = tk.slot->event;
  e.timestamp = tk.timestamp;
  e.addr = reinterpret_cast<uint64_t>(addr);
  e.size = size;
  e.old_addr = has_old ? reinterpret_cast<uint64_t>(old_addr) : 0;
  e.pid = g_pid;
  e.tid = t_tid;
  e.kind = kind;
  e.flags = has_old ? runtime::kRingFlagHasOldAddr : 0;
  memset(e.reserved, 0, sizeof e.reserved);
  e.stack = stack;
  tk.slot->seq.store(runtime::seq_word(tk.t + 1, tk.t, g_mask + 1), std::memory_order_release);
  t_pending = tk.outer;
}

// A ticket taken for a call that then failed: the slot is committed empty so the recorder moves past it.
inline void commit_nothing(Ticket& tk) {
  tk.slot->event.kind = RingEventKind::None;
  tk.slot->seq.store(runtime::seq_word(tk.t + 1, tk.t, g_mask + 1), std::memory_order_release);
  t_pending = tk.outer;
}

// One event, for a call whose result is known (allocations after the real call, frees before it).
// `stack`: the allocation's stack id (stacks.h), 0 for frees.
inline void record(RingEventKind kind, const void* addr, uint64_t size, uint32_t stack = 0) {
  Ticket tk;
  const bool allocation = kind != RingEventKind::Free && kind != RingEventKind::Munmap;
  if (begin_event(tk, allocation)) commit_event(tk, kind, addr, size, nullptr, false, stack);
}

// Whether munmap(addr, len) is an event: it is recorded before the real call (the range may be mapped again by
// another thread right after), and the only ways munmap fails are the arguments checked here (len 0, addr not
// page-aligned), so no event is written for a call that will fail.
inline bool munmap_is_event(uintptr_t addr, size_t len) { return len != 0 && (addr & 4095u) == 0; }

// Whether this image records and allocations are paused (memtrack/control.h): a realloc then records only the
// release of its old block, and no stack is captured.
inline bool allocations_paused() {
  return g_state.load(std::memory_order_acquire) == kRecording &&
         (g_ring->control.load(std::memory_order_relaxed) & runtime::kRingControlPaused) != 0;
}

// The end of a realloc-like call whose ticket was taken before the call (so the old block's release and the
// new block share one slot, causally before any reuse of either): `now` is the block it returned, nullptr
// when it failed and the old block is unchanged. While allocations are paused only the old block's release
// is recorded, so the live heap holds exactly what was allocated while recording.
inline void commit_realloc(Ticket& tk, const void* old, const void* now, uint64_t size, uint32_t stack) {
  if (now == nullptr)
    commit_nothing(tk);
  else if (allocations_paused()) [[unlikely]]
    commit_event(tk, RingEventKind::Free, old, 0);
  else
    commit_event(tk, RingEventKind::Realloc, now, size, old, true, stack);
}

}  // namespace memtrack::preload

#pragma GCC visibility pop
