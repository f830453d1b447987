// An executable that defines operator new(size_t) without its nothrow twin and serves it from a pool of its
// own, calling no malloc at all: the preload cannot hook its operator new safely and nothing it calls is
// hooked, so its allocations are lost, and the recording's summary must say so (runtime/preload/patch/
// sites.cpp). It writes to its own stderr, which must be the same under memtrack as natively.
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <new>

namespace {
alignas(std::max_align_t) char g_pool[1 << 21];
std::size_t g_used = 0;
}  // namespace

void* operator new(std::size_t n) {
  n = (n + alignof(std::max_align_t) - 1) & ~(alignof(std::max_align_t) - 1);
  if (n > sizeof g_pool - g_used) std::abort();
  void* p = g_pool + g_used;
  g_used += n;
  return p;
}

void operator delete(void*) noexcept {}
void operator delete(void*, std::size_t) noexcept {}

int main() {
  // volatile: the compiler may not elide a replaceable new/delete pair whose result escapes.
  char* volatile p = static_cast<char*>(::operator new(1000231));
  p[0] = 1;
  std::fprintf(stderr, "new_own: a line of the program's own\n");
  ::operator delete(p);
  return 0;
}
