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

}  // namespace memtrack::codec
