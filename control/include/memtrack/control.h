/* memtrack/control.h: a program (or a benchmark harness) turns memtrack's recording off and on and marks
 * named regions of its run, which `memtrack stats --region NAME`, `top --region` and `report --region`
 * then analyse alone. Link libmemtrack-control (CMake: find_package(memtrack) and memtrack::control, or
 * memtrack::control_static). docs/RUNTIME.md, "Harness control", is the long form of this header.
 *
 * Without memtrack (the program runs on its own) every call is a no-op that costs a load and a branch: no
 * allocation, no system call, no lock (the library reaches memtrack through a weak reference to a function
 * of libmemtrack-preload.so, bound by the dynamic loader when `memtrack record` preloads it; the static
 * library is position-independent, so a weak reference works there too with GNU ld and gold).
 *
 * Under `memtrack record` each call is one entry in the recorder's ring, at its place among the events, so
 * its position in the artifact is causal exactly as the events are.
 *
 * Thread safety: every function may be called from any thread at any time, and from a signal handler (a call
 * from a handler that interrupts this thread's own control call, or an allocation at the wrong moment, is
 * dropped rather than risk a deadlock: memtrack_region_begin/end then return without a record).
 */
#ifndef MEMTRACK_CONTROL_H
#define MEMTRACK_CONTROL_H

#ifdef __cplusplus
extern "C" {
#endif

/* Recording on and off. A pause is of the whole recording, not of the calling thread or process: from the
 * pause on, no allocation of any thread of any process of the recording is recorded (malloc, calloc,
 * realloc's new block, the aligned family, mmap, brk), until a resume. Frees (free, realloc's old block,
 * munmap) are still recorded while paused, so the artifact's live heap stays right:
 *  - a block allocated while recording and freed while paused is freed in the artifact (no false leak);
 *  - a block allocated while paused and freed while recording is a free of an unknown block, which readers
 *    ignore (it counts as an unmatched free): it never was in the live heap, so it does not lower it.
 * So the artifact's live heap at any point is exactly the blocks allocated while recording and still live.
 * Pauses do not nest: pausing while paused does nothing, one resume resumes. A thread allocating at the very
 * moment another one pauses or resumes may have that one allocation recorded or not (the toggle is one atomic
 * word; the record of the toggle is placed right after it): either way it is accounted right (above).
 * `memtrack record --paused` starts paused; SIGUSR1 / SIGUSR2 to the recorder and `memtrack ctl PID pause|resume`
 * toggle the same state from outside. */
void memtrack_pause(void);
void memtrack_resume(void);

/* Regions. memtrack_region_begin opens a region named `name` (copied; at most 256 bytes are kept; NULL is the
 * empty name) on the calling thread; memtrack_region_end closes the innermost region this thread opened and
 * has not closed (an end with none open is ignored). Regions nest per thread, and several occurrences of one
 * name (a benchmark's loop run several times) are separate occurrences of that name.
 * What a region contains: every event positioned between its begin and its end, of the process that opened it
 * (all its threads) and of the processes it forked (directly or not), whether or not they were forked inside
 * the region. A fork child does not inherit the parent's open regions as its own (its region_end calls match
 * nothing it opened). An exec or the exit of the process ends its open regions there.
 * Pauses and regions are independent: allocations made while paused inside a region are simply not there. */
void memtrack_region_begin(const char* name);
void memtrack_region_end(void);

/* 1 when this process records allocations now (under `memtrack record`, attached, not paused), else 0. */
int memtrack_is_recording(void);

#ifdef __cplusplus
}
#endif

#endif /* MEMTRACK_CONTROL_H */
