#include "memtrack/codec/seek_table.h"

#include <cstring>
#include <string>
#include <utility>

namespace memtrack::codec {
namespace {

constexpr std::uint8_t kChecksumFlag = 0x80;
constexpr std::uint8_t kReservedBits = 0x7C;     // bits 6-2 must be zero; bits 1-0 are "unused", ignored
constexpr std::uint64_t kMaxFrames = 0x8000000;  // the reference implementation's ZSTD_SEEKABLE_MAXFRAMES
constexpr std::uint64_t kMinFrameBytes = 8;      // an empty skippable frame; a zstd frame is larger

void put_u32(std::vector<std::byte>& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xFF));
}

std::uint32_t get_u32(const std::byte* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

Status bad(const std::string& what) { return {Errc::bad_zstd, "bad frame index: " + what}; }

}  // namespace

void SeekTableBuilder::add(std::uint32_t compressed_size, std::uint32_t decompressed_size) {
  put_u32(entries_, compressed_size);
  put_u32(entries_, decompressed_size);
}

std::vector<std::byte> SeekTableBuilder::finish() const {
  std::vector<std::byte> out;
  out.reserve(kSeekTableHeaderSize + entries_.size() + kSeekTableFooterSize);
  put_u32(out, kSeekTableSkippableMagic);
  put_u32(out, static_cast<std::uint32_t>(entries_.size() + kSeekTableFooterSize));
  out.insert(out.end(), entries_.begin(), entries_.end());
  put_u32(out, static_cast<std::uint32_t>(frames()));
  out.push_back(std::byte{0});  // descriptor: no checksums
  put_u32(out, kSeekableMagic);
  return out;
}

std::uint64_t seek_table_size(std::span<const std::byte> footer, std::uint64_t file_size, Status& status) {
  if (footer.size() != kSeekTableFooterSize || file_size < kSeekTableFooterSize) return 0;
  if (get_u32(footer.data() + 5) != kSeekableMagic) return 0;
  const std::uint64_t frames = get_u32(footer.data());
  const auto descriptor = static_cast<std::uint8_t>(footer[4]);
  if ((descriptor & kReservedBits) != 0) {
    status = bad("reserved descriptor bits set");
    return 0;
  }
  const std::uint64_t entry_size = (descriptor & kChecksumFlag) != 0 ? 12 : 8;
  // 64-bit arithmetic: 2^32 frames * 12 bytes cannot overflow, and is compared before anything is sized.
  // Every frame the table describes also takes at least kMinFrameBytes of the file besides its entry, so
  // the table is at most about half the file, and a footer cannot claim frames the file has no room for.
  const std::uint64_t size = kSeekTableHeaderSize + frames * entry_size + kSeekTableFooterSize;
  if (frames > kMaxFrames || size + frames * kMinFrameBytes > file_size) {
    status = bad("the footer declares " + std::to_string(frames) + " frames, more than the file can hold");
    return 0;
  }
  return size;
}

Status parse_seek_table(std::span<const std::byte> table, std::uint64_t file_size, SeekTable& out) {
  if (table.size() < kSeekTableHeaderSize + kSeekTableFooterSize || table.size() > file_size) {
    return bad("table of " + std::to_string(table.size()) + " bytes");
  }
  const std::byte* footer = table.data() + table.size() - kSeekTableFooterSize;
  if (get_u32(footer + 5) != kSeekableMagic) return bad("no seekable magic");
  if (get_u32(table.data()) != kSeekTableSkippableMagic) return bad("the table is not a 0x184D2A5E skippable frame");
  if (get_u32(table.data() + 4) != table.size() - kSeekTableHeaderSize) return bad("frame size field mismatch");
  const auto descriptor = static_cast<std::uint8_t>(footer[4]);
  if ((descriptor & kReservedBits) != 0) return bad("reserved descriptor bits set");
  const std::size_t entry_size = (descriptor & kChecksumFlag) != 0 ? 12 : 8;
  const std::size_t frames = get_u32(footer);
  if (frames * entry_size != table.size() - kSeekTableHeaderSize - kSeekTableFooterSize) {
    return bad("frame count does not match the table size");
  }
  const std::uint64_t table_offset = file_size - table.size();
  SeekTable result;
  result.table_offset = table_offset;
  result.table_size = table.size();
  result.frames.resize(frames);  // bounded by table.size(), which the caller read from the file
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < frames; ++i) {
    const std::byte* entry = table.data() + kSeekTableHeaderSize + i * entry_size;
    SeekTable::Frame& f = result.frames[i];
    f.offset = offset;
    f.compressed_size = get_u32(entry);
    f.decompressed_size = get_u32(entry + 4);
    offset += f.compressed_size;
    if (offset > table_offset) return bad("frame " + std::to_string(i) + " extends past the table");
  }
  if (offset != table_offset) {
    return bad("the frames add up to " + std::to_string(offset) + " bytes, but the table starts at byte " +
               std::to_string(table_offset));
  }
  out = std::move(result);
  return {};
}

}  // namespace memtrack::codec
