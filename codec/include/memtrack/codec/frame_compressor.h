// One zstd frame per call over a reused ZSTD_CCtx: content size and content checksum in every frame header.
#pragma once

#include <cstddef>
#include <span>

#include "memtrack/codec/status.h"

struct ZSTD_CCtx_s;

namespace memtrack::codec {

inline constexpr int kDefaultLevel = -5;

class FrameCompressor {
 public:
  // Throws std::runtime_error if the context cannot be created or the level is out of zstd's range.
  explicit FrameCompressor(int level = kDefaultLevel);
  ~FrameCompressor();
  FrameCompressor(const FrameCompressor&) = delete;
  FrameCompressor& operator=(const FrameCompressor&) = delete;
  FrameCompressor(FrameCompressor&&) noexcept;
  FrameCompressor& operator=(FrameCompressor&&) noexcept;

  // Compresses `input` as one complete zstd frame into `output`, which must hold bound(input.size()) bytes.
  // Returns the compressed size, or 0 with `status` set on failure.
  std::size_t compress(std::span<const std::byte> input, std::span<std::byte> output, Status& status);
  // The same frame, decompressing to the same bytes, with a zstd block ended at each of `block_ends`
  // (strictly increasing offsets below input.size()), so that each part is entropy-coded on its own (a
  // compact frame's columns: CompactFrameEncoder::block_ends). `output` must hold
  // bound(input.size(), block_ends.size()) bytes. No block ends: the same bytes as compress() above.
  std::size_t compress(std::span<const std::byte> input, std::span<const std::size_t> block_ends,
                       std::span<std::byte> output, Status& status);

  [[nodiscard]] int level() const { return level_; }
  // The output size compress() needs for `input_size` bytes (ZSTD_compressBound).
  [[nodiscard]] static std::size_t bound(std::size_t input_size);
  // With `blocks` block ends: each may start a block of its own, whose header takes 3 bytes more.
  [[nodiscard]] static std::size_t bound(std::size_t input_size, std::size_t block_ends) {
    return bound(input_size) + 3 * block_ends;
  }
  // zstd's estimate of what a context at `level` allocates once it has compressed frames of up to
  // `input_size` bytes (its workspace is sized on the first frame, not at construction). For budgets.
  [[nodiscard]] static std::size_t context_bytes(int level, std::size_t input_size);

 private:
  ZSTD_CCtx_s* cctx_ = nullptr;
  int level_;
};

}  // namespace memtrack::codec
