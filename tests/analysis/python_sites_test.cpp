// Sites by their Python frames alone (memtrack/analysis/python_sites.h, `memtrack top --python`): native frames
// dropped, equal Python stacks merged with their numbers added, the depth marker kept, the sites without a
// Python frame one site, ranked as SiteAccumulator ranks.
#include "memtrack/analysis/python_sites.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace memtrack::analysis {
namespace {

SiteFrame native(const std::string& function, std::uint64_t address) {
  SiteFrame f;
  f.function = function;
  f.module = "/usr/bin/python3";
  f.address = address;
  return f;
}

SiteFrame python(const std::string& function, std::uint32_t line, std::uint64_t address) {
  SiteFrame f;
  f.function = function;
  f.module = kPythonModule;
  f.file = "app.py";
  f.line = line;
  f.address = address;
  return f;
}

SiteFrame marker() {
  SiteFrame f;
  f.truncated_marker = true;
  return f;
}

Site site(std::vector<SiteFrame> stack, std::uint64_t allocations, std::uint64_t bytes, std::uint64_t peak) {
  Site s;
  s.stack = std::move(stack);
  s.totals.allocations = allocations;
  s.totals.allocated_bytes = bytes;
  s.totals.peak_bytes = peak;
  s.totals.leaked_bytes = peak / 2;
  s.totals.temporary = 1;
  return s;
}

std::vector<std::string> names(const Site& s) {
  std::vector<std::string> out;
  for (const SiteFrame& f : s.stack)
    out.push_back(f.truncated_marker ? "*" : f.function + ":" + std::to_string(f.line));
  return out;
}

TEST(PythonSites, EqualPythonStacksAreOneSiteWithTheirNumbersAdded) {
  PythonSites merged;
  // One line of Python reached through two native paths (two instructions of the line: two addresses).
  merged.add(site({native("PyObject_Malloc", 1), python("f", 3, 0x10), native("eval", 2), python("main", 9, 0x20)}, 10,
                  100, 40));
  merged.add(
      site({native("PyMem_Malloc", 3), python("f", 3, 0x14), native("eval", 4), python("main", 9, 0x24)}, 5, 500, 8));
  // Another line of f, another site.
  merged.add(site({python("f", 4, 0x30), python("main", 9, 0x20)}, 1, 1000, 0));
  // Without a Python frame (the interpreter's start): one site, whatever its native frames.
  merged.add(site({native("Py_Initialize", 5)}, 7, 70, 2));
  merged.add(site({native("malloc", 6), native("_start", 7)}, 1, 10, 1));
  // Cut at the depth cap: the marker stays, so the stack is not taken for main's.
  merged.add(site({python("f", 3, 0x10), native("eval", 2), marker()}, 2, 20, 0));
  EXPECT_TRUE(merged.any_python_frame());

  SitesResult summary;
  summary.peak_bytes = 51;
  summary.unknown.allocations = 3;
  const SitesResult r = merged.result(SiteOrder::allocated, 0, summary);
  ASSERT_EQ(r.sites.size(), 4u);
  EXPECT_EQ(names(r.sites[0]), (std::vector<std::string>{"f:4", "main:9"}));
  EXPECT_EQ(names(r.sites[1]), (std::vector<std::string>{"f:3", "main:9"}));
  EXPECT_EQ(r.sites[1].totals.allocations, 15u);
  EXPECT_EQ(r.sites[1].totals.allocated_bytes, 600u);
  EXPECT_EQ(r.sites[1].totals.peak_bytes, 48u);
  EXPECT_EQ(r.sites[1].totals.leaked_bytes, 24u);
  EXPECT_EQ(r.sites[1].totals.temporary, 2u);
  EXPECT_FALSE(r.sites[1].stack[0].address) << "a line is several instructions: no one address";
  EXPECT_EQ(r.sites[1].stack[0].module, kPythonModule);
  EXPECT_EQ(r.sites[1].stack[0].file, "app.py");
  EXPECT_EQ(names(r.sites[2]), (std::vector<std::string>{std::string(kNoPythonFrame) + ":0"}));
  EXPECT_EQ(r.sites[2].totals.allocations, 8u);
  EXPECT_EQ(r.sites[2].totals.allocated_bytes, 80u);
  EXPECT_EQ(names(r.sites[3]), (std::vector<std::string>{"f:3", "*"}));
  EXPECT_EQ(r.peak_bytes, 51u);
  EXPECT_EQ(r.unknown.allocations, 3u);
  EXPECT_EQ(r.rest_sites, 0u);

  // By peak, the first two: the others are the rest.
  const SitesResult top = merged.result(SiteOrder::peak, 2, summary);
  ASSERT_EQ(top.sites.size(), 2u);
  EXPECT_EQ(names(top.sites[0]), (std::vector<std::string>{"f:3", "main:9"}));
  EXPECT_EQ(names(top.sites[1]), (std::vector<std::string>{std::string(kNoPythonFrame) + ":0"}));
  EXPECT_EQ(top.rest_sites, 2u);
  EXPECT_EQ(top.rest.allocations, 3u);
  EXPECT_EQ(top.rest.allocated_bytes, 1020u);
}

TEST(PythonSites, ANativeProgramHasNoPythonFrame) {
  PythonSites merged;
  merged.add(site({native("malloc", 1), native("main", 2)}, 1, 10, 10));
  merged.add(site({native("malloc", 1), marker()}, 1, 10, 10));
  EXPECT_FALSE(merged.any_python_frame());
  const SitesResult r = merged.result(SiteOrder::peak, 0, {});
  ASSERT_EQ(r.sites.size(), 1u);
  EXPECT_EQ(r.sites[0].totals.allocations, 2u);
}

}  // namespace
}  // namespace memtrack::analysis
