// Reads an artifact (any number of zstd frames, skippable frames skipped) and yields its events in order,
// with memory bounded by one frame whatever the file size.
//
// Buffering is decided by the frame header's declared content size, not by its checksum. A frame that
// declares a content size of at most DecoderLimits::max_buffered_frame_bytes (every frame our writer puts)
// is buffered: its events are yielded only after the whole frame has been decompressed, has produced
// exactly the declared size and has passed its content checksum if it carries one. A frame that declares no
// size (the older single-stream layout, possibly gigabytes) or a larger one is streamed: its events are
// yielded as they are parsed, so damage found late in it (a checksum mismatch) is reported after its earlier
// events were yielded; they are still events zstd decompressed and the parser accepted (docs/RELIABILITY.md).
// On damage (truncation, corruption, garbage between frames, checksum mismatch, malformed msgpack) the
// decoder stops: everything yielded before stays yielded, and status() says what was wrong with the frame
// index and byte offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "memtrack/codec/byte_source.h"
#include "memtrack/codec/event.h"
#include "memtrack/codec/status.h"

namespace memtrack::codec {

struct DecoderLimits {
  // zstd window cap (ZSTD_d_windowLogMax): 2^24 = 16 MiB covers standard levels up to 19 and our frames.
  int window_log_max = 24;
  // A frame with a declared content size above this is streamed rather than buffered for verification.
  std::size_t max_buffered_frame_bytes = 16u << 20;
  // An event larger than this (only possible with huge unknown keys) is an error.
  std::size_t max_event_bytes = 64u << 10;
};

struct DecoderProgress {
  std::uint64_t frames = 0;              // zstd data frames completed
  std::uint64_t skippable_frames = 0;    // skippable frames passed over
  std::uint64_t compressed_bytes = 0;    // input consumed
  std::uint64_t decompressed_bytes = 0;  // msgpack bytes produced
  std::uint64_t events = 0;              // events yielded
};

class ArtifactDecoder {
 public:
  // `name` (a path, or "-") is used in error messages. The source must outlive the decoder.
  ArtifactDecoder(ByteSource& source, std::string name, DecoderLimits limits = {});
  ~ArtifactDecoder();
  ArtifactDecoder(const ArtifactDecoder&) = delete;
  ArtifactDecoder& operator=(const ArtifactDecoder&) = delete;

  // Fills up to out.size() events. Returns how many; 0 means the end of the artifact or an error.
  std::size_t next(std::span<Event> out);

  // ok at a clean end; otherwise one line: "<name>: frame <i> at byte <offset>: <what>".
  [[nodiscard]] const Status& status() const;
  [[nodiscard]] const DecoderProgress& progress() const;

  // Salvage: after an error, drops the damaged frame (or the garbage) and searches forward for the next
  // zstd or skippable frame magic, so next() can continue from there. Returns false at the end of input
  // (nothing left to salvage) or if there was no error. `skipped_from` is where the damage was reported,
  // `resumed_at` the offset decoding resumes at (the end of input when nothing was found).
  // The search starts at the damaged frame's second byte when that byte is still buffered, else at the
  // oldest buffered byte after it: damage that made zstd read past the frame's end (a corrupted block size)
  // can hide the next frame's start, so a salvage may skip more than one frame, but never yields a wrong
  // event. The frame index in later messages counts the damaged frame as one frame.
  bool resync(std::uint64_t& skipped_from, std::uint64_t& resumed_at);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memtrack::codec
