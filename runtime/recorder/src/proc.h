// What the recorder reads of /proc, in one place: a process's state, parent and session (/proc/<pid>/stat), its
// executable and the recorder's own children. (The PATH search, find_command, is declared in recorder.h.)
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "memtrack/codec/context.h"

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

// Resident memory (docs/RUNTIME.md, "Resident memory"). read_statm and read_status_memory read one file
// through a descriptor the caller keeps open (pread at offset 0: no open per sample) and allocate nothing. A
// descriptor of /proc/<pid>/...
// stays bound to the process it was opened for: after the process ends it reads nothing, never a newer
// process that took the pid.

// /proc/<pid>/statm: resident and shared (file + shmem) bytes, the cheapest of the files: about a tenth of a
// status read, and smaps_rollup's cost grows with resident memory (bench/proc_read_cost.c; the table in
// docs/RUNTIME.md, "Resident memory"). False once the process has ended (a zombie's statm is all zeros).
struct Statm {
  std::uint64_t resident = 0, shared = 0;
};
bool read_statm(int fd, Statm& out);

// /proc/<pid>/status: RssAnon, RssFile, RssShmem, VmSwap and VmHWM in bytes. False once the process has ended
// (a zombie's status has no Vm lines) or when /proc hides them.
struct StatusMemory {
  std::uint64_t anon = 0, file = 0, shmem = 0, swap = 0, hwm = 0;
};
bool read_status_memory(int fd, StatusMemory& out);

// Resident bytes of the mappings of /proc/<pid>/maps whose path contains `name` (memtrack's memfds:
// "memfd:memtrack-"), from /proc/<pid>/pagemap's bits over their pages: readable by the process's owner
// without privileges (only the frame numbers are hidden). `shared`: pages of the file (bit 61), which status
// counts as RssShmem; `anon`: private copies, RssAnon. Zero when there is none or it cannot be read. Shared
// mappings whose path also contains `skip_shared` (when not null) are not read: the preload's shared view of
// its tables (runtime/preload/stacks.cpp, map_tables), which it only punches holes through and never touches,
// so no page of it is ever present, and reading its entries would double the scan. `scratch` holds pagemap
// entries between calls. `scan` (the default) asks the kernel for the present pages as ranges (the PAGEMAP_SCAN
// ioctl of Linux 6.7), so a sparse mapping such as the tables (104 MiB of address space, a few hundred pages
// touched in a short process) costs its present ranges, not its size; on a kernel without it, and with
// `entries`, one 8-byte pagemap entry per page is read. Both give the same counts.
struct MappingResident {
  std::uint64_t anon = 0, shared = 0;
};
enum class PagemapRead { scan, entries };
MappingResident resident_bytes_of_mapping(int pid, const char* name, const char* skip_shared,
                                          std::vector<std::uint64_t>& scratch, PagemapRead how = PagemapRead::scan);

// A snapshot of the resident pages of the process's writable private anonymous mappings (docs/RUNTIME.md,
// "Resident pages"): from /proc/<pid>/maps, every "rw?p" mapping without a file (the heap, anonymous mmaps,
// named anonymous mappings; not the stack, files, or shared memory such as memtrack's ring), with
// /proc/<pid>/pagemap's present bit (63) of each page into `out` (its pid, event and timestamp untouched;
// `scratch` holds pagemap entries between calls). Costs one 8-byte pagemap entry per mapped page, read 8,192
// at a time. False, `out` undefined, when maps or pagemap cannot be read: the process ended, or the recorder
// lacks PTRACE_MODE_READ over it (a process that made itself non-dumpable).
bool read_anon_pages(int pid, codec::ResidentPages& out, std::vector<std::uint64_t>& scratch);

}  // namespace memtrack::runtime
