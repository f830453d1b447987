#include "ring_client.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "stacks.h"

namespace memtrack::preload {

constinit std::atomic<int> g_state{kUnattached};
constinit RingHeader* g_ring = nullptr;
constinit RingSlot* g_slots = nullptr;
constinit uint64_t g_mask = 0;
constinit std::atomic<uint64_t>* g_owners = nullptr;
constinit uint64_t g_owner_mask = 0;
constinit bool g_timestamp_tsc = false;
constinit int g_pid = 0;

constinit MEMTRACK_TLS bool t_busy = false;
constinit MEMTRACK_TLS uint64_t t_pending = kNoTicket;
constinit MEMTRACK_TLS uint64_t t_last_ticket = 0;
constinit MEMTRACK_TLS uint64_t t_free_below = 0;
constinit MEMTRACK_TLS int t_tid = 0;

void after_fork_in_child() {
  g_pid = static_cast<int>(syscall(SYS_getpid));
  t_tid = 0;  // only the forking thread survives, and its tid changed
  t_pending = kNoTicket;
  stacks_after_fork();
  if (g_state.load(std::memory_order_acquire) == kRecording)
    write_note(RingEventKind::NoteStart, g_pid, static_cast<uint64_t>(syscall(SYS_getppid)), nullptr, 0);
}

bool write_note(RingEventKind kind, int32_t pid, uint64_t addr, const char* payload, size_t len, uint8_t flags) {
  // Events of a signal handler running while we hold the block are not recorded: they would take tickets
  // after the block, whose slots may need the reader to pass the block first.
  const bool was_busy = t_busy;
  t_busy = true;
  if (t_tid == 0) t_tid = static_cast<int>(syscall(SYS_gettid));
  uint64_t last = t_last_ticket;
  const bool ok = runtime::write_note_block(
      g_ring, kind, pid, t_tid, t_tid, addr, flags, payload, len, [](uint64_t t) { return wait_for_slot(t); }, &last);
  t_last_ticket = last;
  t_busy = was_busy;
  return ok;
}

void attach() {
  int expected = kUnattached;
  if (!g_state.compare_exchange_strong(expected, kAttaching, std::memory_order_acq_rel)) {
    while (g_state.load(std::memory_order_acquire) == kAttaching) sched_yield();
    return;
  }
  const bool was_busy = t_busy;
  t_busy = true;  // anything allocated while attaching (pthread_atfork's list) is not ours to record
  int next = kOff;
  const char* path = getenv(runtime::kEnvRing);
  bool quiet = false;  // the recording ended while this process ran (a daemon left running): say nothing
  if (path == nullptr || *path == '\0') {
    say("MEMTRACK_RING is not set; this process is not recorded (run it under 'memtrack record')");
  } else {
    const int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CLOEXEC));
    // The recorder's fd is gone with the recorder: an image started by a process left running after the
    // recording ended (its environment still named the ring). Nothing to say to it.
    if (fd < 0 && errno == ENOENT) quiet = true;
    RingHeader probe;
    if (fd >= 0 && syscall(SYS_pread64, fd, &probe, sizeof probe, 0) == static_cast<long>(sizeof probe) &&
        probe.magic == runtime::kRingMagic && probe.version == runtime::kRingVersion && probe.capacity != 0 &&
        (probe.capacity & (probe.capacity - 1)) == 0) {
      void* map = reinterpret_cast<void*>(
          syscall(SYS_mmap, nullptr, runtime::ring_bytes(probe.capacity), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
      if (map != MAP_FAILED) {
        g_ring = static_cast<RingHeader*>(map);
        g_slots = runtime::ring_slots(g_ring);
        g_mask = probe.capacity - 1;
        g_owners = runtime::ring_owners(g_ring);
        g_owner_mask = 2 * probe.capacity - 1;
        g_timestamp_tsc = probe.timestamp_tsc == 1;
        g_pid = static_cast<int>(syscall(SYS_getpid));
        // A new image: note (pid, head) so tickets our pid held in a replaced image can be told apart.
        const uint32_t i = g_ring->exec_count.fetch_add(1, std::memory_order_relaxed);
        g_ring->exec_notices[i % runtime::kExecNotices].store(
            runtime::exec_notice(g_ring->head.load(std::memory_order_relaxed), g_pid), std::memory_order_release);
        const uint32_t detached = g_ring->detached.load(std::memory_order_relaxed);
        quiet = detached == runtime::kDetachedQuiet;
        next = detached == 0 && begin_image() ? kRecording : kOff;
        if (next == kRecording) stacks_attach();  // after the image's note: its modules belong to it
        if (g_ring->detached.load(std::memory_order_relaxed) == runtime::kDetachedQuiet) quiet = true;
      }
    }
    if (fd >= 0) syscall(SYS_close, fd);
    if (next != kRecording && !quiet) say("cannot attach to the recorder's ring; this process is not recorded");
  }
  if (next == kRecording) pthread_atfork(nullptr, nullptr, after_fork_in_child);
  g_state.store(next, std::memory_order_release);
  t_busy = was_busy;
}

namespace {

// The recorder is gone when its pid no longer names a live process. A pidfd also reports a zombie as exited.
bool recorder_alive(int pid) {
  const long pidfd = syscall(SYS_pidfd_open, pid, 0);
  if (pidfd < 0 && errno == ENOSYS) return syscall(SYS_kill, pid, 0) == 0 || errno != ESRCH;  // before Linux 5.3
  if (pidfd < 0) return errno != ESRCH;
  struct pollfd pfd = {static_cast<int>(pidfd), POLLIN, 0};
  const long ready = syscall(SYS_poll, &pfd, 1, 0);
  syscall(SYS_close, pidfd);
  return ready == 0;
}

void detach_dead_recorder() {
  g_ring->detached.store(1, std::memory_order_relaxed);
  g_state.store(kOff, std::memory_order_release);
  say("the recorder is gone; the program continues untracked");
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

bool wait_for_slot(uint64_t ticket) {
  RingHeader* h = g_ring;
  for (int i = 0; i < 256; ++i) {
    if (runtime::slot_free(h, ticket)) return true;
    cpu_relax();
  }
  for (;;) {
    h->waiters.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t v = h->wake_futex.load(std::memory_order_seq_cst);
    if (runtime::slot_free(h, ticket, std::memory_order_seq_cst)) {
      h->waiters.fetch_sub(1, std::memory_order_relaxed);
      return true;
    }
    // A shared (not PRIVATE) futex: the recorder is another process.
    struct timespec timeout = {0, 200 * 1000 * 1000};
    const long r = syscall(SYS_futex, &h->wake_futex, FUTEX_WAIT, v, &timeout, nullptr, 0);
    const int err = errno;
    h->waiters.fetch_sub(1, std::memory_order_relaxed);
    if (runtime::slot_free(h, ticket)) return true;
    if (h->detached.load(std::memory_order_relaxed)) {
      g_state.store(kOff, std::memory_order_release);
      return false;
    }
    if (r != 0 && err == ETIMEDOUT && !recorder_alive(h->recorder_pid)) {
      detach_dead_recorder();
      return false;
    }
  }
}

}  // namespace memtrack::preload
