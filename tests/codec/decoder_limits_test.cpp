// Bounded decoder memory on hostile input (issue 7): a few hundred bytes to a few KB of crafted headers or
// compressed data must not make ArtifactDecoder allocate more than a few tens of MiB. Each test measures
// the peak heap of one decode (memtrack/heap_counter.h counts every allocation in the process, zstd's
// included) and asserts a bound, and that the decode ends as it should (an error, or the right count).
//
// Where the bounds come from (default DecoderLimits): the decoder's own buffers are ~0.4 MiB (128 KiB of
// input, 256 KiB of msgpack) plus zstd's DCtx. A zstd window is capped at 2^24 = 16 MiB. A frame with a
// declared content size of at most 16 MiB is decompressed whole into the decoder's buffer (zstd keeps no
// window of its own for it) and verified before it is parsed: its events take 48 B per event of at least
// 38 B of msgpack, at most 2^19 events after vector growth (24 MiB, 36 MiB while growing).
// Worst case: 16 + 36 + 0.5 = ~53 MiB; the tests allow 64 MiB for that case and much less elsewhere.
#include <gtest/gtest.h>
#include <zstd.h>

#include <cstring>
#include <string>
#include <vector>

#include "memtrack/heap_counter.h"
#include "memtrack/codec/artifact_decoder.h"

namespace memtrack::codec {
namespace {

constexpr std::int64_t kMiB = 1 << 20;

struct Outcome {
  std::uint64_t events = 0;
  Status status;
  std::int64_t peak_heap = 0;
};

// Decodes without keeping the events (a consumer that streams them), measuring the peak heap.
Outcome decode_measured(const std::vector<std::byte>& bytes) {
  Outcome o;
  std::vector<Event> block(4096);
  heap_counter::start();
  {
    MemorySource source(bytes);
    ArtifactDecoder decoder(source, "hostile.zst");
    while (std::size_t n = decoder.next(block)) o.events += n;
    o.status = decoder.status();
  }
  o.peak_heap = heap_counter::stop().peak_bytes;
  std::printf("  %zu bytes of input: peak heap %.2f MiB, %llu events, status: %s\n", bytes.size(),
              static_cast<double>(o.peak_heap) / kMiB, static_cast<unsigned long long>(o.events),
              o.status.is_ok() ? "ok" : o.status.message().c_str());
  return o;
}

std::vector<std::byte> from_hex(const std::string& hex) {
  std::vector<std::byte> b;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    b.push_back(static_cast<std::byte>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return b;
}

// One zstd frame of `content`, with its content size in the header (and so single-segment: window = content
// size) when `with_size`, else a streaming frame with a 2^window_log window.
std::vector<std::byte> compress(const std::vector<std::byte>& content, bool with_size, int window_log = 24) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 3);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, window_log);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, with_size ? 1 : 0);
  std::vector<std::byte> out(ZSTD_compressBound(content.size()));
  ZSTD_outBuffer output{out.data(), out.size(), 0};
  ZSTD_inBuffer input{content.data(), content.size(), 0};
  if (with_size) ZSTD_CCtx_setPledgedSrcSize(cctx, content.size());
  const size_t r = ZSTD_compressStream2(cctx, &output, &input, ZSTD_e_end);
  EXPECT_EQ(r, 0u) << ZSTD_getErrorName(r);
  ZSTD_freeCCtx(cctx);
  out.resize(output.pos);
  return out;
}

// The smallest event msgpack allows: a Free with every integer a positive fixint (38 bytes). The most
// events per byte of content, so the most memory per byte of a frame held for verification.
std::vector<std::byte> smallest_events(std::size_t content_bytes) {
  const std::vector<std::byte> e =
      from_hex("85a370696400a374696400a974696d657374616d7000a46164647200a474797065a446726565");
  EXPECT_EQ(e.size(), 38u);
  std::vector<std::byte> out;
  out.reserve(content_bytes);
  while (out.size() + e.size() <= content_bytes) out.insert(out.end(), e.begin(), e.end());
  return out;
}

TEST(DecoderLimits, AFrameHeaderDeclaringAHugeWindowAllocatesNothingBig) {
  // Window descriptor 0xa8: window log 31 (2 GiB), no content size.
  const auto o = decode_measured(from_hex("28b52ffd00a8010000"));
  EXPECT_EQ(o.status.code(), Errc::too_large) << o.status.message();
  EXPECT_LT(o.peak_heap, 2 * kMiB);
}

TEST(DecoderLimits, AFrameHeaderDeclaringAHugeContentSizeAllocatesNothingBig) {
  // Single-segment frame (descriptor 0xe0: 8-byte content size) declaring 2^62 bytes: its window would be
  // the content size. Then a frame with a small window declaring 2^40 bytes, which is streamed and truncated.
  auto o = decode_measured(from_hex("28b52ffde0000000000000004001000000"));
  EXPECT_FALSE(o.status.is_ok());
  EXPECT_LT(o.peak_heap, 2 * kMiB);
  o =
      decode_measured(from_hex("28b52ffdc000"
                               "0000000000010000"
                               "010000"));
  EXPECT_FALSE(o.status.is_ok());
  EXPECT_LT(o.peak_heap, 2 * kMiB);
}

// Regression (found writing the test above): an empty frame declaring 2^40 bytes of content ended cleanly,
// because zstd compares the declared and the produced size only below 4 GiB. Any mismatch is an error.
TEST(DecoderLimits, AFrameWhoseContentDiffersFromItsDeclaredSizeIsAnError) {
  for (const char* fcs : {"0000000000010000", "0500000000000000"}) {
    const auto o = decode_measured(from_hex(std::string("28b52ffdc000") + fcs + "010000"));
    EXPECT_EQ(o.status.code(), Errc::bad_zstd) << fcs;
    EXPECT_EQ(o.status.message().rfind("hostile.zst: frame 0 at byte 0: ", 0), 0u) << o.status.message();
  }
}

TEST(DecoderLimits, MsgpackHeadersDeclaringBillionsAllocateNothingBig) {
  // Inside a valid frame: map32 of 4 billion entries, a str32 key of 4 GiB, an array32 of 4 billion under
  // an unknown key, a bin32 of 4 GiB, each followed by 100 KiB of filler, so the decoder sees an event
  // larger than max_event_bytes and stops instead of waiting for the declared size.
  for (const char* header : {"dfffffffff", "81dbffffffff", "81a178ddffffffff", "81a178c6ffffffff"}) {
    auto content = from_hex(header);
    content.resize(content.size() + (100 << 10), std::byte{0x01});
    const auto o = decode_measured(compress(content, true));
    EXPECT_FALSE(o.status.is_ok()) << header;
    EXPECT_LT(o.peak_heap, 4 * kMiB) << header;
  }
}

TEST(DecoderLimits, DeepNestingUnderAnUnknownKeyAllocatesNothingBig) {
  // An unknown key whose value is 60,000 nested one-element arrays: msgpack-c's parser keeps a stack entry
  // per level; the event limit (64 KiB) bounds the depth, so the stack stays small.
  auto content = from_hex("81a178");
  content.resize(content.size() + 60000, std::byte{0x91});
  content.push_back(std::byte{0xc0});
  auto o = decode_measured(compress(content, true));
  EXPECT_EQ(o.status.code(), Errc::bad_msgpack) << o.status.message();  // a map without the required keys
  EXPECT_LT(o.peak_heap, 4 * kMiB);
  // Deeper than the event limit: an error, not a deeper stack.
  content.resize(3, std::byte{0});
  content.resize(3 + (200 << 10), std::byte{0x91});
  o = decode_measured(compress(content, true));
  EXPECT_EQ(o.status.code(), Errc::too_large) << o.status.message();
  EXPECT_LT(o.peak_heap, 4 * kMiB);
}

TEST(DecoderLimits, AZipBombFrameHeldForVerificationStaysBounded) {
  // 16 MiB of the smallest events compress to a few KB; the frame declares its size, so its events are held
  // until the checksum is verified. This is the decoder's worst case (see the top of this file).
  const auto frame = compress(smallest_events(16 << 20), true);
  ASSERT_LT(frame.size(), 8u << 10);
  const auto o = decode_measured(frame);
  EXPECT_TRUE(o.status.is_ok()) << o.status.message();
  EXPECT_EQ(o.events, (16u << 20) / 38);
  EXPECT_LT(o.peak_heap, 64 * kMiB);
}

// Regression (artifact_decode_fuzz): held events and released events lived in two vectors, so the second
// of two such frames grew its events beside the first frame's dead capacity: 2.9 KB of input reached 73 MB
// of heap (~79 MB with these frames). One vector now; the second frame reuses the first one's capacity.
TEST(DecoderLimits, TwoZipBombFramesCostNoMoreThanOne) {
  const auto frame = compress(smallest_events(16 << 20), true);
  const auto one = decode_measured(frame);
  auto two_frames = frame;
  two_frames.insert(two_frames.end(), frame.begin(), frame.end());
  const auto two = decode_measured(two_frames);
  EXPECT_TRUE(two.status.is_ok()) << two.status.message();
  EXPECT_EQ(two.events, 2 * one.events);
  EXPECT_LT(two.peak_heap, 64 * kMiB);
  EXPECT_LT(two.peak_heap, one.peak_heap + kMiB);
}

TEST(DecoderLimits, AStreamedZipBombCostsOneWindow) {
  // No content size (the older single-stream layout): events are streamed, so only the window (capped at
  // 16 MiB) and the decoder's buffers remain.
  const auto o = decode_measured(compress(smallest_events(16 << 20), false));
  EXPECT_TRUE(o.status.is_ok()) << o.status.message();
  EXPECT_LT(o.peak_heap, 20 * kMiB);
}

}  // namespace
}  // namespace memtrack::codec
