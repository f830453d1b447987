// Programs whose resident memory is known, for the resident sampler's tests (resident_test.cpp). Each mode
// prints "hwm <bytes>" (its VmHWM, read from /proc/self/status at the end) on stdout; the fork mode prints a
// line per process.
//   touch TOTAL_MIB TOUCHED_MIB HOLD_MS   malloc TOTAL, touch TOUCHED of it a MiB at a time, hold, free
//   fork MIB HOLD_MS                      fork; parent and child each malloc and touch MIB, hold it together
//   dontneed MIB HOLD_MS                  mmap and touch MIB, hold, MADV_DONTNEED it all, hold, touch 1/4 again
//   children N MIB HOLD_MS                fork N children one after the other, each calling _exit at once (gone
//                                         before a sampler can read its /proc files), then malloc and touch
//                                         MIB, hold, free
//   stacks DEPTH MIB HOLD_MS              malloc/free from 2^DEPTH distinct call stacks (memtrack's trace tree
//                                         grows by ~2^(DEPTH+2) nodes: many MiB of its own pages with stacks
//                                         on), then malloc and touch MIB, hold, free
//   sites HOLD_MS                         from two call sites: malloc 64 MiB and touch 16 of it, malloc 16 MiB
//                                         and touch it whole; hold both, free
//   busy MS                               for MS milliseconds: map, touch and unmap 1..16 MiB, and malloc/free,
//                                         without a pause (resident memory always moving: the sampler's worst
//                                         case, for measuring its cost)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static unsigned long long hwm_bytes(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  unsigned long long kb = 0;
  while (f != NULL && fgets(line, sizeof line, f) != NULL)
    if (sscanf(line, "VmHWM: %llu kB", &kb) == 1) break;
  if (f != NULL) fclose(f);
  return kb * 1024;
}

// Writes one byte per page of [p, p + bytes), a MiB every millisecond, so a sampler sees it grow.
static void touch(char* p, size_t bytes) {
  for (size_t off = 0; off < bytes; off += 4096) {
    p[off] = 1;
    if (off % (1 << 20) == 0) sleep_ms(1);
  }
}

// Two call sites per level, never tail calls (the barrier after each call keeps every frame on the stack).
static void branch(int depth, unsigned path);
static __attribute__((noinline)) void left(int depth, unsigned path) {
  branch(depth - 1, path << 1);
  __asm__ volatile("" ::: "memory");
}
static __attribute__((noinline)) void right(int depth, unsigned path) {
  branch(depth - 1, path << 1 | 1);
  __asm__ volatile("" ::: "memory");
}
static __attribute__((noinline)) void branch(int depth, unsigned path) {
  if (depth == 0) {
    void* volatile block = malloc(16 + path % 64);  // volatile: the compiler may not drop the pair
    free(block);
    return;
  }
  left(depth, path);
  right(depth, path);
  __asm__ volatile("" ::: "memory");
}

// Two distinct call sites for the sites mode (noinline: each is its own frame in the stacks).
__attribute__((noinline)) static char* big_site(size_t bytes, size_t touched) {
  char* p = malloc(bytes);
  if (p != NULL) touch(p, touched);
  return p;
}
__attribute__((noinline)) static char* small_site(size_t bytes) {
  char* p = malloc(bytes);
  if (p != NULL) touch(p, bytes);
  return p;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const size_t mib = 1 << 20;
  if (strcmp(argv[1], "touch") == 0 && argc == 5) {
    const size_t total = strtoul(argv[2], NULL, 10) * mib, touched = strtoul(argv[3], NULL, 10) * mib;
    char* p = malloc(total);
    if (p == NULL) return 1;
    touch(p, touched);
    sleep_ms(atol(argv[4]));
    printf("hwm %llu\n", hwm_bytes());
    free(p);
    return 0;
  }
  if (strcmp(argv[1], "fork") == 0 && argc == 4) {
    int ready[2], go[2];
    if (pipe(ready) != 0 || pipe(go) != 0) return 1;
    fflush(stdout);
    const pid_t child = fork();
    if (child < 0) return 1;
    char* p = malloc(strtoul(argv[2], NULL, 10) * mib);
    if (p == NULL) return 1;
    touch(p, strtoul(argv[2], NULL, 10) * mib);
    char c = 0;
    if (child == 0) {
      (void)!write(ready[1], &c, 1);  // holding: the parent holds too while it waits
      (void)!read(go[0], &c, 1);
    } else {
      (void)!read(ready[0], &c, 1);
      sleep_ms(atol(argv[3]));
    }
    printf("%s hwm %llu\n", child == 0 ? "child" : "parent", hwm_bytes());
    fflush(stdout);
    if (child != 0) {
      (void)!write(go[1], &c, 1);
      waitpid(child, NULL, 0);
    }
    free(p);
    return 0;
  }
  if (strcmp(argv[1], "dontneed") == 0 && argc == 4) {
    const size_t bytes = strtoul(argv[2], NULL, 10) * mib;
    char* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 1;
    touch(p, bytes);
    sleep_ms(atol(argv[3]));
    madvise(p, bytes, MADV_DONTNEED);
    sleep_ms(atol(argv[3]));
    touch(p, bytes / 4);
    sleep_ms(atol(argv[3]));
    printf("hwm %llu\n", hwm_bytes());
    munmap(p, bytes);
    return 0;
  }
  if (strcmp(argv[1], "children") == 0 && argc == 5) {
    fflush(stdout);
    for (int i = atoi(argv[2]); i > 0; --i) {
      const pid_t child = fork();
      if (child < 0) return 1;
      if (child == 0) _exit(0);
      waitpid(child, NULL, 0);
    }
    const size_t bytes = strtoul(argv[3], NULL, 10) * mib;
    char* p = malloc(bytes);
    if (p == NULL) return 1;
    touch(p, bytes);
    sleep_ms(atol(argv[4]));
    printf("hwm %llu\n", hwm_bytes());
    free(p);
    return 0;
  }
  if (strcmp(argv[1], "stacks") == 0 && argc == 5) {
    branch(atoi(argv[2]), 0);
    const size_t bytes = strtoul(argv[3], NULL, 10) * mib;
    char* p = malloc(bytes);
    if (p == NULL) return 1;
    touch(p, bytes);
    sleep_ms(atol(argv[4]));
    printf("hwm %llu\n", hwm_bytes());
    free(p);
    return 0;
  }
  if (strcmp(argv[1], "sites") == 0 && argc == 3) {
    char* big = big_site(64 * mib, 16 * mib);
    char* small = small_site(16 * mib);
    if (big == NULL || small == NULL) return 1;
    sleep_ms(atol(argv[2]));
    printf("hwm %llu\n", hwm_bytes());
    free(small);
    free(big);
    return 0;
  }
  if (strcmp(argv[1], "busy") == 0 && argc == 3) {
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    const long ms = atol(argv[2]);
    for (size_t round = 1;; ++round) {
      clock_gettime(CLOCK_MONOTONIC, &now);
      if ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 >= ms) break;
      const size_t bytes = (round % 16 + 1) * mib;
      char* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) return 1;
      for (size_t off = 0; off < bytes; off += 4096) p[off] = 1;
      munmap(p, bytes);
      for (int i = 0; i < 100; ++i) free(malloc(64 + (size_t)i * 16));
    }
    printf("hwm %llu\n", hwm_bytes());
    return 0;
  }
  return 2;
}
