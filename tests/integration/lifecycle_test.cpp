// Process lifecycle under `memtrack record` (docs/RUNTIME.md, "Processes" and "The program's environment"):
// the context records the recorder produces for real programs (tests/integration/programs/lifecycle.c and the
// others), the descendant policy (daemons left running, SIGTERM while waiting) and the program's own
// environment. The context records are read from the artifact's context frames (artifact_context.h); the
// events with python3-zstandard + python3-msgpack (read_artifact.py).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "artifact_context.h"
#include "artifact_events.h"
#include "memtrack/codec/context.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using namespace memtrack::codec;

const std::string kMemtrack = MEMTRACK_BIN_DIR "/memtrack";
const std::string kPrograms = MEMTRACK_PROGRAMS_DIR;
const std::string kLifecycle = kPrograms + "/lifecycle";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path scratch_dir() {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir =
      fs::path(testing::TempDir()) / (std::string("memtrack_life_") + info->name() + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::all, fs::perm_options::add);  // a setuid child of another user runs here
  return dir;
}

std::uint64_t monotonic_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (std::string& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The test's environment plus `extra`.
std::vector<std::string> environment(const std::vector<std::string>& extra = {}) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

// Starts `argv` with `env`, stdout and stderr to dir/<name>.out and .err.
pid_t start(const fs::path& dir, const std::string& name, std::vector<std::string> argv, std::vector<std::string> env) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, (dir / (name + ".out")).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, (dir / (name + ".err")).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  std::vector<char*> a = c_strings(argv), e = c_strings(env);
  const int r = posix_spawn(&pid, a[0], &fa, nullptr, a.data(), e.data());
  posix_spawn_file_actions_destroy(&fa);
  EXPECT_EQ(r, 0) << argv[0];
  return pid;
}

int wait_code(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

using Ev = memtrack::testing_integration::ArtifactEvent;

struct Recorded {
  pid_t recorder = 0;
  int exit_code = -1;
  std::string out, err;
  std::vector<Ev> events;
  std::vector<ContextRecord> context;
  fs::path dir;
};

std::vector<Ev> read_events(const fs::path& artifact) {
  return memtrack::testing_integration::read_artifact_events(artifact);
}

// The records the recorder produced, in its order: the artifact's context records but those the encoder
// writes itself (each data frame's EventStacks, the End record).
std::vector<ContextRecord> read_context(const fs::path& artifact) {
  const std::string bytes = slurp(artifact);
  std::vector<ContextRecord> out = memtrack::testing_integration::read_artifact_frames(
                                       {reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()})
                                       .context;
  std::erase_if(out, [](const ContextRecord& r) {
    return std::holds_alternative<EventStacks>(r) || std::holds_alternative<StreamEnd>(r);
  });
  return out;
}

void finish(Recorded& run) {
  run.out = slurp(run.dir / "record.out");
  run.err = slurp(run.dir / "record.err");
  run.events = read_events(run.dir / "artifact.msgpack");
  run.context = read_context(run.dir / "artifact.msgpack");
}

std::vector<std::string> record_argv(const fs::path& dir, const std::vector<std::string>& command) {
  std::vector<std::string> argv = {kMemtrack, "record", "-o", (dir / "artifact.msgpack").string(), "--"};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

Recorded record(const std::vector<std::string>& command, fs::path dir = {}) {
  Recorded run;
  run.dir = dir.empty() ? scratch_dir() : dir;
  run.recorder = start(run.dir, "record", record_argv(run.dir, command), environment());
  run.exit_code = wait_code(run.recorder);
  finish(run);
  return run;
}

// "name value" lines of a program's output, in order.
using Lines = std::vector<std::pair<std::string, std::string>>;
Lines lines(const std::string& out) {
  Lines m;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t sp = line.find(' ');
    if (sp != std::string::npos) m.emplace_back(line.substr(0, sp), line.substr(sp + 1));
  }
  return m;
}

// The leading integer of the first line named `key`, or -1.
long long value_int(const Lines& m, const std::string& key) {
  for (const auto& [k, v] : m)
    if (k == key) return std::stoll(v);
  return -1;
}

template <typename T>
std::vector<T> all_of(const std::vector<ContextRecord>& records) {
  std::vector<T> out;
  for (const ContextRecord& r : records)
    if (const T* t = std::get_if<T>(&r)) out.push_back(*t);
  return out;
}

template <typename T>
std::optional<T> first_of(const std::vector<ContextRecord>& records, std::int32_t pid) {
  for (const ContextRecord& r : records)
    if (const T* t = std::get_if<T>(&r); t != nullptr && t->pid == pid) return *t;
  return std::nullopt;
}

std::size_t events_of(const std::vector<Ev>& events, int pid, const std::string& type = "", std::uint64_t size = 0) {
  std::size_t n = 0;
  for (const Ev& e : events) n += e.pid == pid && (type.empty() || (e.type == type && e.size == size));
  return n;
}

std::uint64_t position_of(const ContextRecord& r) {
  return std::visit(
      [](const auto& x) -> std::uint64_t {
        if constexpr (requires { x.event; })
          return x.event;
        else
          return 0;
      },
      r);
}

// Every event of a pid lies between its ProcessStart and its ProcessExit (when it has one), and the records'
// positions never go back.
void expect_positions_consistent(const Recorded& run) {
  std::uint64_t last = 0;
  for (const ContextRecord& r : run.context) {
    if (std::holds_alternative<Symbols>(r)) continue;  // written at the end, positionless (stacks)
    EXPECT_GE(position_of(r), last) << "record positions go back";
    last = position_of(r);
    EXPECT_LE(position_of(r), run.events.size());
  }
  for (const ProcessStart& s : all_of<ProcessStart>(run.context)) {
    const std::optional<ProcessExit> exit = first_of<ProcessExit>(run.context, s.pid);
    for (std::size_t i = 0; i < run.events.size(); ++i) {
      if (run.events[i].pid != s.pid) continue;
      EXPECT_GE(i, s.event) << "event " << i << " of pid " << s.pid << " before its ProcessStart";
      if (exit) {
        EXPECT_LT(i, exit->event) << "event " << i << " of pid " << s.pid << " after its ProcessExit";
      }
    }
  }
}

std::string canonical(const std::string& p) { return fs::canonical(p).string(); }

TEST(Lifecycle, ForkChildRecordsStartExecAndExit) {
  const Recorded run = record({kPrograms + "/fork_child"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto out = lines(run.out);
  const auto parent = static_cast<int>(value_int(out, "parent"));
  const auto child = static_cast<int>(value_int(out, "child"));
  ASSERT_FALSE(run.context.empty());
  const auto* info = std::get_if<RecordingInfo>(&run.context.front());
  ASSERT_NE(info, nullptr) << "the Recording record comes first";
  EXPECT_EQ(info->command, std::vector<std::string>{kPrograms + "/fork_child"});
  EXPECT_EQ(info->sections, (std::vector<std::string>{"lifecycle", "control", "resident", "resident-pages", "stacks",
                                                      "modules", "symbols"}));  // stacks: on by default
  EXPECT_EQ(info->pid, run.recorder);
  EXPECT_FALSE(info->memtrack_version.empty());

  const auto pstart = first_of<ProcessStart>(run.context, parent);
  ASSERT_TRUE(pstart) << "no ProcessStart for the command";
  EXPECT_EQ(pstart->ppid, run.recorder);
  EXPECT_EQ(pstart->event, 0u);
  const auto pexec = first_of<ProcessExec>(run.context, parent);
  ASSERT_TRUE(pexec);
  EXPECT_EQ(pexec->executable, canonical(kPrograms + "/fork_child"));
  EXPECT_EQ(pexec->argv, std::vector<std::string>{kPrograms + "/fork_child"});
  const auto cstart = first_of<ProcessStart>(run.context, child);
  ASSERT_TRUE(cstart) << "no ProcessStart for the fork child";
  EXPECT_EQ(cstart->ppid, parent);
  EXPECT_FALSE(first_of<ProcessExec>(run.context, child)) << "a fork child that does not exec has no Exec";
  // The child's first event (its own malloc) is after its start, and the parent's malloc before the fork is
  // before it.
  const auto pexit = first_of<ProcessExit>(run.context, parent);
  ASSERT_TRUE(pexit);
  EXPECT_EQ(pexit->status, std::optional<std::int32_t>(0));
  EXPECT_EQ(pexit->event, run.events.size()) << "the parent's exit is after every event";
  const auto cexit = first_of<ProcessExit>(run.context, child);
  ASSERT_TRUE(cexit) << "the child's _exit is noticed";
  EXPECT_EQ(cexit->status, std::optional<std::int32_t>(0)) << "_exit(0), noted by the preload's _exit hook";
  EXPECT_LT(cstart->event, cexit->event);
  EXPECT_GE(events_of(run.events, child), 3u);  // malloc, free, free of the inherited block
  expect_positions_consistent(run);
}

TEST(Lifecycle, ExecChainHasOneExecPerImage) {
  const Recorded run = record({kPrograms + "/exec_chain"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto out = lines(run.out);
  const auto start_pid = static_cast<int>(value_int(out, "start"));
  std::vector<ProcessExec> start_images;
  for (const ProcessExec& e : all_of<ProcessExec>(run.context))
    if (e.pid == start_pid) start_images.push_back(e);
  // exec_chain (start), then /bin/sh, then exec_chain final in place of sh.
  ASSERT_EQ(start_images.size(), 3u);
  EXPECT_EQ(start_images[0].executable, canonical(kPrograms + "/exec_chain"));
  EXPECT_EQ(start_images[1].executable, canonical("/bin/sh"));
  EXPECT_EQ(start_images[1].argv.at(0), "sh");
  EXPECT_EQ(start_images[2].argv, (std::vector<std::string>{kPrograms + "/exec_chain", "final"}));
  EXPECT_EQ(value_int(out, "final"), start_pid);
  for (const char* stage : {"middle", "spawned", "vforked"}) {
    const auto pid = static_cast<int>(value_int(out, stage));
    const auto exec = first_of<ProcessExec>(run.context, pid);
    ASSERT_TRUE(exec) << stage;
    EXPECT_EQ(exec->argv.back(), stage);
    const auto st = first_of<ProcessStart>(run.context, pid);
    ASSERT_TRUE(st) << stage;
    const auto exit = first_of<ProcessExit>(run.context, pid);
    ASSERT_TRUE(exit) << stage;
    EXPECT_EQ(exit->status, std::optional<std::int32_t>(0)) << stage;
  }
  // The final image's malloc comes after its Exec.
  std::size_t final_malloc = SIZE_MAX;
  for (std::size_t i = 0; i < run.events.size(); ++i)
    if (run.events[i].type == "Malloc" && run.events[i].size == 1000187) final_malloc = i;
  EXPECT_GE(final_malloc, start_images[2].event);
  EXPECT_LT(start_images[1].event, start_images[2].event);
  expect_positions_consistent(run);
}

// The bound, "record returns within a second of CMD". A ThreadSanitizer build of the recorder starts
// and joins its threads several times slower: there the bound is 3 s.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr std::uint64_t kSecond = 3'000'000'000u;
#else
constexpr std::uint64_t kSecond = 1'000'000'000u;
#endif

// Whether `pid` has ended (gone, or a zombie no one reaps), waiting for it until `deadline`.
bool ended_by(pid_t pid, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
    const std::size_t paren = stat.rfind(')');
    if (paren == std::string::npos || stat.compare(paren, 3, ") Z") == 0) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// A daemon (setsid) started by the command does not hold the recording: record returns within a second of
// the command's exit with a valid artifact, the daemon keeps running, finishes its work, and says nothing.
// The daemon does its work only once the test has seen record return (MARKER.go), so "not finished yet"
// does not depend on how fast the machine runs either.
TEST(Lifecycle, DaemonIsLeftRunningAndUnaffected) {
  Recorded run;
  run.dir = scratch_dir();
  const fs::path marker = run.dir / "daemon.done";
  run.recorder = start(run.dir, "record", record_argv(run.dir, {kLifecycle, "daemon", marker.string()}), environment());
  run.exit_code = wait_code(run.recorder);
  const std::uint64_t returned_ns = monotonic_ns();
  finish(run);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto out = lines(run.out);
  const auto daemon = static_cast<int>(value_int(out, "daemon"));
  const auto exit_ns = static_cast<std::uint64_t>(value_int(out, "exit_ns"));
  ASSERT_GT(daemon, 0) << run.out;
  EXPECT_LT(returned_ns - exit_ns, kSecond)
      << "record returned " << (returned_ns - exit_ns) / 1000000 << " ms after the command exited";
  EXPECT_EQ(::kill(daemon, 0), 0) << "the daemon is still running when record returns";
  EXPECT_FALSE(fs::exists(marker)) << "the daemon had not finished yet (it waits for daemon.done.go)";
  std::ofstream(marker.string() + ".go").put('\n');
  EXPECT_NE(run.err.find("left running"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find(std::to_string(daemon)), std::string::npos) << run.err;
  // Its first block was allocated before the command exited (the command waited for it).
  EXPECT_GE(events_of(run.events, daemon, "Malloc", 1000003), 1u);
  bool reported = false;
  for (const Untracked& u : all_of<Untracked>(run.context))
    if (u.pid == daemon && u.reason == "left-running") reported = true;
  EXPECT_TRUE(reported) << "an Untracked record says the daemon was left running";
  EXPECT_TRUE(ended_by(daemon, std::chrono::steady_clock::now() + std::chrono::seconds(30))) << "the daemon exits";
  EXPECT_EQ(slurp(marker), "done 20\n") << "the daemon did all its work";
  EXPECT_EQ(slurp(run.dir / "daemon.done.err"), "") << "the daemon saw no warning";
  expect_positions_consistent(run);
}

// While it waits for a process of the command's session, record says which; SIGTERM ends it promptly with a
// valid artifact.
TEST(Lifecycle, SigtermWhileWaitingEndsTheRecordingPromptly) {
  Recorded run;
  run.dir = scratch_dir();
  run.recorder = start(run.dir, "record", record_argv(run.dir, {kLifecycle, "linger", "30"}), environment());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (slurp(run.dir / "record.err").find("waiting for") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::string waiting = slurp(run.dir / "record.err");
  const auto child = static_cast<int>(value_int(lines(slurp(run.dir / "record.out")), "child"));
  EXPECT_NE(waiting.find("waiting for 1 process of its session: " + std::to_string(child)), std::string::npos)
      << waiting;
  const auto sent = std::chrono::steady_clock::now();
  ::kill(run.recorder, SIGTERM);
  run.exit_code = wait_code(run.recorder);
  const auto took = std::chrono::steady_clock::now() - sent;
  finish(run);
  EXPECT_LT(took, std::chrono::nanoseconds(kSecond));
  EXPECT_EQ(run.exit_code, 0) << "the command's own status";
  EXPECT_EQ(::kill(child, 0), 0) << "the lingering child is not killed";
  EXPECT_EQ(events_of(run.events, child, "Malloc", 1000007), 1u);
  EXPECT_NE(run.err.find("left running"), std::string::npos) << run.err;
  bool reported = false;
  for (const Untracked& u : all_of<Untracked>(run.context))
    if (u.pid == child && u.reason == "left-running") reported = true;
  EXPECT_TRUE(reported);
  ::kill(child, SIGKILL);
  expect_positions_consistent(run);
}

// SIGTERM or SIGHUP while the command runs is passed on to it; the recording ends when it exits.
TEST(Lifecycle, SignalWhileTheCommandRunsIsPassedOn) {
  for (const int sig : {SIGTERM, SIGHUP}) {
    Recorded run;
    run.dir = scratch_dir();
    run.recorder = start(run.dir, "record", record_argv(run.dir, {"/bin/sleep", "30"}), environment());
    // Once sleep runs under the recorder (its Exec is the recorder's first note), signal the recorder.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    bool running = false;
    while (!running && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      running = slurp("/proc/" + std::to_string(run.recorder) + "/task/" + std::to_string(run.recorder) + "/children")
                    .find_first_of("0123456789") != std::string::npos;
    }
    ASSERT_TRUE(running);
    // Sleep has attached once it is in its nanosleep (35) or clock_nanosleep (230): its constructors,
    // the preload's among them, have run.
    const std::string child = std::to_string(std::stoi(
        slurp("/proc/" + std::to_string(run.recorder) + "/task/" + std::to_string(run.recorder) + "/children")));
    bool sleeping = false;
    while (!sleeping && std::chrono::steady_clock::now() < deadline) {
      std::error_code ec;
      const std::string call = slurp("/proc/" + child + "/syscall");
      sleeping = fs::read_symlink("/proc/" + child + "/exe", ec).filename() == "sleep" &&
                 (call.starts_with("35 ") || call.starts_with("230 "));
      if (!sleeping) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_TRUE(sleeping) << "sleep " << child << " never reached its nanosleep";
    const auto sent = std::chrono::steady_clock::now();
    ::kill(run.recorder, sig);
    run.exit_code = wait_code(run.recorder);
    const auto took = std::chrono::steady_clock::now() - sent;
    finish(run);
    EXPECT_EQ(run.exit_code, 128 + sig) << "sleep was killed by the forwarded signal";
    EXPECT_LT(took, std::chrono::nanoseconds(kSecond));
    const auto exits = all_of<ProcessExit>(run.context);
    ASSERT_EQ(exits.size(), 1u);
    EXPECT_EQ(exits[0].signal, std::optional<std::int32_t>(sig));
    EXPECT_EQ(exits[0].event, run.events.size());
    EXPECT_TRUE(run.err.find("left running") == std::string::npos) << run.err;
  }
}

// `env` under record prints exactly what it prints natively.
TEST(Lifecycle, EnvPrintsTheNativeEnvironment) {
  const fs::path dir = scratch_dir();
  const std::vector<std::string> extra = {"MEMTRACK_LIFE_TEST=a b"};
  std::vector<std::string> env = environment(extra);
  const pid_t native = start(dir, "native", {"/usr/bin/env"}, env);
  ASSERT_EQ(wait_code(native), 0);
  const std::vector<std::string> renv = environment(extra);
  const pid_t rec = start(dir, "record", record_argv(dir, {"/usr/bin/env"}), renv);
  ASSERT_EQ(wait_code(rec), 0) << slurp(dir / "record.err");
  const std::string want = slurp(dir / "native.out");
  EXPECT_NE(want.find("MEMTRACK_LIFE_TEST=a b\n"), std::string::npos);
  EXPECT_EQ(slurp(dir / "record.out"), want);
  EXPECT_GT(read_events(dir / "artifact.msgpack").size(), 0u) << "env itself was recorded";
}

// Children started with an explicit environment are tracked, and see exactly that environment; a child of
// system() sees the program's environment; all of them are recorded.
TEST(Lifecycle, ChildrenWithExplicitEnvironmentsAreTrackedAndSeeTheirOwn) {
  const Recorded run = record({kLifecycle, "spawn_env", kLifecycle});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // Two envdumps: the spawned child, then the program itself after execve.
  std::vector<int> pids;
  std::vector<std::vector<std::string>> envs;
  for (const auto& [k, v] : lines(run.out)) {
    if (k == "pid") {
      pids.push_back(std::stoi(v));
      envs.emplace_back();
    } else if (k == "env" && !envs.empty()) {
      envs.back().push_back(v);
    }
  }
  ASSERT_EQ(pids.size(), 2u) << run.out;
  EXPECT_EQ(envs[0], std::vector<std::string>{"ONLY=1"});
  EXPECT_EQ(envs[1], std::vector<std::string>{"ONLY=2"});
  EXPECT_EQ(events_of(run.events, pids[0], "Malloc", 1000033), 1u);
  EXPECT_EQ(events_of(run.events, pids[1], "Malloc", 1000037), 1u);
  const auto exec = first_of<ProcessExec>(run.context, pids[0]);
  ASSERT_TRUE(exec);
  EXPECT_EQ(exec->argv, (std::vector<std::string>{kLifecycle, "envdump", "1000033"}));
}

TEST(Lifecycle, SystemChildSeesTheProgramsEnvironmentAndIsTracked) {
  // The same environment natively as the recorder gets (and passes on to the command).
  const fs::path dir = scratch_dir();
  const pid_t native = start(dir, "native", {kLifecycle, "system_env", kLifecycle}, environment());
  ASSERT_EQ(wait_code(native), 0);
  std::string want;
  for (const auto& [k, v] : lines(slurp(dir / "native.out")))
    if (k == "env") want += v + "\n";
  const Recorded run = record({kLifecycle, "system_env", kLifecycle}, dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::string got;
  int pid = -1;
  for (const auto& [k, v] : lines(run.out)) {
    if (k == "env") got += v + "\n";
    if (k == "pid") pid = std::stoi(v);
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(got.find("MEMTRACK_RING"), std::string::npos);
  EXPECT_EQ(events_of(run.events, pid, "Malloc", 1000039), 1u) << "the grandchild (under sh) is recorded";
}

void expect_untracked_child(const Recorded& run, const std::string& path, const std::string& reason) {
  const auto child = static_cast<int>(value_int(lines(run.out), "child"));
  ASSERT_GT(child, 0) << run.out;
  bool reported = false;
  for (const Untracked& u : all_of<Untracked>(run.context))
    if (u.pid == child && u.reason == reason && u.executable == path) reported = true;
  EXPECT_TRUE(reported) << "no Untracked record for " << child << " (" << reason << ")";
  EXPECT_FALSE(first_of<ProcessExec>(run.context, child)) << "the child's image did attach";
  EXPECT_EQ(events_of(run.events, child), 0u);
  EXPECT_NE(run.err.find("not tracked: " + std::to_string(child) + " (" + path + "): " + reason), std::string::npos)
      << run.err;
}

TEST(Lifecycle, StaticChildIsReportedUntracked) {
  const std::string path = kPrograms + "/static_alloc";
  const Recorded run = record({kLifecycle, "spawn", path});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  expect_untracked_child(run, path, "static");
  EXPECT_NE(run.out.find("static " + std::to_string(value_int(lines(run.out), "child"))), std::string::npos);
}

TEST(Lifecycle, SetuidChildIsReportedUntracked) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a copy of a program to another user";
  const fs::path dir = scratch_dir();
  const std::string path = (dir / "true_setuid").string();
  fs::copy_file("/bin/true", path);
  ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
  ASSERT_EQ(::chmod(path.c_str(), 04755), 0);
  const Recorded run = record({kLifecycle, "spawn", path}, dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  expect_untracked_child(run, path, "setuid");
}

// A set-group-ID program (ssh-agent, wall) is named for what it is.
TEST(Lifecycle, SetgidChildIsReportedUntrackedAsSetgid) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a copy of a program to another group";
  const fs::path dir = scratch_dir();
  const std::string path = (dir / "true_setgid").string();
  fs::copy_file("/bin/true", path);
  ASSERT_EQ(::chown(path.c_str(), 0, 65534), 0);
  ASSERT_EQ(::chmod(path.c_str(), 02755), 0);
  const Recorded run = record({kLifecycle, "spawn", path}, dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  expect_untracked_child(run, path, "setgid");
}

// The preload's diagnostics go to the recorder, never into the program's fds (docs/RUNTIME.md,
// "Diagnostics"). A program whose executable defines operator new without its nothrow twin and calls no
// malloc (new_own) loses those allocations: it gets a note, but its stderr is byte for byte what it is
// natively, even with -q; the summary names the entry, once.
TEST(Lifecycle, PreloadNotesGoToTheSummaryNotTheProgramsStderr) {
  const fs::path dir = scratch_dir();
  const std::string prog = kPrograms + "/new_own";
  const auto redirected = [&](const std::string& name) {
    return std::vector<std::string>{"/bin/sh", "-c", prog + " 2>'" + (dir / name).string() + "'"};
  };
  const pid_t native = start(dir, "native", redirected("native.prog.err"), environment());
  ASSERT_EQ(wait_code(native), 0);
  const std::string want = slurp(dir / "native.prog.err");
  ASSERT_EQ(want, "new_own: a line of the program's own\n");

  std::vector<std::string> quiet = record_argv(dir, redirected("quiet.prog.err"));
  quiet.insert(quiet.begin() + 2, "-q");
  const pid_t q = start(dir, "quiet", quiet, environment());
  ASSERT_EQ(wait_code(q), 0) << slurp(dir / "quiet.err");
  EXPECT_EQ(slurp(dir / "quiet.prog.err"), want);
  EXPECT_EQ(slurp(dir / "quiet.err"), "") << "-q: nothing at all from memtrack";

  const Recorded run = record(redirected("prog.err"), dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(slurp(dir / "prog.err"), want);
  int pid = 0;
  for (const ProcessExec& e : all_of<ProcessExec>(run.context))
    if (e.executable.find("new_own") != std::string::npos) pid = e.pid;
  ASSERT_NE(pid, 0) << run.err;
  EXPECT_EQ(events_of(run.events, pid, "Malloc", 1000231), 0u) << "its pool is invisible: hence the note";
  const std::string line = "memtrack record: preload, process " + std::to_string(pid) + ": _Znwm in " +
                           canonical(prog) + " is not hooked (its nothrow twin, needed to hook it safely, is not " +
                           "defined beside it) and the image calls no hooked malloc: its calls are not recorded";
  const auto at = run.err.find(line);
  EXPECT_NE(at, std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("_Znwm", at + line.size()), std::string::npos) << "said once: " << run.err;
}

// The same unhookable operator new in an executable that calls malloc (as gcc's cc1, which links libstdc++
// statically): every call reaches the interposed malloc and is recorded, so nothing is lost and nothing is
// said.
TEST(Lifecycle, AnUnhookedOperatorNewThatCallsMallocIsNotNoted) {
  const fs::path dir = scratch_dir();
  const Recorded run = record({"/bin/sh", "-c", kPrograms + "/new_only 2>/dev/null"}, dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  int pid = 0;
  for (const Ev& e : run.events)
    if (e.type == "Malloc" && e.size == 1000231) pid = e.pid;
  ASSERT_NE(pid, 0) << "the malloc its operator new calls is recorded";
  EXPECT_EQ(events_of(run.events, pid, "Malloc", 1000231), 1u);
  EXPECT_EQ(run.err.find("_Znwm"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("preload,"), std::string::npos) << run.err;
}

// Two processes with the same note: one summary line naming both.
TEST(Lifecycle, PreloadNotesAreDeduplicatedWithTheirProcesses) {
  const std::string prog = kPrograms + "/new_own";
  const Recorded run = record({"/bin/sh", "-c", prog + " 2>/dev/null; " + prog + " 2>/dev/null"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::vector<int> pids;
  for (const ProcessExec& e : all_of<ProcessExec>(run.context))
    if (e.executable.find("new_own") != std::string::npos) pids.push_back(e.pid);
  ASSERT_EQ(pids.size(), 2u) << run.err;
  const std::string head = "memtrack record: preload, processes " + std::to_string(pids[0]) + ", " +
                           std::to_string(pids[1]) + ": _Znwm in " + canonical(prog) + " is not hooked";
  const auto at = run.err.find(head);
  EXPECT_NE(at, std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("_Znwm", at + head.size()), std::string::npos) << "one line: " << run.err;
}

// A process that drops its privileges before it execs (setpriv, as a service manager would) keeps recording
// until the exec; the image it execs cannot open the ring. The exec hook notes it untracked (no-access)
// instead of letting the new image say so on the program's stderr.
TEST(Lifecycle, PrivilegesDroppedBeforeExecAreNamedNoAccess) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to drop privileges";
  const std::string setpriv = "/usr/bin/setpriv";
  if (::access(setpriv.c_str(), X_OK) != 0) GTEST_SKIP() << "no " << setpriv << " (util-linux)";
  const Recorded run = record(
      {setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh", "-c", "ls / >/dev/null; echo done >&2"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err.find("memtrack: "), std::string::npos) << "nothing from the preload on stderr: " << run.err;
  EXPECT_EQ(run.err.substr(0, 5), "done\n") << run.err;
  std::optional<Untracked> untracked;
  for (const Untracked& u : all_of<Untracked>(run.context))
    if (u.reason == "no-access") untracked = u;
  ASSERT_TRUE(untracked) << run.err;
  ASSERT_TRUE(untracked->pid);
  EXPECT_EQ(untracked->executable, "/bin/sh");
  const auto exec = first_of<ProcessExec>(run.context, *untracked->pid);
  ASSERT_TRUE(exec) << "setpriv itself was tracked";
  EXPECT_EQ(exec->argv.at(0), setpriv);
  EXPECT_GT(events_of(run.events, *untracked->pid), 0u);
  EXPECT_NE(run.err.find("not tracked: " + std::to_string(*untracked->pid) + " (/bin/sh): no-access"),
            std::string::npos)
      << run.err;
}

// libstdc++'s emergency exception pool (72,704 B, one malloc when it loads) is freed at exit through
// __gnu_cxx::__freeres, as heaptrack and valgrind do, so it is no leak of every C++ program.
TEST(Lifecycle, TheCxxEmergencyPoolIsFreedAtExit) {
  const Recorded run = record({kPrograms + "/cxx_new"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::size_t pools = 0;
  for (std::size_t i = 0; i < run.events.size(); ++i) {
    if (run.events[i].type != "Malloc" || run.events[i].size != 72704) continue;
    ++pools;
    bool freed = false;
    for (std::size_t j = i + 1; j < run.events.size() && !freed; ++j)
      freed = run.events[j].type == "Free" && run.events[j].addr == run.events[i].addr;
    EXPECT_TRUE(freed) << "the 72704-byte pool of event " << i << " is never freed";
  }
  EXPECT_EQ(pools, 1u) << "libstdc++ allocates its pool once";
}

// A recording with its context section in the artifact (record() diverts it to a dump for the tests above):
// `memtrack record -o DIR/artifact.msgpack -- COMMAND`, stdout in DIR/record.out.
struct Plain {
  fs::path dir;
  int status = -1;
  std::string out, err;
};
Plain record_with_context(const std::vector<std::string>& command) {
  Plain run;
  run.dir = scratch_dir();
  std::string cmd = kMemtrack + " record -o '" + (run.dir / "artifact.msgpack").string() + "' --";
  for (const std::string& a : command) cmd += " '" + a + "'";
  cmd += " > '" + (run.dir / "record.out").string() + "' 2> '" + (run.dir / "record.err").string() + "'";
  run.status = std::system(cmd.c_str());
  run.out = slurp(run.dir / "record.out");
  run.err = slurp(run.dir / "record.err");
  return run;
}

// `memtrack stats --json` of a recording, asked with python3's json module: `expr` over `d` (the document)
// and `child` (the pid entry of `pid`), printed.
std::string stats_query(const Plain& run, int pid, const std::string& expr) {
  const fs::path out = run.dir / "query.out";
  const std::string cmd = kMemtrack + " stats --json '" + (run.dir / "artifact.msgpack").string() + "' | " +
                          MEMTRACK_SYSTEM_PYTHON + " -c \"import json,sys; d=json.load(sys.stdin); child=[p for p in " +
                          "d['pids'] if p['pid']==" + std::to_string(pid) + "][0]; print(" + expr + ")\" > '" +
                          out.string() + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::string got = slurp(out);
  if (!got.empty() && got.back() == '\n') got.pop_back();
  return got;
}
// A daemon still running at the end holds an unchanged copy of the block its parent leaked: one leak, the
// parent's, not two (docs/ACCOUNTING.md).
TEST(Lifecycle, ADaemonsInheritedCopyIsItsParentsLeakOnly) {
  const fs::path marker = fs::path(testing::TempDir()) / ("memtrack_daemonleak_" + std::to_string(::getpid()));
  const Plain run = record_with_context({kLifecycle, "daemon", marker.string()});
  ASSERT_EQ(run.status, 0) << run.err;
  const auto daemon = static_cast<int>(value_int(lines(run.out), "daemon"));
  ASSERT_GT(daemon, 0) << run.out;
  std::ofstream(marker.string() + ".go").put('\n');
  EXPECT_TRUE(ended_by(daemon, std::chrono::steady_clock::now() + std::chrono::seconds(30)));
  EXPECT_EQ(
      stats_query(run, daemon, "(child['leaked_count'], child['images'][0]['inherited_at_exit_bytes'] >= 1000039)"),
      "(0, True)");
  EXPECT_EQ(stats_query(run, daemon, "[p['leaked_bytes'] >= 1000039 for p in d['pids'] if p['pid'] != child['pid']]"),
            "[True]");
  EXPECT_EQ(stats_query(run, daemon, "1000039 <= sum(p['leaked_bytes'] for p in d['pids']) < 2 * 1000039"), "True");
  for (const char* f : {"", ".go", ".err"}) fs::remove(marker.string() + f);
}

// The summary line's peak is `memtrack stats`' peak: the recorder's live heap gets the lifecycle records too,
// so six children run one after another, each leaking a 1000211-byte block at its exit, peak at one block
// (plus the shell's and libc's few KiB), not six.
TEST(Lifecycle, TheSummaryPeakIsStatsPeakAcrossSequentialChildren) {
  const Plain run =
      record_with_context({"/bin/sh", "-c", "for i in 1 2 3 4 5 6; do '" + kLifecycle + "' leak 1000211; done"});
  ASSERT_EQ(run.status, 0) << run.err;
  const fs::path out = run.dir / "peak.out";
  const std::string cmd =
      kMemtrack + " stats --json '" + (run.dir / "artifact.msgpack").string() + "' | " + MEMTRACK_SYSTEM_PYTHON +
      " -c \"import json,sys; print(json.load(sys.stdin)['peak_live_bytes'])\" > '" + out.string() + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::uint64_t peak = std::stoull(slurp(out));
  EXPECT_GE(peak, 1000211u);
  EXPECT_LT(peak, 2 * 1000211u) << "one child's block at a time";
  // The summary's unit: KiB below 1 MiB (tools/src/units.h).
  char expected[64];
  if (peak < 1024u * 1024u)
    std::snprintf(expected, sizeof expected, "peak heap %.1f KiB", static_cast<double>(peak) / 1024.0);
  else
    std::snprintf(expected, sizeof expected, "peak heap %.1f MiB", static_cast<double>(peak) / (1024.0 * 1024.0));
  EXPECT_NE(run.err.find(expected), std::string::npos) << "stats' peak is " << peak << "; the summary: " << run.err;
}

// A $(...)-style subshell (docs/FORMAT.md, "Meaning"): a fork child that exits without exec leaks only what it
// allocated; its copy of the parent's heap (the untouched 1000151-byte block, and whatever libc held) is not
// its leak, and the parent freed its own copy, so no one leaks it.
TEST(Lifecycle, AForkChildThatExitsLeaksOnlyItsOwnAllocations) {
  const Plain run = record_with_context({kPrograms + "/fork_exit"});
  ASSERT_EQ(run.status, 0) << run.err;
  const auto child = static_cast<int>(value_int(lines(run.out), "child"));
  ASSERT_GT(child, 0) << run.out;
  EXPECT_EQ(stats_query(run, child,
                        "[(i['end'], i['forked'], i['leaked_count'], i['leaked_bytes'], "
                        "1000151 <= i['inherited_at_exit_bytes'] < 1000151 + 1000153) for i in child['images']]"),
            "[('exit', True, 1, 1000159, True)]");
  // The whole run's leaks: the child's block and what libc keeps in the parent, not the parent's block again.
  EXPECT_EQ(stats_query(run, child, "1000159 <= d['leaked_bytes'] < 1000159 + 1000151"), "True");
  EXPECT_EQ(stats_query(run, child, "d['inherited_at_exit_bytes'] == child['images'][0]['inherited_at_exit_bytes']"),
            "True");
}

// The same child exec'ing a static executable: its forked image ends as an exec (its blocks freed by it, none
// leaked), and the next row is the untracked image, still listed as untracked.
TEST(Lifecycle, AForkChildExecingAStaticProgramEndsLikeAnExec) {
  const std::string path = kPrograms + "/static_alloc";
  const Plain run = record_with_context({kPrograms + "/fork_exit", path});
  ASSERT_EQ(run.status, 0) << run.err;
  const auto child = static_cast<int>(value_int(lines(run.out), "child"));
  ASSERT_GT(child, 0) << run.out;
  EXPECT_EQ(stats_query(run, child,
                        "[(i['image'], i['end'], i['forked'], i['leaked_bytes'], i['freed_by_exec_bytes'] >= 1000151 + "
                        "1000159, i['untracked'], i['executable'], i['events']) for i in child['images']]"),
            "[(0, 'exec', True, 0, True, None, '" + canonical(kPrograms + "/fork_exit") +
                "', 2), (1, 'exit', False, 0, "
                "False, 'static', '" +
                path + "', 0)]");
  EXPECT_EQ(stats_query(run, child, "[(u['pid'], u['reason']) for u in d['untracked']]"),
            "[(" + std::to_string(child) + ", 'static')]");
}

// The stats peak of a recording (memtrack stats --json).
std::uint64_t stats_peak(const fs::path& artifact) {
  const fs::path out = artifact.string() + ".peak";
  const std::string cmd = kMemtrack + " stats --json '" + artifact.string() + "' | " + MEMTRACK_SYSTEM_PYTHON +
                          " -c \"import json,sys; print(json.load(sys.stdin)['peak_live_bytes'])\" > '" + out.string() +
                          "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return std::stoull("0" + slurp(out));
}

// Children that end with _exit while the recorder is not their parent (the program is): each one's end is
// noted by its own _exit hook, after its last event and before the next child starts, so the peak is one
// child's 1 MiB block (and the parent's stdout buffer), not the sum of all of them (before the hook, with only
// the recorder's pidfd watch: 4 MiB for 200 children at no gap, and the order lost under a slow recorder).
// No gap between the children: the order is exact, not a race the recorder must win.
TEST(Lifecycle, SequentialExitChildrenEndWhenTheyDie) {
  const Recorded run = record({kPrograms + "/exit_children", "sequential", "20", "0"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::vector<int> children;
  for (const auto& [k, v] : lines(run.out))
    if (k == "child") children.push_back(std::stoi(v));
  ASSERT_EQ(children.size(), 20u) << run.out;
  const std::uint64_t peak = stats_peak(run.dir / "artifact.msgpack");
  EXPECT_GE(peak, 1048576u);
  EXPECT_LT(peak, 1048576u + 65536u) << "one child's block at a time";
  for (std::size_t i = 0; i < children.size(); ++i) {
    const auto exit = first_of<ProcessExit>(run.context, children[i]);
    ASSERT_TRUE(exit.has_value()) << children[i];
    // _exit(3), noted with its status by the hook.
    EXPECT_EQ(exit->status, 3);
    EXPECT_FALSE(exit->signal.has_value());
    // Its 1 MiB block precedes its end.
    std::size_t block = run.events.size();
    for (std::size_t k = 0; k < run.events.size(); ++k)
      if (run.events[k].pid == children[i] && run.events[k].size == 1048576u) block = k;
    ASSERT_LT(block, run.events.size()) << children[i];
    EXPECT_GT(exit->event, block);
    if (i + 1 < children.size()) {
      const auto next = first_of<ProcessStart>(run.context, children[i + 1]);
      ASSERT_TRUE(next.has_value());
      EXPECT_LE(exit->event, next->event) << "child " << children[i] << " ends after the next one starts";
    }
  }
  expect_positions_consistent(run);
}

// A child killed by SIGKILL (no exit() runs): its 4 MiB stop counting at its death, before its parent keeps
// 3 MiB, so the peak is 4 MiB, not 7. The parent's waitpid hook notes the reaped child's end with its signal,
// before the parent's next event; no gap between the reaping and the parent's block.
TEST(Lifecycle, AKilledChildsBlocksStopCountingAtItsDeath) {
  for (const char* reap : {"waitpid", "waitid"}) {
    SCOPED_TRACE(reap);
    const Recorded run = record({kPrograms + "/exit_children", "killed", "0", reap});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const int child = static_cast<int>(value_int(lines(run.out), "child"));
    ASSERT_GT(child, 0) << run.out;
    const std::uint64_t peak = stats_peak(run.dir / "artifact.msgpack");
    EXPECT_GE(peak, 4194304u);
    EXPECT_LT(peak, 4194304u + 65536u) << "the killed child's blocks still counted";
    const auto exit = first_of<ProcessExit>(run.context, child);
    ASSERT_TRUE(exit.has_value());
    // The signal is known when the parent's reap note comes first; the recorder's pidfd watch may see the
  // death first (the kernel has no status for it before the reaping): the position is the same either way.
  EXPECT_EQ(exit->signal.value_or(SIGKILL), SIGKILL);
    EXPECT_FALSE(exit->status.has_value());
    std::size_t parent_block = run.events.size();
    for (std::size_t k = 0; k < run.events.size(); ++k)
      if (run.events[k].size == 3145728u) parent_block = k;
    ASSERT_LT(parent_block, run.events.size());
    EXPECT_LE(exit->event, parent_block);
    expect_positions_consistent(run);
  }
}

}  // namespace
