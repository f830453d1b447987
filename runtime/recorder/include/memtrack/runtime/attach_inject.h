// `memtrack attach`'s injection (docs/RUNTIME.md, "Attaching to a running process"): calling a function of a
// running process on one of its threads with ptrace (no gdb). The thread is chosen where it holds none of the
// C library's locks: its program counter outside libc and the loader, or blocked in a system call other than
// the memory ones (so dlopen, which allocates and takes the loader's lock, cannot deadlock on a lock the
// thread itself holds). Only that thread is stopped while the call runs; the process's other threads go on,
// so a lock another thread holds is released as usual. Its registers (general and extended: x87, SSE, AVX) are
// saved and restored whole, so an interrupted system call restarts as it would after a signal.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace memtrack::runtime {

// Why a process cannot be attached to. exit_status: 3 no such process, 4 not permitted, 5 unsupported
// (static, not glibc, not x86-64), 6 already recorded, 1 anything else (the injected call failed).
struct AttachError : std::runtime_error {
  AttachError(const std::string& what, int status) : std::runtime_error(what), exit_status(status) {}
  int exit_status;
};

inline constexpr int kAttachNoProcess = 3;
inline constexpr int kAttachNotPermitted = 4;
inline constexpr int kAttachUnsupported = 5;
inline constexpr int kAttachAlreadyRecorded = 6;

// The checks made before anything touches the process: it exists, is x86-64, dynamically linked against glibc
// (libc.so.6 mapped, exporting dlopen), and does not run the preload already. Throws AttachError.
void check_attachable(pid_t pid);

// The reason ptrace refused `pid` (EPERM), in words: another user without CAP_SYS_PTRACE, Yama's
// ptrace_scope, a process that is not dumpable, or one traced already.
std::string ptrace_refusal(pid_t pid);

// One remote call: a function of the process named by its library (a path as /proc/PID/maps shows it, or a
// basename prefix such as "libc.so") and its exported symbol, with string arguments first (copied onto the
// thread's stack) and integer ones after, at most 6 in all.
struct RemoteCall {
  std::string library;
  std::string symbol;
  std::vector<std::string> strings;
  std::vector<std::uint64_t> integers;
  std::uint64_t result = 0;        // rax after the call
  bool must_not_return_0 = false;  // a 0 result is a failure (dlopen): the later calls are not made
  // Runs just before the call, with the thread that will make it (stopped); may throw AttachError.
  std::function<void(pid_t chosen)> before;
};

// The process's other threads held stopped (ptrace), released by the destructor: around a call that must
// not race with them (memtrack_attach_commit). `spans` (address, length) pairs: a thread whose program
// counter lies strictly inside one is single-stepped until it is out of all of them.
class OtherThreadsStopped {
 public:
  OtherThreadsStopped() = default;
  ~OtherThreadsStopped();
  OtherThreadsStopped(const OtherThreadsStopped&) = delete;
  OtherThreadsStopped& operator=(const OtherThreadsStopped&) = delete;
  // Throws AttachError when a thread cannot be stopped or stepped out.
  void stop(pid_t pid, pid_t chosen, const std::vector<std::pair<std::uint64_t, std::uint64_t>>& spans);
  void release();
  [[nodiscard]] std::size_t count() const { return tids_.size(); }
  [[nodiscard]] int stepped() const { return stepped_; }

 private:
  std::vector<pid_t> tids_;
  int stepped_ = 0;
};

// The address of `symbol` (a function or an object) exported by `library` in process `pid`, 0 when none.
std::uint64_t remote_symbol(pid_t pid, const std::string& library, const std::string& symbol);
// Reads `n` bytes at `addr` of process `pid`; false when they cannot be read.
bool read_remote(pid_t pid, std::uint64_t addr, void* out, std::size_t n);

struct InjectStats {
  double pause_ms = 0;  // how long the chosen thread was stopped (the others are never stopped)
  pid_t tid = 0;        // the thread that made the calls
  int tries = 0;        // threads examined before one was at a safe point
};

// Runs `calls` in order on one thread of `pid` (the library of a later call may be one an earlier call
// loaded: maps are read again before each). Throws AttachError when the process cannot be traced, no thread
// reaches a safe point within `timeout_ms`, or a call faults anywhere but at its return.
InjectStats inject_calls(pid_t pid, std::vector<RemoteCall>& calls, int timeout_ms = 3000);

}  // namespace memtrack::runtime
