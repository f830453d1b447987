#include "proc.h"

#include "memtrack/runtime/recorder.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <fstream>

namespace memtrack::runtime {

ProcStat proc_stat(int id) {
  ProcStat st;
  char path[32];
  std::snprintf(path, sizeof path, "/proc/%d/stat", id);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    st.exists = errno != ENOENT && errno != ESRCH;
    return st;
  }
  char buf[512];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  const int read_errno = errno;
  ::close(fd);
  if (n <= 0) {
    st.exists = n < 0 && read_errno != ESRCH;  // an empty read or ESRCH: the process went away meanwhile
    return st;
  }
  buf[n] = '\0';
  const char* paren = std::strrchr(buf, ')');  // the command name may contain spaces and parentheses
  int pgrp = 0;
  st.exists = true;
  if (paren == nullptr || std::sscanf(paren + 1, " %c %d %d %d", &st.state, &st.ppid, &pgrp, &st.session) != 4)
    st.state = '?';
  return st;
}

std::string executable_of(int pid) {
  char path[32];
  std::snprintf(path, sizeof path, "/proc/%d/exe", pid);
  char buf[4096];
  const ssize_t n = ::readlink(path, buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

std::set<int> children_of_us() {
  std::set<int> out;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (const dirent* t = ::readdir(d)) {
      if (t->d_name[0] == '.') continue;
      std::ifstream in(std::string("/proc/self/task/") + t->d_name + "/children");
      int pid = 0;
      while (in >> pid) out.insert(pid);
    }
    ::closedir(d);
  }
  return out;
}

std::string find_command(const std::string& file) {
  if (file.find('/') != std::string::npos) return file;
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/bin:/usr/bin";  // glibc's default (confstr _CS_PATH)
  while (true) {
    const std::size_t colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    const std::string candidate = (dir.empty() ? std::string(".") : std::string(dir)) + "/" + file;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string_view::npos) return {};
    dirs.remove_prefix(colon + 1);
  }
}

}  // namespace memtrack::runtime
