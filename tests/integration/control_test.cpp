// Harness control under `memtrack record` (memtrack/control.h, docs/RUNTIME.md "Harness control"): the
// program tests/integration/programs/control.c allocates known amounts before, inside and after regions and
// while paused; the artifact's regions (analysis::Regions) and `memtrack stats --region` must give its figures
// exactly. Also `record --paused` with `memtrack ctl` and the recorder's signals, threads toggling while
// others allocate, and the library without memtrack.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "memtrack/analysis/artifact_pass.h"
#include "memtrack/analysis/regions.h"
#include "memtrack/codec/context.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using memtrack::analysis::RegionOccurrence;
using memtrack::analysis::Regions;
using namespace memtrack::codec;

const std::string kMemtrack = MEMTRACK_BIN_DIR "/memtrack";
const std::string kPrograms = MEMTRACK_PROGRAMS_DIR;

fs::path scratch_dir() {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir =
      fs::path(testing::TempDir()) / (std::string("memtrack_ctl_") + info->name() + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs argv, stdout to `out` (if given), stderr to dir/err; returns the exit code.
int run(std::vector<std::string> argv, const fs::path& out = {}, const fs::path& err = {}) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (!out.empty()) posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!err.empty()) posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> a;
  for (std::string& s : argv) a.push_back(s.data());
  a.push_back(nullptr);
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, a[0], &fa, nullptr, a.data(), environ), 0) << argv[0];
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Everything a pass over the artifact gives: the events, the context records, the regions.
struct Read : memtrack::analysis::ArtifactConsumer {
  std::vector<Event> events;
  std::vector<ContextRecord> context;
  Regions regions;
  void add_context(const ContextRecord& r) override {
    context.push_back(r);
    regions.add_context(r);
  }
  void add(std::span<const Event> e) override {
    events.insert(events.end(), e.begin(), e.end());
    regions.add(e);
  }
};

void read(const fs::path& artifact, Read& out) {
  const std::string bytes = slurp(artifact);
  ASSERT_FALSE(bytes.empty()) << artifact;
  memtrack::analysis::ArtifactConsumer* consumers[] = {&out};
  memtrack::analysis::PassSummary pass;
  const Status s = memtrack::analysis::read_artifact({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()},
                                                     artifact.string(), consumers, pass);
  ASSERT_TRUE(s.is_ok()) << s.message();
  out.regions.finish();
}

std::size_t mallocs_of(const std::vector<Event>& events, std::uint64_t size) {
  std::size_t n = 0;
  for (const Event& e : events) n += e.kind == EventKind::Malloc && e.size == size;
  return n;
}

template <typename T>
std::vector<T> all_of(const std::vector<ContextRecord>& records) {
  std::vector<T> out;
  for (const ContextRecord& r : records)
    if (const T* t = std::get_if<T>(&r)) out.push_back(*t);
  return out;
}

const RegionOccurrence* find(const Regions& r, const std::string& name, std::uint32_t occurrence) {
  for (const RegionOccurrence& o : r.occurrences())
    if (o.name == name && o.occurrence == occurrence) return &o;
  return nullptr;
}

struct Figures {
  std::uint64_t allocations, allocated_bytes, frees, freed_bytes, frees_of_older, peak_bytes, retained_bytes;
};
void expect_figures(const Regions& r, const std::string& name, std::uint32_t occurrence, const Figures& f) {
  const RegionOccurrence* o = find(r, name, occurrence);
  ASSERT_NE(o, nullptr) << name << "#" << occurrence;
  EXPECT_EQ(o->ended, RegionOccurrence::Ended::region_end) << name;
  EXPECT_EQ(o->allocations, f.allocations) << name << "#" << occurrence;
  EXPECT_EQ(o->allocated_bytes, f.allocated_bytes) << name << "#" << occurrence;
  EXPECT_EQ(o->frees, f.frees) << name << "#" << occurrence;
  EXPECT_EQ(o->freed_bytes, f.freed_bytes) << name << "#" << occurrence;
  EXPECT_EQ(o->frees_of_older, f.frees_of_older) << name << "#" << occurrence;
  EXPECT_EQ(o->peak_bytes, f.peak_bytes) << name << "#" << occurrence;
  EXPECT_EQ(o->retained_bytes, f.retained_bytes) << name << "#" << occurrence;
}

void check_scenario(const std::string& program) {
  const fs::path dir = scratch_dir();
  const fs::path artifact = dir / "a.msgpack";
  ASSERT_EQ(run({kMemtrack, "record", "-q", "-o", artifact.string(), "--", kPrograms + "/" + program}, dir / "out",
                dir / "err"),
            0)
      << slurp(dir / "err");
  EXPECT_EQ(slurp(dir / "out"), "recording\n");
  Read r;
  read(artifact, r);
  // The figures of control.c, exactly (its comments).
  expect_figures(r.regions, "first", 1, {2, 5000, 1, 2000, 1, 5000, 3000});
  expect_figures(r.regions, "second", 1, {2, 1100, 2, 1100, 1, 1100, 0});
  expect_figures(r.regions, "inner", 1, {1, 600, 1, 600, 0, 600, 0});
  expect_figures(r.regions, "first", 2, {1, 50, 0, 0, 0, 50, 50});
  // The fork child's 20 bytes are the parent's region's: allocated and freed there.
  expect_figures(r.regions, "forked", 1, {2, 30, 1, 20, 0, 30, 10});
  EXPECT_EQ(r.regions.occurrences().size(), 5u);
  // Paused: the 4000- and 700-byte blocks are not in the artifact; the frees around them are.
  EXPECT_EQ(mallocs_of(r.events, 4000), 0u);
  EXPECT_EQ(mallocs_of(r.events, 700), 0u);
  EXPECT_EQ(mallocs_of(r.events, 1000), 1u);
  ASSERT_EQ(r.regions.paused().size(), 2u);
  for (const auto& p : r.regions.paused()) {
    EXPECT_TRUE(p.resumed);
    EXPECT_EQ(p.source, "library");
  }
  // The 1000-byte block allocated before the pause is freed during it: freed in the artifact too.
  std::uint64_t a = 0;
  for (const Event& e : r.events)
    if (e.kind == EventKind::Malloc && e.size == 1000) a = e.addr;
  std::size_t frees_of_a = 0;
  for (std::size_t i = 0; i < r.events.size(); ++i)
    if (r.events[i].kind == EventKind::Free && r.events[i].addr == a) {
      ++frees_of_a;
      EXPECT_GE(i, r.regions.paused()[0].begin_event);
      EXPECT_LT(i, r.regions.paused()[0].end_event);
    }
  EXPECT_EQ(frees_of_a, 1u);
  // The realloc while paused: its old block's Free, inside the pause, and nothing of the new block.
  std::uint64_t k = 0;
  std::size_t k_at = 0;
  for (std::size_t i = 0; i < r.events.size(); ++i) {
    if (r.events[i].kind == EventKind::Malloc && r.events[i].size == 222) k = r.events[i].addr, k_at = i;
    EXPECT_NE(r.events[i].size, 3333u) << "an allocation while paused was recorded";
  }
  std::size_t frees_of_k = 0;
  for (std::size_t i = k_at + 1; i < r.events.size(); ++i)
    if (r.events[i].kind == EventKind::Free && r.events[i].addr == k && i < r.regions.paused()[0].end_event) {
      ++frees_of_k;
      EXPECT_GE(i, r.regions.paused()[0].begin_event);
    }
  EXPECT_EQ(frees_of_k, 1u);
  const auto info = all_of<RecordingInfo>(r.context);
  ASSERT_EQ(info.size(), 1u);
  EXPECT_NE(std::find(info[0].sections.begin(), info[0].sections.end(), "control"), info[0].sections.end());

  // stats --region: the occurrences of "first" summed, with the later frees of their blocks.
  ASSERT_EQ(run({kMemtrack, "stats", artifact.string(), "--json", "--region", "first"}, dir / "stats.json",
                dir / "stats.err"),
            0)
      << slurp(dir / "stats.err");
  const std::string json = slurp(dir / "stats.json");
  for (const char* want : {"\"events\":7,", "\"bytes_allocated\":5050,", "\"peak_live_bytes\":5000,",
                           "\"occurrences\":2}", "\"Malloc\":3,", "\"Free\":4,", "\"leaked_bytes\":0,"})
    EXPECT_NE(json.find(want), std::string::npos) << want << " in " << json;
  EXPECT_EQ(run({kMemtrack, "stats", artifact.string(), "--region", "nope"}, dir / "nope.out", dir / "nope.err"), 1);
  EXPECT_NE(slurp(dir / "nope.err").find("has no region 'nope' (its regions: first, forked, inner, second)"),
            std::string::npos)
      << slurp(dir / "nope.err");
  // top --region: the sites of the region's allocations only (3000, 2000 and 50 bytes; not the 1000 before).
  ASSERT_EQ(run({kMemtrack, "top", artifact.string(), "--json", "--by", "allocated", "--region", "first"},
                dir / "top.json", dir / "top.err"),
            0)
      << slurp(dir / "top.err");
  const std::string top = slurp(dir / "top.json");
  for (const char* want : {"\"allocated_bytes\":3000,", "\"allocated_bytes\":2000,", "\"allocated_bytes\":50,"})
    EXPECT_NE(top.find(want), std::string::npos) << want << " in " << top;
  EXPECT_EQ(top.find("\"allocated_bytes\":1000,"), std::string::npos) << top;
  // report: every occurrence on the time axis.
  ASSERT_EQ(run({kMemtrack, "report", artifact.string(), "-o", (dir / "r.html").string()}, {}, dir / "report.err"), 0);
  const std::string page = slurp(dir / "r.html");
  for (const char* want : {"\"regions\":[{\"name\":\"first\"", "{\"name\":\"first #2\"", "{\"name\":\"forked\""})
    EXPECT_NE(page.find(want), std::string::npos) << want;
  // decode --context-only prints the control records as JSON lines.
  ASSERT_EQ(run({kMemtrack, "decode", artifact.string(), "--context-only"}, dir / "context.jsonl"), 0);
  const std::string lines = slurp(dir / "context.jsonl");
  for (const char* want : {"{\"context\":\"RegionBegin\"", "\"name\":\"inner\"", "{\"context\":\"RegionEnd\"",
                           "{\"context\":\"Pause\"", "\"source\":\"library\"", "{\"context\":\"Resume\""})
    EXPECT_NE(lines.find(want), std::string::npos) << want;
  // And the plain stats list every occurrence.
  ASSERT_EQ(run({kMemtrack, "stats", artifact.string()}, dir / "stats.txt"), 0);
  EXPECT_NE(slurp(dir / "stats.txt").find("regions (figures of each region's own heap blocks"), std::string::npos);
}

TEST(Control, RegionFiguresAreExact) { check_scenario("control"); }

// The static archive's weak reference binds to the preload in an executable too.
TEST(Control, RegionFiguresAreExactWithTheStaticLibrary) { check_scenario("control_static"); }

TEST(Control, WithoutMemtrackEveryCallIsANoOp) {
  const fs::path dir = scratch_dir();
  EXPECT_EQ(run({kPrograms + "/control", "noop", "100000"}, dir / "out"), 0);
  EXPECT_EQ(slurp(dir / "out"), "0\n");
}

TEST(Control, AnExecEndsTheRegionsOfTheImage) {
  const fs::path dir = scratch_dir();
  const fs::path artifact = dir / "a.msgpack";
  ASSERT_EQ(run({kMemtrack, "record", "-q", "-o", artifact.string(), "--", kPrograms + "/control", "exec"}, dir / "out",
                dir / "err"),
            0)
      << slurp(dir / "err");
  Read r;
  read(artifact, r);
  ASSERT_EQ(r.regions.occurrences().size(), 2u);
  const RegionOccurrence& before = r.regions.occurrences()[0];
  const RegionOccurrence& after = r.regions.occurrences()[1];
  EXPECT_EQ(before.name, "exec");
  EXPECT_EQ(before.ended, RegionOccurrence::Ended::exec);
  EXPECT_EQ(before.allocations, 1u);
  EXPECT_EQ(before.allocated_bytes, 10u);
  EXPECT_EQ(after.name, "noop");
  EXPECT_EQ(after.pid, before.pid);
  EXPECT_EQ(after.ended, RegionOccurrence::Ended::region_end);
  EXPECT_GE(after.begin_event, before.end_event);
}

// A child with pipes on stdin and stdout.
struct Child {
  pid_t pid = 0;
  int in = -1, out = -1;
  std::string ask(char c) {
    char line[2] = {c, '\n'};
    EXPECT_EQ(write(in, line, 2), 2);
    std::string reply;
    char ch;
    while (::read(out, &ch, 1) == 1 && ch != '\n') reply += ch;
    return reply;
  }
};

Child start_with_pipes(std::vector<std::string> argv, const fs::path& err) {
  int to[2], from[2];
  EXPECT_EQ(pipe2(to, O_CLOEXEC), 0);
  EXPECT_EQ(pipe2(from, O_CLOEXEC), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, to[0], 0);
  posix_spawn_file_actions_adddup2(&fa, from[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> a;
  for (std::string& s : argv) a.push_back(s.data());
  a.push_back(nullptr);
  Child c;
  EXPECT_EQ(posix_spawn(&c.pid, a[0], &fa, nullptr, a.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  close(to[0]);
  close(from[1]);
  c.in = to[1];
  c.out = from[0];
  return c;
}

// Asks until the program sees `want` (a signal to the recorder takes effect within its 100 ms tick).
void wait_state(Child& c, const std::string& want) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (c.ask('q') != want && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

TEST(Control, RecordPausedThenCtlAndSignalsToggleFromOutside) {
  const fs::path dir = scratch_dir();
  const fs::path artifact = dir / "a.msgpack";
  Child c = start_with_pipes(
      {kMemtrack, "record", "-q", "--paused", "-o", artifact.string(), "--", kPrograms + "/control", "wait"},
      dir / "err");
  const std::string recorder = std::to_string(c.pid);
  EXPECT_EQ(c.ask('a'), "0");  // paused from the start: not recorded
  EXPECT_EQ(run({kMemtrack, "ctl", recorder, "resume"}), 0);
  EXPECT_EQ(c.ask('a'), "1");  // recorded
  EXPECT_EQ(run({kMemtrack, "ctl", recorder, "begin", "phase"}), 0);
  EXPECT_EQ(c.ask('a'), "1");  // recorded, in "phase"
  kill(c.pid, SIGUSR1);
  wait_state(c, "0");
  EXPECT_EQ(c.ask('a'), "0");  // paused by the signal
  kill(c.pid, SIGUSR2);
  wait_state(c, "1");
  EXPECT_EQ(run({kMemtrack, "ctl", recorder, "mark", "two"}), 0);  // ends "phase", begins "two"
  EXPECT_EQ(c.ask('a'), "1");                                      // in "two"
  EXPECT_EQ(run({kMemtrack, "ctl", recorder, "end"}, {}, dir / "end.err"), 0);
  EXPECT_EQ(slurp(dir / "end.err"), "");
  // Nothing open now: said, and no note written (the two regions below stay the only ones).
  EXPECT_EQ(run({kMemtrack, "ctl", recorder, "end"}, {}, dir / "end2.err"), 0);
  EXPECT_EQ(slurp(dir / "end2.err"),
            "memtrack ctl: no region is open (begin NAME or mark NAME opens one): nothing to end\n");
  EXPECT_EQ(run({kMemtrack, "ctl", recorder, "resume"}, {}, dir / "ctl.err"), 0);
  EXPECT_NE(slurp(dir / "ctl.err").find("already running"), std::string::npos);
  close(c.in);
  int status = 0;
  waitpid(c.pid, &status, 0);
  close(c.out);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(dir / "err");
  EXPECT_NE(run({kMemtrack, "ctl", recorder, "pause"}, {}, dir / "gone.err"), 0);

  Read r;
  read(artifact, r);
  EXPECT_EQ(mallocs_of(r.events, 1111), 3u);
  const auto pauses = all_of<Pause>(r.context);
  const auto resumes = all_of<Resume>(r.context);
  ASSERT_EQ(pauses.size(), 2u);
  ASSERT_EQ(resumes.size(), 2u);
  EXPECT_EQ(pauses[0].source, "start");
  EXPECT_EQ(pauses[0].event, 0u);
  EXPECT_EQ(resumes[0].source, "ctl");
  EXPECT_EQ(pauses[1].source, "signal");
  EXPECT_EQ(resumes[1].source, "signal");
  EXPECT_EQ(pauses[0].pid, c.pid);
  ASSERT_EQ(r.regions.occurrences().size(), 2u);
  const RegionOccurrence& phase = r.regions.occurrences()[0];
  const RegionOccurrence& two = r.regions.occurrences()[1];
  EXPECT_EQ(phase.name, "phase");
  EXPECT_EQ(phase.pid, c.pid);  // an outside region: the recorder's, covering every process
  EXPECT_EQ(phase.allocations, 1u);
  EXPECT_EQ(phase.allocated_bytes, 1111u);
  EXPECT_EQ(phase.ended, RegionOccurrence::Ended::region_end);
  EXPECT_EQ(two.name, "two");
  EXPECT_EQ(two.allocations, 1u);
  EXPECT_EQ(two.ended, RegionOccurrence::Ended::region_end);
}

// Two threads toggle pause/resume and open regions 2,000 times each while four others allocate: the
// recording stays whole, the records alternate and end resumed, every region is closed by its own thread.
TEST(Control, ThreadsTogglingWhileOthersAllocate) {
  const fs::path dir = scratch_dir();
  const fs::path artifact = dir / "a.msgpack";
  ASSERT_EQ(run({kMemtrack, "record", "-o", artifact.string(), "--", kPrograms + "/control", "threads", "4"}, {},
                dir / "err"),
            0)
      << slurp(dir / "err");
  EXPECT_EQ(slurp(dir / "err").find("ring slots skipped"), std::string::npos) << slurp(dir / "err");
  Read r;
  read(artifact, r);
  bool paused = false;
  std::uint64_t toggles = 0, last = 0;
  for (const ContextRecord& rec : r.context) {
    if (const auto* p = std::get_if<Pause>(&rec)) {
      EXPECT_FALSE(paused) << "two pauses in a row at " << p->event;
      paused = true;
      EXPECT_GE(p->event, last);
      last = p->event;
      ++toggles;
    } else if (const auto* q = std::get_if<Resume>(&rec)) {
      EXPECT_TRUE(paused) << "two resumes in a row at " << q->event;
      paused = false;
      EXPECT_GE(q->event, last);
      last = q->event;
      ++toggles;
    }
  }
  EXPECT_FALSE(paused);
  EXPECT_GE(toggles, 2u);
  std::size_t toggle_regions = 0;
  for (const RegionOccurrence& o : r.regions.occurrences()) {
    toggle_regions += o.name == "toggle";
    EXPECT_EQ(o.ended, RegionOccurrence::Ended::region_end);
  }
  EXPECT_EQ(toggle_regions, 4000u);
  EXPECT_EQ(mallocs_of(r.events, 77), 1u);  // after the last resume
}

}  // namespace
