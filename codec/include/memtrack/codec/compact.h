// The compact data-frame content (docs/FORMAT.md, "Compact data frames"; the encoder writes version 5, the
// decoder reads versions 1 to 5): the same events as the CodSpeed-compatible msgpack content, stored as
// columns (kinds with address modes, a per-frame (pid, tid) dictionary, delta-coded timestamps grouped by the
// kinds of the event and its predecessor, sizes,
// addresses as references to the thread's live blocks or free blocks of the size's class, or as deltas) in
// LEB128 varints. It is a second encoding of a data frame's content, inside the same zstd frame, context section,
// frame index and damage rules; a reader tells the two apart from the content's first bytes (kCompactMagic),
// which can never start a msgpack event (0xC1 is the one byte msgpack never uses).
//
// Lossless with respect to the compatible encoding: decoding a compact frame gives exactly the events that
// decoding the msgpack frame of the same events gives (every field, in the same order). Like the msgpack map,
// it keeps neither Event::stack (stacks live in EventStacks context records; version 5 may carry a frame's
// EventStacks record inside it instead: FrameStacks), nor a Free's size, nor an
// old_addr outside a Realloc with kFlagHasOldAddr: those come back as 0 from both encodings.
//
// Neither class is thread-safe; use one per in-flight frame. Both reuse their buffers across frames.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "memtrack/codec/event.h"
#include "memtrack/codec/status.h"

namespace memtrack::codec {

// The content's first 4 bytes, then the version byte.
inline constexpr std::byte kCompactMagic[4] = {std::byte{0xC1}, std::byte{'m'}, std::byte{'t'}, std::byte{'c'}};
inline constexpr std::uint8_t kCompactVersion = 5;
// A compact frame holds at most this many events (so its content never reaches the readers' 16 MiB limit on
// a frame they hold whole: at most kMaxCompactEventBytes per event).
inline constexpr std::size_t kMaxCompactFrameEvents = 65536;
// No event takes more than this in the columns (token 1, thread 3, timestamp 1 + 1 + 9 (an escaped short
// gap), size 1 + 9, two addresses 2 x 10 and version 5's 2 remainders, a new dictionary entry 2 x 5, version
// 5's stack code 1 + 3 and stack dictionary entry 5); the header (magic, version, N, D, the 9 timestamp
// modes, the five address columns' lengths, version 5's stacks flag, first event, stack dictionary size)
// takes at most kCompactHeaderBytes.
inline constexpr std::size_t kMaxCompactEventBytes = 66;
inline constexpr std::size_t kCompactHeaderBytes = 4 + 1 + 3 + 3 + 9 + 5 * 3 + 1 + 10 + 3;
// Column ends in one content (CompactFrameEncoder::block_ends): tokens, dictionary, threads and timestamp
// modes, 9 timestamp groups' first bytes, 9 their escaped low bytes and 9 their high parts, sizes' low bytes
// and high parts, five address columns (version 5: the deltas' remainders too), version 5's stack dictionary.
inline constexpr std::size_t kMaxCompactBlockEnds = 3 + 3 * 9 + 2 + 5 + 1;
// The zstd level of `encode --compact` and `record --compact` without --level. Compact columns are mostly
// incompressible bytes that only zstd's entropy coding of literals (levels >= 1) shrinks: on churn events
// (version 2), level 1 writes 3.55 bytes per event where -2 writes 4.06, for about the same encode CPU.
inline constexpr int kDefaultCompactLevel = 1;

// Version 5's call stacks of a frame's events (docs/FORMAT.md, "Version 5"): what the compatible encoding
// keeps in the one EventStacks context record written right after the frame, `first_event` its position
// and `ids` the leaf node of every event's stack, in event order (0: none).
struct FrameStacks {
  bool present = false;  // the frame carries its stacks (else they are in context records, if anywhere)
  std::uint64_t first_event = 0;
  std::vector<std::uint32_t> ids;
};

// True when `content` (a data frame's decompressed bytes) starts with kCompactMagic: a compact frame of any
// version. Fewer than 4 bytes: false.
[[nodiscard]] bool is_compact_content(std::span<const std::byte> content);

class CompactFrameEncoder {
 public:
  // Throws std::bad_alloc if the buffers cannot be allocated, std::invalid_argument if max_events is 0 or
  // above kMaxCompactFrameEvents.
  explicit CompactFrameEncoder(std::size_t max_events);
  ~CompactFrameEncoder();
  CompactFrameEncoder(const CompactFrameEncoder&) = delete;
  CompactFrameEncoder& operator=(const CompactFrameEncoder&) = delete;
  CompactFrameEncoder(CompactFrameEncoder&&) noexcept;
  CompactFrameEncoder& operator=(CompactFrameEncoder&&) noexcept;

  // Precondition: events.size() <= max_events(), every kind valid (is_valid_kind). Zero events give empty
  // content (the empty frame of an empty stream, as in the compatible encoding). The returned span stays
  // valid until the next call.
  std::span<const std::byte> encode(std::span<const Event> events);
  // The same with the events' call stacks (Event::stack) in the frame (version 5's stack section), for an
  // EventStacks record at `stacks_first_event` that a reader gives back with the frame. Zero events: empty
  // content, without stacks.
  std::span<const std::byte> encode(std::span<const Event> events, std::uint64_t stacks_first_event);

  // Where the columns of the last encode()'s content end (and, within the timestamp columns, each timestamp
  // group), as strictly increasing offsets below its size, at most kMaxCompactBlockEnds of them. A writer that
  // ends a zstd block at each (FrameCompressor::compress with block ends) gives every column literal and
  // entropy statistics of its own: the content, and so every reader, is unchanged.
  [[nodiscard]] std::span<const std::size_t> block_ends() const;
  [[nodiscard]] std::size_t max_events() const;
  // What an encoder for `max_events` allocates: its output buffer, per event a dictionary index, 24 bytes of
  // per-address state and 48 bytes of column buffers, and its address table (4 bytes per slot, at least 4
  // slots per event, and a 32-byte entry per address, 2 per event: 5 MiB at 65,536 events), and 48 bytes per event
  // for version 5's stack dictionary.
  [[nodiscard]] static std::size_t memory_bytes(std::size_t max_events);
  // The largest content encode() can return for `events` events.
  [[nodiscard]] static constexpr std::size_t output_bound(std::size_t events) {
    return kCompactHeaderBytes + events * kMaxCompactEventBytes;
  }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class CompactFrameDecoder {
 public:
  CompactFrameDecoder();
  ~CompactFrameDecoder();
  CompactFrameDecoder(const CompactFrameDecoder&) = delete;
  CompactFrameDecoder& operator=(const CompactFrameDecoder&) = delete;

  // `content` is one whole frame's content, starting with kCompactMagic. Appends its events to `out` and
  // returns ok, or returns an error (Errc::bad_compact, or Errc::truncated when the content ends inside a
  // column) whose message is "compact content at byte <offset>: <what>" (the caller adds the file name and
  // frame) and leaves `out` as it was. Never allocates from a count before checking it against the bytes
  // that remain.
  // `stacks`, if given, receives the frame's stack section (present false: none, or a version before 5);
  // the events' Event::stack stays 0 either way, as from a msgpack frame.
  Status decode(std::span<const std::byte> content, std::vector<Event>& out, FrameStacks* stacks = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memtrack::codec
