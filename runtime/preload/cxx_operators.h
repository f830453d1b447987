// The twenty C++ operators new and delete (plain, array, nothrow, sized, aligned) by their mangled names:
// interposed by hooks_cxx.cpp, and patched where the PLT does not reach them by the standard entry table
// (patch/tables.cpp).
#pragma once

#include <stdint.h>

#include "memtrack/runtime/ring.h"

#pragma GCC visibility push(hidden)

namespace memtrack::preload {

enum CxxOp : int {
  kNew,
  kNewArray,
  kNewNothrow,
  kNewArrayNothrow,
  kNewAligned,
  kNewArrayAligned,
  kNewAlignedNothrow,
  kNewArrayAlignedNothrow,
  kDelete,
  kDeleteArray,
  kDeleteSized,
  kDeleteArraySized,
  kDeleteAligned,
  kDeleteArrayAligned,
  kDeleteSizedAligned,
  kDeleteArraySizedAligned,
  kDeleteNothrow,
  kDeleteArrayNothrow,
  kDeleteAlignedNothrow,
  kDeleteArrayAlignedNothrow,
  kCxxOps
};

struct CxxOperator {
  const char* name;
  runtime::RingEventKind kind;  // Malloc or AlignedAlloc for a new, Free for a delete
  // A throwing new: its nothrow twin, and the argument where the twin takes its `const nothrow_t&`
  // (hooks_cxx.cpp says why the twin is needed). -1: none.
  int twin;
  int8_t twin_tag;
};

inline constexpr CxxOperator kCxxOperators[kCxxOps] = {
    {"_Znwm", runtime::RingEventKind::Malloc, kNewNothrow, 1},
    {"_Znam", runtime::RingEventKind::Malloc, kNewArrayNothrow, 1},
    {"_ZnwmRKSt9nothrow_t", runtime::RingEventKind::Malloc, -1, -1},
    {"_ZnamRKSt9nothrow_t", runtime::RingEventKind::Malloc, -1, -1},
    {"_ZnwmSt11align_val_t", runtime::RingEventKind::AlignedAlloc, kNewAlignedNothrow, 2},
    {"_ZnamSt11align_val_t", runtime::RingEventKind::AlignedAlloc, kNewArrayAlignedNothrow, 2},
    {"_ZnwmSt11align_val_tRKSt9nothrow_t", runtime::RingEventKind::AlignedAlloc, -1, -1},
    {"_ZnamSt11align_val_tRKSt9nothrow_t", runtime::RingEventKind::AlignedAlloc, -1, -1},
    {"_ZdlPv", runtime::RingEventKind::Free, -1, -1},
    {"_ZdaPv", runtime::RingEventKind::Free, -1, -1},
    {"_ZdlPvm", runtime::RingEventKind::Free, -1, -1},
    {"_ZdaPvm", runtime::RingEventKind::Free, -1, -1},
    {"_ZdlPvSt11align_val_t", runtime::RingEventKind::Free, -1, -1},
    {"_ZdaPvSt11align_val_t", runtime::RingEventKind::Free, -1, -1},
    {"_ZdlPvmSt11align_val_t", runtime::RingEventKind::Free, -1, -1},
    {"_ZdaPvmSt11align_val_t", runtime::RingEventKind::Free, -1, -1},
    {"_ZdlPvRKSt9nothrow_t", runtime::RingEventKind::Free, -1, -1},
    {"_ZdaPvRKSt9nothrow_t", runtime::RingEventKind::Free, -1, -1},
    {"_ZdlPvSt11align_val_tRKSt9nothrow_t", runtime::RingEventKind::Free, -1, -1},
    {"_ZdaPvSt11align_val_tRKSt9nothrow_t", runtime::RingEventKind::Free, -1, -1},
};

}  // namespace memtrack::preload

#pragma GCC visibility pop
