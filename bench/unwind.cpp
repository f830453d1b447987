// Stack capture at the bottom of a 24-deep call chain compiled with plain -O2 and no frame pointers
// (tests/unwind/chain.cpp), the shape of the churn workload the stacks issue set its goal on: each
// iteration is one capture plus malloc/free of 32 bytes. The benchmark loop runs inside the chain's leaf, so
// every iteration unwinds the same ~35 frames (the chain plus Google Benchmark's own frames above it; the
// `frames` counter says how many).
//
//   BM_Unwind_None              malloc/free only: the floor every other row is read against
//   BM_Unwind_Memtrack          memtrack_unwind_capture in the steady state: the stack is the thread's
//                               previous one, so the prefix record is checked (one load per frame)
//   BM_Unwind_MemtrackHook      memtrack_unwind_capture called as the preload's malloc calls it: through a
//                               frame that holds a value changing on every call in rbp (the preload's malloc
//                               keeps the returned pointer there), so the innermost frames' rbp differs from
//                               the thread's previous stack
//   BM_Unwind_MemtrackRules     the same with prefix reuse off: every frame unwound through the rule cache
//   BM_Unwind_MemtrackMiss      the same after an invalidation each iteration: every frame's rule recomputed
//   BM_Unwind_Libunwind         libunwind's unw_backtrace with UNW_CACHE_PER_THREAD (what heaptrack does)
//   BM_Unwind_LibunwindMiss     the same after unw_flush_cache each iteration
//   BM_Unwind_GlibcBacktrace    glibc's backtrace() (libgcc's _Unwind_Backtrace underneath)
//   BM_Unwind_DlIteratePhdr     one dl_iterate_phdr call that stops at the first module: what checking the
//                               module list on every capture (as bytehound does) would add
//   BM_Unwind_MemtrackInterned  capture + interning the whole stack into a bounded hash table of stacks
//   BM_Unwind_MemtrackTree      capture + interning as a trace tree, (parent node, ip) -> node in a bounded
//                               hash table, with the thread's previous stack and its node ids kept so only
//                               the frames that changed are looked up (the design recommended for the preload)
//
// Each row takes the argument sites:1 (every capture from the same call site: the whole stack repeats) or
// sites:4 (four call sites in rotation, so the two innermost frames change on every capture, the rest
// repeats: closer to a real program).
//
// libunwind and glibc are reached through dlopen/dlsym: libunwind.so.8 exports `backtrace` and
// `_Unwind_*`, so linking it would silently replace glibc's backtrace() in this binary.
#include "memtrack/unwind/unwind.h"

#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "unwind/chain.h"
#include "unwind/hook_capture.h"

namespace {

using memtrack::unwind_test::Chain;

constexpr int kChainDepth = 24;
constexpr std::size_t kMaxFrames = 128;

struct Libunwind {
  int (*backtrace)(void**, int) = nullptr;
  void (*flush_cache)(void*, std::uintptr_t, std::uintptr_t) = nullptr;
  void* space = nullptr;
  bool ok = false;
  Libunwind() {
    void* handle = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return;
    backtrace = reinterpret_cast<int (*)(void**, int)>(dlsym(handle, "unw_backtrace"));
    auto* set_policy = reinterpret_cast<int (*)(void*, int)>(dlsym(handle, "_ULx86_64_set_caching_policy"));
    auto* space_ptr = static_cast<void**>(dlsym(handle, "_ULx86_64_local_addr_space"));
    flush_cache =
        reinterpret_cast<void (*)(void*, std::uintptr_t, std::uintptr_t)>(dlsym(handle, "_Ux86_64_flush_cache"));
    constexpr int kCachePerThread = 2;  // UNW_CACHE_PER_THREAD
    ok = backtrace != nullptr && set_policy != nullptr && space_ptr != nullptr && flush_cache != nullptr &&
         set_policy(*space_ptr, kCachePerThread) == 0;
    if (ok) space = *space_ptr;
  }
};
const Libunwind& libunwind() {
  static const Libunwind lib;
  return lib;
}

using BacktraceFn = int (*)(void**, int);
BacktraceFn glibc_backtrace() {
  static const BacktraceFn fn = [] {
    void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    return libc ? reinterpret_cast<BacktraceFn>(dlsym(libc, "backtrace")) : nullptr;
  }();
  return fn;
}

// The prototype interner: a fixed open-addressing table of 2^16 stack hashes, each with an id, and an
// arena of frames the ids point into (in the preload both would be in memory the recorder maps, so a new
// stack never travels through the event ring). A probe compares the hash, then the frames, so a hash
// collision cannot merge two stacks. Lock-free: a new stack claims an arena range with fetch_add and a slot
// with a CAS on its hash; its id is published last, and a reader that sees a hash without an id yet treats
// it as a different stack (it inserts its own copy: a duplicate definition, never a wrong one).
class Interner {
 public:
  static constexpr std::size_t kSlots = std::size_t{1} << 16;
  static constexpr std::size_t kArenaWords = std::size_t{1} << 22;  // 32 MiB of frames: the bound

  // Returns the id (the arena offset of the stack's length word, plus 1), or 0 when the table is full.
  std::uint32_t intern(const std::uintptr_t* frames, std::size_t n) {
    std::uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    for (std::size_t i = 0; i < n; ++i) h = (h ^ frames[i]) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
    if (h == 0) h = 1;
    for (std::size_t probe = 0, i = h & (kSlots - 1); probe < 64; ++probe, i = (i + 1) & (kSlots - 1)) {
      std::uint64_t seen = slots_[i].hash.load(std::memory_order_acquire);
      if (seen == 0) {
        if (!slots_[i].hash.compare_exchange_strong(seen, h, std::memory_order_acq_rel)) {
          if (seen != h) continue;
        } else {
          const std::size_t at = used_.fetch_add(n + 1, std::memory_order_relaxed);
          if (at + n + 1 > kArenaWords) return 0;
          arena_[at] = n;
          std::memcpy(&arena_[at + 1], frames, n * sizeof(std::uintptr_t));
          const auto id = static_cast<std::uint32_t>(at + 1);
          slots_[i].id.store(id, std::memory_order_release);
          return id;
        }
      }
      if (seen != h) continue;
      const std::uint32_t id = slots_[i].id.load(std::memory_order_acquire);
      if (id != 0 && arena_[id - 1] == n && std::memcmp(&arena_[id], frames, n * sizeof(std::uintptr_t)) == 0)
        return id;
    }
    return 0;
  }

 private:
  struct Slot {
    std::atomic<std::uint64_t> hash{0};
    std::atomic<std::uint32_t> id{0};
  };
  Slot slots_[kSlots];
  std::atomic<std::size_t> used_{0};
  std::uintptr_t arena_[kArenaWords];
};

// The trace tree: node ids for (parent node, return address) pairs, as heaptrack's TraceTree, but in a
// bounded lock-free hash table instead of sorted child vectors, so a lookup is one probe and no lock. Node 0
// is the empty stack; an event would carry its innermost node's id, and each new node (id, parent, ip)
// would cross to the recorder once. A slot is claimed with a CAS on its ip and published by storing
// (parent, id) after it; a reader that sees the ip before the publication probes on (and may add a
// duplicate node: two ids for one stack, which the recorder can merge, never one id for two stacks).
class TraceTree {
 public:
  static constexpr std::size_t kSlots = std::size_t{1} << 20;  // 16 MiB: the bound

  std::uint32_t child(std::uint32_t parent, std::uintptr_t ip) {
    std::uint64_t h = (ip ^ (static_cast<std::uint64_t>(parent) << 29)) * 0x9E3779B97F4A7C15ull;
    for (std::size_t probe = 0, i = h >> 44; probe < 64; ++probe, i = (i + 1) & (kSlots - 1)) {
      std::uint64_t seen = slots_[i].ip.load(std::memory_order_acquire);
      if (seen == 0) {
        if (slots_[i].ip.compare_exchange_strong(seen, ip, std::memory_order_acq_rel)) {
          const std::uint32_t id = next_.fetch_add(1, std::memory_order_relaxed);
          slots_[i].node.store(static_cast<std::uint64_t>(parent) << 32 | id, std::memory_order_release);
          return id;
        }
      }
      if (seen != ip) continue;
      const std::uint64_t node = slots_[i].node.load(std::memory_order_acquire);
      if (node >> 32 == parent && static_cast<std::uint32_t>(node) != 0) return static_cast<std::uint32_t>(node);
    }
    return 0;  // full: the event would say "unknown stack" and a counter would say how often
  }

 private:
  struct Slot {
    std::atomic<std::uint64_t> ip{0};
    std::atomic<std::uint64_t> node{0};  // parent << 32 | id; 0 until published
  };
  Slot slots_[kSlots];
  std::atomic<std::uint32_t> next_{1};
};

// The thread's previous stack with the node id of each of its suffixes: a new stack shares its outer
// frames with the previous one, found by comparing from the outermost frame (independent loads), and only
// the frames inside that common part are looked up in the tree.
struct TreeCursor {
  std::size_t n = 0;
  std::uintptr_t frames[kMaxFrames] = {};
  std::uint32_t node[kMaxFrames] = {};  // node[i]: the id of the stack frames[i..n)

  std::uint32_t intern(TraceTree& tree, const std::uintptr_t* f, std::size_t count) {
    std::size_t common = 0;
    while (common < count && common < n && f[count - 1 - common] == frames[n - 1 - common]) ++common;
    if (common == count && count == n) return n ? node[0] : 0;
    if (count != n && common > 0) {
      std::memmove(&frames[count - common], &frames[n - common], common * sizeof(frames[0]));
      std::memmove(&node[count - common], &node[n - common], common * sizeof(node[0]));
    }
    std::uint32_t id = common ? node[count - common] : 0;
    for (std::size_t i = count - common; i-- > 0;) {
      id = tree.child(id, f[i]);
      frames[i] = f[i];
      node[i] = id;
    }
    n = count;
    return id;
  }
};
thread_local TreeCursor t_cursor;

enum class Variant {
  kNone,
  kMemtrack,
  kMemtrackHook,
  kMemtrackRules,
  kMemtrackMiss,
  kLibunwind,
  kLibunwindMiss,
  kGlibc,
  kDlIteratePhdr,
  kInterned,
  kTree
};

int first_module(dl_phdr_info* info, std::size_t, void* data) {
  *static_cast<std::uint64_t*>(data) = info->dlpi_adds;
  return 1;
}

struct Run {
  benchmark::State* state;
  Variant variant;
  Interner* interner;
  TraceTree* tree;
  std::size_t frames;
};

__attribute__((noinline)) std::size_t capture(const Run& run, std::uintptr_t* frames) {
  bool truncated = false;
  std::size_t n = 0;
  switch (run.variant) {
    case Variant::kNone:
      break;
    case Variant::kMemtrack:
    case Variant::kMemtrackRules:
      n = memtrack_unwind_capture(frames, kMaxFrames, 0, &truncated);
      break;
    case Variant::kMemtrackHook: {
      static thread_local std::uintptr_t calls = 0;
      n = hook_capture(frames, kMaxFrames, &truncated, ++calls);
      break;
    }
    case Variant::kMemtrackMiss:
      memtrack_unwind_invalidate();
      n = memtrack_unwind_capture(frames, kMaxFrames, 0, &truncated);
      break;
    case Variant::kLibunwind:
      n = static_cast<std::size_t>(libunwind().backtrace(reinterpret_cast<void**>(frames), kMaxFrames));
      break;
    case Variant::kLibunwindMiss:
      libunwind().flush_cache(libunwind().space, 0, 0);
      n = static_cast<std::size_t>(libunwind().backtrace(reinterpret_cast<void**>(frames), kMaxFrames));
      break;
    case Variant::kGlibc:
      n = static_cast<std::size_t>(glibc_backtrace()(reinterpret_cast<void**>(frames), kMaxFrames));
      break;
    case Variant::kDlIteratePhdr: {
      std::uint64_t adds = 0;
      dl_iterate_phdr(first_module, &adds);
      benchmark::DoNotOptimize(adds);
      break;
    }
    case Variant::kInterned:
      n = memtrack_unwind_capture(frames, kMaxFrames, 0, &truncated);
      benchmark::DoNotOptimize(run.interner->intern(frames, n));
      break;
    case Variant::kTree:
      n = memtrack_unwind_capture(frames, kMaxFrames, 0, &truncated);
      benchmark::DoNotOptimize(t_cursor.intern(*run.tree, frames, n));
      break;
  }
  void* p = std::malloc(32);
  benchmark::DoNotOptimize(p);
  std::free(p);
  benchmark::ClobberMemory();
  return n;
}

// Four distinct call sites of `capture`, each in its own function: the two innermost frames differ.
template <int K>
__attribute__((noinline)) std::size_t site(const Run& run, std::uintptr_t* frames) {
  const std::size_t n = capture(run, frames);
  asm volatile("" : : "r"(frames) : "memory");
  return n + K * 0;
}

__attribute__((noinline)) void leaf(Chain* chain) {
  auto* run = static_cast<Run*>(chain->arg);
  std::uintptr_t frames[kMaxFrames];
  const bool rotate = run->state->range(0) > 1;
  std::size_t i = 0, n = 0;
  for (auto _ : *run->state) {
    switch (rotate ? i++ & 3 : 0) {
      case 0:
        n = site<0>(*run, frames);
        break;
      case 1:
        n = site<1>(*run, frames);
        break;
      case 2:
        n = site<2>(*run, frames);
        break;
      default:
        n = site<3>(*run, frames);
        break;
    }
  }
  run->frames = n;
}

Interner* shared_interner() {
  static Interner* interner = new Interner;  // 33 MiB, zeroed lazily by the kernel
  return interner;
}
TraceTree* shared_tree() {
  static TraceTree* tree = new TraceTree;
  return tree;
}

void bench(benchmark::State& state, Variant variant) {
  if ((variant == Variant::kLibunwind || variant == Variant::kLibunwindMiss) && !libunwind().ok)
    return state.SkipWithError("libunwind.so.8 not found");
  if (variant == Variant::kGlibc && glibc_backtrace() == nullptr) return state.SkipWithError("no glibc backtrace");
  if (variant == Variant::kGlibc) {
    // The first call dlopens libgcc_s: keep it out of the measurement.
    void* warm[4];
    glibc_backtrace()(warm, 4);
  }
  memtrack_unwind_set_prefix_reuse(variant != Variant::kMemtrackRules);
  Run run{&state, variant, shared_interner(), shared_tree(), 0};
  Chain chain;
  chain.depth = kChainDepth;
  chain.leaf = leaf;
  chain.arg = &run;
  memtrack::unwind_test::run_chain(&chain);
  memtrack_unwind_set_prefix_reuse(true);
  // Per thread (Google Benchmark sums user counters over threads).
  state.counters["frames"] = benchmark::Counter(static_cast<double>(run.frames), benchmark::Counter::kAvgThreads);
}

void BM_Unwind_None(benchmark::State& state) { bench(state, Variant::kNone); }
void BM_Unwind_Memtrack(benchmark::State& state) { bench(state, Variant::kMemtrack); }
void BM_Unwind_MemtrackHook(benchmark::State& state) { bench(state, Variant::kMemtrackHook); }
void BM_Unwind_MemtrackRules(benchmark::State& state) { bench(state, Variant::kMemtrackRules); }
void BM_Unwind_MemtrackMiss(benchmark::State& state) { bench(state, Variant::kMemtrackMiss); }
void BM_Unwind_Libunwind(benchmark::State& state) { bench(state, Variant::kLibunwind); }
void BM_Unwind_LibunwindMiss(benchmark::State& state) { bench(state, Variant::kLibunwindMiss); }
void BM_Unwind_GlibcBacktrace(benchmark::State& state) { bench(state, Variant::kGlibc); }
void BM_Unwind_DlIteratePhdr(benchmark::State& state) { bench(state, Variant::kDlIteratePhdr); }
void BM_Unwind_MemtrackInterned(benchmark::State& state) { bench(state, Variant::kInterned); }
void BM_Unwind_MemtrackTree(benchmark::State& state) { bench(state, Variant::kTree); }

// One thread, and two as in churn (they share the rule cache, the interners and malloc's arenas).
void shapes(benchmark::internal::Benchmark* b) { b->ArgName("sites")->Arg(1)->Arg(4)->Threads(1)->Threads(2); }
BENCHMARK(BM_Unwind_None)->Apply(shapes);
BENCHMARK(BM_Unwind_Memtrack)->Apply(shapes);
BENCHMARK(BM_Unwind_MemtrackHook)->Apply(shapes);
BENCHMARK(BM_Unwind_MemtrackRules)->Apply(shapes);
BENCHMARK(BM_Unwind_MemtrackMiss)->Apply(shapes);
BENCHMARK(BM_Unwind_Libunwind)->Apply(shapes);
BENCHMARK(BM_Unwind_LibunwindMiss)->Apply(shapes);
BENCHMARK(BM_Unwind_GlibcBacktrace)->Apply(shapes);
BENCHMARK(BM_Unwind_DlIteratePhdr)->Apply(shapes);
BENCHMARK(BM_Unwind_MemtrackInterned)->Apply(shapes);
BENCHMARK(BM_Unwind_MemtrackTree)->Apply(shapes);

}  // namespace
