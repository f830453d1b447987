#include "supervisor.h"

#include <dlfcn.h>
#include <poll.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <thread>

#include "control_notes.h"
#include "proc.h"
#include "sys_error.h"

namespace memtrack::runtime {

SignalScope::SignalScope() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &original_mask_);
  for (int i = 0; i < kCount; ++i) sigaction(kSignals[i], nullptr, &original_[i]);
}

SignalScope::~SignalScope() {
  for (int i = 0; i < kCount; ++i) sigaction(kSignals[i], &original_[i], nullptr);
  pthread_sigmask(SIG_SETMASK, &original_mask_, nullptr);
}

sigset_t SignalScope::defaults_for_child() const {
  sigset_t set;
  sigemptyset(&set);
  for (int i = 0; i < kCount; ++i)
    if (original_[i].sa_handler != SIG_IGN) sigaddset(&set, kSignals[i]);
  return set;
}

void SignalScope::enter_wait() {
  struct sigaction ign = {};
  ign.sa_handler = SIG_IGN;
  sigaction(SIGQUIT, &ign, nullptr);
  sigset_t mask = original_mask_;
  const sigset_t waited = wait_set();
  for (int sig = 1; sig < NSIG; ++sig)
    if (sigismember(&waited, sig) == 1) sigaddset(&mask, sig);
  pthread_sigmask(SIG_SETMASK, &mask, nullptr);
}

sigset_t SignalScope::wait_set() {
  sigset_t set;
  sigemptyset(&set);
  for (const int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2}) sigaddset(&set, sig);
  return set;
}

namespace {

using SpawnFn = int (*)(pid_t*, const char*, const posix_spawn_file_actions_t*, const posix_spawnattr_t*,
                        char* const[], char* const[]);

// libc's own posix_spawnp or posix_spawn, not an interposed one: under an outer `memtrack record` the outer's
// preload interposes them in this process and would hand the command the outer's ring instead of ours (a
// nested record records its own command; the outer records this recorder as any program).
SpawnFn libc_spawn(bool search_path) {
  static void* const libc = ::dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  void* const fn = libc != nullptr ? ::dlsym(libc, search_path ? "posix_spawnp" : "posix_spawn") : nullptr;
  if (fn == nullptr) return search_path ? ::posix_spawnp : ::posix_spawn;
  return reinterpret_cast<SpawnFn>(fn);
}

}  // namespace

int spawn_command(const std::vector<char*>& argv, const std::vector<char*>& envp, const SignalScope& signals,
                  pid_t& pid, const posix_spawn_file_actions_t* actions) {
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  const sigset_t child_defaults = signals.defaults_for_child();
  posix_spawnattr_setsigmask(&attr, &signals.original_mask());
  posix_spawnattr_setsigdefault(&attr, &child_defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  int error = libc_spawn(true)(&pid, argv[0], actions, &attr, argv.data(), envp.data());
  if (error == ENOEXEC) {
    // execvp's rule: the file it found, run by /bin/sh with the rest of the arguments.
    std::string file = find_command(argv[0]);
    std::vector<char*> sh = {const_cast<char*>("/bin/sh"), file.data()};
    sh.insert(sh.end(), argv.begin() + 1, argv.end());  // ends with argv's nullptr
    error = libc_spawn(false)(&pid, "/bin/sh", actions, &attr, sh.data(), envp.data());
  }
  posix_spawnattr_destroy(&attr);
  return error;
}

namespace {

constexpr auto kTick = std::chrono::milliseconds(100);
// After the command exited, how long the recorder waits for the rest of its session before it says which
// processes it waits for (and then again every kAnnounceEvery).
constexpr auto kAnnounceAfter = std::chrono::milliseconds(1500);
constexpr auto kAnnounceEvery = std::chrono::seconds(10);
// After SIGTERM/SIGHUP/SIGINT while the command runs: how long it has to exit before the recording ends
// without it.
constexpr auto kSignalGrace = std::chrono::seconds(1);

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// The kernel's exit information of a pidfd's process (linux/pidfd.h from 6.15 on; Debian's headers predate
// it): a wait status, once the process has been reaped.
struct PidfdInfo {
  std::uint64_t mask = 0, cgroupid = 0;
  std::uint32_t pid = 0, tgid = 0, ppid = 0, ruid = 0, rgid = 0, euid = 0, egid = 0, suid = 0, sgid = 0, fsuid = 0,
                fsgid = 0;
  std::int32_t exit_code = 0;
};
static_assert(sizeof(PidfdInfo) == 64);  // PIDFD_INFO_SIZE_VER0
constexpr std::uint64_t kPidfdInfoExit = 1u << 3;
constexpr unsigned long kPidfdGetInfo = _IOWR(0xFF, 11, PidfdInfo);

bool pidfd_exit_status(int fd, int& status) {
  PidfdInfo info;
  info.mask = kPidfdInfoExit;
  if (::ioctl(fd, kPidfdGetInfo, &info) != 0 || (info.mask & kPidfdInfoExit) == 0) return false;
  status = info.exit_code;
  return true;
}

std::string describe(const std::vector<ProcessNote>& processes) {
  std::string out;
  for (const ProcessNote& p : processes) {
    if (!out.empty()) out += ", ";
    out += std::to_string(p.pid) + " (" + (p.executable.empty() ? "?" : p.executable) + ")";
  }
  return out;
}

// Waits (briefly: the reader keeps up within milliseconds) until the reader has handed on every ticket
// taken so far, so the lifecycle books include every process that announced itself before now.
void catch_up(SharedRing& ring, const RingReader& reader, bool reading) {
  if (!reading) return;
  const std::uint64_t head = ring.header()->head.load(std::memory_order_acquire);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  while (reader.position() < head && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace

Supervisor::Supervisor(pid_t command, SharedRing& ring, RingReader& reader, Lifecycle& lifecycle,
                       ProcessWatch& watch, bool reading)
    : command_(command), ring_(ring), reader_(reader), lifecycle_(lifecycle), process_watch_(watch),
      reading_(reading) {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) throw sys_error("eventfd");
  const sigset_t set = SignalScope::wait_set();
  signal_fd_ = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signal_fd_ < 0) {
    ::close(wake_fd_);
    throw sys_error("signalfd");
  }
}

Supervisor::~Supervisor() {
  for (const Watched& w : incoming_)
    if (w.fd >= 0) ::close(w.fd);
  for (const Watched& w : watched_)
    if (w.fd >= 0) ::close(w.fd);
  ::close(signal_fd_);
  ::close(wake_fd_);
}

void Supervisor::watch(std::int32_t pid) {
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  // ESRCH: gone (and reaped) already; the main thread notes its end at once.
  Watched w{pid, fd >= 0 ? fd : -1};
  const bool gone = fd < 0 && errno == ESRCH;
  {
    const std::lock_guard lock(mutex_);
    incoming_.push_back(w);
    if (gone) incoming_.back().fd = -2;
  }
  const std::uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
}

void Supervisor::take_new_watches() {
  std::uint64_t n = 0;
  (void)!::read(wake_fd_, &n, sizeof n);
  std::vector<Watched> incoming;
  {
    const std::lock_guard lock(mutex_);
    incoming.swap(incoming_);
  }
  for (Watched& w : incoming) {
    noted_.erase(w.pid);  // a pid seen again is a new process
    if (w.fd == -2) {
      note_exit(w.pid, 0, false);
      continue;
    }
    watched_.push_back(w);
  }
}

void Supervisor::note_exit(pid_t pid, int status, bool status_known) {
  if (!noted_.insert(pid).second) return;
  if (status_known && WIFEXITED(status))
    ring_.write_note(RingEventKind::NoteExit, pid, static_cast<std::uint32_t>(WEXITSTATUS(status)), kRingNoteHasStatus);
  else if (status_known && WIFSIGNALED(status))
    ring_.write_note(RingEventKind::NoteExit, pid, static_cast<std::uint32_t>(WTERMSIG(status)), kRingNoteSignal);
  else
    ring_.write_note(RingEventKind::NoteExit, pid, 0, 0);
}

// One of the recorder's children, reaped with its status.
void Supervisor::reaped(pid_t pid, int status) {
  if (WIFSIGNALED(status)) process_watch_.killed.fetch_add(1, std::memory_order_relaxed);
  note_exit(pid, status, true);
  if (pid == command_) {
    out_.exit_status = exit_code(status);
    if (WIFSIGNALED(status)) out_.command_signal = WTERMSIG(status);
    command_done_ = true;
  }
}

// A watched process's pidfd is readable: it has ended.
void Supervisor::ended(const Watched& w) {
  siginfo_t info{};
  if (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(w.fd), &info, WEXITED | WNOHANG) == 0 &&
      info.si_pid == w.pid) {
    reaped(w.pid, info.si_code == CLD_EXITED ? W_EXITCODE(info.si_status, 0) : info.si_status);
    return;
  }
  int status = 0;
  const bool known = pidfd_exit_status(w.fd, status);
  if (known && WIFSIGNALED(status)) process_watch_.killed.fetch_add(1, std::memory_order_relaxed);
  note_exit(w.pid, status, known);
}

// The descendant policy (docs/RUNTIME.md, "Which processes the recording waits for"): the recording lasts
// while the command runs and, after it, while a process of the command's session runs (a tracked one, or
// one of our children: the orphans re-parented to us). Processes in another session (daemons: setsid) and
// processes no longer among our descendants do not hold it. SIGTERM/SIGHUP/SIGINT end it: at once once the
// command has exited, else when the command exits after being passed the signal, or kSignalGrace later.
// At the end, what still runs is noted left running and the ring is detached quietly, so those processes
// stop recording without a word.
WaitOutcome Supervisor::wait() {
  using clock = std::chrono::steady_clock;
  const pid_t our_session = ::getsid(0);
  bool confirmed_empty = false;
  int stop_signal = 0;
  int signals_seen = 0;
  clock::time_point stop_at{};
  clock::time_point command_exit_at{};
  clock::time_point announced_at{};
  std::vector<pollfd> fds;
  for (;;) {
    take_new_watches();
    for (;;) {
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) break;
      const bool was_done = command_done_;
      reaped(pid, status);
      if (command_done_ && !was_done) command_exit_at = clock::now();
    }
    // Ended watched processes, and those without a pidfd found gone in /proc.
    std::erase_if(watched_, [&](const Watched& w) {
      if (w.fd >= 0) return false;
      if (running(proc_stat(w.pid))) return false;
      note_exit(w.pid, 0, false);
      return true;
    });
    const auto now = clock::now();
    if (stop_signal != 0 && (command_done_ || signals_seen > 1 || now - stop_at > kSignalGrace)) break;

    const std::set<int> ours = children_of_us();
    std::vector<ProcessNote> holding;
    std::set<int> alive;
    for (const TrackedProcess& p : lifecycle_.alive()) {
      alive.insert(p.pid);
      const ProcStat st = proc_stat(p.pid);
      if (!running(st)) continue;
      if (st.session == our_session || (p.pid == command_ && !command_done_))
        holding.push_back({p.pid, p.executable, {}});
    }
    for (const int pid : ours) {
      if (alive.contains(pid)) continue;
      const ProcStat st = proc_stat(pid);
      if (running(st) && (st.session == our_session || pid == command_))
        holding.push_back({pid, executable_of(pid), {}});
    }

    if (command_done_) {
      if (holding.empty()) {
        // Once more after the reader has caught up: a process announced just now is then in the books.
        if (confirmed_empty) break;
        confirmed_empty = true;
        catch_up(ring_, reader_, reading_);
        continue;
      }
      confirmed_empty = false;
      if (now - command_exit_at > kAnnounceAfter &&
          (announced_at == clock::time_point{} || now - announced_at > kAnnounceEvery)) {
        announced_at = now;
        std::fprintf(stderr,
                     "memtrack record: the command has exited; waiting for %zu process%s of its session: %s "
                     "(SIGTERM, SIGHUP or SIGINT ends the recording now)\n",
                     holding.size(), holding.size() == 1 ? "" : "es", describe(holding).c_str());
      }
    }

    // Sleep until a signal, a new process, a process's end, or the tick (the session checks above).
    fds.clear();
    fds.push_back({signal_fd_, POLLIN, 0});
    fds.push_back({wake_fd_, POLLIN, 0});
    for (const Watched& w : watched_) fds.push_back({w.fd, POLLIN, 0});
    const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(kTick.count()));
    if (ready <= 0) continue;
    for (std::size_t i = 2; i < fds.size(); ++i)
      if (fds[i].revents != 0) {
        const auto it = std::find_if(watched_.begin(), watched_.end(), [&](const Watched& w) { return w.fd == fds[i].fd; });
        ended(*it);
        ::close(it->fd);
        watched_.erase(it);
      }
    if ((fds[0].revents & POLLIN) == 0) continue;
    signalfd_siginfo info;
    while (::read(signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      const int sig = static_cast<int>(info.ssi_signo);
      if (sig == SIGUSR1 || sig == SIGUSR2)
        toggle_recording(ring_.header(), sig == SIGUSR1, static_cast<std::int32_t>(::getpid()), "signal");
      if (sig == SIGTERM || sig == SIGHUP || sig == SIGINT) {
        ++signals_seen;
        // A terminal's SIGINT reached the command's process group already; one sent to us alone is passed on.
        const bool from_terminal = sig == SIGINT && info.ssi_code == SI_KERNEL;
        if (!command_done_ && !from_terminal) ::kill(command_, sig);
        if (stop_signal == 0) {
          stop_signal = sig;
          stop_at = clock::now();
        }
      }
    }
  }

  catch_up(ring_, reader_, reading_);
  std::set<int> listed;
  // The executable as it is now (a fork child may have exec'd since its last note was read).
  for (const TrackedProcess& p : lifecycle_.alive()) {
    if (!running(proc_stat(p.pid)) || !listed.insert(p.pid).second) continue;
    const std::string now = executable_of(p.pid);
    out_.left_running.push_back({p.pid, now.empty() ? p.executable : now, "left-running"});
  }
  for (const int pid : children_of_us())
    if (running(proc_stat(pid)) && listed.insert(pid).second)
      out_.left_running.push_back({pid, executable_of(pid), "left-running"});
  for (const ProcessNote& p : out_.left_running)
    ring_.write_note(RingEventKind::NoteUntracked, p.pid,
                     static_cast<std::uint64_t>(RingUntrackedReason::LeftRunning), 0, p.executable);
  if (!out_.left_running.empty()) {
    // They stop recording at their next event, silently; a producer between its ticket and its slot fills
    // the slot within microseconds, so give those a moment before every ticket counts as final.
    std::uint32_t expected = 0;
    ring_.header()->detached.compare_exchange_strong(expected, kDetachedQuiet, std::memory_order_relaxed);
    ring_.wake_waiters();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!command_done_) out_.exit_status = 128 + stop_signal;
  out_.ended_by_signal = stop_signal;
  process_watch_.all_exited.store(true, std::memory_order_release);
  return out_;
}

}  // namespace memtrack::runtime
