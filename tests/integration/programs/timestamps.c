// Brackets allocations with clock_gettime(CLOCK_MONOTONIC): prints "sample BEFORE AFTER ADDR" for 5
// mallocs of 1000267 bytes spread over ~200 ms, so the test can check the artifact's timestamps are
// CLOCK_MONOTONIC nanoseconds (whichever way the preload read the clock).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(void) {
  static void* volatile blocks[5];
  uint64_t before[5], after[5];
  for (int i = 0; i < 5; ++i) {
    before[i] = now_ns();
    blocks[i] = malloc(1000267);
    after[i] = now_ns();
    usleep(50000);
  }
  for (int i = 0; i < 5; ++i)
    printf("sample %llu %llu %llu\n", (unsigned long long)before[i], (unsigned long long)after[i],
           (unsigned long long)(uintptr_t)blocks[i]);
  return 0;
}
