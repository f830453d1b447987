// ImageTables::module_of (runtime/recorder/src/stack_tables.h): the last noted module with a path over an
// address, as a reverse scan of the modules in note order would find it; NodeAddresses; python_line.
#include "stack_tables.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

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
// CPython 3.11's location table (co_linetable) decoded as the interpreter does: a function whose table uses
// the short, one-line, no-column and long forms (with negative line deltas), compiled by Debian's python3
// 3.11.2; the expected line of each code unit is what its code object's co_lines() says.
// NodeAddresses: ids below kDense in a vector, past it in a map; address 0 is no node. Checked against a
// std::map fed the same sets.
TEST(NodeAddresses, AgreesWithAMapAndKeepsIdsPastTheDenseRange) {
  NodeAddresses a;
  std::map<std::uint32_t, std::uint64_t> want;
  auto set = [&](std::uint32_t id, std::uint64_t address) {
    a.set(id, address);
    if (address != 0 || id >= NodeAddresses::kDense)
      want[id] = address;
    else
      want.erase(id);
  };
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) set(static_cast<std::uint32_t>(rng() % 50000), 1 + rng() % 1000);
  set(3, 0x1234);
  set(3, 0x5678);  // overwritten: one node
  set(5, 0x99);
  set(5, 0);  // cleared: no node
  set(NodeAddresses::kDense + 10, 0x42);
  set(0xffffffffu, 0x43);
  EXPECT_EQ(a.size(), want.size());
  std::vector<std::pair<std::uint32_t, std::uint64_t>> seen;
  a.for_each([&](std::uint32_t id, std::uint64_t address) { seen.emplace_back(id, address); });
  EXPECT_EQ(seen, (std::vector<std::pair<std::uint32_t, std::uint64_t>>(want.begin(), want.end())));
  ASSERT_NE(a.find(3), nullptr);
  EXPECT_EQ(*a.find(3), 0x5678u);
  EXPECT_EQ(a.find(5), nullptr);
  EXPECT_EQ(a.find(60000), nullptr);  // past the vector
  EXPECT_EQ(a.find(NodeAddresses::kDense + 11), nullptr);
  ASSERT_NE(a.find(0xffffffffu), nullptr);
  EXPECT_EQ(*a.find(0xffffffffu), 0x43u);
  for (const auto& [id, address] : want) {
    ASSERT_NE(a.find(id), nullptr) << id;
    EXPECT_EQ(*a.find(id), address) << id;
  }
}

TEST(PythonLine, DecodesA311LocationTable) {
  // def f(a):                    line 1
  //     x = [a] * 3              2
  //                              3
  //     y = {"k": x,             4
  //          "v": (a,            5
  //                a + 1)}       6
  //     for i in range(10):      7
  //         x.append(i)          8
  //     return y                 9
  const std::string table(
      "\x80\x00\xd8\x09\x0a\x88\x03\x88\x61\x89\x07\x80\x41\xe0\x0e\x0f\xd8\x0f\x10\xd8\x0f\x10\x90\x31\x89\x75\xf0"
      "\x03\x01\x0f\x16\xf0\x03\x02\x09\x17\xf0\x00\x02\x09\x17\x80\x41\xf5\x06\x00\x0e\x13\x90\x32\x89\x59\x8c\x59"
      "\xf0\x00\x01\x05\x14\xf0\x00\x01\x05\x14\x88\x01\xd8\x08\x09\x8f\x08\x8a\x08\x90\x11\x89\x0b\x8c\x0b\x88\x0b"
      "\x88\x0b\xd8\x0b\x0c\x80\x48",
      88);
  const std::vector<std::uint32_t> lines = {1, 2, 2, 2, 2, 2, 2, 4, 5, 6, 6, 6, 6, 5, 4, 4, 4, 7, 7, 7,
                                            7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 8, 8, 8, 8, 8,
                                            8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 9, 9};
  for (std::size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(python_line(table, 1, i), lines[i]) << "code unit " << i;
  EXPECT_EQ(python_line(table, 1, lines.size()), 0u);            // past the table
  EXPECT_EQ(python_line(table.substr(0, 40), 1, 50), 0u);        // a table cut by the note's limit
  EXPECT_EQ(python_line(std::string("\x01\x02", 2), 1, 0), 0u);  // not an entry's first byte
  EXPECT_EQ(python_line(std::string("\xf8", 1), 5, 0), 0u);      // code 15: no location

  // PythonLines, one reading of the table for indices in increasing order, gives the same lines; asked out of
  // order (back from past the end, then down the table), it starts again and still does.
  PythonLines cursor(table, 1);
  for (std::size_t i = 0; i < lines.size(); i += 3) EXPECT_EQ(cursor.line(i), lines[i]) << "code unit " << i;
  EXPECT_EQ(cursor.line(lines.size() + 5), 0u);
  for (std::size_t i = lines.size(); i-- > 0;) EXPECT_EQ(cursor.line(i), lines[i]) << "code unit " << i << ", down";
  const std::string cut_table = table.substr(0, 40);  // the cursor keeps a view of it
  PythonLines cut(cut_table, 1);
  EXPECT_EQ(cut.line(50), 0u);
  EXPECT_EQ(cut.line(1), lines[1]);
}

// The same function compiled by CPython 3.10 (its co_linetable and, per code unit, the line co_lines() gives):
// byte pairs of a bytecode delta and a line delta, through python_line and PythonLines in the 3.10 format.
TEST(PythonLine, DecodesA310LineTable) {
  const std::string table("\x0a\x01\x02\x02\x02\x01\x06\x01\x02\xff\x06\xff\x0c\x03\x0c\x01\x04\x01", 18);
  const std::vector<std::uint32_t> lines = {2, 2, 2, 2, 2, 4, 5, 6, 6, 6, 5, 4, 4, 4,
                                            7, 7, 7, 7, 7, 7, 8, 8, 8, 8, 8, 8, 9, 9};
  for (std::size_t i = 0; i < lines.size(); ++i)
    EXPECT_EQ(python_line(table, 1, i, kPythonLineTable310), lines[i]) << "code unit " << i;
  EXPECT_EQ(python_line(table, 1, lines.size(), kPythonLineTable310), 0u);  // past the table
  PythonLines cursor(table, 1, kPythonLineTable310);
  for (std::size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(cursor.line(i), lines[i]) << "code unit " << i;
  EXPECT_EQ(python_line(std::string("\x04\x80\x04\x01", 4), 7, 1, kPythonLineTable310), 0u);  // -128: no line
  EXPECT_EQ(python_line(std::string("\x04\x80\x04\x01", 4), 7, 2, kPythonLineTable310), 8u);
  EXPECT_EQ(python_line(std::string("\x04", 1), 7, 0, kPythonLineTable310), 0u);  // half a pair
}

}  // namespace memtrack::runtime
