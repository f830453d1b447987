/* The call between libmemtrack-control (control/src/control.c, C) and libmemtrack-preload.so
 * (runtime/preload/control.cpp), which defines it:
 *
 *   int memtrack_preload_control_v1(int op, const char* name);
 *
 * Returns 1 when done, 0 when the process does not record (or the call was dropped); for
 * MEMTRACK_CONTROL_IS_RECORDING, 1 when allocations are being recorded; -1 for an operation the preload does
 * not know (a newer libmemtrack-control). The operation numbers are an ABI between separately built
 * libraries: never renumber, only add. */
#ifndef MEMTRACK_RUNTIME_CONTROL_ABI_H
#define MEMTRACK_RUNTIME_CONTROL_ABI_H

enum {
  MEMTRACK_CONTROL_PAUSE = 1,
  MEMTRACK_CONTROL_RESUME = 2,
  MEMTRACK_CONTROL_REGION_BEGIN = 3, /* name: the region's name, or NULL */
  MEMTRACK_CONTROL_REGION_END = 4,
  MEMTRACK_CONTROL_IS_RECORDING = 5
};

#endif /* MEMTRACK_RUNTIME_CONTROL_ABI_H */
