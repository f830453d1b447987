/* A program that pauses its own recording (memtrack/control.h), for the report's paused-span test:
     8 MiB allocated and held 150 ms, pause, free it (recorded: frees are) and allocate 4 MiB (not recorded),
     hold 300 ms, resume, allocate 1 MiB, hold 150 ms, free everything.
   Inside the pause the recorded live heap reads 0 although the program holds 4 MiB: the report must not
   draw it. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memtrack/control.h"

static void* volatile sink;

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void* take(size_t n) {
  void* p = malloc(n);
  memset(p, 1, n);
  sink = p;
  return p;
}

int main(void) {
  char* a = take(8u << 20);
  sleep_ms(150);
  memtrack_pause();
  free(a);
  char* b = take(4u << 20);
  sleep_ms(300);
  memtrack_resume();
  char* c = take(1u << 20);
  sleep_ms(150);
  free(c);
  free(b);
  return 0;
}
