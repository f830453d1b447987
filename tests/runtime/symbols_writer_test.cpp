// The recording's symbol table (runtime/recorder/src/symbols_writer.h): addresses symbolized ahead, while the
// program runs, give exactly the Symbols records of symbolizing everything at the end, also when a prefetched
// address belongs to another module by the end (a range reused after an unload).
#include "symbols_writer.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "memtrack/codec/context.h"
#include "memtrack/pipeline/context_channel.h"
#include "memtrack/symbolize/symbolizer.h"
#include "stack_tables.h"

// Two functions of this executable whose names the symbol table must hold.
extern "C" __attribute__((noinline, used)) int symbols_writer_test_first(int x) { return x * 3 + 1; }
extern "C" __attribute__((noinline, used)) int symbols_writer_test_second(int x) { return x * 5 + 2; }

namespace {

using namespace memtrack;
using namespace memtrack::runtime;

// A note block as the preload writes it: the head slot, then NoteData slots of kNoteDataBytes each.
void feed(StackTables& tables, RingEvent head, const std::string& payload, std::uint64_t position) {
  const std::size_t slots = (payload.size() + kNoteDataBytes - 1) / kNoteDataBytes;
  head.old_addr = slots;
  head.size = payload.size();
  tables.on_slot(head, position);
  for (std::size_t i = 0; i < slots; ++i) {
    RingNoteData d{};
    d.kind = RingEventKind::NoteData;
    const std::size_t n = std::min(kNoteDataBytes, payload.size() - i * kNoteDataBytes);
    std::memcpy(d.bytes, payload.data() + i * kNoteDataBytes, n);
    d.length = static_cast<std::uint8_t>(n);
    RingEvent slot;
    std::memcpy(&slot, &d, sizeof slot);
    tables.on_slot(slot, position);
  }
}

void note_module(StackTables& tables, std::int32_t pid, const std::string& path, std::uint64_t bias,
                 std::uint64_t start, std::uint64_t end, bool unloaded = false) {
  RingEvent head{};
  head.kind = RingEventKind::NoteModule;
  head.pid = pid;
  head.addr = bias;
  head.flags = unloaded ? kRingModuleUnloaded : 0;
  RingModulePayload m{};
  m.start = start;
  m.end = end;
  std::string payload(reinterpret_cast<const char*>(&m), sizeof m);
  if (!unloaded) payload += path;  // no build-id: not checked
  feed(tables, head, payload, 0);
}

void note_nodes(StackTables& tables, std::int32_t pid, std::uint32_t first_id,
                const std::vector<std::uint64_t>& addresses) {
  RingEvent head{};
  head.kind = RingEventKind::NoteStackNodes;
  head.pid = pid;
  head.addr = first_id;
  std::string payload;
  std::uint32_t parent = 0;
  for (std::uint64_t a : addresses) {
    payload.append(reinterpret_cast<const char*>(&parent), 4);
    payload.append(reinterpret_cast<const char*>(&a), 8);
    parent = first_id++;
  }
  feed(tables, head, payload, 0);
}

struct Module {
  std::string path;
  std::uint64_t bias = 0, start = 0, end = 0;
};

Module this_executable() {
  Dl_info info{};
  EXPECT_NE(dladdr(reinterpret_cast<void*>(&symbols_writer_test_first), &info), 0);
  Module m;
  m.path = info.dli_fname;
  m.bias = reinterpret_cast<std::uint64_t>(info.dli_fbase);  // a PIE: the load bias is its base
  m.start = m.bias;
  m.end = reinterpret_cast<std::uint64_t>(&symbols_writer_test_second) + 4096;
  return m;
}

// Everything the tables saw, as one program would note it: the module, then a stack in each function.
void note_program(StackTables& tables, const Module& m) {
  note_module(tables, 7, m.path, m.bias, m.start, m.end);
  note_nodes(tables, 7, 1,
             {reinterpret_cast<std::uint64_t>(&symbols_writer_test_first) + 1,
              reinterpret_cast<std::uint64_t>(&symbols_writer_test_second) + 1});
}

// The Symbols records `writer` adds for `tables`, as the bytes of one context frame.
std::vector<std::byte> symbols_frame(SymbolsWriter& writer, StackTables& tables, pipeline::ContextChannel& channel,
                                     SymbolsSummary& summary) {
  std::vector<std::byte> discard;
  EXPECT_TRUE(channel.take_frame(discard).is_ok());  // the Module and StackNodes records
  summary = writer.write(tables, channel);
  std::vector<std::byte> frame;
  EXPECT_TRUE(channel.take_frame(frame).is_ok());
  return frame;
}

TEST(SymbolsWriter, PrefetchedAddressesGiveTheSameRecordsAsSymbolizingAtTheEnd) {
  const Module m = this_executable();

  pipeline::ContextChannel at_end_channel;
  StackTables at_end_tables(at_end_channel);
  SymbolsWriter at_end(false);
  note_program(at_end_tables, m);
  SymbolsSummary at_end_summary;
  const std::vector<std::byte> expected = symbols_frame(at_end, at_end_tables, at_end_channel, at_end_summary);

  pipeline::ContextChannel ahead_channel;
  StackTables ahead_tables(ahead_channel);
  SymbolsWriter ahead(false);
  ahead_tables.on_new_addresses([&](std::span<const StackTables::NewAddress> a) { ahead.prefetch(a); });
  note_program(ahead_tables, m);
  ahead.wait_until_idle();
  SymbolsSummary ahead_summary;
  const std::vector<std::byte> got = symbols_frame(ahead, ahead_tables, ahead_channel, ahead_summary);

  EXPECT_EQ(at_end_summary.addresses, 2u);
  EXPECT_EQ(at_end_summary.ahead, 0u);
  EXPECT_EQ(ahead_summary.addresses, 2u);
  EXPECT_EQ(ahead_summary.ahead, 2u);
  EXPECT_EQ(ahead_summary.resolved, 2u);
  EXPECT_EQ(got, expected);

  // And the records name the two functions, in address order.
  std::vector<codec::ContextRecord> records;
  ASSERT_TRUE(codec::decode_context_frame(got, 0, records).is_ok());
  ASSERT_EQ(records.size(), 1u);
  const auto* symbols = std::get_if<codec::Symbols>(&records[0]);
  ASSERT_NE(symbols, nullptr);
  ASSERT_EQ(symbols->depths.size(), 2u);
  std::vector<std::string> names;
  for (std::uint32_t f : symbols->functions) names.push_back(f < symbols->strings.size() ? symbols->strings[f] : "");
  const bool first_lower = reinterpret_cast<std::uintptr_t>(&symbols_writer_test_first) <
                           reinterpret_cast<std::uintptr_t>(&symbols_writer_test_second);
  EXPECT_EQ(names.front(), first_lower ? "symbols_writer_test_first" : "symbols_writer_test_second");
  EXPECT_EQ(names.back(), first_lower ? "symbols_writer_test_second" : "symbols_writer_test_first");
}

TEST(SymbolsWriter, AnAddressWhoseRangeAnotherModuleTookIsSymbolizedInTheLaterModule) {
  const Module m = this_executable();
  // The executable's range, noted first under another path (a module later unloaded), holds the stack.
  const auto run = [&](bool prefetch, SymbolsSummary& summary) {
    pipeline::ContextChannel channel;
    StackTables tables(channel);
    SymbolsWriter writer(false);
    if (prefetch) tables.on_new_addresses([&](std::span<const StackTables::NewAddress> a) { writer.prefetch(a); });
    note_module(tables, 7, "/nonexistent/earlier.so", m.bias, m.start, m.end);
    note_nodes(tables, 7, 1, {reinterpret_cast<std::uint64_t>(&symbols_writer_test_first) + 1});
    writer.wait_until_idle();
    note_module(tables, 7, "", m.bias, m.start, m.end, /*unloaded=*/true);
    note_module(tables, 7, m.path, m.bias, m.start, m.end);
    return symbols_frame(writer, tables, channel, summary);
  };
  SymbolsSummary at_end, ahead;
  const std::vector<std::byte> expected = run(false, at_end);
  const std::vector<std::byte> got = run(true, ahead);
  EXPECT_EQ(got, expected);
  EXPECT_EQ(ahead.addresses, 1u);
  EXPECT_EQ(ahead.ahead, 0u);  // prefetched in the earlier module, which is not where it ends up
  EXPECT_EQ(ahead.resolved, 1u);
}

// A trace tree holds each address under many parents: the end lists every distinct address of a module once,
// however the repeats fall (write() skips most of them with a small filter before it sorts). 20,000 nodes
// over 3,000 addresses of the executable, in an order that makes the filter's slots collide, and the same
// addresses in another image, where another module holds them.
TEST(SymbolsWriter, AnAddressUnderManyParentsIsListedOnce) {
  Module m = this_executable();
  pipeline::ContextChannel channel;
  StackTables tables(channel);
  SymbolsWriter writer(false);
  const std::uint64_t base = reinterpret_cast<std::uint64_t>(&symbols_writer_test_first);
  m.end = std::max(m.end, base + 3'000 * 16 + 16);  // the test's own code (gtest's) is larger than that
  std::vector<std::uint64_t> addresses;
  for (std::uint64_t i = 0; i < 20'000; ++i) addresses.push_back(base + 1 + (i * 7919 % 3'000) * 16);
  // The same addresses in another image, in a module of its own there (another file at the same range).
  note_module(tables, 7, m.path, m.bias, m.start, m.end);
  note_nodes(tables, 7, 1, addresses);
  note_module(tables, 8, "/nonexistent/other.so", m.bias, m.start, m.end);
  note_nodes(tables, 8, 1, addresses);
  SymbolsSummary summary;
  const std::vector<std::byte> frame = symbols_frame(writer, tables, channel, summary);
  EXPECT_EQ(summary.modules, 2u);
  EXPECT_EQ(summary.addresses, 6'000u);
  std::vector<codec::ContextRecord> records;
  ASSERT_TRUE(codec::decode_context_frame(frame, 0, records).is_ok());
  std::map<std::string, std::vector<std::uint64_t>> listed;  // by module path
  for (const auto& r : records)
    if (const auto* symbols = std::get_if<codec::Symbols>(&r))
      listed[symbols->path].insert(listed[symbols->path].end(), symbols->addresses.begin(), symbols->addresses.end());
  ASSERT_EQ(listed.size(), 2u);
  for (const auto& [path, list] : listed) {
    EXPECT_EQ(list.size(), 3'000u) << path;
    EXPECT_TRUE(std::is_sorted(list.begin(), list.end())) << path;
    EXPECT_EQ(std::adjacent_find(list.begin(), list.end()), list.end()) << path;
  }
}

}  // namespace
