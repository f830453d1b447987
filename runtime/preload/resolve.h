// The real functions behind the interposed ones, and the bootstrap arena that serves allocations made while
// they are being looked up (resolve.cpp).
//
// The real functions are resolved once, with dlsym(RTLD_NEXT), so an allocator loaded after us keeps working.
// dlsym may itself call malloc/calloc/free before any real function is known (glibc's does when a lookup
// fails: its error message); those calls are served from a static arena, are never events, and free/realloc
// recognise arena pointers.
#pragma once

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <atomic>

#include "preload_internal.h"

#pragma GCC visibility push(hidden)

namespace memtrack::preload {

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

extern RealFunctions g_real;  // valid once g_resolve_state is kResolved
enum ResolveState : int { kUnresolved = 0, kResolving = 1, kResolved = 2 };
extern std::atomic<int> g_resolve_state;
extern MEMTRACK_TLS bool t_resolving;  // this thread is inside resolve_real(), so inside dlsym

// Resolves every real function. The first thread to get here resolves; any other waits for it (the resolver
// never waits for anyone, so this cannot deadlock). Called through ensure_real().
void resolve_real();

// Returns true when g_real can be called: the real functions are resolved (resolving them first if no thread
// has). Returns false when the caller must serve itself without them, from the bootstrap arena (or a raw
// system call): this thread is itself inside dlsym, resolving them.
inline bool ensure_real() {
  if (g_resolve_state.load(std::memory_order_acquire) == kResolved) [[likely]]
    return true;
  if (t_resolving) return false;
  resolve_real();
  return true;
}

// The functions hooked besides the allocator's (the C++ operators, sigaction, the exec family, dlopen): each
// one looked up with dlsym(RTLD_NEXT) on its first use and cached in its own `slot` (zero-initialized), so
// only a program that calls it pays for the lookup. Returns nullptr when no library after this one defines
// it; that answer is cached too, until forget_absent(slot). dlsym's answer does not change, so threads that
// race only repeat the lookup.
inline constexpr uintptr_t kAbsentFn = 1;

inline void* next_fn(std::atomic<void*>& slot, const char* name) {
  void* f = slot.load(std::memory_order_acquire);
  if (f == nullptr) [[unlikely]] {
    ensure_real();  // what dlsym allocates goes to the real allocator
    f = dlsym(RTLD_NEXT, name);
    if (f == nullptr) f = reinterpret_cast<void*>(kAbsentFn);
    slot.store(f, std::memory_order_release);
  }
  return reinterpret_cast<uintptr_t>(f) == kAbsentFn ? nullptr : f;
}

template <typename Fn>
inline Fn next_fn(std::atomic<void*>& slot, const char* name) {
  return reinterpret_cast<Fn>(next_fn(slot, name));
}

// Lets next_fn look `slot` up again if it was absent (after a dlopen, which may have brought a definition).
inline void forget_absent(std::atomic<void*>& slot) {
  void* expected = reinterpret_cast<void*>(kAbsentFn);
  slot.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
}

// hooks_dlopen.cpp: the real dlopen, for memtrack's own loads (libunwind), which must not run the hook.
void* real_dlopen(const char* file, int mode);

// The bootstrap arena: a bump allocator for the few allocations dlsym makes. Never freed, never recorded.
inline constexpr size_t kArenaBytes = 64 * 1024;
extern char g_arena[kArenaBytes];

inline bool in_arena(const void* p) {
  const char* c = static_cast<const char*>(p);
  return c >= g_arena && c < g_arena + kArenaBytes;
}

// A zeroed block of `size` bytes aligned to `align` (at least 16), or nullptr when the arena is full. Each
// block is preceded by 16 bytes holding its size, so realloc can copy out of it.
void* arena_alloc(size_t size, size_t align);

inline size_t arena_block_size(const void* p) {
  size_t size;
  memcpy(&size, static_cast<const char*>(p) - 16, sizeof size);
  return size;
}

size_t arena_bytes_used();

#ifdef MEMTRACK_PRELOAD_TEST_HOOKS
// test_hooks.cpp: runs at the end of resolve_real(), while this thread still counts as resolving.
void bootstrap_test_hook();
#endif

}  // namespace memtrack::preload

#pragma GCC visibility pop
