// Known call chains for the stacks tests (tests/integration/stacks_test.cpp): every mode allocates one block of
// a size that names it, through noinline functions (the compiler may neither inline nor tail-call them: the
// block escapes through an asm statement after the call).
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stacks_lib.h"

#define KEEP(p) __asm__ volatile("" : : "r"(p) : "memory")
#define NOINLINE __attribute__((noinline))

NOINLINE void* chain_c(size_t n) {
  void* p = malloc(n);
  KEEP(p);
  return p;
}
NOINLINE void* chain_b(size_t n) {
  void* p = chain_c(n);
  KEEP(p);
  return p;
}
NOINLINE void* chain_a(size_t n) {
  void* p = chain_b(n);
  KEEP(p);
  return p;
}

NOINLINE void* thread_alloc(size_t n) {
  void* p = malloc(n);
  KEEP(p);
  return p;
}
NOINLINE void* thread_main(void* arg) {
  (void)arg;
  void* p = thread_alloc(1004);
  KEEP(p);
  return p;
}

NOINLINE void* child_alloc(size_t n) {
  void* p = malloc(n);
  KEEP(p);
  return p;
}

static void* volatile g_signal_block;
NOINLINE void* signal_alloc(size_t n) {
  void* p = malloc(n);
  KEEP(p);
  return p;
}
static void on_signal(int sig) {
  (void)sig;
  g_signal_block = signal_alloc(1006);
}

NOINLINE void* recurse(int depth) {
  void* p = depth == 0 ? malloc(1007) : recurse(depth - 1);
  KEEP(p);
  return p;
}

int main(int argc, char** argv) {
  // argv[1]: the dlopen'd module's path; argv[2] "after-exec": the image exec started.
  if (argc > 2 && strcmp(argv[2], "after-exec") == 0) {
    free(chain_a(1009));
    return 0;
  }
  void* p = chain_a(1001);
  void* q = lib_outer(1002);
  void* module = dlopen(argv[1], RTLD_NOW);
  if (module == NULL) {
    fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
    return 1;
  }
  void* (*dl_outer)(size_t) = (void* (*)(size_t))dlsym(module, "dl_outer");
  void* r = dl_outer(1003);
  pthread_t t;
  void* from_thread = NULL;
  pthread_create(&t, NULL, thread_main, NULL);
  pthread_join(t, &from_thread);
  const pid_t child = fork();
  if (child == 0) {
    void* c = child_alloc(1005);
    KEEP(c);
    _exit(0);
  }
  waitpid(child, NULL, 0);
  signal(SIGUSR1, on_signal);
  raise(SIGUSR1);
  void* deep = recurse(200);
  free(p);
  free(q);
  free(r);
  free(from_thread);
  free(g_signal_block);
  free(deep);
  dlclose(module);
  // After the dlclose: a new allocation so the unload is noted (the next new stack rescans the modules).
  void* after = chain_a(1008);
  free(after);
  execl(argv[0], argv[0], argv[1], "after-exec", (char*)NULL);
  return 1;
}
