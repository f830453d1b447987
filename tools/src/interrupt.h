// SIGINT/SIGTERM handling for commands that must finish their output when interrupted (encode): the
// handler only records the signal, and makes sure the main thread's blocking read(2) returns EINTR.
#pragma once

#include <csignal>

namespace memtrack::tools {

class InterruptGuard {
 public:
  // Installs handlers for SIGINT and SIGTERM (without SA_RESTART); restores the previous ones on destruction.
  // Call from the main thread: that is the thread whose blocked read gets interrupted.
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // 0, or the number of the first signal received. Readers poll it (RawRecordReader::stop_on_signal).
  static const volatile std::sig_atomic_t* flag();
};

}  // namespace memtrack::tools
