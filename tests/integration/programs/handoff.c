// Blocks handed from one thread to another across a happens-before edge, many thousands of times, for
// Record.HandoffAcrossThreadsKeepsHappensBefore (record_test.cpp). A producer thread mallocs a block and
// hands it over through a queue of QUEUE slots; a consumer thread takes it, reallocs it larger and frees the
// result. The edge from the producer's malloc to the consumer's realloc is
//   atomic  a release store of the pointer into the slot and the consumer's acquire load of it (the slot is
//           emptied with a release store the producer acquires before it reuses the slot);
//   mutex   the slot is written and read under one pthread mutex (with two condition variables).
// Every block freed by the consumer may come back to the producer's next malloc (glibc moves it from the
// consumer's tcache to the producer's arena), so the edge back, through the allocator's own lock, is crossed
// too. Sizes mark the blocks: mallocs 5555..5561, reallocs 6666..6672.
//
//   handoff atomic|mutex N   prints "handoffs N producer_tid T consumer_tid U"
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define QUEUE 4

static long n_handoffs;
static int use_mutex;
static _Atomic(void*) slots[QUEUE];
static void* locked_slots[QUEUE];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t filled = PTHREAD_COND_INITIALIZER, emptied = PTHREAD_COND_INITIALIZER;
static _Atomic int producer_tid, consumer_tid;

static void put(long i, void* p) {
  int k = (int)(i % QUEUE);
  if (use_mutex) {
    pthread_mutex_lock(&lock);
    while (locked_slots[k] != NULL) pthread_cond_wait(&emptied, &lock);
    locked_slots[k] = p;
    pthread_cond_signal(&filled);
    pthread_mutex_unlock(&lock);
    return;
  }
  // On 2 shared cores the other thread may not be running: yield instead of spinning the time slice away.
  while (atomic_load_explicit(&slots[k], memory_order_acquire) != NULL) sched_yield();
  atomic_store_explicit(&slots[k], p, memory_order_release);
}

static void* take(long i) {
  int k = (int)(i % QUEUE);
  void* p;
  if (use_mutex) {
    pthread_mutex_lock(&lock);
    while ((p = locked_slots[k]) == NULL) pthread_cond_wait(&filled, &lock);
    locked_slots[k] = NULL;
    pthread_cond_signal(&emptied);
    pthread_mutex_unlock(&lock);
    return p;
  }
  while ((p = atomic_load_explicit(&slots[k], memory_order_acquire)) == NULL) sched_yield();
  atomic_store_explicit(&slots[k], NULL, memory_order_release);
  return p;
}

static void* producer(void* arg) {
  (void)arg;
  atomic_store(&producer_tid, gettid());
  for (long i = 0; i < n_handoffs; ++i) {
    char* p = malloc(5555 + (size_t)(i % 7));
    if (p == NULL) abort();
    p[0] = (char)i;  // the consumer checks it: the block is the one handed over
    put(i, p);
  }
  return NULL;
}

static void* consumer(void* arg) {
  (void)arg;
  atomic_store(&consumer_tid, gettid());
  for (long i = 0; i < n_handoffs; ++i) {
    char* p = take(i);
    if (p[0] != (char)i) abort();
    char* q = realloc(p, 6666 + (size_t)(i % 7));
    if (q == NULL) abort();
    free(q);
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 3 || (strcmp(argv[1], "atomic") != 0 && strcmp(argv[1], "mutex") != 0)) {
    fprintf(stderr, "usage: handoff atomic|mutex N\n");
    return 2;
  }
  use_mutex = strcmp(argv[1], "mutex") == 0;
  n_handoffs = atol(argv[2]);
  pthread_t a, b;
  pthread_create(&b, NULL, consumer, NULL);
  pthread_create(&a, NULL, producer, NULL);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  printf("handoffs %ld producer_tid %d consumer_tid %d\n", n_handoffs, atomic_load(&producer_tid),
         atomic_load(&consumer_tid));
  return 0;
}
