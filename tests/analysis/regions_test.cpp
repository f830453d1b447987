// analysis::Regions on hand-made streams (analysis/regions.h): occurrence figures, the filter's positions,
// stacks and later frees, nesting per thread, descendants, and records given before their position.
#include "memtrack/analysis/regions.h"

#include <gtest/gtest.h>

#include <vector>

namespace memtrack::analysis {
namespace {

using codec::Event;
using codec::EventKind;
using codec::make_event;

Event malloc_(std::int32_t pid, std::uint64_t addr, std::uint64_t size, std::int32_t tid = 1) {
  return make_event(EventKind::Malloc, pid, tid, 0, addr, size);
}
Event free_(std::int32_t pid, std::uint64_t addr, std::int32_t tid = 1) {
  return make_event(EventKind::Free, pid, tid, 0, addr);
}

struct Collect final : ArtifactConsumer {
  std::vector<codec::ContextRecord> records;
  std::vector<Event> events;
  void add_context(const codec::ContextRecord& r) override { records.push_back(r); }
  void add(std::span<const Event> e) override { events.insert(events.end(), e.begin(), e.end()); }
};

// Feeds records and events in position order (as read_artifact does): each record before event `event`.
void feed(Regions& r, std::vector<codec::ContextRecord> records, const std::vector<Event>& events) {
  std::size_t next = 0;
  const auto pos = [](const codec::ContextRecord& c) {
    return std::visit(
        [](const auto& x) -> std::uint64_t {
          if constexpr (requires { x.event; })
            return x.event;
          else if constexpr (requires { x.first_event; })
            return x.first_event;
          else
            return 0;
        },
        c);
  };
  for (std::size_t i = 0; i <= events.size(); ++i) {
    while (next < records.size() && pos(records[next]) <= i) r.add_context(records[next++]);
    if (i < events.size()) r.add(std::span<const Event>(&events[i], 1));
  }
  while (next < records.size()) r.add_context(records[next++]);
  r.finish();
}

TEST(Regions, FiguresOfNestedOccurrencesPerThread) {
  // pid 5: A (before), region "r" on tid 1 with a nested "n" on tid 1 and an "r" on tid 2 overlapping.
  const std::vector<Event> events = {
      malloc_(5, 0xa, 100),  // 0: before
      malloc_(5, 0xb, 10),   // 1: in r(t1)
      malloc_(5, 0xc, 20),   // 2: in r(t1), n
      free_(5, 0xc),         // 3: in r(t1), n, r(t2)
      free_(5, 0xa),         // 4: in r(t1), r(t2): older for both
      malloc_(5, 0xd, 30),   // 5: in r(t1) only
  };
  std::vector<codec::ContextRecord> records = {
      codec::RegionBegin{5, 1, 1, 0, "r"}, codec::RegionBegin{5, 1, 2, 0, "n"}, codec::RegionBegin{5, 2, 3, 0, "r"},
      codec::RegionEnd{5, 1, 4, 0},  // ends n (the innermost of tid 1), not tid 2's r
      codec::RegionEnd{5, 2, 5, 0},  // ends tid 2's r
      codec::RegionEnd{5, 3, 5, 0},  // tid 3 opened nothing: ignored
  };
  Regions r;
  feed(r, records, events);
  ASSERT_EQ(r.occurrences().size(), 3u);
  const RegionOccurrence& outer = r.occurrences()[0];
  EXPECT_EQ(outer.name, "r");
  EXPECT_EQ(outer.ended, RegionOccurrence::Ended::stream_end);
  EXPECT_EQ(outer.events, 5u);
  EXPECT_EQ(outer.allocations, 3u);
  EXPECT_EQ(outer.allocated_bytes, 60u);
  EXPECT_EQ(outer.frees, 1u);
  EXPECT_EQ(outer.frees_of_older, 1u);
  EXPECT_EQ(outer.peak_bytes, 40u);  // 10 + 30 after the 20 was freed; 10 + 20 = 30 before
  EXPECT_EQ(outer.retained_bytes, 40u);
  const RegionOccurrence& inner = r.occurrences()[1];
  EXPECT_EQ(inner.name, "n");
  EXPECT_EQ(inner.events, 2u);
  EXPECT_EQ(inner.ended, RegionOccurrence::Ended::region_end);
  EXPECT_EQ(inner.retained_bytes, 0u);
  const RegionOccurrence& other = r.occurrences()[2];
  EXPECT_EQ(other.tid, 2);
  EXPECT_EQ(other.occurrence, 2u);
  EXPECT_EQ(other.events, 2u);
  EXPECT_EQ(other.frees_of_older, 2u);  // 0xc and 0xa were allocated before it
}

TEST(Regions, TheFilterRewritesPositionsAndPassesLaterFreesOfItsBlocks) {
  const std::vector<Event> events = {
      malloc_(5, 0xa, 100),                        // 0: before: not passed
      malloc_(5, 0xb, 10),                         // 1: in
      codec::make_realloc(5, 1, 0, 0xe, 0xa, 7),   // 2: in: a realloc of an older block
      malloc_(5, 0xc, 20),                         // 3: after: not passed
      codec::make_realloc(5, 1, 0, 0xf, 0xb, 50),  // 4: after, of the region's block: passed as its Free
      free_(5, 0xe),                               // 5: after, of the region's realloc: passed
  };
  std::vector<codec::ContextRecord> records = {
      codec::ProcessStart{5, 1, 0, 0},
      codec::EventStacks{0, {1, 2, 3, 4, 5, 6}},
      codec::RegionBegin{5, 1, 1, 0, "r"},
      codec::Module{5, 2, "/lib", {}, 0, 0, 1, true},  // positioned inside: rewritten to the passed count
      codec::RegionEnd{5, 1, 3, 0},
      codec::ProcessExit{5, 6, 0, 0, std::nullopt},
      codec::StreamEnd{6, 1, true},
  };
  Collect down;
  Regions r("r", &down);
  feed(r, records, events);
  EXPECT_EQ(r.selected_occurrences(), 1u);
  ASSERT_EQ(down.events.size(), 4u);
  EXPECT_EQ(down.events[0].addr, 0xbu);
  EXPECT_EQ(down.events[1].kind, EventKind::Realloc);
  EXPECT_EQ(down.events[2].kind, EventKind::Free);
  EXPECT_EQ(down.events[2].addr, 0xbu);
  EXPECT_EQ(down.events[3].addr, 0xeu);
  std::vector<std::uint32_t> ids;
  std::optional<codec::StreamEnd> end;
  std::optional<std::uint64_t> module_at, exit_at;
  for (const auto& rec : down.records) {
    if (const auto* s = std::get_if<codec::EventStacks>(&rec)) ids.insert(ids.end(), s->ids.begin(), s->ids.end());
    if (const auto* e = std::get_if<codec::StreamEnd>(&rec)) end = *e;
    if (const auto* m = std::get_if<codec::Module>(&rec)) module_at = m->event;
    if (const auto* x = std::get_if<codec::ProcessExit>(&rec)) exit_at = x->event;
  }
  EXPECT_EQ(ids, (std::vector<std::uint32_t>{2, 3, 0, 6}));  // the Free made of a realloc carries no stack
  ASSERT_TRUE(end);
  EXPECT_EQ(end->events, 4u);
  EXPECT_EQ(module_at, 1u);
  EXPECT_EQ(exit_at, 4u);
}

TEST(Regions, DescendantsAreInTheRegionAndAnExitEndsIt) {
  const std::vector<Event> events = {
      malloc_(6, 0x1, 1),  // 0: child forked before the region: in it
      malloc_(7, 0x2, 2),  // 1: not a descendant
      malloc_(8, 0x3, 4),  // 2: grandchild forked in the region
      malloc_(5, 0x4, 8),  // 3: after pid 5's exit ended the region
  };
  std::vector<codec::ContextRecord> records = {
      codec::ProcessStart{5, 1, 0, 0},     codec::ProcessStart{6, 5, 0, 0}, codec::ProcessStart{7, 1, 0, 0},
      codec::RegionBegin{5, 5, 0, 0, "r"}, codec::ProcessStart{8, 6, 2, 0}, codec::ProcessExit{5, 3, 0, 0, 0},
  };
  Regions r;
  feed(r, records, events);
  ASSERT_EQ(r.occurrences().size(), 1u);
  EXPECT_EQ(r.occurrences()[0].allocated_bytes, 5u);
  EXPECT_EQ(r.occurrences()[0].ended, RegionOccurrence::Ended::exit);
  EXPECT_EQ(r.occurrences()[0].end_event, 3u);
}

TEST(Regions, RecordsGivenEarlyWaitForTheirPosition) {
  const std::vector<Event> events = {malloc_(5, 0x1, 1), malloc_(5, 0x2, 2), malloc_(5, 0x3, 4)};
  Regions r;
  r.add_context(codec::Pause{5, 5, 1, 0, "library"});
  r.add_context(codec::RegionBegin{5, 5, 1, 0, "r"});
  r.add_context(codec::RegionEnd{5, 5, 2, 0});
  r.add_context(codec::Resume{5, 5, 2, 0, "library"});
  r.add(events);
  r.finish();
  ASSERT_EQ(r.occurrences().size(), 1u);
  EXPECT_EQ(r.occurrences()[0].allocated_bytes, 2u);
  ASSERT_EQ(r.paused().size(), 1u);
  EXPECT_TRUE(r.paused()[0].resumed);
  EXPECT_EQ(r.paused()[0].begin_event, 1u);
  EXPECT_EQ(r.paused()[0].end_event, 2u);
}

}  // namespace
}  // namespace memtrack::analysis
