#include "heap_counter.h"

#include <malloc.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>

// glibc's own allocator entry points: what malloc & co. would have called without this file.
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

std::atomic<bool> g_on{false};
std::atomic<std::int64_t> g_current{0};  // signed: see "not counted" in the header
std::atomic<std::int64_t> g_peak{0};
std::atomic<std::int64_t> g_allocs{0};
std::atomic<std::int64_t> g_total{0};

std::int64_t usable(void* p) { return static_cast<std::int64_t>(malloc_usable_size(p)); }

void raise_peak(std::int64_t now) {
  std::int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

void* counted(void* p) {
  if (p != nullptr && g_on.load(std::memory_order_relaxed)) {
    const std::int64_t size = usable(p);
    raise_peak(g_current.fetch_add(size, std::memory_order_relaxed) + size);
    g_allocs.fetch_add(1, std::memory_order_relaxed);
    g_total.fetch_add(size, std::memory_order_relaxed);
  }
  return p;
}

void uncount(void* p) {
  if (p != nullptr && g_on.load(std::memory_order_relaxed)) {
    g_current.fetch_sub(usable(p), std::memory_order_relaxed);
  }
}

}  // namespace

extern "C" {

void* malloc(std::size_t size) { return counted(__libc_malloc(size)); }
void free(void* p) {
  uncount(p);
  __libc_free(p);
}
void* calloc(std::size_t n, std::size_t size) { return counted(__libc_calloc(n, size)); }
void* realloc(void* p, std::size_t size) {
  // Counted as a free of the old block and an allocation of the new one, which is what it may be.
  const std::int64_t old_size = p != nullptr ? usable(p) : 0;
  void* q = __libc_realloc(p, size);
  if (q == nullptr && size != 0) return nullptr;  // failed: the old block is untouched
  if (g_on.load(std::memory_order_relaxed)) {
    g_current.fetch_sub(old_size, std::memory_order_relaxed);
    counted(q);
  }
  return q;
}
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

namespace memtrack::bench {

void HeapCounter::Start() {
  g_current.store(0);
  g_peak.store(0);
  g_allocs.store(0);
  g_total.store(0);
  g_on.store(true);
}

void HeapCounter::Stop(Result& result) {
  g_on.store(false);
  result.num_allocs = g_allocs.load();
  result.max_bytes_used = g_peak.load();
  result.total_allocated_bytes = g_total.load();
  result.net_heap_growth = g_current.load();
}

}  // namespace memtrack::bench
