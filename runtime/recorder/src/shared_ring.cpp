#include "shared_ring.h"

#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <new>
#include <stdexcept>
#include <thread>

#include "sys_error.h"

namespace memtrack::runtime {

SharedRing::SharedRing(std::uint64_t slots) : slots_(slots) {
  if (slots < 64 || (slots & (slots - 1)) != 0) throw std::runtime_error("ring size must be a power of two >= 64");
  fd_ = static_cast<int>(::syscall(SYS_memfd_create, kRingMemfdName, MFD_CLOEXEC));
  if (fd_ < 0) throw sys_error("memfd_create");
  bytes_ = ring_bytes(slots);
  if (::ftruncate(fd_, static_cast<off_t>(bytes_)) != 0) {
    ::close(fd_);
    throw sys_error("ftruncate(ring)");
  }
  void* map = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (map == MAP_FAILED) {
    ::close(fd_);
    throw sys_error("mmap(ring)");
  }
  header_ = new (map) RingHeader;
  header_->magic = kRingMagic;
  header_->version = kRingVersion;
  header_->capacity = slots;
  header_->recorder_pid = static_cast<std::int32_t>(::getpid());
  header_->timestamp_tsc = 0;
  header_->head.store(0, std::memory_order_relaxed);
  header_->waiters.store(0, std::memory_order_relaxed);
  header_->wake_futex.store(0, std::memory_order_relaxed);
  header_->detached.store(0, std::memory_order_relaxed);
  header_->control.store(0, std::memory_order_relaxed);
  header_->consumed.store(0, std::memory_order_relaxed);  // every slot free for its first ticket
  slots_ptr_ = ring_slots(header_);
  // The slots (none committed: seq_word 0) and the owners array (0: unsigned) start as the
  // memfd's zero pages, not written here: 5 MiB of page faults before the program starts, and a short
  // recording never touches most of them (ring.h, seq_word). Zero bytes are those atomics' values.
  owners_ = ring_owners(header_);
  header_->exec_count.store(0, std::memory_order_relaxed);
  for (auto& notice : header_->exec_notices) notice.store(0, std::memory_order_relaxed);
}

SharedRing::~SharedRing() {
  ::munmap(header_, bytes_);
  ::close(fd_);
}

std::string SharedRing::path() const { return "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(fd_); }

// A Dekker handshake with the producer, which increments `waiters` and then re-reads its slot: this
// read-modify-write reads the latest `waiters`, and if it comes before the producer's increment, it
// synchronizes with it, so the producer's re-read sees the slots freed before this call. Either we see the
// waiter or it sees the free slot. (An RMW, not a fence: ThreadSanitizer does not model fences.)
void SharedRing::wake_waiters() {
  if (header_->waiters.fetch_add(0, std::memory_order_acq_rel) != 0) {
    header_->wake_futex.fetch_add(1, std::memory_order_seq_cst);
    ::syscall(SYS_futex, &header_->wake_futex, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
  }
}

bool SharedRing::write_note(RingEventKind kind, std::int32_t pid, std::uint64_t addr, std::uint8_t flags,
                            std::string_view payload) {
  return write_ring_note(header_, kind, pid, static_cast<std::int32_t>(::syscall(SYS_gettid)), addr, flags, payload);
}

bool write_ring_note(RingHeader* header, RingEventKind kind, std::int32_t pid, std::int32_t tid, std::uint64_t addr,
                     std::uint8_t flags, std::string_view payload) {
  // The slot's owner word names a thread the reader can check for life: ours, whatever `tid` the note carries.
  const auto self = static_cast<std::int32_t>(::syscall(SYS_gettid));
  std::uint64_t last = 0;
  return write_note_block(
      header, kind, pid, tid, self, addr, flags, payload.data(), payload.size(),
      [header](std::uint64_t ticket) {
        while (!slot_free(header, ticket)) std::this_thread::sleep_for(std::chrono::microseconds(50));
        return true;
      },
      &last);
}

}  // namespace memtrack::runtime
