// `memtrack attach` on running processes (docs/RUNTIME.md, "Attaching to a running process"): a
// multi-threaded program allocating in a loop (programs/attach_loop.cpp) recorded for --duration 1 s, with
// events from every thread and the program's own checksum unchanged; call stacks from every thread; the
// patched entries given back their bytes after the detach, with no thread left behind; fork children and
// exec'd images followed and detached; and the refusals: a missing pid, a process of another user (the tool
// run as nobody against a root process), a process recorded already.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/run.h"

namespace {

namespace fs = std::filesystem;
using memtrack::testing::memtrack_bin;
using memtrack::testing::memtrack_stats_command;
using memtrack::testing::run;
using memtrack::testing::slurp;
using memtrack::testing::test_dir;

const std::string kLoop = std::string(MEMTRACK_PROGRAMS_DIR) + "/attach_loop";

bool wait_for(const std::function<bool()>& done, int seconds = 30) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

// A process of the test's, its stdout and stderr to files; waited for (or killed) by the destructor.
struct Target {
  pid_t pid = 0;
  std::string out, err;
  // `uid` >= 0: the process runs as that user (and its group), for the tests of another user's process.
  Target(const std::vector<std::string>& argv, const fs::path& dir, const std::string& name, int uid = -1)
      : out((dir / (name + ".out")).string()), err((dir / (name + ".err")).string()) {
    pid = ::fork();
    if (pid == 0) {
      const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(o, 1);
      ::dup2(e, 2);
      if (uid >= 0 && (::setgid(static_cast<gid_t>(uid)) != 0 || ::setuid(static_cast<uid_t>(uid)) != 0)) ::_exit(126);
      std::vector<char*> a;
      for (const std::string& s : argv) a.push_back(const_cast<char*>(s.c_str()));
      a.push_back(nullptr);
      ::execv(a[0], a.data());
      ::_exit(127);
    }
  }
  // The program's "ready PID" line: every thread runs.
  bool ready() const {
    return wait_for([&] { return slurp(out).find("ready ") != std::string::npos; });
  }
  int wait() {
    int status = 0;
    if (pid > 0 && ::waitpid(pid, &status, 0) == pid) pid = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  ~Target() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

std::string checksum_of(const std::string& out) {
  std::smatch m;
  static const std::regex re(R"(checksum ([0-9]+))");
  return std::regex_search(out, m, re) ? m[1].str() : std::string();
}

// The distinct (pid, tid) pairs of the artifact's events, from `memtrack decode --format jsonl`.
std::set<std::pair<long, long>> threads_in(const fs::path& artifact) {
  const auto r = run(memtrack_bin() + " decode '" + artifact.string() + "' --format jsonl");
  std::set<std::pair<long, long>> out;
  static const std::regex re(R"re("pid":([0-9]+),"tid":([0-9]+))re");
  std::istringstream in(r.out);
  std::string line;
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_search(line, m, re)) out.insert({std::stol(m[1].str()), std::stol(m[2].str())});
  return out;
}

// The thread ids of process `pid` now (empty once it has exited).
std::set<long> tids_of(pid_t pid) {
  std::set<long> tids;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec))
    tids.insert(std::strtol(e.path().filename().c_str(), nullptr, 10));
  return tids;
}

// The first 16 bytes of `symbol` (a libc function) in process `pid`, read through /proc/PID/mem at the
// offset it has in this process's libc (the same file). Empty when it cannot be read.
// libc's own definition of `symbol` in this process (not the first in lookup order: under ASan that is the
// sanitizer's interceptor).
void* libc_symbol(const char* symbol) {
  void* libc = ::dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  return libc == nullptr ? nullptr : ::dlsym(libc, symbol);
}

std::string libc_entry_bytes(pid_t pid, const char* symbol) {
  auto base_of = [](pid_t p) -> std::uint64_t {
    std::ifstream maps("/proc/" + std::to_string(p) + "/maps");
    std::string line;
    while (std::getline(maps, line)) {
      unsigned long long start = 0, offset = 0;
      char perms[8] = {};
      if (std::sscanf(line.c_str(), "%llx-%*x %7s %llx", &start, perms, &offset) == 3 && offset == 0 &&
          line.find("/libc.so") != std::string::npos)
        return start;
    }
    return 0;
  };
  const std::uint64_t ours = base_of(::getpid()), theirs = base_of(pid);
  void* fn = libc_symbol(symbol);
  if (ours == 0 || theirs == 0 || fn == nullptr) return {};
  const std::uint64_t at = theirs + (reinterpret_cast<std::uint64_t>(fn) - ours);
  const int fd = ::open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  char buf[16];
  const bool ok = fd >= 0 && ::pread(fd, buf, sizeof buf, static_cast<off_t>(at)) == static_cast<ssize_t>(sizeof buf);
  if (fd >= 0) ::close(fd);
  return ok ? std::string(buf, sizeof buf) : std::string();
}

std::string own_entry_bytes(const char* symbol) {
  const auto* fn = static_cast<const char*>(libc_symbol(symbol));
  return fn == nullptr ? std::string() : std::string(fn, 16);
}

TEST(Attach, MultiThreadedProgramRecordedFromEveryThreadChecksumUnchanged) {
  const fs::path dir = test_dir("attach");
  // The reference run, not attached: its checksum is the program's answer for these arguments.
  const std::vector<std::string> argv = {kLoop, "4", "1500000"};
  Target reference(argv, dir, "reference");
  ASSERT_EQ(reference.wait(), 0) << slurp(reference.err);
  const std::string expected = checksum_of(slurp(reference.out));
  ASSERT_FALSE(expected.empty()) << slurp(reference.out);

  Target target(argv, dir, "target");
  ASSERT_TRUE(target.ready()) << slurp(target.err);
  const pid_t target_pid = target.pid;
  const std::set<long> tids_before = tids_of(target.pid);
  const fs::path artifact = dir / "attached.msgpack";
  const auto started = std::chrono::steady_clock::now();
  const auto r =
      run(memtrack_bin() + " attach " + std::to_string(target.pid) + " -o '" + artifact.string() + "' --duration 1");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_GE(took, 1.0) << r.err;  // --duration 1: not before a second
  const bool still_running = ::kill(target.pid, 0) == 0;
  if (still_running) {
    // The program's threads may have ended meanwhile (a slow detach, under ThreadSanitizer), none began:
    // a thread that was not there before the attach is one memtrack left.
    for (const long tid : tids_of(target.pid))
      EXPECT_EQ(tids_before.count(tid), 1u) << "thread " << tid << " was not in the process before the attach";
    EXPECT_NE(r.err.find("--duration elapsed"), std::string::npos) << r.err;
  }
  ASSERT_EQ(target.wait(), 0) << slurp(target.err);
  EXPECT_EQ(checksum_of(slurp(target.out)), expected) << "the attached run computed another checksum";
  EXPECT_EQ(slurp(target.err), "") << "the program's stderr changed";

  // Events from each of the program's 4 allocating threads, all of the attached process.
  const auto threads = threads_in(artifact);
  std::set<long> tids;
  for (const auto& [pid, tid] : threads) {
    EXPECT_EQ(pid, static_cast<long>(target_pid));
    tids.insert(tid);
  }
  EXPECT_EQ(tids.size(), 4u) << r.err;
  // The artifact says it began by attaching.
  const auto context = run(memtrack_bin() + " decode '" + artifact.string() + "' --context-only");
  EXPECT_NE(context.out.find("\"attached\""), std::string::npos) << context.out.substr(0, 400);
  const auto stats = run(memtrack_stats_command(artifact.string()));
  EXPECT_EQ(stats.status, 0) << stats.err;
}

TEST(Attach, EventsCarryCallStacksFromEveryThread) {
  const fs::path dir = test_dir("attach");
  const fs::path stop = dir / "stop";
  Target target({kLoop, "3", "1000000000", stop.string()}, dir, "target");
  ASSERT_TRUE(target.ready()) << slurp(target.err);
  const fs::path artifact = dir / "a.msgpack", plain = dir / "plain.msgpack";
  const auto r =
      run(memtrack_bin() + " attach " + std::to_string(target.pid) + " -o '" + artifact.string() + "' --duration 0.5");
  ASSERT_EQ(r.status, 0) << r.err;
  // And without stacks, on another process (memtrack attaches to a process once).
  Target other({kLoop, "1", "1000000000", stop.string()}, dir, "other");
  ASSERT_TRUE(other.ready()) << slurp(other.err);
  const auto r2 = run(memtrack_bin() + " attach " + std::to_string(other.pid) + " --no-stacks -o '" + plain.string() +
                      "' --duration 0.3");
  ASSERT_EQ(r2.status, 0) << r2.err;
  std::ofstream(stop.string()) << "stop\n";
  EXPECT_EQ(target.wait(), 0) << slurp(target.err);
  EXPECT_EQ(other.wait(), 0) << slurp(other.err);
  EXPECT_EQ(slurp(target.err), "");
  const auto context = run(memtrack_bin() + " decode '" + artifact.string() + "' --context-only");
  EXPECT_NE(context.out.find("\"stacks\""), std::string::npos) << context.out.substr(0, 400);
  const auto plain_context = run(memtrack_bin() + " decode '" + plain.string() + "' --context-only");
  EXPECT_EQ(plain_context.out.find("\"stacks\""), std::string::npos) << plain_context.out.substr(0, 400);
  // The sites are the loop's, named and placed: from the main thread (through main) and from the two
  // others (through std::thread), every thread's first capture after the attach taking its state then.
  const auto top = run(memtrack_bin() + " top '" + artifact.string() + "' -n 20");
  ASSERT_EQ(top.status, 0) << top.err;
  EXPECT_NE(top.out.find("(anonymous namespace)::work(unsigned int, long, char const*) (attach_loop.cpp:"),
            std::string::npos)
      << top.out.substr(0, 3000);
  EXPECT_NE(top.out.find("main ("), std::string::npos) << top.out.substr(0, 3000);
  EXPECT_NE(top.out.find("std::thread::_State_impl"), std::string::npos) << top.out.substr(0, 3000);
}

TEST(Attach, DetachRestoresTheEntriesAndLeavesNoThread) {
  const fs::path dir = test_dir("attach");
  const fs::path stop = dir / "stop";
  Target target({kLoop, "2", "1000000000", stop.string()}, dir, "target");
  ASSERT_TRUE(target.ready()) << slurp(target.err);
  const std::set<long> tids_before = tids_of(target.pid);
  // Before: the process's malloc and free are libc's bytes (as in this process, which nothing patches).
  ASSERT_EQ(libc_entry_bytes(target.pid, "malloc"), own_entry_bytes("malloc"));
  const auto r = run(memtrack_bin() + " attach " + std::to_string(target.pid) + " -o '" + (dir / "a.msgpack").string() +
                     "' --duration 0.5");
  ASSERT_EQ(r.status, 0) << r.err;
  // Hooked while attached (the summary counts the entries), restored after.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex(R"(([0-9]+) entries hooked)"))) << r.err;
  EXPECT_GT(std::stoi(m[1].str()), 8) << r.err;
  for (const char* fn : {"malloc", "free", "calloc", "realloc", "posix_memalign", "execve", "execveat", "fexecve"})
    EXPECT_EQ(libc_entry_bytes(target.pid, fn), own_entry_bytes(fn)) << fn << " was not restored";
  for (const long tid : tids_of(target.pid))
    EXPECT_EQ(tids_before.count(tid), 1u) << "thread " << tid << " was not in the process before the attach";
  std::ofstream(stop.string()) << "stop\n";
  EXPECT_EQ(target.wait(), 0) << slurp(target.err);
  EXPECT_EQ(slurp(target.err), "");
}

TEST(Attach, EndsWhenTheProcessExits) {
  const fs::path dir = test_dir("attach");
  const fs::path stop = dir / "stop";
  Target target({kLoop, "1", "1000000000", stop.string()}, dir, "target");
  ASSERT_TRUE(target.ready()) << slurp(target.err);
  const pid_t target_pid = target.pid;
  std::thread ender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    std::ofstream(stop.string()) << "stop\n";
  });
  const fs::path artifact = dir / "a.msgpack";
  const auto r = run(memtrack_bin() + " attach " + std::to_string(target.pid) + " -o '" + artifact.string() + "'");
  ender.join();
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("the process exited"), std::string::npos) << r.err;
  EXPECT_EQ(target.wait(), 0);
  const auto context = run(memtrack_bin() + " decode '" + artifact.string() + "' --context-only");
  EXPECT_NE(context.out.find("{\"context\":\"ProcessExit\",\"pid\":" + std::to_string(target_pid)), std::string::npos)
      << context.out.substr(context.out.size() > 1500 ? context.out.size() - 1500 : 0);
}

TEST(Attach, ForkChildrenAfterTheAttachAreRecorded) {
  const fs::path dir = test_dir("attach");
  const fs::path stop = dir / "stop";
  ::setenv("ATTACH_LOOP_FORK", "1", 1);
  Target target({kLoop, "1", "1000000000", stop.string()}, dir, "target");
  ::unsetenv("ATTACH_LOOP_FORK");
  ASSERT_TRUE(target.ready()) << slurp(target.err);
  const pid_t target_pid = target.pid;
  const fs::path artifact = dir / "a.msgpack";
  const auto r =
      run(memtrack_bin() + " attach " + std::to_string(target.pid) + " -o '" + artifact.string() + "' --duration 1.5");
  ASSERT_EQ(r.status, 0) << r.err;
  std::ofstream(stop.string()) << "stop\n";
  EXPECT_EQ(target.wait(), 0) << slurp(target.err);
  // Children's events (pids other than the parent's), each child a process of the recording: its
  // ProcessStart names the attached process as its parent.
  std::set<long> children;
  for (const auto& [pid, tid] : threads_in(artifact))
    if (pid != target_pid) children.insert(pid);
  EXPECT_GE(children.size(), 2u) << r.err;
  const auto context = run(memtrack_bin() + " decode '" + artifact.string() + "' --context-only");
  for (const long child : children)
    EXPECT_NE(context.out.find("{\"context\":\"ProcessStart\",\"pid\":" + std::to_string(child) +
                               ",\"ppid\":" + std::to_string(target_pid)),
              std::string::npos)
        << child;
  const auto stats = run(memtrack_stats_command(artifact.string()));
  EXPECT_EQ(stats.status, 0) << stats.err;
}

// The pids of the artifact's Malloc events of `size` bytes.
std::set<long> pids_allocating(const fs::path& artifact, long size) {
  const auto r = run(memtrack_bin() + " decode '" + artifact.string() + "' --format jsonl");
  std::set<long> out;
  const std::regex re("\"pid\":([0-9]+),.*\"type\":\"Malloc\",\"size\":" + std::to_string(size) + "\\}");
  std::istringstream in(r.out);
  std::string line;
  std::smatch m;
  while (std::getline(in, line))
    if (line.find("\"size\":" + std::to_string(size)) != std::string::npos && std::regex_search(line, m, re))
      out.insert(std::stol(m[1].str()));
  return out;
}

// The pid `exec_chain` printed for `stage` ("stage PID"), or -1.
long stage_pid(const std::string& out, const std::string& stage) {
  std::smatch m;
  return std::regex_search(out, m, std::regex("(^|\n)" + stage + " ([0-9]+)\n")) ? std::stol(m[2].str()) : -1;
}

// A shell line that runs `memtrack attach PID ARGS` in the background, its stderr to `err`, and waits (30 s at
// most) until it is recording: then `$a` is its pid.
std::string attach_in_background(pid_t pid, const std::string& args, const fs::path& err) {
  return memtrack_bin() + " attach " + std::to_string(pid) + " " + args + " 2>'" + err.string() + "' & a=$!; " +
         "for i in $(seq 600); do grep -q 'recording process' '" + err.string() + "' && break; sleep 0.05; done; ";
}

TEST(Attach, ExecAfterTheAttachIsFollowed) {
  const fs::path dir = test_dir("attach");
  const fs::path stop = dir / "stop";
  // Once attached, the loop ends (the stop file) and the program execv's exec_chain, which runs its stages
  // through posix_spawn, vfork + execl, `sh -c` and sh's exec (programs/exec_chain.c): every image allocates a
  // block of its own size.
  const std::string chain = std::string(MEMTRACK_PROGRAMS_DIR) + "/exec_chain";
  ::setenv("ATTACH_LOOP_EXEC", (chain + " start").c_str(), 1);
  Target target({kLoop, "1", "1000000000", stop.string()}, dir, "target");
  ::unsetenv("ATTACH_LOOP_EXEC");
  ASSERT_TRUE(target.ready()) << slurp(target.err);
  const long target_pid = target.pid;
  const fs::path artifact = dir / "a.msgpack", err = dir / "attach.err";
  const auto r = run(attach_in_background(target.pid, "-o '" + artifact.string() + "' --duration 60", err) +
                     "touch '" + stop.string() + "'; wait $a");
  EXPECT_EQ(r.status, 0) << slurp(err.string());
  EXPECT_NE(slurp(err.string()).find("(the process exited)"), std::string::npos) << slurp(err.string());
  EXPECT_EQ(target.wait(), 0) << slurp(target.err);
  // The program's output is its own: every stage ran, and nothing of ours was written to its stderr.
  const std::string out = slurp(target.out);
  EXPECT_NE(out.find("checksum "), std::string::npos) << out;
  EXPECT_EQ(stage_pid(out, "start"), target_pid) << out;
  EXPECT_EQ(stage_pid(out, "final"), target_pid) << out;
  const long spawned = stage_pid(out, "spawned"), vforked = stage_pid(out, "vforked"), middle = stage_pid(out, "middle");
  ASSERT_GT(spawned, 0) << out;
  ASSERT_GT(vforked, 0) << out;
  ASSERT_GT(middle, 0) << out;
  EXPECT_EQ(slurp(target.err), "");
  // Each image's Exec, and the new processes started by the attached one.
  const auto context = run(memtrack_bin() + " decode '" + artifact.string() + "' --context-only");
  const std::string exec_of = "{\"context\":\"Exec\",\"pid\":" + std::to_string(target_pid) + ",";
  std::vector<std::string> images;
  for (std::size_t at = context.out.find(exec_of); at != std::string::npos; at = context.out.find(exec_of, at + 1))
    images.push_back(context.out.substr(at, context.out.find('\n', at) - at));
  ASSERT_EQ(images.size(), 4u) << context.out.substr(0, 3000);  // attach_loop, exec_chain start, sh, exec_chain final
  EXPECT_NE(images[1].find("\"argv\":[\"" + chain + "\",\"start\"]"), std::string::npos) << images[1];
  EXPECT_NE(images[2].find("\"argv\":[\"sh\",\"-c\""), std::string::npos) << images[2];
  EXPECT_NE(images[3].find("\"argv\":[\"" + chain + "\",\"final\"]"), std::string::npos) << images[3];
  for (const long child : {spawned, vforked, middle})
    EXPECT_NE(context.out.find("{\"context\":\"ProcessStart\",\"pid\":" + std::to_string(child) +
                               ",\"ppid\":" + std::to_string(target_pid)),
              std::string::npos)
        << child << "\n"
        << context.out.substr(0, 3000);
  // And each image's own block, from the process that allocated it.
  EXPECT_EQ(pids_allocating(artifact, 1000171), std::set<long>{target_pid});  // start
  EXPECT_EQ(pids_allocating(artifact, 1000193), std::set<long>{spawned});
  EXPECT_EQ(pids_allocating(artifact, 1000199), std::set<long>{vforked});
  EXPECT_EQ(pids_allocating(artifact, 1000181), std::set<long>{middle});
  EXPECT_EQ(pids_allocating(artifact, 1000187), std::set<long>{target_pid});  // final
  const auto stats = run(memtrack_stats_command(artifact.string()));
  EXPECT_EQ(stats.status, 0) << stats.err;
}

TEST(Attach, AnImageExecdAfterTheAttachIsDetachedWithIt) {
  const fs::path dir = test_dir("attach");
  const fs::path stop = dir / "stop";
  // The image exec'd after the attach runs a fixed loop: its checksum is the same as a run of its own.
  const std::vector<std::string> second = {kLoop, "2", "4000000"};
  Target reference(second, dir, "reference");
  ASSERT_EQ(reference.wait(), 0) << slurp(reference.err);
  const std::string expected = checksum_of(slurp(reference.out));
  ASSERT_FALSE(expected.empty());
  ::setenv("ATTACH_LOOP_EXEC", (second[0] + " " + second[1] + " " + second[2]).c_str(), 1);
  Target target({kLoop, "1", "1000000000", stop.string()}, dir, "target");
  ::unsetenv("ATTACH_LOOP_EXEC");
  ASSERT_TRUE(target.ready()) << slurp(target.err);
  const pid_t target_pid = target.pid;
  const fs::path artifact = dir / "a.msgpack", err = dir / "attach.err";
  const std::string out = target.out;
  // Detached (SIGINT) while the exec'd image runs: once it printed its own "ready" line.
  const auto r = run(attach_in_background(target.pid, "-o '" + artifact.string() + "'", err) + "touch '" +
                     stop.string() + "'; for i in $(seq 600); do [ \"$(grep -c ready '" + out +
                     "')\" = 2 ] && break; sleep 0.05; done; sleep 0.3; kill -INT $a; wait $a");
  EXPECT_EQ(r.status, 130) << slurp(err.string());
  const std::string said = slurp(err.string());
  EXPECT_NE(said.find("detached on signal 2"), std::string::npos) << said;
  EXPECT_EQ(said.find("detach:"), std::string::npos) << said;  // memtrack_attach_stop ran in the new image
  EXPECT_EQ(::kill(target.pid, 0), 0) << "the exec'd image ended before the detach";
  std::smatch m;
  ASSERT_TRUE(std::regex_search(said, m, std::regex(R"(: ([0-9]+) events from)"))) << said;
  const long events = std::stol(m[1].str());
  // It goes on unrecorded to its end, with its own answer and nothing on its stderr (no word from a preload
  // whose recorder is gone).
  EXPECT_EQ(target.wait(), 0) << slurp(target.err);
  const std::string printed = slurp(out);
  const auto second_ready = printed.find("ready ", printed.find("checksum "));
  ASSERT_NE(second_ready, std::string::npos) << printed;
  EXPECT_EQ(checksum_of(printed.substr(second_ready)), expected) << printed;
  EXPECT_EQ(slurp(target.err), "");
  // The artifact: the new image's Exec, and its events after it.
  const auto context = run(memtrack_bin() + " decode '" + artifact.string() + "' --context-only");
  const std::string exec_of = "{\"context\":\"Exec\",\"pid\":" + std::to_string(target_pid) + ",\"event\":";
  const std::size_t argv_at = context.out.find("\"argv\":[\"" + kLoop + "\",\"2\",\"4000000\"]");
  ASSERT_NE(argv_at, std::string::npos) << context.out.substr(0, 3000);
  const std::size_t line = context.out.rfind('\n', argv_at) + 1;  // npos + 1 == 0: the first line
  ASSERT_EQ(context.out.compare(line, exec_of.size(), exec_of), 0) << context.out.substr(line, 300);
  EXPECT_GT(events, std::stol(context.out.substr(line + exec_of.size())) + 1000) << said;
  const auto stats = run(memtrack_stats_command(artifact.string()));
  EXPECT_EQ(stats.status, 0) << stats.err;
}

TEST(Attach, SigintDetachesAndLiveViewsTheAttachedRecording) {
  const fs::path dir = test_dir("attach");
  const fs::path stop = dir / "stop";
  Target target({kLoop, "1", "1000000000", stop.string()}, dir, "target");
  ASSERT_TRUE(target.ready()) << slurp(target.err);
  const fs::path artifact = dir / "a.msgpack", err = dir / "attach.err", status = dir / "attach.status";
  // No --duration: SIGINT (what Ctrl-C sends) ends it, after `memtrack live` read two updates from it.
  const auto r = run("" + memtrack_bin() + " attach " + std::to_string(target.pid) + " -o '" + artifact.string() +
                     "' 2>'" + err.string() + "' & a=$!; sleep 1; timeout 10 " + memtrack_bin() +
                     " live $a </dev/null | head -2; kill -INT $a; wait $a; echo $? >'" + status.string() + "'");
  EXPECT_NE(r.out.find("memtrack live: "), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find(" events "), std::string::npos) << r.out;
  EXPECT_EQ(slurp(status.string()), "130\n") << slurp(err.string());
  EXPECT_NE(slurp(err.string()).find("detached on signal 2"), std::string::npos) << slurp(err.string());
  EXPECT_EQ(libc_entry_bytes(target.pid, "malloc"), own_entry_bytes("malloc"));
  const auto stats = run(memtrack_stats_command(artifact.string()));
  EXPECT_EQ(stats.status, 0) << stats.err;
  EXPECT_NE(stats.out.find("peak since attach"), std::string::npos) << stats.out;
  // The line may wrap: compare with the whitespace collapsed.
  const std::string flat = std::regex_replace(stats.out, std::regex(R"(\s+)"), " ");
  EXPECT_NE(flat.find("frees of blocks from before the recording (not errors)"), std::string::npos) << stats.out;
  std::ofstream(stop.string()) << "stop\n";
  EXPECT_EQ(target.wait(), 0) << slurp(target.err);
}

TEST(Attach, MissingPidIsRefused) {
  // A pid that just ended (reaped): nothing runs under it.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  const auto r = run(memtrack_bin() + " attach " + std::to_string(child) + " --duration 1");
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("no such process: " + std::to_string(child)), std::string::npos) << r.err;
}

TEST(Attach, ProcessOfAnotherUserIsRefusedWithTheReason) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to run the tool as nobody";
  const fs::path dir = test_dir("attach");
  fs::permissions(dir, fs::perms::all);  // nobody writes its output here
  const fs::path stop = dir / "stop";
  Target target({kLoop, "1", "1000000000", stop.string()}, dir, "target");  // root's
  ASSERT_TRUE(target.ready()) << slurp(target.err);
  const std::string out = (dir / "nobody.out").string(), err = (dir / "nobody.err").string();
  const pid_t tool = ::fork();
  if (tool == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
    ::dup2(o, 1);
    ::dup2(e, 2);
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(99);
    const std::string bin = memtrack_bin(), pid = std::to_string(target.pid), output = (dir / "n.msgpack").string();
    ::execl(bin.c_str(), bin.c_str(), "attach", pid.c_str(), "-o", output.c_str(), "--duration", "1",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(tool, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 4) << slurp(err);
  EXPECT_NE(slurp(err).find("belongs to another user (uid 0)"), std::string::npos) << slurp(err);
  EXPECT_FALSE(fs::exists(dir / "n.msgpack"));
  std::ofstream(stop.string()) << "stop\n";
  EXPECT_EQ(target.wait(), 0);
  EXPECT_EQ(slurp(target.err), "");
}

TEST(Attach, RootAttachesToAProcessOfAnotherUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root, to run the program as nobody";
  const fs::path dir = test_dir("attach");
  const fs::path stop = dir / "stop";
  Target target({kLoop, "2", "1000000000", stop.string()}, dir, "nobody", 65534);
  ASSERT_TRUE(target.ready()) << slurp(target.err);
  // The ring reaches it as an fd over the attach socket: it could not open the recorder's /proc/PID/fd.
  const fs::path artifact = dir / "a.msgpack";
  const auto r =
      run(memtrack_bin() + " attach " + std::to_string(target.pid) + " -o '" + artifact.string() + "' --duration 0.5");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_GT(threads_in(artifact).size(), 1u) << r.err;
  EXPECT_EQ(libc_entry_bytes(target.pid, "malloc"), own_entry_bytes("malloc"));
  std::ofstream(stop.string()) << "stop\n";
  EXPECT_EQ(target.wait(), 0) << slurp(target.err);
  EXPECT_EQ(slurp(target.err), "");
}

TEST(Attach, StaticProcessIsRefused) {
  const fs::path dir = test_dir("attach");
  const fs::path stop = dir / "stop";
  Target target({std::string(MEMTRACK_PROGRAMS_DIR) + "/attach_static", stop.string()}, dir, "static");
  ASSERT_TRUE(target.ready()) << slurp(target.err);
  const auto r = run(memtrack_bin() + " attach " + std::to_string(target.pid) + " -o '" + (dir / "a.msgpack").string() +
                     "' --duration 1");
  EXPECT_EQ(r.status, 5) << r.err;
  EXPECT_NE(r.err.find("is not dynamically linked against glibc"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "a.msgpack"));
  std::ofstream(stop.string()) << "stop\n";
  EXPECT_EQ(target.wait(), 0);
}

TEST(Attach, ProcessRecordedAlreadyIsRefused) {
  const fs::path dir = test_dir("attach");
  const fs::path stop = dir / "stop";
  // Under memtrack record: the preload is loaded already.
  Target recorded(
      {memtrack_bin(), "record", "-q", "-o", (dir / "r.msgpack").string(), kLoop, "1", "1000000000", stop.string()},
      dir, "recorded");
  ASSERT_TRUE(recorded.ready()) << slurp(recorded.err);
  std::smatch m;
  const std::string out = slurp(recorded.out);
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(ready ([0-9]+))")));
  const auto r = run(memtrack_bin() + " attach " + m[1].str() + " -o '" + (dir / "a.msgpack").string() + "'");
  EXPECT_EQ(r.status, 6) << r.err;
  EXPECT_NE(r.err.find("already"), std::string::npos) << r.err;
  std::ofstream(stop.string()) << "stop\n";
  EXPECT_EQ(recorded.wait(), 0) << slurp(recorded.err);
}

}  // namespace
