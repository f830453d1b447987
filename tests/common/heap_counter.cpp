#include "common/heap_counter.h"

#include <atomic>
#include <cerrno>
#include <cstddef>

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
std::atomic<bool> g_active{false};
std::atomic<std::int64_t> g_live{0};
std::atomic<std::int64_t> g_peak{0};

void count_alloc(std::size_t size) {
  if (!g_active.load(std::memory_order_relaxed)) return;
  const auto n = static_cast<std::int64_t>(size);
  const std::int64_t now = g_live.fetch_add(n) + n;
  std::int64_t old = g_peak.load();
  while (now > old && !g_peak.compare_exchange_weak(old, now)) {
  }
}

void count_free(std::size_t size) {
  if (g_active.load(std::memory_order_relaxed)) g_live.fetch_sub(static_cast<std::int64_t>(size));
}

}  // namespace

#ifdef MEMTRACK_HEAP_HOOKS

namespace {
void on_malloc(const volatile void*, std::size_t size) { count_alloc(size); }
void on_free(const volatile void* p) {
  if (p != nullptr) count_free(__sanitizer_get_allocated_size(p));
}
}  // namespace

namespace memtrack::testing {
void heap_measure_start() {
  static const bool installed = __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free) != 0;
  (void)installed;
  g_live = 0;
  g_peak = 0;
  g_active = true;
}
}  // namespace memtrack::testing

#else  // plain build: replace the allocator, forwarding to glibc's own entry points

extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void __libc_free(void*);

void* malloc(std::size_t size) {
  void* p = __libc_malloc(size);
  if (p != nullptr) count_alloc(malloc_usable_size(p));
  return p;
}
void* calloc(std::size_t n, std::size_t size) {
  void* p = __libc_calloc(n, size);
  if (p != nullptr) count_alloc(malloc_usable_size(p));
  return p;
}
void* realloc(void* old, std::size_t size) {
  const std::size_t old_size = old != nullptr ? malloc_usable_size(old) : 0;
  void* p = __libc_realloc(old, size);
  if (p != nullptr || size == 0) count_free(old_size);
  if (p != nullptr) count_alloc(malloc_usable_size(p));
  return p;
}
void free(void* p) {
  if (p == nullptr) return;
  count_free(malloc_usable_size(p));
  __libc_free(p);
}
void* memalign(std::size_t alignment, std::size_t size) {
  void* p = __libc_memalign(alignment, size);
  if (p != nullptr) count_alloc(malloc_usable_size(p));
  return p;
}
void* aligned_alloc(std::size_t alignment, std::size_t size) { return memalign(alignment, size); }
int posix_memalign(void** out, std::size_t alignment, std::size_t size) {
  if (alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* p = memalign(alignment, size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
void* valloc(std::size_t size) { return memalign(4096, size); }
void* pvalloc(std::size_t size) { return memalign(4096, (size + 4095) & ~std::size_t{4095}); }
}  // extern "C"

namespace memtrack::testing {
void heap_measure_start() {
  g_live = 0;
  g_peak = 0;
  g_active = true;
}
}  // namespace memtrack::testing

#endif

namespace memtrack::testing {
std::int64_t heap_measure_stop() {
  g_active = false;
  return g_peak.load();
}
}  // namespace memtrack::testing
