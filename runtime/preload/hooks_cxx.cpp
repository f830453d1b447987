// The C++ operators new and delete, all twenty of them (plain, array, nothrow, sized, aligned), interposed
// like malloc. libstdc++'s versions call malloc/aligned_alloc/free, but jemalloc, mimalloc and tcmalloc
// export their own, which never reach malloc (their sized deletes go to sdallocx and the like): interposing
// the operators themselves gives one event per call whichever library defines them. The real operator is
// the next definition after this library (dlsym(RTLD_NEXT)); a call made inside it (libstdc++'s new calling
// malloc) is nested and makes no second event (EntryScope, preload_internal.h).
//
// Exceptions: a throwing operator new must throw through the hooks, which are compiled without exceptions,
// so no EntryScope may be live when it throws. The outermost call runs the nothrow twin inside its scope
// (which calls the new_handler loop exactly as the throwing one does, and returns null where that throws),
// and only when that fails calls the throwing one, outside any scope, to throw bad_alloc. The nested path
// holds no scope at all.
#include <stdlib.h>

#include <atomic>
#include <new>

#include "cxx_operators.h"
#include "resolve.h"
#include "ring_client.h"
#include "stacks.h"

namespace memtrack::preload {
namespace {

using Op = CxxOp;

// Resolved on first use (next_fn); absent when no later library defines it (a C program that dlopens a C++
// library RTLD_LOCAL: that library's references bind to us, and RTLD_NEXT cannot see its libstdc++). The
// malloc family then stands in (fallback below). A dlopen forgets absent entries (reset_cxx_operators).
constinit std::atomic<void*> g_ops[kCxxOps] = {};

void* real_op(Op op) { return next_fn(g_ops[op], kCxxOperators[op].name); }

using NewFn = void* (*)(size_t);
using NewNothrowFn = void* (*)(size_t, const std::nothrow_t&);
using NewAlignedFn = void* (*)(size_t, std::align_val_t);
using NewAlignedNothrowFn = void* (*)(size_t, std::align_val_t, const std::nothrow_t&);
using DeleteFn = void (*)(void*);
using DeleteSizedFn = void (*)(void*, size_t);
using DeleteAlignedFn = void (*)(void*, std::align_val_t);
using DeleteSizedAlignedFn = void (*)(void*, size_t, std::align_val_t);
using DeleteNothrowFn = void (*)(void*, const std::nothrow_t&);
using DeleteAlignedNothrowFn = void (*)(void*, std::align_val_t, const std::nothrow_t&);

template <typename Fn>
Fn op(Op o) {
  return reinterpret_cast<Fn>(real_op(o));
}

constinit const std::nothrow_t kNothrow{};

[[noreturn]] void out_of_memory() {
  say("operator new failed and no C++ runtime follows the preload to throw bad_alloc");
  abort();
}

// The nothrow allocation, inside the caller's scope.
void* alloc_nothrow(Op nothrow_op, size_t n) {
  if (auto f = op<NewNothrowFn>(nothrow_op)) return f(n, kNothrow);
  return g_real.malloc(n);
}

void* alloc_aligned_nothrow(Op nothrow_op, size_t n, std::align_val_t al) {
  if (auto f = op<NewAlignedNothrowFn>(nothrow_op)) return f(n, al, kNothrow);
  const size_t a = static_cast<size_t>(al);
  return g_real.aligned_alloc(a, (n + a - 1) & ~(a - 1));
}

void* new_throwing(Op throwing, Op nothrow_op, size_t n) {
  if (in_entry()) {
    if (auto f = op<NewFn>(throwing)) return f(n);
    if (void* p = g_real.malloc(n)) return p;
    out_of_memory();
  }
  {
    EntryScope scope;
    if (void* p = alloc_nothrow(nothrow_op, n)) {
      record(RingEventKind::Malloc, p, n, capture_stack());
      return p;
    }
  }
  if (auto f = op<NewFn>(throwing)) return f(n);  // throws bad_alloc (or the new_handler freed memory after all)
  out_of_memory();
}

void* new_nothrow(Op nothrow_op, size_t n) {
  if (in_entry()) return alloc_nothrow(nothrow_op, n);
  EntryScope scope;
  void* p = alloc_nothrow(nothrow_op, n);
  if (p != nullptr) record(RingEventKind::Malloc, p, n, capture_stack());
  return p;
}

void* new_aligned_throwing(Op throwing, Op nothrow_op, size_t n, std::align_val_t al) {
  if (in_entry()) {
    if (auto f = op<NewAlignedFn>(throwing)) return f(n, al);
    if (void* p = alloc_aligned_nothrow(nothrow_op, n, al)) return p;
    out_of_memory();
  }
  {
    EntryScope scope;
    if (void* p = alloc_aligned_nothrow(nothrow_op, n, al)) {
      record(RingEventKind::AlignedAlloc, p, n, capture_stack());
      return p;
    }
  }
  if (auto f = op<NewAlignedFn>(throwing)) return f(n, al);
  out_of_memory();
}

void* new_aligned_nothrow(Op nothrow_op, size_t n, std::align_val_t al) {
  if (in_entry()) return alloc_aligned_nothrow(nothrow_op, n, al);
  EntryScope scope;
  void* p = alloc_aligned_nothrow(nothrow_op, n, al);
  if (p != nullptr) record(RingEventKind::AlignedAlloc, p, n, capture_stack());
  return p;
}

// Every delete: a Free before the real call (delete of null is not an event, like free(NULL)).
template <typename Call>
void delete_any(void* p, Call call) {
  if (p != nullptr && in_arena(p)) return;  // a bootstrap block: never the real allocator's
  if (p == nullptr || in_entry()) return call();
  EntryScope scope;
  record(RingEventKind::Free, p, 0);
  call();
}

}  // namespace

void reset_cxx_operators() {
  for (auto& f : g_ops) forget_absent(f);
}

}  // namespace memtrack::preload

using namespace memtrack::preload;  // NOLINT: the operators below are global by definition

#define MEMTRACK_CXX_EXPORT __attribute__((visibility("default")))

MEMTRACK_CXX_EXPORT void* operator new(size_t n) { return new_throwing(kNew, kNewNothrow, n); }
MEMTRACK_CXX_EXPORT void* operator new[](size_t n) { return new_throwing(kNewArray, kNewArrayNothrow, n); }
MEMTRACK_CXX_EXPORT void* operator new(size_t n, const std::nothrow_t&) noexcept { return new_nothrow(kNewNothrow, n); }
MEMTRACK_CXX_EXPORT void* operator new[](size_t n, const std::nothrow_t&) noexcept {
  return new_nothrow(kNewArrayNothrow, n);
}
MEMTRACK_CXX_EXPORT void* operator new(size_t n, std::align_val_t al) {
  return new_aligned_throwing(kNewAligned, kNewAlignedNothrow, n, al);
}
MEMTRACK_CXX_EXPORT void* operator new[](size_t n, std::align_val_t al) {
  return new_aligned_throwing(kNewArrayAligned, kNewArrayAlignedNothrow, n, al);
}
MEMTRACK_CXX_EXPORT void* operator new(size_t n, std::align_val_t al, const std::nothrow_t&) noexcept {
  return new_aligned_nothrow(kNewAlignedNothrow, n, al);
}
MEMTRACK_CXX_EXPORT void* operator new[](size_t n, std::align_val_t al, const std::nothrow_t&) noexcept {
  return new_aligned_nothrow(kNewArrayAlignedNothrow, n, al);
}

// Without the real operator (see real_op), the block came from g_real.malloc/aligned_alloc: free releases it.
#define MEMTRACK_DELETE(OP, TYPE, ...)                     \
  delete_any(p, [&] {                                      \
    if (auto f = op<TYPE>(OP)) return f(p, ##__VA_ARGS__); \
    g_real.free(p);                                        \
  })

MEMTRACK_CXX_EXPORT void operator delete(void* p) noexcept { MEMTRACK_DELETE(kDelete, DeleteFn); }
MEMTRACK_CXX_EXPORT void operator delete[](void* p) noexcept { MEMTRACK_DELETE(kDeleteArray, DeleteFn); }
MEMTRACK_CXX_EXPORT void operator delete(void* p, size_t n) noexcept {
  MEMTRACK_DELETE(kDeleteSized, DeleteSizedFn, n);
}
MEMTRACK_CXX_EXPORT void operator delete[](void* p, size_t n) noexcept {
  MEMTRACK_DELETE(kDeleteArraySized, DeleteSizedFn, n);
}
MEMTRACK_CXX_EXPORT void operator delete(void* p, std::align_val_t al) noexcept {
  MEMTRACK_DELETE(kDeleteAligned, DeleteAlignedFn, al);
}
MEMTRACK_CXX_EXPORT void operator delete[](void* p, std::align_val_t al) noexcept {
  MEMTRACK_DELETE(kDeleteArrayAligned, DeleteAlignedFn, al);
}
MEMTRACK_CXX_EXPORT void operator delete(void* p, size_t n, std::align_val_t al) noexcept {
  MEMTRACK_DELETE(kDeleteSizedAligned, DeleteSizedAlignedFn, n, al);
}
MEMTRACK_CXX_EXPORT void operator delete[](void* p, size_t n, std::align_val_t al) noexcept {
  MEMTRACK_DELETE(kDeleteArraySizedAligned, DeleteSizedAlignedFn, n, al);
}
MEMTRACK_CXX_EXPORT void operator delete(void* p, const std::nothrow_t&) noexcept {
  MEMTRACK_DELETE(kDeleteNothrow, DeleteNothrowFn, kNothrow);
}
MEMTRACK_CXX_EXPORT void operator delete[](void* p, const std::nothrow_t&) noexcept {
  MEMTRACK_DELETE(kDeleteArrayNothrow, DeleteNothrowFn, kNothrow);
}
MEMTRACK_CXX_EXPORT void operator delete(void* p, std::align_val_t al, const std::nothrow_t&) noexcept {
  MEMTRACK_DELETE(kDeleteAlignedNothrow, DeleteAlignedNothrowFn, al, kNothrow);
}
MEMTRACK_CXX_EXPORT void operator delete[](void* p, std::align_val_t al, const std::nothrow_t&) noexcept {
  MEMTRACK_DELETE(kDeleteArrayAlignedNothrow, DeleteAlignedNothrowFn, al, kNothrow);
}
