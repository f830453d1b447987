/* libmemtrack-control: memtrack/control.h. Each call forwards to libmemtrack-preload.so's
 * memtrack_preload_control_v1 when the loader bound it (the program runs under `memtrack record`), else
 * returns. The weak reference is resolved once, by the loader, through the GOT: the no-op path is one load
 * and one branch. */
#include "memtrack/control.h"
#include "memtrack/runtime/control_abi.h"

extern int memtrack_preload_control_v1(int op, const char* name) __attribute__((weak));

static inline int forward(int op, const char* name) {
  int (*const fn)(int, const char*) = memtrack_preload_control_v1;
  return fn != 0 ? fn(op, name) : 0;
}

void memtrack_pause(void) { (void)forward(MEMTRACK_CONTROL_PAUSE, 0); }
void memtrack_resume(void) { (void)forward(MEMTRACK_CONTROL_RESUME, 0); }
void memtrack_region_begin(const char* name) { (void)forward(MEMTRACK_CONTROL_REGION_BEGIN, name); }
void memtrack_region_end(void) { (void)forward(MEMTRACK_CONTROL_REGION_END, 0); }
int memtrack_is_recording(void) { return forward(MEMTRACK_CONTROL_IS_RECORDING, 0) == 1; }
