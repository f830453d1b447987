// What first touches of memory cost on this machine, and how well its CPUs' TSCs agree (docs/RUNTIME.md,
// "Cost" and "Transport"), the two facts behind codec/huge_pages.h, the ring's zero-page slots (ring.h,
// seq_word) and TscClock's kvm-clock rule. Prints, per 4 KiB page of a 64 MiB region, as ratios to the
// write to a page already touched (the floor, measured beside them):
//   - the first write to a fresh anonymous page (one page fault each);
//   - the first write after MAP_POPULATE (what prefaulting leaves; in a VM the hypervisor's own tables);
//   - the first write to a region with MADV_HUGEPAGE (2 MiB transparent huge pages where the kernel has them);
// each the best and the worst of ROUNDS rounds. Then the largest distance, in ns, of 100 (TSC,
// CLOCK_MONOTONIC) pairs taken alternately on each allowed CPU from the line through the first CPU's first and
// last pair.
// Build and run:
//   cc -O2 bench/page_fault_cost.c -o /tmp/page_fault_cost -lm && /tmp/page_fault_cost [ROUNDS]
#define _GNU_SOURCE
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

enum { kRegion = 64 << 20, kPage = 4096, kHuge = 2 << 20 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static char* map(int flags) {
  char* p = mmap(NULL, kRegion + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
  if (p == MAP_FAILED) {
    perror("mmap");
    exit(1);
  }
  return (char*)(((uintptr_t)p + kHuge - 1) & ~(uintptr_t)(kHuge - 1));
}

// Seconds per page to write one byte of each page of [p, p + kRegion).
static double touch(char* p) {
  const double t = now();
  for (size_t i = 0; i < kRegion; i += kPage) p[i] = 1;
  return (now() - t) / (kRegion / kPage);
}

static double first_touch(int flags, int huge) {
  char* p = map(flags);
  if (huge) madvise(p, kRegion, MADV_HUGEPAGE);
  const double s = touch(p);
  munmap(p, kRegion);  // the aligned part; the rest of the mapping is left to the process's exit
  return s;
}

#if defined(__x86_64__)
struct pair {
  double tsc, mono;
  int cpu;
};

static struct pair pair_on(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  sched_setaffinity(0, sizeof one, &one);
  struct pair best = {0, 0, cpu};
  uint64_t width = UINT64_MAX;
  for (int i = 0; i < 8; ++i) {  // the tightest bracket of a few, as TscClock::now
    const uint64_t a = __rdtsc();
    const double m = now() * 1e9;
    const uint64_t b = __rdtsc();
    if (b - a < width) {
      width = b - a;
      best.tsc = (double)a + (double)(b - a) / 2;
      best.mono = m;
    }
  }
  return best;
}

static void tsc_agreement(void) {
  cpu_set_t allowed;
  sched_getaffinity(0, sizeof allowed, &allowed);
  int cpus[CPU_SETSIZE], n = 0;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) cpus[n++] = c;
  struct pair p[100];
  for (int i = 0; i < 100; ++i) {
    p[i] = pair_on(cpus[i % n]);
    const struct timespec pause = {0, 100 * 1000};
    nanosleep(&pause, NULL);
  }
  sched_setaffinity(0, sizeof allowed, &allowed);
  const int last = n == 1 ? 99 : 100 - n;  // the first CPU's last pair
  const double slope = (p[last].mono - p[0].mono) / (p[last].tsc - p[0].tsc);
  double worst = 0;
  for (int i = 0; i < 100; ++i) worst = fmax(worst, fabs(p[0].mono + (p[i].tsc - p[0].tsc) * slope - p[i].mono));
  printf("TSC against CLOCK_MONOTONIC over %d CPUs: every pair within %.0f ns of one line\n", n, worst);
}
#endif

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 5;
  // The best and the worst round of each: where the hypervisor backs the guest's memory on first access and
  // takes back what the guest frees (free page reporting, which works on free 2 MiB blocks), a huge page is
  // cheap when it was freed moments ago and dear when it comes from a block the host took back.
  double fresh = 1e9, populated = 1e9, huge = 1e9, floor = 1e9;
  double fresh_worst = 0, populated_worst = 0, huge_worst = 0;
  for (int r = 0; r < rounds; ++r) {
    const double f = first_touch(0, 0), m = first_touch(MAP_POPULATE, 0), h = first_touch(0, 1);
    fresh = fmin(fresh, f);
    populated = fmin(populated, m);
    huge = fmin(huge, h);
    fresh_worst = fmax(fresh_worst, f);
    populated_worst = fmax(populated_worst, m);
    huge_worst = fmax(huge_worst, h);
    char* p = map(0);
    touch(p);
    floor = fmin(floor, touch(p));
    munmap(p, kRegion);
  }
  printf("per 4 KiB page, x the write to a page already touched (the floor), best and worst of %d rounds:\n", rounds);
  printf("  fresh anonymous page        %7.1fx %7.1fx\n", fresh / floor, fresh_worst / floor);
  printf("  after MAP_POPULATE          %7.1fx %7.1fx\n", populated / floor, populated_worst / floor);
  printf("  MADV_HUGEPAGE (2 MiB pages) %7.1fx %7.1fx\n", huge / floor, huge_worst / floor);
#if defined(__x86_64__)
  tsc_agreement();
#endif
  return 0;
}
