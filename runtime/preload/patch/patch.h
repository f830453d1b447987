// Entry patching (patch.cpp): making a function defined where the PLT does not reach (in the executable, in a
// library loaded with dlopen and called through dlsym'd pointers, or an allocator API that is not part of
// the interposed C ABI) jump to a hook, with a trampoline that runs the displaced instructions and jumps
// back, so the hook can still call the original.
//
// How (x86-64): the instructions covering the first 5 bytes of the function are decoded with Zydis (which
// never allocates) and copied into an "island" page mapped within +-2 GiB of the function, RIP-relative
// operands re-encoded for their new address, `call/jmp rel32` turned into absolute ones and `jcc/jmp rel8`
// into rel32; then the entry
// gets a `jmp rel32` to a 14-byte absolute jump to the hook placed in the same island. Concurrent callers
// are safe: the trampoline and the hook's jump are written (and made executable) before the entry changes,
// and the entry changes with one aligned 8-byte store (the 5 bytes lie in one naturally aligned quadword;
// x86 instruction fetch sees such a store whole), followed by membarrier(SYNC_CORE) so every thread of the
// process serializes before the patcher moves on. A thread that fetched the old bytes just before runs the
// original function unhooked: that call is not recorded, nothing breaks.
//
// Fail closed: the function is left untouched, and the reason returned, when any of these holds: its size
// is unknown; an instruction cannot be decoded; fewer than 5 bytes precede a return; a displaced instruction
// is a branch other than call/jmp/jcc (loop, jrcxz), or RIP-relative out of reach of the island; any branch of the
// function jumps into the displaced bytes (the whole function is decoded to check); the 5 bytes straddle an 8-byte
// word; no island can be mapped within reach; or the page cannot be made writable. No allocation: the islands
// are raw mmaps, everything else is on the stack. Installation is serialized by a spinlock.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "../preload_internal.h"

#pragma GCC visibility push(hidden)

namespace memtrack::preload {

// Patches `entry` (a function of `size` bytes) to jump to `hook`. On success returns nullptr and sets
// *original to the trampoline: calling it runs the original function. On failure returns the reason (a
// static string) and changes nothing.
const char* patch_entry(uintptr_t entry, size_t size, uintptr_t hook, uintptr_t* original);

}  // namespace memtrack::preload

#pragma GCC visibility pop
