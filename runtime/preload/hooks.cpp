// The interposed C ABI: each function calls the real one (resolve.h) and records one event for a
// successful call (ring_client.h), a free before the real call, an allocation after it. The table of calls
// and events is docs/RUNTIME.md, "Calls and events". Every function here may run in a signal handler. Each
// one is an entry (EntryScope, preload_internal.h): a call made inside another hooked call (an allocator's
// own mmap, libstdc++'s operator new calling malloc) goes straight to the real function.
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>

#include "patch/sites.h"
#include "python.h"
#include "resolve.h"
#include "ring_client.h"
#include "stacks.h"

namespace memtrack::preload {
namespace {

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
  // A nested call passes straight through, unless it moves a bootstrap block (the real allocator never saw it).
  const bool arena_block = p != nullptr && in_arena(p);
  if (in_entry() && !arena_block) return g_real.realloc(p, size);
  EntryScope scope;
  if (arena_block) {
    // Moving a bootstrap block to the real heap: the arena block was never an event, so this is an
    // allocation without an old address, like realloc(NULL, n).
    void* q = g_real.malloc(size);
    if (q != nullptr) {
      const size_t old = arena_block_size(p);
      memcpy(q, p, old < size ? old : size);
      const uint32_t stack = capture_stack();
      Ticket tk;
      if (begin_event(tk, true)) commit_event(tk, RingEventKind::Realloc, q, size, nullptr, false, stack);
    }
    return q;
  }
  if (p == nullptr) {
    // realloc(NULL, n) is an allocation: a Realloc event without old_addr (the format's Option is None).
    void* q = g_real.realloc(nullptr, size);
    if (q != nullptr) record(RingEventKind::Realloc, q, size, capture_stack());
    return q;
  }
  if (size == 0) {
    // glibc's realloc(p, 0) frees p and returns NULL: a Free, recorded before the block is released.
    // Another allocator may instead return a fresh minimal block: then that is an allocation too.
    record(RingEventKind::Free, p, 0);
    void* q = g_real.realloc(p, 0);
    if (q != nullptr) record(RingEventKind::Realloc, q, 0, capture_stack());
    return q;
  }
  // The ticket is taken before the real call releases the old block, and filled after it returns the new
  // one: an allocation elsewhere that reuses p gets a later ticket, a free of the new block too.
  // The stack is captured before the ticket: new nodes are noted in tickets before this event's.
  const uint32_t stack = capture_stack();
  Ticket tk;
  // The ticket is taken even while paused: the old block's release is an event whatever the pause (it may
  // have been allocated while recording); while paused, the slot then holds only that Free.
  const bool recording = begin_event(tk);
  void* q = g_real.realloc(p, size);
  if (recording) commit_realloc(tk, p, q, size, stack);
  return q;
}

}  // namespace
}  // namespace memtrack::preload

// -------------------------------------------------------------------------------------------------------------
// The interposed C ABI.

using namespace memtrack::preload;  // NOLINT: the functions below are global by definition

MEMTRACK_EXPORT void* malloc(size_t size) {
  if (!ensure_real()) return arena_alloc(size, 16);
  if (in_entry()) return g_real.malloc(size);
  EntryScope scope;
  void* p = g_real.malloc(size);
  if (p != nullptr) record(RingEventKind::Malloc, p, size, capture_stack());
  return p;
}

MEMTRACK_EXPORT void free(void* p) {
  if (p == nullptr || in_arena(p)) return;
  if (!ensure_real()) return;  // inside dlsym with a pointer it did not get from us: cannot happen
  if (in_entry()) return g_real.free(p);
  EntryScope scope;
  record(RingEventKind::Free, p, 0);
  g_real.free(p);
}

MEMTRACK_EXPORT void* calloc(size_t n, size_t m) {
  size_t total;
  const bool overflow = mul_overflows(n, m, &total);
  if (!ensure_real()) return overflow ? nullptr : arena_alloc(total, 16);
  if (in_entry()) return g_real.calloc(n, m);
  EntryScope scope;
  void* p = g_real.calloc(n, m);
  if (p != nullptr) record(RingEventKind::Calloc, p, total, capture_stack());
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
  if (in_entry()) return g_real.memalign(align, size);
  EntryScope scope;
  void* p = g_real.memalign(align, size);
  if (p != nullptr) record(RingEventKind::AlignedAlloc, p, size, capture_stack());
  return p;
}

MEMTRACK_EXPORT void* aligned_alloc(size_t align, size_t size) {
  if (!ensure_real()) return arena_alloc(size, align);
  if (in_entry()) return g_real.aligned_alloc(align, size);
  EntryScope scope;
  void* p = g_real.aligned_alloc(align, size);
  if (p != nullptr) record(RingEventKind::AlignedAlloc, p, size, capture_stack());
  return p;
}

MEMTRACK_EXPORT int posix_memalign(void** out, size_t align, size_t size) {
  if (!ensure_real()) {
    *out = arena_alloc(size, align);
    return *out != nullptr ? 0 : ENOMEM;
  }
  if (in_entry()) return g_real.posix_memalign(out, align, size);
  EntryScope scope;
  const int r = g_real.posix_memalign(out, align, size);
  if (r == 0) record(RingEventKind::AlignedAlloc, *out, size, capture_stack());
  return r;
}

MEMTRACK_EXPORT void* valloc(size_t size) {
  if (!ensure_real()) return arena_alloc(size, 4096);
  if (in_entry()) return g_real.valloc(size);
  EntryScope scope;
  void* p = g_real.valloc(size);
  if (p != nullptr) record(RingEventKind::AlignedAlloc, p, size, capture_stack());
  return p;
}

MEMTRACK_EXPORT void* pvalloc(size_t size) {
  if (!ensure_real()) return arena_alloc(size, 4096);
  if (in_entry()) return g_real.pvalloc(size);
  EntryScope scope;
  void* p = g_real.pvalloc(size);
  if (p != nullptr)
    record(RingEventKind::AlignedAlloc, p, size, capture_stack());  // the requested size, not the page-rounded one
  return p;
}

MEMTRACK_EXPORT void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (!ensure_real()) return reinterpret_cast<void*>(syscall(SYS_mmap, addr, len, prot, flags, fd, off));
  if (in_entry()) return g_real.mmap(addr, len, prot, flags, fd, off);
  EntryScope scope;
  void* p = g_real.mmap(addr, len, prot, flags, fd, off);
  if (p != MAP_FAILED) record(RingEventKind::Mmap, p, len, capture_stack());
  return p;
}

MEMTRACK_EXPORT void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off64_t off) {
  if (!ensure_real()) return reinterpret_cast<void*>(syscall(SYS_mmap, addr, len, prot, flags, fd, off));
  if (in_entry()) return g_real.mmap64(addr, len, prot, flags, fd, off);
  EntryScope scope;
  void* p = g_real.mmap64(addr, len, prot, flags, fd, off);
  if (p != MAP_FAILED) record(RingEventKind::Mmap, p, len, capture_stack());
  return p;
}

MEMTRACK_EXPORT int munmap(void* addr, size_t len) {
  if (!ensure_real()) return static_cast<int>(syscall(SYS_munmap, addr, len));
  if (in_entry()) return g_real.munmap(addr, len);
  EntryScope scope;
  if (munmap_is_event(reinterpret_cast<uintptr_t>(addr), len)) record(RingEventKind::Munmap, addr, len);
  return g_real.munmap(addr, len);
}

// Brk events: addr is the program break after the call, size the absolute change in bytes. Calls that do
// not move the break (sbrk(0), brk to the current break) are not events.
MEMTRACK_EXPORT int brk(void* addr) {
  if (!ensure_real()) return static_cast<int>(syscall(SYS_brk, addr) == reinterpret_cast<long>(addr) ? 0 : -1);
  if (in_entry()) return g_real.brk(addr);
  EntryScope scope;
  char* old = static_cast<char*>(g_real.sbrk(0));
  const int r = g_real.brk(addr);
  if (r == 0 && old != reinterpret_cast<char*>(-1) && addr != old) {
    const char* now = static_cast<const char*>(addr);
    record(RingEventKind::Brk, addr, static_cast<uint64_t>(now > old ? now - old : old - now), capture_stack());
  }
  return r;
}

MEMTRACK_EXPORT void* sbrk(intptr_t increment) {
  if (!ensure_real()) {
    errno = ENOMEM;
    return reinterpret_cast<void*>(-1);
  }
  if (in_entry()) return g_real.sbrk(increment);
  EntryScope scope;
  char* old = static_cast<char*>(g_real.sbrk(increment));
  if (old != reinterpret_cast<char*>(-1) && increment != 0) {
    const uint64_t change = increment > 0 ? static_cast<uint64_t>(increment) : static_cast<uint64_t>(-increment);
    record(RingEventKind::Brk, old + increment, change, capture_stack());
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
  if (r == 0) memtrack::preload::after_fork_in_child();
  return r;
}

// Attach as early as possible so the program's first allocations are recorded; calls made before this
// constructor runs (other libraries' constructors) attach lazily on their first event.
__attribute__((constructor)) static void memtrack_preload_init() {
  ensure_real();
  // Loaded by `memtrack attach` (attach.cpp): nothing to attach to yet; memtrack_attach_start does it.
  if (memtrack::preload::loaded_for_attach()) return;
  if (memtrack::preload::g_state.load(std::memory_order_acquire) == memtrack::preload::kUnattached)
    memtrack::preload::attach();
  // libunwind is not loaded here but at the program's first dlopen (stacks.h, stacks_load_fallback_at_dlopen).
  memtrack::preload::patch_new_images(false);  // allocators the PLT does not reach (patch/sites.h)
  memtrack::preload::python_attach();          // CPython's allocator domains (python.h)
}
