#include "control_notes.h"

#include "shared_ring.h"

namespace memtrack::runtime {

std::optional<codec::ContextRecord> ControlBooks::on_note(const RingEvent& head, std::uint64_t position,
                                                          std::uint64_t timestamp, const std::string& payload) {
  switch (head.kind) {
    case RingEventKind::NotePause:
    case RingEventKind::NoteResume: {
      if (control_generation(head.addr) <= control_generation(word_)) return std::nullopt;  // lost a race
      const bool was_paused = (word_ & kRingControlPaused) != 0;
      word_ = head.addr;
      const bool paused = (word_ & kRingControlPaused) != 0;
      if (paused == was_paused) return std::nullopt;
      if (paused) return codec::Pause{head.pid, head.tid, position, timestamp, payload};
      return codec::Resume{head.pid, head.tid, position, timestamp, payload};
    }
    case RingEventKind::NoteRegionBegin:
      return codec::RegionBegin{head.pid, head.tid, position, timestamp, payload};
    case RingEventKind::NoteRegionEnd:
      return codec::RegionEnd{head.pid, head.tid, position, timestamp};
    default:
      return std::nullopt;
  }
}

bool toggle_recording(RingHeader* ring, bool pause, std::int32_t pid, std::string_view source) {
  const std::uint64_t next = toggle_control(ring, pause);
  if (next == 0) return false;
  return write_ring_note(ring, pause ? RingEventKind::NotePause : RingEventKind::NoteResume, pid, 0, next, 0, source);
}

bool note_region(RingHeader* ring, bool begin, std::int32_t pid, std::string_view name) {
  static_assert(kRingMaxRegionNameBytes == codec::kMaxRegionNameBytes, "the ring's and the format's limits agree");
  if (name.size() > kRingMaxRegionNameBytes) name = name.substr(0, kRingMaxRegionNameBytes);
  return write_ring_note(ring, begin ? RingEventKind::NoteRegionBegin : RingEventKind::NoteRegionEnd, pid, 0, 0, 0,
                         begin ? name : std::string_view{});
}

}  // namespace memtrack::runtime
