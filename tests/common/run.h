// Running the built `memtrack` (or any command) from tests: exit status, stdout and stderr captured.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace memtrack::testing {

struct RunResult {
  int status = -1;  // exit status, or 128+signal
  std::string out, err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A private scratch directory per test process, removed by the OS's tmp cleanup if a test crashes.
inline std::string scratch_dir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/memtrack-test-XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    return std::string(d ? d : "/tmp");
  }();
  return dir;
}

// A fresh directory for the running test: TMPDIR/memtrack_TAG_<test name>_<pid>, emptied first.
inline std::filesystem::path test_dir(const std::string& tag) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) /
                              ("memtrack_" + tag + "_" + info->name() + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Runs argv (argv[0] a path, no shell, no PATH search) with stdout to `out` and stderr to `err`; its exit
// status, or 128+signal.
inline int spawn(std::vector<std::string> argv, const std::string& out, const std::string& err) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> a;
  for (std::string& s : argv) a.push_back(s.data());
  a.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, a[0], &fa, nullptr, a.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (spawned != 0) return -1;
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Runs `command` with /bin/sh; stdout and stderr go to files in the scratch dir and are read back.
inline RunResult run(const std::string& command) {
  const std::string out = scratch_dir() + "/run.out", err = scratch_dir() + "/run.err";
  const std::string full = "(" + command + ") >" + out + " 2>" + err;
  const int raw = std::system(full.c_str());
  RunResult r;
  if (raw != -1 && WIFEXITED(raw)) r.status = WEXITSTATUS(raw);
  if (raw != -1 && WIFSIGNALED(raw)) r.status = 128 + WTERMSIG(raw);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

inline std::string memtrack_bin() { return std::string(MEMTRACK_BIN_DIR) + "/memtrack"; }

// The shell command `memtrack stats 'FILE' ARGS`. Under ThreadSanitizer the artifact goes through a pipe (not
// seekable: no index, so the sequential reader): the indexed reader hands frames between oneTBB's threads
// through libtbb's own synchronization, which ThreadSanitizer cannot see in Debian's uninstrumented libtbb,
// and its reports (false positives) make `stats` of a many-frame artifact take many minutes. Same figures.
inline std::string memtrack_stats_command(const std::string& file, const std::string& args = "") {
#if defined(__SANITIZE_THREAD__)
  return "cat '" + file + "' | " + memtrack_bin() + " stats - " + args;
#else
  return memtrack_bin() + " stats '" + file + "' " + args;
#endif
}

}  // namespace memtrack::testing
