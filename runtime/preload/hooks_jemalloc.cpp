// jemalloc's non-standard API (mallocx and friends), and the whole API of a build with a prefix (je_malloc,
// ..., as `--with-jemalloc-prefix=je_` makes it): hooked by entry patching wherever they are defined (patch/sites.h).
// Its malloc, free and C++ operators under the standard names are interposed like glibc's.
#include "patch/sites.h"

namespace memtrack::preload {
namespace {

using K = runtime::RingEventKind;
constexpr EntrySpec kSpecs[] = {
    {"mallocx", Rule::Mallocx, K::Malloc, -1, 0, -1, nullptr, -1},
    {"rallocx", Rule::Realloc, K::Realloc, 0, 1, -1, nullptr, -1},
    {"xallocx", Rule::InPlaceSize, K::Realloc, 0, 1, -1, nullptr, -1},
    {"sdallocx", Rule::Free, K::Free, 0, -1, -1, nullptr, -1},
    {"dallocx", Rule::Free, K::Free, 0, -1, -1, nullptr, -1},
    {"je_mallocx", Rule::Mallocx, K::Malloc, -1, 0, -1, nullptr, -1},
    {"je_rallocx", Rule::Realloc, K::Realloc, 0, 1, -1, nullptr, -1},
    {"je_xallocx", Rule::InPlaceSize, K::Realloc, 0, 1, -1, nullptr, -1},
    {"je_sdallocx", Rule::Free, K::Free, 0, -1, -1, nullptr, -1},
    {"je_dallocx", Rule::Free, K::Free, 0, -1, -1, nullptr, -1},
    {"je_malloc", Rule::Alloc, K::Malloc, -1, 0, -1, nullptr, -1},
    {"je_calloc", Rule::Alloc, K::Calloc, -1, 0, 1, nullptr, -1},
    {"je_realloc", Rule::Realloc, K::Realloc, 0, 1, -1, nullptr, -1},
    {"je_free", Rule::Free, K::Free, 0, -1, -1, nullptr, -1},
    {"je_aligned_alloc", Rule::Alloc, K::AlignedAlloc, -1, 1, -1, nullptr, -1},
    {"je_memalign", Rule::Alloc, K::AlignedAlloc, -1, 1, -1, nullptr, -1},
    {"je_valloc", Rule::Alloc, K::AlignedAlloc, -1, 0, -1, nullptr, -1},
    {"je_posix_memalign", Rule::PosixMemalign, K::AlignedAlloc, -1, 2, -1, nullptr, -1},
};

}  // namespace

const EntryTable kJemallocEntries = {"jemalloc", kSpecs, sizeof kSpecs / sizeof kSpecs[0], false};

}  // namespace memtrack::preload
