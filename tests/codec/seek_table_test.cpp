// The frame index (zstd seekable format) and random access: tables round trip, hostile footers are refused
// before anything is sized from them, FrameDecoder decodes exactly one verified frame, and the sequential
// decoder ignores the index and can resync past damage (--salvage).
#include "memtrack/codec/seek_table.h"

#include <gtest/gtest.h>
#include <zstd.h>

#include <cstring>
#include <random>

#include "common/artifacts.h"
#include "memtrack/codec/artifact_decoder.h"
#include "memtrack/codec/frame_decoder.h"

namespace memtrack::codec {
namespace {

using testing::build_artifact;
using testing::generate_trace;

std::uint32_t u32_at(const std::vector<std::byte>& b, std::size_t at) {
  std::uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

Status load(const std::vector<std::byte>& file, SeekTable& out) {
  Status status;
  const std::span<const std::byte> footer(file.data() + file.size() - kSeekTableFooterSize, kSeekTableFooterSize);
  const std::uint64_t size = seek_table_size(footer, file.size(), status);
  if (!status.is_ok()) return status;
  if (size == 0) return {Errc::usage, "no index"};
  return parse_seek_table(std::span(file.data() + file.size() - size, size), file.size(), out);
}

TEST(SeekTable, BuilderWritesTheSeekableFormatExactly) {
  SeekTableBuilder b;
  b.add(100, 1000);
  b.add(0x01020304, 0x0a0b0c0d);
  const auto t = b.finish();
  ASSERT_EQ(t.size(), 8u + 2 * 8 + 9);
  EXPECT_EQ(u32_at(t, 0), 0x184D2A5Eu);
  EXPECT_EQ(u32_at(t, 4), 2u * 8 + 9);  // frame size excludes magic and size field
  EXPECT_EQ(u32_at(t, 8), 100u);
  EXPECT_EQ(u32_at(t, 12), 1000u);
  EXPECT_EQ(u32_at(t, 16), 0x01020304u);
  EXPECT_EQ(u32_at(t, 20), 0x0a0b0c0du);
  EXPECT_EQ(u32_at(t, 24), 2u);           // number of frames
  EXPECT_EQ(static_cast<int>(t[28]), 0);  // descriptor: no checksums
  EXPECT_EQ(u32_at(t, 29), 0x8F92EAB1u);  // seekable magic, last 4 bytes of the file
}

TEST(SeekTable, RoundTripsThroughAnArtifact) {
  const auto events = generate_trace(2500, 7);
  const auto a = build_artifact(events, 1000, true);
  SeekTable t;
  ASSERT_TRUE(load(a.bytes, t).is_ok());
  ASSERT_EQ(t.frames.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(t.frames[i].offset, a.frame_offsets[i]);
    const std::size_t end = i + 1 < 3 ? a.frame_offsets[i + 1] : t.table_offset;
    EXPECT_EQ(t.frames[i].compressed_size, end - a.frame_offsets[i]);
    EXPECT_EQ(t.frames[i].decompressed_size,
              ZSTD_getFrameContentSize(a.bytes.data() + a.frame_offsets[i], t.frames[i].compressed_size));
  }
  EXPECT_EQ(t.table_offset + t.table_size, a.bytes.size());
}

TEST(SeekTable, AFileWithoutIndexHasNone) {
  const auto a = build_artifact(generate_trace(100, 1), 1000, false);
  Status status;
  EXPECT_EQ(seek_table_size(std::span(a.bytes.data() + a.bytes.size() - 9, 9), a.bytes.size(), status), 0u);
  EXPECT_TRUE(status.is_ok());
}

TEST(SeekTable, AcceptsEntriesWithChecksums) {
  // Another writer's table with Checksum_Flag set: 12-byte entries; we skip the checksums.
  const auto a = build_artifact(generate_trace(300, 2), 100, false);
  std::vector<std::byte> file = a.bytes;
  auto put = [&](std::uint32_t v) {
    for (int i = 0; i < 4; ++i) file.push_back(static_cast<std::byte>(v >> (8 * i)));
  };
  put(0x184D2A5E);
  put(3 * 12 + 9);
  for (std::size_t i = 0; i < 3; ++i) {
    const std::size_t end = i + 1 < 3 ? a.frame_offsets[i + 1] : a.bytes.size();
    put(static_cast<std::uint32_t>(end - a.frame_offsets[i]));
    put(0);
    put(0xdeadbeef);
  }
  put(3);
  file.push_back(std::byte{0x80});
  put(0x8F92EAB1);
  SeekTable t;
  ASSERT_TRUE(load(file, t).is_ok());
  EXPECT_EQ(t.frames[2].offset, a.frame_offsets[2]);
}

TEST(SeekTable, HostileFootersAreRefusedBeforeSizingAnything) {
  const auto a = build_artifact(generate_trace(300, 3), 100, true);
  SeekTable t;
  {  // 2^32-1 frames declared in a small file
    auto f = a.bytes;
    for (std::size_t i = f.size() - 9; i < f.size() - 5; ++i) f[i] = std::byte{0xff};
    const Status s = load(f, t);
    EXPECT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find("more than the file can hold"), std::string::npos) << s.message();
  }
  {  // reserved descriptor bits
    auto f = a.bytes;
    f[f.size() - 5] = std::byte{0x04};
    EXPECT_FALSE(load(f, t).is_ok());
  }
  {  // a compressed size that does not add up to the table offset
    auto f = a.bytes;
    const std::size_t first_entry = f.size() - (8 + 3 * 8 + 9) + 8;
    f[first_entry] = static_cast<std::byte>(static_cast<unsigned>(f[first_entry]) ^ 1u);
    const Status s = load(f, t);
    EXPECT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find("add up"), std::string::npos) << s.message();
  }
  {  // frame size field wrong
    auto f = a.bytes;
    f[f.size() - (8 + 3 * 8 + 9) + 4] = std::byte{0x01};
    EXPECT_FALSE(load(f, t).is_ok());
  }
  {  // no skippable magic where the table should start
    auto f = a.bytes;
    f[f.size() - (8 + 3 * 8 + 9)] = std::byte{0};
    EXPECT_FALSE(load(f, t).is_ok());
  }
  // Tiny files never read out of bounds.
  for (std::size_t n = 0; n < 9; ++n) {
    Status s;
    EXPECT_EQ(seek_table_size(std::span(a.bytes.data(), n), n, s), 0u);
  }
}

TEST(SeekTable, PlainSequentialDecoderIgnoresTheIndex) {
  const auto events = generate_trace(2500, 4);
  const auto a = build_artifact(events, 1000, true);
  MemorySource source(a.bytes);
  ArtifactDecoder decoder(source, "indexed.zst");
  std::vector<Event> out(700), all;
  while (const std::size_t n = decoder.next(out)) all.insert(all.end(), out.begin(), out.begin() + n);
  EXPECT_TRUE(decoder.status().is_ok()) << decoder.status().message();
  EXPECT_EQ(all, events);
  EXPECT_EQ(decoder.progress().skippable_frames, 1u);
}

TEST(FrameDecoder, DecodesEachFrameOfTheIndex) {
  const auto events = generate_trace(2500, 5);
  const auto a = build_artifact(events, 1000, true);
  SeekTable t;
  ASSERT_TRUE(load(a.bytes, t).is_ok());
  FrameDecoder decoder;
  std::vector<Event> all;
  for (const auto& f : t.frames) {
    std::size_t content = 0;
    const Status s = decoder.decode(std::span(a.bytes.data() + f.offset, f.compressed_size), all, &content);
    ASSERT_TRUE(s.is_ok()) << s.message();
    EXPECT_EQ(content, f.decompressed_size);
  }
  EXPECT_EQ(all, events);
}

TEST(FrameDecoder, ADamagedFrameAppendsNothing) {
  const auto events = generate_trace(1000, 6);
  const auto a = build_artifact(events, 1000, false);
  FrameDecoder decoder;
  std::mt19937 rng(9);
  std::vector<Event> out;
  int errors = 0;
  for (int trial = 0; trial < 500; ++trial) {
    auto damaged = a.bytes;
    const std::size_t pos = rng() % damaged.size();
    damaged[pos] ^= static_cast<std::byte>(1u << (rng() % 8));
    out.assign(3, Event{});  // existing content must be kept as is
    const Status s = decoder.decode(damaged, out);
    if (s.is_ok()) {
      ASSERT_EQ(std::vector<Event>(out.begin() + 3, out.end()), events) << pos;
    } else {
      ++errors;
      ASSERT_EQ(out.size(), 3u) << pos;
    }
  }
  EXPECT_GT(errors, 490);
  // Truncated at every point, or with a trailing byte: an error, nothing appended.
  for (std::size_t cut = 0; cut < a.bytes.size(); cut += 7) {
    out.clear();
    EXPECT_FALSE(decoder.decode(std::span(a.bytes.data(), cut), out).is_ok()) << cut;
    EXPECT_TRUE(out.empty());
  }
  auto longer = a.bytes;
  longer.push_back(std::byte{0});
  EXPECT_FALSE(decoder.decode(longer, out).is_ok());
}

// Salvage: a damaged middle frame is dropped whole; every other frame's events come through exactly.
TEST(ArtifactDecoderResync, SkipsADamagedFrameAndContinues) {
  const auto events = generate_trace(5000, 8);
  const auto a = build_artifact(events, 1000, true);
  std::mt19937 rng(3);
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t frame = 1 + rng() % 3;  // frames 1..3 of 0..4
    const std::size_t begin = a.frame_offsets[frame], end = a.frame_offsets[frame + 1];
    auto damaged = a.bytes;
    const std::size_t pos = begin + rng() % (end - begin);
    damaged[pos] ^= static_cast<std::byte>(1u << (rng() % 8));
    MemorySource source(damaged);
    ArtifactDecoder decoder(source, "d.zst");
    std::vector<Event> out(333), all;
    int skips = 0;
    for (;;) {
      while (const std::size_t n = decoder.next(out)) all.insert(all.end(), out.begin(), out.begin() + n);
      if (decoder.status().is_ok()) break;
      std::uint64_t from = 0, to = 0;
      ++skips;
      ASSERT_NE(decoder.status().message().find("frame " + std::to_string(frame) + " at byte "), std::string::npos)
          << decoder.status().message();
      if (!decoder.resync(from, to)) break;
      ASSERT_GE(from, begin);
      ASSERT_LE(to, end) << "the next frame must not be lost";
    }
    if (skips == 0) {  // a flip zstd cannot see (e.g. an unused header bit): the same events
      ASSERT_EQ(all, events) << pos;
      continue;
    }
    ASSERT_EQ(skips, 1) << pos;
    std::vector<Event> expected(events.begin(), events.begin() + static_cast<std::ptrdiff_t>(frame * 1000));
    expected.insert(expected.end(), events.begin() + static_cast<std::ptrdiff_t>((frame + 1) * 1000), events.end());
    ASSERT_EQ(all, expected) << "flip at " << pos;
  }
}

TEST(ArtifactDecoderResync, GarbageBetweenFramesIsSkippedAndTheEndIsReported) {
  const auto events = generate_trace(300, 10);
  auto a = build_artifact(events, 100, false);
  std::vector<std::byte> bytes(a.bytes.begin(), a.bytes.begin() + static_cast<std::ptrdiff_t>(a.frame_offsets[1]));
  const std::size_t garbage_at = bytes.size();
  bytes.insert(bytes.end(), 50, std::byte{0x42});
  bytes.insert(bytes.end(), a.bytes.begin() + static_cast<std::ptrdiff_t>(a.frame_offsets[1]), a.bytes.end());
  bytes.insert(bytes.end(), 20, std::byte{0x17});  // trailing garbage
  MemorySource source(bytes);
  ArtifactDecoder decoder(source, "g.zst");
  std::vector<Event> out(1000), all;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> skipped;
  for (;;) {
    while (const std::size_t n = decoder.next(out)) all.insert(all.end(), out.begin(), out.begin() + n);
    if (decoder.status().is_ok()) break;
    std::uint64_t from = 0, to = 0;
    const bool found = decoder.resync(from, to);
    skipped.emplace_back(from, to);
    if (!found) break;
  }
  EXPECT_EQ(all, events);
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0], std::make_pair(std::uint64_t{garbage_at}, std::uint64_t{garbage_at + 50}));
  EXPECT_EQ(skipped[1].second, bytes.size());
  EXPECT_TRUE(decoder.status().is_ok());
}

}  // namespace
}  // namespace memtrack::codec
