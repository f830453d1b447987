// Private to libmemtrack-preload.so: what its files share. The preload interposes the allocation and mapping
// functions of a tracked program and writes one event per successful call into the recorder's shared ring
// (memtrack/runtime/ring.h). Its files, one job each:
//   hooks.cpp        the interposed C ABI (malloc ... sbrk, _Fork) and the constructor that attaches early
//   resolve.cpp      the real functions, found with dlsym(RTLD_NEXT), and the bootstrap arena (resolve.h)
//   ring_client.cpp  attaching to the recorder's ring and the producer's half of its protocol (ring_client.h)
//   hooks_cxx.cpp    the C++ operators new/delete (the 20 of cxx_operators.h), interposed like malloc
//   entry.cpp        the entry depth (EntryScope below) and sigaction/signal, which give handlers a fresh depth
//   patch/           entry patching for what the PLT does not reach: allocators defined in the executable or in
//                    a library loaded with dlopen, and allocator APIs (mallocx, mi_malloc, tc_new, ...)
//                    (patch/patch.h), with the tables of entry points in patch/tables.cpp
//   process_hooks.cpp the exec family, posix_spawn, system, popen: lifecycle notes and the children's environment
//   hooks_dlopen.cpp dlopen: the caller's search path kept, new images patched
//   stacks.cpp, modules.cpp  call stacks and the modules their addresses lie in (stacks.h)
//   diagnostic.cpp   diagnostic() below
//   control.cpp      memtrack/control.h's calls (pause, resume, regions) reaching the ring
//   test_hooks.cpp   hooks for the integration tests, only in libmemtrack-preload-testhooks.so
//
// Rules every file keeps (docs/RUNTIME.md, "Calls and events" and "Processes, exec, threads, signals"):
// - It links only libc (libdl and pthread are part of it) and Zydis (patch/, which never allocates), and uses
//   no C++ runtime: no exceptions, no RTTI, no operator new, no static constructors (globals are constinit)
//   beyond the one in hooks.cpp. Everything is raw system calls or libc functions that do not allocate.
// - No allocation on its own paths: recording an event writes into the mapped ring and nowhere else.
// - Causal order: a free is recorded before the real free, an allocation after the real call returns, and a
//   realloc takes its ticket before the real call (the old block is released inside it) and fills the slot
//   after. Ticket order is the artifact order (see ring.h for why it is causal).
// - Reentrancy: `t_busy` is set while this thread attaches to the recorder; allocations made meanwhile (by
//   pthread_atfork) go straight to the real allocator, unrecorded. While this thread resolves the real
//   functions, its calls are served from the bootstrap arena (`t_resolving`).
// - Signals: a hook may run in a signal handler, so the recording path is async-signal-safe (atomics, raw
//   system calls, thread-locals of the initial-exec model, which never allocate). A handler that interrupts
//   this thread while it holds an unfilled ticket records normally, within a bound that rules out deadlock
//   (begin_event in ring_client.h).
// - fork, exec, vfork, threads: a forked child shares the ring and refreshes its pid and tid (pthread_atfork,
//   and the _Fork hook, which runs no handlers); exec starts a new image that attaches again; vfork children
//   only exec or _exit; each thread caches its own tid. Nothing is buffered per thread, so nothing is flushed.
// - Lossless: a full ring makes the producer wait. If the recorder is gone, the process stops recording
//   after one warning and never hangs.
#pragma once

#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

// The interposed functions: the only symbols the library exports (CXX_VISIBILITY_PRESET hidden hides the rest).
#define MEMTRACK_EXPORT extern "C" __attribute__((visibility("default")))
// initial-exec: a thread-local of this model is a fixed offset from the thread pointer, so reading one never
// calls __tls_get_addr, which may allocate (and so recurse into malloc) on a thread's first access.
#define MEMTRACK_TLS __thread __attribute__((tls_model("initial-exec")))

// Everything declared in the preload's headers is hidden, declarations included: the compiler then reaches
// the globals of another file of the library directly, not through the GOT.
#pragma GCC visibility push(hidden)

namespace memtrack::preload {

// No stdio: it allocates and takes locks. The program's stderr, for the test hooks (diagnostics go through
// diagnostic() below).
inline void write_stderr(const char* msg) { (void)!syscall(SYS_write, 2, msg, strlen(msg)); }

// Whether C string `s` begins with `prefix` (environment entries, symbol names).
inline bool starts_with(const char* s, const char* prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

// A diagnostic of the preload: one line of the parts to the recorder's messages channel
// (MEMTRACK_MESSAGES, ring.h), which record prints in its summary, deduplicated; never into the program's
// fds, whose stderr may be checked byte for byte (a compiler's, by autoconf). Only when the channel cannot be
// opened (not under the recorder, the recorder gone, credentials dropped) does the line go to stderr, after
// "memtrack: " (docs/RUNTIME.md, "Diagnostics"). Opens, writes once (so lines of processes never
// interleave) and closes: no fd is left in the program. Raw system calls and a stack buffer: callable from any hook. Lines longer than
// 1 KiB are cut. diagnostic.cpp.
void diagnostic(const char* const* parts, size_t count);

// The messages channel's path (MEMTRACK_MESSAGES): the image's copy once it took the variable out of environ
// at attach, the environment's before; nullptr when the recorder named none. process_hooks.cpp.
const char* messages_path();

template <typename... Parts>
inline void say(Parts... parts) {
  const char* p[] = {parts...};
  diagnostic(p, sizeof...(Parts));
}

// ---- The entry depth: exactly one event per call ----------------------------------------------------------
// Allocator entry points call each other: operator new calls malloc (libstdc++), aligned_alloc calls
// mi_malloc_aligned (mimalloc), delete[] jumps to free (jemalloc), and an allocator maps memory with
// mmap/munmap/brk inside an allocation. Every hooked entry (interposed or patched) therefore starts with
//
//     if (in_entry()) return real(args...);   // nested: straight through, nothing recorded, nothing held
//     EntryScope scope;                       // outermost: from here to the return, nested calls pass through
//     ... the real call, and the one event ...
//
// so the outermost call of a thread makes the one event and nothing it calls makes another. This is the
// point where a hook may do per-event work besides the event itself (a stack capture): it runs once per
// program call, with the program's frames above it.
//
// Contract:
// - in_entry() is one initial-exec thread-local load; EntryScope increments that depth and its destructor
//   decrements it. Both are async-signal-safe.
// - The nested path holds no scope, so an exception thrown by a real function (a throwing operator new)
//   never leaves a depth behind. An outermost scope is never held across a call that can throw: the
//   throwing operators call their nothrow twin inside the scope, and the throwing one only outside it
//   (hooks_cxx.cpp).
// - Signal handlers start at depth 0: sigaction/signal are interposed (entry.cpp) so a handler that
//   interrupts an allocation and allocates itself is recorded like any other call, then the interrupted
//   depth is restored.
extern MEMTRACK_TLS int t_entry_depth;

[[gnu::always_inline]] inline bool in_entry() { return t_entry_depth != 0; }

class EntryScope {
 public:
  [[gnu::always_inline]] EntryScope() { ++t_entry_depth; }
  [[gnu::always_inline]] ~EntryScope() { --t_entry_depth; }
  EntryScope(const EntryScope&) = delete;
  EntryScope& operator=(const EntryScope&) = delete;
};

}  // namespace memtrack::preload

#pragma GCC visibility pop
