// `memtrack record` on real programs (tests/integration/programs/). Each program prints what it did; the
// test reads the artifact back with python3-zstandard + python3-msgpack (read_artifact.py) and checks the
// artifact holds exactly those events, in causal order.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "artifact_events.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;

const std::string kMemtrack = MEMTRACK_BIN_DIR "/memtrack";
// The tool with record's test hooks (MEMTRACK_RING_SLOTS: the ring's size), tools/CMakeLists.txt.
const std::string kMemtrackTestHooks = MEMTRACK_BIN_DIR "/memtrack-testhooks";
const std::string kPrograms = MEMTRACK_PROGRAMS_DIR;

using Ev = memtrack::testing_integration::ArtifactEvent;

struct RecordRun {
  int exit_code = -1;
  std::string out;  // the program's stdout
  std::string err;  // the program's and the recorder's stderr
  std::vector<Ev> events;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int shell(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// Removes a test's scratch directory when the test passed; a failed test leaves its artifact to look at.
struct ScratchCleanup : testing::EmptyTestEventListener {
  void OnTestEnd(const testing::TestInfo& info) override {
    if (info.result()->Passed() && !current.empty()) fs::remove_all(current);
    current.clear();
  }
  static inline fs::path current;
};

const bool kCleanupInstalled = [] {
  testing::UnitTest::GetInstance()->listeners().Append(new ScratchCleanup);
  return true;
}();

fs::path scratch_dir() {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir =
      fs::path(testing::TempDir()) / (std::string("memtrack_") + info->name() + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  ScratchCleanup::current = dir;
  return dir;
}

// Reads an artifact with the third-party decoders; fails the test when they cannot.
std::vector<Ev> read_artifact(const fs::path& artifact) {
  return memtrack::testing_integration::read_artifact_events(artifact);
}

// `env` is given to the test-hooks build (kMemtrackTestHooks), the only one that reads MEMTRACK_RING_SLOTS.
RecordRun record(const std::vector<std::string>& command, const std::string& env = "") {
  const fs::path dir = scratch_dir();
  std::string cmd = "cd '" + dir.string() + "' && " + env + " '" + (env.empty() ? kMemtrack : kMemtrackTestHooks) +
                    "' record -o artifact.msgpack --";
  for (const std::string& a : command) cmd += " '" + a + "'";
  cmd += " > out.txt 2> err.txt";
  RecordRun run;
  run.exit_code = shell(cmd);
  run.out = slurp(dir / "out.txt");
  run.err = slurp(dir / "err.txt");
  run.events = read_artifact(dir / "artifact.msgpack");
  return run;
}

bool is_alloc(const Ev& e) {
  return e.type == "Malloc" || e.type == "Calloc" || e.type == "Realloc" || e.type == "AlignedAlloc";
}

// Strict causal check for one process: walking the artifact in order, every freed (or realloc'd-from)
// address is live, and every allocated address is not already live. A free written before its malloc, or
// a malloc of a reused address written before the free that released it, both fail.
void expect_causal(const std::vector<Ev>& events, int pid) {
  std::set<std::uint64_t> live;
  std::size_t index = 0, violations = 0;
  for (const Ev& e : events) {
    ++index;
    if (e.pid != pid) continue;
    if (e.type == "Free" || (e.type == "Realloc" && e.has_old)) {
      const std::uint64_t a = e.type == "Free" ? e.addr : e.old_addr;
      if (live.erase(a) == 0 && violations++ < 5)
        ADD_FAILURE() << "event " << index << ": " << e.type << " of " << a << " which is not live";
    }
    if (is_alloc(e) && !live.insert(e.addr).second && violations++ < 5)
      ADD_FAILURE() << "event " << index << ": " << e.type << " of " << e.addr << " which is already live";
  }
  EXPECT_EQ(violations, 0u);
}

std::size_t count(const std::vector<Ev>& events, const std::string& type, std::uint64_t size, int pid = 0) {
  std::size_t n = 0;
  for (const Ev& e : events)
    if (e.type == type && e.size == size && (pid == 0 || e.pid == pid)) ++n;
  return n;
}

const Ev* find(const std::vector<Ev>& events, const std::string& type, std::uint64_t size) {
  for (const Ev& e : events)
    if (e.type == type && e.size == size) return &e;
  return nullptr;
}

// "key value... key value..." printed by a program: each word starts a key, numbers are its values.
std::map<std::string, std::vector<std::uint64_t>> parse_output(const std::string& out) {
  std::map<std::string, std::vector<std::uint64_t>> m;
  std::istringstream in(out);
  std::string word, key;
  while (in >> word) {
    if (!word.empty() && std::isdigit(static_cast<unsigned char>(word[0])))
      m[key].push_back(std::stoull(word));
    else
      key = word;
  }
  return m;
}

// The first event after `index` that allocates or releases the same address is its release.
bool released_after(const std::vector<Ev>& events, std::size_t index) {
  const std::uint64_t addr = events[index].addr;
  for (std::size_t i = index + 1; i < events.size(); ++i) {
    const Ev& e = events[i];
    if (e.type == "Free" && e.addr == addr) return true;
    if (e.type == "Realloc" && e.has_old && e.old_addr == addr) return true;
    if (is_alloc(e) && e.addr == addr) return false;
  }
  return false;
}

std::uint64_t summary_events(const std::string& err) {
  const auto pos = err.find("memtrack record: ");
  if (pos == std::string::npos) return UINT64_MAX;
  return std::stoull(err.substr(pos + 17));
}

void check_each_allocation_function(const RecordRun& run) {
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto out = parse_output(run.out);
  ASSERT_FALSE(run.events.empty());
  const int pid = run.events.front().pid;

  struct Expect {
    const char* key;
    const char* type;
  };
  for (const Expect& x :
       {Expect{"malloc", "Malloc"}, Expect{"calloc", "Calloc"}, Expect{"aligned_alloc", "AlignedAlloc"},
        Expect{"memalign", "AlignedAlloc"}, Expect{"posix_memalign", "AlignedAlloc"}, Expect{"valloc", "AlignedAlloc"},
        Expect{"pvalloc", "AlignedAlloc"}, Expect{"mmap", "Mmap"}}) {
    ASSERT_TRUE(out.contains(x.key)) << run.out;
    const std::uint64_t size = out.at(x.key)[0], addr = out.at(x.key)[1];
    EXPECT_EQ(count(run.events, x.type, size), 1u) << x.key;
    const Ev* e = find(run.events, x.type, size);
    ASSERT_NE(e, nullptr) << x.key;
    EXPECT_EQ(e->addr, addr) << x.key;
    EXPECT_EQ(e->pid, pid);
    EXPECT_FALSE(e->has_old);
  }
  EXPECT_EQ(count(run.events, "Munmap", 1003520), 1u);

  // realloc(NULL, n): a Realloc without old_addr. realloc(p, n): with old_addr. realloc(p, 0): a Free.
  const Ev* r0 = find(run.events, "Realloc", 1000033);
  ASSERT_NE(r0, nullptr);
  EXPECT_FALSE(r0->has_old);
  const Ev* r1 = find(run.events, "Realloc", 1000037);
  ASSERT_NE(r1, nullptr);
  EXPECT_TRUE(r1->has_old);
  EXPECT_EQ(r1->old_addr, r0->addr);
  EXPECT_EQ(r1->addr, out.at("realloc_grow")[1]);
  const Ev* ra = find(run.events, "Realloc", 1000041);
  ASSERT_NE(ra, nullptr);
  EXPECT_FALSE(ra->has_old);

  // Every heap block above is released after its allocation: by free, by the growing realloc, or by
  // realloc(p, 0).
  std::size_t ours = 0;
  for (std::size_t i = 0; i < run.events.size(); ++i) {
    const Ev& e = run.events[i];
    if (!is_alloc(e) || e.size < 1000000 || e.size > 1000200) continue;
    ++ours;
    EXPECT_TRUE(released_after(run.events, i)) << e.type << " " << e.size;
  }
  EXPECT_EQ(ours, 10u);

  // sbrk: Brk events carry the new break and the size of the change.
  const Ev* grow = find(run.events, "Brk", 20480);
  ASSERT_NE(grow, nullptr);
  EXPECT_EQ(grow->addr, out.at("sbrk_grow")[1]);
  EXPECT_EQ(count(run.events, "Brk", 20480), 2u);

  // free(NULL) and failed calls are not events. Every event is the program's: none of the recorder's own
  // allocations or threads (it never runs with the preload library).
  for (const Ev& e : run.events) {
    EXPECT_EQ(e.pid, pid);
    EXPECT_FALSE(e.type == "Free" && e.addr == 0);
    EXPECT_LT(e.size, std::uint64_t{1} << 40) << e.type;
  }
  expect_causal(run.events, pid);

  // What else is in there: the C runtime's own allocations (stdio's buffer, locale setup). Bounded.
  EXPECT_LT(run.events.size(), 40u) << "unexpectedly many libc events";
}

TEST(Record, EachAllocationFunctionIsOneEvent) { check_each_allocation_function(record({kPrograms + "/alloc_each"})); }

// The dlsym bootstrap: allocations dlsym makes while the preload library is still looking up the real
// functions are served from its static arena, are not events, and their frees are ignored. glibc 2.36's
// dlsym makes none when every symbol is found, so a test hook makes it fail one lookup (which allocates the
// error message) and report the arena's use; the program's own events must be exactly as without it. The
// hook is only in the test build of the library (runtime/preload/test_hooks.cpp).
TEST(Record, DlsymBootstrapAllocationsUseTheArena) {
  const RecordRun run = record({kPrograms + "/alloc_each"},
                               "MEMTRACK_PRELOAD='" MEMTRACK_TESTHOOKS_PRELOAD "' MEMTRACK_TEST_DLSYM_MISS=1");
  const std::string marker = "memtrack: bootstrap arena bytes used: ";
  const auto pos = run.err.find(marker);
  ASSERT_NE(pos, std::string::npos) << run.err;
  EXPECT_GT(std::stoull(run.err.substr(pos + marker.size())), 0u) << run.err;
  check_each_allocation_function(run);
}

TEST(Record, CxxNewAndDeleteAreOneEventEach) {
  const RecordRun run = record({kPrograms + "/cxx_new"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto out = parse_output(run.out);
  for (const char* key : {"new[]", "new", "new_aligned", "vector"}) {
    ASSERT_TRUE(out.contains(key)) << run.out;
    const std::uint64_t size = out.at(key)[0], addr = out.at(key)[1];
    std::size_t allocs = 0;
    for (std::size_t i = 0; i < run.events.size(); ++i) {
      const Ev& e = run.events[i];
      if (!is_alloc(e) || e.addr != addr || e.size != size) continue;
      ++allocs;
      EXPECT_TRUE(released_after(run.events, i)) << key;
    }
    EXPECT_EQ(allocs, 1u) << key;
  }
  EXPECT_EQ(count(run.events, "AlignedAlloc", 1000448), 1u);  // aligned new goes through aligned_alloc
  expect_causal(run.events, run.events.front().pid);
}

void check_threads_run(const RecordRun& run) {
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto out = parse_output(run.out);
  ASSERT_TRUE(out.contains("mallocs")) << run.out;
  const std::uint64_t mallocs = out.at("mallocs")[0], frees = out.at("frees")[0];
  EXPECT_EQ(mallocs, frees);
  const int pid = run.events.front().pid;
  std::unordered_map<std::uint64_t, int> ours;  // live addresses of our sizes
  std::uint64_t our_mallocs = 0, our_frees = 0;
  std::set<int> tids;
  for (const Ev& e : run.events) {
    if (e.pid != pid) continue;
    if (e.type == "Malloc" && e.size >= 7777 && e.size <= 7789) {
      ++our_mallocs;
      ours[e.addr] = 1;
      tids.insert(e.tid);
    } else if (e.type == "Free" && ours.erase(e.addr) != 0) {
      ++our_frees;
    }
  }
  EXPECT_EQ(our_mallocs, mallocs);
  EXPECT_EQ(our_frees, frees);
  EXPECT_EQ(tids.size(), 8u);
  EXPECT_EQ(summary_events(run.err), run.events.size()) << run.err;
  expect_causal(run.events, pid);
}

TEST(Record, EightThreadsWithCrossThreadFrees) { check_threads_run(record({kPrograms + "/threads"})); }

// A 1024-slot ring: producers wrap it constantly and wait for the recorder; nothing may be lost.
TEST(Record, TinyRingBackpressureIsLossless) {
  check_threads_run(record({kPrograms + "/threads"}, "MEMTRACK_RING_SLOTS=1024"));
}

// Happens-before across threads (programs/handoff.c): a producer thread mallocs a block and hands it to a
// consumer thread (a release store the consumer acquires, or a mutex), which reallocs it and frees the result;
// the freed blocks come back to the producer's mallocs through the allocator. The producer's malloc returns
// before the handoff, and the hook takes the event's ticket before malloc returns; the consumer's realloc starts
// after the handoff and takes its ticket before the old block is released. So the ring's order (one fetch_add
// on the head) puts every malloc before the realloc of that block, and every free before the malloc that reuses
// its address. A transport that lost this edge - per-thread buffers merged by thread, or by a clock read
// outside the ticket's order, an event published after the call returned - writes some consumer's realloc
// before the producer's malloc of the same block (a realloc of an address that is not live), or a reused
// address's malloc before its free (an address that is already live): expect_causal and the count of reallocs
// of live producer blocks fail then. A local build whose malloc hook recorded each event at the thread's next
// hooked call instead (a one-event per-thread buffer) failed both, in both modes.
void check_handoff(const std::string& mode, const std::string& env = "") {
  constexpr std::uint64_t kHandoffs = 20000;
  const RecordRun run = record({kPrograms + "/handoff", mode, std::to_string(kHandoffs)}, env);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto out = parse_output(run.out);
  ASSERT_TRUE(out.contains("handoffs") && out.contains("producer_tid") && out.contains("consumer_tid")) << run.out;
  ASSERT_EQ(out.at("handoffs")[0], kHandoffs);
  const int producer = static_cast<int>(out.at("producer_tid")[0]),
            consumer = static_cast<int>(out.at("consumer_tid")[0]);
  ASSERT_NE(producer, consumer);
  ASSERT_FALSE(run.events.empty());
  const int pid = run.events.front().pid;
  // Walking the artifact in order: the producer's live blocks, and the consumer's reallocs and frees of them.
  std::set<std::uint64_t> handed, reallocated;
  std::uint64_t mallocs = 0, reallocs_of_handed = 0, frees_of_reallocated = 0;
  for (const Ev& e : run.events) {
    if (e.pid != pid) continue;
    if (e.tid == producer && e.type == "Malloc" && e.size >= 5555 && e.size <= 5561) {
      ++mallocs;
      handed.insert(e.addr);
    } else if (e.tid == consumer && e.type == "Realloc" && e.size >= 6666 && e.size <= 6672) {
      if (e.has_old && handed.erase(e.old_addr) != 0) ++reallocs_of_handed;
      reallocated.insert(e.addr);
    } else if (e.tid == consumer && e.type == "Free" && reallocated.erase(e.addr) != 0) {
      ++frees_of_reallocated;
    }
  }
  EXPECT_EQ(mallocs, kHandoffs);
  EXPECT_EQ(reallocs_of_handed, kHandoffs) << "a consumer's realloc came before the producer's malloc of its block";
  EXPECT_EQ(frees_of_reallocated, kHandoffs);
  EXPECT_EQ(summary_events(run.err), run.events.size()) << run.err;
  expect_causal(run.events, pid);
}

TEST(Record, HandoffThroughReleaseAcquireKeepsHappensBefore) { check_handoff("atomic"); }
TEST(Record, HandoffThroughAMutexKeepsHappensBefore) { check_handoff("mutex"); }
// With a 1024-slot ring both threads wait for slots all the time, between taking a ticket and filling it.
TEST(Record, HandoffThroughATinyRingKeepsHappensBefore) { check_handoff("atomic", "MEMTRACK_RING_SLOTS=1024"); }

TEST(Record, ForkedChildRecordsUnderItsOwnPid) {
  const RecordRun run = record({kPrograms + "/fork_child"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto out = parse_output(run.out);
  ASSERT_TRUE(out.contains("child") && out.contains("parent")) << run.out;
  const int child = static_cast<int>(out.at("child")[0]);
  const int parent = static_cast<int>(out.at("parent")[0]);
  const std::uint64_t own = out.at("own")[0], inherited = out.at("inherited")[0];
  EXPECT_EQ(count(run.events, "Malloc", 1000151), 1u);  // not duplicated by the fork
  EXPECT_EQ(count(run.events, "Malloc", 1000151, parent), 1u);
  EXPECT_EQ(count(run.events, "Malloc", 1000159, child), 1u);
  std::size_t malloc_at = SIZE_MAX, child_free = SIZE_MAX, parent_free = SIZE_MAX, own_free = 0;
  for (std::size_t i = 0; i < run.events.size(); ++i) {
    const Ev& e = run.events[i];
    if (e.type == "Malloc" && e.addr == inherited && e.pid == parent) malloc_at = i;
    if (e.type == "Free" && e.addr == inherited && e.pid == child) child_free = i;
    if (e.type == "Free" && e.addr == inherited && e.pid == parent) parent_free = i;
    if (e.type == "Free" && e.addr == own && e.pid == child) ++own_free;
  }
  EXPECT_LT(malloc_at, child_free);
  EXPECT_LT(child_free, parent_free);  // the parent frees after waitpid
  EXPECT_NE(parent_free, SIZE_MAX);
  EXPECT_EQ(own_free, 1u);
  expect_causal(run.events, parent);
}

TEST(Record, TrackingContinuesThroughExecSpawnAndVfork) {
  const RecordRun run = record({kPrograms + "/exec_chain"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto out = parse_output(run.out);
  const std::pair<const char*, std::uint64_t> stages[] = {
      {"start", 1000171}, {"middle", 1000181}, {"final", 1000187}, {"spawned", 1000193}, {"vforked", 1000199}};
  for (const auto& [stage, size] : stages) {
    ASSERT_TRUE(out.contains(stage)) << run.out;
    const int pid = static_cast<int>(out.at(stage)[0]);
    EXPECT_EQ(count(run.events, "Malloc", size), 1u) << stage;
    EXPECT_EQ(count(run.events, "Malloc", size, pid), 1u) << stage << " pid " << pid;
  }
  // No free of an address before some allocation of it (processes share addresses after fork/exec).
  // A forked child may free what its parent allocated, so addresses are not keyed by pid here.
  std::set<std::uint64_t> seen;
  for (const Ev& e : run.events) {
    if (is_alloc(e)) seen.insert(e.addr);
    if (e.type == "Free") {
      EXPECT_TRUE(seen.contains(e.addr)) << "free of " << e.addr << " in " << e.pid;
    }
  }
}

TEST(Record, ExitThroughUnderscoreExit) {
  const RecordRun run = record({kPrograms + "/exit_paths", "exit", "1000"});
  EXPECT_EQ(run.exit_code, 3) << run.err;
  EXPECT_EQ(count(run.events, "Malloc", 1000211), 1000u);
  EXPECT_EQ(summary_events(run.err), run.events.size()) << run.err;
}

TEST(Record, SigkillMidRunLeavesAValidArtifact) {
  const RecordRun run = record({kPrograms + "/exit_paths", "kill", "20000"});
  EXPECT_EQ(run.exit_code, 128 + SIGKILL) << run.err;
  ASSERT_FALSE(run.events.empty());
  const int pid = run.events.front().pid;
  // The main thread's (tid == pid) mallocs before it killed itself are all there.
  std::size_t main_mallocs = 0;
  for (const Ev& e : run.events) main_mallocs += e.type == "Malloc" && e.size == 789 && e.tid == pid;
  EXPECT_EQ(main_mallocs, 20000u);
  EXPECT_GT(count(run.events, "Malloc", 795), 0u);                   // the other thread was running
  EXPECT_EQ(summary_events(run.err), run.events.size()) << run.err;  // everything received was written
  expect_causal(run.events, pid);
}

// A signal handler that maps memory interrupts the tracker over and over (often while it waits for a ring
// slot with an unfilled ticket): no deadlock, and every event of the main thread and of the handler is
// recorded, in causal order.
TEST(Record, SignalHandlersThatAllocate) {
  const RecordRun run = record({kPrograms + "/signal_alloc", "200000"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto out = parse_output(run.out);
  ASSERT_TRUE(out.contains("mallocs") && out.contains("handler_maps")) << run.out;
  EXPECT_EQ(count(run.events, "Malloc", 1000231 % 4096), out.at("mallocs")[0]);
  const std::size_t maps = count(run.events, "Mmap", 3 * 4096), unmaps = count(run.events, "Munmap", 3 * 4096);
  const std::uint64_t handler_maps = out.at("handler_maps")[0];
  EXPECT_GT(handler_maps, 0u);
  EXPECT_EQ(maps, handler_maps);
  EXPECT_EQ(unmaps, handler_maps);
  expect_causal(run.events, run.events.front().pid);
}

// A child SIGKILLed (and reaped) by its own parent while its threads held ring tickets: the recorder
// abandons the tickets the dead process can never fill, instead of stalling the parent forever.
TEST(Record, GrandchildKilledByItsParentDoesNotStallTheRing) {
  const RecordRun run = record({kPrograms + "/exit_paths", "killchild", "300000"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const Ev* first = find(run.events, "Malloc", 813);
  ASSERT_NE(first, nullptr);
  const int parent = first->pid;
  EXPECT_EQ(count(run.events, "Malloc", 813, parent), 300000u);
  EXPECT_EQ(summary_events(run.err), run.events.size()) << run.err;
  expect_causal(run.events, parent);
}

// exec kills the other threads wherever they are, possibly holding ring tickets: the recorder skips tickets
// of threads that exec replaced, whether the exec came from the main thread or from another one (then the
// dead main thread's tid lives on as the new image's pid).
void check_exec_with_threads(const std::string& mode) {
  const RecordRun run = record({kPrograms + "/exec_threads", mode});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto out = parse_output(run.out);
  ASSERT_TRUE(out.contains("done")) << run.out;
  const int pid = static_cast<int>(out.at("done")[0]);
  EXPECT_EQ(count(run.events, "Malloc", 1000249, pid), 1u);
  EXPECT_GT(count(run.events, "Malloc", 1000253 % 4096, pid), 0u);
  EXPECT_EQ(summary_events(run.err), run.events.size()) << run.err;
}

TEST(Record, ExecFromMainThreadWhileAnotherAllocates) { check_exec_with_threads("main"); }
TEST(Record, ExecFromSecondThreadWhileMainAllocates) { check_exec_with_threads("thread"); }

// The command-line contract: default artifact name, exit statuses, a bad output path.
TEST(Record, CommandLineContract) {
  const fs::path dir = scratch_dir();
  const std::string cd = "cd '" + dir.string() + "' && ";
  // Default output: <pid of the command>.MemtrackArtifact.msgpack in the current directory.
  EXPECT_EQ(shell(cd + "'" + kMemtrack + "' record -- sh -c 'echo $$ > pid.txt; exit 7' 2> err.txt"), 7);
  const std::string pid = slurp(dir / "pid.txt").substr(0, slurp(dir / "pid.txt").find('\n'));
  const fs::path artifact = dir / (pid + ".MemtrackArtifact.msgpack");
  ASSERT_TRUE(fs::exists(artifact)) << slurp(dir / "err.txt");
  EXPECT_FALSE(read_artifact(artifact).empty());
  // A signal's death is reported as 128 + signal number.
  EXPECT_EQ(shell(cd + "'" + kMemtrack + "' record -o a.msgpack -- sh -c 'kill -TERM $$' 2> /dev/null"), 128 + SIGTERM);
  // An output that cannot be created: exit 1, and the command never ran.
  EXPECT_EQ(shell(cd + "'" + kMemtrack + "' record -o no/such/dir/a.msgpack -- touch ran.txt 2> /dev/null"), 1);
  EXPECT_FALSE(fs::exists(dir / "ran.txt"));
  // No command: usage error.
  EXPECT_EQ(shell(cd + "'" + kMemtrack + "' record 2> /dev/null"), 2);
}

// The artifact cannot be written (a full device): the recorder keeps draining the ring, so the program
// runs to its end; the recorder reports the write error and exits 1.
TEST(Record, WriteFailureLetsTheProgramFinish) {
  const fs::path dir = scratch_dir();
  const std::string cmd = "cd '" + dir.string() + "' && '" + kMemtrack + "' record -o /dev/full -- '" + kPrograms +
                          "/churn' 2 300000 > out.txt 2> err.txt";
  EXPECT_EQ(shell(cmd), 1);
  EXPECT_NE(slurp(dir / "out.txt").find("events 600"), std::string::npos) << "the program did not finish";
  const std::string err = slurp(dir / "err.txt");
  EXPECT_NE(err.find("/dev/full: write failed"), std::string::npos) << err;
}

// Timestamps are CLOCK_MONOTONIC nanoseconds: each allocation's timestamp lies between the program's own
// clock readings around the call (a few microseconds of slack for the TSC conversion), with the TSC path
// (the default where the kernel's clock is the TSC, or a KVM guest's kvm-clock whose CPUs agree) and with
// clock_gettime in the preload.
void check_timestamps(const std::string& env) {
  const RecordRun run = record({kPrograms + "/timestamps"}, env);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto out = parse_output(run.out);
  ASSERT_TRUE(out.contains("sample")) << run.out;
  const auto& v = out.at("sample");
  ASSERT_EQ(v.size(), 15u);
  constexpr std::uint64_t kSlackNs = 5000;
  for (std::size_t i = 0; i < 5; ++i) {
    const std::uint64_t before = v[3 * i], after = v[3 * i + 1], addr = v[3 * i + 2];
    const Ev* e = nullptr;
    for (const Ev& x : run.events)
      if (x.type == "Malloc" && x.size == 1000267 && x.addr == addr) e = &x;
    ASSERT_NE(e, nullptr) << "sample " << i;
    EXPECT_GE(e->ts + kSlackNs, before) << "sample " << i << ": " << before - e->ts << " ns early";
    EXPECT_LE(e->ts, after + kSlackNs) << "sample " << i << ": " << e->ts - after << " ns late";
  }
}

TEST(Record, TimestampsAreMonotonicClockNanoseconds) { check_timestamps(""); }
TEST(Record, TimestampsWithClockGettimeInThePreload) { check_timestamps("MEMTRACK_CLOCK=monotonic"); }
// The TSC path wherever the CPU's TSC is invariant, whatever the kernel's clocksource (a KVM guest's
// kvm-clock takes it by default only after the recorder's check across CPUs).
TEST(Record, TimestampsWithTheTscForced) { check_timestamps("MEMTRACK_CLOCK=tsc"); }

// The recorder is SIGKILLed while the program runs: the program must finish untracked, not hang.
TEST(Record, ProgramSurvivesTheRecorder) {
  const fs::path dir = scratch_dir();
  const fs::path done = dir / "done", artifact = dir / "artifact.msgpack", err = dir / "err.txt";
  std::vector<std::string> args = {kMemtrackTestHooks, "record",  "-o",
                                   artifact.string(),  "--",      kPrograms + "/exit_paths",
                                   "survive",          "3000000", done.string()};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings = {"MEMTRACK_RING_SLOTS=4096"};
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t recorder = 0;
  ASSERT_EQ(posix_spawn(&recorder, argv[0], &fa, nullptr, argv.data(), envp.data()), 0);
  posix_spawn_file_actions_destroy(&fa);

  // Once the program is recording, kill the recorder.
  const fs::path started = done.string() + ".started";
  const auto start_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!fs::exists(started) && std::chrono::steady_clock::now() < start_deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(fs::exists(started));
  ::kill(recorder, SIGKILL);
  int status = 0;
  ::waitpid(recorder, &status, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!fs::exists(done) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(fs::exists(done)) << "the program did not finish after its recorder died";
  EXPECT_NE(slurp(err).find("the recorder is gone"), std::string::npos) << slurp(err);
}

}  // namespace
