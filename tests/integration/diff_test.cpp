// `memtrack diff` and `memtrack check` on two real builds of one program (programs/diff_prog.c: the head
// build adds a padding function, so every address and line moves; one site grows by 1000 bytes per block,
// one is unchanged, one is new, one gone), both recorded with `memtrack record`. The JSON is read with
// Debian's python3 json module, the figures compared exactly.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>

#include "common/run.h"
#include "units.h"

namespace memtrack::testing {
namespace {

const std::string kPrograms = MEMTRACK_PROGRAMS_DIR "/diff";
const std::string kPython = MEMTRACK_SYSTEM_PYTHON;

std::string mt() { return memtrack_bin(); }

class DiffTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(scratch_dir() + "/diff");
    run("mkdir -p " + *dir_);
    for (const char* side : {"base", "head"}) {
      const auto r =
          run(mt() + " record -q -o " + *dir_ + "/" + side + ".mt -- " + kPrograms + "/" + side + "/diff_prog");
      ASSERT_EQ(r.status, 0) << r.err;
    }
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string base() { return *dir_ + "/base.mt"; }
  static std::string head() { return *dir_ + "/head.mt"; }
  // A python3 program reading JSON from stdin; its stdout.
  static std::string py(const std::string& command, const std::string& script) {
    const std::string file = *dir_ + "/script.py";
    FILE* f = std::fopen(file.c_str(), "w");
    std::fputs(script.c_str(), f);
    std::fclose(f);
    const auto r = run(command + " | " + kPython + " " + file);
    EXPECT_EQ(r.status, 0) << r.err;
    return r.out;
  }
  // stats --json's figures of a recording: peak, allocated, allocations, leaked.
  struct Figures {
    std::uint64_t peak = 0, allocated = 0, allocations = 0, leaked = 0;
  };
  static Figures figures(const std::string& file) {
    const std::string out = py(mt() + " stats --json " + file,
                               "import json,sys\nd=json.load(sys.stdin)\nk=d['by_kind']\n"
                               "n=sum(k.get(x,0) for x in ('Malloc','Calloc','Realloc','AlignedAlloc'))\n"
                               "print(d['peak_live_bytes'], d['bytes_allocated'], n, d['leaked_bytes'])\n");
    Figures f;
    std::istringstream in(out);
    in >> f.peak >> f.allocated >> f.allocations >> f.leaked;
    return f;
  }
  static std::string* dir_;
};
std::string* DiffTest::dir_ = nullptr;

// The premise: the padding moved the code, so the sites cannot pair by address.
TEST_F(DiffTest, PaddingMovesEveryAddress) {
  const std::string script =
      "import json,sys\nd=json.load(sys.stdin)\n"
      "print(' '.join(sorted(s['stack'][0]['function'] + '@' + s['stack'][0]['address'] + ':' + "
      "str(s['stack'][0]['line'])"
      " for s in d['sites'] if s['stack'][0]['function'] in ('grown','steady'))))\n";
  const std::string b = py(mt() + " top --json -n 0 " + base(), script);
  const std::string h = py(mt() + " top --json -n 0 " + head(), script);
  ASSERT_NE(b.find("grown@"), std::string::npos) << b;
  ASSERT_NE(b.find("steady@"), std::string::npos) << b;
  const auto address = [](const std::string& s, const std::string& fn) {
    const std::size_t at = s.find(fn + "@");
    return s.substr(at, s.find(' ', at) - at);
  };
  EXPECT_NE(address(b, "grown"), address(h, "grown"));
  EXPECT_NE(address(b, "steady"), address(h, "steady"));
}

TEST_F(DiffTest, JsonPairsAndMeasuresSites) {
  const auto r = run(mt() + " diff --json -n 0 " + base() + " " + head());
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string out =
      py(mt() + " diff --json -n 0 " + base() + " " + head(),
         "import json,sys\nd=json.load(sys.stdin)\n"
         "for s in d['sites']:\n"
         "  f=s['stack'][0]['function']\n"
         "  if f not in ('grown','steady','added','removed'): continue\n"
         "  b=s['base'] or {}; h=s['head'] or {}; x=s['delta']\n"
         "  print(f, s['status'], b.get('allocated_bytes'), h.get('allocated_bytes'), x['allocated_bytes'],"
         " b.get('allocations'), h.get('allocations'), x['allocations'], x['peak_bytes'], x['leaked_bytes'],"
         " b.get('leaked_blocks'), h.get('leaked_blocks'), s['stack'][1]['function'])\n");
  // Ranked by the change in peak: +3000, -555, +321, then the unchanged site.
  EXPECT_EQ(out,
            "grown changed 12288 15288 3000 3 3 0 3000 3000 3 3 main\n"
            "removed gone 555 None -555 1 None -1 -555 -555 1 None main\n"
            "added new None 321 321 None 1 1 321 321 None 1 main\n"
            "steady same 1554 1554 0 2 2 0 0 0 2 2 main\n");
}

TEST_F(DiffTest, TotalsAreTheStatsOfEach) {
  const Figures b = figures(base()), h = figures(head());
  const std::string out = py(mt() + " diff --json " + base() + " " + head(),
                             "import json,sys\nd=json.load(sys.stdin)['totals']\n"
                             "for k in ('peak_bytes','allocated_bytes','allocations','leaked_bytes','processes'):\n"
                             "  print(k, d['base'][k], d['head'][k], d['delta'][k])\n");
  const auto row = [](const char* k, std::uint64_t x, std::uint64_t y) {
    return std::string(k) + " " + std::to_string(x) + " " + std::to_string(y) + " " +
           std::to_string(static_cast<std::int64_t>(y - x)) + "\n";
  };
  EXPECT_EQ(out, row("peak_bytes", b.peak, h.peak) + row("allocated_bytes", b.allocated, h.allocated) +
                     row("allocations", b.allocations, h.allocations) + row("leaked_bytes", b.leaked, h.leaked) +
                     row("processes", 1, 1));
  // The program's own change: +3000 (grown) -555 (removed) +321 (added).
  EXPECT_EQ(static_cast<std::int64_t>(h.allocated - b.allocated), 3000 - 555 + 321);
}

TEST_F(DiffTest, TableAndMarkdown) {
  const auto t = run(mt() + " diff " + base() + " " + head());
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("sites by change in peak: 1 changed, 1 new, 1 gone,"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("#1  changed  peak 12.0 KiB -> 14.9 KiB (+2.9 KiB)"), std::string::npos) << t.out;
  const auto m = run(mt() + " diff --markdown --by allocated " + base() + " " + head());
  ASSERT_EQ(m.status, 0) << m.err;
  EXPECT_NE(m.out.find("| 1 | changed | 12.0 KiB → 14.9 KiB (+2.9 KiB) | 12.0 KiB → 14.9 KiB (+2.9 KiB) | 3 | 12.0 KiB "
                       "→ 14.9 KiB (+2.9 KiB) | `grown`"),
            std::string::npos)
      << m.out;
  EXPECT_NE(m.out.find("`grown` ← `main`"), std::string::npos) << m.out;
  // A recording against itself: nothing changed.
  const std::string same = py(mt() + " diff --json -n 0 " + head() + " " + head(),
                              "import json,sys\nd=json.load(sys.stdin)\nprint(d['site_counts'])\n");
  EXPECT_EQ(same, "{'same': 3, 'changed': 0, 'new': 0, 'gone': 0}\n");
}

// `memtrack report HEAD --baseline BASE`: the page's differential flame graphs pair the two builds' sites as
// diff does (the modules are base/diff_prog and head/diff_prog: the plain graph, keyed by module path, could
// not), the baseline's heap series and totals are in the page. The page's JSON is read back with python3.
TEST_F(DiffTest, ReportAgainstBaseline) {
  const std::string page = *dir_ + "/page.html";
  const auto r = run(mt() + " report " + head() + " --baseline " + base() + " -o " + page);
  ASSERT_EQ(r.status, 0) << r.err;
  // The JSON between the page's data element's tags.
  const std::string read = "import json,re,sys\ns=open('" + page + "').read()\n" +
                           "d=json.loads(re.search(r'id=\"memtrack-data\">(.*?)</script>',s,re.S).group(1))\n";
  const std::string out =
      py("true", read +
                     "def find(n,name):\n"
                     "  if n['name']==name: return n\n"
                     "  for c in n.get('children',[]):\n"
                     "    f=find(c,name)\n"
                     "    if f: return f\n"
                     "for k in ('peak','allocated'):\n"
                     "  for f in ('all','main','grown','steady','added','removed'):\n"
                     "    n=find(d['flame'][k],f)\n"
                     "    print(k,f,n['value'],n['base'],n['count'],n['base_count'])\n"
                     "b=d['baseline']\n"
                     "print(b['artifact'], b['differential'],"
                     " b['totals']['base']['allocated_bytes'], b['totals']['head']['allocated_bytes'])\n"
                     "t=d['timeline']['baseline']\n"
                     "print(t['label'], max(t['heap']), t['peak']['bytes'])\n"
                     "print([r[1] for r in d['summary'] if r[0]=='baseline allocations'])\n");
  const std::string total = "17163 14397";  // 3 x 5096 + 2 x 777 + 321; 3 x 4096 + 2 x 777 + 555
  std::string expected;
  for (const char* k : {"peak", "allocated"}) {
    expected += std::string(k) + " all " + total + " 6 6\n" + k + " main " + total + " 6 6\n" + k +
                " grown 15288 12288 3 3\n" + k + " steady 1554 1554 2 2\n" + k + " added 321 0 1 0\n" + k +
                " removed 0 555 0 1\n";
  }
  expected += base() + " True 14397 17163\nbaseline live heap (" + base() + ") 14397 14397\n['6 (head the same)']\n";
  EXPECT_EQ(out, expected);

  // A baseline without call stacks: its heap and totals, the flame graphs of head alone, and why.
  const std::string plain = *dir_ + "/report-plain.mt";
  ASSERT_EQ(run(mt() + " record -q --no-stacks -o " + plain + " -- " + kPrograms + "/base/diff_prog").status, 0);
  ASSERT_EQ(run(mt() + " report " + head() + " --baseline " + plain + " -o " + page).status, 0);
  EXPECT_EQ(py("true", read + "print(d['baseline']['differential'], 'base' in d['flame']['peak'],"
                              " d['missing']['flame.baseline'], max(d['timeline']['baseline']['heap']))\n"),
            "False False " + plain + " has no call stacks: the flame graphs are of this recording alone 14397\n");

  // --pid names one recording's process; a baseline that cannot be read gives no page.
  EXPECT_EQ(run(mt() + " report " + head() + " --baseline " + base() + " --pid 1 -o " + page + ".pid").status, 2);
  const auto missing = run(mt() + " report " + head() + " --baseline /nonexistent.mt -o " + page + ".missing");
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.err.find("/nonexistent.mt"), std::string::npos) << missing.err;
  EXPECT_NE(run("test -e " + page + ".missing").status, 0) << "no page without its baseline";
}

// A recording without stacks: the totals are compared, the sites are not (they would all read as gone).
TEST_F(DiffTest, OneSideWithoutStacks) {
  const std::string plain = *dir_ + "/plain.mt";
  ASSERT_EQ(run(mt() + " record -q --no-stacks -o " + plain + " -- " + kPrograms + "/head/diff_prog").status, 0);
  const auto t = run(mt() + " diff " + base() + " " + plain);
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("\nsites: " + plain + " has no call stacks (recorded with --no-stacks?): sites not compared\n"),
            std::string::npos)
      << t.out;
  const std::string j = py(mt() + " diff --json " + base() + " " + plain,
                           "import json,sys\nd=json.load(sys.stdin)\n"
                           "print(d['has_stacks'], d['sites'], d['totals']['delta']['allocated_bytes'])\n");
  EXPECT_EQ(j, "False [] 2766\n");
}

TEST_F(DiffTest, Usage) {
  EXPECT_EQ(run(mt() + " diff " + base()).status, 2);
  EXPECT_EQ(run(mt() + " diff " + base() + " " + head() + " --by size").status, 2);
  EXPECT_EQ(run(mt() + " diff " + base() + " " + head() + " --json --markdown").status, 2);
  const auto missing = run(mt() + " diff " + base() + " /nonexistent.mt");
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.err.find("/nonexistent.mt"), std::string::npos) << missing.err;
  const auto region = run(mt() + " diff " + base() + " " + head() + " --region nope");
  EXPECT_EQ(region.status, 1);
  EXPECT_EQ(region.err, "memtrack diff: " + base() + " has no region 'nope'\n");
}

TEST_F(DiffTest, CheckEachLimitHoldsAndBreaks) {
  const Figures f = figures(head());
  ASSERT_GT(f.peak, 15288u);
  const std::string file = " " + head();
  struct Case {
    std::string holds, breaks, line;
  };
  const Case cases[] = {
      {"--max-peak " + std::to_string(f.peak), "--max-peak 1KiB",
       "peak heap " + tools::human_bytes(f.peak) + " > --max-peak 1 KiB"},
      {"--max-allocated " + std::to_string(f.allocated), "--max-allocated 1kB",
       "bytes allocated " + tools::human_bytes(f.allocated) + " > --max-allocated 1 kB"},
      {"--max-allocations " + std::to_string(f.allocations), "--max-allocations " + std::to_string(f.allocations - 1),
       "allocations " + std::to_string(f.allocations) + " > --max-allocations " + std::to_string(f.allocations - 1)},
      {"--max-leaked " + std::to_string(f.leaked), "--max-leaked 0",
       "leaked " + tools::human_bytes(f.leaked) + " > --max-leaked 0 B"},
  };
  std::string all_broken, all_lines;
  for (const Case& c : cases) {
    const auto ok = run(mt() + " check" + file + " " + c.holds);
    EXPECT_EQ(ok.status, 0) << c.holds << ": " << ok.out << ok.err;
    EXPECT_EQ(ok.out, "memtrack check: " + head() + ": 1 limit holds\n");
    const auto bad = run(mt() + " check" + file + " " + c.breaks);
    EXPECT_EQ(bad.status, 1) << c.breaks;
    EXPECT_EQ(bad.out, c.line + "\n");
    all_broken += " " + c.breaks;
    all_lines += c.line + "\n";
  }
  const auto every = run(mt() + " check" + file + all_broken);
  EXPECT_EQ(every.status, 1);
  EXPECT_EQ(every.out, all_lines);
  // A limit one byte below the value reads as the same rounded size: the bytes are shown.
  const auto close = run(mt() + " check" + file + " --max-peak " + std::to_string(f.peak - 1));
  EXPECT_EQ(close.out, "peak heap " + tools::human_bytes(f.peak) + " (" + std::to_string(f.peak) + " B) > --max-peak " +
                           std::to_string(f.peak - 1) + " B (" + std::to_string(f.peak - 1) + " B)\n");
  const std::string json =
      py(mt() + " check --json" + file + " --max-peak 1KiB --max-leaked " + std::to_string(f.leaked),
         "import json,sys\nd=json.load(sys.stdin)\nprint(d['ok'], [(l['option'], l['value'], "
         "l['limit'], l['ok']) for l in d['limits']])\n");
  EXPECT_EQ(json, "False [('--max-peak', " + std::to_string(f.peak) + ", 1024, False), ('--max-leaked', " +
                      std::to_string(f.leaked) + ", " + std::to_string(f.leaked) + ", True)]\n");
}

TEST_F(DiffTest, CheckGrowthAgainstBaseline) {
  const Figures b = figures(base()), h = figures(head());
  const auto pct = [](std::uint64_t x, std::uint64_t y) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%",
                  (static_cast<double>(y) - static_cast<double>(x)) / static_cast<double>(x) * 100);
    return std::string(buf);
  };
  const auto ok = run(mt() + " check " + head() + " --baseline " + base() + " --max-growth 50");
  EXPECT_EQ(ok.status, 0) << ok.out << ok.err;
  EXPECT_EQ(ok.out, "memtrack check: " + head() + ": 4 limits hold\n");
  const auto bad = run(mt() + " check " + head() + " --baseline " + base() + " --max-growth 1%");
  EXPECT_EQ(bad.status, 1);
  ASSERT_EQ(b.allocations, h.allocations);  // 6 and 6: the allocations' growth is 0 and holds
  EXPECT_EQ(bad.out, "peak heap grew " + pct(b.peak, h.peak) + " (" + tools::human_bytes(b.peak) + " -> " +
                         tools::human_bytes(h.peak) + ") > --max-growth 1%\n" + "bytes allocated grew " +
                         pct(b.allocated, h.allocated) + " (" + tools::human_bytes(b.allocated) + " -> " +
                         tools::human_bytes(h.allocated) + ") > --max-growth 1%\n" + "leaked grew " +
                         pct(b.leaked, h.leaked) + " (" + tools::human_bytes(b.leaked) + " -> " +
                         tools::human_bytes(h.leaked) + ") > --max-growth 1%\n");
  // Shrinking always holds.
  EXPECT_EQ(run(mt() + " check " + base() + " --baseline " + head() + " --max-growth 0").status, 0);
}

// --max-resident bounds stats' peak resident; it needs a recording that sampled it, and the whole recording.
TEST_F(DiffTest, CheckMaxResident) {
  // A process that lives long enough to be sampled (diff_prog may end before the first sample).
  const std::string sampled = *dir_ + "/sampled.mt";
  ASSERT_EQ(run(mt() + " record -q -o " + sampled + " -- /bin/sleep 0.3").status, 0);
  const std::string out =
      py(mt() + " stats --json " + sampled, "import json,sys\nprint(json.load(sys.stdin)['peak_resident_bytes'])\n");
  const std::uint64_t resident = std::stoull(out);
  ASSERT_GT(resident, 0u) << out;
  const auto ok = run(mt() + " check " + sampled + " --max-resident " + std::to_string(resident));
  EXPECT_EQ(ok.status, 0) << ok.out << ok.err;
  EXPECT_EQ(ok.out, "memtrack check: " + sampled + ": 1 limit holds\n");
  const auto bad = run(mt() + " check " + sampled + " --max-resident 1KiB");
  EXPECT_EQ(bad.status, 1);
  EXPECT_EQ(bad.out, "peak resident " + tools::human_bytes(resident) + " > --max-resident 1 KiB\n");
  const std::string unsampled = *dir_ + "/unsampled.mt";
  ASSERT_EQ(run(mt() + " record -q --no-resident -o " + unsampled + " -- " + kPrograms + "/head/diff_prog").status, 0);
  const auto none = run(mt() + " check " + unsampled + " --max-resident 1GiB");
  EXPECT_EQ(none.status, 1);
  EXPECT_EQ(none.err, "memtrack check: " + unsampled +
                          " has no resident samples (recorded with --no-resident or by an older memtrack, or its "
                          "processes ended before the first sample): --max-resident cannot be checked\n");
  const auto region = run(mt() + " check " + head() + " --max-resident 1GiB --region first");
  EXPECT_EQ(region.status, 2);
  EXPECT_NE(region.err.find("--max-resident with --region"), std::string::npos) << region.err;
}

// diff --by resident (programs/resident.c's touch mode: one 64 MiB block, 16 MiB of it touched in base and
// 32 in head): the site is compared by its resident bytes at the page snapshots, the totals by stats' peak
// resident; a recording without resident samples is named and refused.
TEST_F(DiffTest, ByResident) {
  // Held long enough for a page snapshot after the last touch: snapshots are spaced by 50 times the last one's
  // wall time (2% of the process's), which a sanitizer's slower recorder stretches (resident_test.cpp); 300 ms
  // left head's 32 MiB snapshotted part-way under load.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  const std::string hold = "3000";
#else
  const std::string hold = "1000";
#endif
  const std::string b = *dir_ + "/rss16.mt", h = *dir_ + "/rss32.mt", none = *dir_ + "/rss-none.mt";
  const std::string program = std::string(MEMTRACK_PROGRAMS_DIR) + "/resident touch 64 ";
  ASSERT_EQ(run(mt() + " record -q -o " + b + " -- " + program + "16 " + hold + " >/dev/null").status, 0);
  ASSERT_EQ(run(mt() + " record -q -o " + h + " -- " + program + "32 " + hold + " >/dev/null").status, 0);
  ASSERT_EQ(run(mt() + " record -q --no-resident -o " + none + " -- " + program + "32 10 >/dev/null").status, 0);
  const auto peak_resident = [&](const std::string& file) {
    return std::stoull(
        py(mt() + " stats --json " + file, "import json,sys\nprint(json.load(sys.stdin)['peak_resident_bytes'])\n"));
  };
  const std::uint64_t rb = peak_resident(b), rh = peak_resident(h);

  const std::string out =
      py(mt() + " diff --json --by resident -n 1 " + b + " " + h,
         "import json,sys\nd=json.load(sys.stdin)\nt=d['totals']\ns=d['sites'][0]\n"
         "print(d['by'], t['base']['peak_resident_bytes'], t['head']['peak_resident_bytes'],"
         " t['delta']['peak_resident_bytes'])\n"
         "print(s['status'], s['base']['allocated_bytes'], s['head']['allocated_bytes'],"
         " s['base']['resident_bytes'], s['head']['resident_bytes'], s['delta']['resident_bytes'])\n");
  std::istringstream in(out);
  std::string by, status;
  std::uint64_t tb = 0, th = 0, ab = 0, ah = 0, sb = 0, sh = 0;
  std::int64_t td = 0, sd = 0;
  in >> by >> tb >> th >> td >> status >> ab >> ah >> sb >> sh >> sd;
  ASSERT_FALSE(in.fail()) << out;
  EXPECT_EQ(by, "resident");
  EXPECT_EQ(tb, rb);
  EXPECT_EQ(th, rh);
  EXPECT_EQ(td, static_cast<std::int64_t>(rh - rb));
  // The block's site leads: allocated alike, resident ~16 and ~32 MiB (within 10%).
  constexpr std::uint64_t kMiB = 1 << 20;
  EXPECT_EQ(status, "changed");
  EXPECT_EQ(ab, 64 * kMiB);
  EXPECT_EQ(ah, 64 * kMiB);
  EXPECT_GE(sb, 16 * kMiB * 9 / 10) << out;
  EXPECT_LE(sb, 16 * kMiB * 11 / 10) << out;
  EXPECT_GE(sh, 32 * kMiB * 9 / 10) << out;
  EXPECT_LE(sh, 32 * kMiB * 11 / 10) << out;
  EXPECT_EQ(sd, static_cast<std::int64_t>(sh - sb));

  const auto t = run(mt() + " diff --by resident -n 1 " + b + " " + h);
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("\n  peak resident    "), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("sites by change in resident: "), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("#1  changed  resident " + tools::human_bytes(sb) + " -> " + tools::human_bytes(sh)),
            std::string::npos)
      << t.out;
  const auto m = run(mt() + " diff --markdown --by resident -n 1 " + b + " " + h);
  ASSERT_EQ(m.status, 0) << m.err;
  EXPECT_NE(m.out.find("| # | status | resident | peak |"), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("| peak resident | " + tools::human_bytes(rb) + " | " + tools::human_bytes(rh) + " |"),
            std::string::npos)
      << m.out;

  // By peak, the same block is the same site: its heap figures did not move, its resident bytes are shown.
  EXPECT_EQ(py(mt() + " diff --json -n 0 " + b + " " + h,
               "import json,sys\nd=json.load(sys.stdin)\n"
               "print([(s['status'], 'resident_bytes' in s['head']) for s in d['sites']"
               " if s['head'] and s['head']['allocated_bytes']==64<<20],"
               " 'peak_resident_bytes' in d['totals']['base'])\n"),
            "[('same', True)] True\n");
  // Against a recording without samples: no peak resident in the totals; --by resident names the file.
  EXPECT_EQ(py(mt() + " diff --json " + b + " " + none,
               "import json,sys\nd=json.load(sys.stdin)\nprint('peak_resident_bytes' in d['totals']['base'],"
               " [s for s in d['sites'] if 'resident_bytes' in (s['head'] or s['base'])])\n"),
            "False []\n");
  const auto refused = run(mt() + " diff --by resident " + b + " " + none);
  EXPECT_EQ(refused.status, 1);
  EXPECT_EQ(refused.err, "memtrack diff: " + none +
                             " has no resident samples (recorded with --no-resident or by an older memtrack, or its "
                             "processes ended before the first sample): --by resident cannot compare it\n");
  const auto region = run(mt() + " diff --by resident --region first " + b + " " + h);
  EXPECT_EQ(region.status, 2);
  EXPECT_NE(region.err.find("--by resident with --region"), std::string::npos) << region.err;
}

TEST_F(DiffTest, CheckUsage) {
  const auto none = run(mt() + " check " + head());
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.err.find("no limit given"), std::string::npos) << none.err;
  const auto size = run(mt() + " check " + head() + " --max-peak 12XB");
  EXPECT_EQ(size.status, 2);
  EXPECT_NE(size.err.find("--max-peak '12XB': expected a size"), std::string::npos) << size.err;
  EXPECT_EQ(run(mt() + " check " + head() + " --max-growth 10").status, 2);
  EXPECT_EQ(run(mt() + " check " + head() + " --baseline " + base()).status, 2);
  EXPECT_EQ(run(mt() + " check " + head() + " --baseline " + base() + " --max-growth ten").status, 2);
  EXPECT_EQ(run(mt() + " check " + head() + " --max-allocations -1").status, 2);
  const auto region = run(mt() + " check " + head() + " --max-peak 1MiB --region nope");
  EXPECT_EQ(region.status, 1);
  EXPECT_EQ(region.err, "memtrack check: " + head() + " has no region 'nope'\n");
}

// Regions (programs/control.c: "first" runs twice, 5000 B then 50 B): per-name figures, check per
// occurrence, diff of one region.
TEST_F(DiffTest, RegionFiguresCheckAndDiff) {
  const std::string file = *dir_ + "/control.mt";
  const auto rec = run(mt() + " record -q -o " + file + " -- " MEMTRACK_PROGRAMS_DIR "/control");
  ASSERT_EQ(rec.status, 0) << rec.err;
  const std::string figures =
      py(mt() + " stats --regions --json " + file,
         "import json,sys\nd=json.load(sys.stdin)\n"
         "for r in d['regions']:\n"
         "  if r['name'] != 'first': continue\n"
         "  print(r['runs'], [x['peak_bytes'] for x in r['per_run']], [x['leaked_bytes'] for x in r['per_run']],"
         " r['min']['allocations'], r['median']['peak_bytes'], r['max']['peak_bytes'], r['max']['allocated_bytes'])\n");
  EXPECT_EQ(figures, "2 [5000, 50] [3000, 50] 1 50 5000 5000\n");
  const auto table = run(mt() + " stats --regions " + file);
  EXPECT_NE(table.out.find("first: 2 runs\n  peak         50 B / 50 B / 4.9 KiB\n"), std::string::npos) << table.out;

  const auto holds = run(mt() + " check " + file + " --region first --max-peak 5000 --max-leaked 3000");
  EXPECT_EQ(holds.status, 0) << holds.out;
  const auto breaks = run(mt() + " check " + file + " --region first --max-peak 4KiB --max-allocations 1");
  EXPECT_EQ(breaks.status, 1);
  EXPECT_EQ(breaks.out,
            "region first (occurrence 1 of 2): peak heap 4.9 KiB > --max-peak 4 KiB\n"
            "region first (occurrence 1 of 2): allocations 2 > --max-allocations 1\n");

  const std::string diff =
      py(mt() + " diff --json --region first " + file + " " + file,
         "import json,sys\nd=json.load(sys.stdin)\nt=d['totals']\n"
         "print(d['region'], t['base']['allocations'], t['head']['allocated_bytes'], t['delta']['allocations'],"
         " [(r['name'], r['status']) for r in d['regions'] if r['name'] == 'first'])\n");
  EXPECT_EQ(diff, "first 3 5050 0 [('first', 'same')]\n");
}

// --pid-image: a recording of `sh -c 'control; diff_prog'` (three images), one image of it against the
// recording of diff_prog alone, and check on one image.
TEST_F(DiffTest, PidImageSelectsOneProcess) {
  const std::string two = *dir_ + "/two.mt";
  const auto rec = run(mt() + " record -q -o " + two + " -- /bin/sh -c '" MEMTRACK_PROGRAMS_DIR "/control; " +
                       kPrograms + "/base/diff_prog'");
  ASSERT_EQ(rec.status, 0) << rec.err;
  const std::string totals =
      "import json,sys\nd=json.load(sys.stdin)\nt=d['totals']['delta']\n"
      "print([t[k] for k in ('allocations','allocated_bytes','peak_bytes','leaked_bytes')],"
      " sorted(s['status'] for s in d['sites']))\n";
  // The whole recording has control's and the shell's allocations too.
  EXPECT_NE(py(mt() + " diff --json -n 0 " + base() + " " + two, totals).substr(0, 13), "[0, 0, 0, 0] ");
  EXPECT_EQ(py(mt() + " diff --json -n 0 --pid-image diff_prog " + base() + " " + two, totals),
            "[0, 0, 0, 0] ['same', 'same', 'same']\n");

  const Figures f = figures(base());
  const std::string check = mt() + " check " + two + " --pid-image diff_prog --max-allocations ";
  EXPECT_EQ(run(check + std::to_string(f.allocations)).status, 0);
  const auto breaks = run(check + std::to_string(f.allocations - 1));
  EXPECT_EQ(breaks.status, 1);
  EXPECT_EQ(breaks.out, "process diff_prog: allocations " + std::to_string(f.allocations) + " > --max-allocations " +
                            std::to_string(f.allocations - 1) + "\n");
  // control's regions, without its forked child's events: as control recorded alone.
  const auto region = run(mt() + " check " + two + " --pid-image control --region first --max-peak 4KiB");
  EXPECT_EQ(region.status, 1);
  EXPECT_EQ(region.out, "process control, region first (occurrence 1 of 2): peak heap 4.9 KiB > --max-peak 4 KiB\n");

  for (const std::string& command : {"check " + two + " --max-peak 1", "diff " + two + " " + two}) {
    const auto unknown = run(mt() + " " + command + " --pid-image nope");
    EXPECT_EQ(unknown.status, 2) << command;
    const std::string prefix =
        "memtrack " + command.substr(0, command.find(' ')) + ": no process running nope in " + two + " (images: ";
    EXPECT_EQ(unknown.err.substr(0, prefix.size()), prefix) << unknown.err;
    EXPECT_NE(unknown.err.find(", control, diff_prog)\n"), std::string::npos) << unknown.err;
  }
}

}  // namespace
}  // namespace memtrack::testing
