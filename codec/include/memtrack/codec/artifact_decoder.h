// Reads an artifact's events in order (skippable frames skipped), with memory bounded by one frame whatever
// the file size: the events-only view of codec::FrameWalker (frame_walker.h), which says when a frame's
// events are yielded and what its errors look like. On damage the decoder stops: everything yielded before
// stays yielded, and status() says what was wrong with the frame index and byte offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "memtrack/codec/byte_source.h"
#include "memtrack/codec/event.h"
#include "memtrack/codec/foreign_event.h"
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

  // Fills up to out.size() events. Returns how many; 0 means the end of the artifact or an error. What it
  // yields does not depend on out.size().
  std::size_t next(std::span<Event> out);
  // The foreign events (foreign_event.h) that come just before the events the last next() filled, or, when
  // it returned 0, after the last event. Valid until the next call to next().
  [[nodiscard]] const ForeignEvents& foreign() const;

  // ok at a clean end; otherwise one line: "<name>: frame <i> at byte <offset>: <what>".
  [[nodiscard]] const Status& status() const;
  [[nodiscard]] const DecoderProgress& progress() const;

  // Salvage (FrameWalker::resync): skips the damaged frame or garbage and resumes at the next frame start.
  bool resync(std::uint64_t& skipped_from, std::uint64_t& resumed_at);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memtrack::codec
