// Resident memory from the Resident records (memtrack/analysis/resident.h): the recording's peak is the sum
// of the latest sample of every process alive at that moment, an exited process counts no more, and the gap
// is resident anonymous memory against the live heap at the sample's position.
#include "memtrack/analysis/resident.h"

#include <gtest/gtest.h>

#include <vector>

#include "memtrack/analysis/stats.h"

namespace memtrack::analysis {
namespace {

using codec::Event;
using codec::EventKind;
using codec::Resident;

constexpr std::uint64_t kMiB = 1 << 20;

Event malloc_of(std::int32_t pid, std::uint64_t addr, std::uint64_t size, std::uint64_t ts) {
  Event e;
  e.pid = pid;
  e.tid = pid;
  e.addr = addr;
  e.size = size;
  e.timestamp = ts;
  e.kind = EventKind::Malloc;
  return e;
}

TEST(ResidentBooks, ThePeakSumsTheProcessesAliveAndTheGapIsAgainstTheLiveHeapThen) {
  Stats s;
  s.add_context(codec::RecordingInfo{"t", {"prog"}, 0, 0, {"lifecycle", "resident"}, 1});
  s.add_context(codec::ProcessStart{10, 1, 0, 1});
  s.add_context(codec::ProcessStart{11, 10, 0, 2});
  const std::vector<Event> first = {malloc_of(10, 0x1000, 8 * kMiB, 3), malloc_of(11, 0x9000, 2 * kMiB, 4)};
  s.add(first);
  // 10 holds 12 MiB of anon (8 of heap), 11 holds 3 (2 of heap): 15 together, with 10 MiB of heap.
  s.add_context(Resident{10, 2, 5, 12 * kMiB, kMiB, 0, 0, 4096, 14 * kMiB});
  s.add_context(Resident{11, 2, 6, 3 * kMiB, 0, 0, 0, 0, 3 * kMiB});
  // 11 exits; 10 grows to 14: alone it is less than the 16 both held.
  s.add_context(codec::ProcessExit{11, 2, 7, 0, {}});
  s.add_context(Resident{10, 2, 8, 14 * kMiB, kMiB, 0, 0, 4096, 15 * kMiB});
  // A sample after the process's exit would make a dead process hold memory: the recorder never writes one,
  // and the books drop nothing they do not have.
  const ResidentBooks& r = s.resident;
  EXPECT_TRUE(s.resident_recorded());
  EXPECT_EQ(r.samples(), 3u);
  EXPECT_EQ(r.peak().resident, 16 * kMiB);
  EXPECT_EQ(r.peak().timestamp, 6u);
  EXPECT_EQ(r.peak().anon, 15 * kMiB);
  EXPECT_EQ(r.peak().live_heap, 10 * kMiB);
  EXPECT_EQ(r.peak().gap(), static_cast<std::int64_t>(5 * kMiB));
  ASSERT_EQ(r.pids().size(), 2u);
  const PidResident& p10 = r.pids().at(10);
  EXPECT_EQ(p10.samples, 2u);
  EXPECT_EQ(p10.peak.resident, 15 * kMiB);
  EXPECT_EQ(p10.peak.timestamp, 8u);
  EXPECT_EQ(p10.peak.live_heap, 8 * kMiB);
  EXPECT_EQ(p10.hwm, 15 * kMiB);
  EXPECT_EQ(r.pids().at(11).peak.gap(), static_cast<std::int64_t>(kMiB));
  EXPECT_EQ(r.own_max(), 4096u);
}

TEST(ResidentBooks, HeapBlocksThatAreNotResidentMakeTheGapNegative) {
  Stats s;
  s.add_context(codec::ProcessStart{10, 1, 0, 1});
  const std::vector<Event> big = {malloc_of(10, 0x1000, 64 * kMiB, 3)};
  s.add(big);
  s.add_context(Resident{10, 1, 4, 16 * kMiB, 0, 0, 0, 0, 16 * kMiB});
  EXPECT_FALSE(s.resident_recorded());  // no Recording listing the section
  EXPECT_EQ(s.resident.peak().gap(), -static_cast<std::int64_t>(48 * kMiB));
}

}  // namespace
}  // namespace memtrack::analysis
