// memtrack-unwind: call-stack capture for the preload library, x86_64 Linux only.
//
// A DWARF call-frame-information unwinder with a per-address cache of compact unwind rules. On a cache hit an
// unwind step is one hash probe and two or three loads (the return address, the saved rbp); on a miss the
// rule is computed from the .eh_frame_hdr / .eh_frame of the module holding the address (found with
// dl_iterate_phdr), from memory that is already mapped, without allocating. Frames whose rule is not compact
// (a CFA or register given by a general DWARF expression) are stepped by libunwind if memtrack_unwind_init()
// loaded it, otherwise the stack ends there (counted: memtrack_unwind_stats::fallback_unavailable). Signal frames
// (glibc's __restore_rt) are stepped through the kernel's ucontext on the stack.
//
// Contracts:
// - No malloc, no exceptions, no locks taken by this code on any path. The cached path is async-signal-safe.
//   A miss calls dl_iterate_phdr (which takes the loader's recursive lock, so a miss in a signal handler
//   that interrupted dlopen in another thread waits for it), and a libunwind fallback step is whatever
//   libunwind's local unwinding is (it does not call malloc, but it is not documented async-signal-safe).
// - Thread-safe: the cache is one global table, written under a per-slot sequence lock, read lock-free.
// - dlopen/dlclose: every miss compares dl_iterate_phdr's adds/subs counters with the last ones seen and
//   invalidates the cache when they moved; call memtrack_unwind_invalidate() after dlclose to drop rules
//   of an unloaded module before the next miss would notice (a new module mapped at the same addresses
//   would otherwise be unwound with the old one's rules).
// - Not reentrant into the allocator: safe to call with the preload's reentrancy guard held.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

// Writes the return addresses of the calling thread's stack into out[0..returned), innermost first:
// out[0] is the address in the caller of memtrack_unwind_capture just after the call, out[1] the caller's
// return address, and so on. The first `skip` frames are dropped before anything is written. The frame
// of a function interrupted by a signal holds its exact interrupted address, not a return address (the
// frame before it is glibc's __restore_rt). *truncated (if not null) is set to true when the stack had
// more than `max` frames after skipping, false otherwise. Returns the number of addresses written.
std::size_t memtrack_unwind_capture(std::uintptr_t* out, std::size_t max, unsigned skip, bool* truncated);

// Drops every cached rule (a generation counter is bumped; entries of older generations never match).
// Async-signal-safe. Call it after dlclose.
void memtrack_unwind_invalidate(void);

// Loads libunwind (libunwind.so.8) with open(name, RTLD_NOW | RTLD_LOCAL) and finds its functions with sym,
// for frames whose rule is not compact. The caller hands in its dlopen and dlsym: a library that interposes
// dlopen (the preload) passes the real one, so loading libunwind does not run its own hook. RTLD_LOCAL keeps
// libunwind's symbols out of the global scope, so a preloaded memtrack does not interpose the program's
// _Unwind_* (C++ exceptions) or backtrace(). It allocates (dlopen): call it once at startup, outside any
// allocator hook. Returns false if libunwind is not installed (then such frames end the stack). Idempotent.
// It may be called at any time, also after captures ran; until then such frames end the stack.
bool memtrack_unwind_init(void* (*open)(const char* name, int mode), void* (*sym)(void* handle, const char* name));

// `hook` is called once, from inside the capture that first met a frame needing libunwind while it was not
// loaded (that stack ends there). It runs wherever a capture runs (an allocator hook, a signal handler): it
// must not allocate and must be async-signal-safe. nullptr: none.
void memtrack_unwind_on_fallback_unavailable(void (*hook)(void));

// Counters since the start, for tests and the recorder's summary (relaxed reads; not on the hot path).
struct memtrack_unwind_stats {
  std::uint64_t misses;  // cache misses: each a dl_iterate_phdr, then the shared rules or an FDE search + CFI run
  std::uint64_t fallback_steps;        // steps taken by libunwind
  std::uint64_t invalidations;         // generation bumps (explicit or seen through dl_iterate_phdr)
  std::uint64_t cache_bytes;           // size of the rule cache
  std::uint64_t fallback_unavailable;  // steps that needed libunwind before it was loaded: the stack ended there
  std::uint64_t cache_tier;            // 0: the small first table, 1: the big one (after 512 rules computed)
  std::uint64_t shared_hits;           // misses answered by the shared rules (not computed here)
  std::uint64_t shared_stores;         // rules this process computed and added to the shared rules
};
memtrack_unwind_stats memtrack_unwind_get_stats(void);

// The rule cache lives in this library's .bss unless this moves it: `memory` is memtrack_unwind_cache_bytes()
// zeroed bytes, 16-aligned (page-aligned keeps each set of the small table in one page), that stay mapped for the rest
// of the process. Call it before the first capture and never concurrently with one (the preload calls it at attach, to
// keep the cache in memory it names: its pages are memtrack's, not the program's, docs/RUNTIME.md "Resident memory").
// Rules cached before are lost.
std::size_t memtrack_unwind_cache_bytes(void);
void memtrack_unwind_use_cache_memory(void* memory);

// Rules shared between processes: `memory` is `bytes` (a power of two times 4 KiB) of zeroed memory mapped
// shared by every process that captures (the preload gives the part of the recorder's ring set aside for it),
// staying mapped for the rest of the process. A miss in this process's cache looks there, by the module's GNU
// build-id and the address's offset in the module, before computing the rule from .eh_frame, and a rule it
// computes is added. What a rule depends on is the module's contents, which its build-id names, so a rule
// from another process (another load address, another program) holds here; a module without a build-id is
// not shared. Entries are written once, lock-free; when the table's group for a rule is full, the rule is
// just not shared. nullptr (or a size that is not one) stops using it. Call it while no capture runs (the
// preload: at attach, before the first).
void memtrack_unwind_use_shared_rules(void* memory, std::size_t bytes);

// Prefix reuse (on by default): each thread keeps its last complete stack (up to 128 frames, 10 KiB of
// initial-exec TLS, or of memory the caller gives in memtrack::unwind_pointer) and a capture that reaches one of its
// frames checks the rest with one load per frame instead of unwinding it. Off: every frame is unwound through the rule
// cache (for benchmarks and tests).
void memtrack_unwind_set_prefix_reuse(bool on);

#ifdef MEMTRACK_UNWIND_RECORD_POINTER
// Only in memtrack::unwind_pointer (for a library loaded with dlopen, whose initial-exec thread-locals must
// fit the C library's static TLS surplus): the per-thread record of prefix reuse is not thread-local storage
// but memory the caller gives each thread, memtrack_unwind_thread_record_bytes() bytes, 16-aligned, that
// stay mapped while the thread may capture; set on the thread itself, before its first capture (a thread
// with none captures nothing: 0 frames). Setting it resets the record. nullptr takes it away.
std::size_t memtrack_unwind_thread_record_bytes(void);
void memtrack_unwind_set_thread_record(void* memory);
#endif

#ifdef MEMTRACK_UNWIND_TEST_HOOKS
// Only in memtrack::unwind_testing, the tests' build of this library: when on, every frame is stepped by
// libunwind (to check the fallback path against the cached one).
void memtrack_unwind_test_force_fallback(bool on);
#endif
}
