// The report's timeline (analysis/include/memtrack/analysis/timeline.h): bounded series whose points are the
// exact maxima of their buckets, per-image series and lifecycle markers, numbers computed here independently.
#include "memtrack/analysis/timeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace memtrack::analysis {
namespace {

using codec::EventKind;
using codec::make_event;

TEST(Timeline, MaxSeriesKeepsEachBucketsExactMaximumWithinTheBound) {
  std::mt19937_64 rng(7);
  std::vector<std::uint64_t> values(100000);
  for (auto& v : values) v = rng() % 1000000;
  MaxSeries s(500);
  for (std::size_t t = 0; t < values.size(); ++t) s.add(t, values[t], values[t] / 2);
  const auto points = s.points();
  ASSERT_LE(points.size(), 500u);
  ASSERT_GE(points.size(), 250u);  // the width only doubles when time runs past the last bucket
  EXPECT_EQ(s.samples(), values.size());
  // Widths are powers of two: the smallest one that fits 100,000 ns into 500 buckets is 256.
  const std::uint64_t width = 256;
  std::uint64_t overall = 0;
  for (const auto& p : points) {
    const std::uint64_t begin = p.t / width * width, end = std::min<std::uint64_t>(begin + width, values.size());
    const std::uint64_t expected = *std::max_element(values.begin() + static_cast<std::ptrdiff_t>(begin),
                                                     values.begin() + static_cast<std::ptrdiff_t>(end));
    EXPECT_EQ(p.value, expected) << "bucket at " << begin;
    EXPECT_EQ(values[p.t], p.value) << "the point's time is its maximum's";
    EXPECT_EQ(p.value2, expected / 2);  // value2 keeps its own maximum (here half of the value's)
    overall = std::max(overall, p.value);
  }
  EXPECT_EQ(overall, *std::max_element(values.begin(), values.end())) << "the peak survives downsampling";
  for (std::size_t i = 1; i < points.size(); ++i) EXPECT_LT(points[i - 1].t, points[i].t);
}

TEST(Timeline, ImagesMarkersAndTheGlobalPeak) {
  LiveHeap heap;
  TimelineBuilder b(heap, 100);
  // pid 1 starts at t=100, allocates 10 then 20; pid 2 forks at t=150 (event 2), allocates 5, exits at
  // t=170 (event 3); pid 1 frees 20 at t=200. Global live: 10, 30, (fork) 30, 35, (exit) 30, 10 (a lifecycle
  // record is a sample too). Peak 35 at t=160.
  b.add_context(codec::ProcessStart{1, 0, 0, 90});
  const std::vector<codec::Event> a = {make_event(EventKind::Malloc, 1, 1, 100, 0x10, 10),
                                       make_event(EventKind::Malloc, 1, 1, 120, 0x20, 20)};
  b.add(a);
  b.add_context(codec::ProcessStart{2, 1, 2, 150});
  const std::vector<codec::Event> c = {make_event(EventKind::Malloc, 2, 2, 160, 0x30, 5)};
  b.add(c);
  b.add_context(codec::ProcessExit{2, 3, 170, 0, std::nullopt});
  const std::vector<codec::Event> d = {make_event(EventKind::Free, 1, 1, 200, 0x20)};
  b.add(d);
  const Timeline t = b.result();
  EXPECT_TRUE(t.has_lifecycle);
  EXPECT_EQ(t.peak_bytes, 35u);
  EXPECT_EQ(t.peak_t_ns, 60u);  // since the first event, t=100
  std::vector<std::uint64_t> heap_values;
  for (const auto& p : t.total) heap_values.push_back(p.value);
  EXPECT_EQ(heap_values, (std::vector<std::uint64_t>{10, 30, 30, 35, 30, 10}));
  ASSERT_EQ(t.markers.size(), 3u);
  EXPECT_EQ(t.markers[0].kind, TimelineMarker::Kind::start);
  EXPECT_EQ(t.markers[0].t_ns, 0u);  // before the first event: at the origin
  EXPECT_EQ(t.markers[1].label, "pid 2 from 1");
  EXPECT_EQ(t.markers[2].kind, TimelineMarker::Kind::exit);
  EXPECT_EQ(t.markers[2].t_ns, 70u);
  EXPECT_EQ(t.markers[2].label, "exit status 0");
  ASSERT_EQ(t.images.size(), 2u);
  // Largest peak first: the fork child's image holds its inherited 30 B and its own 5 B (LiveHeap's books
  // per image; the global sum counts inherited blocks once), then pid 1's 30 B, down to 10 B at the end.
  EXPECT_EQ(t.images[0].pid, 2);
  EXPECT_EQ(t.images[0].peak_bytes, 35u);
  EXPECT_EQ(t.images[1].pid, 1);
  EXPECT_EQ(t.images[1].peak_bytes, 30u);
  EXPECT_EQ(t.images[1].points.back().value, 10u);
}

}  // namespace
}  // namespace memtrack::analysis
