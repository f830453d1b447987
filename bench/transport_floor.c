// The transport choice, measured without the allocator or the encoder: P producer threads each push N
// 48-byte events to one consumer thread that copies them out, through
//   ring  - the runtime's shared ring: one fetch_add ticket per event, slot handoff by sequence number
//           (memtrack/runtime/ring.h), causal by construction;
//   pipe  - per-thread buffers of 85 events written with one write(2) each (atomic up to PIPE_BUF), read
//           by the consumer; not causal across threads without an extra merge;
//   pipe1 - one write(2) per event (causal, what an unbuffered pipe transport costs);
//   merge - per-thread rings (one producer, one consumer each, no shared counter) whose events carry an
//           ordered TSC reading, merged by the consumer in timestamp order: the alternative issue 26 asks to
//           measure. Causal where the TSCs of all cores agree; the protocol (a model of what the runtime
//           would need, docs/RUNTIME.md, "Cost"): a producer marks its lane busy (a seq_cst store), takes
//           its timestamp with rdtscp (after every earlier load and store), writes and publishes the event,
//           then clears the mark. The consumer emits the earliest published event only when no lane can
//           still publish an earlier one: a busy lane's next event is no earlier than its last, an idle
//           lane's is later than the consumer's own reading taken before it looked.
// Every producer takes one TSC reading per event, as the runtime does: a plain rdtsc, but the ordered one the
// merge needs in the merge.
// Prints ns per event (wall time / total events) and each alternative's time as a ratio to the ring's, from
// the same run. Build and run:
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
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

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

// The runtime's clock read (ring.h's ring_timestamp on an invariant TSC): no ordering.
static uint64_t tsc(void) {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return now_ns();
#endif
}

// A reading ordered after every earlier instruction, loads and stores included (rdtscp), so that a
// timestamp taken after a load that saw another thread's event is later than that event's; for the
// consumer, also before every later instruction (the lfence).
static uint64_t stamp(void) {
#if defined(__x86_64__)
  unsigned aux;
  uint64_t t = __rdtscp(&aux);
  _mm_lfence();
  return t;
#else
  return now_ns();
#endif
}

static void* ring_producer(void* arg) {
  uint64_t id = (uint64_t)(uintptr_t)arg;
  for (long i = 0; i < n_per_thread; ++i) {
    uint64_t t = atomic_fetch_add_explicit(&head, 1, memory_order_relaxed);
    Slot* s = &ring[t & (RING - 1)];
    while (atomic_load_explicit(&s->seq, memory_order_acquire) != t) sched_yield();  // ring full
    s->e = (Event){{tsc(), id, (uint64_t)i, t, 0, 0}};
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

#define LANE (1u << 12)  // slots per producer: 4,096 of 64 bytes
typedef struct {
  Slot slots[LANE];
  _Alignas(64) _Atomic uint64_t busy;  // 1 while the producer is inside an event
} Lane;
static Lane* lanes;
// Happens-before across lanes, checked: every 64th event a producer swaps its event's timestamp into the
// baton; the timestamp it takes out was published by another producer before the swap, so the producer's
// next timestamp must be later (what the merge's causality needs of the TSC across cores).
static _Alignas(64) _Atomic uint64_t baton;

static void* merge_producer(void* arg) {
  uint64_t id = (uint64_t)(uintptr_t)arg;
  Lane* l = &lanes[id];
  uint64_t witness = 0;  // a timestamp taken out of the baton, which this lane's next one must exceed
  for (long i = 0; i < n_per_thread; ++i) {
    // Busy before the timestamp is taken (a seq_cst store: a full fence on x86), so a consumer that finds
    // the lane empty and not busy knows the lane's next timestamp is later than its own earlier reading.
    atomic_store_explicit(&l->busy, 1, memory_order_seq_cst);
    uint64_t ts = stamp();
    Slot* s = &l->slots[(uint64_t)i & (LANE - 1)];
    while (atomic_load_explicit(&s->seq, memory_order_acquire) != (uint64_t)i) sched_yield();  // lane full
    s->e = (Event){{ts, id, (uint64_t)i, witness, 0, 0}};
    atomic_store_explicit(&s->seq, (uint64_t)i + 1, memory_order_release);
    atomic_store_explicit(&l->busy, 0, memory_order_release);
    witness = (i & 63) == 0 ? atomic_exchange_explicit(&baton, ts, memory_order_acq_rel) : 0;
  }
  return NULL;
}

static void* merge_consumer(void* arg) {
  (void)arg;
  uint64_t total = (uint64_t)n_per_thread * (uint64_t)producers, sum = 0, last_ts = 0, out_of_order = 0;
  uint64_t before_witness = 0;  // events whose timestamp is not after the one their producer took out of the baton
  uint64_t pos[64] = {0}, lane_last[64] = {0};  // per lane: events emitted, the last one's timestamp
  for (uint64_t emitted = 0; emitted < total;) {
    // The lane whose next event is the earliest, the next earliest lane's, and the earliest timestamp a
    // lane without a published event may still give: a busy lane's last one (its timestamps only grow), an
    // idle lane's the reading taken before looking (`now`). A lane's busy word is read only when it has no
    // published event: the producer writes it at every event, so each read may move its cache line.
    const uint64_t now = stamp();
    uint64_t horizon = UINT64_MAX, best_ts = UINT64_MAX, second_ts = UINT64_MAX;
    int best = -1;
    for (int p = 0; p < producers; ++p) {
      Lane* l = &lanes[p];
      if (pos[p] == (uint64_t)n_per_thread) continue;  // every event of the lane emitted
      Slot* s = &l->slots[pos[p] & (LANE - 1)];
      uint64_t ts = UINT64_MAX;
      if (atomic_load_explicit(&s->seq, memory_order_acquire) == pos[p] + 1) {
        ts = s->e.v[0];
      } else {
        const uint64_t busy = atomic_load_explicit(&l->busy, memory_order_seq_cst);
        if (atomic_load_explicit(&s->seq, memory_order_acquire) == pos[p] + 1) {
          ts = s->e.v[0];  // published between the two loads
        } else {
          const uint64_t may = busy != 0 ? lane_last[p] : now;
          if (may < horizon) horizon = may;
          continue;
        }
      }
      if (ts < best_ts) {
        second_ts = best_ts;
        best_ts = ts;
        best = p;
      } else if (ts < second_ts) {
        second_ts = ts;
      }
    }
    if (best < 0 || best_ts >= horizon) {
      if (best < 0) {
        struct timespec pause = {0, 20000};  // caught up with every lane: as the ring's consumer does
        nanosleep(&pause, NULL);
      } else {
        sched_yield();  // a lane inside an event may still give an earlier one
      }
      continue;
    }
    // The best lane's events go out while they stay below every other lane's next one and the horizon.
    const uint64_t bound = second_ts < horizon ? second_ts : horizon;
    for (;;) {
      Slot* s = &lanes[best].slots[pos[best] & (LANE - 1)];
      Event e = s->e;
      out_of_order += e.v[0] < last_ts;
      before_witness += e.v[3] != 0 && e.v[0] <= e.v[3];
      last_ts = e.v[0];
      lane_last[best] = e.v[0];
      sum += e.v[2];
      atomic_store_explicit(&s->seq, pos[best] + LANE, memory_order_release);
      ++pos[best];
      ++emitted;
      if (pos[best] == (uint64_t)n_per_thread) break;
      Slot* next = &lanes[best].slots[pos[best] & (LANE - 1)];
      if (atomic_load_explicit(&next->seq, memory_order_acquire) != pos[best] + 1 || next->e.v[0] >= bound) break;
    }
  }
  if (out_of_order != 0 || before_witness != 0)
    fprintf(stderr,
            "transport_floor: merge: %llu events out of timestamp order, %llu timestamps not after a timestamp "
            "that happened before them\n",
            (unsigned long long)out_of_order, (unsigned long long)before_witness);
  return (void*)(uintptr_t)sum;
}

static void* pipe_producer(void* arg) {
  uint64_t id = (uint64_t)(uintptr_t)arg;
  Event buf[85];
  int n = 0;
  for (long i = 0; i < n_per_thread; ++i) {
    buf[n++] = (Event){{tsc(), id, (uint64_t)i, 0, 0, 0}};
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
  lanes = aligned_alloc(64, sizeof(Lane) * (size_t)producers);
  if (lanes == NULL) return 1;
  for (int p = 0; p < producers; ++p) {
    for (uint64_t i = 0; i < LANE; ++i) atomic_init(&lanes[p].slots[i].seq, i);
    atomic_init(&lanes[p].busy, 0);
  }
  double merge_ns = run(merge_producer, merge_consumer);
  free(lanes);
  if (pipe(pipe_fd) != 0) return 1;
  batch_events = 85;  // 4080 bytes <= PIPE_BUF: each batch is one atomic write
  double pipe_ns = run(pipe_producer, pipe_consumer);
  long saved = n_per_thread;
  n_per_thread = saved / 10 > 0 ? saved / 10 : 1;  // one syscall per event is slow: a tenth of the events
  batch_events = 1;
  double pipe1_ns = run(pipe_producer, pipe_consumer);
  printf(
      "transport floor, %d producers: ring %.1f ns/event, pipe (85-event batches) %.1f ns/event (%.2fx ring), "
      "pipe (1 event per write) %.1f ns/event (%.0fx ring), merge (per-thread rings by timestamp) %.1f ns/event "
      "(%.2fx ring)\n",
      producers, ring_ns, pipe_ns, pipe_ns / ring_ns, pipe1_ns, pipe1_ns / ring_ns, merge_ns, merge_ns / ring_ns);
  return 0;
}
