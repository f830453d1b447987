// LiveHeap (the live-heap model of the recorder's summary line and of `memtrack stats`) against a std::map model:
// random allocations, frees and reallocs over a small address space (so probe chains collide and wrap),
// across processes, with table growth.
#include "memtrack/analysis/live_heap.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <utility>
#include <vector>

namespace {

using memtrack::analysis::LiveHeap;
using memtrack::codec::Event;
using memtrack::codec::EventKind;
using memtrack::codec::make_event;
using memtrack::codec::make_realloc;

TEST(LiveHeap, PeakOfLiveBytes) {
  LiveHeap heap;
  const std::vector<Event> events = {
      make_event(EventKind::Malloc, 1, 1, 0, 0x1000, 100),   make_event(EventKind::Calloc, 1, 1, 0, 0x2000, 50),
      make_event(EventKind::Free, 1, 1, 0, 0x1000),          make_realloc(1, 1, 0, 0x3000, 0x2000, 400),
      make_event(EventKind::Mmap, 1, 1, 0, 0x9000, 1 << 20),  // mappings are not heap
      make_event(EventKind::Free, 2, 2, 0, 0x3000),           // another process: not this block
  };
  heap.add(events);
  EXPECT_EQ(heap.total_live_bytes(), 400u);
  EXPECT_EQ(heap.total_peak_bytes(), 400u);
  EXPECT_EQ(heap.pids().size(), 2u);
}

TEST(LiveHeap, MatchesAMapModelUnderCollisionsAndGrowth) {
  LiveHeap heap;
  std::map<std::pair<int, std::uint64_t>, std::uint64_t> model;
  std::uint64_t live = 0, peak = 0;
  std::mt19937_64 rng(42);
  std::vector<Event> batch;
  for (int round = 0; round < 200; ++round) {
    batch.clear();
    for (int i = 0; i < 1000; ++i) {
      const int pid = 1 + static_cast<int>(rng() % 3);
      const std::uint64_t addr = 16 * (1 + rng() % 20000);  // dense: ~60k possible keys over 3 pids
      const std::uint64_t size = 1 + rng() % 4096;
      const auto key = std::make_pair(pid, addr);
      const auto it = model.find(key);
      const unsigned op = static_cast<unsigned>(rng() % 3);
      if (it == model.end() || op == 0) {
        if (it != model.end()) continue;  // keep the stream well formed: no double allocation
        batch.push_back(make_event(EventKind::Malloc, pid, pid, 0, addr, size));
        model[key] = size;
        live += size;
      } else if (op == 1) {
        batch.push_back(make_event(EventKind::Free, pid, pid, 0, addr));
        live -= it->second;
        model.erase(it);
      } else {
        const std::uint64_t to = 16 * (1 + rng() % 20000);
        if (to != addr && model.contains({pid, to})) continue;
        batch.push_back(make_realloc(pid, pid, 0, to, addr, size));
        live -= it->second;
        model.erase(it);
        model[{pid, to}] = size;
        live += size;
      }
      peak = std::max(peak, live);
    }
    heap.add(batch);
    ASSERT_EQ(heap.total_live_bytes(), live) << "round " << round;
  }
  // Peaks are sampled per event in both, so they agree exactly.
  EXPECT_EQ(heap.total_peak_bytes(), peak);
  EXPECT_GT(model.size(), 4096u);  // the table grew past its initial size
}

}  // namespace

namespace {

using memtrack::analysis::LiveHeap;
using memtrack::codec::EventKind;
using memtrack::codec::make_event;

// Stats are returned and copied by value: a copy (or a move) must keep its own books, so feeding it goes on
// from where the original was, without touching the original.
TEST(LiveHeap, CopiesAndMovesKeepTheirOwnBooks) {
  LiveHeap a;
  const std::vector<memtrack::codec::Event> first = {make_event(EventKind::Malloc, 1, 1, 0, 0x1000, 100),
                                                     make_event(EventKind::Malloc, 2, 2, 0, 0x1000, 30)};
  a.add(first);
  LiveHeap b = a;
  const std::vector<memtrack::codec::Event> more = {make_event(EventKind::Free, 1, 1, 0, 0x1000),
                                                    make_event(EventKind::Malloc, 2, 2, 0, 0x2000, 5)};
  b.add(more);
  EXPECT_EQ(a.total_live_bytes(), 130u);
  EXPECT_EQ(a.pids().at(1).live_count, 1u);
  EXPECT_EQ(a.pids().at(2).live_bytes, 30u);
  EXPECT_EQ(b.total_live_bytes(), 35u);
  EXPECT_EQ(b.pids().at(1).live_count, 0u);
  EXPECT_EQ(b.pids().at(1).unmatched_frees, 0u);
  EXPECT_EQ(b.pids().at(2).live_bytes, 35u);

  LiveHeap c = std::move(b);
  c.add(std::vector{make_event(EventKind::Free, 2, 2, 0, 0x2000)});
  EXPECT_EQ(c.total_live_bytes(), 30u);
  EXPECT_EQ(c.total_peak_bytes(), 130u);
  EXPECT_TRUE(b.pids().empty());  // NOLINT(bugprone-use-after-move): moved-from is documented as empty
  b.add(first);
  EXPECT_EQ(b.total_live_bytes(), 130u);
  EXPECT_EQ(c.total_live_bytes(), 30u);
  a = c;
  a.add(std::vector{make_event(EventKind::Free, 2, 2, 0, 0x1000)});
  EXPECT_EQ(a.total_live_bytes(), 0u);
  EXPECT_EQ(c.total_live_bytes(), 30u);
}

}  // namespace
