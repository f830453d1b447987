// AddressMap against std::map under random inserts, overwrites and erases, with the table growing and
// probe runs wrapping around its end (backward-shift deletion is where such maps go wrong).
#include "memtrack/analysis/address_map.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace memtrack::analysis {
namespace {

TEST(AddressMap, MatchesStdMapUnderRandomOperations) {
  for (std::uint64_t range : {64u, 3000u, 200000u}) {
    std::mt19937_64 rng(range);
    AddressMap m;
    std::map<std::uint64_t, std::uint64_t> ref;
    for (int op = 0; op < 300000; ++op) {
      // Include the table's empty marker (~0) as an address: hostile input may carry it.
      const std::uint64_t addr = rng() % 97 == 0 ? ~std::uint64_t{0} : (rng() % range) * 16;
      const std::uint64_t size = rng() % 1000;
      std::uint64_t got = 0;
      if (rng() % 2 == 0) {
        const auto it = ref.find(addr);
        const bool had = m.insert(addr, size, got);
        ASSERT_EQ(had, it != ref.end());
        if (had) {
          ASSERT_EQ(got, it->second);
        }
        ref[addr] = size;
      } else {
        const auto it = ref.find(addr);
        const bool had = m.erase(addr, got);
        ASSERT_EQ(had, it != ref.end());
        if (had) {
          ASSERT_EQ(got, it->second);
          ref.erase(it);
        }
      }
      ASSERT_EQ(m.size(), ref.size());
    }
    for (const auto& [addr, size] : ref) {  // every remaining entry is still reachable
      std::uint64_t got = 0;
      ASSERT_TRUE(m.erase(addr, got));
      ASSERT_EQ(got, size);
    }
    EXPECT_EQ(m.size(), 0u);
  }
}

// Past codec::kHugeThreshold the tables are whole 2 MiB-aligned huge pages (codec/huge_pages.h): a map of a
// million blocks with payloads grows through that threshold, and a copy of it (a fork child's books) keeps
// every entry.
TEST(AddressMap, LargeTablesKeepEveryEntryAcrossGrowthAndCopies) {
  AddressMap m;
  m.enable_payload();
  constexpr std::uint64_t kBlocks = 1'000'000;
  std::uint64_t old_size = 0;
  std::uint32_t old_payload = 0;
  for (std::uint64_t i = 0; i < kBlocks; ++i)
    ASSERT_FALSE(m.insert(0x7f0000000000 + i * 48, i, static_cast<std::uint32_t>(i * 3), old_size, old_payload));
  const AddressMap copy = m;
  std::uint64_t seen = 0;
  copy.for_each([&](std::uint64_t addr, std::uint64_t size, std::uint32_t payload) {
    const std::uint64_t i = (addr - 0x7f0000000000) / 48;
    ASSERT_EQ(size, i);
    ASSERT_EQ(payload, static_cast<std::uint32_t>(i * 3));
    ++seen;
  });
  EXPECT_EQ(seen, kBlocks);
  for (std::uint64_t i = 0; i < kBlocks; i += 7) {
    std::uint64_t size = 0;
    ASSERT_TRUE(m.erase(0x7f0000000000 + i * 48, size));
    ASSERT_EQ(size, i);
  }
  EXPECT_EQ(copy.size(), kBlocks);
}

TEST(HugePageAllocator, LargeBlocksAreAlignedToHugePagesAndSmallOnesComeFromMalloc) {
  codec::HugePageAllocator<std::uint64_t> a;
  const std::size_t large = codec::kHugeThreshold / sizeof(std::uint64_t) + 3;  // not a whole number of huge pages
  std::uint64_t* p = a.allocate(large);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % codec::kHugePageBytes, 0u);
  for (std::size_t i = 0; i < large; ++i) p[i] = i;  // every byte asked for is writable
  EXPECT_EQ(p[large - 1], large - 1);
  a.deallocate(p, large);
  std::uint64_t* q = a.allocate(16);
  q[15] = 1;
  a.deallocate(q, 16);
  EXPECT_THROW((void)a.allocate(SIZE_MAX), std::bad_alloc);
}

}  // namespace
}  // namespace memtrack::analysis
