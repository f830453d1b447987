// C++ operator new/delete reach malloc/free inside libstdc++: each allocation must be exactly one event.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <new>
#include <vector>

struct Big {
  char bytes[1000133];
};

int main() {
  auto* a = new char[1000141];
  std::printf("new[] 1000141 %llu\n", static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(a)));
  delete[] a;
  auto b = std::make_unique<Big>();
  std::printf("new 1000133 %llu\n", static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(b.get())));
  b.reset();
  auto* c = new (std::align_val_t{512}) char[1000448];
  std::printf("new_aligned 1000448 %llu\n", static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(c)));
  ::operator delete[](c, std::align_val_t{512});
  std::vector<int> v;
  v.reserve(250039);  // 1000156 bytes
  std::printf("vector 1000156 %llu\n", static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(v.data())));
  return 0;
}
