// The entry depth (EntryScope, preload_internal.h) and what keeps it right in signal handlers: sigaction and
// signal are interposed so every handler the program installs runs inside a wrapper that starts it at depth 0
// and restores the interrupted depth after it. Without it, a handler that interrupts a hooked call (say, the
// real malloc) and maps memory would count as nested and its mmap would go unrecorded.
//
// The kernel sees our wrapper; the program sees its own handler: sigaction's old action reports the handler
// the program installed, with the flags it gave. SIG_DFL and SIG_IGN are installed as they are. A handler
// that leaves with siglongjmp abandons the interrupted frames, and the depth it leaves (0) is then right.
#include <errno.h>
#include <signal.h>
#include <stdint.h>

#include <atomic>

#include "resolve.h"

namespace memtrack::preload {

constinit MEMTRACK_TLS int t_entry_depth = 0;

namespace {

using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
constinit std::atomic<void*> g_real_sigaction{nullptr};

constexpr int kSignals = 65;  // 1..64 on Linux
// The program's handler per signal, and whether it takes (int, siginfo_t*, void*).
constinit std::atomic<uintptr_t> g_handler[kSignals] = {};
constinit std::atomic<bool> g_siginfo[kSignals] = {};

SigactionFn real_sigaction() { return next_fn<SigactionFn>(g_real_sigaction, "sigaction"); }

void run_handler(int sig, siginfo_t* info, void* context) {
  const int interrupted = t_entry_depth;
  t_entry_depth = 0;
  const uintptr_t h = sig > 0 && sig < kSignals ? g_handler[sig].load(std::memory_order_acquire) : 0;
  if (h > 1) {  // never SIG_DFL (0) or SIG_IGN (1): those are installed unwrapped
    if (g_siginfo[sig].load(std::memory_order_relaxed))
      reinterpret_cast<void (*)(int, siginfo_t*, void*)>(h)(sig, info, context);
    else
      reinterpret_cast<void (*)(int)>(h)(sig);
  }
  t_entry_depth = interrupted;
}

bool is_wrapper(const struct sigaction& sa) {
  return (sa.sa_flags & SA_SIGINFO) != 0 && sa.sa_sigaction == run_handler;
}

}  // namespace

int wrapped_sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  SigactionFn real = real_sigaction();
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  if (sig <= 0 || sig >= kSignals) return real(sig, act, old);
  struct sigaction mine;
  const struct sigaction* give = act;
  uintptr_t prev_handler = g_handler[sig].load(std::memory_order_acquire);
  bool prev_siginfo = g_siginfo[sig].load(std::memory_order_relaxed);
  if (act != nullptr) {
    const bool siginfo = (act->sa_flags & SA_SIGINFO) != 0;
    const uintptr_t h =
        siginfo ? reinterpret_cast<uintptr_t>(act->sa_sigaction) : reinterpret_cast<uintptr_t>(act->sa_handler);
    if (h > 1) {
      // Publish the program's handler before the kernel can deliver to the wrapper.
      g_siginfo[sig].store(siginfo, std::memory_order_relaxed);
      g_handler[sig].store(h, std::memory_order_release);
      mine = *act;
      mine.sa_flags |= SA_SIGINFO;
      mine.sa_sigaction = run_handler;
      give = &mine;
    }
  }
  const int r = real(sig, give, old);
  if (r == 0 && old != nullptr && is_wrapper(*old)) {
    // Report the handler the program installed, as it gave it.
    if (prev_siginfo) {
      old->sa_sigaction = reinterpret_cast<void (*)(int, siginfo_t*, void*)>(prev_handler);
    } else {
      old->sa_flags &= ~SA_SIGINFO;
      old->sa_handler = reinterpret_cast<void (*)(int)>(prev_handler);
    }
  }
  return r;
}

}  // namespace memtrack::preload

MEMTRACK_EXPORT int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  return memtrack::preload::wrapped_sigaction(sig, act, old);
}

// glibc's signal() has BSD semantics: the handler stays installed, interrupted calls restart, and the signal
// is blocked while its handler runs. It calls sigaction inside libc (not through the PLT), so it is
// interposed too, with the same semantics.
MEMTRACK_EXPORT sighandler_t signal(int sig, sighandler_t handler) {
  struct sigaction sa = {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  if (sig > 0 && sig < 65) sigaddset(&sa.sa_mask, sig);
  sa.sa_flags = SA_RESTART;
  struct sigaction old = {};
  if (memtrack::preload::wrapped_sigaction(sig, &sa, &old) != 0) return SIG_ERR;
  if ((old.sa_flags & SA_SIGINFO) == 0) return old.sa_handler;
  sighandler_t h;  // signal() returns a siginfo handler as the address it is
  memcpy(&h, &old.sa_sigaction, sizeof h);
  return h;
}
