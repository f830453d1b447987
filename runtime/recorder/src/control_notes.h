// The control notes of the ring (ring.h, "Control") as context records (docs/FORMAT.md, "Context section:
// control"): Lifecycle hands each finished note of a control kind here, in ticket order.
//
// Pause/Resume: a note whose control word's generation is older than one already applied lost a race with a
// later toggle (two threads, or a thread and `memtrack ctl`) and is dropped; a note that does not change the
// state (a resume when already running, after a dropped pause) writes nothing. So the records alternate
// Pause, Resume, ... and the last one says the state the producers ended in. Regions are passed on as noted:
// pairing a RegionEnd with its RegionBegin is the reader's job (per pid and tid, analysis/region.h).
//
// Also the other half of the protocol for the recorder itself and `memtrack ctl`: toggle() and the region
// notes, written on any mapped ring. Reader thread for on_note; the writers from any other thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "memtrack/codec/context.h"
#include "memtrack/runtime/ring.h"

namespace memtrack::runtime {

class ControlBooks {
 public:
  // `initial`: the control word when the first producer started (record --paused sets it before the command).
  explicit ControlBooks(std::uint64_t initial = 0) : word_(initial) {}
  // A finished note of kind NotePause, NoteResume, NoteRegionBegin or NoteRegionEnd at `position`, with its
  // converted timestamp and payload. Returns the record to write, if any.
  std::optional<codec::ContextRecord> on_note(const RingEvent& head, std::uint64_t position, std::uint64_t timestamp,
                                              const std::string& payload);
  [[nodiscard]] static bool takes(RingEventKind kind) {
    return kind == RingEventKind::NotePause || kind == RingEventKind::NoteResume ||
           kind == RingEventKind::NoteRegionBegin || kind == RingEventKind::NoteRegionEnd;
  }

 private:
  std::uint64_t word_;
};

// Flips the ring's control word to paused (or running) and notes it as `source` ("start", "signal", "ctl")
// with pid `pid` and tid 0 (an outside caller). Returns false when it already was in that state (nothing
// written) or the ring is detached.
bool toggle_recording(RingHeader* ring, bool pause, std::int32_t pid, std::string_view source);
// A region begin (name) or end from outside the program: pid `pid`, tid 0.
bool note_region(RingHeader* ring, bool begin, std::int32_t pid, std::string_view name);

}  // namespace memtrack::runtime
