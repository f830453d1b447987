// What each /proc file the resident sampler could read costs (docs/RUNTIME.md, "Resident memory"): a child
// runs tests/integration/programs/resident.c (holding MIB touched, or "busy": mapping, touching and unmapping
// without pause), and this process preads /proc/<child>/{statm,status,maps,smaps_rollup} at offset 0 through
// an open descriptor, printing the CPU and wall microseconds per read; then the CPU cost of one 1 ms sleep and
// wake-up (what each poll round of the sampler pays besides its reads). Build and run:
//   cc -O2 bench/proc_read_cost.c -o /tmp/proc_read_cost
//   /tmp/proc_read_cost build/dev/tests/programs/resident 512    (or: ... resident busy)
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
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
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  return 0;
}
