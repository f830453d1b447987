// Allocation sites (analysis/include/memtrack/analysis/sites.h): events and context records fed directly,
// with known call chains; every number below is worked out by hand from the events in the comments.
#include "memtrack/analysis/sites.h"

#include <gtest/gtest.h>

#include <vector>

namespace memtrack::analysis {
namespace {

using codec::EventKind;
using codec::make_event;

// pid 10: /bin/prog (build-id 01 02 03, bias 0x1000) and /lib/libx.so (no build-id, bias 0x7000000).
// Tree: 1 = main (exe 0x1500), 2 = 1 -> libx 0x7000100, 3 = 1 -> g (exe 0x1800), 4 = 2 -> h (exe 0x1234).
std::vector<codec::ContextRecord> process_10() {
  return {
      codec::ProcessStart{10, 1, 0, 0},
      codec::Module{10, 0, "/bin/prog", {1, 2, 3}, 0x1000, 0x1000, 0x9000, true},
      codec::Module{10, 0, "/lib/libx.so", {}, 0x7000000, 0x7000000, 0x7100000, true},
      codec::StackNodes{10, 0, 1, {0, 1, 1, 2}, {0x1500, 0x7000100, 0x1800, 0x1234}},
      // Module-relative: main 0x500, g 0x800, h 0x234 (h_inl inlined into h there).
      codec::Symbols{"/bin/prog",
                     {1, 2, 3},
                     {0x500, 0x800, 0x234},
                     {1, 1, 2},
                     {0, 1, 2, 3},
                     {4, 4, 4, 4},
                     {50, 60, 70, 71},
                     {"main", "g", "h_inl", "h", "prog.c"}},
  };
}

std::vector<std::string> functions(const Site& s) {
  std::vector<std::string> out;
  for (const SiteFrame& f : s.stack) {
    if (f.truncated_marker)
      out.push_back("[truncated]");
    else if (f.function.empty())
      out.push_back(f.module + "+" + std::to_string(f.address.value_or(0)));
    else
      out.push_back(f.function);
  }
  return out;
}

const std::vector<std::string> kSiteA = {"h_inl", "h", "/lib/libx.so+256", "main"};
const std::vector<std::string> kSiteB = {"g", "main"};
const std::vector<std::string> kSiteC = {"/lib/libx.so+256", "main"};
const std::vector<std::string> kSiteD = {"/lib/libx.so+512", "main"};

// Events (tid 1 unless said):
//  0 Malloc A 0xa0 100      1 Malloc B 0xb0 50       2 Free 0xb0 (directly after its allocation: temporary)
//  3 Malloc C 0xc0 1000 (tid 2)                      4 Malloc A 0xa1 200  -> live A 300 + C 1000 = 1300: peak
//  5 Free 0xc0 (tid 2 never allocated again, but pid 10 did: not temporary, as heaptrack counts)
//  6 Malloc B 0xb1 10        7 Free 0xa0 (allocated long before: not temporary)
//  then pid 11 forks from 10 at event 8: 8 Malloc A (same chain) 0xd0 5; nodes 5 = 1 -> libx 0x7000200;
//  9 Malloc D 0xd1 7; pid 11 exits at event 10 (its blocks are leaks).
struct Scenario {
  SiteAccumulator acc;
  Scenario() {
    for (const auto& r : process_10()) acc.add_context(r);
    const std::vector<std::uint32_t> ids = {4, 3, 0, 2, 4, 0, 3, 0};
    acc.add_context(codec::EventStacks{0, ids});
    const std::vector<codec::Event> first = {
        make_event(EventKind::Malloc, 10, 1, 1, 0xa0, 100), make_event(EventKind::Malloc, 10, 1, 2, 0xb0, 50),
        make_event(EventKind::Free, 10, 1, 3, 0xb0),        make_event(EventKind::Malloc, 10, 2, 4, 0xc0, 1000),
        make_event(EventKind::Malloc, 10, 1, 5, 0xa1, 200), make_event(EventKind::Free, 10, 2, 6, 0xc0),
        make_event(EventKind::Malloc, 10, 1, 7, 0xb1, 10),  make_event(EventKind::Free, 10, 1, 8, 0xa0),
    };
    acc.add(first);
    acc.add_context(codec::ProcessStart{11, 10, 8, 9});
    acc.add_context(codec::StackNodes{11, 8, 5, {1}, {0x7000200}});
    acc.add_context(codec::EventStacks{8, {4, 5}});
    const std::vector<codec::Event> second = {make_event(EventKind::Malloc, 11, 11, 9, 0xd0, 5),
                                              make_event(EventKind::Malloc, 11, 11, 10, 0xd1, 7)};
    acc.add(second);
    acc.add_context(codec::ProcessExit{11, 10, 11, 0, std::nullopt});
  }
};

TEST(Sites, EveryRankingHasTheHandComputedSitesAndNumbers) {
  Scenario s;
  ASSERT_TRUE(s.acc.has_stacks());
  const SitesResult peak = s.acc.result(SiteOrder::peak, 0);
  ASSERT_EQ(peak.sites.size(), 4u);
  EXPECT_EQ(peak.peak_bytes, 1300u);
  EXPECT_EQ(functions(peak.sites[0]), kSiteC);
  EXPECT_EQ(functions(peak.sites[1]), kSiteA);
  // B and D held nothing at the peak: D ranks after B by allocated bytes (60 > 7).
  EXPECT_EQ(functions(peak.sites[2]), kSiteB);
  EXPECT_EQ(functions(peak.sites[3]), kSiteD);

  const SiteTotals& c = peak.sites[0].totals;
  EXPECT_EQ(c.peak_bytes, 1000u);
  EXPECT_EQ(c.allocations, 1u);
  EXPECT_EQ(c.allocated_bytes, 1000u);
  EXPECT_EQ(c.leaked_bytes, 0u);
  EXPECT_EQ(c.leaked_blocks, 0u);
  EXPECT_EQ(c.temporary, 0u);
  // A: 0xa0 100 + 0xa1 200 in pid 10, 0xd0 5 in pid 11 (the same chain in a fork child is the same site).
  const SiteTotals& a = peak.sites[1].totals;
  EXPECT_EQ(a.peak_bytes, 300u);
  EXPECT_EQ(a.allocations, 3u);
  EXPECT_EQ(a.allocated_bytes, 305u);
  EXPECT_EQ(a.leaked_bytes, 205u);
  EXPECT_EQ(a.leaked_blocks, 2u);
  EXPECT_EQ(a.temporary, 0u);
  const SiteTotals& b = peak.sites[2].totals;
  EXPECT_EQ(b.peak_bytes, 0u);
  EXPECT_EQ(b.allocations, 2u);
  EXPECT_EQ(b.allocated_bytes, 60u);
  EXPECT_EQ(b.leaked_bytes, 10u);
  EXPECT_EQ(b.leaked_blocks, 1u);
  EXPECT_EQ(b.temporary, 1u);
  const SiteTotals& d = peak.sites[3].totals;
  EXPECT_EQ(d.allocations, 1u);
  EXPECT_EQ(d.allocated_bytes, 7u);
  EXPECT_EQ(d.leaked_bytes, 7u);  // pid 11 exited holding it
  EXPECT_EQ(d.leaked_blocks, 1u);

  // The sites' bytes at the peak add up to the peak (every allocation before it had a stack).
  std::uint64_t sum = peak.unknown.peak_bytes;
  for (const Site& site : peak.sites) sum += site.totals.peak_bytes;
  EXPECT_EQ(sum, peak.peak_bytes);
  EXPECT_EQ(peak.unknown.allocations, 0u);

  const auto order = [&](SiteOrder o) {
    std::vector<std::vector<std::string>> out;
    for (const Site& site : s.acc.result(o, 0).sites) out.push_back(functions(site));
    return out;
  };
  using V = std::vector<std::vector<std::string>>;
  EXPECT_EQ(order(SiteOrder::allocated), (V{kSiteC, kSiteA, kSiteB, kSiteD}));
  EXPECT_EQ(order(SiteOrder::count), (V{kSiteA, kSiteB, kSiteC, kSiteD}));      // 3, 2 (60 B), 1 (1000 B), 1
  EXPECT_EQ(order(SiteOrder::leaked), (V{kSiteA, kSiteB, kSiteD, kSiteC}));     // 205, 10, 7, 0
  EXPECT_EQ(order(SiteOrder::temporary), (V{kSiteB, kSiteC, kSiteA, kSiteD}));  // 1, 0 (1000 B), 0 (305 B), 0
  EXPECT_EQ(s.acc.result(SiteOrder::leaked, 2).sites.size(), 2u);
}

// for_each_site hands over the sites result() lists, in its order, with its limit: `memtrack top` writes them as
// they come. `begin` comes first with everything but the sites and their number, also when none follow.
TEST(Sites, EachSiteInTurnIsWhatTheResultLists) {
  Scenario s;
  for (const SiteOrder o : {SiteOrder::peak, SiteOrder::allocated, SiteOrder::count, SiteOrder::leaked}) {
    for (const std::size_t limit : {0u, 1u, 2u, 9u}) {
      const SitesResult listed = s.acc.result(o, limit);
      std::vector<std::vector<std::string>> each;
      std::size_t announced = 99;
      SitesResult at_begin;
      const SitesResult summary = s.acc.for_each_site(
          o, limit, {},
          [&](const Site& site) {
            EXPECT_NE(announced, 99u) << "a site before begin";
            each.push_back(functions(site));
          },
          [&](const SitesResult& head, std::size_t sites) {
            announced = sites;
            at_begin = head;
          });
      std::vector<std::vector<std::string>> expected;
      for (const Site& site : listed.sites) expected.push_back(functions(site));
      EXPECT_EQ(each, expected) << static_cast<int>(o) << " " << limit;
      EXPECT_EQ(announced, listed.sites.size());
      EXPECT_TRUE(summary.sites.empty());
      for (const SitesResult* r : std::vector<const SitesResult*>{&summary, &at_begin}) {
        EXPECT_EQ(r->rest_sites, listed.rest_sites);
        EXPECT_EQ(r->rest.allocated_bytes, listed.rest.allocated_bytes);
        EXPECT_EQ(r->rest.allocations, listed.rest.allocations);
        EXPECT_EQ(r->unknown.allocations, listed.unknown.allocations);
        EXPECT_EQ(r->peak_bytes, listed.peak_bytes);
      }
    }
  }
  // Nothing to list: begin is still called, with 0.
  SiteAccumulator empty;
  std::size_t announced = 99;
  empty.for_each_site(
      SiteOrder::peak, 0, {}, [](const Site&) { ADD_FAILURE() << "no sites"; },
      [&](const SitesResult&, std::size_t sites) { announced = sites; });
  EXPECT_EQ(announced, 0u);
}

TEST(Sites, SymbolsGiveFilesLinesAndInlinedFramesModuleOffsetOtherwise) {
  Scenario s;
  const SitesResult r = s.acc.result(SiteOrder::count, 1);
  ASSERT_EQ(r.sites.size(), 1u);
  const auto& st = r.sites[0].stack;
  ASSERT_EQ(st.size(), 4u);
  EXPECT_EQ(st[0].function, "h_inl");
  EXPECT_TRUE(st[0].inlined);
  EXPECT_EQ(st[0].file, "prog.c");
  EXPECT_EQ(st[0].line, 70u);
  EXPECT_EQ(st[0].module, "/bin/prog");
  EXPECT_EQ(st[0].address, 0x234u);
  EXPECT_EQ(st[1].function, "h");
  EXPECT_FALSE(st[1].inlined);
  EXPECT_EQ(st[1].line, 71u);
  EXPECT_EQ(st[1].address, 0x234u);
  EXPECT_EQ(st[2].function, "");  // libx has no Symbols and no symbolizer was given
  EXPECT_EQ(st[2].module, "/lib/libx.so");
  EXPECT_EQ(st[2].address, 0x100u);
  EXPECT_EQ(st[3].function, "main");
  EXPECT_EQ(st[3].line, 50u);
}

TEST(Sites, ASymbolizerNamesModulesWithoutSymbols) {
  Scenario s;
  std::vector<std::string> asked;
  const ModuleSymbolizer fake = [&](const std::string& path, const std::vector<std::uint8_t>& build_id,
                                    std::span<const std::uint64_t> addresses,
                                    std::vector<std::vector<SiteFrame>>& out) {
    asked.push_back(path + ":" + std::to_string(build_id.size()));
    out.resize(addresses.size());
    for (std::size_t i = 0; i < addresses.size(); ++i) {
      SiteFrame f;
      f.function = "x" + std::to_string(addresses[i]);
      out[i].push_back(f);
    }
  };
  const SitesResult r = s.acc.result(SiteOrder::count, 1, fake);
  EXPECT_EQ(asked, (std::vector<std::string>{"/lib/libx.so:0"}));  // /bin/prog has Symbols: not asked
  EXPECT_EQ(functions(r.sites[0]), (std::vector<std::string>{"h_inl", "h", "x256", "main"}));
}

TEST(Sites, PidFilterCountsOnlyThatProcessAndItsOwnPeak) {
  SiteAccumulator acc(11);
  for (const auto& r : process_10()) acc.add_context(r);
  acc.add_context(codec::EventStacks{0, {4, 4}});
  acc.add_context(codec::ProcessStart{11, 10, 1, 0});
  acc.add_context(codec::EventStacks{1, {4}});
  const std::vector<codec::Event> ev = {make_event(EventKind::Malloc, 10, 1, 1, 0xa0, 100),
                                        make_event(EventKind::Malloc, 11, 11, 2, 0xa0, 3)};
  acc.add(ev);
  const SitesResult r = acc.result(SiteOrder::peak, 0);
  ASSERT_EQ(r.sites.size(), 1u);
  EXPECT_EQ(functions(r.sites[0]), kSiteA);
  EXPECT_EQ(r.sites[0].totals.allocated_bytes, 3u);
  EXPECT_EQ(r.sites[0].totals.peak_bytes, 3u);
  EXPECT_EQ(r.peak_bytes, 3u);
}

TEST(Sites, ExecStartsAnEmptyTreeAndItsBlocksAreNotLeaksTruncatedStacksKeepTheirMarker) {
  SiteAccumulator acc;
  acc.add_context(codec::ProcessStart{20, 1, 0, 0});
  // Node 1 = X (0x500, no module), node 2 = the truncation marker, node 3 = 2 -> 0x600.
  acc.add_context(codec::StackNodes{20, 0, 1, {0, 0, 2}, {0x500, codec::kTruncatedStackAddress, 0x600}});
  acc.add_context(codec::EventStacks{0, {1, 3}});
  const std::vector<codec::Event> before = {make_event(EventKind::Malloc, 20, 20, 1, 0x10, 8),
                                            make_event(EventKind::Malloc, 20, 20, 2, 0x20, 16)};
  acc.add(before);
  acc.add_context(codec::ProcessExec{20, 2, 3, "/bin/other", {"other"}});
  // Id 1 before the new image defines it is no stack; then node 1 = Y (0x700).
  acc.add_context(codec::EventStacks{2, {1, 1}});
  acc.add(std::vector<codec::Event>{make_event(EventKind::Malloc, 20, 20, 4, 0x30, 32)});
  acc.add_context(codec::StackNodes{20, 3, 1, {0}, {0x700}});
  acc.add(std::vector<codec::Event>{make_event(EventKind::Malloc, 20, 20, 5, 0x40, 64)});
  const SitesResult r = acc.result(SiteOrder::allocated, 0);
  ASSERT_EQ(r.sites.size(), 3u);
  EXPECT_EQ(functions(r.sites[0]), (std::vector<std::string>{"+1792"}));
  EXPECT_EQ(r.sites[0].totals.leaked_bytes, 64u);
  EXPECT_EQ(functions(r.sites[1]), (std::vector<std::string>{"+1536", "[truncated]"}));
  EXPECT_EQ(r.sites[1].totals.leaked_bytes, 0u);  // freed by the exec, not leaked
  EXPECT_EQ(functions(r.sites[2]), (std::vector<std::string>{"+1280"}));
  EXPECT_EQ(r.sites[2].totals.leaked_blocks, 0u);
  EXPECT_EQ(r.unknown.allocations, 1u);
  EXPECT_EQ(r.unknown.leaked_bytes, 32u);
}

// A fork child's inherited blocks stay the parent's: counted once, at the parent's site, as the parent's leak
// if it never frees them; the child's own blocks count as its leaks when it exits, and are gone, not leaked,
// when it execs an image memtrack cannot track (its Untracked record).
TEST(Sites, AForkChildsInheritedBlocksAreTheParentsAndAnUntrackedExecFreesItsOwn) {
  for (const bool untracked_exec : {false, true}) {
    SiteAccumulator acc;
    acc.add_context(codec::ProcessStart{20, 1, 0, 0});
    acc.add_context(codec::StackNodes{20, 0, 1, {0, 0}, {0x500, 0x600}});  // 1 = parent's site, 2 = child's
    acc.add_context(codec::EventStacks{0, {1, 0, 2}});
    acc.add(std::vector<codec::Event>{make_event(EventKind::Malloc, 20, 20, 1, 0x10, 100)});
    acc.add_context(codec::ProcessStart{21, 20, 1, 2});
    acc.add(std::vector<codec::Event>{make_event(EventKind::Free, 21, 21, 3, 0x10),  // its copy
                                      make_event(EventKind::Malloc, 21, 21, 4, 0x20, 50)});
    if (untracked_exec) acc.add_context(codec::Untracked{21, "/usr/bin/static_tool", "static", 3});
    acc.add_context(codec::ProcessExit{21, 3, 5, 0, std::nullopt});
    acc.add_context(codec::ProcessExit{20, 3, 6, 0, std::nullopt});
    const SitesResult r = acc.result(SiteOrder::allocated, 0);
    ASSERT_EQ(r.sites.size(), 2u);
    EXPECT_EQ(functions(r.sites[0]), (std::vector<std::string>{"+1280"}));
    EXPECT_EQ(r.sites[0].totals.leaked_bytes, 100u) << "the parent never freed its block: once, the parent's";
    EXPECT_EQ(r.sites[0].totals.leaked_blocks, 1u);
    EXPECT_EQ(r.sites[1].totals.leaked_bytes, untracked_exec ? 0u : 50u) << untracked_exec;
  }
}

TEST(Sites, ADlcloseAndAnotherLibraryAtTheSameAddressAreTwoSites) {
  SiteAccumulator acc;
  acc.add_context(codec::Module{30, 0, "/lib/a.so", {0xaa}, 0x10000, 0x10000, 0x20000, true});
  acc.add_context(codec::StackNodes{30, 0, 1, {0}, {0x10010}});
  acc.add_context(codec::EventStacks{0, {1, 1}});
  acc.add(std::vector<codec::Event>{make_event(EventKind::Malloc, 30, 30, 1, 0x10, 8)});
  acc.add_context(codec::Module{30, 1, "/lib/a.so", {0xaa}, 0x10000, 0x10000, 0x20000, false});
  acc.add_context(codec::Module{30, 1, "/lib/b.so", {0xbb}, 0x10000, 0x10000, 0x20000, true});
  acc.add(std::vector<codec::Event>{make_event(EventKind::Malloc, 30, 30, 2, 0x20, 4)});
  const SitesResult r = acc.result(SiteOrder::allocated, 0);
  ASSERT_EQ(r.sites.size(), 2u);
  EXPECT_EQ(functions(r.sites[0]), (std::vector<std::string>{"/lib/a.so+16"}));
  EXPECT_EQ(functions(r.sites[1]), (std::vector<std::string>{"/lib/b.so+16"}));
}

TEST(Sites, ARecordingWithTheStacksSectionHasStacksEvenWithoutNodes) {
  SiteAccumulator with, without;
  with.add_context(codec::RecordingInfo{"0", {"true"}, 0, 0, {"lifecycle", "stacks"}, 1});
  without.add_context(codec::RecordingInfo{"0", {"true"}, 0, 0, {"lifecycle"}, 1});
  EXPECT_TRUE(with.has_stacks());
  EXPECT_FALSE(without.has_stacks());
  EXPECT_TRUE(with.result(SiteOrder::peak, 0).sites.empty());
}

}  // namespace
}  // namespace memtrack::analysis
