// exec while another thread allocates: the other thread dies wherever it is, possibly holding a ring
// ticket it never fills. "main": the main thread execs while a second thread churns. "thread": a second
// thread execs while the main thread churns (the new image then runs under the main thread's pid, the tid
// the dead ticket is signed with). The new image allocates 1000249 bytes and prints "done PID".
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// One per thread: threads sharing it could free each other's blocks twice.
static _Thread_local void* volatile sink;
static atomic_long spun;
static const char* self;

static void* churn(void* arg) {
  (void)arg;
  for (;;) {
    sink = malloc(1000253 % 4096);
    free(sink);
    atomic_fetch_add(&spun, 1);
  }
  return NULL;
}

static void* exec_self(void* arg) {
  (void)arg;
  while (atomic_load(&spun) < 20000) sched_yield();
  execl(self, self, "done", (char*)NULL);
  abort();
}

int main(int argc, char** argv) {
  self = argv[0];
  if (argc > 1 && strcmp(argv[1], "done") == 0) {
    sink = malloc(1000249);
    free(sink);
    printf("done %d\n", (int)getpid());
    return 0;
  }
  pthread_t t;
  if (argc > 1 && strcmp(argv[1], "thread") == 0) {
    pthread_create(&t, NULL, exec_self, NULL);
    churn(NULL);
  }
  pthread_create(&t, NULL, churn, NULL);
  exec_self(NULL);
  return 1;
}
