// The preload's half of memtrack/control.h: libmemtrack-control finds memtrack_preload_control_v1 through a
// weak reference (control/src/control.c) when this library is loaded, and calls it for every control call.
// Pause and resume flip RingHeader::control (ring.h, "Control"), which every allocation hook reads, and note
// the change in the ring; a region's begin and end are notes. Everything is in the ring, so a control record's
// position among the events is causal exactly as the events are (ring.h), whoever calls it.
//
// Async-signal-safety: as the hooks (atomics, the ring, no allocation). A call from a signal handler that
// interrupts this thread's own note (t_busy) is dropped; one that interrupts this thread's event between its
// ticket and its commit is taken within the nested-ticket bound of begin_event (ring_client.h), else dropped.
#include <string.h>

#include "memtrack/runtime/control_abi.h"
#include "memtrack/runtime/ring.h"
#include "ring_client.h"

namespace memtrack::preload {
namespace {

// Attached and recording, and a note may be written from here (see the file comment).
bool may_note() { return may_record() && nested_ticket_allowed(t_pending); }

// The toggle, then the note carrying the new word (ring.h, "Control": a note older than one the recorder
// applied is dropped, so two threads toggling at once end, in the artifact, in the state the word ended in).
int toggle(bool pause) {
  if (!may_note()) return 0;
  const uint64_t next = runtime::toggle_control(g_ring, pause);
  if (next == 0) return 1;  // already so: not nested, no note
  static constexpr char kSource[] = "library";
  write_note(pause ? RingEventKind::NotePause : RingEventKind::NoteResume, g_pid, next, kSource, sizeof kSource - 1);
  return 1;
}

}  // namespace
}  // namespace memtrack::preload

// memtrack/runtime/control_abi.h has the operations and the results.
MEMTRACK_EXPORT int memtrack_preload_control_v1(int op, const char* name) {
  using namespace memtrack::preload;
  switch (op) {
    case MEMTRACK_CONTROL_PAUSE:
      return toggle(true);
    case MEMTRACK_CONTROL_RESUME:
      return toggle(false);
    case MEMTRACK_CONTROL_REGION_BEGIN: {
      if (!may_note()) return 0;
      const size_t len = name == nullptr ? 0 : strnlen(name, memtrack::runtime::kRingMaxRegionNameBytes);
      return write_note(RingEventKind::NoteRegionBegin, g_pid, 0, name, len) ? 1 : 0;
    }
    case MEMTRACK_CONTROL_REGION_END:
      if (!may_note()) return 0;
      return write_note(RingEventKind::NoteRegionEnd, g_pid, 0, nullptr, 0) ? 1 : 0;
    case MEMTRACK_CONTROL_IS_RECORDING:
      return recording_now() &&
                     (g_ring->control.load(std::memory_order_relaxed) & memtrack::runtime::kRingControlPaused) == 0
                 ? 1
                 : 0;
    default:
      return -1;
  }
}
