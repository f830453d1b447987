// Peak heap measurement for tests that bound a component's memory. Link tests/common/heap_counter.cpp into
// the test executable (and only into tests that need it: it replaces malloc for the whole process).
//
// How: in plain builds the executable defines malloc, free, calloc, realloc and the aligned variants on top
// of glibc's __libc_* entry points; an executable's definitions preempt libc's for every shared library, so
// libzstd's and libstdc++'s allocations are counted too. Sanitizer builds cannot replace malloc (the
// sanitizer owns it); they count through the sanitizer's malloc/free hooks instead. Either way, every
// thread's allocations are counted while a measurement is active.
#pragma once

#include <cstdint>

namespace memtrack::testing {

// Starts counting from zero. Memory allocated before start() and freed during the measurement lowers the
// count, so the peak is relative to start() (never more than the true peak).
void heap_measure_start();
// Stops counting and returns the peak of live bytes since heap_measure_start().
std::int64_t heap_measure_stop();

}  // namespace memtrack::testing
