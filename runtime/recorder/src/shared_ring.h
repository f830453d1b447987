// The recorder's side of the shared ring (memtrack/runtime/ring.h): the memory itself and the consumer's
// half of the slot protocol. Reading slots in ticket order is RingReader's job (ring_reader.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "memtrack/runtime/ring.h"

namespace memtrack::runtime {

// Owns the ring: creates a memfd of ring_bytes(slots), maps it, and initializes the header (magic, version,
// capacity, recorder pid), every slot (free for its first ticket) and the owners array, before any producer
// exists. The tracked processes find it through path(), /proc/<recorder pid>/fd/<n>; the fd is
// close-on-exec, so the program's fd table is untouched and programs that close all their fds still attach.
// For the reader it gives access to a ticket's slot and owner, hands slots back to the producers (consumed)
// and wakes producers sleeping on a full ring. Unmaps and closes on destruction. slot(), owner() and
// consumed() belong to one consumer thread (the slot protocol has a single consumer); the recorder's main
// thread fills in the header before the program starts, and afterwards touches only its atomics (detached)
// and wake_waiters().
class SharedRing {
 public:
  // Throws std::runtime_error when the memfd cannot be created or mapped.
  explicit SharedRing(std::uint64_t slots);
  ~SharedRing();
  SharedRing(const SharedRing&) = delete;
  SharedRing& operator=(const SharedRing&) = delete;

  [[nodiscard]] std::string path() const;
  RingHeader* header() { return header_; }
  RingSlot& slot(std::uint64_t ticket) { return slots_ptr_[ticket & (slots_ - 1)]; }
  // slot_owner() of the producer holding `ticket`, from its slot or else the owners array (ring.h); a value
  // whose ticket bits differ is stale: that ticket's producer has not signed yet.
  std::uint64_t owner(std::uint64_t ticket) {
    const std::uint64_t in_slot = slot(ticket).owner.load(std::memory_order_acquire);
    if ((in_slot >> kOwnerTidBits) == (ticket & kOwnerTicketMask)) return in_slot;
    return owners_[ticket & (2 * slots_ - 1)].load(std::memory_order_acquire);
  }
  [[nodiscard]] std::uint64_t capacity() const { return slots_; }

  // Hands the slots of every ticket below `position` back to the producers (each for its ticket + capacity):
  // RingHeader::consumed, after the slots were read.
  void consumed(std::uint64_t position) { header_->consumed.store(position, std::memory_order_release); }

  // After freeing slots: wake producers sleeping on a full ring.
  void wake_waiters();

  // The recorder as a producer (ring.h, "Lifecycle notes"): writes one note, with `payload` in its data slots,
  // in ticket order among the events, so its position is causal. Called by the recorder's main thread, never
  // by the reader (which would wait on itself). Waits while the ring is full (the reader drains it, even after
  // an encoder failure). Writes nothing and returns false when the ring is detached.
  bool write_note(RingEventKind kind, std::int32_t pid, std::uint64_t addr, std::uint8_t flags = 0,
                  std::string_view payload = {});

 private:
  std::uint64_t slots_;
  int fd_ = -1;
  std::size_t bytes_ = 0;
  RingHeader* header_ = nullptr;
  RingSlot* slots_ptr_ = nullptr;
  std::atomic<std::uint64_t>* owners_ = nullptr;
};

// write_note on any mapped ring: the recorder's own, or one `memtrack ctl` mapped from the recorder's fd. The
// note carries `tid`; the slots are signed with the calling thread's tid (the reader checks it is alive).
bool write_ring_note(RingHeader* header, RingEventKind kind, std::int32_t pid, std::int32_t tid, std::uint64_t addr,
                     std::uint8_t flags = 0, std::string_view payload = {});

}  // namespace memtrack::runtime
