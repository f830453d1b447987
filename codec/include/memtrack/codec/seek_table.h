// The frame index: a seek table in the zstd seekable format (facebook/zstd contrib/seekable_format), written
// as a trailing skippable frame after the data frames, so plain zstd decoders skip it and other seekable
// readers can use it.
//
// Layout (all little-endian):
//   u32 0x184D2A5E (skippable magic) | u32 frame size (everything after these 8 bytes)
//   per frame: u32 compressed size | u32 decompressed size [| u32 checksum, if descriptor bit 7]
//   u32 number of frames | u8 descriptor | u32 0x8F92EAB1 (seekable magic)
// We write no checksums (our zstd frames carry their own XXH64 content checksum) and accept tables with them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "memtrack/codec/status.h"

namespace memtrack::codec {

inline constexpr std::uint32_t kSeekTableSkippableMagic = 0x184D2A5Eu;
inline constexpr std::uint32_t kSeekableMagic = 0x8F92EAB1u;
inline constexpr std::size_t kSeekTableFooterSize = 9;
inline constexpr std::size_t kSeekTableHeaderSize = 8;  // skippable magic + frame size

// Builds the seek table frame for the pipeline's ordered writer: add() each data frame as it is written, in
// order, then write finish() after the last one. Not thread-safe (the ordered writer is serial).
class SeekTableBuilder {
 public:
  void add(std::uint32_t compressed_size, std::uint32_t decompressed_size);
  // The complete skippable frame. Precondition: fewer than 2^28 frames (a skippable frame holds < 4 GiB).
  [[nodiscard]] std::vector<std::byte> finish() const;
  [[nodiscard]] std::size_t frames() const { return entries_.size() / 8; }

 private:
  std::vector<std::byte> entries_;  // 8 bytes per frame, already little-endian
};

struct SeekTable {
  struct Frame {
    std::uint64_t offset = 0;  // file offset of the frame's first byte
    std::uint32_t compressed_size = 0;
    std::uint32_t decompressed_size = 0;
  };
  std::vector<Frame> frames;
  std::uint64_t table_offset = 0;  // where the seek table frame starts: the end of the data frames
  std::uint64_t table_size = 0;    // the seek table frame's size (it ends the file)
};

// Step 1: given the last kSeekTableFooterSize bytes of a file of `file_size` bytes, returns the size of the
// whole seek table frame, 0 if the file has no seek table (no seekable magic: not an error), or 0 with
// `status` set when the footer is there but impossible (reserved bits, a table larger than the file).
// Nothing is allocated from the footer's frame count before it is checked against the file size.
std::uint64_t seek_table_size(std::span<const std::byte> footer, std::uint64_t file_size, Status& status);

// Step 2: parses the seek table frame (the last `table.size()` bytes of the file). Checks the skippable
// header, the frame size field, and that the frames' compressed sizes add up exactly to the table's offset,
// so every entry describes bytes that exist.
Status parse_seek_table(std::span<const std::byte> table, std::uint64_t file_size, SeekTable& out);

}  // namespace memtrack::codec
