// A map from address to block size (and optionally a 32-bit payload per block), LiveHeap's table of live
// blocks (live_heap.h): open addressing with linear probing and backward-shift deletion, one flat array, no
// node per block. std::unordered_map's node allocation and pointer chasing made the (serial, in-order)
// live-heap stage the bottleneck of parallel `stats`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "memtrack/codec/huge_pages.h"

namespace memtrack::analysis {

class AddressMap {
 public:
  AddressMap() : slots_(kInitialSlots) {}

  // Gives every entry a 32-bit payload (0 unless set), kept in a table beside the slots so that a map
  // without payloads stays as small and fast as before. Only on an empty map.
  void enable_payload() { payload_.assign(slots_.size(), 0); }
  [[nodiscard]] bool has_payload() const { return !payload_.empty(); }

  // Inserts or overwrites; returns the previous size (and payload) through `old_size` when the address was
  // present.
  bool insert(std::uint64_t addr, std::uint64_t size, std::uint64_t& old_size) {
    std::uint32_t ignored = 0;
    return insert(addr, size, 0, old_size, ignored);
  }
  bool insert(std::uint64_t addr, std::uint64_t size, std::uint32_t payload, std::uint64_t& old_size,
              std::uint32_t& old_payload) {
    if (addr == kEmpty) {
      old_payload = special_payload_;
      special_payload_ = payload;
      return put_special(size, old_size);
    }
    if ((count_ + 1) * max_load_divisor() > slots_.size()) grow();
    std::size_t i = home(addr);
    for (;; i = next(i)) {
      Slot& s = slots_[i];
      if (s.addr == kEmpty) {
        s = {addr, size};
        if (!payload_.empty()) payload_[i] = payload;
        ++count_;
        return false;
      }
      if (s.addr == addr) {
        old_size = s.size;
        s.size = size;
        if (!payload_.empty()) old_payload = std::exchange(payload_[i], payload);
        return true;
      }
    }
  }

  // Removes the address; returns false if it was not there.
  bool erase(std::uint64_t addr, std::uint64_t& size) {
    std::uint32_t ignored = 0;
    return erase(addr, size, ignored);
  }
  bool erase(std::uint64_t addr, std::uint64_t& size, std::uint32_t& payload) {
    if (addr == kEmpty) {
      if (!has_special_) return false;
      has_special_ = false;
      size = special_size_;
      payload = special_payload_;
      return true;
    }
    std::size_t i = home(addr);
    for (;; i = next(i)) {
      if (slots_[i].addr == kEmpty) return false;
      if (slots_[i].addr == addr) break;
    }
    size = slots_[i].size;
    const bool with_payload = !payload_.empty();
    if (with_payload) payload = payload_[i];
    // Backward shift: pull later entries of the probe run into the hole, so lookups never need tombstones.
    std::size_t hole = i;
    for (std::size_t j = next(hole);; j = next(j)) {
      if (slots_[j].addr == kEmpty) break;
      const std::size_t h = home(slots_[j].addr);
      // Move j into the hole unless j's home lies cyclically in (hole, j].
      const bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
      if (!stays) {
        slots_[hole] = slots_[j];
        if (with_payload) payload_[hole] = payload_[j];
        hole = j;
      }
    }
    slots_[hole].addr = kEmpty;
    --count_;
    return true;
  }

  // The stored size of `addr`, to change in place; nullptr when absent. Valid until the next insert or erase.
  [[nodiscard]] std::uint64_t* find(std::uint64_t addr) {
    if (addr == kEmpty) return has_special_ ? &special_size_ : nullptr;
    for (std::size_t i = home(addr);; i = next(i)) {
      if (slots_[i].addr == kEmpty) return nullptr;
      if (slots_[i].addr == addr) return &slots_[i].size;
    }
  }

  // Calls f(size&) on every stored size, in no particular order (the live heap tags a fork child's copy).
  template <typename F>
  void for_each_size(F&& f) {
    for (Slot& s : slots_)
      if (s.addr != kEmpty) f(s.size);
    if (has_special_) f(special_size_);
  }

  // Calls f(addr, size, payload) on every entry, in no particular order.
  template <typename F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].addr != kEmpty) f(slots_[i].addr, slots_[i].size, payload_.empty() ? 0u : payload_[i]);
    if (has_special_) f(kEmpty, special_size_, special_payload_);
  }

  [[nodiscard]] std::size_t size() const { return count_ + (has_special_ ? 1 : 0); }

  // Starts loading the slot `addr` hashes to. The table outgrows the caches on real traces, and each lookup
  // is a cache miss unless it was prefetched a few events earlier.
  // With payloads, their table is a second miss: both are started.
  void prefetch(std::uint64_t addr) const {
    const std::size_t i = home(addr);
    __builtin_prefetch(&slots_[i]);
    if (!payload_.empty()) __builtin_prefetch(&payload_[i]);
  }

 private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  static constexpr std::size_t kInitialSlots = 1024;
  struct Slot {
    std::uint64_t addr = kEmpty;
    std::uint64_t size = 0;
  };

  [[nodiscard]] std::size_t home(std::uint64_t addr) const {
    // Fibonacci hashing: addresses are 16-byte aligned and clustered; the multiply spreads their bits and
    // the high bits index the table.
    return static_cast<std::size_t>((addr * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  [[nodiscard]] std::size_t next(std::size_t i) const { return (i + 1) & (slots_.size() - 1); }

  // The table is kept at most 1/4 full while it is small enough to stay in the caches (up to 1 MiB), and at
  // most 1/2 full beyond: short probe runs matter while lookups hit the cache (every extra probe is a
  // mispredicted branch), memory matters once the table is large and each lookup is a cache miss anyway.
  static constexpr std::size_t kSmallTableSlots = std::size_t{1} << 16;
  [[nodiscard]] std::size_t max_load_divisor() const { return slots_.size() <= kSmallTableSlots ? 4 : 2; }

  void grow() {
    Slots old(slots_.size() * 2);
    old.swap(slots_);
    std::vector<std::uint32_t, codec::HugePageAllocator<std::uint32_t>> old_payload;
    if (!payload_.empty()) {
      old_payload.swap(payload_);
      payload_.assign(slots_.size(), 0);
    }
    --shift_;
    count_ = 0;
    std::uint64_t ignored = 0;
    std::uint32_t ignored_payload = 0;
    for (std::size_t i = 0; i < old.size(); ++i) {
      if (old[i].addr != kEmpty)
        insert(old[i].addr, old[i].size, old_payload.empty() ? 0u : old_payload[i], ignored, ignored_payload);
    }
  }

  // The one address equal to the empty marker (only possible in hostile input) lives outside the table.
  bool put_special(std::uint64_t size, std::uint64_t& old_size) {
    const bool had = has_special_;
    old_size = special_size_;
    has_special_ = true;
    special_size_ = size;
    return had;
  }

  // Large tables on huge pages (codec/huge_pages.h): their lookups miss the cache, and without them the TLB.
  using Slots = std::vector<Slot, codec::HugePageAllocator<Slot>>;
  Slots slots_;
  std::vector<std::uint32_t, codec::HugePageAllocator<std::uint32_t>> payload_;  // beside slots_, when enabled
  std::uint32_t special_payload_ = 0;
  int shift_ = 64 - 10;  // log2(kInitialSlots) = 10
  std::size_t count_ = 0;
  bool has_special_ = false;
  std::uint64_t special_size_ = 0;
};

}  // namespace memtrack::analysis
