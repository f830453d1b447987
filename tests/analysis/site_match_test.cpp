// Pairing allocation sites of two recordings (analysis/site_match.h) and the comparison helpers of
// run_compare.h: what pairs (symbolized frames whatever their addresses, lines and directories; unsymbolized
// frames of the same build), what does not (another build-id), merging, status and ranking.
#include "memtrack/analysis/site_match.h"

#include <gtest/gtest.h>

#include "memtrack/analysis/run_compare.h"

namespace memtrack::analysis {
namespace {

SiteFrame named(const std::string& fn, const std::string& file, std::uint32_t line, std::uint64_t address,
                const std::string& module = "/build/a/prog") {
  SiteFrame f;
  f.function = fn;
  f.file = file;
  f.line = line;
  f.address = address;
  f.module = module;
  f.build_id = {0x01, 0x02};
  return f;
}

SiteFrame bare(std::uint64_t address, std::vector<std::uint8_t> build_id, const std::string& module = "/lib/libx.so") {
  SiteFrame f;
  f.address = address;
  f.module = module;
  f.build_id = std::move(build_id);
  return f;
}

Site site(std::vector<SiteFrame> stack, std::uint64_t allocated, std::uint64_t peak = 0, std::uint64_t count = 1) {
  Site s;
  s.stack = std::move(stack);
  s.totals.allocated_bytes = allocated;
  s.totals.allocations = count;
  s.totals.peak_bytes = peak;
  return s;
}

TEST(SiteMatch, SymbolizedFramesPairAcrossBuilds) {
  // Another build in another directory: every address, line and path moved; inlining changed.
  const Site a = site({named("grow", "/src/a/prog.c", 10, 0x1100), named("main", "/src/a/prog.c", 30, 0x1200)}, 100);
  SiteFrame inl = named("grow", "/src/b/prog.c", 14, 0x2100, "/build/b/prog");
  inl.inlined = true;
  inl.build_id = {0x09};
  const Site b = site({inl, named("main", "/src/b/prog.c", 41, 0x2300, "/build/b/prog")}, 160);
  EXPECT_EQ(site_identity(a), site_identity(b));
  const SitesDiff d = match_sites(std::vector<Site>{a}, std::vector<Site>{b}, SiteOrder::allocated, 0);
  ASSERT_EQ(d.sites.size(), 1u);
  EXPECT_EQ(d.sites[0].status, ChangeStatus::changed);
  EXPECT_EQ(d.sites[0].base.allocated_bytes, 100u);
  EXPECT_EQ(d.sites[0].head.allocated_bytes, 160u);
  EXPECT_EQ(d.sites[0].stack[0].line, 14u);  // head's frames are shown
  EXPECT_EQ(d.changed, 1u);
}

TEST(SiteMatch, OtherFunctionFileOrModuleDoNotPair) {
  const Site a = site({named("grow", "prog.c", 1, 1)}, 1);
  EXPECT_NE(site_identity(a), site_identity(site({named("grow2", "prog.c", 1, 1)}, 1)));
  EXPECT_NE(site_identity(a), site_identity(site({named("grow", "other.c", 1, 1)}, 1)));
  EXPECT_NE(site_identity(a), site_identity(site({named("grow", "prog.c", 1, 1, "/build/a/libprog.so")}, 1)));
  EXPECT_NE(site_identity(a), site_identity(site({named("grow", "prog.c", 1, 1), named("main", "prog.c", 2, 2)}, 1)));
}

TEST(SiteMatch, UnsymbolizedFramesPairOnlyWithinOneBuild) {
  const Site a = site({bare(0x40, {0xaa, 0xbb})}, 1);
  EXPECT_EQ(site_identity(a), site_identity(site({bare(0x40, {0xaa, 0xbb}, "/elsewhere/libx.so")}, 1)));
  EXPECT_NE(site_identity(a), site_identity(site({bare(0x40, {0xaa, 0xbc})}, 1)));  // another build
  EXPECT_NE(site_identity(a), site_identity(site({bare(0x44, {0xaa, 0xbb})}, 1)));
  // Without a build-id: the path and offset; outside any module: the absolute address.
  EXPECT_EQ(site_identity(site({bare(0x40, {})}, 1)), site_identity(site({bare(0x40, {})}, 1)));
  EXPECT_NE(site_identity(site({bare(0x40, {})}, 1)), site_identity(site({bare(0x40, {}, "/lib/liby.so")}, 1)));
  SiteFrame marker;
  marker.truncated_marker = true;
  EXPECT_NE(site_identity(site({bare(0x40, {}), marker}, 1)), site_identity(site({bare(0x40, {})}, 1)));
}

// Resident bytes (top --by resident's): merged sites sum them, --by resident ranks by their change, and they
// make a site "changed" only when ranked by them (by the heap measures, a site whose heap figures did not
// move is the same, however its resident pages moved with the kernel's timing).
TEST(SiteMatch, ResidentBytesMergeRankAndCountOnlyByResident) {
  const auto s = [](const char* fn, std::uint32_t line, std::uint64_t resident) {
    Site x = site({named(fn, "p.c", line, line)}, 1000, 1000);
    x.totals.resident_bytes = resident;
    return x;
  };
  // In base `twice` is two sites (lines 5 and 9): 100 + 200 resident. `moved` differs only in resident bytes.
  const std::vector<Site> base = {s("twice", 5, 100), s("twice", 9, 200), s("moved", 2, 4096)};
  const std::vector<Site> head = {s("twice", 6, 300), s("moved", 8, 64), s("moved", 8, 0)};
  const SitesDiff by_resident = match_sites(base, head, SiteOrder::resident, 0);
  ASSERT_EQ(by_resident.sites.size(), 2u);
  EXPECT_EQ(by_resident.sites[0].stack[0].function, "moved");  // |64 - 4096| ranks first
  EXPECT_EQ(by_resident.sites[0].head.resident_bytes, 64u);
  EXPECT_EQ(by_resident.sites[0].status, ChangeStatus::changed);
  EXPECT_EQ(by_resident.sites[1].base.resident_bytes, 300u);      // the merged sites' sum
  EXPECT_EQ(by_resident.sites[1].status, ChangeStatus::changed);  // 2 allocations against 1
  // By peak, `moved`'s heap figures differ too (two sites in head: 2 allocations against 1); make them equal.
  const std::vector<Site> head1 = {s("twice", 6, 300), s("moved", 8, 64)};
  const SitesDiff by_peak = match_sites(base, head1, SiteOrder::peak, 0);
  const SitesDiff by_resident1 = match_sites(base, head1, SiteOrder::resident, 0);
  const auto status_of = [](const SitesDiff& d, const char* fn) {
    for (const SiteChange& c : d.sites)
      if (c.stack[0].function == fn) return c.status;
    ADD_FAILURE() << fn;
    return ChangeStatus::same;
  };
  EXPECT_EQ(status_of(by_peak, "moved"), ChangeStatus::same);
  EXPECT_EQ(status_of(by_resident1, "moved"), ChangeStatus::changed);
}

TEST(SiteMatch, StatusRankingMergingAndLimit) {
  const auto s = [](const char* fn, std::uint32_t line, std::uint64_t peak) {
    return site({named(fn, "p.c", line, line)}, peak, peak);
  };
  // In base: two sites of `twice` (lines 5 and 9) become one; `gone` only in base.
  const std::vector<Site> base = {s("grown", 1, 100), s("twice", 5, 10), s("twice", 9, 20), s("same", 2, 50),
                                  s("gone", 3, 40)};
  const std::vector<Site> head = {s("grown", 7, 300), s("same", 8, 50), s("twice", 6, 30), s("new", 4, 60)};
  const SitesDiff d = match_sites(base, head, SiteOrder::peak, 0);
  ASSERT_EQ(d.sites.size(), 5u);
  const auto fn = [&](std::size_t i) { return d.sites[i].stack[0].function; };
  // |changes| in peak: grown 200, new 60, gone 40; then twice (same peak and bytes, one allocation fewer),
  // then the unchanged site.
  EXPECT_EQ(fn(0), "grown");
  EXPECT_EQ(fn(1), "new");
  EXPECT_EQ(fn(2), "gone");
  EXPECT_EQ(d.sites[1].status, ChangeStatus::added);
  EXPECT_EQ(d.sites[1].base_sites, 0u);
  EXPECT_EQ(d.sites[2].status, ChangeStatus::removed);
  EXPECT_EQ(d.sites[2].head_sites, 0u);
  EXPECT_EQ(fn(3), "twice");
  EXPECT_EQ(d.sites[3].base_sites, 2u);
  EXPECT_EQ(d.sites[3].base.peak_bytes, 30u);
  EXPECT_EQ(d.sites[3].base.allocations, 2u);
  EXPECT_EQ(d.sites[3].head.allocations, 1u);
  EXPECT_EQ(d.sites[3].status, ChangeStatus::changed);
  EXPECT_EQ(fn(4), "same");
  EXPECT_EQ(d.sites[4].status, ChangeStatus::same);
  EXPECT_EQ(d.same, 1u);
  EXPECT_EQ(d.changed, 2u);
  EXPECT_EQ(d.added, 1u);
  EXPECT_EQ(d.removed, 1u);
  const SitesDiff two = match_sites(base, head, SiteOrder::peak, 2);
  ASSERT_EQ(two.sites.size(), 2u);
  EXPECT_EQ(two.removed, 1u);  // the counts are over every site
}

TEST(RunCompare, RegionFiguresPerName) {
  std::vector<RegionOccurrence> occ(4);
  const std::uint64_t peaks[] = {30, 10, 20, 7};
  for (std::size_t i = 0; i < occ.size(); ++i) {
    occ[i].name = i == 3 ? "other" : "bench";
    occ[i].begin_event = 10 * i;
    occ[i].peak_bytes = peaks[i];
    occ[i].allocations = i + 1;
  }
  std::swap(occ[0], occ[1]);  // listed as they ended
  const auto f = region_figures(occ);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].name, "bench");
  ASSERT_EQ(f[0].runs.size(), 3u);
  EXPECT_EQ(f[0].runs[0].peak_bytes, 30u);  // in the order they began
  EXPECT_EQ(f[0].min.peak_bytes, 10u);
  EXPECT_EQ(f[0].median.peak_bytes, 20u);
  EXPECT_EQ(f[0].max.peak_bytes, 30u);
  EXPECT_EQ(f[0].median.allocations, 2u);
  EXPECT_EQ(f[1].median.peak_bytes, 7u);
  const auto m = match_regions(std::vector<RegionFigures>{f[1]}, f);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].status, ChangeStatus::added);
  EXPECT_EQ(m[1].status, ChangeStatus::same);
}

TEST(RunCompare, ImagesPairByExecutableAndOrder) {
  std::deque<ProcessImage> base(3), head(3);
  const char* b[] = {"/usr/bin/sh", "/a/prog", "/usr/bin/sh"};
  const char* h[] = {"/usr/bin/sh", "/usr/bin/sh", "/b/prog"};
  for (int i = 0; i < 3; ++i) {
    base[i].executable = b[i];
    base[i].pid = 10 + i;
    head[i].executable = h[i];
    head[i].pid = 20 + i;
    head[i].heap.peak_bytes = i == 1 ? 5 : 0;
  }
  base.push_back(ProcessImage{});
  base.back().executable = "/usr/bin/cc";
  const auto m = match_images(base, head);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].executable, "sh");
  EXPECT_EQ(m[0].base_pid, 10);
  EXPECT_EQ(m[0].status, ChangeStatus::same);
  EXPECT_EQ(m[1].nth, 2u);
  EXPECT_EQ(m[1].base_pid, 12);  // the second sh of each
  EXPECT_EQ(m[1].status, ChangeStatus::changed);
  EXPECT_EQ(m[2].executable, "prog");
  EXPECT_EQ(m[2].base_pid, 11);
  EXPECT_EQ(m[3].executable, "cc");
  EXPECT_EQ(m[3].status, ChangeStatus::removed);
}

}  // namespace
}  // namespace memtrack::analysis
