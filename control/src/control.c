/* libmemtrack-control: memtrack/control.h. Each call forwards to libmemtrack-preload.so's
 * memtrack_preload_control_v1 when the loader bound it (the program runs under `memtrack record`), else
 * returns. The weak reference is resolved once, by the loader, through the GOT: the no-op path is one load
 * and one branch. */
#include "memtrack/control.h"

/* runtime/preload/control.cpp defines it; its operation numbers are an ABI (never renumbered). */
extern int memtrack_preload_control_v1(int op, const char* name) __attribute__((weak));

enum { kOpPause = 1, kOpResume = 2, kOpRegionBegin = 3, kOpRegionEnd = 4, kOpIsRecording = 5 };

static inline int forward(int op, const char* name) {
  int (*const fn)(int, const char*) = memtrack_preload_control_v1;
  return fn != 0 ? fn(op, name) : 0;
}

void memtrack_pause(void) { (void)forward(kOpPause, 0); }
void memtrack_resume(void) { (void)forward(kOpResume, 0); }
void memtrack_region_begin(const char* name) { (void)forward(kOpRegionBegin, name); }
void memtrack_region_end(void) { (void)forward(kOpRegionEnd, 0); }
int memtrack_is_recording(void) { return forward(kOpIsRecording, 0) == 1; }
