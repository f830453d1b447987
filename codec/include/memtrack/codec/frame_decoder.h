// Decodes one complete zstd frame of events (msgpack, or compact content: memtrack/codec/compact.h), for random access
// through the frame index and for decoding frames in parallel (one FrameDecoder per in-flight frame; each owns a
// ZSTD_DCtx and a buffer).
//
// Every frame is held whole, whatever its header declares (FrameWalker streams frames without a declared
// size instead): it is decompressed completely and its checksum, if it has one, verified before any event is
// appended, so a damaged frame appends nothing. The window is capped (a window above window_log_max is
// too_large); the buffer grows with the bytes actually decompressed, never from the declared content size,
// up to max_buffered_frame_bytes (beyond which the frame is too_large).
// Unlike the sequential decoder it requires the frame to hold whole events (our writer never splits an event
// across frames; an artifact that does must be decoded sequentially).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "memtrack/codec/artifact_decoder.h"
#include "memtrack/codec/compact.h"
#include "memtrack/codec/event.h"
#include "memtrack/codec/foreign_event.h"
#include "memtrack/codec/status.h"

struct ZSTD_DCtx_s;

namespace memtrack::codec {

class FrameDecoder {
 public:
  explicit FrameDecoder(DecoderLimits limits = {});  // throws std::runtime_error if zstd cannot allocate
  ~FrameDecoder();
  FrameDecoder(const FrameDecoder&) = delete;
  FrameDecoder& operator=(const FrameDecoder&) = delete;

  // `frame` must be exactly one zstd frame (trailing bytes are an error). Appends its events to `out` and
  // returns ok, or returns an error whose message says what was wrong (without file name or frame index:
  // the caller knows them) and leaves `out` as it was. `decompressed_bytes` receives the frame's content size;
  // `foreign` the frame's foreign events (positions counted among the frame's events; without it they are
  // skipped); `stacks` a compact frame's own stacks (FrameStacks: present false for any other frame).
  Status decode(std::span<const std::byte> frame, std::vector<Event>& out, std::size_t* decompressed_bytes = nullptr,
                ForeignEvents* foreign = nullptr, FrameStacks* stacks = nullptr);

  // The largest compressed frame decode() can succeed on (zstd's bound for max_buffered_frame_bytes of
  // content). Callers reading frames by an index check sizes against it before allocating.
  [[nodiscard]] std::size_t max_frame_bytes() const;

 private:
  DecoderLimits limits_;
  ZSTD_DCtx_s* dctx_ = nullptr;
  std::vector<std::byte> buffer_;
  CompactFrameDecoder compact_;
};

}  // namespace memtrack::codec
