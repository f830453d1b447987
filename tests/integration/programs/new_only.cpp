// An executable that defines operator new(size_t) and operator delete(void*) itself, without the nothrow
// twin, as gcc's cc1 does (it links libstdc++ statically): the preload cannot hook its operator new safely
// (runtime/preload/patch/sites.cpp), but the malloc it calls is recorded. It writes to its own stderr, which
// must be the same under memtrack as natively.
#include <cstdio>
#include <cstdlib>
#include <new>

void* operator new(std::size_t n) {
  if (void* p = std::malloc(n)) return p;
  throw std::bad_alloc();
}

void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

int main() {
  // volatile: the compiler may not elide a replaceable new/delete pair whose result escapes.
  char* volatile p = static_cast<char*>(::operator new(1000231));
  p[0] = 1;
  std::fprintf(stderr, "new_only: a line of the program's own\n");
  ::operator delete(p);
  return 0;
}
