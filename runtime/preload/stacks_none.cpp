// stacks.h without call stacks, for libmemtrack-attach.so (`memtrack attach`, attach.cpp). A library loaded
// with dlopen into a running process gets its initial-exec thread-locals from the C library's small static
// TLS surplus (about 1.5 KiB), and the stack capture's per-thread buffers (stacks.cpp and the unwinder, about
// 17 KiB) do not fit: dlopen fails with "cannot allocate memory in static TLS block". So an attached process
// records its events without stacks (the recorder sets the ring's stack_depth to 0 and writes no stack
// sections), until those buffers live outside TLS.
#include "stacks.h"

namespace memtrack::preload {

constinit uint32_t g_stack_depth = 0;

void stacks_attach() {}
void stacks_load_fallback() {}
uint32_t capture_stack() { return 0; }
StackCounters stack_counters() { return StackCounters{0, 0, 0}; }

}  // namespace memtrack::preload
