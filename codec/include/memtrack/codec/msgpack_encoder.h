// Serializes events to msgpack exactly as serde + rmp_serde write CodSpeed's MemtrackEvent
// (docs/FORMAT.md): one fixmap per event, string keys in declaration order (memtrack/codec/schema.h),
// smallest integer encodings.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "memtrack/codec/event.h"
#include "memtrack/codec/huge_pages.h"

namespace memtrack::codec {

// No event encodes to more than this many bytes: a Realloc with old_addr and every integer at full width
// (msgpack_encoder.cpp derives it from memtrack/codec/schema.h at compile time and
// tests/codec/msgpack_encoder_test.cpp checks it). Buffers are sized from it once, never grown.
inline constexpr std::size_t kMaxEncodedEventBytes = 97;
// encode_event may store up to this many bytes past the event it writes (fixed-size copies of constants);
// a buffer for N events needs N * kMaxEncodedEventBytes + kEncoderSlackBytes.
inline constexpr std::size_t kEncoderSlackBytes = 32;

// Encodes a frame of events into a buffer sized once for `max_events`: the serializer of the pipeline's
// encode stage (one per in-flight frame) and of the BM_Serialize_Frame benchmark. Not thread-safe. The
// returned span stays valid until the next call.
//
// The buffer is allocated at construction and never value-initialized: a frame writes only the front of
// its worst-case buffer (about 64 of 97 bytes per realistic event), and pages never written are never
// resident. Large buffers are on huge pages (huge_pages.h): fewer page faults as a frame fills them.
// Throws std::bad_alloc if it cannot be allocated.
class FrameSerializer {
 public:
  explicit FrameSerializer(std::size_t max_events);

  // Precondition: events.size() <= max_events().
  std::span<const std::byte> serialize(std::span<const Event> events);

  [[nodiscard]] std::size_t max_events() const { return max_events_; }
  // The largest output serialize() can return (the buffer also has kEncoderSlackBytes of slack).
  [[nodiscard]] std::size_t capacity_bytes() const { return output_bound(max_events_); }

  // The largest msgpack `events` events can encode to.
  [[nodiscard]] static constexpr std::size_t output_bound(std::size_t events) { return events * kMaxEncodedEventBytes; }
  // What a serializer for `max_events` allocates (its buffer_bytes, in whole huge pages from 2 MiB on).
  [[nodiscard]] static constexpr std::size_t buffer_bytes(std::size_t max_events) {
    return output_bound(max_events) + kEncoderSlackBytes;
  }
  [[nodiscard]] static constexpr std::size_t allocated_bytes(std::size_t max_events) {
    return huge_allocation_bytes(buffer_bytes(max_events));
  }

 private:
  std::size_t max_events_;
  HugeArray<std::byte> buffer_;
};

// Encodes one event at `out`, which must have kMaxEncodedEventBytes + kEncoderSlackBytes writable bytes.
// Returns the event's size; bytes past it may have been overwritten.
std::size_t encode_event(const Event& event, std::byte* out);

}  // namespace memtrack::codec
