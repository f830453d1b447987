// Processes and images (docs/RUNTIME.md, "Processes, exec, threads, signals" and "The program's environment"):
// the lifecycle notes a tracked image writes (NoteExec when it attaches, NoteExit from exit(), from _exit() and
// for each child it reaps, NoteUntracked for an image it starts that cannot be tracked), and the environment:
// the program's view of it has no LD_PRELOAD entry of ours and no MEMTRACK_RING, and every child gets both back
// through the hooks of the exec family, posix_spawn, system and popen. Nothing here runs per event.
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "memtrack/runtime/image_check.h"
#include "patch/sites.h"
#include "resolve.h"
#include "ring_client.h"

extern char** environ;

namespace memtrack::preload {
namespace {

// "MEMTRACK_RING=<path>", "MEMTRACK_MESSAGES=<path>" and "LD_PRELOAD=<this library>", as the recorder (or the
// parent image) gave them, for the children's environments. Static: set once per image in begin_image, before
// it records.
constexpr size_t kEnvBytes = PATH_MAX + 32;
constexpr size_t kRingPrefix = 14;      // strlen("MEMTRACK_RING=")
constexpr size_t kMessagesPrefix = 18;  // strlen("MEMTRACK_MESSAGES=")
constinit char g_env_ring[kEnvBytes];
constinit char g_env_messages[kEnvBytes];  // empty when the recorder named no messages channel
constinit char g_env_preload[kEnvBytes];
// The program's own LD_PRELOAD ("LD_PRELOAD=<the rest>"), when it had entries besides ours.
constinit char g_env_user_preload[kEnvBytes];
constinit bool g_env_ready = false;

// The image's executable and command line, the NoteExec payload. Static: written once per image at attach.
constexpr size_t kNoteBytes = 10 * 1024 + PATH_MAX;
constinit char g_note[kNoteBytes];

bool copy_env(char* dst, const char* prefix, const char* value, size_t value_len) {
  const size_t p = strlen(prefix);
  if (p + value_len + 1 > kEnvBytes) return false;
  memcpy(dst, prefix, p);
  memcpy(dst + p, value, value_len);
  dst[p + value_len] = '\0';
  return true;
}

// Takes our two variables out of environ (in place: no allocation, the array keeps its storage).
void take_environment() {
  if (environ == nullptr) return;
  const char* ring = nullptr;
  const char* messages = nullptr;
  const char* preload = nullptr;
  for (char** e = environ; *e != nullptr; ++e) {
    if (starts_with(*e, "MEMTRACK_RING=")) ring = *e + kRingPrefix;
    if (starts_with(*e, "MEMTRACK_MESSAGES=")) messages = *e + kMessagesPrefix;
    if (starts_with(*e, "LD_PRELOAD=")) preload = *e + 11;
  }
  if (ring == nullptr || preload == nullptr) return;
  // Ours is LD_PRELOAD's first entry (the recorder and child_environment() below put it first); the loader
  // separates entries with ':' or ' '.
  const size_t first = strcspn(preload, ": ");
  const char* rest = preload + first;
  while (*rest == ':' || *rest == ' ') ++rest;
  if (!copy_env(g_env_ring, "MEMTRACK_RING=", ring, strlen(ring)) ||
      !copy_env(g_env_preload, "LD_PRELOAD=", preload, first) ||
      (messages != nullptr && !copy_env(g_env_messages, "MEMTRACK_MESSAGES=", messages, strlen(messages))))
    return;  // too long to keep: leave the environment as it is (children still inherit it)
  const bool user_preload = *rest != '\0' && copy_env(g_env_user_preload, "LD_PRELOAD=", rest, strlen(rest));
  char** out = environ;
  for (char** e = environ; *e != nullptr; ++e) {
    if (starts_with(*e, "MEMTRACK_RING=") || starts_with(*e, "MEMTRACK_MESSAGES=")) continue;
    if (starts_with(*e, "LD_PRELOAD=")) {
      if (user_preload) *out++ = g_env_user_preload;
      continue;
    }
    *out++ = *e;
  }
  *out = nullptr;
  g_env_ready = true;
}

// Reads a whole small file with raw system calls; returns the bytes read (0 on error).
size_t read_file(const char* path, char* buf, size_t cap) {
  const int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC));
  if (fd < 0) return 0;
  size_t n = 0;
  while (n < cap) {
    const long r = syscall(SYS_read, fd, buf + n, cap - n);
    if (r <= 0) break;
    n += static_cast<size_t>(r);
  }
  syscall(SYS_close, fd);
  return n;
}

// exit() and return from main: the last exit handler to run (registered before __libc_start_main registers
// the loader's destructors, so it runs after them), so events of destructors and atexit handlers come
// before the note. Later events of this process (other threads still running while exit() runs) are not
// recorded: the process has ended in the stream.
void exit_note(int status, void*) {
  if (!recording_now()) return;
  // A vfork child that calls exit() (POSIX allows only _exit) runs this in its parent's memory: not our exit.
  if (static_cast<int>(syscall(SYS_getpid)) != g_pid) return;
  // libstdc++'s emergency exception pool (72,704 B, allocated when libstdc++ loads) is freed only by
  // __gnu_cxx::__freeres, which nothing calls at exit: without this call it shows as a leak of every C++
  // program. heaptrack and valgrind call it too. The lookup runs at depth 1, so what dlsym allocates (its
  // error state, in a C program) is not recorded; the call runs at depth 0, so the pool's free is.
  using freeres_fn = void (*)();
  freeres_fn freeres;
  {
    EntryScope scope;
    freeres = reinterpret_cast<freeres_fn>(dlsym(RTLD_DEFAULT, "_ZN9__gnu_cxx9__freeresEv"));
  }
  if (freeres != nullptr) freeres();
  write_note(RingEventKind::NoteExit, g_pid, static_cast<uint64_t>(static_cast<uint32_t>(status)), nullptr, 0,
             runtime::kRingNoteHasStatus);
  g_state.store(kOff, std::memory_order_release);
}

// _exit() and _Exit(): the process ends here, with no exit handler run, so exit_note never sees it. Noted
// before the system call, like exit(): its blocks stop counting at this point of the stream, not when the
// recorder's pidfd poll finds it gone. A vfork child (its parent's memory) writes nothing.
void exit_now_note(int status) {
  if (!recording_now() || static_cast<int>(syscall(SYS_getpid)) != g_pid) return;
  write_note(RingEventKind::NoteExit, g_pid, static_cast<uint64_t>(static_cast<uint32_t>(status)), nullptr, 0,
             runtime::kRingNoteHasStatus);
  g_state.store(kOff, std::memory_order_release);
}

// A tracked process reaped child `pid` with wait status `status`: the child has ended before this point of
// the stream (every event it wrote took its ticket before it died), so its end is noted here, before the
// parent's next event. This places the end of a child killed by a signal, or one that ended without a note of
// its own, exactly among its parent's events. The recorder ignores the note for a pid it does not track (an
// untracked image) and for one whose end is already noted (its own exit note comes first).
// Keeps errno: the wait call's caller reads it.
void reaped_note(pid_t pid, int status) {
  if (pid <= 0 || !recording_now()) return;
  const int saved = errno;
  if (WIFEXITED(status))
    write_note(RingEventKind::NoteExit, pid, static_cast<uint32_t>(WEXITSTATUS(status)), nullptr, 0,
               runtime::kRingNoteHasStatus);
  else if (WIFSIGNALED(status))
    write_note(RingEventKind::NoteExit, pid, static_cast<uint32_t>(WTERMSIG(status)), nullptr, 0,
               runtime::kRingNoteSignal);
  errno = saved;
}

// The real process functions (next_fn, resolve.h). In a vfork child the lookup may wait for the loader's lock
// held by another thread of the parent; it does not deadlock.
enum ProcessFn {
  kExecve,
  kExecvpe,
  kExecveat,
  kFexecve,
  kPosixSpawn,
  kPosixSpawnp,
  kSystem,
  kPopen,
  kWait4,
  kWaitid,
  kProcessFns
};
constexpr const char* kProcessFnNames[kProcessFns] = {"execve",       "execvpe", "execveat", "fexecve", "posix_spawn",
                                                      "posix_spawnp", "system",  "popen",    "wait4",   "waitid"};
constinit std::atomic<void*> g_process_fns[kProcessFns];

template <typename Fn>
Fn real(ProcessFn which) {
  return next_fn<Fn>(g_process_fns[which], kProcessFnNames[which]);
}

// Memory for an exec hook's arrays without malloc (a vfork child shares its parent's heap and locks): a
// buffer in the hook's own stack frame when the arrays fit (a vfork child's stack frames are gone with it),
// else an anonymous mapping, unmapped by the destructor after a failed call (a successful exec replaces the
// address space; only a vfork child's exec leaves the mapping in its parent).
template <size_t kInline>
class HookBuffer {
 public:
  HookBuffer() = default;
  HookBuffer(const HookBuffer&) = delete;
  HookBuffer& operator=(const HookBuffer&) = delete;
  ~HookBuffer() {
    if (map_ != nullptr) syscall(SYS_munmap, map_, bytes_);
  }
  void* get(size_t bytes) {
    if (bytes <= kInline) return inline_;
    void* map = reinterpret_cast<void*>(
        syscall(SYS_mmap, nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (map == MAP_FAILED) return nullptr;
    map_ = map;
    bytes_ = bytes;
    return map;
  }

 private:
  alignas(16) char inline_[kInline];
  void* map_ = nullptr;
  size_t bytes_ = 0;
};

// A child's environment: `envp` (environ if the caller passed that) without our variables, plus
// MEMTRACK_RING, MEMTRACK_MESSAGES and LD_PRELOAD=<ours>[:<the child's LD_PRELOAD>]. With `add` false, `envp`
// as it is: an image that cannot reach the ring is not told of it (it would only say so on its stderr).
class ChildEnv {
 public:
  explicit ChildEnv(char* const* envp, bool add = true) : envp_(const_cast<char**>(envp)) {
    // Not recording: the child is not tracked (and not told).
    if (!add || !g_env_ready || !recording_now()) return;
    size_t n = 0;
    const char* user_preload = nullptr;
    if (envp != nullptr)
      for (; envp[n] != nullptr; ++n)
        if (starts_with(envp[n], "LD_PRELOAD=")) user_preload = envp[n] + 11;
    const size_t ours = strlen(g_env_preload);
    const size_t preload_bytes = ours + (user_preload != nullptr ? 1 + strlen(user_preload) : 0) + 1;
    void* mem = buffer_.get((n + 4) * sizeof(char*) + preload_bytes);
    if (mem == nullptr) return;  // the child starts untracked rather than not at all
    char** out = static_cast<char**>(mem);
    char* preload = reinterpret_cast<char*>(out + n + 4);
    memcpy(preload, g_env_preload, ours);
    if (user_preload != nullptr && *user_preload != '\0') {
      preload[ours] = ':';
      memcpy(preload + ours + 1, user_preload, strlen(user_preload) + 1);
    } else {
      preload[ours] = '\0';
    }
    char** o = out;
    for (size_t i = 0; i < n; ++i) {
      if (starts_with(envp[i], "LD_PRELOAD=") || starts_with(envp[i], "MEMTRACK_RING=") ||
          starts_with(envp[i], "MEMTRACK_MESSAGES="))
        continue;
      *o++ = envp[i];
    }
    *o++ = preload;
    if (g_env_messages[0] != '\0') *o++ = g_env_messages;
    *o++ = g_env_ring;
    *o = nullptr;
    envp_ = out;
    adds_ = true;
  }
  ChildEnv(const ChildEnv&) = delete;
  ChildEnv& operator=(const ChildEnv&) = delete;
  char** get() const { return envp_; }
  bool adds() const { return adds_; }

 private:
  char** envp_;
  bool adds_ = false;
  HookBuffer<4096> buffer_;  // 500 variables in the frame; more in a mapping
};

// The path an execvp-style call runs (PATH search as glibc does it, for the untrackable check only), written
// to `buf`; false when none is found.
bool find_in_path(const char* file, char* buf, size_t cap) {
  if (strchr(file, '/') != nullptr) {
    if (strlen(file) >= cap) return false;
    memcpy(buf, file, strlen(file) + 1);
    return true;
  }
  const char* path = getenv("PATH");
  if (path == nullptr) path = "/bin:/usr/bin";
  const size_t flen = strlen(file);
  for (const char* p = path;; ++p) {
    const char* end = strchrnul(p, ':');
    const size_t dlen = static_cast<size_t>(end - p);
    if (dlen + 1 + flen + 1 <= cap) {
      size_t i = 0;
      if (dlen == 0) {
        buf[i++] = '.';
      } else {
        memcpy(buf, p, dlen);
        i = dlen;
      }
      buf[i++] = '/';
      memcpy(buf + i, file, flen + 1);
      if (syscall(SYS_faccessat, AT_FDCWD, buf, X_OK) == 0) return true;
    }
    if (*end == '\0') return false;
    p = end;
  }
}

// Whether the image this process execs will open the ring: a process that dropped its privileges (setpriv,
// su, a daemon's setuid) after it attached keeps its mapping, but the new image opens the ring again, as the
// new user, and fails. The ring is /proc/<recorder>/fd/<n>, which the kernel opens only for a caller whose
// fsuid/fsgid equal the recorder's ids, or with CAP_SYS_PTRACE. The check is against what holds after the
// exec: AT_EACCESS checks the effective ids (the fs ids after an exec), and a non-root image loses its
// capabilities at exec (setpriv keeps them until then, so faccessat alone would pass), so without euid 0 the
// ids must match the recorder's (those /proc/<recorder> is owned by). Ambient capabilities, kept across
// exec, are not considered (docs/RUNTIME.md, Limits).
bool ring_reachable() {
  if (faccessat(AT_FDCWD, g_env_ring + kRingPrefix, R_OK | W_OK, AT_EACCESS) != 0) return false;
  const auto euid = static_cast<uid_t>(syscall(SYS_geteuid));
  if (euid == 0) return true;
  char dir[32];
  snprintf(dir, sizeof dir, "/proc/%u", static_cast<unsigned>(g_ring->recorder_pid));  // does not allocate
  struct stat st;
  if (syscall(SYS_newfstatat, AT_FDCWD, dir, &st, 0) != 0) return true;  // not known: claim nothing
  return st.st_uid == euid && st.st_gid == static_cast<gid_t>(syscall(SYS_getegid));
}

// Before an exec (pid = ours; `exec` true) or after a spawn (pid = the child's): if the image cannot be
// tracked, say so, and return why (0: it can). Before an exec, an image that will not reach the ring is
// untracked too (no-access), unless it is already for a reason of its own.
int note_if_untrackable(int32_t pid, int dirfd, const char* path, int at_flags = 0, bool exec = false) {
  if (!g_env_ready || !recording_now()) return 0;
  // A vfork child (dash runs every command with vfork + execve) shares its parent's memory, pid cache and
  // thread-locals: its note names its own pid, not the cached one. Writing it is safe there: the parent's
  // thread is suspended until the exec, and write_note leaves the thread's ring state as it found it.
  const auto self = static_cast<int32_t>(syscall(SYS_getpid));
  if (self != g_pid && pid == g_pid) pid = self;
  int reason = runtime::image_untrackable(dirfd, path, at_flags);
  if (reason == 0 && exec && !ring_reachable()) reason = static_cast<int>(runtime::RingUntrackedReason::NoAccess);
  if (reason == 0) return 0;
  char exe[PATH_MAX];
  size_t len = 0;
  if (at_flags & AT_EMPTY_PATH) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);  // snprintf of ints does not allocate
    const long r = syscall(SYS_readlinkat, AT_FDCWD, link, exe, sizeof exe);
    len = r > 0 ? static_cast<size_t>(r) : 0;
  } else {
    len = strnlen(path, sizeof exe);
    memcpy(exe, path, len);
  }
  write_note(RingEventKind::NoteUntracked, pid, static_cast<uint64_t>(reason), exe, len);
  return reason;
}

// Whether an exec's child environment gets our variables: not when the new image cannot reach the ring.
bool tell_child(int reason) { return reason != static_cast<int>(runtime::RingUntrackedReason::NoAccess); }

bool executable(int dirfd, const char* path, int at_flags = 0) {
  return syscall(SYS_faccessat, dirfd, path, X_OK, at_flags & AT_EMPTY_PATH) == 0;
}

// system() and popen() spawn with glibc's internal posix_spawn and the current environ, out of our hooks'
// reach: for the duration of the call, environ is a copy with our variables added (another thread reading the
// environment meanwhile sees them: docs/RUNTIME.md, Limits).
class EnvironWithOurs {
 public:
  EnvironWithOurs() : env_(environ) {
    if (env_.adds()) {
      saved_ = environ;
      environ = env_.get();
    }
  }
  ~EnvironWithOurs() {
    if (saved_ != nullptr && environ == env_.get()) environ = saved_;
  }
  EnvironWithOurs(const EnvironWithOurs&) = delete;
  EnvironWithOurs& operator=(const EnvironWithOurs&) = delete;

 private:
  ChildEnv env_;
  char** saved_ = nullptr;
};

// argv of an execl-style call (memory: HookBuffer).
class VarArgv {
 public:
  VarArgv(const char* arg0, va_list ap, char*** envp_out) {
    va_list count;
    va_copy(count, ap);
    size_t n = 1;
    while (va_arg(count, const char*) != nullptr) ++n;
    va_end(count);
    argv_ = static_cast<char**>(buffer_.get((n + 1) * sizeof(char*)));
    if (argv_ == nullptr) return;
    argv_[0] = const_cast<char*>(arg0);
    for (size_t i = 1; i <= n; ++i) argv_[i] = va_arg(ap, char*);  // ends with the NULL
    if (envp_out != nullptr) *envp_out = va_arg(ap, char**);
  }
  VarArgv(const VarArgv&) = delete;
  VarArgv& operator=(const VarArgv&) = delete;
  char** get() const { return argv_; }

 private:
  char** argv_ = nullptr;
  HookBuffer<1024> buffer_;  // 127 arguments in the frame; more in a mapping
};

using execve_fn = int (*)(const char*, char* const*, char* const*);
using execveat_fn = int (*)(int, const char*, char* const*, char* const*, int);
using fexecve_fn = int (*)(int, char* const*, char* const*);
using spawn_fn = int (*)(pid_t*, const char*, const posix_spawn_file_actions_t*, const posix_spawnattr_t*, char* const*,
                         char* const*);
using system_fn = int (*)(const char*);
using popen_fn = FILE* (*)(const char*, const char*);
using wait4_fn = pid_t (*)(pid_t, int*, int, struct rusage*);
using waitid_fn = int (*)(idtype_t, id_t, siginfo_t*, int);

int do_execve(const char* path, char* const* argv, char* const* envp) {
  int reason = 0;
  if (executable(AT_FDCWD, path)) reason = note_if_untrackable(g_pid, AT_FDCWD, path, 0, true);
  ChildEnv env(envp, tell_child(reason));
  return real<execve_fn>(kExecve)(path, argv, env.get());
}

int do_execvpe(const char* file, char* const* argv, char* const* envp) {
  char path[PATH_MAX];
  int reason = 0;
  if (recording_now() && find_in_path(file, path, sizeof path) && executable(AT_FDCWD, path))
    reason = note_if_untrackable(g_pid, AT_FDCWD, path, 0, true);
  ChildEnv env(envp, tell_child(reason));
  return real<execve_fn>(kExecvpe)(file, argv, env.get());
}

int do_execveat(int dirfd, const char* path, char* const* argv, char* const* envp, int flags) {
  int reason = 0;
  if (executable(dirfd, path, flags)) reason = note_if_untrackable(g_pid, dirfd, path, flags, true);
  ChildEnv env(envp, tell_child(reason));
  return real<execveat_fn>(kExecveat)(dirfd, path, argv, env.get(), flags);
}

int do_fexecve(int fd, char* const* argv, char* const* envp) {
  int reason = 0;
  if (executable(fd, "", AT_EMPTY_PATH)) reason = note_if_untrackable(g_pid, fd, "", AT_EMPTY_PATH, true);
  ChildEnv env(envp, tell_child(reason));
  return real<fexecve_fn>(kFexecve)(fd, argv, env.get());
}

// `memtrack attach`'s hooks of the exec family (set_attached_environment below): the C library's execve,
// execveat and fexecve, entry-patched. Every other member ends in one of them inside the C library (execv,
// execl*, execvp*, and posix_spawn, system and popen, whose child calls __execve), so the patched execve sees
// each of those execs with its final environment. A spawned child runs the hook in its parent's memory, as a
// vfork child does under `memtrack record` (note_if_untrackable names its own pid).
constexpr int kAttachExecEntries = 3;
constinit ExtraEntry g_attach_exec_entries[kAttachExecEntries] = {};

void hook_exec_family_for_attach() {
  g_attach_exec_entries[0] = {"execve", reinterpret_cast<uintptr_t>(&do_execve), &g_process_fns[kExecve]};
  g_attach_exec_entries[1] = {"execveat", reinterpret_cast<uintptr_t>(&do_execveat), &g_process_fns[kExecveat]};
  g_attach_exec_entries[2] = {"fexecve", reinterpret_cast<uintptr_t>(&do_fexecve), &g_process_fns[kFexecve]};
  set_extra_entries(g_attach_exec_entries, kAttachExecEntries);
}

// An execl-style call: `target` run (searched in PATH when `search`) with the arguments from `arg0` on; with
// `has_envp`, the environment follows the arguments' NULL (execle).
int exec_list(const char* target, bool search, const char* arg0, va_list ap, bool has_envp) {
  char** envp = environ;
  VarArgv argv(arg0, ap, has_envp ? &envp : nullptr);
  if (argv.get() == nullptr) {
    errno = ENOMEM;
    return -1;
  }
  return search ? do_execvpe(target, argv.get(), envp) : do_execve(target, argv.get(), envp);
}

}  // namespace

void set_attached_environment(const char* ring, const char* messages, const char* preload) {
  if (!copy_env(g_env_ring, "MEMTRACK_RING=", ring, strlen(ring)) ||
      !copy_env(g_env_preload, "LD_PRELOAD=", preload, strlen(preload)) ||
      (messages[0] != '\0' && !copy_env(g_env_messages, "MEMTRACK_MESSAGES=", messages, strlen(messages))))
    return;
  g_env_ready = true;
  hook_exec_family_for_attach();
}

const char* messages_path() {
  if (g_env_ready) return g_env_messages[0] != '\0' ? g_env_messages + kMessagesPrefix : nullptr;
  return getenv(runtime::kEnvMessages);
}

bool begin_image() {
  take_environment();
  size_t len = 0;
  const long r = syscall(SYS_readlinkat, AT_FDCWD, "/proc/self/exe", g_note, PATH_MAX);
  if (r > 0) len = static_cast<size_t>(r);
  g_note[len++] = '\0';
  len += read_file("/proc/self/cmdline", g_note + len, kNoteBytes - len);
  if (!write_note(RingEventKind::NoteExec, g_pid, static_cast<uint64_t>(syscall(SYS_getppid)), g_note, len))
    return false;
  on_exit(exit_note, nullptr);  // inherited by fork children, which share the handler list's copy
  return true;
}

}  // namespace memtrack::preload

// -------------------------------------------------------------------------------------------------------------
// The interposed process functions. glibc's exec family calls its internal __execve, not through the PLT, so
// every member is interposed, not execve alone.

using namespace memtrack::preload;  // NOLINT: the functions below are global by definition

MEMTRACK_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  return do_execve(path, argv, envp);
}

MEMTRACK_EXPORT int execv(const char* path, char* const argv[]) { return do_execve(path, argv, environ); }

MEMTRACK_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  return do_execvpe(file, argv, envp);
}

MEMTRACK_EXPORT int execvp(const char* file, char* const argv[]) { return do_execvpe(file, argv, environ); }

MEMTRACK_EXPORT int execl(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  const int r = exec_list(path, false, arg, ap, false);
  va_end(ap);
  return r;
}

MEMTRACK_EXPORT int execlp(const char* file, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  const int r = exec_list(file, true, arg, ap, false);
  va_end(ap);
  return r;
}

MEMTRACK_EXPORT int execle(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  const int r = exec_list(path, false, arg, ap, true);
  va_end(ap);
  return r;
}

MEMTRACK_EXPORT int execveat(int dirfd, const char* path, char* const argv[], char* const envp[], int flags) {
  return do_execveat(dirfd, path, argv, envp, flags);
}

MEMTRACK_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) { return do_fexecve(fd, argv, envp); }

MEMTRACK_EXPORT int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* actions,
                                const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  pid_t child = 0;
  int r;
  {
    ChildEnv env(envp);
    r = real<spawn_fn>(kPosixSpawn)(&child, path, actions, attr, argv, env.get());
  }
  if (pid != nullptr) *pid = child;
  if (r == 0) note_if_untrackable(child, AT_FDCWD, path);
  return r;
}

MEMTRACK_EXPORT int posix_spawnp(pid_t* pid, const char* file, const posix_spawn_file_actions_t* actions,
                                 const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  pid_t child = 0;
  int r;
  {
    ChildEnv env(envp);
    r = real<spawn_fn>(kPosixSpawnp)(&child, file, actions, attr, argv, env.get());
  }
  if (pid != nullptr) *pid = child;
  char path[PATH_MAX];
  if (r == 0 && recording_now() && find_in_path(file, path, sizeof path)) note_if_untrackable(child, AT_FDCWD, path);
  return r;
}

// The wait family: glibc's wait, wait3 and waitpid call wait4 internally, not through the PLT, so each is
// interposed (all but waitid as wait4). A stopped or continued child (WUNTRACED, WCONTINUED) and waitid's
// WNOWAIT reap nothing.
MEMTRACK_EXPORT pid_t wait4(pid_t pid, int* status, int options, struct rusage* usage) {
  int st = 0;
  const pid_t r = real<wait4_fn>(kWait4)(pid, &st, options, usage);
  if (r > 0) {
    reaped_note(r, st);
    if (status != nullptr) *status = st;
  }
  return r;
}

MEMTRACK_EXPORT pid_t waitpid(pid_t pid, int* status, int options) { return wait4(pid, status, options, nullptr); }

MEMTRACK_EXPORT pid_t wait(int* status) { return wait4(-1, status, 0, nullptr); }

MEMTRACK_EXPORT pid_t wait3(int* status, int options, struct rusage* usage) {
  return wait4(-1, status, options, usage);
}

MEMTRACK_EXPORT int waitid(idtype_t idtype, id_t id, siginfo_t* info, int options) {
  const int r = real<waitid_fn>(kWaitid)(idtype, id, info, options);
  if (r == 0 && info != nullptr && (options & WNOWAIT) == 0 && info->si_pid > 0) {
    if (info->si_code == CLD_EXITED)
      reaped_note(info->si_pid, W_EXITCODE(info->si_status, 0));
    else if (info->si_code == CLD_KILLED || info->si_code == CLD_DUMPED)
      reaped_note(info->si_pid, info->si_status & 0x7f);
  }
  return r;
}

MEMTRACK_EXPORT void _exit(int status) {
  exit_now_note(status);
  for (;;) syscall(SYS_exit_group, status);
}

MEMTRACK_EXPORT void _Exit(int status) { _exit(status); }

MEMTRACK_EXPORT int system(const char* command) {
  if (command == nullptr) return real<system_fn>(kSystem)(nullptr);
  EnvironWithOurs env;
  return real<system_fn>(kSystem)(command);
}

MEMTRACK_EXPORT FILE* popen(const char* command, const char* mode) {
  EnvironWithOurs env;
  return real<popen_fn>(kPopen)(command, mode);
}
