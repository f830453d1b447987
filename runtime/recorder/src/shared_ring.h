// The recorder's side of the shared ring (memtrack/runtime/ring.h): creates the memfd the tracked processes
// map, and reads committed slots in ticket order.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "memtrack/runtime/ring.h"

namespace memtrack::runtime {

// A memfd the tracked processes open through /proc/<recorder pid>/fd/<n>. The fd itself is close-on-exec,
// so the program's fd table is untouched and programs that close all fds still attach.
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

  // Hands slot `ticket` back to the producers (for ticket + capacity).
  void release(std::uint64_t ticket) { slot(ticket).seq.store(ticket + slots_, std::memory_order_release); }

  // After freeing slots: wake producers sleeping on a full ring.
  void wake_waiters();

 private:
  std::uint64_t slots_;
  int fd_ = -1;
  std::size_t bytes_ = 0;
  RingHeader* header_ = nullptr;
  RingSlot* slots_ptr_ = nullptr;
  std::atomic<std::uint64_t>* owners_ = nullptr;
};

}  // namespace memtrack::runtime
