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
