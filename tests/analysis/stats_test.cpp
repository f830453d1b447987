// The summary `memtrack stats` reports (memtrack::analysis): on a generated trace every figure matches a reference
// computed here in the plainest way (std::map per (pid, addr), page sets for mappings), sequentially and through the
// frame index at any number of threads and frames in flight.
#include "memtrack/analysis/stats.h"

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <bit>
#include <cstring>
#include <map>
#include <set>

#include "common/artifacts.h"
#include "memtrack/codec/byte_source.h"
#include "memtrack/codec/seek_table.h"

namespace memtrack::analysis {
namespace {

using codec::Event;
using codec::EventKind;

struct Reference {
  std::uint64_t events = 0, bytes_allocated = 0, brk_bytes = 0, first_ts = UINT64_MAX, last_ts = 0;
  std::map<int, std::uint64_t> by_kind, by_pid;
  std::map<std::size_t, std::uint64_t> histogram;
  struct Pid {
    std::map<std::uint64_t, std::uint64_t> live;
    std::set<std::uint64_t> pages;
    std::uint64_t live_bytes = 0, peak = 0, peak_ts = 0, peak_pages = 0, peak_pages_ts = 0, unmatched = 0;
  };
  std::map<int, Pid> pids;
  std::uint64_t total = 0, total_peak = 0, total_peak_ts = 0;
};

// Recomputed without the accumulator's code: bucket by counting bits, pages for mappings (the generator's
// mappings are page-aligned), a linear walk over every event.
Reference reference(const std::vector<Event>& events) {
  Reference r;
  for (const Event& e : events) {
    ++r.events;
    ++r.by_kind[static_cast<int>(e.kind)];
    ++r.by_pid[e.pid];
    r.first_ts = std::min(r.first_ts, e.timestamp);
    r.last_ts = std::max(r.last_ts, e.timestamp);
    auto& p = r.pids[e.pid];
    auto free_block = [&](std::uint64_t addr) {
      auto it = p.live.find(addr);
      if (it == p.live.end()) {
        ++p.unmatched;
        return;
      }
      p.live_bytes -= it->second;
      r.total -= it->second;
      p.live.erase(it);
    };
    const bool alloc = e.kind == EventKind::Malloc || e.kind == EventKind::Calloc ||
                       e.kind == EventKind::AlignedAlloc || e.kind == EventKind::Realloc;
    if (alloc) {
      r.bytes_allocated += e.size;
      std::size_t bucket = 0;
      for (std::uint64_t s = e.size; s != 0; s >>= 1) ++bucket;
      ++r.histogram[bucket];
      if (e.kind == EventKind::Realloc && e.has_old_addr()) free_block(e.old_addr);
      if (p.live.count(e.addr)) {
        p.live_bytes -= p.live[e.addr];
        r.total -= p.live[e.addr];
      }
      p.live[e.addr] = e.size;
      p.live_bytes += e.size;
      r.total += e.size;
      if (p.live_bytes > p.peak) p.peak = p.live_bytes, p.peak_ts = e.timestamp;
      if (r.total > r.total_peak) r.total_peak = r.total, r.total_peak_ts = e.timestamp;
    } else if (e.kind == EventKind::Free) {
      free_block(e.addr);
    } else if (e.kind == EventKind::Mmap) {
      for (std::uint64_t a = e.addr; a < e.addr + e.size; a += 4096) p.pages.insert(a);
      if (p.pages.size() * 4096 > p.peak_pages) p.peak_pages = p.pages.size() * 4096, p.peak_pages_ts = e.timestamp;
    } else if (e.kind == EventKind::Munmap) {
      for (std::uint64_t a = e.addr; a < e.addr + e.size; a += 4096) p.pages.erase(a);
    } else if (e.kind == EventKind::Brk) {
      r.brk_bytes += e.size;
    }
  }
  return r;
}

void expect_matches(const Stats& s, const Reference& r) {
  ASSERT_TRUE(s.status.is_ok()) << s.status.message();
  EXPECT_EQ(s.counts.events, r.events);
  EXPECT_EQ(s.counts.bytes_allocated, r.bytes_allocated);
  EXPECT_EQ(s.counts.brk_bytes, r.brk_bytes);
  EXPECT_EQ(s.counts.first_timestamp, r.first_ts);
  EXPECT_EQ(s.counts.last_timestamp, r.last_ts);
  for (int k = 1; k <= 8; ++k) {
    const auto it = r.by_kind.find(k);
    EXPECT_EQ(s.counts.by_kind[static_cast<std::size_t>(k)], it == r.by_kind.end() ? 0u : it->second) << k;
  }
  const std::map<int, std::uint64_t> by_pid(s.counts.by_pid.begin(), s.counts.by_pid.end());
  EXPECT_EQ(by_pid, r.by_pid);
  for (std::size_t b = 0; b < kSizeBuckets; ++b) {
    const auto it = r.histogram.find(b);
    EXPECT_EQ(s.counts.size_histogram[b], it == r.histogram.end() ? 0u : it->second) << b;
  }
  EXPECT_EQ(s.heap.total_peak_bytes(), r.total_peak);
  EXPECT_EQ(s.heap.total_peak_timestamp(), r.total_peak_ts);
  ASSERT_EQ(s.heap.pids().size(), r.pids.size());
  for (const auto& [pid, p] : r.pids) {
    const PidHeap& h = s.heap.pids().at(pid);
    EXPECT_EQ(h.peak_bytes, p.peak) << pid;
    EXPECT_EQ(h.peak_timestamp, p.peak_ts) << pid;
    EXPECT_EQ(h.live_count, p.live.size()) << pid;  // leaks
    EXPECT_EQ(h.live_bytes, p.live_bytes) << pid;
    EXPECT_EQ(h.unmatched_frees, p.unmatched) << pid;
    EXPECT_EQ(h.mapped_bytes, p.pages.size() * 4096) << pid;
    EXPECT_EQ(h.peak_mapped_bytes, p.peak_pages) << pid;
    EXPECT_EQ(h.peak_mapped_timestamp, p.peak_pages_ts) << pid;
  }
}

TEST(Stats, ReferenceTraceHasTheAnomaliesItShouldExercise) {
  const auto events = testing::generate_trace(50000, 11);
  const auto r = reference(events);
  std::uint64_t leaks = 0, unmatched = 0;
  for (const auto& [pid, p] : r.pids) leaks += p.live.size(), unmatched += p.unmatched;
  EXPECT_GT(leaks, 100u);
  EXPECT_GT(unmatched, 100u);
  EXPECT_EQ(r.pids.size(), 3u);
}

TEST(Stats, SequentialMatchesTheReference) {
  const auto events = testing::generate_trace(50000, 11);
  const auto a = testing::build_artifact(events, 4096, false);
  codec::MemorySource source(a.bytes);
  const Stats s = compute_stats(source, "t.zst");
  expect_matches(s, reference(events));
  EXPECT_EQ(s.file.frames, a.frame_offsets.size());
  EXPECT_EQ(s.file.compressed_bytes, a.bytes.size());
  EXPECT_FALSE(s.file.indexed);
}

TEST(Stats, IndexedMatchesTheReferenceAtAnyParallelism) {
  const auto events = testing::generate_trace(50000, 12);
  const auto a = testing::build_artifact(events, 4096, true);
  codec::Status st;
  const std::uint64_t size =
      codec::seek_table_size(std::span(a.bytes.data() + a.bytes.size() - 9, 9), a.bytes.size(), st);
  codec::SeekTable index;
  ASSERT_TRUE(
      codec::parse_seek_table(std::span(a.bytes.data() + a.bytes.size() - size, size), a.bytes.size(), index).is_ok());
  const ReadAt read = [&](std::uint64_t offset, std::span<std::byte> out) {
    std::memcpy(out.data(), a.bytes.data() + offset, out.size());
    return codec::Status{};
  };
  const Reference r = reference(events);
  for (int threads : {1, 2}) {
    for (std::size_t in_flight : {1u, 2u, 3u, 0u}) {
      tbb::task_arena arena(threads);
      Stats s;
      arena.execute([&] { s = compute_stats_indexed(index, read, "t.zst", {}, in_flight); });
      SCOPED_TRACE(std::to_string(threads) + " threads, " + std::to_string(in_flight) + " in flight");
      expect_matches(s, r);
      EXPECT_EQ(s.file.frames, a.frame_offsets.size());
      EXPECT_EQ(s.file.compressed_bytes, a.bytes.size());
      EXPECT_TRUE(s.file.indexed);
    }
  }
}

TEST(Stats, ADamagedFrameStopsIndexedStatsAtThePrefix) {
  const auto events = testing::generate_trace(20000, 13);
  auto a = testing::build_artifact(events, 4096, true);
  a.bytes[a.frame_offsets[3] + 100] ^= std::byte{0x10};
  codec::Status st;
  const std::uint64_t size =
      codec::seek_table_size(std::span(a.bytes.data() + a.bytes.size() - 9, 9), a.bytes.size(), st);
  codec::SeekTable index;
  ASSERT_TRUE(
      codec::parse_seek_table(std::span(a.bytes.data() + a.bytes.size() - size, size), a.bytes.size(), index).is_ok());
  const Stats s = compute_stats_indexed(
      index,
      [&](std::uint64_t offset, std::span<std::byte> out) {
        std::memcpy(out.data(), a.bytes.data() + offset, out.size());
        return codec::Status{};
      },
      "d.zst");
  EXPECT_FALSE(s.status.is_ok());
  EXPECT_EQ(s.status.message().rfind("d.zst: frame 3 at byte " + std::to_string(a.frame_offsets[3]) + ": ", 0), 0u)
      << s.status.message();
  EXPECT_EQ(s.file.frames, 3u);
  expect_matches(Stats{s.counts, s.heap, s.file, {}, {}, {}}, reference({events.begin(), events.begin() + 3 * 4096}));
}

}  // namespace
}  // namespace memtrack::analysis
