// One workload for every allocator (built by tests/integration/CMakeLists.txt against glibc, jemalloc,
// mimalloc and tcmalloc, linked dynamically and, where Debian ships an archive, statically). Between two
// marker mappings (7 and 9 pages) it makes a known list of calls and prints, for each, the one event it
// must make: "ev KIND SIZE ADDR OLD" (OLD is - when the event has none), frees before the call, allocations
// after. A large block makes the allocator map memory of its own inside the region: none of that may show.
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <new>

#if defined(MT_JEMALLOC)
#include <jemalloc/jemalloc.h>
#elif defined(MT_MIMALLOC)
#include <mimalloc.h>
#elif defined(MT_TCMALLOC)
#include <gperftools/tcmalloc.h>
#endif

namespace {

unsigned long long u(const void* p) { return static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(p)); }

void* alloc_ev(const char* kind, size_t size, void* p) {
  printf("ev %s %zu %llu -\n", kind, size, u(p));
  return p;
}
void free_ev(void* p) { printf("ev Free 0 %llu -\n", u(p)); }
void realloc_ev(size_t size, void* p, void* old) { printf("ev Realloc %zu %llu %llu\n", size, u(p), u(old)); }

void* marker(size_t pages) {
  void* m = mmap(nullptr, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  printf("mark %zu %llu\n", pages * 4096, u(m));
  return m;
}

struct Big {
  char bytes[3333];
};
struct alignas(256) Aligned {
  char bytes[2048];
};

void* volatile sink;

}  // namespace

int main() {
  setvbuf(stdout, nullptr, _IOFBF, 1 << 16);
  printf("start\n");  // stdout's buffer before the region
  void* m7 = marker(7);

  // The C ABI.
  void* a = alloc_ev("Malloc", 1000, malloc(1000));
  void* b = alloc_ev("Calloc", 300, calloc(10, 30));
  void* c = realloc(a, 5000);
  realloc_ev(5000, c, a);
  void* d = alloc_ev("AlignedAlloc", 640, aligned_alloc(64, 640));
  void* e = nullptr;
  if (posix_memalign(&e, 128, 1280) == 0) alloc_ev("AlignedAlloc", 1280, e);
  void* big = alloc_ev("Malloc", 8u << 20, malloc(8u << 20));  // the allocator maps memory for it
  memset(big, 1, 8u << 20);
  free_ev(big);
  free(big);
  free_ev(e);
  free(e);
  free_ev(d);
  free(d);
  free_ev(c);
  free(c);
  free_ev(b);
  free(b);

  // The C++ operators.
  char* arr = new char[777];
  alloc_ev("Malloc", 777, arr);
  free_ev(arr);
  delete[] arr;
  Big* one = new Big;
  alloc_ev("Malloc", sizeof(Big), one);
  free_ev(one);
  delete one;  // sized delete
  Aligned* al = new Aligned;
  alloc_ev("AlignedAlloc", sizeof(Aligned), al);
  free_ev(al);
  delete al;  // sized aligned delete
  char* nt = new (std::nothrow) char[555];
  alloc_ev("Malloc", 555, nt);
  free_ev(nt);
  operator delete[](nt, std::nothrow);

  // The allocator's own API.
#if defined(MT_JEMALLOC)
  void* j = alloc_ev("Malloc", 3000, mallocx(3000, 0));
  void* ja = alloc_ev("AlignedAlloc", 4096, mallocx(4096, MALLOCX_ALIGN(256)));
  void* jz = alloc_ev("Calloc", 100, mallocx(100, MALLOCX_ZERO));
  void* j2 = rallocx(j, 6000, 0);
  realloc_ev(6000, j2, j);
  if (xallocx(j2, 6000, 0, 0) >= 6000) realloc_ev(6000, j2, j2);
  free_ev(j2);
  sdallocx(j2, 6000, 0);
  free_ev(ja);
  dallocx(ja, MALLOCX_ALIGN(256));
  free_ev(jz);
  dallocx(jz, 0);
#elif defined(MT_MIMALLOC)
  void* mm = alloc_ev("Malloc", 1111, mi_malloc(1111));
  void* mz = alloc_ev("Calloc", 222, mi_zalloc(222));
  void* mc = alloc_ev("Calloc", 99, mi_calloc(3, 33));
  void* m2 = mi_realloc(mm, 4444);
  realloc_ev(4444, m2, mm);
  void* ma = alloc_ev("AlignedAlloc", 500, mi_malloc_aligned(500, 64));
  char* ms = mi_strdup("hello");
  alloc_ev("Malloc", 6, ms);
  void* mn = alloc_ev("Malloc", 900, mi_new(900));
  for (void* p : {m2, mz, mc, ma, static_cast<void*>(ms), mn}) {
    free_ev(p);
    mi_free(p);
  }
#elif defined(MT_TCMALLOC)
  void* t = alloc_ev("Malloc", 1234, tc_malloc(1234));
  void* tcl = alloc_ev("Calloc", 120, tc_calloc(4, 30));
  void* t2 = tc_realloc(t, 4321);
  realloc_ev(4321, t2, t);
  void* tm = alloc_ev("AlignedAlloc", 640, tc_memalign(64, 640));
  void* tn = alloc_ev("Malloc", 300, tc_new(300));
  free_ev(tn);
  tc_delete(tn);
  free_ev(tm);
  tc_free(tm);
  free_ev(tcl);
  tc_free(tcl);
  free_ev(t2);
  tc_free(t2);
#endif

  void* m9 = marker(9);
  munmap(m7, 7 * 4096);
  munmap(m9, 9 * 4096);
  printf("end\n");
  return 0;
}
