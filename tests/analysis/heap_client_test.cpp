// The one heap model and its clients (live_heap.h: HeapClient; sites.h; stream_order.h: PositionQueue):
// every block change reaches the client with the block's payload, in stream order; sites fed through a
// heap another consumer drives get the same numbers whatever the consumers' order; records wait for their
// position in one queue.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "memtrack/analysis/live_heap.h"
#include "memtrack/analysis/sites.h"
#include "memtrack/analysis/stream_order.h"
#include "memtrack/analysis/timeline.h"

namespace memtrack::analysis {
namespace {

using codec::Event;
using codec::EventKind;
using codec::make_event;

struct Log final : HeapClient {
  std::vector<std::string> seen;
  std::uint32_t next = 7;
  std::uint32_t allocated(const Event& e, std::uint64_t index) override {
    seen.push_back("alloc " + std::to_string(e.addr) + " #" + std::to_string(index) + " -> " + std::to_string(next));
    return next++;
  }
  void released(std::int32_t pid, std::uint64_t addr, std::uint64_t size, std::uint32_t payload, bool inherited,
                Release how) override {
    static const char* const kHow[] = {"freed", "replaced", "exec", "exit"};
    seen.push_back(std::string(kHow[static_cast<int>(how)]) + " " + std::to_string(pid) + ":" + std::to_string(addr) +
                   " " + std::to_string(size) + " p" + std::to_string(payload) + (inherited ? " inherited" : ""));
  }
  void new_peak() override { seen.push_back("peak"); }
};

TEST(HeapClient, SeesEveryBlockWithItsPayloadAndEveryNewPeak) {
  LiveHeap heap;
  Log log;
  heap.set_client(&log);
  heap.add_context(codec::ProcessStart{1, 0, 0, 0});
  heap.add(std::vector<Event>{make_event(EventKind::Malloc, 1, 1, 1, 16, 100),
                              make_event(EventKind::Malloc, 1, 1, 2, 32, 50),
                              make_event(EventKind::Free, 1, 1, 3, 16),
                              make_event(EventKind::Malloc, 1, 1, 4, 32, 20)});  // a missed free of 32
  heap.add_context(codec::ProcessStart{2, 1, 4, 5});                            // a fork: 32 is inherited
  heap.add(std::vector<Event>{make_event(EventKind::Free, 2, 2, 6, 32), make_event(EventKind::Malloc, 2, 2, 7, 48, 30),
                              make_event(EventKind::Malloc, 2, 2, 8, 64, 200)});
  heap.add_context(codec::ProcessExit{2, 7, 9, 0, std::nullopt});
  heap.add_context(codec::ProcessExec{1, 7, 10, "/bin/x", {"x"}});
  const std::vector<std::string> want = {
      "alloc 16 #0 -> 7", "peak", "alloc 32 #1 -> 8", "peak", "freed 1:16 100 p7",
      "alloc 32 #3 -> 9", "replaced 1:32 50 p8",
      // The child frees its copy (the parent still holds and counts it), allocates 30 and 200: 20 + 230.
      "freed 2:32 20 p9 inherited", "alloc 48 #5 -> 10", "alloc 64 #6 -> 11", "peak",
  };
  ASSERT_GE(log.seen.size(), want.size());
  EXPECT_EQ(std::vector<std::string>(log.seen.begin(), log.seen.begin() + static_cast<std::ptrdiff_t>(want.size())),
            want);
  // Then the exit (the child's own blocks, in table order) and the exec (the parent's block).
  std::vector<std::string> ends(log.seen.begin() + static_cast<std::ptrdiff_t>(want.size()), log.seen.end());
  std::sort(ends.begin(), ends.end());
  EXPECT_EQ(ends, (std::vector<std::string>{"exec 1:32 20 p9", "exit 2:48 30 p10", "exit 2:64 200 p11"}));
  EXPECT_EQ(heap.total_peak_bytes(), 250u);

  // Payloads of the blocks still live, and a copy without the client.
  LiveHeap other;
  Log log2;
  other.set_client(&log2);
  other.add(std::vector<Event>{make_event(EventKind::Malloc, 3, 3, 1, 16, 5)});
  LiveHeap copy = other;
  copy.add(std::vector<Event>{make_event(EventKind::Free, 3, 3, 2, 16)});
  EXPECT_EQ(log2.seen, (std::vector<std::string>{"alloc 16 #0 -> 7", "peak"}));
  std::vector<std::uint32_t> payloads;
  other.for_each_live_block([&](std::int32_t, std::uint64_t, std::uint32_t p, bool) { payloads.push_back(p); });
  EXPECT_EQ(payloads, std::vector<std::uint32_t>{7});
}

// One pid's numbers: its heap follows its own lifecycle (an exec frees the old image's blocks), so its peak
// is the most it held at once: here 100 before the exec, 30 + 80 after (not 210).
TEST(HeapClient, APidFilteredSiteHeapFollowsThatPidsExec) {
  SiteAccumulator acc(10);
  acc.add_context(codec::ProcessStart{10, 1, 0, 0});
  acc.add_context(codec::StackNodes{10, 0, 1, {0}, {0x500}});
  acc.add_context(codec::EventStacks{0, {1, 0}});
  acc.add(std::vector<Event>{make_event(EventKind::Malloc, 10, 10, 1, 0x10, 100),
                             make_event(EventKind::Malloc, 11, 11, 2, 0x10, 1000)});  // another pid
  acc.add_context(codec::ProcessExec{10, 2, 3, "/bin/y", {"y"}});
  acc.add_context(codec::StackNodes{10, 2, 1, {0}, {0x600}});
  acc.add_context(codec::EventStacks{2, {1, 1}});
  acc.add(std::vector<Event>{make_event(EventKind::Malloc, 10, 10, 4, 0x20, 30),
                             make_event(EventKind::Malloc, 10, 10, 5, 0x30, 80)});
  const SitesResult r = acc.result(SiteOrder::peak, 0);
  EXPECT_EQ(r.peak_bytes, 110u);
  ASSERT_EQ(r.sites.size(), 2u);
  EXPECT_EQ(r.sites[0].totals.peak_bytes, 110u);  // 0x600's two blocks
  EXPECT_EQ(r.sites[0].totals.leaked_bytes, 110u);
  EXPECT_EQ(r.sites[1].totals.peak_bytes, 0u);  // 0x500's block was gone with the exec
  EXPECT_EQ(r.sites[1].totals.leaked_bytes, 0u);
}

// `memtrack report`'s wiring: the timeline drives the heap, the sites are its client. Whatever the order of
// the consumers, the sites at the peak are those of their own heap, and sum to the peak.
TEST(HeapClient, SitesOnASharedHeapMatchTheirOwnInAnyConsumerOrder) {
  const std::vector<codec::ContextRecord> records = {
      codec::ProcessStart{20, 1, 0, 0},
      codec::StackNodes{20, 0, 1, {0, 0}, {0x500, 0x600}},
      codec::EventStacks{0, {1, 2, 0, 1, 0}},
  };
  const std::vector<Event> events = {
      make_event(EventKind::Malloc, 20, 20, 1, 0x10, 100), make_event(EventKind::Malloc, 20, 20, 2, 0x20, 300),
      make_event(EventKind::Free, 20, 20, 3, 0x20),        make_event(EventKind::Malloc, 20, 20, 4, 0x30, 250),
      make_event(EventKind::Free, 20, 20, 5, 0x10),
  };
  enum class Wiring { own_heap, sites_first, timeline_first };
  const auto run = [&](Wiring wiring) {
    SiteAccumulator own;
    LiveHeap heap;
    TimelineBuilder timeline(heap);
    SiteAccumulator on_shared(std::nullopt, &heap);
    std::vector<ArtifactConsumer*> consumers;
    if (wiring == Wiring::own_heap) {
      consumers = {&own};
    } else if (wiring == Wiring::sites_first) {
      consumers = {&on_shared, &timeline};
    } else {
      consumers = {&timeline, &on_shared};
    }
    StreamOrder order(consumers);
    std::vector<codec::ContextRecord> copy = records;
    order.add(copy, events);
    order.finish();
    return (wiring == Wiring::own_heap ? own : on_shared).result(SiteOrder::peak, 0);
  };
  for (const SitesResult& r : {run(Wiring::own_heap), run(Wiring::sites_first), run(Wiring::timeline_first)}) {
    EXPECT_EQ(r.peak_bytes, 400u);
    ASSERT_EQ(r.sites.size(), 2u);
    EXPECT_EQ(r.sites[0].totals.peak_bytes, 300u);  // 0x600 at the peak (event 1)
    EXPECT_EQ(r.sites[1].totals.peak_bytes, 100u);
    EXPECT_EQ(r.sites[1].totals.temporary, 0u);
    EXPECT_EQ(r.sites[0].totals.temporary, 1u);  // 0x20 freed before its thread's next allocation
  }
}

TEST(PositionQueue, RecordsComeBeforeTheEventAtTheirPositionInTheOrderGiven) {
  PositionQueue q;
  q.push(3, codec::ProcessExec{1, 3, 0, "b", {}});
  q.push(1, codec::ProcessStart{1, 0, 1, 0});
  q.push(3, codec::ProcessExit{1, 3, 0, 0, std::nullopt});
  q.push(5, codec::ProcessExit{2, 5, 0, 0, std::nullopt});
  const std::vector<Event> events(5, make_event(EventKind::Malloc, 1, 1, 0, 0x10, 1));
  std::string seen;
  q.feed(
      0, events, [&](std::span<const Event> run) { seen += "e" + std::to_string(run.size()); },
      [&](const codec::ContextRecord& r) { seen += "r" + std::to_string(r.index()); });
  const std::string start = std::to_string(codec::ContextRecord(codec::ProcessStart{}).index());
  const std::string exec = std::to_string(codec::ContextRecord(codec::ProcessExec{}).index());
  const std::string exit = std::to_string(codec::ContextRecord(codec::ProcessExit{}).index());
  EXPECT_EQ(seen, "e1r" + start + "e2r" + exec + "r" + exit + "e2");
  EXPECT_EQ(q.size(), 1u);  // at 5, the end of the events: waits for more events or the end
  EXPECT_EQ(q.next(), 5u);
  q.drain([&](const codec::ContextRecord& r) { seen += "r" + std::to_string(r.index()); });
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.next(), UINT64_MAX);
}

}  // namespace
}  // namespace memtrack::analysis
