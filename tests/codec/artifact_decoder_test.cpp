// The artifact decoder: exact on fixtures, round trips at frame boundaries, and on damaged input a prefix of
// the true events plus an error naming frame and offset; never a wrong event.
#include "memtrack/codec/artifact_decoder.h"

#include <gtest/gtest.h>
#include <zstd.h>

#include <random>

#include "common/fixtures.h"
#include "memtrack/codec/frame_compressor.h"
#include "memtrack/codec/msgpack_encoder.h"

namespace memtrack::codec {
namespace {

std::vector<Event> some_events(std::size_t n, std::uint32_t seed = 1) {
  std::mt19937_64 rng(seed);
  std::vector<Event> v;
  v.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto kind = static_cast<EventKind>(1 + rng() % 8);
    const std::uint64_t addr = 0x5555'0000'0000ull + (rng() % (1u << 20)) * 16;
    if (kind == EventKind::Realloc && (rng() & 1)) {
      v.push_back(make_realloc(1000 + static_cast<int>(rng() % 3), static_cast<int>(rng() % 9), i * 100, addr,
                               addr + 64, rng() % 5000));
    } else {
      v.push_back(make_event(kind, 1000, 7, i * 100, addr, kind == EventKind::Free ? 0 : rng() % 100000));
    }
  }
  return v;
}

std::vector<std::byte> encode_frames(const std::vector<Event>& events, std::size_t frame_events) {
  FrameSerializer serializer(frame_events);
  FrameCompressor compressor(kDefaultLevel);
  std::vector<std::byte> out, buf(FrameCompressor::bound(serializer.capacity_bytes()));
  std::size_t i = 0;
  do {
    const std::size_t n = std::min(frame_events, events.size() - i);
    Status s;
    const std::size_t size = compressor.compress(serializer.serialize(std::span(events.data() + i, n)), buf, s);
    EXPECT_TRUE(s.is_ok()) << s.message();
    out.insert(out.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(size));
    i += n;
  } while (i < events.size());
  return out;
}

struct Decoded {
  std::vector<Event> events;
  Status status;
  DecoderProgress progress;
};

Decoded decode(std::span<const std::byte> bytes, std::size_t block = 1000, DecoderLimits limits = {}) {
  MemorySource source(bytes);
  ArtifactDecoder decoder(source, "test.zst", limits);
  Decoded d;
  std::vector<Event> buf(block);
  while (std::size_t n = decoder.next(buf)) d.events.insert(d.events.end(), buf.begin(), buf.begin() + n);
  d.status = decoder.status();
  d.progress = decoder.progress();
  return d;
}

bool is_prefix(const std::vector<Event>& prefix, const std::vector<Event>& all) {
  return prefix.size() <= all.size() && std::equal(prefix.begin(), prefix.end(), all.begin());
}

TEST(ArtifactDecoder, ReadsTheOlderSingleStreamLayout) {
  const auto d = decode(testing::read_file(testing::data_path("events.single-stream.zst")));
  EXPECT_TRUE(d.status.is_ok()) << d.status.message();
  EXPECT_EQ(d.events, testing::read_raw_events(testing::data_path("events.raw")));
}

TEST(ArtifactDecoder, ReadsTheReferenceFramedArtifact) {
  const auto d = decode(testing::read_file(testing::data_path("realistic-140k.frames.zst")), 4096);
  EXPECT_TRUE(d.status.is_ok()) << d.status.message();
  EXPECT_EQ(d.progress.frames, 3u);
  EXPECT_EQ(d.events, testing::read_raw_events(testing::data_path("realistic-140k.raw")));
}

TEST(ArtifactDecoder, RoundTripsAtFrameBoundaries) {
  for (std::size_t n : {0u, 1u, 65535u, 65536u, 65537u}) {
    const auto events = some_events(n, static_cast<std::uint32_t>(n));
    const auto bytes = encode_frames(events, 65536);
    const auto d = decode(bytes, 777);
    EXPECT_TRUE(d.status.is_ok()) << n << ": " << d.status.message();
    EXPECT_EQ(d.events, events) << n;
    EXPECT_EQ(d.progress.frames, n == 0 ? 1u : (n + 65535) / 65536) << n;
    // Every frame declares its content size, as consumers that size buffers from it expect.
    EXPECT_NE(ZSTD_getFrameContentSize(bytes.data(), bytes.size()), ZSTD_CONTENTSIZE_UNKNOWN);
  }
}

TEST(ArtifactDecoder, EmptyInputWritesOneValidEmptyFrame) {
  const auto bytes = encode_frames({}, 65536);
  EXPECT_EQ(ZSTD_findFrameCompressedSize(bytes.data(), bytes.size()), bytes.size());
  EXPECT_EQ(ZSTD_getFrameContentSize(bytes.data(), bytes.size()), 0u);
  const auto d = decode(bytes);
  EXPECT_TRUE(d.status.is_ok());
  EXPECT_TRUE(d.events.empty());
}

TEST(ArtifactDecoder, AnEmptyFileIsAnError) {
  const auto d = decode({});
  EXPECT_EQ(d.status.code(), Errc::truncated);
  EXPECT_EQ(d.status.message(), "test.zst: frame 0 at byte 0: empty input: no zstd frame");
}

TEST(ArtifactDecoder, SkipsSkippableFramesAnywhere) {
  const auto events = some_events(300);
  auto frames = encode_frames(events, 100);
  const std::vector<std::byte> skippable = {std::byte{0x5e}, std::byte{0x2a}, std::byte{0x4d}, std::byte{0x18},
                                            std::byte{3},    std::byte{0},    std::byte{0},    std::byte{0},
                                            std::byte{1},    std::byte{2},    std::byte{3}};
  std::vector<std::byte> bytes = skippable;
  bytes.insert(bytes.end(), frames.begin(), frames.end());
  bytes.insert(bytes.end(), skippable.begin(), skippable.end());
  const auto d = decode(bytes);
  EXPECT_TRUE(d.status.is_ok()) << d.status.message();
  EXPECT_EQ(d.events, events);
  EXPECT_EQ(d.progress.skippable_frames, 2u);
}

TEST(ArtifactDecoder, EveryTruncationGivesWholeFramesThenAnError) {
  const auto events = some_events(250);
  const auto bytes = encode_frames(events, 100);  // frames of 100, 100, 50 events
  const std::size_t first_end = ZSTD_findFrameCompressedSize(bytes.data(), bytes.size());
  const std::size_t second_end =
      first_end + ZSTD_findFrameCompressedSize(bytes.data() + first_end, bytes.size() - first_end);
  for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
    const auto d = decode(std::span(bytes.data(), cut), 64);
    if (cut == first_end || cut == second_end) {  // a cut between frames leaves a valid, shorter artifact
      ASSERT_TRUE(d.status.is_ok()) << d.status.message();
      ASSERT_EQ(d.events.size(), cut == first_end ? 100u : 200u);
      continue;
    }
    ASSERT_FALSE(d.status.is_ok()) << "cut at " << cut;
    ASSERT_TRUE(is_prefix(d.events, events)) << "cut at " << cut;
    ASSERT_EQ(d.events.size() % 100, 0u) << "cut at " << cut
                                         << ": a frame's events were yielded before it was verified";
    ASSERT_EQ(d.status.message().rfind("test.zst: frame " + std::to_string(d.events.size() / 100) + " at byte ", 0), 0u)
        << d.status.message();
  }
}

TEST(ArtifactDecoder, RandomCorruptionNeverYieldsAWrongEvent) {
  const auto events = some_events(1000);
  const auto bytes = encode_frames(events, 256);
  std::mt19937 rng(42);
  int errors = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    auto damaged = bytes;
    const std::size_t pos = rng() % damaged.size();
    damaged[pos] ^= static_cast<std::byte>(1u << (rng() % 8));
    const auto d = decode(damaged, 100);
    ASSERT_TRUE(is_prefix(d.events, events)) << "flip at byte " << pos;
    if (!d.status.is_ok()) {
      ++errors;
    } else {
      ASSERT_EQ(d.events.size(), events.size()) << "flip at byte " << pos << " lost events without an error";
    }
  }
  EXPECT_GT(errors, 2900);  // nearly every flip is detected (checksums); the rest must decode to the same events
}

TEST(ArtifactDecoder, GarbageBetweenFramesNamesTheFrameAndOffset) {
  const auto events = some_events(200);
  auto first = encode_frames(std::vector<Event>(events.begin(), events.begin() + 100), 100);
  const auto second = encode_frames(std::vector<Event>(events.begin() + 100, events.end()), 100);
  const std::size_t garbage_at = first.size();
  first.push_back(std::byte{0x42});
  first.insert(first.end(), second.begin(), second.end());
  const auto d = decode(first);
  EXPECT_EQ(d.events, std::vector<Event>(events.begin(), events.begin() + 100));
  EXPECT_EQ(d.status.code(), Errc::bad_zstd);
  EXPECT_EQ(
      d.status.message().rfind("test.zst: frame 1 at byte " + std::to_string(garbage_at) + ": not a zstd frame", 0), 0u)
      << d.status.message();
}

TEST(ArtifactDecoder, MalformedMsgpackInsideAValidFrameIsReported) {
  const std::vector<std::byte> junk(10, std::byte{0xc1});  // 0xc1 is never valid msgpack
  std::vector<std::byte> frame(ZSTD_compressBound(junk.size()));
  frame.resize(ZSTD_compress(frame.data(), frame.size(), junk.data(), junk.size(), 1));
  const auto d = decode(frame);
  EXPECT_EQ(d.status.code(), Errc::bad_msgpack);
  EXPECT_NE(d.status.message().find("frame 0 at byte 0: event at byte 0 of the frame's content"), std::string::npos)
      << d.status.message();
}

TEST(ArtifactDecoder, AHugeWindowIsRefusedBeforeAllocating) {
  // Frame header: magic, descriptor 0x00 (window descriptor present, no content size), window log 31.
  const std::vector<std::byte> frame = {std::byte{0x28}, std::byte{0xb5}, std::byte{0x2f},
                                        std::byte{0xfd}, std::byte{0x00}, std::byte{0xa8},
                                        std::byte{0x01}, std::byte{0x00}, std::byte{0x00}};
  const auto d = decode(frame);
  EXPECT_EQ(d.status.code(), Errc::too_large) << d.status.message();
  EXPECT_NE(d.status.message().find("window larger than"), std::string::npos) << d.status.message();
}

TEST(ArtifactDecoder, AnOversizedEventIsAnErrorNotABuffer) {
  // One map whose unknown key declares a 1 MiB string and holds 100 KiB of it: over a 16 KiB event limit,
  // the decoder stops instead of buffering towards the declared size.
  std::vector<std::byte> mp = {std::byte{0x81}, std::byte{0xa1}, std::byte{'x'},  std::byte{0xdb},
                               std::byte{0x00}, std::byte{0x10}, std::byte{0x00}, std::byte{0x00}};
  mp.resize(mp.size() + (100 << 10), std::byte{'a'});
  std::vector<std::byte> frame(ZSTD_compressBound(mp.size()));
  frame.resize(ZSTD_compress(frame.data(), frame.size(), mp.data(), mp.size(), 1));
  DecoderLimits limits;
  limits.max_event_bytes = 16 << 10;
  const auto d = decode(frame, 10, limits);
  EXPECT_EQ(d.status.code(), Errc::too_large) << d.status.message();
}

}  // namespace
}  // namespace memtrack::codec
