// What each /proc file the resident sampler could read costs (docs/RUNTIME.md, "Resident memory"): a child
// runs tests/integration/programs/resident.c (holding MIB touched, or "busy": mapping, touching and unmapping
// without pause), and this process preads /proc/<child>/{statm,status,maps,smaps_rollup} at offset 0 through
// an open descriptor, printing the CPU and wall microseconds per read; then the CPU cost of one 1 ms sleep and
// wake-up (what each poll round of the sampler pays besides its reads); then one page snapshot (docs/RUNTIME.md,
// "Resident pages": maps, then pagemap's 8-byte entries over every writable private anonymous mapping, 8,192 per
// pread, as runtime/recorder/src/proc.cpp's read_anon_pages); last the scan of memtrack's own pages on a mapping
// like the preload's tables, by pagemap entries and by PAGEMAP_SCAN (own_pages_scan). Build and run:
//   cc -O2 bench/proc_read_cost.c -o /tmp/proc_read_cost
//   /tmp/proc_read_cost build/dev/tests/programs/resident 512    (or: ... resident busy)
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

// Linux 6.7's PAGEMAP_SCAN, spelled out for older headers (as runtime/recorder/src/proc.cpp does).
struct page_region_ {
  uint64_t start, end, categories;
};
struct pm_scan_arg_ {
  uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted, category_mask,
      category_anyof_mask, return_mask;
};
#define PAGEMAP_SCAN_ _IOWR('f', 16, struct pm_scan_arg_)

// The resident sampler's scan of memtrack's own pages (proc.cpp, resident_bytes_of_mapping) on a mapping like
// the preload's tables (104 MiB of a memfd, private, NORESERVE) with TOUCHED pages written, spread over it: the
// CPU of one scan by pagemap entries (8,192 a pread) and by PAGEMAP_SCAN (present ranges; "n/a" without it).
static void own_pages_scan(size_t touched) {
  const size_t bytes = (size_t)104 << 20, pages = bytes / 4096;
  const int fd = (int)syscall(SYS_memfd_create, "memtrack-tables", 0);
  if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0) return;
  char* map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return;
  for (size_t i = 0; i < touched; ++i) map[(i * 7919 % pages) * 4096] = 1;
  const int pagemap = open("/proc/self/pagemap", O_RDONLY);
  static uint64_t entries[8192];
  static struct page_region_ regions[256];
  const int n = 200;
  unsigned long long by_entries = 0, by_scan = 0;
  double cpu = now(CLOCK_THREAD_CPUTIME_ID);
  for (int r = 0; r < n; ++r)
    for (uint64_t p = (uint64_t)map; p < (uint64_t)map + bytes;) {
      uint64_t k = ((uint64_t)map + bytes - p) / 4096;
      if (k > 8192) k = 8192;
      const ssize_t got = pread(pagemap, entries, k * 8, (off_t)(p / 4096 * 8));
      if (got <= 0) break;
      for (ssize_t e = 0; e < got / 8; ++e) by_entries += entries[e] >> 63;
      p += (uint64_t)(got / 8) * 4096;
    }
  const double entries_us = (now(CLOCK_THREAD_CPUTIME_ID) - cpu) / n * 1e6;
  int scan_ok = 1;
  cpu = now(CLOCK_THREAD_CPUTIME_ID);
  for (int r = 0; r < n && scan_ok; ++r)
    for (uint64_t at = (uint64_t)map; at < (uint64_t)map + bytes;) {
      struct pm_scan_arg_ arg = {sizeof arg, 0, at, (uint64_t)map + bytes, 0, (uint64_t)regions, 256, 0, 0, 1u << 3,
                                 0, (1u << 3) | (1u << 2)};
      const int got = ioctl(pagemap, PAGEMAP_SCAN_, &arg);
      if (got < 0) {
        scan_ok = 0;
        break;
      }
      for (int i = 0; i < got; ++i) by_scan += (regions[i].end - regions[i].start) / 4096;
      if (arg.walk_end <= at) break;
      at = arg.walk_end;
    }
  const double scan_us = (now(CLOCK_THREAD_CPUTIME_ID) - cpu) / n * 1e6;
  if (scan_ok)
    printf("own pages, 104 MiB mapping, %zu touched: %.1f us CPU by entries, %.1f us by PAGEMAP_SCAN (%llu, %llu present)\n",
           touched, entries_us, scan_us, by_entries / n, by_scan / n);
  else
    printf("own pages, 104 MiB mapping, %zu touched: %.1f us CPU by entries, PAGEMAP_SCAN n/a\n", touched, entries_us);
  close(pagemap);
  munmap(map, bytes);
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
  own_pages_scan(10);
  own_pages_scan(300);
  own_pages_scan(5000);
  return 0;
}
