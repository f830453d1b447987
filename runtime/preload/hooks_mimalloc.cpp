// mimalloc's API (mi_malloc ..., the mi_new family), hooked by entry patching wherever it is defined
// (patch/sites.h). mimalloc's standard names (malloc, aligned_alloc, operator new, ...) are aliases of these
// or call them: the standard ones are interposed too, and either way the call is one event (the entry depth).
// mi_heap_* (explicit heaps) are not covered.
#include "patch/sites.h"

namespace memtrack::preload {
namespace {

using K = runtime::RingEventKind;
constexpr EntrySpec kSpecs[] = {
    {"mi_malloc", Rule::Alloc, K::Malloc, -1, 0, -1, nullptr, -1},
    {"mi_malloc_small", Rule::Alloc, K::Malloc, -1, 0, -1, nullptr, -1},
    {"mi_mallocn", Rule::Alloc, K::Malloc, -1, 0, 1, nullptr, -1},
    {"mi_zalloc", Rule::Alloc, K::Calloc, -1, 0, -1, nullptr, -1},
    {"mi_zalloc_small", Rule::Alloc, K::Calloc, -1, 0, -1, nullptr, -1},
    {"mi_calloc", Rule::Alloc, K::Calloc, -1, 0, 1, nullptr, -1},
    {"mi_realloc", Rule::Realloc, K::Realloc, 0, 1, -1, nullptr, -1},
    {"mi_reallocn", Rule::Realloc, K::Realloc, 0, 1, 2, nullptr, -1},
    {"mi_reallocf", Rule::Realloc, K::Realloc, 0, 1, -1, nullptr, -1},
    {"mi_rezalloc", Rule::Realloc, K::Realloc, 0, 1, -1, nullptr, -1},
    {"mi_recalloc", Rule::Realloc, K::Realloc, 0, 1, 2, nullptr, -1},
    {"mi_expand", Rule::InPlacePtr, K::Realloc, 0, 1, -1, nullptr, -1},
    {"mi_free", Rule::Free, K::Free, 0, -1, -1, nullptr, -1},
    {"mi_cfree", Rule::Free, K::Free, 0, -1, -1, nullptr, -1},
    {"mi_free_size", Rule::Free, K::Free, 0, -1, -1, nullptr, -1},
    {"mi_free_aligned", Rule::Free, K::Free, 0, -1, -1, nullptr, -1},
    {"mi_free_size_aligned", Rule::Free, K::Free, 0, -1, -1, nullptr, -1},
    {"mi_strdup", Rule::Strdup, K::Malloc, -1, -1, -1, nullptr, -1},
    {"mi_strndup", Rule::Strdup, K::Malloc, -1, -1, -1, nullptr, -1},
    {"mi_malloc_aligned", Rule::Alloc, K::AlignedAlloc, -1, 0, -1, nullptr, -1},
    {"mi_malloc_aligned_at", Rule::Alloc, K::AlignedAlloc, -1, 0, -1, nullptr, -1},
    {"mi_zalloc_aligned", Rule::Alloc, K::AlignedAlloc, -1, 0, -1, nullptr, -1},
    {"mi_zalloc_aligned_at", Rule::Alloc, K::AlignedAlloc, -1, 0, -1, nullptr, -1},
    {"mi_calloc_aligned", Rule::Alloc, K::AlignedAlloc, -1, 0, 1, nullptr, -1},
    {"mi_calloc_aligned_at", Rule::Alloc, K::AlignedAlloc, -1, 0, 1, nullptr, -1},
    {"mi_realloc_aligned", Rule::Realloc, K::Realloc, 0, 1, -1, nullptr, -1},
    {"mi_realloc_aligned_at", Rule::Realloc, K::Realloc, 0, 1, -1, nullptr, -1},
    {"mi_rezalloc_aligned", Rule::Realloc, K::Realloc, 0, 1, -1, nullptr, -1},
    {"mi_recalloc_aligned", Rule::Realloc, K::Realloc, 0, 1, 2, nullptr, -1},
    {"mi_memalign", Rule::Alloc, K::AlignedAlloc, -1, 1, -1, nullptr, -1},
    {"mi_aligned_alloc", Rule::Alloc, K::AlignedAlloc, -1, 1, -1, nullptr, -1},
    {"mi_valloc", Rule::Alloc, K::AlignedAlloc, -1, 0, -1, nullptr, -1},
    {"mi_pvalloc", Rule::Alloc, K::AlignedAlloc, -1, 0, -1, nullptr, -1},
    {"mi_posix_memalign", Rule::PosixMemalign, K::AlignedAlloc, -1, 2, -1, nullptr, -1},
    {"mi_new", Rule::Alloc, K::Malloc, -1, 0, -1, "mi_new_nothrow", -1},
    {"mi_new_nothrow", Rule::Alloc, K::Malloc, -1, 0, -1, nullptr, -1},
    {"mi_new_aligned", Rule::Alloc, K::AlignedAlloc, -1, 0, -1, "mi_new_aligned_nothrow", -1},
    {"mi_new_aligned_nothrow", Rule::Alloc, K::AlignedAlloc, -1, 0, -1, nullptr, -1},
    {"mi_new_n", Rule::Alloc, K::Malloc, -1, 0, 1, "mi_mallocn", -1},
    {"mi_new_realloc", Rule::Realloc, K::Realloc, 0, 1, -1, "mi_realloc", -1},
    {"mi_new_reallocn", Rule::Realloc, K::Realloc, 0, 1, 2, "mi_reallocn", -1},
};

}  // namespace

const EntryTable kMimallocEntries = {"mimalloc", kSpecs, sizeof kSpecs / sizeof kSpecs[0], false};

}  // namespace memtrack::preload
