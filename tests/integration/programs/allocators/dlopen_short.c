// Loads short_entry.c's library with dlopen while another thread allocates with malloc and free (the patch
// is applied while it runs), then both threads call its mi_malloc, mi_free and mi_free_size through dlsym'd
// pointers, 100 of each per thread, with size 777 (a size nothing else here uses). Prints "ev TID KIND SIZE
// ADDR" for each call and "done".
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static void* (*p_malloc)(size_t);
static void (*p_free)(void*);
static void (*p_free_size)(void*, size_t);
static atomic_int loaded, stop, spins;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static void calls(void) {
  const long tid = syscall(SYS_gettid);
  char text[200 * 64];
  size_t len = 0;
  for (int i = 0; i < 100; ++i) {
    void* a = p_malloc(777);
    void* b = p_malloc(777);
    p_free(a);
    p_free_size(b, 777);
    len += (size_t)snprintf(text + len, sizeof text - len, "ev %ld Malloc 777 %llu\nev %ld Malloc 777 %llu\n", tid,
                            (unsigned long long)(size_t)a, tid, (unsigned long long)(size_t)b);
  }
  pthread_mutex_lock(&out_lock);
  fwrite(text, 1, len, stdout);
  pthread_mutex_unlock(&out_lock);
}

// One malloc and free the compiler cannot take away.
static void churn(void) {
  void* volatile p = malloc(64);
  free(p);
}

static void* other(void* arg) {
  (void)arg;
  // Allocating all through the patching.
  while (!atomic_load(&loaded)) {
    churn();
    atomic_fetch_add(&spins, 1);
  }
  calls();
  while (!atomic_load(&stop)) churn();
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  pthread_t t;
  if (pthread_create(&t, NULL, other, NULL) != 0) return 1;
  while (atomic_load(&spins) < 1000) {
  }
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) return 1;
  p_malloc = (void* (*)(size_t))dlsym(h, "mi_malloc");
  p_free = (void (*)(void*))dlsym(h, "mi_free");
  p_free_size = (void (*)(void*, size_t))dlsym(h, "mi_free_size");
  if (!p_malloc || !p_free || !p_free_size) return 1;
  atomic_store(&loaded, 1);
  calls();
  atomic_store(&stop, 1);
  pthread_join(t, NULL);
  printf("done\n");
  return 0;
}
