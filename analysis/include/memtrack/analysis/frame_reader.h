// The artifact's frame readers: both deliver each data frame with the context records of the context frames
// that follow it (docs/FORMAT.md, "Context section"), so every command reads events and context in one pass,
// whatever the input.
//   - IndexedFrameReader: through the frame index (seek table) of a file: frames read in order, decoded in
//     parallel on the current TBB arena, handed to the caller in frame order (`stats`, `decode --frames`).
//   - StreamFrameReader (stream_frame_reader.h): any artifact from any byte source (a pipe, stdin, a file
//     without an index, bytes in memory), sequentially, memory bounded by one frame.
// StreamOrder (stream_order.h) turns what they deliver into the stream order consumers want.
//
// Errors: the first frame that cannot be read or decoded ends the run; every frame before it has been
// delivered, none after it (a data frame whose following context frame is damaged is delivered with the
// records before the damage, then the run ends). The status names the file, the frame and its byte offset:
//   "<name>: frame <i> at byte <offset>: <what>"   (decoder errors keep the decoder's code; an index entry
//                                                  larger than any frame is Errc::too_large, never allocated)
// or, for a damaged context frame, "<name>: " + the context decoder's message (which names its offset);
// a failed read returns ReadAt's status unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "memtrack/analysis/stream_order.h"
#include "memtrack/codec/byte_source.h"
#include "memtrack/codec/context.h"
#include "memtrack/codec/event.h"
#include "memtrack/codec/foreign_event.h"
#include "memtrack/codec/seek_table.h"
#include "memtrack/codec/status.h"

namespace memtrack::analysis {

// Reads exactly `out.size()` bytes at file offset `offset` into `out`. Called from one thread at a time.
using ReadAt = std::function<codec::Status(std::uint64_t offset, std::span<std::byte> out)>;

// Data frames [first, last) of the index (0-based, counting data frames only: context frames, which the index
// lists too, docs/FORMAT.md, are not frames of events); `last` beyond them means up to the end.
struct FrameRange {
  std::size_t first = 0, last = SIZE_MAX;
};

struct DecodedFrame {
  std::size_t index = 0;  // the frame's number among the artifact's data frames
  // Which of the reader's slots() holds the frame: state the caller keeps per slot (e.g. partial counts
  // made by the parallel callback) is the frame's own until its in-order callback returns.
  std::size_t slot = 0;
  std::span<const codec::Event> events;           // valid until the in-order callback returns
  const codec::ForeignEvents* foreign = nullptr;  // the foreign events among them (null: none), as long
  std::uint64_t compressed_bytes = 0;             // the frame's bytes in the file
  std::uint64_t msgpack_bytes = 0;                // decompressed
  // The records of the context frames after this data frame, up to the next one (the first frame of the
  // artifact also gets those before it), in file order; not sorted by position. Valid until the in-order
  // callback returns, which may move them away.
  std::span<codec::ContextRecord> context;
  std::uint64_t context_frames = 0, context_bytes = 0;  // how many context frames those were, their file bytes
};

class IndexedFrameReader {
 public:
  // Called on any thread, for different frames at once: work that does not depend on order.
  using ParallelFn = std::function<void(const DecodedFrame&)>;
  // Called in frame order, one frame at a time. A non-ok status stops the run and is returned by run().
  using InOrderFn = std::function<codec::Status(const DecodedFrame&)>;

  // Precondition: range.first <= the index's frame count (the caller reports a range outside it). At most
  // `max_frames_in_flight` frames are alive at once (1: one frame of memory, decoded and delivered in turn;
  // 0: derived from a 256 MiB budget and the index's frame sizes, at most two per thread).
  IndexedFrameReader(const codec::SeekTable& index, ReadAt read_at, std::string name, FrameRange range = {},
                     std::size_t max_frames_in_flight = 0);

  // The index's data frames (entries that are not skippable frames) and what the other entries hold.
  [[nodiscard]] std::size_t data_frames() const { return data_.size(); }
  [[nodiscard]] std::uint64_t skippable_bytes() const { return skippable_bytes_; }
  // File bytes from the range's first data frame to the end of its last (for progress).
  [[nodiscard]] std::uint64_t bytes_in_range() const;

  // Frames in flight at most; DecodedFrame::slot is below it.
  [[nodiscard]] std::size_t slots() const { return slots_; }

  // Reads every frame of the range once. `parallel` may be empty.
  codec::Status run(const ParallelFn& parallel, const InOrderFn& in_order);

 private:
  const codec::SeekTable& index_;
  ReadAt read_at_;
  std::string name_;
  std::vector<std::size_t> data_;  // index entries that are data frames, in file order
  // Index entries that are context frames, in file order; those of data frame i (after it, before the next)
  // are context_[context_begin_[i] .. context_begin_[i + 1]).
  std::vector<std::size_t> context_;
  std::vector<std::size_t> context_begin_;
  std::uint64_t skippable_bytes_ = 0;
  std::size_t first_, last_;  // positions in data_
  std::size_t slots_;
};

}  // namespace memtrack::analysis
