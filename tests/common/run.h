// Running the built `memtrack` (or any command) from tests: exit status, stdout and stderr captured.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

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

}  // namespace memtrack::testing
