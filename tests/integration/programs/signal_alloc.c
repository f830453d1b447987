// A timer signal every 100 us whose handler maps and unmaps memory (mmap/munmap are async-signal-safe and
// interposed) while the main thread churns through malloc/free: the handler regularly interrupts the
// tracker itself, often while it waits for a ring slot. Nothing may deadlock and every event is recorded.
// Prints "mallocs N handler_maps M".
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/time.h>

static volatile sig_atomic_t maps;
static void* volatile sink;

static void on_alarm(int sig) {
  (void)sig;
  void* p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED) {
    munmap(p, 3 * 4096);
    maps = maps + 1;
  }
}

int main(int argc, char** argv) {
  long n = argc > 1 ? atol(argv[1]) : 300000;
  struct sigaction sa = {0};
  sa.sa_handler = on_alarm;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval it = {{0, 100}, {0, 100}};
  setitimer(ITIMER_REAL, &it, NULL);
  for (long i = 0; i < n; ++i) {
    sink = malloc(1000231 % 4096);
    free(sink);
  }
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  printf("mallocs %ld handler_maps %ld\n", n, (long)maps);
  return 0;
}
