// Resident bytes of live blocks from a ResidentPages snapshot (memtrack/analysis/resident_pages.h): the page
// split rule on a crafted bitmap, and the sites' resident_bytes (sites.h) at each process's last snapshot.
#include "memtrack/analysis/resident_pages.h"

#include <gtest/gtest.h>

#include <vector>

#include "memtrack/analysis/sites.h"

namespace memtrack::analysis {
namespace {

using codec::EventKind;
using codec::make_event;
using codec::ResidentPages;

constexpr std::uint64_t kPage = 4096;

// Range 1: 8 pages at 0x10000, present 0, 1, 2, 4, 7 (bits 0b1001'0111). Range 2: 2 pages at 0x30000, both.
ResidentPages crafted() {
  ResidentPages r;
  r.pid = 10;
  r.page_size = kPage;
  r.starts = {0x10000, 0x30000};
  r.pages = {8, 2};
  r.present = {0x97, 0x03};
  return r;
}

TEST(ResidentPages, APresentPageIsSplitByTheBlocksBytesInItAndAbsentPagesCountNothing) {
  const std::vector<LiveBlock> blocks = {
      {0x10000, 1024},           // page 0, with the next block: 1/4 of it
      {0x10400, 3072},           // page 0: 3/4
      {0x11800, 0x2000},         // 2 KiB of page 1 (alone: all of it), page 2 whole, 2 KiB of page 3 (absent)
      {0x14000 + 100, 100},      // 100 bytes alone on present page 4: the page is its
      {0x15000, 0x2000 + 10},    // pages 5, 6 absent; 10 bytes of present page 7
      {0x20000, kPage},          // in no range: nothing
      {0x10000 + 5000, 0},       // empty: nothing
      {0x2fff0, 0x1000 + 0x11},  // 16 bytes before range 2 (outside), its page 0 whole, 1 byte of its page 1
  };
  const std::vector<std::uint64_t> got = resident_bytes_of(blocks, crafted());
  const std::vector<std::uint64_t> want = {1024, 3072, 2 * kPage, kPage, kPage, 0, 0, 2 * kPage};
  EXPECT_EQ(got, want);

  // Three blocks on one page of which one is absent elsewhere: 1000 + 2000 + 1096 bytes of page 4.
  const std::vector<LiveBlock> three = {{0x14000, 1000}, {0x14000 + 1000, 2000}, {0x14000 + 3000, 1096 + kPage}};
  const std::vector<std::uint64_t> split = resident_bytes_of(three, crafted());
  EXPECT_EQ(split, (std::vector<std::uint64_t>{1000 * kPage / 4096, 2000 * kPage / 4096, 1096 * kPage / 4096}));

  // A long block: its inner pages are counted by their bits (64 at a time), its end pages by the rule.
  ResidentPages big;
  big.page_size = kPage;
  big.starts = {0x100000};
  big.pages = {1000};
  big.present.assign(125, 0);
  std::uint64_t set = 0;
  for (std::uint64_t p = 0; p < 1000; p += 3) big.present[p / 8] |= static_cast<std::uint8_t>(1u << (p % 8)), ++set;
  const std::vector<LiveBlock> one = {{0x100000, 1000 * kPage}};
  EXPECT_EQ(resident_bytes_of(one, big), std::vector<std::uint64_t>{set * kPage});
}

// Two sites in pid 10: site 0x1111 holds a 64 KiB block at 0x10000, site 0x2222 an 8 KiB one at 0x30000.
struct TwoSites {
  SiteAccumulator acc;
  TwoSites() {
    acc.add_context(codec::ProcessStart{10, 1, 0, 0});
    acc.add_context(codec::StackNodes{10, 0, 1, {0, 0}, {0x1111, 0x2222}});
    acc.add_context(codec::EventStacks{0, {1, 2}});
    const std::vector<codec::Event> events = {make_event(EventKind::Malloc, 10, 10, 1, 0x10000, 16 * kPage),
                                              make_event(EventKind::Malloc, 10, 10, 2, 0x30000, 2 * kPage)};
    acc.add(events);
  }
  std::uint64_t resident_of(std::uint64_t address) {
    const SitesResult r = acc.result(SiteOrder::resident, 0);
    EXPECT_TRUE(r.has_resident_pages);
    for (const Site& s : r.sites)
      if (s.stack.at(0).address == address) return s.totals.resident_bytes;
    ADD_FAILURE() << "no site " << address;
    return 0;
  }
};

ResidentPages snapshot(std::uint64_t event, std::uint8_t first_byte, std::uint32_t part = 0) {
  ResidentPages r;
  r.pid = 10;
  r.event = event;
  r.part = part;
  r.page_size = kPage;
  r.starts = {0x10000, 0x30000};
  r.pages = {16, 2};
  r.present = {first_byte, 0, 0x03};
  return r;
}

TEST(ResidentPages, EachSiteKeepsItsBytesAtTheProcessesLastSnapshot) {
  TwoSites t;
  EXPECT_FALSE(t.acc.result(SiteOrder::peak, 0).has_resident_pages);
  t.acc.add_context(snapshot(2, 0x01));  // one page of the first block
  EXPECT_EQ(t.resident_of(0x1111), kPage);
  t.acc.add_context(snapshot(2, 0xff, 1));  // a second part of the same snapshot adds (here: the same ranges)
  EXPECT_EQ(t.resident_of(0x1111), 9 * kPage);
  t.acc.add_context(snapshot(2, 0x0f));  // a later snapshot replaces the earlier one
  EXPECT_EQ(t.resident_of(0x1111), 4 * kPage);
  EXPECT_EQ(t.resident_of(0x2222), 2 * kPage);
  const SitesResult r = t.acc.result(SiteOrder::resident, 1);
  ASSERT_EQ(r.sites.size(), 1u);
  EXPECT_EQ(r.sites[0].stack.at(0).address, 0x1111u);
  EXPECT_EQ(r.rest.resident_bytes, 2 * kPage);

  // The image execs: its last snapshot stays; the new image's blocks are counted by its own snapshots.
  t.acc.add_context(codec::ProcessExec{10, 2, 3, "/bin/other", {}});
  EXPECT_EQ(t.resident_of(0x1111), 4 * kPage);
  t.acc.add_context(snapshot(2, 0xff));  // no live blocks in the new image yet
  EXPECT_EQ(t.resident_of(0x1111), 4 * kPage);
}

TEST(ResidentPages, AForkChildsUnchangedCopiesCountAtNeitherButTheParentsSnapshot) {
  TwoSites t;
  t.acc.add_context(codec::ProcessStart{11, 10, 2, 4});
  ResidentPages child = snapshot(2, 0xff);
  child.pid = 11;
  t.acc.add_context(child);
  EXPECT_EQ(t.resident_of(0x1111), 0u);
  t.acc.add_context(snapshot(2, 0xff));
  EXPECT_EQ(t.resident_of(0x1111), 8 * kPage);
}

}  // namespace
}  // namespace memtrack::analysis
