// "exit N": N mallocs of 1000211 bytes (never freed), then _exit(3).
// "survive N FILE": N malloc/free pairs, creating FILE.started after the first thousand and FILE at the
// end (the test kills the recorder in between).
// "killchild N": forks a child whose two threads churn until the parent SIGKILLs it (and reaps it itself,
// so the recorder never sees how it died), then makes N malloc/free pairs of 813 bytes and exits 0.
// "kill N": two threads allocate 1000213-byte blocks in a loop; after the main thread made N of its own,
// the process SIGKILLs itself while the other thread is mid-run.
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

// volatile: GCC removes a malloc whose result is unused, and a malloc/free pair. One per thread: a shared
// one let a thread free the block another thread had just freed (a double free the artifact recorded).
static _Thread_local void* volatile sink;

static atomic_long spun;  // allocations made by spin(), so "mid-run" is certain before the kill

static void* spin(void* arg) {
  (void)arg;
  for (;;) {
    sink = malloc(1000219 % 4096);
    free(sink);
    atomic_fetch_add(&spun, 1);
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  long n = atol(argv[2]);
  if (strcmp(argv[1], "exit") == 0) {
    for (long i = 0; i < n; ++i) sink = malloc(1000211);
    printf("mallocs %ld\n", n);
    fflush(stdout);
    _exit(3);
  }
  if (strcmp(argv[1], "survive") == 0 && argc > 3) {
    for (long i = 0; i < n; ++i) {
      sink = malloc(1000223 % 4096);
      free(sink);
      if (i == 1000) {  // tell the test we are recording: it kills the recorder now
        char started[4096];
        snprintf(started, sizeof started, "%s.started", argv[3]);
        fclose(fopen(started, "w"));
      }
    }
    FILE* f = fopen(argv[3], "w");
    if (f == NULL) return 1;
    fprintf(f, "done %ld\n", n);
    fclose(f);
    return 0;
  }
  if (strcmp(argv[1], "killchild") == 0) {
    pid_t child = fork();
    if (child == 0) {
      pthread_t t;
      pthread_create(&t, NULL, spin, NULL);
      spin(NULL);
    }
    usleep(30 * 1000);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    for (long i = 0; i < n; ++i) {
      sink = malloc(1000237 % 4096);
      free(sink);
    }
    printf("mallocs %ld\n", n);
    return 0;
  }
  pthread_t t;
  pthread_create(&t, NULL, spin, NULL);
  while (atomic_load(&spun) < 1000) sched_yield();
  for (long i = 0; i < n; ++i) {
    sink = malloc(1000213 % 4096);
    free(sink);
  }
  printf("mallocs %ld\n", n);
  fflush(stdout);
  raise(SIGKILL);
  return 0;
}
