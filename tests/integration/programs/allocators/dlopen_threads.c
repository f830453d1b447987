// An allocator library loaded with dlopen (RTLD_LOCAL: its malloc replaces nothing) and called only
// through dlsym'd pointers, from `threads` threads at once, between the 7- and 9-page markers. Each thread
// prints its events ("ev TID KIND SIZE ADDR OLD"); nothing else of its may be in the region.
// Usage: dlopen_threads LIBRARY THREADS
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static void* (*p_malloc)(size_t);
static void* (*p_zalloc)(size_t);
static void* (*p_realloc)(void*, size_t);
static void* (*p_aligned)(size_t, size_t);
static void (*p_free)(void*);
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
enum { kOps = 200 };

struct Log {
  char text[kOps * 6 * 64];
  size_t len;
};

static void logf_(struct Log* log, const char* kind, size_t size, void* p, void* old) {
  const long tid = syscall(SYS_gettid);
  char oldbuf[32] = "-";
  if (old) snprintf(oldbuf, sizeof oldbuf, "%llu", (unsigned long long)(uintptr_t)old);
  log->len += (size_t)snprintf(log->text + log->len, sizeof log->text - log->len, "ev %ld %s %zu %llu %s\n", tid, kind,
                               size, (unsigned long long)(uintptr_t)p, oldbuf);
}

static void* worker(void* arg) {
  struct Log* log = arg;
  for (int i = 0; i < kOps; ++i) {
    const size_t n = 16 + (size_t)i * 8;
    void* a = p_malloc(n);
    logf_(log, "Malloc", n, a, NULL);
    void* z = p_zalloc(n + 1);
    logf_(log, "Calloc", n + 1, z, NULL);
    void* r = p_realloc(a, n * 3);
    logf_(log, "Realloc", n * 3, r, a);
    void* al = p_aligned(n, 128);
    logf_(log, "AlignedAlloc", n, al, NULL);
    logf_(log, "Free", 0, r, NULL);
    p_free(r);
    logf_(log, "Free", 0, z, NULL);
    p_free(z);
    logf_(log, "Free", 0, al, NULL);
    p_free(al);
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  *(void**)&p_malloc = dlsym(h, "mi_malloc");
  *(void**)&p_zalloc = dlsym(h, "mi_zalloc");
  *(void**)&p_realloc = dlsym(h, "mi_realloc");
  *(void**)&p_aligned = dlsym(h, "mi_malloc_aligned");
  *(void**)&p_free = dlsym(h, "mi_free");
  if (!p_malloc || !p_zalloc || !p_realloc || !p_aligned || !p_free) return 1;
  const int threads = atoi(argv[2]);
  struct Log* logs = calloc((size_t)threads, sizeof *logs);
  pthread_t t[16];
  printf("start\n");
  fflush(stdout);
  void* m7 = mmap(NULL, 7 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (threads == 1) {
    worker(&logs[0]);
  } else {
    for (int i = 0; i < threads && i < 16; ++i) pthread_create(&t[i], NULL, worker, &logs[i]);
    for (int i = 0; i < threads && i < 16; ++i) pthread_join(t[i], NULL);
  }
  void* m9 = mmap(NULL, 9 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  printf("mark 28672 %llu\nmark 36864 %llu\n", (unsigned long long)(uintptr_t)m7, (unsigned long long)(uintptr_t)m9);
  pthread_mutex_lock(&out_lock);
  for (int i = 0; i < threads; ++i) fwrite(logs[i].text, 1, logs[i].len, stdout);
  pthread_mutex_unlock(&out_lock);
  return 0;
}
