#include "memtrack/runtime/attach_inject.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace memtrack::runtime {
namespace {

struct Mapping {
  std::uint64_t start = 0, end = 0, offset = 0;
  std::string perms, path;
};

std::vector<Mapping> read_maps(pid_t pid) {
  std::vector<Mapping> out;
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(in, line)) {
    Mapping m;
    char perms[8] = {};
    unsigned long long start = 0, end = 0, offset = 0;
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &offset, &path_at) < 4)
      continue;
    m.start = start;
    m.end = end;
    m.offset = offset;
    m.perms = perms;
    if (path_at > 0 && static_cast<std::size_t>(path_at) <= line.size()) m.path = line.substr(path_at);
    out.push_back(std::move(m));
  }
  return out;
}

std::string basename_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// `library`: a path (exact match) or a basename prefix ("libc.so").
bool names(const Mapping& m, const std::string& library) {
  if (m.path.empty() || m.path[0] != '/') return false;
  if (library.find('/') != std::string::npos) return m.path == library;
  return basename_of(m.path).starts_with(library);
}

const Mapping* find_library(const std::vector<Mapping>& maps, const std::string& library) {
  for (const Mapping& m : maps)
    if (m.offset == 0 && names(m, library)) return &m;
  return nullptr;
}

// The file's exported, default-version definition of `symbol`, relative to its first PT_LOAD's page: 0 when
// the file has none (or is not a 64-bit ELF file).
std::uint64_t symbol_offset(pid_t pid, const std::string& path, const std::string& symbol) {
  int fd = ::open(("/proc/" + std::to_string(pid) + "/root" + path).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct stat st {};
  void* map = MAP_FAILED;
  if (::fstat(fd, &st) == 0 && st.st_size >= static_cast<off_t>(sizeof(Elf64_Ehdr)))
    map = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return 0;
  const auto* base = static_cast<const std::uint8_t*>(map);
  const auto len = static_cast<std::size_t>(st.st_size);
  std::uint64_t found = 0;
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
  if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64 &&
      eh->e_shoff + std::uint64_t{eh->e_shnum} * sizeof(Elf64_Shdr) <= len &&
      eh->e_phoff + std::uint64_t{eh->e_phnum} * sizeof(Elf64_Phdr) <= len) {
    std::uint64_t first_load = ~std::uint64_t{0};
    const auto* ph = reinterpret_cast<const Elf64_Phdr*>(base + eh->e_phoff);
    for (int i = 0; i < eh->e_phnum; ++i)
      if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < first_load) first_load = ph[i].p_vaddr & ~std::uint64_t{4095};
    const auto* sh = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
    const Elf64_Shdr* dynsym = nullptr;
    const Elf64_Shdr* versym = nullptr;
    for (int i = 0; i < eh->e_shnum; ++i) {
      if (sh[i].sh_type == SHT_DYNSYM) dynsym = &sh[i];
      if (sh[i].sh_type == SHT_GNU_versym) versym = &sh[i];
    }
    if (dynsym != nullptr && dynsym->sh_link < eh->e_shnum && dynsym->sh_offset + dynsym->sh_size <= len &&
        sh[dynsym->sh_link].sh_offset + sh[dynsym->sh_link].sh_size <= len && first_load != ~std::uint64_t{0}) {
      const auto* syms = reinterpret_cast<const Elf64_Sym*>(base + dynsym->sh_offset);
      const std::size_t n = dynsym->sh_size / sizeof(Elf64_Sym);
      const char* strs = reinterpret_cast<const char*>(base + sh[dynsym->sh_link].sh_offset);
      const std::size_t strs_len = sh[dynsym->sh_link].sh_size;
      const std::uint16_t* versions = nullptr;
      if (versym != nullptr && versym->sh_offset + n * 2 <= len)
        versions = reinterpret_cast<const std::uint16_t*>(base + versym->sh_offset);
      for (std::size_t i = 0; i < n && found == 0; ++i) {
        const Elf64_Sym& s = syms[i];
        if (s.st_shndx == SHN_UNDEF || s.st_value == 0 || s.st_name >= strs_len) continue;
        if (ELF64_ST_TYPE(s.st_info) != STT_FUNC && ELF64_ST_TYPE(s.st_info) != STT_OBJECT) continue;
        if (versions != nullptr && (versions[i] & 0x8000) != 0) continue;  // a hidden (old) version
        if (symbol == strs + s.st_name) found = s.st_value - first_load;
      }
    }
  }
  ::munmap(map, len);
  return found;
}

std::string proc_status_field(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with(field + ":")) {
      std::string v = line.substr(field.size() + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  return {};
}

std::string read_small(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

std::string pid_word(pid_t pid) { return "process " + std::to_string(pid); }

bool process_exists(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

std::vector<pid_t> threads_of(pid_t pid) {
  std::vector<pid_t> out;
  DIR* d = ::opendir(("/proc/" + std::to_string(pid) + "/task").c_str());
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d))
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9') out.push_back(static_cast<pid_t>(std::atoi(e->d_name)));
  ::closedir(d);
  // The main thread first: it is the one a single-threaded program has.
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i] == pid) std::swap(out[i], out[0]);
  return out;
}

constexpr long kErestartsys = 512, kErestartnointr = 513, kErestartnohand = 514, kErestartRestartblock = 516;

// A thread stopped here may make calls that allocate and take the loader's lock (see attach_inject.h).
bool safe_point(const user_regs_struct& r, const std::vector<Mapping>& maps) {
  for (const Mapping& m : maps) {
    if (r.rip < m.start || r.rip >= m.end) continue;
    const std::string b = basename_of(m.path);
    const bool locked_code = b.starts_with("libc.so") || b.starts_with("ld-linux") || b.starts_with("libpthread");
    if (!locked_code) return true;
    // Inside the C library: only when blocked in a system call (interrupted by our stop), not a memory one.
    const long nr = static_cast<long>(r.orig_rax), ret = static_cast<long>(r.rax);
    const bool interrupted = ret == -EINTR || ret == -kErestartsys || ret == -kErestartnointr ||
                             ret == -kErestartnohand || ret == -kErestartRestartblock;
    const bool memory = nr == SYS_mmap || nr == SYS_munmap || nr == SYS_mremap || nr == SYS_brk || nr == SYS_madvise ||
                        nr == SYS_mprotect;
    return nr >= 0 && interrupted && !memory;
  }
  return true;  // anonymous code (a JIT's): not the C library's
}

// Waits for `tid`'s next stop, passing on every signal but `until` (delivered to the thread as usual).
// Returns the wait status of the stop by `until` or by an event stop (until == 0).
int wait_stop(pid_t tid, int until) {
  for (;;) {
    int st = 0;
    if (::waitpid(tid, &st, __WALL) < 0) {
      if (errno == EINTR) continue;
      throw AttachError("waitpid on thread " + std::to_string(tid) + ": " + std::strerror(errno), 1);
    }
    if (WIFEXITED(st) || WIFSIGNALED(st)) throw AttachError("the process ended while being attached to", 1);
    if (!WIFSTOPPED(st)) continue;
    const int sig = WSTOPSIG(st);
    const bool event_stop = (st >> 16) == PTRACE_EVENT_STOP;
    if (event_stop && until == 0) return st;
    if (!event_stop && sig == until && until != 0) return st;
    // A signal meant for the program: delivered (its handler runs, then our call goes on); a group stop: go on.
    ::ptrace(PTRACE_CONT, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(event_stop ? 0 : sig)));
  }
}

void write_memory(pid_t pid, std::uint64_t addr, const void* data, std::size_t n) {
  iovec local{const_cast<void*>(data), n};
  iovec remote{reinterpret_cast<void*>(addr), n};
  if (::process_vm_writev(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n)) return;
  // process_vm_writev refuses read-only pages only; a stack is writable, so try /proc/PID/mem once more.
  const int fd = ::open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDWR | O_CLOEXEC);
  const bool ok = fd >= 0 && ::pwrite(fd, data, n, static_cast<off_t>(addr)) == static_cast<ssize_t>(n);
  if (fd >= 0) ::close(fd);
  if (!ok)
    throw AttachError("cannot write the call's arguments into the process: " + std::string(std::strerror(errno)), 1);
}

struct ExtendedState {
  std::vector<std::uint8_t> bytes = std::vector<std::uint8_t>(16384);
  iovec io{};
  unsigned type = NT_X86_XSTATE;
};

void save_extended(pid_t tid, ExtendedState& x) {
  x.io = {x.bytes.data(), x.bytes.size()};
  if (::ptrace(PTRACE_GETREGSET, tid, reinterpret_cast<void*>(static_cast<long>(NT_X86_XSTATE)), &x.io) == 0) return;
  x.type = NT_PRFPREG;
  x.io = {x.bytes.data(), sizeof(user_fpregs_struct)};
  if (::ptrace(PTRACE_GETREGSET, tid, reinterpret_cast<void*>(static_cast<long>(NT_PRFPREG)), &x.io) != 0)
    throw AttachError("cannot read the thread's floating-point registers: " + std::string(std::strerror(errno)), 1);
}

void restore_extended(pid_t tid, ExtendedState& x) {
  ::ptrace(PTRACE_SETREGSET, tid, reinterpret_cast<void*>(static_cast<long>(x.type)), &x.io);
}

std::uint64_t call_on(pid_t pid, pid_t tid, const user_regs_struct& saved, std::uint64_t fn, const RemoteCall& call) {
  user_regs_struct r = saved;
  std::uint64_t sp = (saved.rsp - 256) & ~std::uint64_t{15};  // below the red zone
  std::vector<std::uint64_t> args;
  for (const std::string& s : call.strings) {
    sp = (sp - (s.size() + 1)) & ~std::uint64_t{15};
    write_memory(pid, sp, s.c_str(), s.size() + 1);
    args.push_back(sp);
  }
  for (const std::uint64_t v : call.integers) args.push_back(v);
  if (args.size() > 6) throw AttachError("a remote call takes at most 6 arguments", 1);
  sp -= 8;  // the return address 0: the call ends in a SIGSEGV at address 0, which the loop below catches
  const std::uint64_t zero = 0;
  write_memory(pid, sp, &zero, 8);
  unsigned long long* const regs[] = {&r.rdi, &r.rsi, &r.rdx, &r.rcx, &r.r8, &r.r9};
  for (std::size_t i = 0; i < args.size(); ++i) *regs[i] = args[i];
  r.rsp = sp;
  r.rip = fn;
  r.rax = 0;
  r.orig_rax = ~0ull;  // not in a system call: the kernel must not restart one over our call
  if (::ptrace(PTRACE_SETREGS, tid, nullptr, &r) != 0)
    throw AttachError("cannot set the thread's registers: " + std::string(std::strerror(errno)), 1);
  ::ptrace(PTRACE_CONT, tid, nullptr, nullptr);
  for (;;) {
    wait_stop(tid, SIGSEGV);
    user_regs_struct after{};
    ::ptrace(PTRACE_GETREGS, tid, nullptr, &after);
    if (after.rip == 0) return after.rax;
    // A fault of the program's own while our call ran is not ours to swallow, but its registers are ours now:
    // put the thread back as it was and say so.
    ::ptrace(PTRACE_SETREGS, tid, nullptr, &saved);
    throw AttachError(call.symbol + " faulted in the process at 0x" +
                          (std::ostringstream() << std::hex << after.rip).str() + "; the process was left as it was",
                      1);
  }
}

}  // namespace

std::string ptrace_refusal(pid_t pid) {
  const std::string uid_line = proc_status_field(pid, "Uid");
  std::istringstream uids(uid_line);
  long real = -1, effective = -1;
  uids >> real >> effective;
  const std::string tracer = proc_status_field(pid, "TracerPid");
  if (!tracer.empty() && tracer != "0")
    return pid_word(pid) + " is traced already (by process " + tracer + ": a debugger?)";
  std::uint64_t caps = 0;
  std::istringstream(proc_status_field(::getpid(), "CapEff")) >> std::hex >> caps;
  const bool cap_ptrace = (caps >> 19) & 1;  // CAP_SYS_PTRACE
  if (real != static_cast<long>(::geteuid()) && !cap_ptrace)
    return pid_word(pid) + " belongs to another user (uid " + std::to_string(real) +
           ") and this one lacks CAP_SYS_PTRACE (run as that user, or as root)";
  const std::string yama = read_small("/proc/sys/kernel/yama/ptrace_scope");
  if (!yama.empty() && yama != "0" && !(yama == "1" && cap_ptrace))
    return "Yama's ptrace_scope is " + yama + " (/proc/sys/kernel/yama/ptrace_scope): only " +
           (yama == "1" ? std::string("a parent may trace its children; run as root, or set it to 0")
                        : std::string(yama == "2" ? "CAP_SYS_PTRACE may trace" : "no process may trace"));
  if (!cap_ptrace) return "ptrace is not permitted (the process is not dumpable: setuid, or PR_SET_DUMPABLE 0)";
  return "ptrace is not permitted (a container without CAP_SYS_PTRACE, or a security module)";
}

void check_attachable(pid_t pid) {
  if (pid <= 0 || !process_exists(pid)) throw AttachError("no such process: " + std::to_string(pid), kAttachNoProcess);
  const std::string state = proc_status_field(pid, "State");
  if (state.starts_with("Z")) throw AttachError(pid_word(pid) + " has exited (a zombie)", kAttachNoProcess);
  char exe[4096];
  const ssize_t n = ::readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), exe, sizeof exe - 1);
  if (n < 0 && errno == EACCES) throw AttachError(ptrace_refusal(pid), kAttachNotPermitted);
  if (n < 0 && errno == ENOENT) throw AttachError(pid_word(pid) + " is a kernel thread", kAttachUnsupported);
  const std::vector<Mapping> maps = read_maps(pid);
  if (maps.empty()) throw AttachError(ptrace_refusal(pid), kAttachNotPermitted);
  for (const Mapping& m : maps)
    if (basename_of(m.path).starts_with("libmemtrack-preload") || basename_of(m.path).starts_with("libmemtrack-attach"))
      throw AttachError(pid_word(pid) + " runs with " + basename_of(m.path) +
                            " already: it is (or was) recorded by memtrack record or an earlier attach, and memtrack "
                            "attaches once per process",
                        kAttachAlreadyRecorded);
  const Mapping* libc = find_library(maps, "libc.so");
  if (libc == nullptr)
    throw AttachError(pid_word(pid) +
                          " is not dynamically linked against glibc (no libc.so in its maps: static, or "
                          "another C library); attach needs glibc's dlopen",
                      kAttachUnsupported);
  if (symbol_offset(pid, libc->path, "dlopen") == 0)
    throw AttachError(pid_word(pid) + "'s " + libc->path + " exports no dlopen (glibc older than 2.34?)",
                      kAttachUnsupported);
  const int fd = ::open(("/proc/" + std::to_string(pid) + "/exe").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    Elf64_Ehdr eh{};
    const bool elf64 = ::pread(fd, &eh, sizeof eh, 0) == static_cast<ssize_t>(sizeof eh) &&
                       std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
                       eh.e_machine == EM_X86_64;
    ::close(fd);
    if (!elf64) throw AttachError(pid_word(pid) + " is not an x86-64 program", kAttachUnsupported);
  }
}

InjectStats inject_calls(pid_t pid, std::vector<RemoteCall>& calls, int timeout_ms) {
  using clock = std::chrono::steady_clock;
  InjectStats stats;
  const auto deadline = clock::now() + std::chrono::milliseconds(timeout_ms);
  std::vector<Mapping> maps = read_maps(pid);
  pid_t chosen = 0;
  user_regs_struct saved{};
  clock::time_point stopped_at{};
  while (chosen == 0) {
    const std::vector<pid_t> tids = threads_of(pid);
    if (tids.empty()) throw AttachError("no such process: " + std::to_string(pid), kAttachNoProcess);
    for (const pid_t tid : tids) {
      if (::ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
        if (errno == ESRCH) continue;  // the thread ended meanwhile
        if (errno == EPERM) throw AttachError(ptrace_refusal(pid), kAttachNotPermitted);
        throw AttachError("ptrace(PTRACE_SEIZE, " + std::to_string(tid) + "): " + std::strerror(errno), 1);
      }
      ::ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr);
      try {
        wait_stop(tid, 0);
      } catch (const AttachError&) {
        if (!process_exists(pid)) throw AttachError(pid_word(pid) + " ended while being attached to", kAttachNoProcess);
        continue;  // the thread ended
      }
      stopped_at = clock::now();
      ++stats.tries;
      user_regs_struct r{};
      if (::ptrace(PTRACE_GETREGS, tid, nullptr, &r) == 0 && safe_point(r, maps)) {
        chosen = tid;
        saved = r;
        break;
      }
      ::ptrace(PTRACE_DETACH, tid, nullptr, nullptr);
    }
    if (chosen != 0) break;
    if (clock::now() > deadline)
      throw AttachError("no thread of " + pid_word(pid) + " came to a safe point (outside the C library) in " +
                            std::to_string(timeout_ms) + " ms; try again",
                        1);
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    maps = read_maps(pid);
  }
  stats.tid = chosen;
  ExtendedState extended;
  try {
    save_extended(chosen, extended);
    for (RemoteCall& call : calls) {
      maps = read_maps(pid);
      const Mapping* lib = find_library(maps, call.library);
      if (lib == nullptr) throw AttachError(pid_word(pid) + " has no " + call.library + " mapped", 1);
      const std::uint64_t off = symbol_offset(pid, lib->path, call.symbol);
      if (off == 0) throw AttachError(lib->path + " exports no " + call.symbol, 1);
      if (call.before) call.before(chosen);
      call.result = call_on(pid, chosen, saved, lib->start + off, call);
      if (call.must_not_return_0 && call.result == 0)
        throw AttachError(call.symbol + "(\"" + (call.strings.empty() ? "" : call.strings[0]) +
                              "\") failed in the process (a library it needs is missing there, or another C library)",
                          1);
    }
  } catch (...) {
    ::ptrace(PTRACE_SETREGS, chosen, nullptr, &saved);
    restore_extended(chosen, extended);
    ::ptrace(PTRACE_DETACH, chosen, nullptr, nullptr);
    throw;
  }
  ::ptrace(PTRACE_SETREGS, chosen, nullptr, &saved);
  restore_extended(chosen, extended);
  ::ptrace(PTRACE_DETACH, chosen, nullptr, nullptr);
  stats.pause_ms = std::chrono::duration<double, std::milli>(clock::now() - stopped_at).count();
  return stats;
}

std::uint64_t remote_symbol(pid_t pid, const std::string& library, const std::string& symbol) {
  const std::vector<Mapping> maps = read_maps(pid);
  const Mapping* lib = find_library(maps, library);
  if (lib == nullptr) return 0;
  const std::uint64_t off = symbol_offset(pid, lib->path, symbol);
  return off == 0 ? 0 : lib->start + off;
}

bool read_remote(pid_t pid, std::uint64_t addr, void* out, std::size_t n) {
  iovec local{out, n};
  iovec remote{reinterpret_cast<void*>(addr), n};
  return ::process_vm_readv(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
}

OtherThreadsStopped::~OtherThreadsStopped() { release(); }

void OtherThreadsStopped::release() {
  for (const pid_t tid : tids_) ::ptrace(PTRACE_DETACH, tid, nullptr, nullptr);
  tids_.clear();
}

void OtherThreadsStopped::stop(pid_t pid, pid_t chosen,
                               const std::vector<std::pair<std::uint64_t, std::uint64_t>>& spans) {
  auto inside = [&](std::uint64_t pc) {
    for (const auto& [at, len] : spans)
      if (pc > at && pc < at + len) return true;
    return false;
  };
  // Until a pass meets no new thread (one may be created while we stop the others; a stopped one cannot).
  for (bool again = true; again;) {
    again = false;
    for (const pid_t tid : threads_of(pid)) {
      if (tid == chosen || std::find(tids_.begin(), tids_.end(), tid) != tids_.end()) continue;
      if (::ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
        if (errno == ESRCH) continue;
        throw AttachError("ptrace(PTRACE_SEIZE, " + std::to_string(tid) + "): " + std::strerror(errno), 1);
      }
      ::ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr);
      try {
        wait_stop(tid, 0);
      } catch (const AttachError&) {
        continue;  // the thread ended
      }
      tids_.push_back(tid);
      again = true;
      user_regs_struct r{};
      for (int steps = 0; ::ptrace(PTRACE_GETREGS, tid, nullptr, &r) == 0 && inside(r.rip); ++steps) {
        if (steps == 1000)
          throw AttachError("thread " + std::to_string(tid) + " stays inside an allocator's entry; try again", 1);
        ::ptrace(PTRACE_SINGLESTEP, tid, nullptr, nullptr);
        int st = 0;
        if (::waitpid(tid, &st, __WALL) < 0 || !WIFSTOPPED(st))
          throw AttachError("thread " + std::to_string(tid) + " ended while being stepped", 1);
        if (WSTOPSIG(st) != SIGTRAP) {
          // A signal arrived: deliver it with the next step (its handler runs, stepped, outside the span).
          ::ptrace(PTRACE_SINGLESTEP, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(WSTOPSIG(st))));
          ::waitpid(tid, &st, __WALL);
        }
        ++stepped_;
      }
    }
  }
}

}  // namespace memtrack::runtime
