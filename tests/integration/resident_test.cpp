// Resident memory under `memtrack record` (docs/RUNTIME.md, "Resident memory"): programs whose resident
// memory is known (tests/integration/programs/resident.c) against the artifact's Resident records and
// `memtrack stats`' figures: touched and untouched pages, a fork holding memory in both processes,
// MADV_DONTNEED returning pages, and the peak against the kernel's own high-water mark.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/run.h"
#include "memtrack/analysis/artifact_pass.h"
#include "memtrack/analysis/sites.h"
#include "memtrack/analysis/stats.h"
#include "memtrack/codec/byte_source.h"
#include "memtrack/codec/context.h"

namespace {

namespace fs = std::filesystem;
using memtrack::analysis::Stats;
using memtrack::codec::Resident;

constexpr std::uint64_t kMiB = 1 << 20;
// What stdio may hold beside a program's own blocks when a sample lands after its last printf: stdout's
// buffer (4 KiB on a pipe), fopen's FILE and its buffer while it reads /proc/self/status.
constexpr std::uint64_t kStdioSlack = 16 * 1024;
// How far below the truth a process's resident counters in /proc/PID/status may read: the kernel keeps them
// per CPU and sums them approximately (percpu_counter_read_positive; each CPU folds its count in every 32
// pages), so a sample of a block touched whole can read a few pages short of it (seen: one page, once, in
// the ASan build on 6.18). 64 pages bounds it on this 2-CPU machine.
constexpr std::uint64_t kCounterSlack = 64 * 4096;
const std::string kMemtrack = MEMTRACK_BIN_DIR "/memtrack";
const std::string kProgram = MEMTRACK_PROGRAMS_DIR "/resident";

fs::path scratch_dir() { return memtrack::testing::test_dir("rss"); }
std::string slurp(const fs::path& p) { return memtrack::testing::slurp(p); }
int run(std::vector<std::string> argv, const fs::path& out, const fs::path& err) {
  const int status = memtrack::testing::spawn(argv, out, err);
  EXPECT_GE(status, 0) << "cannot run " << argv[0];
  return status;
}

// The "hwm <bytes>" lines a run of the program printed, in order.
std::vector<std::uint64_t> hwm_lines(const std::string& out) {
  std::vector<std::uint64_t> v;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line))
    if (const auto at = line.find("hwm "); at != std::string::npos) v.push_back(std::stoull(line.substr(at + 4)));
  return v;
}

struct Recorded {
  Stats stats;
  std::map<std::int32_t, std::vector<Resident>> samples;  // per pid, in stream order
  std::vector<std::uint64_t> hwm;                         // what the program printed under record
  std::string stats_text;
};

struct Collect final : memtrack::analysis::ArtifactConsumer {
  std::map<std::int32_t, std::vector<Resident>>* out;
  explicit Collect(std::map<std::int32_t, std::vector<Resident>>* o) : out(o) {}
  void add_context(const memtrack::codec::ContextRecord& r) override {
    if (const auto* s = std::get_if<Resident>(&r)) (*out)[s->pid].push_back(*s);
  }
  void add(std::span<const memtrack::codec::Event>) override {}
};

Recorded record(const fs::path& dir, std::vector<std::string> args, bool sampled = true) {
  std::vector<std::string> argv = {kMemtrack, "record", "-q", "-o", (dir / "a.mt").string(), "--", kProgram};
  if (!sampled) argv.insert(argv.begin() + 5, "--no-resident");
  argv.insert(argv.end(), args.begin(), args.end());
  EXPECT_EQ(run(argv, dir / "out", dir / "err"), 0) << slurp(dir / "err");
  Recorded r;
  r.hwm = hwm_lines(slurp(dir / "out"));
  const std::string bytes = slurp(dir / "a.mt");
  memtrack::codec::MemorySource source(std::as_bytes(std::span(bytes.data(), bytes.size())));
  Collect collect(&r.samples);
  memtrack::analysis::ArtifactConsumer* also[] = {&collect};
  r.stats = memtrack::analysis::compute_stats(source, "a.mt", {}, also);
  EXPECT_TRUE(r.stats.status.is_ok()) << r.stats.status.message();
#if defined(__SANITIZE_THREAD__)
  // Through a pipe (not seekable: no index), the sequential reader. The indexed one hands frames between oneTBB's
  // threads through libtbb's own synchronization, which ThreadSanitizer cannot see in Debian's uninstrumented libtbb:
  // on a many-frame artifact its reports (false positives) make `stats` take minutes. The figures are the same.
  EXPECT_EQ(run({"/bin/sh", "-c", "cat \"$1\" | \"$0\" stats -", kMemtrack, (dir / "a.mt").string()}, dir / "stats",
                dir / "stats.err"),
            0)
      << slurp(dir / "stats.err").substr(0, 2000);
#else
  EXPECT_EQ(run({kMemtrack, "stats", (dir / "a.mt").string()}, dir / "stats", dir / "stats.err"), 0);
#endif
  r.stats_text = slurp(dir / "stats");
  return r;
}

// The program run natively: what it printed.
std::vector<std::uint64_t> native(const fs::path& dir, std::vector<std::string> args) {
  std::vector<std::string> argv = {kProgram};
  argv.insert(argv.end(), args.begin(), args.end());
  EXPECT_EQ(run(argv, dir / "native", dir / "native.err"), 0);
  return hwm_lines(slurp(dir / "native"));
}

void expect_within(std::uint64_t value, std::uint64_t reference, double fraction, const char* what) {
  const double d = std::abs(static_cast<double>(value) - static_cast<double>(reference));
  EXPECT_LE(d, fraction * static_cast<double>(reference)) << what << ": " << value << " against " << reference;
}

TEST(Resident, ThePeakOfOneProcessIsWithinFivePercentOfItsNativeHighWaterMark) {
  const fs::path dir = scratch_dir();
  const std::vector<std::uint64_t> hwm = native(dir, {"touch", "64", "64", "300"});
  ASSERT_EQ(hwm.size(), 1u);
  const Recorded r = record(dir, {"touch", "64", "64", "300"});
  ASSERT_TRUE(r.stats.resident_recorded());
  ASSERT_EQ(r.stats.resident.pids().size(), 1u);
  const auto& pid = r.stats.resident.pids().begin()->second;
  expect_within(pid.peak.resident, hwm[0], 0.05, "peak resident against the native VmHWM");
  expect_within(r.stats.resident.peak().resident, hwm[0], 0.05, "the recording's peak");
  // The heap block is touched whole: resident anonymous memory holds it, the gap is small and positive.
  EXPECT_GE(pid.peak.live_heap, 64 * kMiB);
  EXPECT_LE(pid.peak.live_heap, 64 * kMiB + kStdioSlack);
  EXPECT_GE(pid.peak.anon, 64 * kMiB - kCounterSlack);
  EXPECT_LT(pid.peak.gap(), static_cast<std::int64_t>(4 * kMiB));
  // The kernel's mark under record (memtrack's pages included) is at least what the samples say.
  ASSERT_EQ(r.hwm.size(), 1u);
  EXPECT_GE(r.hwm[0] + kMiB / 4, pid.peak.resident);
  EXPECT_NE(r.stats_text.find("\nresident memory (sampled from /proc"), std::string::npos) << r.stats_text;
  EXPECT_NE(r.stats_text.find("  peak resident          " + std::to_string(r.stats.resident.peak().resident)),
            std::string::npos)
      << r.stats_text;
}

// Children that call _exit right after fork are gone (or zombies, whose statm reads nothing) before the sampler
// reads their /proc files: not sampled, and said so, never shown with 0 figures; the parent's peak stays right.
TEST(Resident, AProcessThatExitsBeforeASampleIsReportedAsNotSampled) {
  const fs::path dir = scratch_dir();
  const std::vector<std::string> args = {"children", "8", "32", "300"};
  const std::vector<std::uint64_t> hwm = native(dir, args);
  ASSERT_EQ(hwm.size(), 1u);
  const Recorded r = record(dir, args);
  ASSERT_EQ(r.stats.heap.pids().size(), 9u);
  std::vector<std::int32_t> unsampled;
  for (const auto& [pid, h] : r.stats.heap.pids())
    if (!r.stats.resident.pids().contains(pid)) unsampled.push_back(pid);
  // Each child exits within microseconds of its first note; the sampler opens its files only after the reader
  // met that note. Almost all of them are missed; one is enough for the check.
  ASSERT_FALSE(unsampled.empty()) << r.stats_text;
  ASSERT_EQ(run({kMemtrack, "stats", "--json", (dir / "a.mt").string()}, dir / "json", dir / "json.err"), 0);
  const std::string json = slurp(dir / "json");
  const std::size_t list = json.find("\"resident_unsampled_pids\":[");
  ASSERT_NE(list, std::string::npos) << json;
  const std::string listed = json.substr(list, json.find(']', list) - list);
  for (const std::int32_t pid : unsampled) {
    const std::string p = std::to_string(pid);
    // The table: one "not sampled" line, no row of figures.
    EXPECT_NE(r.stats_text.find("\n  " + p + std::string(8 - std::min<std::size_t>(8, p.size()), ' ') +
                                " not sampled (it ended before its first sample, or /proc hid it)\n"),
              std::string::npos)
        << pid << "\n"
        << r.stats_text;
    // JSON: null figures and in the list, never 0.
    const std::size_t at = json.find("{\"pid\":" + p + ",");
    ASSERT_NE(at, std::string::npos) << pid;
    const std::size_t fig = json.find("\"peak_resident_bytes\":", at);
    ASSERT_NE(fig, std::string::npos);
    EXPECT_EQ(json.substr(fig, 26), "\"peak_resident_bytes\":null") << pid;
    EXPECT_NE(listed.find(p), std::string::npos) << pid << " not in " << listed;
  }
  // The parent, sampled, holds the recording's peak: its 32 MiB, within 5% of its native high-water mark.
  ASSERT_FALSE(r.stats.resident.pids().empty());
  expect_within(r.stats.resident.peak().resident, hwm[0], 0.05, "the recording's peak");
  EXPECT_GE(r.stats.resident.peak().anon, 32 * kMiB - kCounterSlack);
}

// With stacks on, the preload's trace tree and the unwinder's rule cache hold many MiB in the process (2^16
// distinct stacks: ~260k nodes); they are memtrack's pages, in its named memfd, and left out like the ring's.
TEST(Resident, MemtracksOwnTablesAreLeftOutOfTheProgramsPeak) {
  const fs::path dir = scratch_dir();
  const std::vector<std::string> args = {"stacks", "16", "32", "300"};
  const std::vector<std::uint64_t> hwm = native(dir, args);
  ASSERT_EQ(hwm.size(), 1u);
  const Recorded r = record(dir, args);
  ASSERT_EQ(r.stats.resident.pids().size(), 1u);
  const auto& pid = r.stats.resident.pids().begin()->second;
  expect_within(pid.peak.resident, hwm[0], 0.05, "peak resident against the native VmHWM, stacks on");
  // The tables were there and counted: the kernel's mark under record holds them, the samples say how much.
  EXPECT_GE(r.stats.resident.own_max(), 4 * kMiB);
  ASSERT_EQ(r.hwm.size(), 1u);
  EXPECT_GE(r.hwm[0], hwm[0] + 4 * kMiB);
  EXPECT_GE(pid.peak.own, 4 * kMiB);
}

// record --no-resident: no samples, no section, and stats shows no resident figures at all.
TEST(Resident, NoResidentRecordsNone) {
  const fs::path dir = scratch_dir();
  const Recorded r = record(dir, {"touch", "16", "16", "100"}, false);
  EXPECT_FALSE(r.stats.resident_recorded());
  EXPECT_TRUE(r.samples.empty());
  EXPECT_EQ(r.stats_text.find("resident memory"), std::string::npos) << r.stats_text;
  EXPECT_EQ(r.stats_text.find("peak resident"), std::string::npos) << r.stats_text;
}

TEST(Resident, UntouchedPagesAreNotResident) {
  const fs::path dir = scratch_dir();
  const std::vector<std::uint64_t> hwm = native(dir, {"touch", "64", "16", "300"});
  const Recorded r = record(dir, {"touch", "64", "16", "300"});
  ASSERT_EQ(r.stats.resident.pids().size(), 1u);
  const auto& peak = r.stats.resident.pids().begin()->second.peak;
  expect_within(peak.resident, hwm[0], 0.05, "16 of 64 MiB touched");
  EXPECT_LT(peak.resident, 24 * kMiB);
  EXPECT_GE(peak.anon, 16 * kMiB - kCounterSlack);
  // 64 MiB of live heap, 16 resident: the gap is about -48 MiB.
  EXPECT_GE(peak.live_heap, 64 * kMiB);
  EXPECT_LE(peak.live_heap, 64 * kMiB + kStdioSlack);
  EXPECT_LT(peak.gap(), -static_cast<std::int64_t>(44 * kMiB));
  EXPECT_GT(peak.gap(), -static_cast<std::int64_t>(49 * kMiB));
}

TEST(Resident, AForkHoldingMemoryInBothProcessesCountsBoth) {
  const fs::path dir = scratch_dir();
  const std::vector<std::uint64_t> hwm = native(dir, {"fork", "32", "300"});
  ASSERT_EQ(hwm.size(), 2u);
  const Recorded r = record(dir, {"fork", "32", "300"});
  ASSERT_EQ(r.stats.resident.pids().size(), 2u);
  for (const auto& [pid, p] : r.stats.resident.pids()) {
    EXPECT_GE(p.peak.anon, 32 * kMiB - kCounterSlack) << pid;
    EXPECT_LT(p.peak.resident, 40 * kMiB) << pid;
    EXPECT_GE(p.peak.live_heap, 32 * kMiB) << pid;
    EXPECT_LE(p.peak.live_heap, 32 * kMiB + kStdioSlack) << pid;
  }
  // Both hold their 32 MiB at once: the recording's peak is the sum of the two, within 5%.
  expect_within(r.stats.resident.peak().resident, hwm[0] + hwm[1], 0.05, "the sum of both processes");
  // The live heap at that moment holds at least one of the blocks. Not necessarily both: a sample is placed
  // in the stream where the sampler notes it, after its /proc read, so a free that one process makes between
  // the other's read and its note is before the note (docs/RUNTIME.md, "Resident memory"). Under load the
  // peak can fall on such a sample at the end of the hold.
  EXPECT_GE(r.stats.resident.peak().live_heap, 32 * kMiB);
  EXPECT_LE(r.stats.resident.peak().live_heap, 64 * kMiB + 2 * kStdioSlack);
}

// The report's chart data (docs: tools/report/report_html.h, timeline.resident): the whole recording's resident
// series and one per sampled pid, only when the artifact has samples.
TEST(Resident, TheReportChartsResidentMemoryOnlyWhenSampled) {
  const fs::path dir = scratch_dir();
  const Recorded r = record(dir, {"fork", "16", "200"});
  ASSERT_EQ(r.stats.resident.pids().size(), 2u);
  ASSERT_EQ(run({kMemtrack, "report", (dir / "a.mt").string(), "-o", (dir / "a.html").string()}, dir / "rep.out",
                dir / "rep.err"),
            0)
      << slurp(dir / "rep.err");
  const std::string page = slurp(dir / "a.html");
  const std::size_t at = page.find("\"resident\":{\"t_ns\":[");
  ASSERT_NE(at, std::string::npos);
  const std::string resident = page.substr(at, page.find("]}]}", at) - at);
  for (const auto& [pid, p] : r.stats.resident.pids())
    EXPECT_NE(resident.find("{\"pid\":" + std::to_string(pid) + ",\"t_ns\":["), std::string::npos) << pid;
  // The whole recording's highest resident sample is its peak (a bucket keeps its largest sample).
  EXPECT_NE(resident.find(std::to_string(r.stats.resident.peak().resident)), std::string::npos);

  const fs::path bare = scratch_dir();
  (void)record(bare, {"touch", "4", "4", "50"}, false);
  ASSERT_EQ(run({kMemtrack, "report", (bare / "a.mt").string(), "-o", (bare / "a.html").string()}, bare / "rep.out",
                bare / "rep.err"),
            0);
  EXPECT_EQ(slurp(bare / "a.html").find("\"resident\":{"), std::string::npos);
}

TEST(Resident, MadvDontneedReturnsPagesAndTheSamplesFollow) {
  const fs::path dir = scratch_dir();
  const Recorded r = record(dir, {"dontneed", "64", "200"});
  ASSERT_EQ(r.samples.size(), 1u);
  const std::vector<Resident>& s = r.samples.begin()->second;
  const auto high = std::max_element(s.begin(), s.end(),
                                     [](const Resident& a, const Resident& b) { return a.resident() < b.resident(); });
  EXPECT_GE(high->anon, 64 * kMiB - kCounterSlack);
  // After the peak: down to the program's few MiB, then up again by the quarter it touches again.
  const auto low =
      std::min_element(high, s.end(), [](const Resident& a, const Resident& b) { return a.resident() < b.resident(); });
  ASSERT_NE(low, s.end());
  EXPECT_LT(low->anon, 4 * kMiB);
  const auto again =
      std::max_element(low, s.end(), [](const Resident& a, const Resident& b) { return a.resident() < b.resident(); });
  EXPECT_GE(again->anon, 16 * kMiB - kCounterSlack);
  EXPECT_LT(again->anon, 20 * kMiB);
  // A mapping, not the heap: the live heap is a few KiB all along, the gap is the mapping.
  EXPECT_LT(r.stats.resident.peak().live_heap, kMiB);
  EXPECT_GT(r.stats.resident.peak().gap(), static_cast<std::int64_t>(63 * kMiB));
}

// Resident bytes per allocation site (docs/RUNTIME.md, "Resident pages"): a 64 MiB block with 16 MiB touched
// and a 16 MiB block touched whole, from two call sites, are each ~16 MiB resident, allocated 64 and 16.
TEST(Resident, EachSitesResidentBytesAreItsTouchedPages) {
  const fs::path dir = scratch_dir();
  // The program holds its blocks long enough for a snapshot after its last touch: snapshots are spaced by 50
  // times the last one's wall time (2% of the process's time), which a sanitizer's slower recorder or a loaded machine
  // stretches (300 ms failed once under 4 parallel builds).
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  const Recorded r = record(dir, {"sites", "2000"});
#else
  const Recorded r = record(dir, {"sites", "1000"});
#endif
  const std::string bytes = slurp(dir / "a.mt");
  std::vector<memtrack::codec::ResidentPages> snapshots;
  struct Pages final : memtrack::analysis::ArtifactConsumer {
    std::vector<memtrack::codec::ResidentPages>* out;
    explicit Pages(std::vector<memtrack::codec::ResidentPages>* o) : out(o) {}
    void add_context(const memtrack::codec::ContextRecord& c) override {
      if (const auto* p = std::get_if<memtrack::codec::ResidentPages>(&c)) out->push_back(*p);
    }
    void add(std::span<const memtrack::codec::Event>) override {}
  } pages(&snapshots);
  memtrack::analysis::SiteAccumulator acc;
  memtrack::analysis::ArtifactConsumer* consumers[] = {&acc, &pages};
  memtrack::analysis::PassSummary pass;
  ASSERT_TRUE(
      memtrack::analysis::read_artifact(std::as_bytes(std::span(bytes.data(), bytes.size())), "a.mt", consumers, pass));
  ASSERT_FALSE(snapshots.empty());
  // Snapshots only grow, and a process gets few of them.
  EXPECT_LE(snapshots.size(), 20u);
  const memtrack::analysis::SitesResult sites = acc.result(memtrack::analysis::SiteOrder::resident, 0);
  ASSERT_TRUE(sites.has_resident_pages);
  ASSERT_GE(sites.sites.size(), 2u);
  // The two heaviest by resident bytes are the two blocks' sites, ~16 MiB each.
  std::vector<std::uint64_t> allocated;
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& t = sites.sites[i].totals;
    expect_within(t.resident_bytes, 16 * kMiB, 0.10, "a site's resident bytes");
    allocated.push_back(t.allocated_bytes);
  }
  std::sort(allocated.begin(), allocated.end());
  EXPECT_EQ(allocated, (std::vector<std::uint64_t>{16 * kMiB, 64 * kMiB}));
  // Every other site holds little.
  for (std::size_t i = 2; i < sites.sites.size(); ++i) EXPECT_LT(sites.sites[i].totals.resident_bytes, kMiB);

  // stats counts the snapshots (per pid in --json); the process was snapshotted, so none is "not sampled".
  ASSERT_EQ(r.stats.resident.pids().size(), 1u);
  EXPECT_EQ(r.stats.resident.pids().begin()->second.page_snapshots, snapshots.size());
  EXPECT_NE(r.stats_text.find("  resident pages         " + std::to_string(snapshots.size()) + " snapshot"),
            std::string::npos)
      << r.stats_text;
  EXPECT_EQ(r.stats_text.find("not sampled"), std::string::npos) << r.stats_text;

  // The command: `top --by resident` ranks them, `--json` gives every site resident_bytes.
  const std::string artifact = (dir / "a.mt").string();
  ASSERT_EQ(run({kMemtrack, "top", artifact, "--by", "resident", "-n", "2"}, dir / "top", dir / "top.err"), 0)
      << slurp(dir / "top.err");
  const std::string top = slurp(dir / "top");
  EXPECT_NE(top.find("top 2 allocation sites by resident"), std::string::npos) << top;
  EXPECT_NE(top.find("allocated 64.0 MiB in 1 allocation"), std::string::npos) << top;
  EXPECT_NE(top.find("allocated 16.0 MiB in 1 allocation"), std::string::npos) << top;
  ASSERT_EQ(run({kMemtrack, "top", artifact, "--json", "-n", "0"}, dir / "top.json", dir / "top.err"), 0);
  const std::string json = slurp(dir / "top.json");
  std::size_t sites_in_json = 0, with_resident = 0;
  for (std::size_t at = json.find("\"stack\""); at != std::string::npos; at = json.find("\"stack\"", at + 1))
    ++sites_in_json;
  for (std::size_t at = json.find("\"resident_bytes\""); at != std::string::npos;
       at = json.find("\"resident_bytes\"", at + 1))
    ++with_resident;
  EXPECT_EQ(with_resident, sites_in_json + 3) << json;  // each site, and rest, without_stack, totals
}

// Without snapshots (--no-resident, or an older recording) top says so instead of ranking zeros.
TEST(Resident, TopByResidentWithoutSnapshotsSaysNotRecorded) {
  const fs::path dir = scratch_dir();
  const Recorded r = record(dir, {"sites", "50"}, false);
  const std::string artifact = (dir / "a.mt").string();
  EXPECT_EQ(run({kMemtrack, "top", artifact, "--by", "resident"}, dir / "top", dir / "top.err"), 1);
  EXPECT_NE(slurp(dir / "top.err").find("resident per site not recorded"), std::string::npos) << slurp(dir / "top.err");
  ASSERT_EQ(run({kMemtrack, "top", artifact, "--json"}, dir / "top.json", dir / "top.err"), 0);
  EXPECT_EQ(slurp(dir / "top.json").find("resident_bytes"), std::string::npos);
}

}  // namespace
