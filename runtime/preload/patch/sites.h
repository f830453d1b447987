// Allocator entry points hooked by entry patching (patch.h), found by symbol name in the images the PLT does
// not reach, and the one event each call makes (docs/RUNTIME.md, "Allocators beyond glibc"). sites.cpp scans
// images and installs the hooks; the tables are in tables.cpp.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <atomic>

#include "../preload_internal.h"
#include "memtrack/runtime/ring.h"

#pragma GCC visibility push(hidden)

namespace memtrack::preload {

// How a call's arguments and result become its event. Arguments are numbered from 0; sizes are
// arg[size_a] * arg[size_b] (size_b = -1: arg[size_a] alone).
enum class Rule : uint8_t {
  Alloc,          // `kind` at the returned address, when it is not null
  PosixMemalign,  // int f(void** out, ...): AlignedAlloc at *out when it returns 0
  Realloc,        // block arg[ptr] moved to the returned address: Realloc (old_addr when arg[ptr] is not null);
                  // a null result for size 0 is a Free of arg[ptr], for another size nothing
  InPlaceSize,    // jemalloc xallocx: resized in place iff the result (the new usable size) >= the size asked
  InPlacePtr,     // mimalloc mi_expand: resized in place iff the result is not null
  Free,           // Free of arg[ptr], recorded before the call; null is not an event
  Mallocx,        // jemalloc mallocx(size, flags): AlignedAlloc when flags ask an alignment, Calloc for
                  // MALLOCX_ZERO, else Malloc
  Strdup,         // Malloc of strlen(result) + 1
  Mmap,           // mmap defined by the allocator (gperftools exports its own): Mmap{size: arg 1} unless MAP_FAILED
  Munmap,         // Munmap{arg 0, size: arg 1}, before the call, unless it must fail (len 0, unaligned)
  Sbrk,           // Brk{new break, |increment|} unless it fails or does not move the break
};

struct EntrySpec {
  const char* name;
  Rule rule;
  runtime::RingEventKind kind;  // for Rule::Alloc
  int8_t ptr;
  int8_t size_a;
  int8_t size_b;
  // A throwing entry (operator new, mi_new, tc_new): the nothrow twin in the same image that runs inside
  // the entry's scope (see hooks_cxx.cpp for why), and where the twin takes its `const nothrow_t&` (-1: none).
  const char* nothrow_twin;
  int8_t twin_tag;
};

struct EntryTable {
  const char* allocator;  // for messages
  const EntrySpec* specs;
  size_t count;
  // Standard names are interposed through the PLT already; they are patched only where the PLT does not
  // reach: in the executable and in libraries loaded with dlopen.
  bool standard;
};

extern const EntryTable kStandardEntries;
extern const EntryTable kJemallocEntries;
extern const EntryTable kMimallocEntries;
extern const EntryTable kTcmallocEntries;

// Scans every loaded image not scanned yet and patches the entry points it defines. At startup (from the
// preload's constructor), libraries get only the allocator APIs and the executable everything; after a
// dlopen, each new library gets everything. Each refusal is one diagnostic() line per symbol.
void patch_new_images(bool after_dlopen);

// `memtrack attach` (attach.cpp): patches every entry of the tables in every loaded image not scanned yet,
// the C library and libstdc++ included (the PLT is bound already: interposing reaches nothing). Returns how
// many entries it hooked.
int patch_images_for_attach();
// `memtrack attach`'s detach: every patched entry gets its original bytes back (patch.h, restore_entry).
// Returns how many it restored (0, with a diagnostic, when the scan lock stays taken: the calling thread may
// be the one holding it).
int restore_patched_entries();

// `memtrack attach`: functions of the C library hooked by entry patching besides the allocators (the exec
// family, process_hooks.cpp), since the library loaded with dlopen interposes nothing. `hook` runs in place
// of the C library's `name` (and of every internal call to it: glibc's execv, execvp, posix_spawn's child,
// system and popen all end in its __execve), and `*original` receives the trampoline that runs the
// original, before the entry's jump is written. Set before patch_images_for_attach, which patches them in
// the C library's image (and restore_patched_entries restores them).
struct ExtraEntry {
  const char* name;
  uintptr_t hook;
  std::atomic<void*>* original;
};
void set_extra_entries(const ExtraEntry* entries, int count);

// hooks_cxx.cpp: forget C++ operators found absent, so a library loaded since can provide them.
void reset_cxx_operators();

}  // namespace memtrack::preload

#pragma GCC visibility pop
