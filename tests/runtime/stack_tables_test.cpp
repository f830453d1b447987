// ImageTables::module_of (runtime/recorder/src/stack_tables.h): the last noted module with a path over an
// address, as a reverse scan of the modules in note order would find it.
#include "stack_tables.h"

#include <gtest/gtest.h>

#include <random>

namespace memtrack::runtime {
namespace {

ModuleEntry module(std::uint64_t start, std::uint64_t end, std::string path) {
  ModuleEntry m;
  m.start = start;
  m.end = end;
  m.path = std::move(path);
  return m;
}

const ModuleEntry* scan(const ImageTables& t, std::uint64_t address) {
  for (auto it = t.modules.rbegin(); it != t.modules.rend(); ++it)
    if (address >= it->start && address < it->end && !it->path.empty()) return &*it;
  return nullptr;
}

TEST(ImageTables, LaterModuleOwnsAReusedRange) {
  ImageTables t;
  t.add_module(module(0x1000, 0x5000, "/a.so"));
  t.add_module(module(0x2000, 0x3000, "/b.so"));  // inside a's range (a dlclose'd range reused)
  t.add_module(module(0x2800, 0x2900, ""));       // no path: never an answer
  EXPECT_EQ(t.module_of(0x0fff), nullptr);
  EXPECT_EQ(t.module_of(0x1000)->path, "/a.so");
  EXPECT_EQ(t.module_of(0x2000)->path, "/b.so");
  EXPECT_EQ(t.module_of(0x2850)->path, "/b.so");
  EXPECT_EQ(t.module_of(0x2fff)->path, "/b.so");
  EXPECT_EQ(t.module_of(0x3000)->path, "/a.so");
  EXPECT_EQ(t.module_of(0x4fff)->path, "/a.so");
  EXPECT_EQ(t.module_of(0x5000), nullptr);
}

TEST(ImageTables, AgreesWithAReverseScan) {
  std::mt19937_64 rng(7);
  ImageTables t;
  for (int i = 0; i < 300; ++i) {
    const std::uint64_t start = rng() % 100000, len = 1 + rng() % 5000;
    t.add_module(module(start, start + len, rng() % 10 == 0 ? "" : "/m" + std::to_string(i)));
    const ImageTables copy = t;  // a fork child's copy answers the same
    for (int k = 0; k < 50; ++k) {
      const std::uint64_t a = rng() % 110000;
      ASSERT_EQ(copy.module_of(a), copy.modules.empty() ? nullptr : scan(copy, a)) << a << " after " << i;
    }
  }
}

}  // namespace
}  // namespace memtrack::runtime
