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
// When those 5 bytes straddle a quadword, or the function is shorter than 5 bytes (an empty `mi_free` is
// `endbr64; ret`, or a single `ret`), the entry gets a 2-byte `jmp rel8` instead (stored the same way: the 2
// bytes lie in one quadword) to a `jmp rel32` written first into the alignment padding after the function.
// The padding is proven: no symbol of the image's symbol table lies before the next 16-byte boundary, every
// byte up to it decodes as int3 or nop, and it has room for the 5 bytes within rel8 reach. The bytes written
// to the padding are never run by anyone before the entry's 2 bytes change (membarrier between the two), and
// only bytes of the entry's first instruction(s) change, so a thread that fetched the old entry runs the
// original function whole; a `ret` among the displaced instructions is copied and ends the trampoline.
//
// Fail closed: the function is left untouched, and the reason returned, when any of these holds: its size
// is unknown; an instruction cannot be decoded; fewer than 5 bytes precede a return; a displaced instruction
// is a branch other than call/jmp/jcc (loop, jrcxz), or RIP-relative out of reach of the island; any branch of the
// function jumps into the overwritten bytes (the whole function is decoded to check); the 5 bytes straddle an 8-byte
// word (or the function is shorter) and no padding is proven after it, or even the 2 bytes straddle; no island can be
// mapped within reach; or the page cannot be made writable. No allocation: the islands are raw mmaps, everything else
// is on the stack. Installation is serialized by a spinlock.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "../preload_internal.h"

#pragma GCC visibility push(hidden)

namespace memtrack::preload {

// Whether patching `entry` needs the padding after it (the short-jump patch above), so the caller must give
// patch_entry a `limit`.
bool needs_padding(uintptr_t entry, size_t size);

// Patches `entry` (a function of `size` bytes) to jump to `hook`. `limit`: the lowest address above `entry`
// where the image's symbol table has a symbol (0: not looked up); only the short-jump patch needs it. On
// success returns nullptr and sets *original to the trampoline: calling it runs the original function. On
// failure returns the reason (a static string) and changes nothing.
const char* patch_entry(uintptr_t entry, size_t size, uintptr_t limit, uintptr_t hook, uintptr_t* original);

// `memtrack attach` (attach.cpp): while on, patch_entry prepares everything (island, trampoline, *original)
// but leaves the entry's bytes as they are, noting the write; commit_deferred_entries makes every noted write
// and returns how many it made. Between the two the attach tool stops the process's other threads and steps
// any whose program counter lies inside one of the entries' first bytes (deferred_entries: the entry and how
// many bytes change) out of them: a thread paused between two instructions of those bytes would resume in
// the middle of the new jump. Under `memtrack record` patching runs before such a thread can be there (at
// startup, or on a library just loaded); in a running process the C library's malloc is being run.
void defer_entry_writes(bool on);
int deferred_entries(uintptr_t* entries, uint8_t* lengths, int max);
int commit_deferred_entries();

// How many bytes at `entry` patch_entry overwrites for a function of `size` bytes (5, or 2 for the short jump).
size_t patched_bytes(uintptr_t entry, size_t size);

// `memtrack attach`'s detach: writes `n` saved bytes (the entry's original first bytes, taken before
// patch_entry) back at `entry` with one aligned 8-byte store, as patch_entry wrote the jump. The island and
// the trampoline stay mapped: a thread that took the jump just before runs the hook and the trampoline, whose
// displaced instructions jump back into the unchanged rest of the function. Returns false when the page
// cannot be made writable (the entry then stays patched).
bool restore_entry(uintptr_t entry, const uint8_t* saved, size_t n);

}  // namespace memtrack::preload

#pragma GCC visibility pop
