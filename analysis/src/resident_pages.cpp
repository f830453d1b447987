#include "memtrack/analysis/resident_pages.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <unordered_map>

namespace memtrack::analysis {
namespace {

// The snapshot's ranges with the offset of each one's bits, for lookups by address.
class Bits {
 public:
  explicit Bits(const codec::ResidentPages& r) : r_(r), page_(r.page_size), first_bit_(r.starts.size()) {
    std::uint64_t byte = 0;
    for (std::size_t i = 0; i < r.starts.size(); ++i) {
      first_bit_[i] = byte * 8;
      byte += codec::resident_bitmap_bytes(r.pages[i]);
    }
  }

  [[nodiscard]] bool present(std::uint64_t page_addr) const { return count(page_addr, page_addr + page_) != 0; }

  // Present pages among the whole pages of [lo, hi) (both page-aligned).
  [[nodiscard]] std::uint64_t count(std::uint64_t lo, std::uint64_t hi) const {
    std::uint64_t n = 0;
    // The first range that ends after lo: ranges ascend and are disjoint.
    auto it = std::upper_bound(r_.starts.begin(), r_.starts.end(), lo);
    std::size_t i = static_cast<std::size_t>(it - r_.starts.begin());
    if (i > 0) --i;
    for (; i < r_.starts.size() && r_.starts[i] < hi; ++i) {
      const std::uint64_t start = r_.starts[i], end = start + r_.pages[i] * page_;
      const std::uint64_t a = std::max(lo, start), b = std::min(hi, end);
      if (a >= b) continue;
      n += popcount(first_bit_[i] + (a - start) / page_, first_bit_[i] + (b - start) / page_);
    }
    return n;
  }

 private:
  // Set bits [from, to) of `present`, 64 at a time between the partial words at its ends.
  [[nodiscard]] std::uint64_t popcount(std::uint64_t from, std::uint64_t to) const {
    const std::uint8_t* p = r_.present.data();
    std::uint64_t n = 0;
    while (from < to && from % 64 != 0) n += (p[from / 8] >> (from % 8)) & 1u, ++from;
    for (; from + 64 <= to; from += 64) {
      std::uint64_t w = 0;
      for (int b = 0; b < 8; ++b) w |= std::uint64_t{p[from / 8 + static_cast<std::uint64_t>(b)]} << (8 * b);
      n += static_cast<std::uint64_t>(std::popcount(w));
    }
    for (; from < to; ++from) n += (p[from / 8] >> (from % 8)) & 1u;
    return n;
  }

  const codec::ResidentPages& r_;
  std::uint64_t page_;
  std::vector<std::uint64_t> first_bit_;
};

}  // namespace

std::vector<std::uint64_t> resident_bytes_of(std::span<const LiveBlock> blocks, const codec::ResidentPages& pages) {
  std::vector<std::uint64_t> out(blocks.size(), 0);
  if (pages.starts.empty()) return out;
  const Bits bits(pages);
  const std::uint64_t ps = pages.page_size, mask = ~(ps - 1);
  const auto last_byte = [](const LiveBlock& b) {
    return b.size - 1 > UINT64_MAX - b.addr ? UINT64_MAX : b.addr + (b.size - 1);
  };
  // The live bytes on each present page a block starts or ends on (its inner pages are its alone).
  std::unordered_map<std::uint64_t, std::uint64_t> shared;
  const auto overlap = [&](const LiveBlock& b, std::uint64_t page) {
    const std::uint64_t lo = std::max(b.addr, page), hi = std::min(last_byte(b), page + (ps - 1));
    return hi - lo + 1;
  };
  for (const LiveBlock& b : blocks) {
    if (b.size == 0) continue;
    const std::uint64_t first = b.addr & mask, last = last_byte(b) & mask;
    if (bits.present(first)) shared[first] += overlap(b, first);
    if (last != first && bits.present(last)) shared[last] += overlap(b, last);
  }
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const LiveBlock& b = blocks[i];
    if (b.size == 0) continue;
    const std::uint64_t first = b.addr & mask, last = last_byte(b) & mask;
    const auto share = [&](std::uint64_t page) {
      const auto it = shared.find(page);
      return it == shared.end() ? 0 : ps * overlap(b, page) / it->second;
    };
    std::uint64_t r = share(first);
    if (last != first) {
      r += share(last);
      if (last - first > ps) r += bits.count(first + ps, last) * ps;
    }
    out[i] = r;
  }
  return out;
}

}  // namespace memtrack::analysis
