// The serializable table: strings interned once, addresses sorted and found, frames in order; and
// symbolize_table over several modules with one progress for the whole run.
#include "memtrack/symbolize/symbol_table.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "chain_fixture.h"

namespace memtrack::symbolize {
namespace {

SymbolizedAddress make(std::uint64_t address, std::vector<Frame> frames) {
  SymbolizedAddress s;
  s.address = address;
  s.source = frames.empty() ? Source::none : Source::dwarf;
  s.frames = std::move(frames);
  return s;
}

TEST(SymbolTable, StringsAreInternedAndAddressesSorted) {
  SymbolTableBuilder builder;
  ModuleInfo info;
  const std::uint32_t a = builder.add_module({"/lib/a.so", BuildId{}}, info);
  const std::uint32_t b = builder.add_module({"/lib/b.so", BuildId{}}, info);
  builder.add(b, make(0x20, {{"f()", "/src/x.cpp", 3, 1, true}, {"g()", "/src/x.cpp", 9, 0, false}}));
  builder.add(a, make(0x30, {{"g()", "/src/x.cpp", 10, 0, false}}));
  builder.add(a, make(0x10, {}));
  builder.add(a, make(0x30, {{"other()", "", 0, 0, false}}));  // a duplicate: the first is kept
  const SymbolTable table = builder.finish();

  // "", the two paths, the message "" (already there), f(), /src/x.cpp, g(), other().
  EXPECT_EQ(table.strings.size(), 7u);
  EXPECT_EQ(table.strings[0], "");
  EXPECT_EQ(std::set<std::string>(table.strings.begin(), table.strings.end()).size(), table.strings.size());
  ASSERT_EQ(table.addresses.size(), 3u);
  EXPECT_EQ(table.addresses[0].module, a);
  EXPECT_EQ(table.addresses[0].address, 0x10u);
  EXPECT_EQ(table.addresses[1].address, 0x30u);
  EXPECT_EQ(table.addresses[2].module, b);

  const SymbolTable::Address* entry = table.find(b, 0x20);
  ASSERT_NE(entry, nullptr);
  const auto frames = table.frames_of(*entry);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(table.string(frames[0].function), "f()");
  EXPECT_EQ(table.string(frames[0].file), "/src/x.cpp");
  EXPECT_EQ(frames[0].line, 3u);
  EXPECT_EQ(frames[0].column, 1u);
  EXPECT_EQ(table.string(frames[1].function), "g()");
  EXPECT_EQ(frames[0].file, frames[1].file);

  const SymbolTable::Address* kept = table.find(a, 0x30);
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(table.string(table.frames_of(*kept)[0].function), "g()");
  const SymbolTable::Address* bare = table.find(a, 0x10);
  ASSERT_NE(bare, nullptr);
  EXPECT_EQ(bare->frame_count, 0u);
  EXPECT_EQ(bare->source, Source::none);
  EXPECT_EQ(table.find(a, 0x20), nullptr);
  EXPECT_EQ(table.find(7, 0x20), nullptr);
  EXPECT_EQ(table.string(table.modules[b].path), "/lib/b.so");
}

TEST(SymbolTable, SymbolizeTableOverModulesOfTheChainProgram) {
  const testing::Capture& leaf = testing::capture("leaf");
  const testing::Capture& middle = testing::capture("middle");
  const testing::Capture& run = testing::capture("run");
  std::vector<ModuleAddresses> requests;
  requests.push_back({leaf.ref(), {leaf.relative(), leaf.relative()}, AddressKind::return_address});
  requests.push_back({middle.ref(), {middle.relative(), run.relative()}, AddressKind::return_address});
  ModuleRef gone{"/nonexistent/libgone.so", BuildId{}};
  requests.push_back({gone, {0x1234}, AddressKind::return_address});
  Options options;
  options.debug_dirs.clear();
  Symbolizer symbolizer(options);
  std::vector<std::size_t> done;
  const SymbolTable table = symbolize_table(symbolizer, requests, [&](const Progress& p) {
    EXPECT_EQ(p.total, 5u);
    done.push_back(p.done);
    return true;
  });
  EXPECT_EQ(done, (std::vector<std::size_t>{2, 4, 5}));
  ASSERT_EQ(table.modules.size(), 3u);
  EXPECT_EQ(table.string(table.modules[0].path), leaf.module);
  EXPECT_EQ(table.modules[0].build_id, leaf.build_id);
  EXPECT_EQ(table.modules[2].status, ModuleStatus::missing);
  EXPECT_EQ(table.string(table.modules[2].message), "cannot open /nonexistent/libgone.so: No such file or directory");
  EXPECT_EQ(table.addresses.size(), 4u);  // the repeated leaf address once

  const SymbolTable::Address* in_lib = table.find(0, leaf.relative());
  ASSERT_NE(in_lib, nullptr);
  ASSERT_EQ(in_lib->frame_count, 2u);
  EXPECT_EQ(table.string(table.frames_of(*in_lib)[0].function), "symlib::inlined_leaf(symlib::Recorder*, int)");
  EXPECT_EQ(table.frames_of(*in_lib)[0].line, testing::marker_line("chain_lib.cpp", "leaf_call"));
  const SymbolTable::Address* in_main = table.find(1, run.relative());
  ASSERT_NE(in_main, nullptr);
  EXPECT_EQ(table.string(table.frames_of(*in_main)[0].function), "main");
  const SymbolTable::Address* nothing = table.find(2, 0x1234);
  ASSERT_NE(nothing, nullptr);
  EXPECT_EQ(nothing->frame_count, 0u);
}

TEST(SymbolTable, StoppingTheRunLeavesTheRestUnresolved) {
  const testing::Capture& leaf = testing::capture("leaf");
  const testing::Capture& middle = testing::capture("middle");
  std::vector<ModuleAddresses> requests;
  requests.push_back({leaf.ref(), {leaf.relative()}, AddressKind::return_address});
  requests.push_back({middle.ref(), {middle.relative()}, AddressKind::return_address});
  Symbolizer symbolizer;
  const SymbolTable table = symbolize_table(symbolizer, requests, [](const Progress&) { return false; });
  ASSERT_EQ(table.addresses.size(), 2u);
  EXPECT_EQ(table.find(0, leaf.relative())->source, Source::dwarf);  // its batch had finished
  EXPECT_EQ(table.find(1, middle.relative())->source, Source::none);
}

}  // namespace
}  // namespace memtrack::symbolize
