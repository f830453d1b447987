// StreamFrameReader: an artifact read once, in order, from any byte source, data frames and context frames
// together: the view of codec::FrameWalker (frame_walker.h) that keeps the frame structure, so that a data
// frame goes out with the context frames after it (frame_reader.h: DecodedFrame, and the errors of both
// frame readers). codec::ArtifactDecoder is the events-only view of the same walker.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "memtrack/analysis/frame_reader.h"
#include "memtrack/codec/byte_source.h"
#include "memtrack/codec/status.h"

namespace memtrack::analysis {

struct StreamProgress {
  std::uint64_t data_frames = 0;         // data frames completed
  std::uint64_t context_frames = 0;      // context frames read
  std::uint64_t skippable_frames = 0;    // every skippable frame passed (context frames and the index too)
  std::uint64_t compressed_bytes = 0;    // input consumed: the end of the last whole frame
  std::uint64_t decompressed_bytes = 0;  // msgpack bytes of the data frames
  std::uint64_t events = 0;              // events delivered
};

// Sequential reading of any artifact from `source` (not owned; read once, in order). Data frames are
// delivered to `in_order` with the records of the context frames after them; the frame index and other
// skippable frames are stepped over. A frame the walker verifies whole (a declared content size of at most
// 16 MiB: every frame our writer puts) is one DecodedFrame; a streamed one (no declared size, the older
// single-stream layout, or a larger one) goes out in pieces of at most 65,536 events, several DecodedFrames
// of the same index, the records after it with the last one. Errors are the walker's, or for a damaged
// context frame "<name>: " + the context decoder's message.
class StreamFrameReader {
 public:
  StreamFrameReader(codec::ByteSource& source, std::string name);
  ~StreamFrameReader();
  StreamFrameReader(const StreamFrameReader&) = delete;
  StreamFrameReader& operator=(const StreamFrameReader&) = delete;

  // Reads to the end of the source. DecodedFrame::slot is 0.
  codec::Status run(const IndexedFrameReader::InOrderFn& in_order);
  [[nodiscard]] const StreamProgress& progress() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memtrack::analysis
