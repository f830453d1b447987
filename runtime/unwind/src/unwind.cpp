// The capture loop, the rule cache and the slow paths (dl_iterate_phdr, signal frames, libunwind).
// See memtrack/unwind/unwind.h for the contracts.
#include "memtrack/unwind/unwind.h"

#include <dlfcn.h>
#include <link.h>
#include <ucontext.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <initializer_list>

#include "cfi.h"
#include "memtrack/symbolize/build_id.h"

#if !defined(__x86_64__) || !defined(__linux__)
#error "memtrack-unwind supports x86_64 Linux only"
#endif

#define MEMTRACK_HIDDEN __attribute__((visibility("hidden")))

extern "C" MEMTRACK_HIDDEN std::size_t memtrack_unwind_capture_from(std::uintptr_t* out, std::size_t max, unsigned skip,
                                                                    bool* truncated, std::uintptr_t ip,
                                                                    std::uintptr_t sp, std::uintptr_t rbp);

// The entry point is assembly so that it starts from exactly the caller's registers, without unwinding its
// own frame: at entry, [rsp] is the return address into the caller, rsp + 8 the caller's stack pointer and
// rbp the caller's rbp. It passes them as arguments 5-7 (the 7th on the stack, which keeps the call's
// 16-byte alignment) to the C++ loop.
asm(R"(
  .text
  .globl memtrack_unwind_capture
  .hidden memtrack_unwind_capture
  .type memtrack_unwind_capture, @function
  .p2align 4
memtrack_unwind_capture:
  .cfi_startproc
  movq (%rsp), %r8
  leaq 8(%rsp), %r9
  pushq %rbp
  .cfi_adjust_cfa_offset 8
  call memtrack_unwind_capture_from
  addq $8, %rsp
  .cfi_adjust_cfa_offset -8
  ret
  .cfi_endproc
  .size memtrack_unwind_capture, .-memtrack_unwind_capture
)");

namespace memtrack::unwind {
namespace {

// The cache: two tables of sequence-locked slots (touched only where used: in .bss unless
// memtrack_unwind_use_cache_memory gave other memory). Each slot: `tag` holds the address in its upper 48 bits
// and a sequence number in its lower 16 (odd while a writer owns the slot); `value` holds the packed rule in
// its lower 48 bits and the generation it was computed in in its upper 16. Readers never write; a writer that
// finds the slot owned gives up (the rule is recomputed on a later miss), so no one waits.
//
// Tier 0, the first table a process uses: 1,024 slots (16 KiB, 4 pages) in sets of 4 (a set is one 64-byte
// cache line), the set from a hash of the whole address. Tier 1: 2^16 slots (1 MiB), direct-mapped by code page
// (slot_index below). Why two: every page of the cache a process touches is a page fault (a copy-on-write
// copy of the tables' memfd page, stacks.cpp), and a shell or a build starts thousands of short processes: one
// `git --version` computes about 130 rules from about 60 KiB of code, so tier 1 alone touched about 60 of its
// pages (perf, issue 26's git loop). A process that computes kTier0Misses rules (its working set no longer fits
// tier 0 comfortably) moves to tier 1 for good; tier 0's rules stay valid where a thread still reads them, and
// tier 1 fills as rules miss again.
constexpr unsigned kCacheBits = 16;
struct alignas(16) Slot {
  std::atomic<std::uint64_t> tag{0};
  std::atomic<std::uint64_t> value{0};
};
constexpr std::size_t kCacheSlots = std::size_t{1} << kCacheBits;
constexpr unsigned kTier0SetBits = 8, kTier0Ways = 4;
constexpr std::size_t kTier0Slots = (std::size_t{1} << kTier0SetBits) * kTier0Ways;
constexpr std::uint64_t kTier0Misses = 512;  // rules computed in tier 0 before the move to tier 1
// Tier 1 at [0, kCacheSlots), tier 0 after it.
alignas(4096) Slot g_static_cache[kCacheSlots + kTier0Slots];
// Read on every lookup: one line.
struct alignas(64) CacheState {
  Slot* slots = g_static_cache;
  std::atomic<bool> tier1{false};
};
CacheState g_cache_state;

std::atomic<std::uint32_t> g_generation{1};
std::atomic<std::uint64_t> g_dl_adds{0}, g_dl_subs{0};
std::atomic<std::uint64_t> g_misses{0}, g_fallback_steps{0}, g_invalidations{0}, g_fallback_unavailable{0};
std::atomic<std::uint64_t> g_tier0_misses{0};

// The rules shared by the processes of a recording (memtrack_unwind_use_shared_rules): a table in shared memory
// keyed by what a rule depends on, the module's contents (its build-id) and the address's offset in it, so a
// process takes the rules another process computed for the same libraries instead of computing them again
// (a shell or a build runs the same few images thousands of times). Entries are written once and never
// changed: `key` is claimed with a CAS from 0, then `value` is stored (the packed rule, never 0); a reader
// that finds the key but not yet the value computes the rule itself. A group of kSharedGroupEntries entries
// (a 4 KiB page) holds the rules of 4 KiB pages of code (one module's page and the others hashed to the same
// group), an entry per 16 bytes of code, so a process touches a page of the table per page of code it unwinds
// through, not one per rule (each first touch is a page fault); a key is probed at kSharedProbes entries from
// its 16 bytes' entry at most (all taken: the rule is computed and not shared).
struct SharedEntry {
  std::atomic<std::uint64_t> key;
  std::atomic<std::uint64_t> value;
};
constexpr std::size_t kSharedGroupEntries = 4096 / sizeof(SharedEntry);
constexpr unsigned kSharedProbes = 8;
std::atomic<SharedEntry*> g_shared{nullptr};
std::size_t g_shared_groups_mask = 0;  // the number of groups - 1 (a power of two)
std::atomic<std::uint64_t> g_shared_hits{0}, g_shared_stores{0};
// Called once, at the first step that needed libunwind while it was not loaded (unwind.h).
std::atomic<void (*)(void)> g_unavailable_hook{nullptr};
#ifdef MEMTRACK_UNWIND_TEST_HOOKS
std::atomic<bool> g_force_fallback{false};
inline bool forced_fallback() { return g_force_fallback.load(std::memory_order_relaxed); }
#else
constexpr bool forced_fallback() { return false; }
#endif

// libunwind, loaded by memtrack_unwind_init with RTLD_LOCAL (when the caller chooses: the preload loads it
// only at the program's first dlopen, docs/RUNTIME.md "Call stacks"). Its local-only entry points (_UL prefix):
// the types come from its header, the functions through these pointers only.
struct Libunwind {
  int (*init_local2)(void* cursor, void* context, int flags);
  int (*step)(void* cursor);
  int (*get_reg)(void* cursor, int reg, std::uint64_t* value);
};
std::atomic<const Libunwind*> g_libunwind{nullptr};
Libunwind g_libunwind_storage;

// Register numbers of libunwind's x86_64 API (libunwind-x86_64.h: UNW_X86_64_RBP = 6, RSP = 7, RIP = 16).
constexpr int kUnwRbp = 6, kUnwRsp = 7, kUnwRip = 16;
constexpr int kUnwInitSignalFrame = 1;  // UNW_INIT_SIGNAL_FRAME: the context's ip is exact

constexpr std::uintptr_t kAddressLimit = std::uintptr_t{1} << 48;

// A slot's group of 1,024 slots (16 KiB) and a 10-bit mask come from the key's 4 KiB code page (hashed), its
// place in the group from the key's offset in that page (key / 4, xor the mask): the call sites of one code
// page never evict each other, those within 1 KiB of code share a page of the cache, and two pages of one
// group (laid out alike, as generated or templated code often is) collide only where their masks allow. So
// a short-lived process touches a page of the cache per kilobyte of code it calls from rather than one per
// return address (each first touch is a page fault, and a shell or a build starts thousands of short
// processes).
constexpr unsigned kGroupBits = 10;
inline std::size_t slot_index(std::uintptr_t key) {
  const std::uint64_t h = (key >> 12) * 0x9E3779B97F4A7C15ull;
  const std::uint64_t group = h >> (64 - (kCacheBits - kGroupBits));
  const std::uint64_t mask = (h >> 32) & ((1u << kGroupBits) - 1);
  return static_cast<std::size_t>(group << kGroupBits | (((key >> 2) ^ mask) & ((1u << kGroupBits) - 1)));
}

// The cache's pages whose first touch was a write (one bit per 4 KiB page). A page first read is mapped
// read-only (the zero page, or the tables memfd's page: stacks.cpp) and faults again at its first write, which
// follows on the miss: two page faults per page a process uses. So a lookup in a page not yet marked first
// writes it (an atomic add of 0 to the slot's tag: its value does not change, so readers and writers of the
// slot see nothing) and marks it; the read that follows does not fault. The bits are set once per page and
// per image, so the check is a load of one cache line that stays shared.
constexpr std::size_t kSlotsPerPage = 4096 / sizeof(Slot);
constexpr std::size_t kCachePages = (kCacheSlots + kTier0Slots) / kSlotsPerPage;
std::atomic<std::uint64_t> g_written_pages[(kCachePages + 63) / 64];

__attribute__((noinline, cold)) void first_write(std::size_t index) {
  g_cache_state.slots[index].tag.fetch_add(0, std::memory_order_relaxed);
  const std::size_t page = index / kSlotsPerPage;
  g_written_pages[page / 64].fetch_or(std::uint64_t{1} << (page % 64), std::memory_order_relaxed);
}

inline void ensure_written(std::size_t index) {
  const std::size_t page = index / kSlotsPerPage;
  if (__builtin_expect(
          !(g_written_pages[page / 64].load(std::memory_order_relaxed) & (std::uint64_t{1} << (page % 64))), 0))
    first_write(index);
}

// The rule held in `slot` for `key` in `generation`, or 0 (kEmpty).
inline std::uint64_t read_slot(const Slot& slot, std::uintptr_t key, std::uint32_t generation) {
  const std::uint64_t tag = slot.tag.load(std::memory_order_acquire);
  if ((tag >> 16) != key || (tag & 1)) return 0;
  const std::uint64_t value = slot.value.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (slot.tag.load(std::memory_order_relaxed) != tag) return 0;
  if ((value >> 48) != (generation & 0xffff)) return 0;
  return value & 0xffffffffffffull;
}

// Tier 0's set of `key`: the index of its first slot.
inline std::size_t tier0_set(std::uintptr_t key) {
  const std::uint64_t h = key * 0x9E3779B97F4A7C15ull;
  return kCacheSlots + static_cast<std::size_t>(h >> (64 - kTier0SetBits)) * kTier0Ways;
}

__attribute__((noinline)) std::uint64_t tier0_lookup(std::uintptr_t key, std::uint32_t generation) {
  const std::size_t set = tier0_set(key);
  ensure_written(set);  // a set is in one page
  const Slot* slots = g_cache_state.slots + set;
  for (unsigned w = 0; w < kTier0Ways; ++w)
    if (const std::uint64_t bits = read_slot(slots[w], key, generation)) return bits;
  return 0;
}

// Returns the packed rule of `key` if cached in the current generation, or 0 (kEmpty) otherwise.
inline std::uint64_t cache_lookup(std::uintptr_t key, std::uint32_t generation) {
  if (__builtin_expect(!g_cache_state.tier1.load(std::memory_order_relaxed), 0)) return tier0_lookup(key, generation);
  const std::size_t index = slot_index(key);
  ensure_written(index);
  return read_slot(g_cache_state.slots[index], key, generation);
}

void store_slot(Slot& slot, std::uintptr_t key, std::uint32_t generation, std::uint64_t rule_bits) {
  std::uint64_t tag = slot.tag.load(std::memory_order_relaxed);
  if (tag & 1) return;
  if (!slot.tag.compare_exchange_strong(tag, tag | 1, std::memory_order_acquire, std::memory_order_relaxed)) return;
  std::atomic_thread_fence(std::memory_order_release);
  slot.value.store(rule_bits | static_cast<std::uint64_t>(generation & 0xffff) << 48, std::memory_order_relaxed);
  const std::uint64_t seq = ((tag & 0xffff) + 2) & 0xfffe;
  slot.tag.store(key << 16 | seq, std::memory_order_release);
}

// In tier 0: the set's slot holding `key` or an empty one, else the one the key's hash names (an older
// generation's rules are as good as empty: they are never read again).
void cache_store(std::uintptr_t key, std::uint32_t generation, std::uint64_t rule_bits) {
  Slot* slots = g_cache_state.slots;
  if (g_cache_state.tier1.load(std::memory_order_relaxed)) {
    store_slot(slots[slot_index(key)], key, generation, rule_bits);
    return;
  }
  Slot* set = slots + tier0_set(key);
  Slot* victim = &set[(key >> 2) & (kTier0Ways - 1)];
  for (unsigned w = 0; w < kTier0Ways; ++w) {
    const std::uint64_t tag = set[w].tag.load(std::memory_order_relaxed);
    const std::uint64_t value = set[w].value.load(std::memory_order_relaxed);
    if ((tag >> 16) == key || tag == 0 || (value >> 48) != (generation & 0xffff)) {
      victim = &set[w];
      break;
    }
  }
  store_slot(*victim, key, generation, rule_bits);
}

// glibc's x86_64 sigreturn trampoline, __restore_rt: "mov $15, %rax; syscall" (what libunwind and gdb
// recognise too). The handler returns to its first byte. The caller checks that the 9 bytes are inside
// the segment.
bool is_sigreturn(std::uintptr_t ip) {
  static constexpr std::uint8_t kCode[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
  return std::memcmp(reinterpret_cast<const void*>(ip), kCode, sizeof(kCode)) == 0;
}

// An interrupted address in a PLT stub: lazy entries (`jmp *GOT(%rip); push $n; jmp PLT0`, 16 bytes),
// non-lazy ones (`jmp *GOT(%rip)` then a 2-byte nop, .plt.got) and IBT ones (`endbr64; bnd jmp *GOT(%rip)`).
// A stub has no frame: the CFA is rsp + 8, rsp + 16 after the push. Linkers do not always emit CFI for
// .plt (GNU ld 2.40 linked tests/unwind's binary without) and, where they do, it is a DWARF expression,
// not a compact rule; libunwind recognises the lazy entry's first jmp the same way. A return address is
// never in a stub, so this applies to exact addresses only (a signal frame's interrupted one). `start`
// and `end` bound the bytes read to the segment holding ip. Returns the CFA offset, or 0 when ip is not
// in a recognised stub.
std::int32_t plt_cfa_offset(std::uintptr_t ip, std::uintptr_t start, std::uintptr_t end) {
  const auto at = [&](std::uintptr_t a, std::initializer_list<std::uint8_t> bytes) {
    if (a < start || end - a < bytes.size()) return false;
    return std::memcmp(reinterpret_cast<const void*>(a), bytes.begin(), bytes.size()) == 0;
  };
  const auto lazy = [&](std::uintptr_t entry) {
    return at(entry, {0xff, 0x25}) && at(entry + 6, {0x68}) && at(entry + 11, {0xe9});
  };
  if (lazy(ip) || (ip >= 6 && lazy(ip - 6))) return 8;  // at the jmp through the GOT, or at the push
  if (ip >= 11 && lazy(ip - 11)) return 16;             // at the jmp to PLT0, after the push
  if (at(ip, {0xff, 0x25}) && at(ip + 6, {0x66, 0x90})) return 8;
  if (at(ip, {0xf3, 0x0f, 0x1e, 0xfa, 0xf2, 0xff, 0x25})) return 8;
  if (ip >= 4 && at(ip - 4, {0xf3, 0x0f, 0x1e, 0xfa, 0xf2, 0xff, 0x25})) return 8;
  return 0;
}

struct FindModule {
  std::uintptr_t address = 0;
  bool first = true;
  bool found = false;
  bool executable = false;
  std::uintptr_t segment_start = 0, segment_end = 0;  // the PT_LOAD segment holding the address
  std::uintptr_t bias = 0;                            // the module's load bias (dlpi_addr)
  std::uint64_t identity = 0;  // a hash of its GNU build-id, 0 when it has none or nothing is shared
  ModuleCfi cfi;
};

inline std::uint64_t mix64(std::uint64_t h) {  // splitmix64's finalizer: a bijection
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

// A hash of the module's GNU build-id, or 0 when it has none: then its rules are not shared.
std::uint64_t build_id_hash(const dl_phdr_info* info) {
  memtrack::symbolize::BuildId id;
  if (!memtrack::symbolize::build_id_of(*info, id)) return 0;
  std::uint64_t h = 0xcbf29ce484222325ull ^ id.size;  // FNV-1a over the id's bytes, then mixed
  for (std::size_t k = 0; k < id.size; ++k) h = (h ^ id.bytes[k]) * 0x100000001b3ull;
  return mix64(h) | 1;
}

// The shared table's key of a rule: the module's identity and the address's offset in it (a return address
// minus one and an exact address apart). Never 0 (an empty entry).
inline std::uint64_t shared_key(std::uint64_t identity, std::uintptr_t offset, bool is_return) {
  return (identity ^ mix64(offset << 1 | (is_return ? 1 : 0))) | 1;
}

// The first entry of the key's group: the group from the identity and the page of code.
inline SharedEntry* shared_group(SharedEntry* table, std::uint64_t identity, std::uintptr_t offset) {
  const std::uint64_t group = mix64(identity ^ (offset >> 12)) & g_shared_groups_mask;
  return table + group * kSharedGroupEntries;
}

// A key's i-th probe in its group: from the entry of its 16 bytes of code, wrapping inside the group.
inline SharedEntry& shared_probe(SharedEntry* group, std::uintptr_t offset, unsigned i) {
  return group[((offset >> 4) + i) & (kSharedGroupEntries - 1)];
}

// The shared rule for `key`, or 0.
std::uint64_t shared_lookup(SharedEntry* group, std::uintptr_t offset, std::uint64_t key) {
  for (unsigned i = 0; i < kSharedProbes; ++i) {
    SharedEntry& e = shared_probe(group, offset, i);
    const std::uint64_t k = e.key.load(std::memory_order_acquire);
    if (k == 0) return 0;
    if (k == key) return e.value.load(std::memory_order_acquire) & 0xffffffffffffull;
  }
  return 0;
}

void shared_store(SharedEntry* group, std::uintptr_t offset, std::uint64_t key, std::uint64_t bits) {
  for (unsigned i = 0; i < kSharedProbes; ++i) {
    SharedEntry& e = shared_probe(group, offset, i);
    std::uint64_t k = e.key.load(std::memory_order_relaxed);
    if (k == 0 && e.key.compare_exchange_strong(k, key, std::memory_order_relaxed, std::memory_order_relaxed)) {
      e.value.store(bits, std::memory_order_release);
      g_shared_stores.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (k == key) return;  // another process or thread has it (or is storing it)
  }
}

int find_module(dl_phdr_info* info, std::size_t, void* data) {
  auto* find = static_cast<FindModule*>(data);
  if (find->first) {
    find->first = false;
    // A module was loaded or unloaded since the last miss: every cached rule may describe memory that now
    // belongs to another module.
    if (info->dlpi_adds != g_dl_adds.load(std::memory_order_relaxed) ||
        info->dlpi_subs != g_dl_subs.load(std::memory_order_relaxed)) {
      g_dl_adds.store(info->dlpi_adds, std::memory_order_relaxed);
      g_dl_subs.store(info->dlpi_subs, std::memory_order_relaxed);
      memtrack_unwind_invalidate();
    }
  }
  bool contains = false, executable = false;
  std::uintptr_t hdr = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD) {
      const std::uintptr_t start = info->dlpi_addr + ph.p_vaddr;
      if (find->address >= start && find->address - start < ph.p_memsz) {
        contains = true;
        executable = (ph.p_flags & PF_X) != 0;
        find->segment_start = start;
        find->segment_end = start + ph.p_memsz;
      }
    } else if (ph.p_type == PT_GNU_EH_FRAME) {
      hdr = info->dlpi_addr + ph.p_vaddr;
    }
  }
  if (!contains) return 0;
  find->found = true;
  find->executable = executable;
  find->cfi.eh_frame_hdr = hdr;
  find->bias = info->dlpi_addr;
  if (executable && g_shared.load(std::memory_order_relaxed) != nullptr) find->identity = build_id_hash(info);
  return 1;
}

// The slow path: computes, caches and returns the rule for `key` (a return address minus one, or an exact
// address if !is_return).
__attribute__((noinline)) std::uint64_t compute_rule(std::uintptr_t key, bool is_return) {
  g_misses.fetch_add(1, std::memory_order_relaxed);
  if (!g_cache_state.tier1.load(std::memory_order_relaxed) &&
      g_tier0_misses.fetch_add(1, std::memory_order_relaxed) + 1 >= kTier0Misses)
    g_cache_state.tier1.store(true, std::memory_order_relaxed);
  // For a return address, the module lookup and the trampoline check use the address itself: the
  // trampoline is entered at its first byte, which may be the first byte of its module's mapping.
  FindModule find{};
  find.address = is_return ? key + 1 : key;
  dl_iterate_phdr(find_module, &find);
  // Read after dl_iterate_phdr, which may have bumped it: a rule is never stored in a generation older
  // than the module list it was computed from.
  const std::uint32_t generation = g_generation.load(std::memory_order_acquire);
  SharedEntry* const shared = g_shared.load(std::memory_order_acquire);
  SharedEntry* group = nullptr;
  std::uint64_t shared_at = 0;
  const std::uintptr_t module_offset = key - find.bias;
  if (shared != nullptr && find.found && find.executable && find.identity != 0) {
    group = shared_group(shared, find.identity, module_offset);
    shared_at = shared_key(find.identity, module_offset, is_return);
    if (const std::uint64_t bits = shared_lookup(group, module_offset, shared_at); bits != 0) {
      g_shared_hits.fetch_add(1, std::memory_order_relaxed);
      if (key < kAddressLimit) cache_store(key, generation, bits);
      return bits;
    }
  }
  Rule rule;
  if (!find.found || !find.executable)
    rule.kind = RuleKind::kNoInfo;
  else if (is_return && find.segment_end - (key + 1) >= 9 && is_sigreturn(key + 1))
    rule.kind = RuleKind::kSignal;
  else
    rule = rule_for(find.cfi, key);
  if (!is_return && find.found && find.executable &&
      (rule.kind == RuleKind::kNoInfo || rule.kind == RuleKind::kFallback)) {
    if (const std::int32_t offset = plt_cfa_offset(key, find.segment_start, find.segment_end); offset != 0) {
      rule = Rule{};
      rule.kind = RuleKind::kCfaRsp;
      rule.cfa_offset = offset;
      rule.rbp = RbpRule::kSame;
    }
  }
  std::uint64_t bits = 0;
  if (!pack_rule(rule, &bits)) {
    Rule fallback;
    fallback.kind = RuleKind::kFallback;
    pack_rule(fallback, &bits);
  }
  if (key < kAddressLimit) cache_store(key, generation, bits);
  if (group != nullptr) shared_store(group, module_offset, shared_at, bits);
  return bits;
}

struct Regs {
  std::uintptr_t ip, sp, rbp;
  bool exact;  // ip is an interrupted address, not a return address
};

// One step with libunwind from a context holding only ip, sp and rbp (the only registers a compact rule
// needs, and the only ones this unwinder tracks; a CFA computed from another register fails here).
// libunwind takes its own locks: a signal handler that allocates while this thread is inside a libunwind
// step would wait for a lock its own thread holds (seen: Record.SignalHandlersThatAllocate hung). So a step
// entered again on the same thread ends that (inner) stack instead.
__thread bool t_in_fallback __attribute__((tls_model("initial-exec"))) = false;

__attribute__((noinline)) bool fallback_step(Regs* regs) {
  const Libunwind* lib = g_libunwind.load(std::memory_order_acquire);
  if (t_in_fallback) return false;
  if (lib == nullptr) {
    // Not loaded (yet): the stack ends at this frame, counted, and the first time said through the hook.
    if (g_fallback_unavailable.fetch_add(1, std::memory_order_relaxed) == 0) {
      if (void (*hook)(void) = g_unavailable_hook.load(std::memory_order_acquire)) hook();
    }
    return false;
  }
  struct InFallback {
    InFallback() { t_in_fallback = true; }
    ~InFallback() { t_in_fallback = false; }
  } in_fallback;
  g_fallback_steps.fetch_add(1, std::memory_order_relaxed);
  ucontext_t context;
  std::memset(&context, 0, sizeof(context));
  context.uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(regs->ip);
  context.uc_mcontext.gregs[REG_RSP] = static_cast<greg_t>(regs->sp);
  context.uc_mcontext.gregs[REG_RBP] = static_cast<greg_t>(regs->rbp);
  // unw_cursor_t is 127 words on x86_64 (libunwind-x86_64.h, UNW_TDEP_CURSOR_LEN); a little headroom.
  alignas(16) std::uint64_t cursor[160];
  if (lib->init_local2(cursor, &context, regs->exact ? kUnwInitSignalFrame : 0) < 0) return false;
  if (lib->step(cursor) <= 0) return false;
  std::uint64_t ip = 0, sp = 0, rbp = 0;
  if (lib->get_reg(cursor, kUnwRip, &ip) < 0 || lib->get_reg(cursor, kUnwRsp, &sp) < 0 ||
      lib->get_reg(cursor, kUnwRbp, &rbp) < 0)
    return false;
  if (sp <= regs->sp) return false;
  regs->ip = ip;
  regs->sp = sp;
  regs->rbp = rbp;
  regs->exact = false;
  return true;
}

inline std::uintptr_t load(std::uintptr_t address) { return *reinterpret_cast<const std::uintptr_t*>(address); }

// The steps that leave the compact path: a signal frame, libunwind, or the test hook. Returns false when
// the stack ends.
__attribute__((noinline)) bool slow_step(std::uint64_t bits, Regs* regs) {
  const RuleKind kind = packed_kind(bits);
  if (kind == RuleKind::kEnd || kind == RuleKind::kNoInfo) return false;
  if (kind == RuleKind::kSignal && !forced_fallback()) {
    // The handler's CFA, where the handler returned to __restore_rt, is the kernel's ucontext
    // (struct rt_sigframe without its pretcode): the interrupted registers are there.
    const auto* uc = reinterpret_cast<const ucontext_t*>(regs->sp);
    regs->ip = static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
    regs->sp = static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]);
    regs->rbp = static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RBP]);
    regs->exact = true;
    return regs->ip != 0;
  }
  return fallback_step(regs);
}

}  // namespace
}  // namespace memtrack::unwind

using namespace memtrack::unwind;

namespace memtrack::unwind {
namespace {

// The prefix record: the last complete stack this thread captured, innermost first, with what each step
// read. A new capture unwinds fresh frames until one has the same (ip, sp, rbp) as a recorded frame; if
// every value the recorded steps read from there outwards is still in memory (each return address at
// its slot, each saved rbp at its slot), the rest of the stack is the recorded one: unwinding is a
// function of (ip, sp, rbp), the rules (same generation) and those values. A frame's rbp is part of that
// only when it is live: some step from there outwards computes a CFA or an rbp slot from it before an
// outer step reloads rbp from the stack. Where it is dead it is not compared: a hook that holds a changing
// value in rbp (the preload's malloc keeps its result there) still meets the record at its own frame.
// The check is one load and compare per frame with no dependency between frames, where an unwind step is
// a chain of dependent loads; in a loop that allocates from the same place it is the whole capture.
constexpr std::size_t kRecordFrames = 128;
constexpr std::size_t kNoJunction = ~std::size_t{0};
// Arrays rather than an array of frames: the reuse path copies ip[] to the output and compares strided
// loads against it, both tight loops over contiguous words.
struct Frames {
  std::uintptr_t ip[kRecordFrames];
  std::uintptr_t sp[kRecordFrames];
  std::uintptr_t rbp[kRecordFrames];
  // Where the step to the caller read the caller's rbp, when that rbp is live (its value is checked); 0:
  // rbp unchanged, or read but dead.
  std::uintptr_t rbp_slot[kRecordFrames];
  // ~0 where the frame's rbp is live (compared at a junction), 0 where it is dead. While a capture runs,
  // fresh frames hold kRbpPassed instead when their step left rbp unchanged (live iff the caller's is).
  std::uintptr_t rbp_live[kRecordFrames];
};
constexpr std::uintptr_t kRbpLive = ~std::uintptr_t{0}, kRbpDead = 0, kRbpPassed = 1;

// A compact step's use of the frame's rbp, by the packed rule's kind and rbp rule (its low 5 bits): live
// when the CFA or the rbp slot is computed from it, passed on when the caller's rbp is this one, dead when
// the caller's is loaded from a slot found from rsp.
constexpr auto kRbpUse = [] {
  std::array<std::uintptr_t, 32> use{};
  for (unsigned i = 0; i < 32; ++i) {
    const auto kind = static_cast<RuleKind>(i & 7);
    const auto rbp = static_cast<RbpRule>(i >> 3);
    use[i] = kind == RuleKind::kCfaRbp || rbp == RbpRule::kAtRbp ? kRbpLive
             : rbp == RbpRule::kSame                             ? kRbpPassed
                                                                 : kRbpDead;
  }
  return use;
}();

// Once the liveness of their caller's rbp is known (`caller`, the frame after them): resolves the
// kRbpPassed entries of fresh frames [0, n) and drops the rbp slots whose loaded value is dead.
// Returns whether any of those rbp slots is left.
inline bool resolve_rbp_live(Frames& fresh, std::size_t n, std::uintptr_t caller) {
  std::uintptr_t slots = 0;
  for (std::size_t k = n; k-- > 0;) {
    if (caller == kRbpDead) fresh.rbp_slot[k] = 0;
    slots |= fresh.rbp_slot[k];
    if (fresh.rbp_live[k] == kRbpPassed) fresh.rbp_live[k] = caller;
    caller = fresh.rbp_live[k];
  }
  return slots != 0;
}
struct ThreadRecord {
  std::uint32_t count;       // frames in `frames`; 0: none
  std::uint32_t generation;  // the rule generation they were unwound in
  bool busy;                 // a capture is running on this thread (a signal handler's then ignores the record)
  bool rbp_checks;           // some frame's rbp_slot is not 0 (or may not be: a superset is harmless)
  std::uint32_t current;     // buffers[current] is the record, the other one the capture in progress
  Frames buffers[2];
};
// Zero-initialised and trivially destructible: no TLS constructor or destructor, and initial-exec, so an
// access is one %fs-relative address and is async-signal-safe (the library must be loaded at startup, as
// LD_PRELOAD does, not dlopened).
#ifndef MEMTRACK_UNWIND_RECORD_POINTER
__attribute__((tls_model("initial-exec"))) thread_local ThreadRecord t_record;
inline ThreadRecord* thread_record() { return &t_record; }
#else
// memtrack::unwind_pointer (libmemtrack-attach.so, which `memtrack attach` loads with dlopen): a dlopen'd
// library's initial-exec thread-locals come from the C library's small static TLS surplus, and the record
// (10 KiB) does not fit. Only a pointer to it is thread-local; the caller hands each thread its record
// (memtrack_unwind_set_thread_record), and a thread without one captures nothing.
__attribute__((tls_model("initial-exec"))) thread_local ThreadRecord* t_record_ptr = nullptr;
inline ThreadRecord* thread_record() { return t_record_ptr; }
#endif
std::atomic<bool> g_prefix_reuse{true};

// The innermost frame from which the record still holds: the values every recorded step from there
// outwards read (each return address at its slot, each saved rbp at its slot) are still in memory. A
// junction at frame p is valid iff p >= the result. Scans from the outermost frame inwards and stops at
// the first difference, so it costs one load and compare per frame of the part that is reused.
// A record without rbp checks (no live rbp reloaded: the usual case in code without frame pointers) is
// first checked four frames at a time with one branch, which halves the instructions per frame.
__attribute__((no_sanitize("address"))) inline std::size_t record_holds_from(const Frames& f, std::size_t count,
                                                                             bool rbp_checks) {
  std::size_t from = count - 1;  // the outermost frame's step ended the stack without reading anything
  if (!rbp_checks) {
    // Frame k's return address is at sp[k] - 8; checking frames from - 3 .. from moves `from` down by 4.
    while (from >= 4) {
      const std::uintptr_t diff = (load(f.sp[from] - 8) ^ f.ip[from]) | (load(f.sp[from - 1] - 8) ^ f.ip[from - 1]) |
                                  (load(f.sp[from - 2] - 8) ^ f.ip[from - 2]) |
                                  (load(f.sp[from - 3] - 8) ^ f.ip[from - 3]);
      if (diff != 0) break;  // the exact loop below finds which one
      from -= 4;
    }
  }
  while (from > 0) {
    const std::size_t q = from - 1;  // the step from frame q to frame q + 1
    if (load(f.sp[q + 1] - 8) != f.ip[q + 1]) break;
    if (f.rbp_slot[q] != 0 && load(f.rbp_slot[q]) != f.rbp[q + 1]) break;
    from = q;
  }
  return from;
}

// The hot loop. Per fresh frame on a rule hit: a multiply for the slot, the slot's three loads, the return
// address and possibly the saved rbp. Registers stay in locals (not in a struct whose address escapes) so
// they stay in machine registers. Not instrumented by ASan: it reads other frames' saved registers, which
// are not locals but may sit next to their redzones.
// `held`: the caller already set rec.busy for this capture (it checked the record) and `holds_from` is
// what record_holds_from said of the record then (kNoJunction if not computed).
__attribute__((noinline, no_sanitize("address"))) std::size_t capture_general(std::uintptr_t* out, std::size_t max,
                                                                              unsigned skip, bool* truncated,
                                                                              std::uintptr_t ip, std::uintptr_t sp,
                                                                              std::uintptr_t rbp, bool held,
                                                                              std::size_t holds_from) {
  const std::uint32_t generation = g_generation.load(std::memory_order_acquire);
  const bool force_fallback = forced_fallback();
  ThreadRecord& rec = *thread_record();
  const bool use_record = held || (!rec.busy && !force_fallback && g_prefix_reuse.load(std::memory_order_relaxed));
  if (use_record && !held) {
    rec.busy = true;
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  std::size_t p = use_record && rec.count != 0 && rec.generation == generation ? 0 : kNoJunction;
  Frames& frames = rec.buffers[rec.current & 1];
  Frames& fresh = rec.buffers[(rec.current & 1) ^ 1];
  // holds_from: record_holds_from, computed at the first candidate junction unless the caller did.
  bool recordable = use_record;  // every step so far compact and recorded in fresh[0..nf)
  bool complete = false;         // the stack ended on a rule saying so (not on a failed check or max)
  bool outputting = true;        // false once `max` frames are out: unwinding goes on only to record
  std::size_t nf = 0;
  std::uintptr_t exact = 0;  // 1 when ip is an interrupted address rather than a return address
  std::size_t n = 0;
  bool more = false;
  for (;;) {
    if (ip == 0) {
      recordable = false;
      break;
    }
    if (p != kNoJunction && !exact) {
      while (p < rec.count && frames.sp[p] < sp) ++p;
      if (p == rec.count) {
        p = kNoJunction;
      } else if (frames.sp[p] == sp && frames.ip[p] == ip && ((frames.rbp[p] ^ rbp) & frames.rbp_live[p]) == 0) {
        if (holds_from == kNoJunction) holds_from = record_holds_from(frames, rec.count, rec.rbp_checks);
        if (p >= holds_from) {
          if (outputting) {
            std::size_t from = p;
            const std::size_t skipped = std::min<std::size_t>(skip, rec.count - from);
            from += skipped;
            skip -= static_cast<unsigned>(skipped);
            const std::size_t k = std::min(rec.count - from, max - n);
            std::memcpy(out + n, &frames.ip[from], k * sizeof(std::uintptr_t));
            n += k;
            more = from + k < rec.count;
          }
          const std::size_t tail = rec.count - p;
          if (recordable && nf + tail <= kRecordFrames) {
            // The junction's recorded rbp stays where it is dead: it is never compared or checked.
            if (nf != 0 && resolve_rbp_live(fresh, nf, frames.rbp_live[p])) rec.rbp_checks = true;
            if (nf != p) {
              for (std::uintptr_t* a : {frames.ip, frames.sp, frames.rbp, frames.rbp_slot, frames.rbp_live})
                std::memmove(a + nf, a + p, tail * sizeof(std::uintptr_t));
            }
            // Usually a few frames: one loop rather than five memcpy calls.
            for (std::size_t k = 0; k < nf; ++k) {
              frames.ip[k] = fresh.ip[k];
              frames.sp[k] = fresh.sp[k];
              frames.rbp[k] = fresh.rbp[k];
              frames.rbp_slot[k] = fresh.rbp_slot[k];
              frames.rbp_live[k] = fresh.rbp_live[k];
            }
            rec.count = static_cast<std::uint32_t>(nf + tail);
          }
          recordable = false;  // done: the record is already updated
          break;
        }
        // Otherwise the stack changed further out than here: a junction further out may still hold.
      }
    }
    if (outputting) {
      if (skip > 0) {
        --skip;
      } else if (n == max) {
        more = true;
        outputting = false;
        if (!recordable) break;
      } else {
        out[n++] = ip;
      }
    }
    if (recordable) {
      if (nf == kRecordFrames) {
        recordable = false;
        if (!outputting) break;
      } else {
        fresh.ip[nf] = ip;
        fresh.sp[nf] = sp;
        fresh.rbp[nf] = rbp;
      }
    }
    const std::uintptr_t key = ip - 1 + exact;
    std::uint64_t bits = cache_lookup(key, generation);
    if (__builtin_expect(bits == 0, 0)) bits = compute_rule(key, exact == 0);
    const RuleKind kind = packed_kind(bits);
    std::uintptr_t cfa;
    if (__builtin_expect(kind == RuleKind::kCfaRsp && !force_fallback, 1)) {
      cfa = sp + static_cast<std::intptr_t>(packed_cfa_offset(bits));
    } else if (kind == RuleKind::kCfaRbp && !force_fallback) {
      cfa = rbp + static_cast<std::intptr_t>(packed_cfa_offset(bits));
    } else {
      if (kind == RuleKind::kEnd || kind == RuleKind::kNoInfo) {
        if (recordable) fresh.rbp_live[nf++] = kRbpDead;  // the last step read nothing
        complete = true;
        break;
      }
      recordable = false;  // the record holds compact steps only
      if (!outputting) break;
      if (kind == RuleKind::kCfaDerefRbp && !force_fallback) {
        cfa = load(rbp + static_cast<std::intptr_t>(packed_cfa_offset(bits)));
      } else {
        Regs regs{ip, sp, rbp, exact != 0};
        if (!slow_step(bits, &regs)) break;
        ip = regs.ip;
        sp = regs.sp;
        rbp = regs.rbp;
        exact = regs.exact ? 1 : 0;
        continue;
      }
    }
    // The caller's frame is above this one; anything else is a wrong rule or a corrupt stack, and reading
    // on would follow garbage.
    if (__builtin_expect(cfa <= sp || (cfa & 7) != 0, 0)) {
      recordable = false;
      break;
    }
    const RbpRule rbp_rule = packed_rbp(bits);
    std::uintptr_t rbp_slot = 0;
    if (rbp_rule == RbpRule::kAtCfa)
      rbp_slot = cfa + static_cast<std::intptr_t>(packed_rbp_offset(bits));
    else if (rbp_rule == RbpRule::kAtRbp)
      rbp_slot = rbp + static_cast<std::intptr_t>(packed_rbp_offset(bits));
    if (rbp_slot != 0) rbp = load(rbp_slot);
    if (recordable) {
      fresh.rbp_slot[nf] = rbp_slot;
      fresh.rbp_live[nf++] = kRbpUse[bits & 31];
    }
    ip = load(cfa - 8);
    sp = cfa;
    exact = 0;
  }
  if (recordable && complete) {
    rec.rbp_checks = resolve_rbp_live(fresh, nf, kRbpDead);  // the outermost frame's entries are already final
    rec.current ^= 1;                                        // the capture becomes the record
    rec.count = static_cast<std::uint32_t>(nf);
    rec.generation = generation;
  }
  if (use_record) {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    rec.busy = false;
  }
  if (truncated != nullptr) *truncated = more;
  return n;
}

}  // namespace
}  // namespace memtrack::unwind

// The steady state of a loop that allocates from one place: the capture's first frame is the record's
// first frame and the whole record still holds, so the stack is the record. Checked here, in a function
// small enough to need few registers, before the general loop (which would find the same junction at its
// first frame, after its own setup).
extern "C" __attribute__((no_sanitize("address"))) std::size_t memtrack_unwind_capture_from(
    std::uintptr_t* out, std::size_t max, unsigned skip, bool* truncated, std::uintptr_t ip, std::uintptr_t sp,
    std::uintptr_t rbp) {
#ifdef MEMTRACK_UNWIND_RECORD_POINTER
  if (thread_record() == nullptr) {
    if (truncated != nullptr) *truncated = false;
    return 0;
  }
#endif
  ThreadRecord& rec = *thread_record();
  if (!rec.busy && rec.count != 0 && !forced_fallback() && g_prefix_reuse.load(std::memory_order_relaxed)) {
    // Busy before reading the record: a signal handler's capture then leaves it alone.
    rec.busy = true;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    const Frames& frames = rec.buffers[rec.current & 1];
    const std::size_t count = rec.count;
    std::size_t holds_from = kNoJunction;
    if (rec.generation == g_generation.load(std::memory_order_acquire) && frames.sp[0] == sp && frames.ip[0] == ip &&
        ((frames.rbp[0] ^ rbp) & frames.rbp_live[0]) == 0 &&
        (holds_from = record_holds_from(frames, count, rec.rbp_checks)) == 0) {
      const std::size_t from = std::min<std::size_t>(skip, count);
      const std::size_t n = std::min(count - from, max);
      std::memcpy(out, &frames.ip[from], n * sizeof(std::uintptr_t));
      std::atomic_signal_fence(std::memory_order_seq_cst);
      rec.busy = false;
      if (truncated != nullptr) *truncated = from + n < count;
      return n;
    }
    // The outer frames changed, or the first frame is a new one: the general loop, still holding the record.
    return capture_general(out, max, skip, truncated, ip, sp, rbp, true, holds_from);
  }
  return capture_general(out, max, skip, truncated, ip, sp, rbp, false, kNoJunction);
}

extern "C" void memtrack_unwind_set_prefix_reuse(bool on) { g_prefix_reuse.store(on, std::memory_order_relaxed); }

extern "C" void memtrack_unwind_invalidate(void) {
  g_generation.fetch_add(1, std::memory_order_acq_rel);
  g_invalidations.fetch_add(1, std::memory_order_relaxed);
}

extern "C" bool memtrack_unwind_init(void* (*open)(const char*, int), void* (*sym)(void*, const char*)) {
  if (g_libunwind.load(std::memory_order_acquire) != nullptr) return true;
  void* handle = open("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return false;
  Libunwind lib;
  lib.init_local2 = reinterpret_cast<decltype(lib.init_local2)>(sym(handle, "_ULx86_64_init_local2"));
  lib.step = reinterpret_cast<decltype(lib.step)>(sym(handle, "_ULx86_64_step"));
  lib.get_reg = reinterpret_cast<decltype(lib.get_reg)>(sym(handle, "_ULx86_64_get_reg"));
  if (lib.init_local2 == nullptr || lib.step == nullptr || lib.get_reg == nullptr) return false;
  // Racing initialisers store the same pointers.
  g_libunwind_storage = lib;
  g_libunwind.store(&g_libunwind_storage, std::memory_order_release);
  return true;
}

extern "C" memtrack_unwind_stats memtrack_unwind_get_stats(void) {
  return {g_misses.load(std::memory_order_relaxed),
          g_fallback_steps.load(std::memory_order_relaxed),
          g_invalidations.load(std::memory_order_relaxed),
          sizeof(g_static_cache),
          g_fallback_unavailable.load(std::memory_order_relaxed),
          g_cache_state.tier1.load(std::memory_order_relaxed) ? 1u : 0u,
          g_shared_hits.load(std::memory_order_relaxed),
          g_shared_stores.load(std::memory_order_relaxed)};
}

extern "C" void memtrack_unwind_use_shared_rules(void* memory, std::size_t bytes) {
  const std::size_t groups = bytes / (kSharedGroupEntries * sizeof(SharedEntry));
  if (memory == nullptr || groups == 0 || (groups & (groups - 1)) != 0) {
    g_shared.store(nullptr, std::memory_order_release);
    return;
  }
  g_shared_groups_mask = groups - 1;
  g_shared.store(static_cast<SharedEntry*>(memory), std::memory_order_release);
}

extern "C" void memtrack_unwind_on_fallback_unavailable(void (*hook)(void)) {
  g_unavailable_hook.store(hook, std::memory_order_release);
}

extern "C" std::size_t memtrack_unwind_cache_bytes(void) { return sizeof(g_static_cache); }

extern "C" void memtrack_unwind_use_cache_memory(void* memory) {
  g_cache_state.slots = static_cast<Slot*>(memory);
  g_cache_state.tier1.store(false, std::memory_order_relaxed);
  g_tier0_misses.store(0, std::memory_order_relaxed);
  for (auto& w : g_written_pages) w.store(0, std::memory_order_relaxed);  // no capture has run yet (unwind.h)
}

#ifdef MEMTRACK_UNWIND_RECORD_POINTER
extern "C" std::size_t memtrack_unwind_thread_record_bytes(void) { return sizeof(ThreadRecord); }

extern "C" void memtrack_unwind_set_thread_record(void* memory) {
  auto* rec = static_cast<ThreadRecord*>(memory);
  if (rec != nullptr) {
    rec->count = 0;
    rec->busy = false;
    rec->current = 0;
  }
  t_record_ptr = rec;
}
#endif

#ifdef MEMTRACK_UNWIND_TEST_HOOKS
extern "C" void memtrack_unwind_test_force_fallback(bool on) { g_force_fallback.store(on, std::memory_order_relaxed); }
#endif
