#include "memtrack/heap_counter.h"

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MEMTRACK_HEAP_HOOKS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define MEMTRACK_HEAP_HOOKS 1
#endif
#endif

#ifdef MEMTRACK_HEAP_HOOKS
// Declared here rather than through <sanitizer/allocator_interface.h>, which gcc does not ship; both
// compiler-rt (clang) and libasan/libtsan (gcc) export them.
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*, std::size_t),
                                                         void (*free_hook)(const volatile void*));
extern "C" std::size_t __sanitizer_get_allocated_size(const volatile void* p);
#else
#include <malloc.h>
#endif

namespace {

// Plain globals with constant initialisation: malloc can run before any constructor.
std::atomic<bool> g_on{false};
std::atomic<std::int64_t> g_live{0};  // signed: see net_bytes in the header
std::atomic<std::int64_t> g_peak{0};
std::atomic<std::int64_t> g_allocs{0};
std::atomic<std::int64_t> g_total{0};

void count_alloc(std::size_t size) {
  if (!g_on.load(std::memory_order_relaxed)) return;
  const auto n = static_cast<std::int64_t>(size);
  const std::int64_t now = g_live.fetch_add(n, std::memory_order_relaxed) + n;
  std::int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  g_total.fetch_add(n, std::memory_order_relaxed);
}

void count_free(std::size_t size) {
  if (g_on.load(std::memory_order_relaxed)) g_live.fetch_sub(static_cast<std::int64_t>(size), std::memory_order_relaxed);
}

void reset() {
  g_live.store(0);
  g_peak.store(0);
  g_allocs.store(0);
  g_total.store(0);
}

}  // namespace

#ifdef MEMTRACK_HEAP_HOOKS

namespace {
void on_malloc(const volatile void*, std::size_t size) { count_alloc(size); }
void on_free(const volatile void* p) {
  if (p != nullptr) count_free(__sanitizer_get_allocated_size(p));
}
}  // namespace

namespace memtrack::heap_counter {
void start() {
  static const bool installed = __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free) != 0;
  (void)installed;
  reset();
  g_on.store(true);
}
}  // namespace memtrack::heap_counter

#else  // plain build: replace the allocator, forwarding to glibc's own entry points

extern "C" {
void* __libc_malloc(std::size_t size);
void __libc_free(void* p);
void* __libc_calloc(std::size_t n, std::size_t size);
void* __libc_realloc(void* p, std::size_t size);
void* __libc_memalign(std::size_t alignment, std::size_t size);
void* __libc_valloc(std::size_t size);
void* __libc_pvalloc(std::size_t size);
}

namespace {
// What a block takes. glibc's usable size of a block aligned to 2 MiB (memtrack's huge-page buffers,
// memtrack/codec/huge_pages.h, whole multiples of it) also holds the rest of the alignment gap glibc mapped
// around it, less than 2 MiB and never touched: counted without it. A plain malloc'd block of 2 MiB or more
// starts on a 2 MiB boundary only by chance (glibc's chunk header comes first in its own mapping); then it
// counts up to 2 MiB short, the same at its free, so the live count never drifts.
constexpr std::size_t kHugePage = std::size_t{2} << 20;
std::size_t block_bytes(void* p) {
  const std::size_t usable = malloc_usable_size(p);
  return reinterpret_cast<std::uintptr_t>(p) % kHugePage == 0 && usable >= kHugePage ? usable / kHugePage * kHugePage
                                                                                     : usable;
}
void* counted(void* p) {
  if (p != nullptr) count_alloc(block_bytes(p));
  return p;
}
}  // namespace

extern "C" {

void* malloc(std::size_t size) { return counted(__libc_malloc(size)); }
void free(void* p) {
  if (p == nullptr) return;
  count_free(block_bytes(p));
  __libc_free(p);
}
void* calloc(std::size_t n, std::size_t size) { return counted(__libc_calloc(n, size)); }
void* realloc(void* p, std::size_t size) {
  // Counted as a free of the old block and an allocation of the new one, which is what it may be.
  const std::size_t old_size = p != nullptr ? block_bytes(p) : 0;
  void* q = __libc_realloc(p, size);
  if (q == nullptr && size != 0) return nullptr;  // failed: the old block is untouched
  count_free(old_size);
  return counted(q);
}
// glibc's own reallocarray calls __libc_realloc directly, past the realloc above: defined here too.
void* reallocarray(void* p, std::size_t n, std::size_t size) {
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(p, bytes);
}
void* memalign(std::size_t alignment, std::size_t size) { return counted(__libc_memalign(alignment, size)); }
void* aligned_alloc(std::size_t alignment, std::size_t size) { return counted(__libc_memalign(alignment, size)); }
int posix_memalign(void** out, std::size_t alignment, std::size_t size) {
  if (alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr) return ENOMEM;
  *out = counted(p);
  return 0;
}
void* valloc(std::size_t size) { return counted(__libc_valloc(size)); }
void* pvalloc(std::size_t size) { return counted(__libc_pvalloc(size)); }

}  // extern "C"

namespace memtrack::heap_counter {
void start() {
  reset();
  g_on.store(true);
}
}  // namespace memtrack::heap_counter

#endif

namespace memtrack::heap_counter {
Counts stop() {
  g_on.store(false);
  return {g_peak.load(), g_live.load(), g_allocs.load(), g_total.load()};
}
}  // namespace memtrack::heap_counter
