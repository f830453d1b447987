// Allocation churn for bench/record_overhead.sh: T threads x N operations of malloc, realloc and free on a
// small working set. Every operation is exactly one event: prints "events E" (the expected artifact count
// for this process's own calls).
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define WORKING_SET 256

static long ops_per_thread;
static unsigned long events_per_thread[64];

static void* worker(void* arg) {
  unsigned id = (unsigned)(uintptr_t)arg;
  void* slot[WORKING_SET] = {0};
  unsigned long events = 0;
  unsigned seed = id * 2654435761u + 7;
  for (long op = 0; op < ops_per_thread; ++op) {
    seed = seed * 1103515245u + 12345u;
    unsigned k = (seed >> 8) % WORKING_SET;
    size_t size = 16 + (seed >> 16) % 512;
    if (slot[k] == NULL) {
      slot[k] = malloc(size);
    } else if ((seed >> 4) % 3 == 0) {
      slot[k] = realloc(slot[k], size);
    } else {
      free(slot[k]);
      slot[k] = NULL;
    }
    ++events;
  }
  for (int k = 0; k < WORKING_SET; ++k)
    if (slot[k] != NULL) {
      free(slot[k]);
      ++events;
    }
  events_per_thread[id] = events;
  return NULL;
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 2;
  ops_per_thread = argc > 2 ? atol(argv[2]) : 1000000;
  if (threads < 1 || threads > 64) return 2;
  pthread_t t[64];
  for (int i = 0; i < threads; ++i) pthread_create(&t[i], NULL, worker, (void*)(uintptr_t)i);
  for (int i = 0; i < threads; ++i) pthread_join(t[i], NULL);
  unsigned long total = 0;
  for (int i = 0; i < threads; ++i) total += events_per_thread[i];
  printf("events %lu\n", total);
  return 0;
}
