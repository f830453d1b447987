// CPython support (python.cpp, docs/RUNTIME.md, "Python programs"): pymalloc's allocations recorded without
// PYTHONMALLOC=malloc, by wrapping the interpreter's object and memory allocator domains.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "preload_internal.h"

#pragma GCC visibility push(hidden)

namespace memtrack::preload {

// Looks for a CPython runtime (PyMem_SetAllocator, and Py_Version or Py_GetVersion, in the dynamic symbols of a loaded
// image: the executable for Debian's python3, which links libpython statically, or libpython3.x.so) and, for CPython
// >= 3.10, wraps its PYMEM_DOMAIN_MEM and PYMEM_DOMAIN_OBJ allocators so every PyMem_Malloc / PyObject_Malloc call
// (inlined copies included: they call through the domain's function pointers once these are not pymalloc's) is one
// event. Patches _PyMem_SetupAllocators so the domains are wrapped again after the interpreter sets them from
// PYTHONMALLOC. Called from the preload's constructor, before main, so before the interpreter allocates its first
// object. Once per image; never allocates.
void python_attach();

// ---- Python frames in stacks (CPython 3.10 to 3.13) ------------------------------------------------------------
// A Python frame in a stack is a pseudo-address in no real module: kPythonAddressTag | module generation << 40
// | code id << 20 | (instruction index + 1). The code ids are this image's (noted once each with
// NotePythonCode, ring.h), the generation its Python module's ("[python]", noted with NoteModule: a fork
// child notes a module of its own for the codes it meets). The recorder names them (qualname, file, line)
// in the Symbols of that module.
inline constexpr uint64_t kPythonAddressTag = uint64_t{0x7079} << 48;
inline bool is_python_address(uint64_t a) { return (a >> 48) == 0x7079; }

// Puts the calling thread's Python frames (its thread state's frame chain) into raw[0..n) (return
// addresses, innermost first) in place of the _PyEval_EvalFrameDefault frames that evaluate them; returns
// the new count (<= cap). Only the innermost `keep` frames are wanted (< cap): past them one more frame is
// returned, unconverted, to say there are more, and the chain is read no further than the evaluation loops
// of a stack cut by the unwinder (`cut`) need. `may_note`: new code objects may be noted (this thread holds no unfilled
// ticket); else they show as an unknown Python frame. Returns n unchanged when frames are off (not 3.10 to 3.13, no
// interpreter, no thread state on this thread).
size_t python_splice(uintptr_t* raw, size_t n, size_t cap, size_t keep, bool cut, bool may_note);

}  // namespace memtrack::preload

#pragma GCC visibility pop
