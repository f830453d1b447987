#include "resolve.h"

#include <dlfcn.h>
#include <sched.h>

namespace memtrack::preload {

constinit RealFunctions g_real{};
constinit std::atomic<int> g_resolve_state{kUnresolved};
constinit MEMTRACK_TLS bool t_resolving = false;

namespace {

template <typename Fn>
void resolve_one(Fn& fn, const char* name) {
  fn = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

}  // namespace

void resolve_real() {
  int expected = kUnresolved;
  if (g_resolve_state.compare_exchange_strong(expected, kResolving, std::memory_order_acq_rel)) {
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
#ifdef MEMTRACK_PRELOAD_TEST_HOOKS
    bootstrap_test_hook();
#endif
    t_resolving = false;
    g_resolve_state.store(kResolved, std::memory_order_release);
    return;
  }
  // Another thread is resolving: wait for it (it never waits for us). Our own nested calls during
  // resolution never get here: they see t_resolving and use the arena.
  while (g_resolve_state.load(std::memory_order_acquire) != kResolved) sched_yield();
}

alignas(64) constinit char g_arena[kArenaBytes];

namespace {
constinit std::atomic<size_t> g_arena_used{0};
}  // namespace

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

size_t arena_bytes_used() { return g_arena_used.load(std::memory_order_relaxed); }

}  // namespace memtrack::preload
