// What the recorder reads of /proc, in one place: a process's state, parent and session (/proc/<pid>/stat), its
// executable and the recorder's own children. (The PATH search, find_command, is declared in recorder.h.)
#pragma once

#include <set>
#include <string>

namespace memtrack::runtime {

struct ProcStat {
  bool exists = false;  // false: no such process or thread
  char state = '?';     // '?': it exists but its stat file could not be read or parsed
  int ppid = 0;
  int session = 0;
};

// /proc/<id>/stat of a process or thread (every thread id has one). Allocation-free.
ProcStat proc_stat(int id);

// Still running: exists and is neither a zombie nor dead.
[[nodiscard]] inline bool running(const ProcStat& st) { return st.exists && st.state != 'Z' && st.state != 'X'; }

// The target of /proc/<pid>/exe, or empty.
std::string executable_of(int pid);

// The recorder's children: the command and the orphans re-parented to it (it is a subreaper), from every
// thread's children list (a re-parented orphan may be listed under any of its threads).
std::set<int> children_of_us();

}  // namespace memtrack::runtime
