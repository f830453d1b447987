// An allocator for the large flat tables the analyses index at random (AddressMap's slots): from a size of
// kHugeThreshold on, it maps the memory itself, aligned to 2 MiB, and asks the kernel for transparent huge
// pages (madvise MADV_HUGEPAGE, which Debian's default "madvise" THP mode honours) before the first touch.
// A table of millions of live blocks is tens of MiB: with 4 KiB pages nearly every lookup missed the TLB
// as well as the cache (docs/RUNTIME.md, "Cost": the recorder's live-heap books on python3). Below the
// threshold, and where the kernel refuses huge pages, it is plain malloc / anonymous pages.
// Stateless: any two instances are equal, so containers copy and move as with std::allocator.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace memtrack::analysis {

inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
inline constexpr std::size_t kHugeThreshold = std::size_t{4} << 20;

template <typename T>
class HugePageAllocator {
 public:
  using value_type = T;

  HugePageAllocator() = default;
  template <typename U>
  explicit HugePageAllocator(const HugePageAllocator<U>& /*other*/) noexcept {}

  T* allocate(std::size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kHugeThreshold) {
      void* p = std::malloc(bytes);
      if (p == nullptr) throw std::bad_alloc();
      return static_cast<T*>(p);
    }
    // Map one huge page more than needed and trim both ends, so the table starts on a 2 MiB boundary.
    const std::size_t mapped = rounded(bytes) + kHugePageBytes;
    void* raw = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const auto start = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t aligned = (start + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
    if (aligned > start) ::munmap(raw, aligned - start);
    const std::uintptr_t end = start + mapped, used_end = aligned + rounded(bytes);
    if (end > used_end) ::munmap(reinterpret_cast<void*>(used_end), end - used_end);
    ::madvise(reinterpret_cast<void*>(aligned), rounded(bytes), MADV_HUGEPAGE);  // advice: failure is harmless
    return reinterpret_cast<T*>(aligned);
  }

  void deallocate(T* p, std::size_t n) noexcept {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kHugeThreshold)
      std::free(p);
    else
      ::munmap(p, rounded(bytes));
  }

  template <typename U>
  bool operator==(const HugePageAllocator<U>& /*other*/) const noexcept {
    return true;
  }

 private:
  static std::size_t rounded(std::size_t bytes) { return (bytes + kHugePageBytes - 1) & ~(kHugePageBytes - 1); }
};

}  // namespace memtrack::analysis
