// The transport choice, measured without the allocator or the encoder: P producer threads each push N
// 48-byte events to one consumer thread that copies them out, through
//   ring  - the runtime's shared ring: one fetch_add ticket per event, slot handoff by sequence number
//           (memtrack/runtime/ring.h), causal by construction;
//   pipe  - per-thread buffers of 85 events written with one write(2) each (atomic up to PIPE_BUF), read
//           by the consumer; not causal across threads without an extra merge;
//   pipe1 - one write(2) per event (causal, what an unbuffered pipe transport costs).
// Prints ns per event (wall time / total events) and each pipe's time as a ratio to the ring's, from the
// same run. Build and run:
//   cc -O2 -pthread bench/transport_floor.c -o /tmp/transport_floor && /tmp/transport_floor 2 2000000
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  uint64_t v[6];
} Event;  // 48 bytes, like codec::Event

typedef struct {
  _Alignas(64) _Atomic uint64_t seq;
  Event e;
} Slot;  // 64 bytes, like RingSlot

#define RING (1u << 16)
static Slot ring[RING];
static _Alignas(64) _Atomic uint64_t head;
static long n_per_thread;
static int producers;
static int pipe_fd[2];
static int batch_events;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void* ring_producer(void* arg) {
  uint64_t id = (uint64_t)(uintptr_t)arg;
  for (long i = 0; i < n_per_thread; ++i) {
    uint64_t t = atomic_fetch_add_explicit(&head, 1, memory_order_relaxed);
    Slot* s = &ring[t & (RING - 1)];
    while (atomic_load_explicit(&s->seq, memory_order_acquire) != t) sched_yield();  // ring full
    s->e = (Event){{t, id, (uint64_t)i, 0, 0, 0}};
    atomic_store_explicit(&s->seq, t + 1, memory_order_release);
  }
  return NULL;
}

static void* ring_consumer(void* arg) {
  (void)arg;
  uint64_t total = (uint64_t)n_per_thread * (uint64_t)producers, sum = 0;
  for (uint64_t pos = 0; pos < total; ++pos) {
    Slot* s = &ring[pos & (RING - 1)];
    // Like the recorder's reader: when it catches up with the producers it sleeps instead of spinning
    // right behind them (which would bounce every slot's cache line while it is being written).
    while (atomic_load_explicit(&s->seq, memory_order_acquire) != pos + 1) {
      struct timespec pause = {0, 20000};
      nanosleep(&pause, NULL);
    }
    Event e = s->e;
    sum += e.v[2];
    atomic_store_explicit(&s->seq, pos + RING, memory_order_release);
  }
  return (void*)(uintptr_t)sum;
}

static void* pipe_producer(void* arg) {
  uint64_t id = (uint64_t)(uintptr_t)arg;
  Event buf[85];
  int n = 0;
  for (long i = 0; i < n_per_thread; ++i) {
    buf[n++] = (Event){{0, id, (uint64_t)i, 0, 0, 0}};
    if (n == batch_events || i + 1 == n_per_thread) {
      if (write(pipe_fd[1], buf, (size_t)n * sizeof(Event)) < 0) abort();
      n = 0;
    }
  }
  return NULL;
}

static void* pipe_consumer(void* arg) {
  (void)arg;
  static Event buf[4096];
  uint64_t total = (uint64_t)n_per_thread * (uint64_t)producers * sizeof(Event), got = 0, sum = 0;
  while (got < total) {
    ssize_t r = read(pipe_fd[0], buf, sizeof buf);
    if (r <= 0) abort();
    got += (uint64_t)r;
    sum += buf[0].v[2];
  }
  return (void*)(uintptr_t)sum;
}

static double run(void* (*producer)(void*), void* (*consumer)(void*)) {
  pthread_t c, p[64];
  uint64_t t0 = now_ns();
  pthread_create(&c, NULL, consumer, NULL);
  for (int i = 0; i < producers; ++i) pthread_create(&p[i], NULL, producer, (void*)(uintptr_t)i);
  for (int i = 0; i < producers; ++i) pthread_join(p[i], NULL);
  pthread_join(c, NULL);
  return (double)(now_ns() - t0) / ((double)n_per_thread * producers);
}

int main(int argc, char** argv) {
  producers = argc > 1 ? atoi(argv[1]) : 2;
  n_per_thread = argc > 2 ? atol(argv[2]) : 2000000;
  if (producers < 1 || producers > 64) return 2;
  for (uint64_t i = 0; i < RING; ++i) atomic_init(&ring[i].seq, i);
  double ring_ns = run(ring_producer, ring_consumer);
  if (pipe(pipe_fd) != 0) return 1;
  batch_events = 85;  // 4080 bytes <= PIPE_BUF: each batch is one atomic write
  double pipe_ns = run(pipe_producer, pipe_consumer);
  long saved = n_per_thread;
  n_per_thread = saved / 10 > 0 ? saved / 10 : 1;  // one syscall per event is slow: a tenth of the events
  batch_events = 1;
  double pipe1_ns = run(pipe_producer, pipe_consumer);
  printf(
      "transport floor, %d producers: ring %.1f ns/event, pipe (85-event batches) %.1f ns/event (%.2fx ring), "
      "pipe (1 event per write) %.1f ns/event (%.0fx ring)\n",
      producers, ring_ns, pipe_ns, pipe_ns / ring_ns, pipe1_ns, pipe1_ns / ring_ns);
  return 0;
}
