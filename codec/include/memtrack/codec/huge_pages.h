// Memory for large buffers on transparent huge pages: from a size of kHugeThreshold on, whole 2 MiB pages
// aligned to 2 MiB (operator new with that alignment), with madvise(MADV_HUGEPAGE) (which Debian's default
// "madvise" THP mode honours) before the first touch. Below the threshold, and where the kernel has no huge
// page to give, they are small pages as usual. Two reasons, both measured (docs/RUNTIME.md, "Cost"):
// - tables indexed at random (AddressMap's slots) of tens of MiB missed the TLB on nearly every lookup;
// - every first touch of a 4 KiB page is a page fault, hundreds of times a write to a touched page on the VMs
//   this project is measured on, and a 2 MiB page costs a small fraction of its 512 small ones
//   (bench/page_fault_cost.c): the recorder's frame buffers are touched anew on every recording.
// Here, in codec, because every layer that has such buffers (codec, pipeline, analysis) depends on it.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>

namespace memtrack::codec {

inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
inline constexpr std::size_t kHugeThreshold = kHugePageBytes;

// The bytes an allocation of `bytes` takes through HugePageAllocator: whole huge pages from the threshold on.
[[nodiscard]] constexpr std::size_t huge_allocation_bytes(std::size_t bytes) {
  return bytes < kHugeThreshold ? bytes : (bytes + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
}

// Stateless: any two instances are equal, so containers copy and move as with std::allocator.
template <typename T>
class HugePageAllocator {
 public:
  using value_type = T;

  HugePageAllocator() = default;
  template <typename U>
  explicit HugePageAllocator(const HugePageAllocator<U>& /*other*/) noexcept {}

  T* allocate(std::size_t n) {
    if (n > (SIZE_MAX - kHugePageBytes) / sizeof(T)) throw std::bad_alloc();  // room to round up
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kHugeThreshold) return static_cast<T*>(::operator new (bytes, std::align_val_t{alignof(T)}));
    // Through operator new (so the heap counters of the tests and benchmarks see it), whole huge pages.
    void* p = ::operator new (huge_allocation_bytes(bytes), std::align_val_t{kHugePageBytes});
    ::madvise(p, huge_allocation_bytes(bytes), MADV_HUGEPAGE);  // advice: where it fails, the pages are small ones
    return static_cast<T*>(p);
  }

  void deallocate(T* p, std::size_t n) noexcept {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kHugeThreshold)
      ::operator delete (p, std::align_val_t{alignof(T)});
    else
      ::operator delete (p, std::align_val_t{kHugePageBytes});
  }

  template <typename U>
  bool operator==(const HugePageAllocator<U>& /*other*/) const noexcept {
    return true;
  }
};

// An array of n T that are not initialized (T must be an implicit-lifetime type, such as an aggregate of
// integers, written before it is read): a buffer's pages are touched, and faulted in, only as it is filled.
template <typename T>
class HugeArray {
 public:
  HugeArray() = default;
  explicit HugeArray(std::size_t n) : data_(HugePageAllocator<T>().allocate(n)), size_(n) {}
  HugeArray(HugeArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  HugeArray& operator=(HugeArray&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  HugeArray(const HugeArray&) = delete;
  HugeArray& operator=(const HugeArray&) = delete;
  ~HugeArray() { reset(); }

  void reset() {
    if (data_ != nullptr) HugePageAllocator<T>().deallocate(data_, size_);
    data_ = nullptr;
    size_ = 0;
  }
  [[nodiscard]] T* data() const { return data_; }
  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace memtrack::codec
