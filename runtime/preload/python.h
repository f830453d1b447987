// CPython support (python.cpp, docs/RUNTIME.md, "Python programs"): pymalloc's allocations recorded without
// PYTHONMALLOC=malloc, by wrapping the interpreter's object and memory allocator domains.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "preload_internal.h"

#pragma GCC visibility push(hidden)

namespace memtrack::preload {

// Looks for a CPython runtime (PyMem_SetAllocator and Py_Version in the dynamic symbols of a loaded image:
// the executable for Debian's python3, which links libpython statically, or libpython3.x.so) and, for
// CPython >= 3.11, wraps its PYMEM_DOMAIN_MEM and PYMEM_DOMAIN_OBJ allocators so every PyMem_Malloc /
// PyObject_Malloc call (inlined copies included: they call through the domain's function pointers once
// these are not pymalloc's) is one event. Patches _PyMem_SetupAllocators so the domains are wrapped again
// after the interpreter sets them from PYTHONMALLOC. Called from the preload's constructor, before main, so
// before the interpreter allocates its first object. Once per image; never allocates.
void python_attach();

}  // namespace memtrack::preload

#pragma GCC visibility pop
