#include "memtrack/codec/frame_decoder.h"

#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "memtrack/codec/msgpack_decoder.h"

namespace memtrack::codec {

FrameDecoder::FrameDecoder(DecoderLimits limits) : limits_(limits) {
  dctx_ = ZSTD_createDCtx();
  if (dctx_ == nullptr) throw std::runtime_error("ZSTD_createDCtx failed");
  ZSTD_DCtx_setParameter(dctx_, ZSTD_d_windowLogMax, limits_.window_log_max);
}

FrameDecoder::~FrameDecoder() { ZSTD_freeDCtx(dctx_); }

std::size_t FrameDecoder::max_frame_bytes() const { return ZSTD_compressBound(limits_.max_buffered_frame_bytes); }

Status FrameDecoder::decode(std::span<const std::byte> frame, std::vector<Event>& out, std::size_t* decompressed_bytes,
                            ForeignEvents* foreign, FrameStacks* stacks) {
  if (foreign != nullptr) foreign->clear();
  if (stacks != nullptr) {
    stacks->present = false;
    stacks->ids.clear();
  }
  ZSTD_DCtx_reset(dctx_, ZSTD_reset_session_only);
  if (buffer_.empty()) buffer_.resize(std::min<std::size_t>(1u << 20, limits_.max_buffered_frame_bytes));
  ZSTD_inBuffer input{frame.data(), frame.size(), 0};
  std::size_t produced = 0;
  for (;;) {
    if (produced == buffer_.size()) {
      // Grow with the bytes that actually came out, never from the header's declared size.
      if (buffer_.size() >= limits_.max_buffered_frame_bytes) {
        return {Errc::too_large, "frame content larger than " + std::to_string(limits_.max_buffered_frame_bytes) +
                                     " bytes; decode the whole file sequentially"};
      }
      buffer_.resize(std::min(buffer_.size() * 2, limits_.max_buffered_frame_bytes));
    }
    ZSTD_outBuffer output{buffer_.data(), buffer_.size(), produced};
    const std::size_t r = ZSTD_decompressStream(dctx_, &output, &input);
    produced = output.pos;
    if (ZSTD_isError(r)) {
      if (ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge) {
        return {Errc::too_large, "window larger than the 2^" + std::to_string(limits_.window_log_max) + "-byte limit"};
      }
      return {Errc::bad_zstd, std::string("corrupt zstd data (") + ZSTD_getErrorName(r) + ")"};
    }
    if (r == 0) break;  // frame complete; its checksum (if any) verified
    if (input.pos == input.size && output.pos < output.size) {
      return {Errc::truncated, "input ends inside the frame"};
    }
  }
  if (input.pos != input.size) {
    return {Errc::bad_zstd, std::to_string(input.size - input.pos) + " bytes after the end of the frame"};
  }
  if (decompressed_bytes != nullptr) *decompressed_bytes = produced;

  if (is_compact_content({buffer_.data(), produced})) return compact_.decode({buffer_.data(), produced}, out, stacks);
  const std::size_t first = out.size();
  std::string error;
  std::size_t pos = 0;
  while (pos < produced) {
    Event e;
    const std::size_t start = pos;
    std::string_view type;
    const ParseResult r = parse_event(buffer_.data(), produced, pos, e, error, &type);
    if (r == ParseResult::ok) {
      out.push_back(e);
      continue;
    }
    if (r == ParseResult::foreign) {
      if (foreign != nullptr) foreign->add(out.size() - first, e, std::span(buffer_).subspan(start, pos - start), type);
      continue;
    }
    out.resize(first);
    if (foreign != nullptr) foreign->clear();
    if (r == ParseResult::error) {
      return {Errc::bad_msgpack, "event at byte " + std::to_string(start) + " of the frame's content: " + error};
    }
    return {Errc::truncated, "the frame ends inside an event at byte " + std::to_string(start) +
                                 " of its content; decode the whole file sequentially"};
  }
  return {};
}

}  // namespace memtrack::codec
