#include "memtrack/codec/frame_compressor.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "zstd_internal.h"  // ZSTD_getCParams, ZSTD_estimateCCtxSize_usingCParams: context_bytes()

namespace memtrack::codec {

FrameCompressor::FrameCompressor(int level) : level_(level) {
  if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel()) {
    throw std::runtime_error("zstd level " + std::to_string(level) + " is outside " + std::to_string(ZSTD_minCLevel()) +
                             ".." + std::to_string(ZSTD_maxCLevel()));
  }
  cctx_ = ZSTD_createCCtx();
  if (cctx_ == nullptr) throw std::runtime_error("ZSTD_createCCtx failed");
  // One frame per call with the content size (consumers size their buffers from it) and a checksum (the
  // decoder verifies a frame before yielding its events). Single-threaded: frames are parallel instead.
  const size_t rc[] = {
      ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, level),
      ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 1),
      ZSTD_CCtx_setParameter(cctx_, ZSTD_c_contentSizeFlag, 1),
  };
  for (size_t r : rc) {
    if (ZSTD_isError(r)) {
      ZSTD_freeCCtx(cctx_);
      throw std::runtime_error(std::string("zstd parameter: ") + ZSTD_getErrorName(r));
    }
  }
}

FrameCompressor::~FrameCompressor() { ZSTD_freeCCtx(cctx_); }

FrameCompressor::FrameCompressor(FrameCompressor&& other) noexcept
    : cctx_(std::exchange(other.cctx_, nullptr)), level_(other.level_) {}

FrameCompressor& FrameCompressor::operator=(FrameCompressor&& other) noexcept {
  if (this != &other) {
    ZSTD_freeCCtx(cctx_);
    cctx_ = std::exchange(other.cctx_, nullptr);
    level_ = other.level_;
  }
  return *this;
}

std::size_t FrameCompressor::bound(std::size_t input_size) { return ZSTD_compressBound(input_size); }

std::size_t FrameCompressor::context_bytes(int level, std::size_t input_size) {
  return ZSTD_estimateCCtxSize_usingCParams(ZSTD_getCParams(level, input_size, 0));
}

std::size_t FrameCompressor::compress(std::span<const std::byte> input, std::span<std::byte> output, Status& status) {
  const size_t n = ZSTD_compress2(cctx_, output.data(), output.size(), input.data(), input.size());
  if (ZSTD_isError(n)) {
    status = {Errc::bad_zstd, std::string("zstd compression failed: ") + ZSTD_getErrorName(n)};
    return 0;
  }
  return n;
}

std::size_t FrameCompressor::compress(std::span<const std::byte> input, std::span<const std::size_t> block_ends,
                                      std::span<std::byte> output, Status& status) {
  if (block_ends.empty()) return compress(input, output, status);
  auto fail = [&status](const std::string& what) {
    status = {Errc::bad_zstd, "zstd compression failed: " + what};
    return std::size_t{0};
  };
  // A streamed frame: the content size pledged up front (the header carries it, as compress2's does).
  ZSTD_CCtx_reset(cctx_, ZSTD_reset_session_only);
  if (const size_t r = ZSTD_CCtx_setPledgedSrcSize(cctx_, input.size()); ZSTD_isError(r)) {
    return fail(ZSTD_getErrorName(r));
  }
  ZSTD_outBuffer out{output.data(), output.size(), 0};
  std::size_t from = 0;
  for (std::size_t k = 0; k <= block_ends.size(); ++k) {
    const bool last = k == block_ends.size();
    const std::size_t to = last ? input.size() : block_ends[k];
    if (to < from || to > input.size()) return fail("block ends out of order");
    ZSTD_inBuffer in{input.data() + from, to - from, 0};
    const ZSTD_EndDirective mode = last ? ZSTD_e_end : ZSTD_e_flush;
    for (;;) {
      const size_t r = ZSTD_compressStream2(cctx_, &out, &in, mode);
      if (ZSTD_isError(r)) {
        ZSTD_CCtx_reset(cctx_, ZSTD_reset_session_only);
        return fail(ZSTD_getErrorName(r));
      }
      if (r == 0) break;
      // More to write and no room for it: the caller's buffer is below bound().
      if (out.pos == out.size) {
        ZSTD_CCtx_reset(cctx_, ZSTD_reset_session_only);
        return fail("output buffer too small");
      }
    }
    from = to;
  }
  return out.pos;
}

}  // namespace memtrack::codec
