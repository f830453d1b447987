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

}  // namespace
}  // namespace memtrack::analysis
