// 8 threads x 100k operations. Sizes 7777..7789 mark our blocks. Every 8th block is handed to another
// thread through a shared mailbox and freed there, so frees cross threads and the artifact's order is
// tested where per-thread buffering would break it. Prints "mallocs N frees N".
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 8
#define OPS 100000
#define LOCAL 64
#define MAILBOX 1024

static _Atomic(void*) mailbox[MAILBOX];
static atomic_ulong mallocs, frees;

static void* worker(void* arg) {
  unsigned id = (unsigned)(uintptr_t)arg;
  void* local[LOCAL] = {0};
  unsigned long m = 0, f = 0;
  unsigned seed = id * 2654435761u + 1;
  for (int op = 0; op < OPS; ++op) {
    seed = seed * 1103515245u + 12345u;
    unsigned k = (seed >> 8) % LOCAL;
    if (local[k] == NULL) {
      local[k] = malloc(7777 + (seed >> 20) % 13);
      ++m;
    } else if ((seed >> 4) % 8 == 0) {
      // Hand the block over; free whatever the mailbox held (some other thread's block).
      void* other = atomic_exchange(&mailbox[(seed >> 12) % MAILBOX], local[k]);
      local[k] = NULL;
      if (other != NULL) {
        free(other);
        ++f;
      }
    } else {
      free(local[k]);
      local[k] = NULL;
      ++f;
    }
  }
  for (int k = 0; k < LOCAL; ++k)
    if (local[k] != NULL) {
      free(local[k]);
      ++f;
    }
  atomic_fetch_add(&mallocs, m);
  atomic_fetch_add(&frees, f);
  return NULL;
}

int main(void) {
  pthread_t t[THREADS];
  for (unsigned i = 0; i < THREADS; ++i) pthread_create(&t[i], NULL, worker, (void*)(uintptr_t)i);
  for (unsigned i = 0; i < THREADS; ++i) pthread_join(t[i], NULL);
  unsigned long f = atomic_load(&frees);
  for (int i = 0; i < MAILBOX; ++i) {
    void* p = atomic_exchange(&mailbox[i], NULL);
    if (p != NULL) {
      free(p);
      ++f;
    }
  }
  printf("mallocs %lu frees %lu\n", atomic_load(&mallocs), f);
  return 0;
}
