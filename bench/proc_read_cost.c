// What each /proc file the resident sampler could read costs (docs/RUNTIME.md, "Resident memory"): a child
// runs tests/integration/programs/resident.c (holding MIB touched, or "busy": mapping, touching and unmapping
// without pause), and this process preads /proc/<child>/{statm,status,maps,smaps_rollup} at offset 0 through
// an open descriptor, printing the CPU and wall microseconds per read; then the CPU cost of one 1 ms sleep and
// wake-up (what each poll round of the sampler pays besides its reads); then one page snapshot (docs/RUNTIME.md,
// "Resident pages": maps, then pagemap's 8-byte entries over every writable private anonymous mapping, 8,192 per
// pread, as runtime/recorder/src/proc.cpp's read_anon_pages). Build and run:
//   cc -O2 bench/proc_read_cost.c -o /tmp/proc_read_cost
//   /tmp/proc_read_cost build/dev/tests/programs/resident 512    (or: ... resident busy)
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s RESIDENT_PROGRAM MIB|busy\n", argv[0]);
    return 2;
  }
  const int busy = strcmp(argv[2], "busy") == 0;
  const pid_t child = fork();
  if (child == 0) {
    if (busy)
      execl(argv[1], argv[1], "busy", "10000", (char*)NULL);
    else
      execl(argv[1], argv[1], "touch", argv[2], argv[2], "10000", (char*)NULL);
    _exit(127);
  }
  sleep(1);  // let it touch its memory
  static const char* const files[] = {"statm", "status", "maps", "smaps_rollup"};
  char path[64], buf[1 << 16];
  for (int f = 0; f < 4; ++f) {
    snprintf(path, sizeof path, "/proc/%d/%s", child, files[f]);
    const int fd = open(path, O_RDONLY);
    const int n = f < 2 ? 2000 : 200;
    const double cpu = now(CLOCK_THREAD_CPUTIME_ID), wall = now(CLOCK_MONOTONIC);
    ssize_t got = 0;
    for (int i = 0; i < n; ++i) got = pread(fd, buf, sizeof buf, 0);
    printf("%-13s %6zd bytes: %6.1f us CPU, %6.1f us wall per read\n", files[f], got,
           (now(CLOCK_THREAD_CPUTIME_ID) - cpu) / n * 1e6, (now(CLOCK_MONOTONIC) - wall) / n * 1e6);
    close(fd);
  }
  const double cpu = now(CLOCK_THREAD_CPUTIME_ID);
  for (int i = 0; i < 500; ++i) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  printf("1 ms sleep + wake-up: %.1f us CPU\n", (now(CLOCK_THREAD_CPUTIME_ID) - cpu) / 500 * 1e6);
  {
    snprintf(path, sizeof path, "/proc/%d/pagemap", child);
    const int pagemap = open(path, O_RDONLY);
    static uint64_t entries[8192];
    const int n = 10;
    unsigned long long mapped = 0, present = 0;
    const double cpu = now(CLOCK_THREAD_CPUTIME_ID), wall = now(CLOCK_MONOTONIC);
    for (int i = 0; i < n; ++i) {
      snprintf(path, sizeof path, "/proc/%d/maps", child);
      FILE* maps = fopen(path, "r");
      char line[512];
      mapped = present = 0;
      while (maps != NULL && fgets(line, sizeof line, maps) != NULL) {
        unsigned long long lo, hi, off, inode;
        char perms[8];
        unsigned a, b;
        int name = 0;
        if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &lo, &hi, perms, &off, &a, &b, &inode, &name) < 7)
          continue;
        const char* nm = line + name;
        const int anon =
            inode == 0 && (*nm == '\n' || *nm == 0 || strncmp(nm, "[heap]", 6) == 0 || strncmp(nm, "[anon:", 6) == 0);
        if (perms[0] != 'r' || perms[1] != 'w' || perms[3] != 'p' || !anon) continue;
        for (unsigned long long p = lo; p < hi;) {
          unsigned long long k = (hi - p) / 4096;
          if (k > 8192) k = 8192;
          const ssize_t got = pread(pagemap, entries, k * 8, (off_t)(p / 4096 * 8));
          if (got <= 0) break;
          for (ssize_t e = 0; e < got / 8; ++e) present += entries[e] >> 63;
          p += (unsigned long long)(got / 8) * 4096;
          mapped += (unsigned long long)(got / 8);
        }
      }
      if (maps != NULL) fclose(maps);
    }
    printf("page snapshot: %llu MiB mapped anonymous, %llu MiB present: %.2f ms CPU, %.2f ms wall per snapshot\n",
           mapped / 256, present / 256, (now(CLOCK_THREAD_CPUTIME_ID) - cpu) / n * 1e3,
           (now(CLOCK_MONOTONIC) - wall) / n * 1e3);
    close(pagemap);
  }
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  return 0;
}
