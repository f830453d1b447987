// The live view's workload (live_test.cpp): grows its heap by 1 MiB every 100 ms for `steps` steps, printing a
// line on stdout and on stderr at each, then holds its heap until the file `stop` exists (at most 60 s).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void nap(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

int main(int argc, char** argv) {
  const int steps = argc > 1 ? atoi(argv[1]) : 20;
  const char* stop = argc > 2 ? argv[2] : NULL;
  void* blocks[1024];
  for (int i = 0; i < steps && i < 1024; ++i) {
    blocks[i] = malloc(1 << 20);
    memset(blocks[i], i, 1 << 20);
    printf("live_grow step %d\n", i);
    fflush(stdout);
    fprintf(stderr, "live_grow stderr %d\n", i);
    nap(100);
  }
  for (int waited = 0; stop != NULL && access(stop, F_OK) != 0 && waited < 600; ++waited) nap(100);
  printf("live_grow done\n");
  for (int i = 0; i < steps && i < 1024; ++i) free(blocks[i]);
  return 0;
}
