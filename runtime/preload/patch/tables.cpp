// The tables of entry points hooked by entry patching (sites.h): the standard names (the C allocation
// functions and the C++ operators), and the APIs of jemalloc, mimalloc and tcmalloc.
#include <array>

#include "../cxx_operators.h"
#include "sites.h"

namespace memtrack::preload {
namespace {

using K = runtime::RingEventKind;

// Rule::Alloc of `kind`, sized arg[size_a] (* arg[size_b]); a throwing entry names its nothrow twin.
constexpr EntrySpec alloc(const char* name, K kind, int8_t size_a, int8_t size_b = -1, const char* twin = nullptr,
                          int8_t twin_tag = -1) {
  return {name, Rule::Alloc, kind, -1, size_a, size_b, twin, twin_tag};
}
// Rule::Realloc of the block in arg 0 to arg[size_a] (* arg[size_b]).
constexpr EntrySpec resize(const char* name, int8_t size_a, int8_t size_b = -1, const char* twin = nullptr) {
  return {name, Rule::Realloc, K::Realloc, 0, size_a, size_b, twin, -1};
}
// Rule::Free of arg 0.
constexpr EntrySpec release(const char* name) { return {name, Rule::Free, K::Free, 0, -1, -1, nullptr, -1}; }
// int f(void** out, size_t align, size_t size), as posix_memalign.
constexpr EntrySpec aligned_out(const char* name) {
  return {name, Rule::PosixMemalign, K::AlignedAlloc, -1, 2, -1, nullptr, -1};
}

constexpr EntrySpec kStandardC[] = {
    alloc("malloc", K::Malloc, 0),
    alloc("calloc", K::Calloc, 0, 1),
    resize("realloc", 1),
    resize("reallocarray", 1, 2),
    release("free"),
    release("cfree"),
    alloc("memalign", K::AlignedAlloc, 1),
    alloc("aligned_alloc", K::AlignedAlloc, 1),
    aligned_out("posix_memalign"),
    alloc("valloc", K::AlignedAlloc, 0),
    alloc("pvalloc", K::AlignedAlloc, 0),
    {"mmap", Rule::Mmap, K::Mmap, -1, 1, -1, nullptr, -1},
    {"mmap64", Rule::Mmap, K::Mmap, -1, 1, -1, nullptr, -1},
    {"munmap", Rule::Munmap, K::Munmap, 0, 1, -1, nullptr, -1},
    {"sbrk", Rule::Sbrk, K::Brk, -1, 0, -1, nullptr, -1},
};

constexpr EntrySpec cxx_spec(const CxxOperator& op) {
  if (op.kind == K::Free) return release(op.name);
  return alloc(op.name, op.kind, 0, -1, op.twin >= 0 ? kCxxOperators[op.twin].name : nullptr, op.twin_tag);
}

constexpr size_t kStandardCCount = sizeof kStandardC / sizeof kStandardC[0];
constexpr auto kStandardSpecs = [] {
  std::array<EntrySpec, kStandardCCount + kCxxOps> out{};
  for (size_t i = 0; i < kStandardCCount; ++i) out[i] = kStandardC[i];
  for (size_t i = 0; i < kCxxOps; ++i) out[kStandardCCount + i] = cxx_spec(kCxxOperators[i]);
  return out;
}();

// jemalloc's non-standard API (mallocx and friends), and the whole API of a build with a prefix (je_malloc,
// ..., as `--with-jemalloc-prefix=je_` makes it). Its malloc, free and C++ operators under the standard names
// are interposed like glibc's.
constexpr EntrySpec kJemallocSpecs[] = {
    {"mallocx", Rule::Mallocx, K::Malloc, -1, 0, -1, nullptr, -1},
    resize("rallocx", 1),
    {"xallocx", Rule::InPlaceSize, K::Realloc, 0, 1, -1, nullptr, -1},
    release("sdallocx"),
    release("dallocx"),
    {"je_mallocx", Rule::Mallocx, K::Malloc, -1, 0, -1, nullptr, -1},
    resize("je_rallocx", 1),
    {"je_xallocx", Rule::InPlaceSize, K::Realloc, 0, 1, -1, nullptr, -1},
    release("je_sdallocx"),
    release("je_dallocx"),
    alloc("je_malloc", K::Malloc, 0),
    alloc("je_calloc", K::Calloc, 0, 1),
    resize("je_realloc", 1),
    release("je_free"),
    alloc("je_aligned_alloc", K::AlignedAlloc, 1),
    alloc("je_memalign", K::AlignedAlloc, 1),
    alloc("je_valloc", K::AlignedAlloc, 0),
    aligned_out("je_posix_memalign"),
};

// mimalloc's API (mi_malloc ..., the mi_new family). mimalloc's standard names (malloc, aligned_alloc,
// operator new, ...) are aliases of these or call them: the standard ones are interposed too, and either way
// the call is one event (the entry depth). mi_heap_* (explicit heaps) are not covered.
constexpr EntrySpec kMimallocSpecs[] = {
    alloc("mi_malloc", K::Malloc, 0),
    alloc("mi_malloc_small", K::Malloc, 0),
    alloc("mi_mallocn", K::Malloc, 0, 1),
    alloc("mi_zalloc", K::Calloc, 0),
    alloc("mi_zalloc_small", K::Calloc, 0),
    alloc("mi_calloc", K::Calloc, 0, 1),
    resize("mi_realloc", 1),
    resize("mi_reallocn", 1, 2),
    resize("mi_reallocf", 1),
    resize("mi_rezalloc", 1),
    resize("mi_recalloc", 1, 2),
    {"mi_expand", Rule::InPlacePtr, K::Realloc, 0, 1, -1, nullptr, -1},
    release("mi_free"),
    release("mi_cfree"),
    release("mi_free_size"),
    release("mi_free_aligned"),
    release("mi_free_size_aligned"),
    {"mi_strdup", Rule::Strdup, K::Malloc, -1, -1, -1, nullptr, -1},
    {"mi_strndup", Rule::Strdup, K::Malloc, -1, -1, -1, nullptr, -1},
    alloc("mi_malloc_aligned", K::AlignedAlloc, 0),
    alloc("mi_malloc_aligned_at", K::AlignedAlloc, 0),
    alloc("mi_zalloc_aligned", K::AlignedAlloc, 0),
    alloc("mi_zalloc_aligned_at", K::AlignedAlloc, 0),
    alloc("mi_calloc_aligned", K::AlignedAlloc, 0, 1),
    alloc("mi_calloc_aligned_at", K::AlignedAlloc, 0, 1),
    resize("mi_realloc_aligned", 1),
    resize("mi_realloc_aligned_at", 1),
    resize("mi_rezalloc_aligned", 1),
    resize("mi_recalloc_aligned", 1, 2),
    alloc("mi_memalign", K::AlignedAlloc, 1),
    alloc("mi_aligned_alloc", K::AlignedAlloc, 1),
    alloc("mi_valloc", K::AlignedAlloc, 0),
    alloc("mi_pvalloc", K::AlignedAlloc, 0),
    aligned_out("mi_posix_memalign"),
    alloc("mi_new", K::Malloc, 0, -1, "mi_new_nothrow"),
    alloc("mi_new_nothrow", K::Malloc, 0),
    alloc("mi_new_aligned", K::AlignedAlloc, 0, -1, "mi_new_aligned_nothrow"),
    alloc("mi_new_aligned_nothrow", K::AlignedAlloc, 0),
    alloc("mi_new_n", K::Malloc, 0, 1, "mi_mallocn"),
    resize("mi_new_realloc", 1, -1, "mi_realloc"),
    resize("mi_new_reallocn", 1, 2, "mi_reallocn"),
};

// tcmalloc's (gperftools) tc_* API. Its malloc and operator new are aliases of tc_malloc and tc_new: the
// standard names are interposed, and the call is one event either way (the entry depth).
constexpr EntrySpec kTcmallocSpecs[] = {
    alloc("tc_malloc", K::Malloc, 0),
    alloc("tc_malloc_skip_new_handler", K::Malloc, 0),
    alloc("tc_calloc", K::Calloc, 0, 1),
    resize("tc_realloc", 1),
    release("tc_free"),
    release("tc_free_sized"),
    release("tc_cfree"),
    alloc("tc_memalign", K::AlignedAlloc, 1),
    aligned_out("tc_posix_memalign"),
    alloc("tc_valloc", K::AlignedAlloc, 0),
    alloc("tc_pvalloc", K::AlignedAlloc, 0),
    alloc("tc_new", K::Malloc, 0, -1, "tc_new_nothrow", 1),
    alloc("tc_newarray", K::Malloc, 0, -1, "tc_newarray_nothrow", 1),
    alloc("tc_new_nothrow", K::Malloc, 0),
    alloc("tc_newarray_nothrow", K::Malloc, 0),
    alloc("tc_new_aligned", K::AlignedAlloc, 0, -1, "tc_new_aligned_nothrow", 2),
    alloc("tc_newarray_aligned", K::AlignedAlloc, 0, -1, "tc_newarray_aligned_nothrow", 2),
    alloc("tc_new_aligned_nothrow", K::AlignedAlloc, 0),
    alloc("tc_newarray_aligned_nothrow", K::AlignedAlloc, 0),
    release("tc_delete"),
    release("tc_deletearray"),
    release("tc_delete_sized"),
    release("tc_deletearray_sized"),
    release("tc_delete_nothrow"),
    release("tc_deletearray_nothrow"),
    release("tc_delete_aligned"),
    release("tc_deletearray_aligned"),
    release("tc_delete_sized_aligned"),
    release("tc_deletearray_sized_aligned"),
    release("tc_delete_aligned_nothrow"),
    release("tc_deletearray_aligned_nothrow"),
};

}  // namespace

const EntryTable kStandardEntries = {"standard", kStandardSpecs.data(), kStandardSpecs.size(), true};
const EntryTable kJemallocEntries = {"jemalloc", kJemallocSpecs, sizeof kJemallocSpecs / sizeof kJemallocSpecs[0],
                                     false};
const EntryTable kMimallocEntries = {"mimalloc", kMimallocSpecs, sizeof kMimallocSpecs / sizeof kMimallocSpecs[0],
                                     false};
const EntryTable kTcmallocEntries = {"tcmalloc", kTcmallocSpecs, sizeof kTcmallocSpecs / sizeof kTcmallocSpecs[0],
                                     false};

}  // namespace memtrack::preload
