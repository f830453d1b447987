// Issue 15: programs built against jemalloc, mimalloc and tcmalloc (dynamically and statically linked), an
// allocator loaded with dlopen and called through dlsym'd pointers, and a statically linked executable,
// recorded with `memtrack record`. Each program prints the one event every call of its marked region must
// make (programs/allocators/); the artifact, read back with python3-msgpack + python3-zstandard, must hold
// exactly those between the markers: sizes, kinds, addresses, one event per call, every free matched, and no
// mapping the allocator made for itself.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "artifact_events.h"

namespace {

namespace fs = std::filesystem;

const std::string kMemtrack = MEMTRACK_BIN_DIR "/memtrack";
const std::string kDir = MEMTRACK_ALLOC_PROGRAMS_DIR;

struct Ev {
  long tid = 0;
  std::string type;
  std::uint64_t size = 0, addr = 0, old = 0;
  bool has_old = false;
  bool operator==(const Ev& o) const {
    return type == o.type && size == o.size && addr == o.addr && has_old == o.has_old && old == o.old;
  }
};

std::ostream& operator<<(std::ostream& os, const Ev& e) {
  os << e.tid << " " << e.type << " " << e.size << " " << e.addr;
  if (e.has_old) os << " old " << e.old;
  return os;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int shell(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct RecordRun {
  int exit_code = -1;
  std::string out, err;
  std::vector<Ev> events;  // in artifact order
};

RecordRun record(const std::vector<std::string>& command, const std::string& prefix = "") {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  const fs::path dir = fs::path(testing::TempDir()) / (std::string("memtrack_alloc_") + info->name());
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string cmd = "cd '" + dir.string() + "' && " + prefix + "'" + kMemtrack + "' record -o a.msgpack --";
  for (const std::string& a : command) cmd += " '" + a + "'";
  RecordRun run;
  run.exit_code = shell(cmd + " > out.txt 2> err.txt");
  run.out = slurp(dir / "out.txt");
  run.err = slurp(dir / "err.txt");
  for (const auto& a : memtrack::testing_integration::read_artifact_events(dir / "a.msgpack"))
    run.events.push_back(
        {.tid = a.tid, .type = a.type, .size = a.size, .addr = a.addr, .old = a.old_addr, .has_old = a.has_old});
  return run;
}

// The program's account: "ev [TID] KIND SIZE ADDR OLD" lines, and the two markers.
struct Account {
  std::map<long, std::vector<Ev>> by_tid;  // tid 0: the program did not say (single-threaded region)
  std::uint64_t mark7 = 0, mark9 = 0;
};

Account parse(const std::string& out, bool with_tid) {
  Account a;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string word;
    ls >> word;
    if (word == "mark") {
      std::uint64_t size, addr;
      ls >> size >> addr;
      (size == 7 * 4096 ? a.mark7 : a.mark9) = addr;
    } else if (word == "ev") {
      Ev e;
      std::string old;
      if (with_tid) ls >> e.tid;
      ls >> e.type >> e.size >> e.addr >> old;
      e.has_old = old != "-";
      e.old = e.has_old ? std::stoull(old) : 0;
      a.by_tid[e.tid].push_back(e);
    }
  }
  return a;
}

// The artifact's events strictly between the two marker mappings.
std::vector<Ev> region(const RecordRun& run, const Account& a) {
  std::vector<Ev> r;
  bool in = false;
  for (const Ev& e : run.events) {
    if (e.type == "Mmap" && e.size == 7 * 4096 && e.addr == a.mark7) {
      in = true;
      continue;
    }
    if (e.type == "Mmap" && e.size == 9 * 4096 && e.addr == a.mark9) return r;
    if (in) r.push_back(e);
  }
  ADD_FAILURE() << "the markers are not both in the artifact";
  return r;
}

void expect_same(const std::vector<Ev>& got, const std::vector<Ev>& want) {
  EXPECT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size() && i < want.size(); ++i)
    EXPECT_EQ(got[i], want[i]) << "event " << i << " of the region";
  for (std::size_t i = want.size(); i < got.size(); ++i) ADD_FAILURE() << "extra event " << got[i];
}

void check_region(const std::string& program) {
  const RecordRun run = record({kDir + "/" + program});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err.find("cannot hook"), std::string::npos) << run.err;
  const Account a = parse(run.out, false);
  ASSERT_TRUE(a.by_tid.contains(0)) << run.out;
  ASSERT_GT(a.mark7, 0u);
  expect_same(region(run, a), a.by_tid.at(0));
}

TEST(Allocators, GlibcRegionIsUnchanged) { check_region("region_glibc"); }
TEST(Allocators, JemallocDynamic) { check_region("region_jemalloc"); }
TEST(Allocators, JemallocStatic) { check_region("region_jemalloc_static"); }
TEST(Allocators, MimallocDynamic) { check_region("region_mimalloc"); }
TEST(Allocators, TcmallocDynamic) { check_region("region_tcmalloc"); }
TEST(Allocators, TcmallocStatic) { check_region("region_tcmalloc_static"); }
// A stripped executable: its jemalloc entries are found through .dynsym's GNU hash table.
TEST(Allocators, JemallocStaticInAStrippedExecutable) {
  const std::string program = kDir + "/region_jemalloc_stripped";
  ASSERT_NE(shell("readelf -S -W '" + program + "' | grep -q ' .symtab'"), 0) << "the copy still has .symtab";
  ASSERT_EQ(shell("readelf -S -W '" + program + "' | grep -q ' .gnu.hash'"), 0) << "no .gnu.hash to look names up in";
  check_region("region_jemalloc_stripped");
}

void check_dlopen(int threads) {
  const RecordRun run = record({kDir + "/dlopen_threads", MEMTRACK_MIMALLOC_SO, std::to_string(threads)});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err.find("cannot hook"), std::string::npos) << run.err;
  const Account a = parse(run.out, true);
  ASSERT_EQ(a.by_tid.size(), static_cast<std::size_t>(threads)) << run.out;
  const std::vector<Ev> r = region(run, a);
  std::map<long, std::vector<Ev>> got;
  for (const Ev& e : r) {
    EXPECT_TRUE(e.type != "Mmap" && e.type != "Munmap" && e.type != "Brk") << "a mapping in the region: " << e;
    if (a.by_tid.contains(e.tid)) got[e.tid].push_back(e);
  }
  for (const auto& [tid, want] : a.by_tid) {
    SCOPED_TRACE("thread " + std::to_string(tid));
    expect_same(got[tid], want);
  }
}

TEST(Allocators, DlopenedAllocatorThroughDlsymOneThread) { check_dlopen(1); }
TEST(Allocators, DlopenedAllocatorThroughDlsymFourThreads) { check_dlopen(4); }

}  // namespace

namespace {

// A statically linked executable: nothing of it can be recorded, and the summary says so, naming the
// process; record still exits with the program's status (3).
TEST(Allocators, StaticExecutableRunDirectlyIsNamedInTheSummary) {
  const RecordRun run = record({kDir + "/static_exe"});
  EXPECT_EQ(run.exit_code, 3) << run.err;
  const std::string named = "(" + kDir + "/static_exe): static";
  EXPECT_NE(run.err.find(named), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("memtrack record: not tracked: "), std::string::npos) << run.err;
}

TEST(Allocators, StaticExecutableRunByATrackedShellIsNamedInTheSummary) {
  const RecordRun run = record({"/bin/sh", "-c", kDir + "/static_exe; echo status $?"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("status 3"), std::string::npos) << run.out;
  const std::string named = "(" + kDir + "/static_exe): static";
  const auto pos = run.err.find(named);
  EXPECT_NE(pos, std::string::npos) << run.err;
  EXPECT_EQ(run.err.find(named, pos + 1), std::string::npos) << "named once: " << run.err;
  EXPECT_EQ(run.err.find("(/bin/sh): "), std::string::npos) << run.err;
}

}  // namespace

namespace {

// Fail closed: an entry the patcher cannot hook safely is reported, one line naming it, its file and the
// reason, and left untouched (the call still works).
TEST(Allocators, AnUnsafeEntryIsRefusedAndReported) {
  const RecordRun run = record({kDir + "/dlopen_unsafe", kDir + "/libunsafe_entry.so"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("result (nil)"), std::string::npos) << run.out;
  // In record's summary (the preload's diagnostics go to the recorder, docs/RUNTIME.md "Diagnostics").
  EXPECT_NE(run.err.find(": cannot hook mi_malloc in " + kDir +
                         "/libunsafe_entry.so: a branch of the function lands in its first bytes; its calls are not "
                         "recorded"),
            std::string::npos)
      << run.err;
}

}  // namespace

namespace {

// An allocator whose free functions are too short to patch in place (mi_free `endbr64; ret` straddling an
// 8-byte word, mi_free_size a single `ret`): hooked through the padding after them, while another thread
// allocates, so every one of their frees is recorded (CodSpeed's own test expects them).
TEST(Allocators, EntriesTooShortToPatchInPlaceAreHookedThroughTheirPadding) {
  const RecordRun run = record({kDir + "/dlopen_short", kDir + "/libshort_entry.so"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("done"), std::string::npos) << run.out;
  EXPECT_EQ(run.err.find("cannot hook"), std::string::npos) << run.err;
  std::map<std::uint64_t, long> want;  // address -> the thread that allocated it
  std::istringstream in(run.out);
  std::string word, kind;
  long tid = 0;
  std::uint64_t size = 0, addr = 0;
  while (in >> word) {
    if (word != "ev") continue;
    in >> tid >> kind >> size >> addr;
    want[addr] = tid;
  }
  ASSERT_EQ(want.size(), 400u) << run.out;
  std::map<std::uint64_t, int> state;  // 1 allocated, 2 freed
  for (const Ev& e : run.events) {
    const auto w = want.find(e.addr);
    if (w == want.end()) continue;
    if (e.type == "Malloc" && e.size == 777) {
      EXPECT_EQ(state[e.addr], 0) << e;
      EXPECT_EQ(e.tid, w->second) << e;
      state[e.addr] = 1;
    } else if (e.type == "Free") {
      EXPECT_EQ(state[e.addr], 1) << "a free before its malloc, or twice: " << e;
      EXPECT_EQ(e.tid, w->second) << e;
      state[e.addr] = 2;
    }
  }
  std::size_t freed = 0;
  for (const auto& [a, st] : state) freed += st == 2 ? 1 : 0;
  EXPECT_EQ(freed, 400u) << "frees through mi_free and mi_free_size recorded";
}

// The preload's dlopen keeps the caller's library search: a name found only through the executable's
// DT_RUNPATH ($ORIGIN/runpath) loads under memtrack as it does natively.
TEST(Allocators, DlopenSearchesTheCallersRunpath) {
  ASSERT_EQ(shell(kDir + "/dlopen_runpath > /dev/null"), 0) << "natively";
  const RecordRun run = record({kDir + "/dlopen_runpath"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("value 42"), std::string::npos) << run.out;
}

}  // namespace
