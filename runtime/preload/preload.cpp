// libmemtrack-preload.so: interposes the allocation and mapping functions of a tracked program and writes
// one event per successful call into the recorder's shared ring (memtrack/runtime/ring.h).
//
// Rules this file keeps (DESIGN.md section 7):
// - It links only libc, libdl and pthread and uses no C++ runtime: no exceptions, no RTTI, no operator new,
//   no static constructors with side effects beyond the one below. Everything is raw syscalls or libc.
// - Causal order: a free is recorded before the real free, an allocation after the real call returns, and a
//   realloc takes its ticket before the real call (the old block is released inside it) and fills the slot
//   after. Ticket order is the artifact order (see ring.h for why it is causal).
// - Reentrancy: `t_busy` is set while this thread attaches to the recorder; allocations made meanwhile (by
//   pthread_atfork) go straight to the real allocator, unrecorded. A signal handler that interrupts this
//   thread while it holds an unfilled ticket (see begin_event) records normally, within a bound that
//   rules out deadlock.
// - The dlsym bootstrap: dlsym(RTLD_NEXT) may call calloc/malloc before the real functions are known; those
//   calls are served from a static arena, and free/realloc recognise arena pointers.
// - Lossless: a full ring makes the producer wait. If the recorder is gone, the process stops recording
//   after one warning and never hangs.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>

#include "memtrack/runtime/ring.h"

#define MEMTRACK_EXPORT extern "C" __attribute__((visibility("default")))
#define MEMTRACK_TLS __thread __attribute__((tls_model("initial-exec")))

namespace {

using memtrack::codec::Event;
using memtrack::codec::EventKind;
using memtrack::runtime::RingHeader;
using memtrack::runtime::RingSlot;

// ---------------------------------------------------------------------------------------------------------
// Real functions, resolved once with dlsym(RTLD_NEXT) so another allocator loaded after us keeps working.

struct RealFunctions {
  void* (*malloc)(size_t);
  void (*free)(void*);
  void* (*calloc)(size_t, size_t);
  void* (*realloc)(void*, size_t);
  void* (*memalign)(size_t, size_t);
  void* (*aligned_alloc)(size_t, size_t);
  int (*posix_memalign)(void**, size_t, size_t);
  void* (*valloc)(size_t);
  void* (*pvalloc)(size_t);
  void* (*mmap)(void*, size_t, int, int, int, off_t);
  void* (*mmap64)(void*, size_t, int, int, int, off64_t);
  int (*munmap)(void*, size_t);
  int (*brk)(void*);
  void* (*sbrk)(intptr_t);
  pid_t (*fork_)(void);  // glibc's _Fork: does not run atfork handlers, so we refresh the pid ourselves
};

RealFunctions g_real;
std::atomic<int> g_resolve_state{0};  // 0 unresolved, 1 resolving, 2 resolved
MEMTRACK_TLS bool t_resolving = false;

void bootstrap_test_hook();  // below, with the arena

template <typename Fn>
void resolve_one(Fn& slot, const char* name) {
  slot = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

void resolve_real() {
  int expected = 0;
  if (g_resolve_state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    t_resolving = true;
    resolve_one(g_real.malloc, "malloc");
    resolve_one(g_real.free, "free");
    resolve_one(g_real.calloc, "calloc");
    resolve_one(g_real.realloc, "realloc");
    resolve_one(g_real.memalign, "memalign");
    resolve_one(g_real.aligned_alloc, "aligned_alloc");
    resolve_one(g_real.posix_memalign, "posix_memalign");
    resolve_one(g_real.valloc, "valloc");
    resolve_one(g_real.pvalloc, "pvalloc");
    resolve_one(g_real.mmap, "mmap");
    resolve_one(g_real.mmap64, "mmap64");
    resolve_one(g_real.munmap, "munmap");
    resolve_one(g_real.brk, "brk");
    resolve_one(g_real.sbrk, "sbrk");
    resolve_one(g_real.fork_, "_Fork");
    bootstrap_test_hook();
    t_resolving = false;
    g_resolve_state.store(2, std::memory_order_release);
    return;
  }
  // Another thread is resolving: wait for it (it never waits for us). Our own nested calls during
  // resolution never get here: they see t_resolving and use the arena.
  while (g_resolve_state.load(std::memory_order_acquire) != 2) sched_yield();
}

// True when the caller must serve itself from the bootstrap arena (we are inside dlsym).
inline bool ensure_real() {
  if (g_resolve_state.load(std::memory_order_acquire) == 2) [[likely]]
    return true;
  if (t_resolving) return false;
  resolve_real();
  return true;
}

// ---------------------------------------------------------------------------------------------------------
// Bootstrap arena: a bump allocator for the few allocations dlsym makes. Never freed, never recorded.

constexpr size_t kArenaBytes = 64 * 1024;
alignas(64) char g_arena[kArenaBytes];
std::atomic<size_t> g_arena_used{0};

inline bool in_arena(const void* p) {
  const char* c = static_cast<const char*>(p);
  return c >= g_arena && c < g_arena + kArenaBytes;
}

// Each block is preceded by 16 bytes holding its size, so realloc can copy out of it.
void* arena_alloc(size_t size, size_t align) {
  if (align < 16) align = 16;
  size_t used = g_arena_used.load(std::memory_order_relaxed);
  for (;;) {
    size_t start = (used + 16 + align - 1) & ~(align - 1);
    if (start + size > kArenaBytes || start + size < start) return nullptr;
    if (g_arena_used.compare_exchange_weak(used, start + size, std::memory_order_relaxed)) {
      memcpy(g_arena + start - 16, &size, sizeof size);
      return g_arena + start;  // static storage is zeroed and never reused: calloc needs nothing more
    }
  }
}

inline size_t arena_block_size(const void* p) {
  size_t size;
  memcpy(&size, static_cast<const char*>(p) - 16, sizeof size);
  return size;
}

void write_stderr(const char* msg);

// Test hook (MEMTRACK_TEST_DLSYM_MISS=1): glibc 2.36's dlsym allocates nothing when every symbol is found,
// so the arena above would go unexercised. A failed lookup makes dlsym allocate its error message (and free
// it on the next call) while we are still resolving, which is the case the arena exists for; the arena's
// use is then reported on stderr for the integration test to check. getenv does not allocate.
void bootstrap_test_hook() {
  const char* v = getenv("MEMTRACK_TEST_DLSYM_MISS");
  if (v == nullptr || *v != '1') return;
  (void)dlsym(RTLD_NEXT, "memtrack_test_no_such_symbol");
  (void)dlsym(RTLD_NEXT, "malloc");  // a successful call after a failed one releases the error state
  char digits[24];
  size_t n = g_arena_used.load(std::memory_order_relaxed);
  int i = sizeof digits - 1;
  digits[i] = '\0';
  do {
    digits[--i] = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n != 0 && i > 0);
  write_stderr("memtrack: bootstrap arena bytes used: ");
  write_stderr(digits + i);
  write_stderr("\n");
}

// ---------------------------------------------------------------------------------------------------------
// Process state and the connection to the recorder.

enum State : int { kUnattached = 0, kAttaching = 1, kRecording = 2, kOff = 3 };

std::atomic<int> g_state{kUnattached};
RingHeader* g_ring = nullptr;
RingSlot* g_slots = nullptr;
uint64_t g_mask = 0;
std::atomic<uint64_t>* g_owners = nullptr;
uint64_t g_owner_mask = 0;
bool g_timestamp_tsc = false;
int g_pid = 0;  // refreshed in the child after fork/_Fork

MEMTRACK_TLS bool t_busy = false;  // the reentrancy guard while attaching
constexpr uint64_t kNoTicket = ~uint64_t{0};
// The oldest ticket this thread took and has not filled yet: set between begin_event and commit, so a
// signal handler that allocates on this thread meanwhile knows an outer event is pending.
MEMTRACK_TLS uint64_t t_pending = kNoTicket;
MEMTRACK_TLS uint64_t t_last_ticket = 0;  // tickets only grow, so this bounds the next one from below
MEMTRACK_TLS int t_tid = 0;               // cached gettid(); reset in the child after fork

void write_stderr(const char* msg) {
  // No stdio: it allocates and takes locks.
  (void)!syscall(SYS_write, 2, msg, strlen(msg));
}

void after_fork_in_child() {
  g_pid = static_cast<int>(syscall(SYS_getpid));
  t_tid = 0;  // only the forking thread survives, and its tid changed
  t_pending = kNoTicket;
}

// Maps the ring named by MEMTRACK_RING. Runs once per process image (a forked child inherits the mapping;
// exec starts over and attaches again, which is how tracking continues across exec).
void attach() {
  int expected = kUnattached;
  if (!g_state.compare_exchange_strong(expected, kAttaching, std::memory_order_acq_rel)) {
    while (g_state.load(std::memory_order_acquire) == kAttaching) sched_yield();
    return;
  }
  const bool was_busy = t_busy;
  t_busy = true;  // anything allocated while attaching (pthread_atfork's list) is not ours to record
  int next = kOff;
  const char* path = getenv(memtrack::runtime::kEnvRing);
  if (path == nullptr || *path == '\0') {
    write_stderr("memtrack: MEMTRACK_RING is not set; this process is not recorded (run it under 'memtrack record')\n");
  } else {
    const int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CLOEXEC));
    RingHeader probe;
    if (fd >= 0 && syscall(SYS_pread64, fd, &probe, sizeof probe, 0) == static_cast<long>(sizeof probe) &&
        probe.magic == memtrack::runtime::kRingMagic && probe.version == memtrack::runtime::kRingVersion &&
        probe.capacity != 0 && (probe.capacity & (probe.capacity - 1)) == 0) {
      void* map = reinterpret_cast<void*>(syscall(SYS_mmap, nullptr, memtrack::runtime::ring_bytes(probe.capacity),
                                                  PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
      if (map != MAP_FAILED) {
        g_ring = static_cast<RingHeader*>(map);
        g_slots = memtrack::runtime::ring_slots(g_ring);
        g_mask = probe.capacity - 1;
        g_owners = memtrack::runtime::ring_owners(g_ring);
        g_owner_mask = 2 * probe.capacity - 1;
        g_timestamp_tsc = probe.timestamp_tsc == 1;
        g_pid = static_cast<int>(syscall(SYS_getpid));
        // A new image: note (pid, head) so tickets our pid held in a replaced image can be told apart.
        const uint32_t i = g_ring->exec_count.fetch_add(1, std::memory_order_relaxed);
        g_ring->exec_notices[i % memtrack::runtime::kExecNotices].store(
            memtrack::runtime::exec_notice(g_ring->head.load(std::memory_order_relaxed), g_pid),
            std::memory_order_release);
        next = g_ring->detached.load(std::memory_order_relaxed) ? kOff : kRecording;
      }
    }
    if (fd >= 0) syscall(SYS_close, fd);
    if (next != kRecording)
      write_stderr("memtrack: cannot attach to the recorder's ring; this process is not recorded\n");
  }
  if (next == kRecording) pthread_atfork(nullptr, nullptr, after_fork_in_child);
  g_state.store(next, std::memory_order_release);
  t_busy = was_busy;
}

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
  write_stderr("memtrack: the recorder is gone; the program continues untracked\n");
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Waits until the slot of ticket `t` is free. Spins briefly (the recorder usually frees slots within
// microseconds), then sleeps on a futex the recorder bumps after freeing slots. Returns false when the
// process must stop recording (recorder gone).
bool wait_for_slot(RingSlot* slot, uint64_t t) {
  for (int i = 0; i < 256; ++i) {
    if (slot->seq.load(std::memory_order_acquire) == t) return true;
    cpu_relax();
  }
  RingHeader* h = g_ring;
  for (;;) {
    h->waiters.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t v = h->wake_futex.load(std::memory_order_seq_cst);
    if (slot->seq.load(std::memory_order_seq_cst) == t) {
      h->waiters.fetch_sub(1, std::memory_order_relaxed);
      return true;
    }
    // A shared (not PRIVATE) futex: the recorder is another process.
    struct timespec timeout = {0, 200 * 1000 * 1000};
    const long r = syscall(SYS_futex, &h->wake_futex, FUTEX_WAIT, v, &timeout, nullptr, 0);
    const int err = errno;
    h->waiters.fetch_sub(1, std::memory_order_relaxed);
    if (slot->seq.load(std::memory_order_acquire) == t) return true;
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

// The event's time: the raw TSC when the recorder converts it (ring.h, timestamp_tsc), else CLOCK_MONOTONIC.
inline uint64_t timestamp_now() {
#if defined(__x86_64__)
  if (g_timestamp_tsc) return __builtin_ia32_rdtsc();
#endif
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

struct Ticket {
  RingSlot* slot;
  uint64_t t;
  uint64_t timestamp;
  uint64_t outer;  // t_pending when this event began (kNoTicket unless we interrupted our own thread)
};

// Takes the next ticket and waits for its slot.
//
// Reentrancy from signal handlers: if this thread already holds an unfilled ticket `outer` (the handler
// interrupted an event between begin and commit, possibly while it waited for a slot or sat in the real
// realloc), the recorder cannot read past `outer` until the handler returns. A nested ticket t2 can
// still get its slot iff t2 < outer + capacity (its slot's previous lap, t2 - capacity, is before
// `outer`). Every thread holds at most one unfilled ticket per nesting level while it waits, so tickets run
// at most a few per thread past the last one the recorder can reach; taking a nested ticket only while
// head - outer < capacity / 2 keeps t2 < outer + capacity with any realistic thread count. Otherwise the
// nested event is passed through unrecorded (it is not lost silently: it never entered the stream).
inline bool begin_event(Ticket& tk) {
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
  tk.outer = t_pending;
  if (tk.outer != kNoTicket && g_ring->head.load(std::memory_order_relaxed) - tk.outer >= (g_mask + 1) / 2) [[unlikely]]
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
  const uint64_t owner = memtrack::runtime::slot_owner(tk.t, t_tid);
  tk.slot = &g_slots[tk.t & g_mask];
  tk.timestamp = timestamp_now();
  if (tk.slot->seq.load(std::memory_order_acquire) != tk.t) [[unlikely]] {
    // The recorder is behind: sign the owners array, where it looks while we wait (ring.h).
    g_owners[tk.t & g_owner_mask].store(owner, std::memory_order_release);
    if (!wait_for_slot(tk.slot, tk.t)) {
      t_pending = tk.outer;
      return false;
    }
  }
  tk.slot->owner.store(owner, std::memory_order_release);
  return true;
}

inline void commit_event(Ticket& tk, EventKind kind, const void* addr, uint64_t size, const void* old_addr = nullptr,
                         bool has_old = false) {
  Event& e = tk.slot->event;
  e.timestamp = tk.timestamp;
  e.addr = reinterpret_cast<uint64_t>(addr);
  e.size = size;
  e.old_addr = has_old ? reinterpret_cast<uint64_t>(old_addr) : 0;
  e.pid = g_pid;
  e.tid = t_tid;
  e.kind = kind;
  e.flags = has_old ? memtrack::codec::kFlagHasOldAddr : 0;
  memset(e.reserved, 0, sizeof e.reserved);
  tk.slot->seq.store(tk.t + 1, std::memory_order_release);
  t_pending = tk.outer;
}

// A ticket taken for a call that then failed: the slot is committed empty so the recorder moves past it.
inline void commit_nothing(Ticket& tk) {
  tk.slot->event.kind = static_cast<EventKind>(memtrack::runtime::kNoEventKind);
  tk.slot->seq.store(tk.t + 1, std::memory_order_release);
  t_pending = tk.outer;
}

inline void record(EventKind kind, const void* addr, uint64_t size) {
  Ticket tk;
  if (begin_event(tk)) commit_event(tk, kind, addr, size);
}

inline bool mul_overflows(size_t a, size_t b, size_t* out) { return __builtin_mul_overflow(a, b, out); }

void* realloc_impl(void* p, size_t size) {
  if (!ensure_real()) {
    void* q = arena_alloc(size, 16);
    if (q != nullptr && p != nullptr) {
      const size_t old = arena_block_size(p);
      memcpy(q, p, old < size ? old : size);
    }
    return q;
  }
  if (p != nullptr && in_arena(p)) {
    // Moving a bootstrap block to the real heap: the arena block was never an event, so this is an
    // allocation without an old address, like realloc(NULL, n).
    void* q = g_real.malloc(size);
    if (q != nullptr) {
      const size_t old = arena_block_size(p);
      memcpy(q, p, old < size ? old : size);
      Ticket tk;
      if (begin_event(tk)) commit_event(tk, EventKind::Realloc, q, size);
    }
    return q;
  }
  if (p == nullptr) {
    // realloc(NULL, n) is an allocation: a Realloc event without old_addr (the format's Option is None).
    void* q = g_real.realloc(nullptr, size);
    if (q != nullptr) record(EventKind::Realloc, q, size);
    return q;
  }
  if (size == 0) {
    // glibc's realloc(p, 0) frees p and returns NULL: a Free, recorded before the block is released.
    // Another allocator may instead return a fresh minimal block: then that is an allocation too.
    record(EventKind::Free, p, 0);
    void* q = g_real.realloc(p, 0);
    if (q != nullptr) record(EventKind::Realloc, q, 0);
    return q;
  }
  // The ticket is taken before the real call releases the old block, and filled after it returns the new
  // one: an allocation elsewhere that reuses p gets a later ticket, a free of the new block too.
  Ticket tk;
  const bool recording = begin_event(tk);
  void* q = g_real.realloc(p, size);
  if (recording) {
    if (q != nullptr)
      commit_event(tk, EventKind::Realloc, q, size, p, true);
    else
      commit_nothing(tk);
  }
  return q;
}

}  // namespace

// -------------------------------------------------------------------------------------------------------------
// The interposed C ABI.

MEMTRACK_EXPORT void* malloc(size_t size) {
  if (!ensure_real()) return arena_alloc(size, 16);
  void* p = g_real.malloc(size);
  if (p != nullptr) record(EventKind::Malloc, p, size);
  return p;
}

MEMTRACK_EXPORT void free(void* p) {
  if (p == nullptr || in_arena(p)) return;
  if (!ensure_real()) return;  // inside dlsym with a pointer it did not get from us: cannot happen
  record(EventKind::Free, p, 0);
  g_real.free(p);
}

MEMTRACK_EXPORT void* calloc(size_t n, size_t m) {
  size_t total;
  const bool overflow = mul_overflows(n, m, &total);
  if (!ensure_real()) return overflow ? nullptr : arena_alloc(total, 16);
  void* p = g_real.calloc(n, m);
  if (p != nullptr) record(EventKind::Calloc, p, total);
  return p;
}

MEMTRACK_EXPORT void* realloc(void* p, size_t size) { return realloc_impl(p, size); }

MEMTRACK_EXPORT void* reallocarray(void* p, size_t n, size_t m) {
  size_t total;
  if (mul_overflows(n, m, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc_impl(p, total);
}

MEMTRACK_EXPORT void* memalign(size_t align, size_t size) {
  if (!ensure_real()) return arena_alloc(size, align);
  void* p = g_real.memalign(align, size);
  if (p != nullptr) record(EventKind::AlignedAlloc, p, size);
  return p;
}

MEMTRACK_EXPORT void* aligned_alloc(size_t align, size_t size) {
  if (!ensure_real()) return arena_alloc(size, align);
  void* p = g_real.aligned_alloc(align, size);
  if (p != nullptr) record(EventKind::AlignedAlloc, p, size);
  return p;
}

MEMTRACK_EXPORT int posix_memalign(void** out, size_t align, size_t size) {
  if (!ensure_real()) {
    *out = arena_alloc(size, align);
    return *out != nullptr ? 0 : ENOMEM;
  }
  const int r = g_real.posix_memalign(out, align, size);
  if (r == 0) record(EventKind::AlignedAlloc, *out, size);
  return r;
}

MEMTRACK_EXPORT void* valloc(size_t size) {
  if (!ensure_real()) return arena_alloc(size, 4096);
  void* p = g_real.valloc(size);
  if (p != nullptr) record(EventKind::AlignedAlloc, p, size);
  return p;
}

MEMTRACK_EXPORT void* pvalloc(size_t size) {
  if (!ensure_real()) return arena_alloc(size, 4096);
  void* p = g_real.pvalloc(size);
  if (p != nullptr) record(EventKind::AlignedAlloc, p, size);  // the requested size, not the page-rounded one
  return p;
}

MEMTRACK_EXPORT void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (!ensure_real()) return reinterpret_cast<void*>(syscall(SYS_mmap, addr, len, prot, flags, fd, off));
  void* p = g_real.mmap(addr, len, prot, flags, fd, off);
  if (p != MAP_FAILED) record(EventKind::Mmap, p, len);
  return p;
}

MEMTRACK_EXPORT void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off64_t off) {
  if (!ensure_real()) return reinterpret_cast<void*>(syscall(SYS_mmap, addr, len, prot, flags, fd, off));
  void* p = g_real.mmap64(addr, len, prot, flags, fd, off);
  if (p != MAP_FAILED) record(EventKind::Mmap, p, len);
  return p;
}

MEMTRACK_EXPORT int munmap(void* addr, size_t len) {
  if (!ensure_real()) return static_cast<int>(syscall(SYS_munmap, addr, len));
  // Recorded before the real call (the range may be mapped again by another thread right after). The only
  // ways munmap fails are arguments checked here, so no event is written for a call that will fail.
  if (len != 0 && (reinterpret_cast<uintptr_t>(addr) & 4095u) == 0) record(EventKind::Munmap, addr, len);
  return g_real.munmap(addr, len);
}

// Brk events: addr is the program break after the call, size the absolute change in bytes. Calls that do
// not move the break (sbrk(0), brk to the current break) are not events.
MEMTRACK_EXPORT int brk(void* addr) {
  if (!ensure_real()) return static_cast<int>(syscall(SYS_brk, addr) == reinterpret_cast<long>(addr) ? 0 : -1);
  char* old = static_cast<char*>(g_real.sbrk(0));
  const int r = g_real.brk(addr);
  if (r == 0 && old != reinterpret_cast<char*>(-1) && addr != old) {
    const char* now = static_cast<const char*>(addr);
    record(EventKind::Brk, addr, static_cast<uint64_t>(now > old ? now - old : old - now));
  }
  return r;
}

MEMTRACK_EXPORT void* sbrk(intptr_t increment) {
  if (!ensure_real()) {
    errno = ENOMEM;
    return reinterpret_cast<void*>(-1);
  }
  char* old = static_cast<char*>(g_real.sbrk(increment));
  if (old != reinterpret_cast<char*>(-1) && increment != 0) {
    const uint64_t change = increment > 0 ? static_cast<uint64_t>(increment) : static_cast<uint64_t>(-increment);
    record(EventKind::Brk, old + increment, change);
  }
  return old;
}

// glibc's _Fork skips atfork handlers, so the child's pid is refreshed here; fork() is covered by the
// pthread_atfork handler. vfork and posix_spawn children share our memory and only exec or _exit: they make
// no events (the exec'd image attaches on its own).
MEMTRACK_EXPORT pid_t _Fork(void) {
  if (!ensure_real() || g_real.fork_ == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  const pid_t r = g_real.fork_();
  if (r == 0) after_fork_in_child();
  return r;
}

// Attach as early as possible so the program's first allocations are recorded; calls made before this
// constructor runs (other libraries' constructors) attach lazily on their first event.
__attribute__((constructor)) static void memtrack_preload_init() {
  ensure_real();
  if (g_state.load(std::memory_order_acquire) == kUnattached) attach();
}
