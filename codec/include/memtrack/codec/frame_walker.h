// The one sequential walk over an artifact's bytes: zstd data frames (decompressed, checked, parsed into
// events) and skippable frames (context frames, the frame index, others) in file order, from any ByteSource,
// with memory bounded by one frame whatever the file size. Both sequential readers are views over it:
// codec::ArtifactDecoder (events only) and analysis::StreamFrameReader (data frames with their context).
//
// A data frame's content is msgpack events, or compact columns (memtrack/codec/compact.h) when it starts with
// kCompactMagic and continues no event of the frame before; a compact frame is always held whole (one that
// declares no size, or a size above max_buffered_frame_bytes, is an error).
//
// A data frame that declares a content size of at most DecoderLimits::max_buffered_frame_bytes (every frame
// our writer puts) is decompressed whole before it is parsed: it must produce exactly the declared size and
// pass its content checksum if it carries one, so damage in it is reported as the zstd error it is, and none
// of its events goes out. A frame that declares no size (the older single-stream layout, possibly gigabytes)
// or a larger one is streamed: its events go out in pieces as they are parsed, so damage found late in it
// (a checksum mismatch) is reported after earlier pieces went out; those are still events zstd decompressed
// and the parser accepted (docs/RELIABILITY.md). An event may straddle two frames (older writers).
//
// Errors end the walk (until resync()); status() is one line "<name>: frame <i> at byte <offset>: <what>",
// <i> the number of data frames completed (a frame salvaged over counts as one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "memtrack/codec/artifact_decoder.h"  // DecoderLimits
#include "memtrack/codec/byte_source.h"
#include "memtrack/codec/compact.h"  // FrameStacks
#include "memtrack/codec/event.h"
#include "memtrack/codec/foreign_event.h"
#include "memtrack/codec/status.h"

namespace memtrack::codec {

struct WalkOptions {
  // Hold each context frame's bytes (skippable_bytes()); a context frame larger than its largest valid
  // payload can be is then too_large. Without it every skippable frame is stepped over unread.
  bool hold_context = false;
  // A streamed frame's events go out once at least this many are parsed (and at the frame's end).
  std::size_t piece_events = 1;
};

class FrameWalker {
 public:
  enum class Item {
    frame_begin,  // a data frame starts at frame_offset() (only its magic is checked so far)
    events,       // events(): a whole verified frame, or a piece of a streamed one (frame_done() says which)
    skippable,    // a skippable frame at frame_offset() (skippable_magic(), skippable_bytes())
    end,          // the end of the input, or an error: status()
  };

  // `name` (a path, or "-") starts every error message. The source must outlive the walker. Throws
  // std::runtime_error if zstd cannot allocate its context.
  FrameWalker(ByteSource& source, std::string name, DecoderLimits limits = {}, WalkOptions options = {});
  ~FrameWalker();
  FrameWalker(const FrameWalker&) = delete;
  FrameWalker& operator=(const FrameWalker&) = delete;

  // Reads up to the next item. After `end`, returns `end` again (until resync()).
  Item next();

  // Item::events: valid until the walker decodes again, in the call to next() after it returned frame_begin
  // or events without frame_done() (so a whole frame's events stay valid across the skippable frames after
  // it, up to the next frame's frame_begin included).
  [[nodiscard]] std::span<const Event> events() const;
  // Item::events: the foreign events among them (positions counted in events()), with the same lifetime.
  [[nodiscard]] const ForeignEvents& foreign() const;
  // Item::events: a compact frame's own stacks (version 5: what an EventStacks record after the frame would
  // hold; present false for every other frame), with the same lifetime.
  [[nodiscard]] const FrameStacks& stacks() const;
  // Item::events: true when the frame is complete and verified (its last piece, or the whole frame).
  [[nodiscard]] bool frame_done() const;
  // The number of the current data frame (while in it), or of the next one; among data frames only.
  [[nodiscard]] std::uint64_t frame_index() const;
  // The file offset of the current (or last) frame's first byte, data or skippable.
  [[nodiscard]] std::uint64_t frame_offset() const;
  // Item::events with frame_done(): the frame's compressed bytes and its decompressed content.
  [[nodiscard]] std::uint64_t frame_compressed_bytes() const;
  [[nodiscard]] std::uint64_t frame_content_bytes() const;
  // Item::skippable: its magic, and its bytes (header included) if it is a context frame held by
  // WalkOptions::hold_context, else empty. Valid until the next call to next().
  [[nodiscard]] std::uint32_t skippable_magic() const;
  [[nodiscard]] std::span<const std::byte> skippable_bytes() const;
  [[nodiscard]] std::uint64_t skippable_size() const;

  [[nodiscard]] std::uint64_t data_frames() const;       // data frames completed
  [[nodiscard]] std::uint64_t skippable_frames() const;  // skippable frames passed
  [[nodiscard]] std::uint64_t offset() const;            // input consumed: the end of the last item
  [[nodiscard]] std::uint64_t bytes_read() const;        // input read from the source so far

  // ok at a clean end; otherwise the error (see the top of this file).
  [[nodiscard]] const Status& status() const;

  // Salvage: after an error (but a read error), drops the damaged frame (or the garbage) and its unparsed
  // content and searches forward for the next zstd or skippable frame magic, so next() can continue there.
  // Returns false at the end of input (nothing left to salvage) or if there was no error. `skipped_from` is
  // where the damage was reported, `resumed_at` the offset decoding resumes at (the end of input when nothing
  // was found). The search starts at the damaged frame's second byte when that byte is still buffered, else
  // at the oldest buffered byte after it: damage that made zstd read past the frame's end (a corrupted block
  // size) can hide the next frame's start, so a salvage may skip more than one frame, but never yields a
  // wrong event.
  bool resync(std::uint64_t& skipped_from, std::uint64_t& resumed_at);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memtrack::codec
