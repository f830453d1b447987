// The reference the unwinder tests compare against: libunwind's own walk of the calling thread's stack,
// one unw_step at a time. Like unw_backtrace, it yields the caller's frame first (an address inside the
// caller, which differs from ours: each is its own call's return address) and then each return address up
// to the end of the stack.
//
// unw_backtrace itself is not used: its fast path keeps a per-thread trace cache behind a pthread key, and
// that key's destructor takes a mutex at thread exit, after ThreadSanitizer has torn down the thread's
// state, which crashes the TSan build's tests that capture on their own threads. unw_step uses libunwind's
// global cache, with no per-thread state. libunwind's first walks on concurrent threads also fill its
// global signal masks (sigfillset) while another reads them (sigprocmask), a race ThreadSanitizer reports in
// libunwind's own code: the walks are therefore taken one thread at a time (a thread's signal handler
// interrupting its own walk goes on, holding the turn already). Our unwinder, under test, still runs on
// every thread at once.
#pragma once

// Local unwinding only: the _UL entry points, which libunwind.so exports.
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace memtrack::unwind_test {

// One thread's turn at libunwind: the thread id holding it, 0 when free.
inline std::atomic<pid_t> g_libunwind_turn{0};

class LibunwindTurn {
 public:
  LibunwindTurn() {
    const pid_t me = gettid();
    if (g_libunwind_turn.load(std::memory_order_relaxed) == me) return;  // a handler on the holding thread
    pid_t none = 0;
    while (!g_libunwind_turn.compare_exchange_weak(none, me, std::memory_order_acquire)) none = 0;
    held_ = true;
  }
  ~LibunwindTurn() {
    if (held_) g_libunwind_turn.store(0, std::memory_order_release);
  }
  LibunwindTurn(const LibunwindTurn&) = delete;
  LibunwindTurn& operator=(const LibunwindTurn&) = delete;

 private:
  bool held_ = false;
};

// Inlined so that the context taken is the caller's frame, as unw_backtrace's first frame is.
__attribute__((always_inline)) inline int libunwind_backtrace(void** out, int max) {
  const LibunwindTurn turn;
  unw_context_t context;
  unw_cursor_t cursor;
  if (unw_getcontext(&context) != 0 || unw_init_local(&cursor, &context) != 0) return 0;
  int n = 0;
  do {
    unw_word_t ip = 0;
    if (n >= max || unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0) break;
    out[n++] = reinterpret_cast<void*>(static_cast<std::uintptr_t>(ip));
  } while (unw_step(&cursor) > 0);
  return n;
}

}  // namespace memtrack::unwind_test
