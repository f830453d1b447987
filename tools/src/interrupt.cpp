#include "interrupt.h"

#include <pthread.h>

namespace memtrack::tools {
namespace {

volatile std::sig_atomic_t g_signal = 0;
pthread_t g_main_thread;
struct sigaction g_old_int, g_old_term;

extern "C" void on_interrupt(int sig) {
  if (g_signal == 0) g_signal = sig;
  // The kernel may deliver a process-directed signal to any thread that does not block it (a oneTBB
  // worker, say); pass it to the main thread so its read(2) returns EINTR instead of waiting for input.
  if (!pthread_equal(pthread_self(), g_main_thread)) pthread_kill(g_main_thread, sig);
}

}  // namespace

InterruptGuard::InterruptGuard() {
  g_main_thread = pthread_self();
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocked read must return EINTR
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

const volatile std::sig_atomic_t* InterruptGuard::flag() { return &g_signal; }

}  // namespace memtrack::tools
