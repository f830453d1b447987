// Call stacks of allocations (docs/RUNTIME.md, "Call stacks"): capture with memtrack::unwind, interning in
// this image's trace tree, and the stack and module notes that carry new nodes and modules to the recorder
// (ring.h, "Stack notes"). stacks.cpp holds the tree and the capture, modules.cpp the module list.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "preload_internal.h"

#pragma GCC visibility push(hidden)

namespace memtrack::preload {

// Frames per stack, from RingHeader::stack_depth at attach (clamped to kMaxStackDepth); 0: stacks are off.
extern uint32_t g_stack_depth;
inline constexpr uint32_t kMaxStackDepth = 256;

// At attach, after the image's NoteExec: maps the trace tree and notes every module of the image (the
// unwinder's fallback is loaded later: stacks_load_fallback, below). A fork child keeps the parent's tree and
// module list (copy-on-write) and needs nothing.
void stacks_attach();
// Loads libunwind, the fallback for frames without a compact rule (stacks end there without it). Never from
// attach or from inside a hooked call: attach can run inside an event, and dlopen allocates, so inside an
// allocator's own initialisation (static jemalloc maps its first pages while holding its init lock, before
// our constructor runs) it would deadlock. `memtrack attach` calls it on the tool's chosen thread.
void stacks_load_fallback();
// Under `record`: called by the dlopen hook before the program's own dlopen (not one from inside a hooked
// call): loads libunwind there, once per image, where the program itself is about to take the loader's
// locks. Until then (and in an image that never dlopens) a frame without a compact rule ends its stack, and
// the first such frame says so in record's summary (docs/RUNTIME.md, "Call stacks": why not at startup).
void stacks_load_fallback_at_dlopen();

// In a fork child, on its one thread (after_fork_in_child): the thread's capture state belongs to it.
void stacks_after_fork();

// The calling thread's stack at this allocation, as a leaf node id of the image's tree (0: stacks off, or
// this call is not recorded). New nodes (and the modules their addresses revealed) are noted before it
// returns, so before the ticket of the event that carries the id. Never allocates; async-signal-safe except
// for what memtrack::unwind says of a rule-cache miss (dl_iterate_phdr's lock).
uint32_t capture_stack();

// modules.cpp. Notes the image's modules that are new since the last scan (loaded) or gone (unloaded):
// at attach, and when a new node's address lies outside every known module. Returns without scanning when
// another thread is scanning.
void scan_modules();
// Scans when the loader's load/unload counters moved since the last scan (one dl_iterate_phdr step).
void rescan_if_changed();
// True if `address` lies in a module noted so far (a lock-free read of the module list).
bool in_known_module(uintptr_t address);
// This library's own address range: frames in it are memtrack's and not part of the program's stack.
extern uintptr_t g_self_start, g_self_end;

// Counters for the recorder's summary are not sent; these are for tests and the report (relaxed).
struct StackCounters {
  uint64_t nodes;       // nodes allocated in this image's tree
  uint64_t overflowed;  // captures that hit the tree's bound and were cut to their longest known prefix
  uint64_t tree_bytes;  // bytes mapped for the tree, its hash table and the unwinder's rule cache
};
StackCounters stack_counters();

}  // namespace memtrack::preload

#pragma GCC visibility pop
