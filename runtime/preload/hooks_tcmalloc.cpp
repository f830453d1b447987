// tcmalloc's (gperftools) tc_* API, hooked by entry patching wherever it is defined (patch/sites.h). Its
// malloc and operator new are aliases of tc_malloc and tc_new: the standard names are interposed, and the
// call is one event either way (the entry depth).
#include "patch/sites.h"

namespace memtrack::preload {
namespace {

using K = runtime::RingEventKind;
constexpr EntrySpec kSpecs[] = {
    {"tc_malloc", Rule::Alloc, K::Malloc, -1, 0, -1, nullptr, -1},
    {"tc_malloc_skip_new_handler", Rule::Alloc, K::Malloc, -1, 0, -1, nullptr, -1},
    {"tc_calloc", Rule::Alloc, K::Calloc, -1, 0, 1, nullptr, -1},
    {"tc_realloc", Rule::Realloc, K::Realloc, 0, 1, -1, nullptr, -1},
    {"tc_free", Rule::Free, K::Free, 0, -1, -1, nullptr, -1},
    {"tc_free_sized", Rule::Free, K::Free, 0, -1, -1, nullptr, -1},
    {"tc_cfree", Rule::Free, K::Free, 0, -1, -1, nullptr, -1},
    {"tc_memalign", Rule::Alloc, K::AlignedAlloc, -1, 1, -1, nullptr, -1},
    {"tc_posix_memalign", Rule::PosixMemalign, K::AlignedAlloc, -1, 2, -1, nullptr, -1},
    {"tc_valloc", Rule::Alloc, K::AlignedAlloc, -1, 0, -1, nullptr, -1},
    {"tc_pvalloc", Rule::Alloc, K::AlignedAlloc, -1, 0, -1, nullptr, -1},
    {"tc_new", Rule::Alloc, K::Malloc, -1, 0, -1, "tc_new_nothrow", 1},
    {"tc_newarray", Rule::Alloc, K::Malloc, -1, 0, -1, "tc_newarray_nothrow", 1},
    {"tc_new_nothrow", Rule::Alloc, K::Malloc, -1, 0, -1, nullptr, -1},
    {"tc_newarray_nothrow", Rule::Alloc, K::Malloc, -1, 0, -1, nullptr, -1},
    {"tc_new_aligned", Rule::Alloc, K::AlignedAlloc, -1, 0, -1, "tc_new_aligned_nothrow", 2},
    {"tc_newarray_aligned", Rule::Alloc, K::AlignedAlloc, -1, 0, -1, "tc_newarray_aligned_nothrow", 2},
    {"tc_new_aligned_nothrow", Rule::Alloc, K::AlignedAlloc, -1, 0, -1, nullptr, -1},
    {"tc_newarray_aligned_nothrow", Rule::Alloc, K::AlignedAlloc, -1, 0, -1, nullptr, -1},
    {"tc_delete", Rule::Free, K::Free, 0, -1, -1, nullptr, -1},
    {"tc_deletearray", Rule::Free, K::Free, 0, -1, -1, nullptr, -1},
    {"tc_delete_sized", Rule::Free, K::Free, 0, -1, -1, nullptr, -1},
    {"tc_deletearray_sized", Rule::Free, K::Free, 0, -1, -1, nullptr, -1},
    {"tc_delete_nothrow", Rule::Free, K::Free, 0, -1, -1, nullptr, -1},
    {"tc_deletearray_nothrow", Rule::Free, K::Free, 0, -1, -1, nullptr, -1},
    {"tc_delete_aligned", Rule::Free, K::Free, 0, -1, -1, nullptr, -1},
    {"tc_deletearray_aligned", Rule::Free, K::Free, 0, -1, -1, nullptr, -1},
    {"tc_delete_sized_aligned", Rule::Free, K::Free, 0, -1, -1, nullptr, -1},
    {"tc_deletearray_sized_aligned", Rule::Free, K::Free, 0, -1, -1, nullptr, -1},
    {"tc_delete_aligned_nothrow", Rule::Free, K::Free, 0, -1, -1, nullptr, -1},
    {"tc_deletearray_aligned_nothrow", Rule::Free, K::Free, 0, -1, -1, nullptr, -1},
};

}  // namespace

const EntryTable kTcmallocEntries = {"tcmalloc", kSpecs, sizeof kSpecs / sizeof kSpecs[0], false};

}  // namespace memtrack::preload
