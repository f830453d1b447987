#include "shared_ring.h"

#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <new>
#include <stdexcept>
#include <thread>

#include "sys_error.h"

namespace memtrack::runtime {

SharedRing::SharedRing(std::uint64_t slots) : slots_(slots) {
  if (slots < 64 || (slots & (slots - 1)) != 0) throw std::runtime_error("ring size must be a power of two >= 64");
  fd_ = static_cast<int>(::syscall(SYS_memfd_create, "memtrack-ring", MFD_CLOEXEC));
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
  slots_ptr_ = ring_slots(header_);
  // Published to the producers by posix_spawn (a system call) before any of them maps the ring.
  for (std::uint64_t i = 0; i < slots; ++i) {
    new (&slots_ptr_[i].seq) std::atomic<std::uint64_t>(i);
    new (&slots_ptr_[i].owner) std::atomic<std::uint64_t>(0);
  }
  owners_ = ring_owners(header_);
  for (std::uint64_t i = 0; i < 2 * slots; ++i) new (&owners_[i]) std::atomic<std::uint64_t>(0);
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

namespace {

std::uint64_t note_timestamp(bool tsc) {
#if defined(__x86_64__)
  if (tsc) return __builtin_ia32_rdtsc();
#endif
  (void)tsc;
  struct timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace

bool SharedRing::write_note(RingEventKind kind, std::int32_t pid, std::uint64_t addr, std::uint8_t flags,
                            std::string_view payload) {
  return write_ring_note(header_, kind, pid, static_cast<std::int32_t>(::syscall(SYS_gettid)), addr, flags, payload);
}

bool write_ring_note(RingHeader* header, RingEventKind kind, std::int32_t pid, std::int32_t tid, std::uint64_t addr,
                     std::uint8_t flags, std::string_view payload) {
  RingHeader* const header_ = header;
  const std::uint64_t slots_ = header->capacity;
  RingSlot* const slots = ring_slots(header);
  std::atomic<std::uint64_t>* const owners = ring_owners(header);
  const auto slot = [&](std::uint64_t ticket) -> RingSlot& { return slots[ticket & (slots_ - 1)]; };
  if (header_->detached.load(std::memory_order_relaxed) != 0) return false;
  const std::uint64_t max_slots = note_max_data_slots(slots_);
  std::uint64_t k = (payload.size() + kNoteDataBytes - 1) / kNoteDataBytes;
  if (k > max_slots) {
    k = max_slots;
    payload = payload.substr(0, k * kNoteDataBytes);
    flags |= kRingNoteTruncated;
  }
  // The slot's owner word names a thread the reader can check for life: ours, whatever `tid` the note carries.
  const auto self = static_cast<std::int32_t>(::syscall(SYS_gettid));
  const std::uint64_t t = header_->head.fetch_add(1 + k, std::memory_order_relaxed);
  const std::uint64_t timestamp = note_timestamp(header_->timestamp_tsc == 1);
  for (std::uint64_t j = 0; j <= k; ++j) {
    RingSlot& s = slot(t + j);
    const std::uint64_t owner = slot_owner(t + j, self);
    if (s.seq.load(std::memory_order_acquire) != t + j) {
      owners[(t + j) & (2 * slots_ - 1)].store(owner, std::memory_order_release);
      while (s.seq.load(std::memory_order_acquire) != t + j) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    s.owner.store(owner, std::memory_order_release);
    if (j == 0) {
      RingEvent e{};
      e.timestamp = timestamp;
      e.addr = addr;
      e.size = payload.size();
      e.old_addr = k;
      e.pid = pid;
      e.tid = tid;
      e.kind = kind;
      e.flags = flags;
      s.event = e;
    } else {
      RingNoteData d{};
      const std::string_view part = payload.substr((j - 1) * kNoteDataBytes, kNoteDataBytes);
      std::memcpy(d.bytes, part.data(), part.size());
      d.kind = RingEventKind::NoteData;
      d.length = static_cast<std::uint8_t>(part.size());
      std::memcpy(&s.event, &d, sizeof d);
    }
    s.seq.store(t + j + 1, std::memory_order_release);
  }
  return true;
}

}  // namespace memtrack::runtime
