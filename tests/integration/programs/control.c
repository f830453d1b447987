// The harness control API (memtrack/control.h) under `memtrack record`: known allocations before, inside and
// after regions and while paused, with figures tests/integration/control_test.cpp checks exactly.
//   control            the scenario below (single-threaded except for the fork)
//   control threads N  N threads allocating while two threads toggle pause/resume and open regions
//   control wait       a line protocol on stdin (below), while the test toggles from outside (ctl, signals)
//   control exec       a region open across an exec
//   control noop N     N rounds of every control call (the no-op path when run without memtrack)
// No stdio before the end: its buffer would be an allocation of its own.
#include "memtrack/control.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void* volatile sink;  // keeps the compiler from folding a malloc/free pair away

static void* take(size_t n) {
  void* p = malloc(n);
  sink = p;
  return p;
}

static void say(const char* s) { (void)!write(1, s, strlen(s)); }

static int scenario(void) {
  char* a = take(1000);  // before any region: kept until the pause
  char* b = take(111);   // before; freed inside "first": a free of an older block

  memtrack_region_begin("first");
  char* c = take(2000);
  char* d = take(3000);  // retained by "first", freed in "second"
  free(b);
  free(c);
  memtrack_region_end();  // first#1: 2 allocations, 5000 B, 1 own free (2000), 1 older, peak 5000, retained 3000

  char* k = take(222);  // reallocated while paused
  memtrack_pause();
  char* p = take(4000);  // not recorded
  free(a);               // recorded: a was allocated while recording
  k = realloc(k, 3333);  // recorded as the Free of the 222-byte block; the new block is not recorded
  sink = k;
  memtrack_resume();
  free(p);  // recorded: a free of a block the artifact never saw (unmatched)
  free(k);  // likewise

  memtrack_region_begin("second");
  char* e = take(500);
  memtrack_region_begin("inner");
  char* f = take(600);
  free(f);
  memtrack_region_end();  // inner: 1 allocation, 600 B, 1 free, peak 600, retained 0
  memtrack_pause();
  char* g = take(700);  // not recorded (paused inside a region)
  memtrack_resume();
  free(e);
  free(d);
  memtrack_region_end();  // second: 2 allocations, 1100 B, 2 own frees, 1 older (d), peak 1100, retained 0
  free(g);

  memtrack_region_begin("first");
  char* h = take(50);
  memtrack_region_end();  // first#2: 1 allocation, 50 B, retained 50
  free(h);                // after: the region filter still passes it (h was the region's)

  memtrack_region_begin("forked");
  char* i = take(10);
  const pid_t child = fork();
  if (child == 0) {
    char* j = take(20);
    free(j);
    _exit(memtrack_is_recording() ? 0 : 3);
  }
  int status = 0;
  waitpid(child, &status, 0);
  memtrack_region_end();  // forked: 2 allocations (10 parent, 20 child), 30 B, 1 free (20), peak 30, retained 10
  free(i);

  say(memtrack_is_recording() ? "recording\n" : "not recording\n");
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

static volatile int stop;

static void* allocator(void* arg) {
  (void)arg;
  while (!stop) {
    void* p = take(64);
    free(p);
  }
  return NULL;
}

static void* toggler(void* arg) {
  const int rounds = *(int*)arg;
  for (int r = 0; r < rounds; ++r) {
    memtrack_region_begin("toggle");
    memtrack_pause();
    void* p = take(32);
    memtrack_resume();
    free(p);
    memtrack_region_end();
  }
  return NULL;
}

static int threads(int n) {
  pthread_t t[16], tog[2];
  if (n > 16) n = 16;
  for (int i = 0; i < n; ++i) pthread_create(&t[i], NULL, allocator, NULL);
  int rounds = 2000;
  for (int i = 0; i < 2; ++i) pthread_create(&tog[i], NULL, toggler, &rounds);
  for (int i = 0; i < 2; ++i) pthread_join(tog[i], NULL);
  stop = 1;
  for (int i = 0; i < n; ++i) pthread_join(t[i], NULL);
  memtrack_resume();  // both togglers may have left it either way: end recording
  char* last = take(77);
  free(last);
  return 0;
}

// A line protocol on stdin for the test that toggles from outside: "a" allocates (and frees) one 1111-byte
// block, "q" only asks; each answers "1" or "0" (memtrack_is_recording) on its own line.
static int wait_lines(void) {
  char buf[64];
  ssize_t n;
  while ((n = read(0, buf, sizeof buf)) > 0)
    for (ssize_t k = 0; k < n; ++k) {
      if (buf[k] != 'a' && buf[k] != 'q') continue;
      if (buf[k] == 'a') {
        void* p = take(1111);
        free(p);
      }
      say(memtrack_is_recording() ? "1\n" : "0\n");
    }
  return 0;
}

// The no-op path (no memtrack): every call, `rounds` times; answers how many calls said "recording".
static int noop(long rounds) {
  int recording = 0;
  for (long r = 0; r < rounds; ++r) {
    memtrack_region_begin("noop");
    memtrack_pause();
    memtrack_resume();
    memtrack_region_end();
    recording += memtrack_is_recording();
  }
  say(recording == 0 ? "0\n" : "1\n");
  return 0;
}

// A region left open across an exec: the exec ends it (the new image runs `noop 1`, a region of its own).
static int exec_in_region(const char* self) {
  memtrack_region_begin("exec");
  (void)take(10);
  execl(self, self, "noop", "1", (char*)NULL);
  return 1;
}

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "exec") == 0) return exec_in_region(argv[0]);
  if (argc >= 3 && strcmp(argv[1], "threads") == 0) return threads(atoi(argv[2]));
  if (argc >= 2 && strcmp(argv[1], "wait") == 0) return wait_lines();
  if (argc >= 3 && strcmp(argv[1], "noop") == 0) return noop(atol(argv[2]));
  return scenario();
}
