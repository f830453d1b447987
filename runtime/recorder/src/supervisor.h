// Process supervision for the recorder: the signal mask and dispositions while recording, starting the
// command, and waiting for the processes of the recording (docs/RUNTIME.md, "Which processes the recording
// waits for"), with every tracked process's end noted in the ring when it happens.
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "lifecycle.h"
#include "memtrack/runtime/recorder.h"
#include "ring_reader.h"
#include "shared_ring.h"

namespace memtrack::runtime {

// Blocks every signal in the creating thread (so every thread created after it inherits a fully blocked
// mask: the recorder never steals the program's signals) and restores the mask and the dispositions of
// SIGINT, SIGQUIT, SIGTERM and SIGHUP on every exit path.
class SignalScope {
 public:
  SignalScope();
  ~SignalScope();
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;
  [[nodiscard]] const sigset_t& original_mask() const { return original_mask_; }
  // Signals the child must get with default dispositions (enter_wait() changes them).
  [[nodiscard]] sigset_t defaults_for_child() const;
  // Main thread only, once the helper threads exist: the main thread keeps wait_set() blocked and reads it
  // from a signalfd; SIGQUIT from the terminal goes to the program's process group too, and the recorder
  // ignores it.
  void enter_wait();
  // SIGCHLD, SIGINT, SIGTERM, SIGHUP, and SIGUSR1/SIGUSR2 (pause and resume, docs/RUNTIME.md "Harness control").
  static sigset_t wait_set();

 private:
  static constexpr int kCount = 4;
  static constexpr int kSignals[kCount] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
  sigset_t original_mask_;
  struct sigaction original_[kCount];
};

// Starts `argv` with `envp`, `signals`' mask and default dispositions, as posix_spawnp does, and like execvp
// runs a file the kernel refuses as not an executable format (ENOEXEC: a script without #!) with /bin/sh.
// `actions` (may be null): posix_spawn's file actions. Returns 0 and the pid, or the error number.
int spawn_command(const std::vector<char*>& argv, const std::vector<char*>& envp, const SignalScope& signals,
                  pid_t& pid, const posix_spawn_file_actions_t* actions = nullptr);

struct WaitOutcome {
  int exit_status = 0;       // the command's, 128 + N when signal N killed it (or ended the recording)
  int ended_by_signal = 0;   // the signal that ended the recording early, or 0
  int command_signal = 0;    // the signal that killed the command, or 0
  std::vector<ProcessNote> left_running;
};

// Waits for the processes of one recording. Every tracked process gets a pidfd when the reader first meets
// it (watch(), from the reader thread through Lifecycle), and the main thread's wait() polls them with the
// signals: a process's end is noted in the ring as soon as the kernel reports it, so the note follows the
// process's last event and precedes whatever happens after its death. The exit status in the note: from
// waitid for the recorder's own children (the command, re-parented orphans); from the pidfd's exit
// information (PIDFD_GET_INFO, Linux 6.15 and later) for the others when the kernel has it at that moment
// (their parent has reaped them); otherwise none is recorded.
class Supervisor {
 public:
  Supervisor(pid_t command, SharedRing& ring, RingReader& reader, Lifecycle& lifecycle, ProcessWatch& watch,
             bool reading);
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Any thread (the reader's): a tracked process was met for the first time.
  void watch(std::int32_t pid);

  // Main thread, once, after SignalScope::enter_wait(): returns when the recording ends.
  WaitOutcome wait();

 private:
  struct Watched {
    std::int32_t pid;
    int fd;  // -1: pidfd_open failed (ESRCH: already gone, noted at once; else found gone through /proc)
  };
  void take_new_watches();
  void reaped(pid_t pid, int status);
  void ended(const Watched& w);
  void note_exit(pid_t pid, int status, bool status_known);

  pid_t command_;
  SharedRing& ring_;
  RingReader& reader_;
  Lifecycle& lifecycle_;
  ProcessWatch& process_watch_;
  bool reading_;
  int wake_fd_ = -1;    // eventfd: watch() adds a process
  int signal_fd_ = -1;  // SignalScope::wait_set()
  std::mutex mutex_;
  std::vector<Watched> incoming_;  // guarded by mutex_
  std::vector<Watched> watched_;   // main thread only
  std::set<int> noted_;            // main thread only: pids whose end was noted (until seen alive again)
  bool command_done_ = false;
  WaitOutcome out_;
};

}  // namespace memtrack::runtime
