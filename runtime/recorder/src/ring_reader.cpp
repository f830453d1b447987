#include "ring_reader.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

#include "proc.h"

namespace memtrack::runtime {
namespace {

// How long a slot may stay taken-but-unfilled before the reader asks (and then re-asks) whether its owner
// still exists. A live thread fills its slot within microseconds (or, in realloc, when the real call
// returns); the question costs one read of /proc/<pid>/stat.
constexpr auto kAbandonAfter = std::chrono::milliseconds(250);

// An unsigned ticket means its thread died within the few instructions between taking the ticket and
// signing it; only conclude so after kUnsignedAfter and when a tracked process is known to have died (one
// the recorder reaped, or one of the pids seen in the events that no longer runs).
constexpr auto kUnsignedAfter = std::chrono::seconds(1);

// The ring's kinds are the artifact's by value (ring.h), so converting one is a cast; if either side renumbers,
// this fails to compile instead of mislabeling events.
constexpr bool same_kind(RingEventKind r, codec::EventKind e) {
  return static_cast<std::uint8_t>(r) == static_cast<std::uint8_t>(e);
}
static_assert(same_kind(RingEventKind::Malloc, codec::EventKind::Malloc) &&
              same_kind(RingEventKind::Free, codec::EventKind::Free) &&
              same_kind(RingEventKind::Calloc, codec::EventKind::Calloc) &&
              same_kind(RingEventKind::Realloc, codec::EventKind::Realloc) &&
              same_kind(RingEventKind::AlignedAlloc, codec::EventKind::AlignedAlloc) &&
              same_kind(RingEventKind::Mmap, codec::EventKind::Mmap) &&
              same_kind(RingEventKind::Munmap, codec::EventKind::Munmap) &&
              same_kind(RingEventKind::Brk, codec::EventKind::Brk));

// The ring's record (ring.h) as the in-memory event. Fields the ring does not carry keep their defaults.
inline codec::Event to_event(const RingEvent& r) {
  codec::Event e;
  e.timestamp = r.timestamp;
  e.addr = r.addr;
  e.size = r.size;
  e.old_addr = r.old_addr;
  e.pid = r.pid;
  e.tid = r.tid;
  e.kind = static_cast<codec::EventKind>(r.kind);
  e.flags = (r.flags & kRingFlagHasOldAddr) != 0 ? codec::kFlagHasOldAddr : std::uint8_t{0};
  e.stack = r.stack;
  return e;
}

// True when thread (or process) `tid` no longer runs: gone, or a zombie (killed, not yet reaped).
bool thread_gone(int tid) { return !running(proc_stat(tid)); }

// True when `tid` is the pid of an image that started (exec) after `ticket` was taken: the ticket was held
// by the main thread of the image exec replaced.
bool replaced_by_exec(RingHeader* h, std::int32_t tid, std::uint64_t ticket) {
  for (const auto& n : h->exec_notices) {
    const std::uint64_t notice = n.load(std::memory_order_acquire);
    if (static_cast<std::int32_t>(notice & kOwnerTidMask) == tid &&
        (notice >> kOwnerTidBits) > (ticket & kOwnerTicketMask))
      return true;
  }
  return false;
}

}  // namespace

// A slot taken but unfilled for kAbandonAfter: abandon it if the thread that took it is gone (a live owner
// is waited for, however long: a stopped or traced program too).
bool RingReader::owner_gone(std::uint64_t ticket, std::chrono::steady_clock::duration stuck_for) const {
  const std::uint64_t owner = ring_.owner(ticket);
  if ((owner >> kOwnerTidBits) == (ticket & kOwnerTicketMask)) {
    const auto tid = static_cast<std::int32_t>(owner & kOwnerTidMask);
    return thread_gone(tid) || replaced_by_exec(ring_.header(), tid, ticket);
  }
  if (stuck_for < kUnsignedAfter) return false;
  if (watch_.killed.load(std::memory_order_relaxed) != 0) return true;
  for (const std::int32_t pid : processes_.pids())
    if (thread_gone(pid)) return true;
  return false;
}

std::size_t RingReader::read(std::span<codec::Event> out) {
  for (;;) {
    std::size_t n = 0;
    const std::uint64_t from = pos_;
    while (n < out.size()) {
      RingSlot& s = ring_.slot(pos_);
      if (s.seq.load(std::memory_order_acquire) != seq_word(pos_ + 1, pos_, ring_.capacity())) break;
      // Kinds 1..8 are events. A committed slot of kind None carries no event (a realloc that failed after
      // taking its ticket); a note (per process, not per event) goes to the lifecycle books, at the position
      // of the events before it.
      const auto kind = static_cast<std::uint8_t>(s.event.kind);
      const bool is_event = static_cast<std::uint8_t>(kind - 1u) < 8u;
      if (is_event) [[likely]]
        out[n] = to_event(s.event);
      else if (kind != 0)
        on_note(s.event, events_ + n);
      ++pos_;
      n += is_event;
    }
    // After the slots were read: the producers of tickets up to pos_ + capacity may overwrite them.
    if (pos_ != from) ring_.consumed(pos_);
    read_up_to_.store(pos_, std::memory_order_release);
    if (n != 0 || idle_rounds_ == 0) ring_.wake_waiters();
    if (n != 0) {
      idle_rounds_ = 0;
      events_ += n;
      const std::span<codec::Event> got = out.first(n);
      if (tsc_ != nullptr) tsc_->convert(got);
      processes_.add(got);
      heap_.add(got);
      if (tick_) tick_();
      // A short batch means we are polling faster than the program fills the ring: pause, so the next
      // read finds a longer batch, instead of spinning a core the program could use. The pause is far
      // shorter than the time the program needs to fill the ring.
      if (n < kShortBatch && n < out.size()) pause();
      return n;
    }
    // Nothing committed at pos_.
    const bool exited = watch_.all_exited.load(std::memory_order_acquire);
    const std::uint64_t head = ring_.header()->head.load(std::memory_order_acquire);
    if (exited && pos_ >= head) {
      ring_.wake_waiters();
      if (at_end_) std::exchange(at_end_, {})();
      return 0;
    }
    if (pos_ < head) {
      // A ticket was taken but its slot is not filled. Normally its thread is between fetch_add and the
      // store; if every process is gone, or the thread that took it died (killed, or its image replaced
      // by exec), it will never be filled.
      const auto now = std::chrono::steady_clock::now();
      if (stuck_at_ != pos_) {
        stuck_at_ = pos_;
        stuck_since_ = now;
        last_check_ = now;
      }
      bool abandon = exited;
      if (!abandon && now - last_check_ > kAbandonAfter) {
        abandon = owner_gone(pos_, now - stuck_since_);
        last_check_ = now;  // ask again later, not on every idle round
      }
      if (abandon) {
        if (stacks_block_ && stacks_ != nullptr)
          stacks_->on_abandoned();
        else if (lifecycle_ != nullptr)
          lifecycle_->on_abandoned(events_);
        ++pos_;
        ring_.consumed(pos_);
        ++abandoned_;
        ring_.wake_waiters();  // a producer may be waiting for exactly this slot's next lap
        continue;
      }
    }
    if (tick_) tick_();
    idle();
  }
}

// Notes go to the books whose kind they are; a NoteData slot to the books of the block it continues (a
// block's slots are consecutive tickets).
void RingReader::on_note(const RingEvent& slot, std::uint64_t position) {
  if (slot.kind != RingEventKind::NoteData) stacks_block_ = StackTables::takes(slot.kind);
  if (stacks_block_) {
    if (stacks_ != nullptr) stacks_->on_slot(slot, position);
    return;
  }
  if (stacks_ != nullptr) {
    if (slot.kind == RingEventKind::NoteStart) stacks_->on_fork(slot.pid, static_cast<std::int32_t>(slot.addr));
    if (slot.kind == RingEventKind::NoteExec) stacks_->on_exec(slot.pid);
  }
  if (lifecycle_ != nullptr) lifecycle_->on_slot(slot, position);
}

void RingReader::pause() {
  struct timespec ts = {0, 20'000};
  ::nanosleep(&ts, nullptr);
}

// Idle: back off from yielding to sleeping (20 us .. 1 ms). The ring absorbs bursts meanwhile, and a
// producer that finds it full sleeps on the futex wake_waiters bumps, so no event waits on this sleep alone.
void RingReader::idle() {
  ++idle_rounds_;
  if (idle_rounds_ < 16) {
    std::this_thread::yield();
  } else {
    const long us = std::min<long>(1000, 20L << std::min(idle_rounds_ - 16, 6));
    struct timespec ts = {0, us * 1000};
    ::nanosleep(&ts, nullptr);
  }
}

}  // namespace memtrack::runtime
