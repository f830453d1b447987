// bench/record_stacks.sh's workload: THREADS threads, each OPS malloc/free pairs on a small working set (64
// blocks of 16..520 bytes), called at a depth of DEPTH frames (default 24) of noinline functions. Built with
// plain -O2, no frame pointers, as Debian builds programs. Prints "events N" (the program's own events) so the
// script can check nothing was lost.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define KEEP(p) __asm__ volatile("" : : "r"(p) : "memory")

static long g_ops;
static int g_depth;

__attribute__((noinline)) static void churn(void) {
  void* slots[64] = {0};
  for (long i = 0; i < g_ops; ++i) {
    const int s = (int)(i & 63);
    free(slots[s]);
    slots[s] = malloc(16 + (size_t)((i * 7) & 63) * 8);
    KEEP(slots[s]);
  }
  for (int s = 0; s < 64; ++s) free(slots[s]);
}

__attribute__((noinline)) static int descend(int depth) {
  if (depth <= 1) {
    churn();
    return 0;
  }
  const int r = descend(depth - 1);
  KEEP(&r);
  return r + 1;
}

static void* thread_main(void* arg) {
  (void)arg;
  // thread_main, start_thread and clone3 are 3 frames: descend makes up the rest of DEPTH.
  descend(g_depth - 3);
  return NULL;
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? atoi(argv[1]) : 2;
  g_ops = argc > 2 ? atol(argv[2]) : 1000000;
  g_depth = argc > 3 ? atoi(argv[3]) : 24;
  pthread_t t[64];
  for (int i = 0; i < threads && i < 64; ++i) pthread_create(&t[i], NULL, thread_main, NULL);
  for (int i = 0; i < threads && i < 64; ++i) pthread_join(t[i], NULL);
  // Each op is a malloc; each op past the first 64 per slot frees one, plus the 64 final frees.
  printf("events %ld\n", (long)threads * (2 * g_ops));
  return 0;
}
