// C++ call chains for tests/integration/stacks_test.cpp: a namespaced function, a template, and an inlined
// function whose file:line the Symbols record must carry.
#include <cstdlib>
#include <vector>

#define KEEP(p) __asm__ volatile("" : : "r"(p) : "memory")

namespace shapes {

template <typename T>
struct Box {
  __attribute__((noinline)) static T* make(std::size_t n) {
    T* p = new T[n];
    KEEP(p);
    return p;
  }
};

// Always inlined into its caller: the stack shows it as an inlined frame at this line.
__attribute__((always_inline)) inline void* inlined_alloc(std::size_t n) {
  void* p = std::malloc(n);  // INLINED_LINE
  KEEP(p);
  return p;
}

__attribute__((noinline)) void* holder(std::size_t n) {
  void* p = inlined_alloc(n);
  KEEP(p);
  return p;
}

}  // namespace shapes

int main() {
  int* a = shapes::Box<int>::make(2001);  // operator new[] of 8004 bytes
  void* b = shapes::holder(2002);
  delete[] a;
  std::free(b);
  return 0;
}
