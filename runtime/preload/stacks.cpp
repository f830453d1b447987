// The trace tree of this process image and the capture of an allocation's stack (stacks.h).
//
// Why a tree in the tracee and not raw stacks in the ring: a stack of 24-64 return addresses is 200-500 bytes
// per event, 4-10 ring slots; the tree makes it one u32 in the event's slot, and each distinct stack crosses
// to the recorder once (heaptrack's design). The tree is an open-addressing hash table keyed by
// (parent id, return address) over arrays indexed by node id, in memory mapped at attach and bounded
// (kMaxNodes): lock-free for readers, one CAS per new node. A per-thread record of the last stack (ids and
// addresses, outermost first) makes the common case, a stack sharing its outer frames with the previous
// one of this thread, cost one compare per frame and hash probes only for the frames that differ.
#include "stacks.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>

#include <atomic>

#include "memtrack/unwind/unwind.h"
#include "python.h"
#include "resolve.h"
#include "ring_client.h"

namespace memtrack::preload {

constinit uint32_t g_stack_depth = 0;

namespace {

// 4M nodes: 48 MiB of node arrays and 56 MiB + 576 KiB of hash slots (the tiers below), mapped once per
// image, touched as used.
constexpr uint32_t kMaxNodes = 1u << 22;
constexpr const char* kMaxNodesText = "4,194,303";  // kMaxNodes - 1: id 0 is the empty stack
constexpr uint64_t kTruncatedAddress = 1;           // the pseudo-node above a stack cut at the depth cap

struct Tree {
  uint64_t* addresses;            // [kMaxNodes], by id; id 0 unused (the empty stack)
  uint32_t* parents;              // [kMaxNodes]
  std::atomic<uint32_t>* slots;   // [kSlots], the tiers' one after the other: 0 = empty, else a slot value
  std::atomic<uint32_t> next_id;  // ids handed out so far + 1
  std::atomic<uint64_t> overflowed;
  size_t bytes;  // the tables' mapping: the unwinder's cache, then the tree's arrays
  void* view;    // the tables' memfd mapped shared, never touched: MADV_REMOVE through it (map_tables)
};
constinit Tree g_tree = {nullptr, nullptr, nullptr, {1}, {0}, 0, nullptr};

// New nodes between two punches of the tables' memfd (punch_file_pages): each first touch of a page of the
// tables leaves a zero page in the memfd until then, at most 2 pages per node (a node array and a hash slot).
// 256 new nodes while the tree is small, then an eighth of the tree's nodes: a punch walks the page tables of
// the whole mapping (about 0.4 s of CPU of a 1M-node pytest recording at every 256 nodes), and a
// large tree's hash slots are all touched already, so its new nodes touch only the node arrays' next pages
// (about 3 per 1,000 nodes). The punches are then about 60 for 1M nodes instead of 4,096.
constexpr uint32_t kPunchEvery = 256;
constinit std::atomic<uint32_t> g_next_punch{kPunchEvery};
void punch_file_pages();
inline void punch_if_due(uint32_t end) {
  uint32_t due = g_next_punch.load(std::memory_order_relaxed);
  if (end < due) return;
  const uint32_t next = end + (end / 8 > kPunchEvery ? end / 8 : kPunchEvery);
  if (g_next_punch.compare_exchange_strong(due, next, std::memory_order_relaxed)) punch_file_pages();
}

// A thread's capture state. Under `memtrack record`, initial-exec TLS (preload_internal.h), about 7 KiB.
struct ThreadStacks {
  // The last stack this thread captured, outermost first, and its node ids (ids[i] is the node of
  // addrs[0..i]).
  uint64_t addrs[kMaxStackDepth + 1];
  uint32_t ids[kMaxStackDepth + 1];
  uint32_t len;
  // The raw captures, double-buffered: a capture equal to the previous one (the same call site again, the
  // common case in a loop) is recognised with one memcmp and returns the previous leaf without walking the
  // record. last_n == 0: no previous capture to reuse.
  uint32_t cur;
  uintptr_t frames[2][kMaxStackDepth + 8];
  size_t last_n;
  uint32_t last_leaf;
};
MEMTRACK_TLS bool t_capturing;  // a signal handler's capture on this thread must not touch the record

#ifndef MEMTRACK_STACKS_POOLED
MEMTRACK_TLS ThreadStacks t_stacks;
inline ThreadStacks* thread_stacks() { return &t_stacks; }
inline ThreadStacks* thread_stacks_if_any() { return &t_stacks; }
#else
// libmemtrack-attach.so, loaded with dlopen by `memtrack attach`: its initial-exec thread-locals come from the
// C library's static TLS surplus (about 1.5 KiB), which the state above and the unwinder's record (10 KiB)
// do not fit. So only a pointer is thread-local, and each thread takes a block of a pool (mapped with raw
// system calls: no allocation, async-signal-safe) at its first capture: the state and the unwinder's record
// (memtrack_unwind_set_thread_record). A block whose thread has ended (its tid no longer names a thread of
// this process, tgkill(pid, tid, 0) fails with ESRCH) is taken by the next thread that needs one, so a
// program that starts threads all the time keeps as many blocks as it has threads at once (a tid reused by a
// new thread only delays its old block's reuse).
struct PoolBlock {
  PoolBlock* next;             // every block of the pool, a push-only list
  std::atomic<int32_t> owner;  // the tid of the thread using it
  ThreadStacks stacks;
  // Then the unwinder's record, memtrack_unwind_thread_record_bytes() at kUnwindOffset.
};
constexpr size_t kUnwindOffset = (sizeof(PoolBlock) + 63) & ~size_t{63};
constinit std::atomic<PoolBlock*> g_pool{nullptr};
MEMTRACK_TLS PoolBlock* t_block;
constexpr int kPoolScan = 256;  // blocks checked for an ended owner before a new one is mapped

ThreadStacks* take_block() {
  const int saved_errno = errno;
  const auto pid = static_cast<int32_t>(syscall(SYS_getpid));
  const auto tid = static_cast<int32_t>(syscall(SYS_gettid));
  PoolBlock* b = nullptr;
  int scanned = 0;
  for (PoolBlock* p = g_pool.load(std::memory_order_acquire); p != nullptr && scanned < kPoolScan;
       p = p->next, ++scanned) {
    int32_t owner = p->owner.load(std::memory_order_relaxed);
    if (owner != 0 && owner != tid && syscall(SYS_tgkill, pid, owner, 0) != 0 && errno == ESRCH &&
        p->owner.compare_exchange_strong(owner, tid, std::memory_order_acquire)) {
      b = p;
      break;
    }
  }
  if (b == nullptr) {
    const size_t bytes = (kUnwindOffset + memtrack_unwind_thread_record_bytes() + 4095) & ~size_t{4095};
    void* map = reinterpret_cast<void*>(
        syscall(SYS_mmap, nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (map == MAP_FAILED) {
      errno = saved_errno;
      return nullptr;  // this thread captures nothing (its events have no stack)
    }
    b = static_cast<PoolBlock*>(map);
    b->owner.store(tid, std::memory_order_relaxed);
    PoolBlock* head = g_pool.load(std::memory_order_relaxed);
    do {
      b->next = head;
    } while (!g_pool.compare_exchange_weak(head, b, std::memory_order_release, std::memory_order_relaxed));
  }
  b->stacks.len = 0;
  b->stacks.cur = 0;
  b->stacks.last_n = 0;
  memtrack_unwind_set_thread_record(reinterpret_cast<unsigned char*>(b) + kUnwindOffset);
  t_block = b;
  errno = saved_errno;
  return &b->stacks;
}

inline ThreadStacks* thread_stacks() {
  PoolBlock* b = t_block;
  return b != nullptr ? &b->stacks : take_block();
}
inline ThreadStacks* thread_stacks_if_any() { return t_block != nullptr ? &t_block->stacks : nullptr; }
#endif

// The hash slots are in tiers, and a node's id says its tier: tier 0 holds the first 2^13 ids in 2^14 slots
// (64 KiB), tier 1 the ids up to 2^16 in 2^17 slots (512 KiB), tier 2 those up to 2^20 in 2^21 (8 MiB), tier
// 3 those up to 2^21 in 2^22 (16 MiB), tier 4 the rest in 2^23 (32 MiB), so every tier's load factor stays <=
// 0.5. Why (measured when a node's slot was a random one in its tier; the home lines below now also keep a
// small tree's slots near the start of its tier, but for those that overflow): one flat table touched a new
// page for almost every node of a small process (its first touch is a page fault, microseconds in a VM, and
// two when a lookup reads the page before an insert writes it), and a build or a shell starts thousands of
// small processes: one with a few
// thousand nodes touches tier 0's 16 pages only; one with tens of thousands (a compiler's cc1) tier 1's 128
// pages, not the 2,048 of an 8 MiB tier; and a tree of a few hundred thousand nodes touches tier 2's 8 MiB,
// not the 32 MiB a flat table for 4M nodes would. The price, a miss in each earlier tier in use before a
// lookup of a later node, is paid only off the per-thread record's fast path.
struct Tier {
  uint32_t first_id;  // the tier's ids: [first_id, the next tier's)
  uint32_t base;      // its first slot
  uint32_t mask;      // its slot count - 1
};
constexpr uint32_t kTiers = 5;
constexpr Tier kTier[kTiers] = {
    {0, 0, (1u << 14) - 1},
    {1u << 13, 1u << 14, (1u << 17) - 1},
    {1u << 16, (1u << 14) + (1u << 17), (1u << 21) - 1},
    {1u << 20, (1u << 14) + (1u << 17) + (1u << 21), (1u << 22) - 1},
    {1u << 21, (1u << 14) + (1u << 17) + (1u << 21) + (1u << 22), (1u << 23) - 1},
};
constexpr uint32_t kSlots = kTier[kTiers - 1].base + kTier[kTiers - 1].mask + 1;
constexpr size_t kSlotBytes = size_t{kSlots} * 4;
constexpr bool tiers_hold_their_ids() {
  for (uint32_t t = 0; t < kTiers; ++t) {
    const uint32_t end = t + 1 < kTiers ? kTier[t + 1].first_id : kMaxNodes;
    if (2 * (end - kTier[t].first_id) > kTier[t].mask + 1) return false;  // load factor <= 0.5
    if (2 * end > kTier[t].mask + 1) return false;  // every home line of its nodes' parents in the tier
    if (t + 1 < kTiers && kTier[t + 1].base != kTier[t].base + kTier[t].mask + 1) return false;
  }
  return true;
}
static_assert(tiers_hold_their_ids());

inline uint32_t tier_of(uint32_t id) {
  uint32_t t = 0;
  while (t + 1 < kTiers && id >= kTier[t + 1].first_id) ++t;
  return t;
}

// A slot holds a node's id (22 bits: ids < kMaxNodes) and, above it, 10 bits of its key's hash, so a probe
// past another key reads the node arrays (a cache miss each) only once in 1,024.
constexpr uint32_t kIdBits = 22;
static_assert(kMaxNodes <= 1u << kIdBits);
constexpr uint32_t kIdMask = (1u << kIdBits) - 1;

// Where a key's node goes: its parent's home line, then overflow. The home line (16 slots, one 64-byte cache
// line) is the one of the parent id's group of 8 consecutive ids, so the nodes of a stack interned in one go
// (consecutive ids, each the parent of the next) share lines, and a lookup down a known stack touches a line
// per 8 frames rather than one per frame. A key probes its home line from its offset in it (wrapping inside
// the line), then, if the line is full, linearly from its overflow slot (anywhere in the tier, from the
// hash): a parent with many children (a call through a function pointer) overflows. A line holds on average
// the children of 8 ids, about 8 nodes (a tree has about one child per node), so its load factor is about
// the tier's, <= 0.5. The home line fits the tier: a node's tier is its own id's, and ids are above their
// parent's, so 2 x parent is below the tier's slot count (tiers_hold_their_ids). Nodes are never removed, so
// linear probing's argument holds for this sequence too: an insert takes the first empty slot of the
// sequence, and a lookup that meets an empty slot knows the key is not in the tier.
constexpr uint32_t kLineSlots = 16;
struct Key {
  uint32_t home;      // the first slot of the home line
  uint32_t offset;    // the first slot probed in the line
  uint32_t overflow;  // the slot from which a full line's probe goes on (masked by the tier)
  uint32_t tag;       // the hash bits a slot keeps above the id
};
inline Key key_of(uint32_t parent, uint64_t address) {
  uint64_t h = (address ^ (static_cast<uint64_t>(parent) << 40) ^ parent) * 0x9E3779B97F4A7C15u;
  h ^= h >> 29;
  return {(parent * 2) & ~(kLineSlots - 1), static_cast<uint32_t>(h) & (kLineSlots - 1), static_cast<uint32_t>(h >> 4),
          static_cast<uint32_t>(h >> (64 - (32 - kIdBits))) << kIdBits};
}

// The probe sequence of a key in a tier (above): next() gives its slots in order, without end (a tier is at
// most half full, so the overflow part meets an empty slot).
struct Probe {
  uint32_t home, offset, overflow, mask, k = 0;
  Probe(const Key& key, uint32_t tier_mask)
      : home(key.home & tier_mask), offset(key.offset), overflow(key.overflow & tier_mask), mask(tier_mask) {}
  uint32_t next() {
    if (k < kLineSlots) return home | ((offset + k++) & (kLineSlots - 1));
    const uint32_t s = overflow;
    overflow = (overflow + 1) & mask;
    return s;
  }
};

// The node (parent, address) in `tier`, or 0. Lock-free: a slot is published only after its node's fields
// were written (seq_cst: insert's cross-tier check below needs it; plain loads on x86).
uint32_t find_in(uint32_t tier, Key key, uint32_t parent, uint64_t address) {
  std::atomic<uint32_t>* slots = g_tree.slots + kTier[tier].base;
  for (Probe probe(key, kTier[tier].mask);;) {
    const uint32_t slot = slots[probe.next()].load(std::memory_order_seq_cst);
    if (slot == 0) return 0;
    const uint32_t id = slot & kIdMask;
    if ((slot & ~kIdMask) == key.tag && g_tree.parents[id] == parent && g_tree.addresses[id] == address) return id;
  }
}

// How many tiers hold nodes: those whose first id was handed out (ids below next_id).
inline uint32_t tiers_in_use() {
  const uint32_t next = g_tree.next_id.load(std::memory_order_seq_cst);
  uint32_t n = 1;
  while (n < kTiers && next > kTier[n].first_id) ++n;
  return n;
}

// The node (parent, address), or 0 when it is not in the tree. A node's id is above its parent's (ids are
// handed out after the parent was found or made), so its tier is its parent's or a later one: the earlier
// tiers are not probed (a deep stack of a large tree skips the small tiers' probes). The one exception, a
// node whose parent is another thread's twin of the same key published first with a higher id (insert), is
// not lost: a lookup that misses it makes a new node, and insert's look into every tier finds it.
uint32_t find(uint32_t parent, uint64_t address) {
  const Key key = key_of(parent, address);
  uint32_t t = tier_of(parent);
  if (t == 0) {  // before reading next_id: most lookups of a small tree end here
    if (const uint32_t id = find_in(0, key, parent, address)) return id;
    t = 1;
  }
  const uint32_t tiers = tiers_in_use();
  for (; t < tiers; ++t)
    if (const uint32_t id = find_in(t, key, parent, address)) return id;
  return 0;
}

// Defines node `id` as (parent, address) and publishes it in its tier, unless another thread published the
// same key first: then `id` stays defined (a duplicate no stack uses) and the other node is returned. Two
// threads publishing the same key in two tiers at once each look in the other tiers in use after their own
// publication (seq_cst: at least one sees the other) and keep the lowest id found.
uint32_t insert(uint32_t id, uint32_t parent, uint64_t address) {
  g_tree.parents[id] = parent;
  g_tree.addresses[id] = address;
  const Key key = key_of(parent, address);
  const uint32_t tier = tier_of(id);
  std::atomic<uint32_t>* slots = g_tree.slots + kTier[tier].base;
  for (Probe probe(key, kTier[tier].mask);;) {
    const uint32_t s = probe.next();
    uint32_t cur = slots[s].load(std::memory_order_seq_cst);
    if (cur == 0) {
      if (slots[s].compare_exchange_strong(cur, id | key.tag, std::memory_order_seq_cst)) break;
    }
    const uint32_t other = cur & kIdMask;
    if ((cur & ~kIdMask) == key.tag && g_tree.parents[other] == parent && g_tree.addresses[other] == address)
      return other;
  }
  // A twin in another tier: only while more than one is in use (tier 0 is in use from the first node).
  uint32_t best = id;
  const uint32_t tiers = tiers_in_use();
  for (uint32_t t = 0; t < tiers; ++t) {
    if (t == tier) continue;
    const uint32_t twin = find_in(t, key, parent, address);
    if (twin != 0 && twin < best) best = twin;
  }
  return best;
}

// One NoteStackNodes block for nodes [first, first + n): parent u32, address u64 each, little-endian.
void note_nodes(uint32_t first, uint32_t n) {
  char payload[(kMaxStackDepth + 1) * 12];
  for (uint32_t i = 0; i < n; ++i) {
    memcpy(payload + 12 * i, &g_tree.parents[first + i], 4);
    memcpy(payload + 12 * i + 4, &g_tree.addresses[first + i], 8);
  }
  (void)write_note(RingEventKind::NoteStackNodes, g_pid, first, payload, 12 * static_cast<size_t>(n));
}

// Interns `frames[0..n)` (outermost first) starting below node `parent` at frame `from`, writing the ids
// into ids[from..n). Returns the leaf id. New nodes are noted in one block; past the tree's bound (or when
// !may_add) the stack is cut to its longest known prefix and `valid` says how many ids are set.
uint32_t intern_from(const uint64_t* frames, uint32_t* ids, uint32_t from, uint32_t n, uint32_t parent, bool may_add,
                     uint32_t& valid) {
  valid = n;
  uint32_t i = from;
  for (; i < n; ++i) {
    const uint32_t id = find(parent, frames[i]);
    if (id == 0) break;
    ids[i] = parent = id;
  }
  if (i == n) return parent;
  const uint32_t missing = n - i;
  // Past the bound the counter stops moving (checked before the fetch_add, so it cannot wrap).
  uint32_t first = kMaxNodes;
  if (may_add && g_tree.next_id.load(std::memory_order_relaxed) <= kMaxNodes - missing)
    first = g_tree.next_id.fetch_add(missing, std::memory_order_relaxed);
  if (first > kMaxNodes - missing) {
    // The first stack cut by the bound says so in record's summary (once: a fork child inherits the count).
    if (may_add && g_tree.overflowed.fetch_add(1, std::memory_order_relaxed) == 0)
      say("the trace tree is full (", kMaxNodesText,
          " nodes): from here on a stack with frames not in it is cut to its longest known prefix");
    valid = i;  // ids[i..n) are stale: the thread's record keeps only [0, i)
    return parent;
  }
  // Addresses outside every known module: a library was loaded since the last scan. Its module note goes
  // before the nodes (a reader can place each address when it reads the nodes). New nodes are rare (each
  // distinct stack once), so the loader's counters are checked here too.
  bool outside = false;
  for (uint32_t j = i; j < n && !outside; ++j)
    outside = frames[j] != kTruncatedAddress && !is_python_address(frames[j]) && !in_known_module(frames[j]);
  if (outside)
    scan_modules();
  else
    rescan_if_changed();  // an unload (dlclose) since the last scan
  for (uint32_t j = i; j < n; ++j) ids[j] = parent = insert(first + (j - i), parent, frames[j]);
  note_nodes(first, missing);
  punch_if_due(first + missing);
  return parent;
}

// The tables (the unwinder's rule cache, then the tree) in a private mapping of a memfd named
// kTablesMemfdName: its written pages are private copy-on-write pages like an anonymous mapping's (a fork child
// keeps the parent's tables and copies what it writes), but /proc/<pid>/maps names the mapping, so the
// recorder's resident sampler leaves them out of the program's resident memory (docs/RUNTIME.md, "Resident
// memory"). The kernel copies each page from the memfd at its first touch, allocating a zero page in the file
// that no process counts; punch_file_pages frees those. Without a memfd: an anonymous mapping, counted as the
// program's. Null when neither can be mapped.
void* map_tables(size_t bytes) {
  const long fd = syscall(SYS_memfd_create, runtime::kTablesMemfdName, MFD_CLOEXEC);
  if (fd >= 0) {
    void* map = MAP_FAILED;
    if (syscall(SYS_ftruncate, fd, bytes) == 0) {
      map = reinterpret_cast<void*>(
          syscall(SYS_mmap, nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd, 0));
      void* view = reinterpret_cast<void*>(
          syscall(SYS_mmap, nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0));
      if (map != MAP_FAILED && view != MAP_FAILED) {
        g_tree.view = view;
      } else {
        if (map != MAP_FAILED) syscall(SYS_munmap, map, bytes);
        if (view != MAP_FAILED) syscall(SYS_munmap, view, bytes);
        map = MAP_FAILED;
      }
    }
    syscall(SYS_close, fd);  // the mappings keep the file
    if (map != MAP_FAILED) return map;
  }
  void* map = reinterpret_cast<void*>(
      syscall(SYS_mmap, nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  return map == MAP_FAILED ? nullptr : map;
}

// Frees the memfd's pages (zeros: nothing writes the file) and unmaps them where a process only read them;
// every process's private copies stay (a hole punch leaves copy-on-write pages, as MADV_REMOVE documents for
// private mappings of the file).
void punch_file_pages() {
  if (g_tree.view != nullptr) (void)syscall(SYS_madvise, g_tree.view, g_tree.bytes, MADV_REMOVE);
}

// Maps [p, p + len) written in one call, for the tables' parts every process with stacks uses: tier 0's
// slots (a lookup reads a slot before an insert writes it, so each page would fault twice: read-only first,
// then copy-on-write) and the node arrays' first pages. Best effort: without MADV_POPULATE_WRITE (Linux
// 5.14) the pages fault in as they are used.
void populate_for_write(void* p, size_t len) { (void)syscall(SYS_madvise, p, len, MADV_POPULATE_WRITE); }

void say_fallback_unavailable();

}  // namespace

void stacks_attach() {
  g_stack_depth = g_ring->stack_depth < kMaxStackDepth ? g_ring->stack_depth : kMaxStackDepth;
  if (g_stack_depth == 0) return;
  const size_t cache = (memtrack_unwind_cache_bytes() + 4095) & ~size_t{4095};
  const size_t bytes = cache + size_t{kMaxNodes} * (8 + 4) + kSlotBytes;
  char* map = static_cast<char*>(map_tables(bytes));
  if (map == nullptr) {
    say("cannot map the stack table; this process is recorded without stacks");
    g_stack_depth = 0;
    return;
  }
  // No capture has run in this image yet (they start when attach publishes kRecording).
  memtrack_unwind_use_cache_memory(map);
  // The rules every process of the recording computed, by module build-id (the ring's part for them).
  memtrack_unwind_use_shared_rules(runtime::ring_shared_rules(g_ring), runtime::kSharedRulesBytes);
  g_tree.addresses = reinterpret_cast<uint64_t*>(map + cache);
  g_tree.parents = reinterpret_cast<uint32_t*>(g_tree.addresses + kMaxNodes);
  g_tree.slots = reinterpret_cast<std::atomic<uint32_t>*>(g_tree.parents + kMaxNodes);
  g_tree.next_id.store(1, std::memory_order_relaxed);
  g_next_punch.store(kPunchEvery, std::memory_order_relaxed);
  g_tree.bytes = bytes;
  populate_for_write(g_tree.slots, size_t{kTier[0].mask + 1} * 4);
  populate_for_write(g_tree.addresses, 4096);
  populate_for_write(g_tree.parents, 4096);
  memtrack_unwind_on_fallback_unavailable(say_fallback_unavailable);
  if (ThreadStacks* t = thread_stacks_if_any()) t->len = 0;
  scan_modules();
}

void stacks_load_fallback() {
  if (g_stack_depth == 0) return;
  EntryScope scope;  // dlopen's own allocations are memtrack's, not the program's: nested, not recorded
  (void)memtrack_unwind_init(real_dlopen, dlsym);  // our dlopen hook would search paths and patch libunwind
}

namespace {
constinit std::atomic<bool> g_fallback_requested{false};

// memtrack_unwind_on_fallback_unavailable's hook: inside a capture, so say() (raw system calls) only.
void say_fallback_unavailable() {
  say("a frame without a compact unwind rule ends this stack: libunwind, the fallback for such frames, is not "
      "loaded (under record it is loaded at the program's first dlopen, if installed: docs/RUNTIME.md, \"Call "
      "stacks\")");
}
}  // namespace

void stacks_load_fallback_at_dlopen() {
  if (g_stack_depth == 0 || in_entry()) return;  // stacks off, or a dlopen from inside a hooked call
  if (g_fallback_requested.load(std::memory_order_relaxed) ||
      g_fallback_requested.exchange(true, std::memory_order_relaxed))
    return;  // one thread loads it (memtrack_unwind_init must not race with itself)
  stacks_load_fallback();
}

namespace {

// `t`: the thread's state, or nullptr for a nested capture (into the buffers given).
uint32_t capture_with(uintptr_t* raw, uint64_t* frames, uint32_t* ids, ThreadStacks* t) {
  const bool nested = t == nullptr;
  // A few frames more than we keep: memtrack's own (this function, the hook; how many depends on inlining)
  // are dropped by address.
  bool truncated = false;
  size_t n = memtrack_unwind_capture(raw, g_stack_depth + 4, 0, &truncated);
  size_t own = 0;
  while (own < n && raw[own] >= g_self_start && raw[own] < g_self_end) ++own;
  // CPython's frames (python.h): the stack keeps `own` + g_stack_depth of them at most.
  n = python_splice(raw, n, kMaxStackDepth + 8, own + g_stack_depth, truncated, t_pending == kNoTicket);
  if (!nested) {
    // The same stack as this thread's previous capture: same leaf (nodes are never removed).
    const uintptr_t* last = t->frames[t->cur ^ 1];
    if (n == t->last_n && n != 0 && memcmp(raw, last, n * sizeof *raw) == 0 && !truncated) return t->last_leaf;
    t->last_n = 0;
  }
  n -= own;
  if (n > g_stack_depth) {
    n = g_stack_depth;
    truncated = true;
  }
  // Outermost first (behind the pseudo-node when cut), written over the thread's record: `p` counts the
  // leading entries equal to the record's, whose ids stay valid.
  const uint32_t old_len = nested ? 0 : t->len;
  uint32_t len = 0, p = 0;
  bool matching = true;
  auto put = [&](uint64_t a) {
    if (matching && len < old_len && frames[len] == a) {
      ++p;
    } else {
      matching = false;
      frames[len] = a;
    }
    ++len;
  };
  if (truncated) put(kTruncatedAddress);
  for (size_t k = n; k-- > 0;) put(raw[own + k]);
  // New nodes are not noted while this thread holds an unfilled ticket (a handler that interrupted an
  // event): the note's block could need the reader to pass that ticket first.
  const bool may_add = t_pending == kNoTicket;
  uint32_t valid = len;
  const uint32_t leaf = intern_from(frames, ids, p, len, p > 0 ? ids[p - 1] : 0, may_add, valid);
  if (!nested) {
    t->len = valid;
    // Reusable only when the whole stack was interned (not cut by the bound or by !may_add).
    if (valid == len && !truncated) {
      t->last_n = n + own;
      t->last_leaf = leaf;
      t->cur ^= 1;
    }
  }
  return leaf;
}

// A capture that interrupted this thread's own capture (a signal handler): buffers in its own frame, about
// 5 KiB of the signal stack, and the thread's record left alone.
__attribute__((noinline)) uint32_t capture_nested() {
  uintptr_t raw[kMaxStackDepth + 8];
  uint64_t frames[kMaxStackDepth + 1];
  uint32_t ids[kMaxStackDepth + 1];
  return capture_with(raw, frames, ids, nullptr);
}

}  // namespace

uint32_t capture_stack() {
  if (g_stack_depth == 0 || t_busy || g_state.load(std::memory_order_relaxed) != kRecording) return 0;
  if (allocations_paused()) return 0;  // the allocation is not recorded: no unwinding
  if (t_capturing) return capture_nested();
  t_capturing = true;
  ThreadStacks* t = thread_stacks();
  const uint32_t leaf = t != nullptr ? capture_with(t->frames[t->cur], t->addrs, t->ids, t) : 0;
  t_capturing = false;
  return leaf;
}

void stacks_after_fork() {
#ifdef MEMTRACK_STACKS_POOLED
  // Only this thread survives, with a new tid: its block must not look like one of an ended thread.
  if (PoolBlock* b = t_block) b->owner.store(static_cast<int32_t>(syscall(SYS_gettid)), std::memory_order_relaxed);
#endif
}

StackCounters stack_counters() {
  return {g_tree.next_id.load(std::memory_order_relaxed) - 1, g_tree.overflowed.load(std::memory_order_relaxed),
          g_tree.bytes};
}

}  // namespace memtrack::preload
