// The compact frame content (docs/FORMAT.md, "Compact data frames"): every event decodes exactly as the
// msgpack content of the same events decodes, on every kind and on hostile values; bad content is one error
// naming the byte offset, never a crash; the sequential and the indexed readers read compact artifacts.
#include "memtrack/codec/compact.h"

#include <gtest/gtest.h>
#include <zstd.h>

#include <algorithm>
#include <climits>
#include <random>
#include <string>
#include <tuple>

#include "common/artifacts.h"
#include "common/fixtures.h"
#include "memtrack/codec/artifact_decoder.h"
#include "memtrack/codec/frame_compressor.h"
#include "memtrack/codec/frame_decoder.h"
#include "memtrack/codec/msgpack_decoder.h"
#include "memtrack/codec/msgpack_encoder.h"

namespace memtrack::codec {
namespace {

using testing::build_artifact;
using testing::generate_trace;

// What the compatible encoding gives back for `events`: msgpack out, msgpack in.
std::vector<Event> through_msgpack(std::span<const Event> events) {
  FrameSerializer serializer(std::max<std::size_t>(events.size(), 1));
  const auto bytes = serializer.serialize(events);
  std::vector<Event> out;
  std::size_t pos = 0;
  std::string error;
  while (pos < bytes.size()) {
    Event e;
    EXPECT_EQ(parse_event(bytes.data(), bytes.size(), pos, e, error), ParseResult::ok) << error;
    out.push_back(e);
  }
  return out;
}

std::vector<Event> through_compact(std::span<const Event> events) {
  CompactFrameEncoder encoder(std::max<std::size_t>(events.size(), 1));
  const auto bytes = encoder.encode(events);
  std::vector<Event> out;
  if (events.empty()) {
    EXPECT_TRUE(bytes.empty());
    return out;
  }
  EXPECT_TRUE(is_compact_content(bytes));
  EXPECT_LE(bytes.size(), CompactFrameEncoder::output_bound(events.size()));
  CompactFrameDecoder decoder;
  const Status s = decoder.decode(bytes, out);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return out;
}

void expect_lossless(std::span<const Event> events) {
  const auto expected = through_msgpack(events);
  const auto got = through_compact(events);
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], expected[i]) << "event " << i;
}

std::vector<Event> every_kind() {
  return {make_event(EventKind::Malloc, 1, 2, 10, 0x1000, 16),
          make_event(EventKind::Calloc, 1, 2, 11, 0x2000, 32),
          make_realloc(1, 2, 12, 0x3000, 0x1000, 64),
          make_event(EventKind::Realloc, 1, 2, 13, 0x4000, 8),  // realloc(NULL, n): no old_addr
          make_event(EventKind::AlignedAlloc, 1, 3, 14, 0x5000, 4096),
          make_event(EventKind::Free, 1, 2, 15, 0x3000),
          make_event(EventKind::Mmap, 1, 2, 16, 0x7f0000000000, 1 << 20),
          make_event(EventKind::Munmap, 1, 2, 17, 0x7f0000000000, 1 << 20),
          make_event(EventKind::Brk, 1, 2, 18, 0x5555000, 4096),
          make_event(EventKind::Free, 1, 3, 19, 0x5000)};
}

TEST(CompactFrame, EveryKindRoundTrips) {
  const auto events = every_kind();
  EXPECT_EQ(through_compact(events), events);
  expect_lossless(events);
}

TEST(CompactFrame, HostileValuesRoundTrip) {
  const std::uint64_t u64[] = {0, 1, UINT64_MAX, UINT64_MAX - 1, 1ull << 63, (1ull << 63) - 1, 1ull << 62, 0x7f};
  const std::int32_t i32[] = {INT32_MIN, INT32_MAX, 0, -1, 1, INT32_MIN + 1};
  std::vector<Event> events;
  for (const std::uint64_t a : u64) {
    for (const std::uint64_t b : u64) {
      for (const std::int32_t pid : i32) {
        const std::int32_t tid = ~pid;  // every i32 value has one (-INT32_MIN has none)
        events.push_back(make_event(EventKind::Malloc, pid, tid, a, b, a ^ b));
        events.push_back(make_realloc(pid, tid, b, a, b, a));
        events.push_back(make_event(EventKind::Free, pid, tid, a, a));
        events.push_back(make_event(EventKind::Munmap, tid, pid, b, b, UINT64_MAX));
      }
    }
  }
  EXPECT_EQ(through_compact(events), events);
  expect_lossless(events);
}

TEST(CompactFrame, SixtyFourThousandDistinctThreadsInOneFrame) {
  std::vector<Event> events;
  for (std::size_t i = 0; i < kMaxCompactFrameEvents; ++i) {
    const auto tid = static_cast<std::int32_t>(INT32_MAX - i);
    events.push_back(
        make_event(i % 2 ? EventKind::Free : EventKind::Malloc, 7, tid, 1000 - i, 0x1000 + i * 16, i % 2 ? 0 : i));
  }
  EXPECT_EQ(through_compact(events), events);
}

TEST(CompactFrame, WhatMsgpackDropsCompactDropsToo) {
  Event free_with_size = make_event(EventKind::Free, 1, 1, 1, 0x10, 99);
  Event malloc_with_old = make_event(EventKind::Malloc, 1, 1, 2, 0x20, 8);
  malloc_with_old.old_addr = 0x30;
  malloc_with_old.flags = kFlagHasOldAddr;
  Event with_stack = make_event(EventKind::Malloc, 1, 1, 3, 0x40, 8);
  with_stack.stack = 42;
  const std::vector<Event> events = {free_with_size, malloc_with_old, with_stack};
  expect_lossless(events);
}

TEST(CompactFrame, GeneratedTracesRoundTripAndReferencesAreUsed) {
  for (std::uint32_t seed = 1; seed <= 5; ++seed) {
    const auto events = generate_trace(20000, seed);
    expect_lossless(events);
  }
  // A churn: each thread frees what it allocated a few events before; the references make most addresses
  // one byte, so the content is well under msgpack's.
  std::vector<Event> churn;
  std::uint64_t ts = 1'000'000'000;
  for (int i = 0; i < 30000; ++i) {
    const std::uint64_t addr = 0x55550000 + static_cast<std::uint64_t>(i % 64) * 48;
    churn.push_back(make_event(EventKind::Malloc, 9, 10 + i % 2, ts += 87, addr, 32 + i % 3));
    churn.push_back(make_event(EventKind::Free, 9, 10 + i % 2, ts += 55, addr));
  }
  expect_lossless(churn);
  CompactFrameEncoder encoder(churn.size());
  FrameSerializer serializer(churn.size());
  EXPECT_LT(encoder.encode(churn).size() * 4, serializer.serialize(churn).size());
}

// The zstd blocks of one frame (its header, then 3-byte block headers: last flag, type, size).
std::size_t zstd_blocks(std::span<const std::byte> frame) {
  // RFC 8878 3.1.1: the magic, the descriptor, a window byte unless single-segment, the dictionary id, the
  // content size.
  EXPECT_GE(frame.size(), 6u);
  const auto descriptor = std::to_integer<unsigned>(frame[4]);
  const bool single = (descriptor & 0x20) != 0;
  const std::size_t dictionary[] = {0, 1, 2, 4};
  const std::size_t content_size[] = {single ? 1u : 0u, 2, 4, 8};
  std::size_t at = 5 + (single ? 0 : 1) + dictionary[descriptor & 3] + content_size[descriptor >> 6];
  std::size_t blocks = 0;
  for (bool last = false; !last;) {
    EXPECT_LE(at + 3, frame.size());
    if (at + 3 > frame.size()) return blocks;
    const auto b = std::to_integer<std::uint32_t>(frame[at]) | std::to_integer<std::uint32_t>(frame[at + 1]) << 8 |
                   std::to_integer<std::uint32_t>(frame[at + 2]) << 16;
    last = (b & 1) != 0;
    const unsigned type = (b >> 1) & 3;
    at += 3 + (type == 1 ? 1 : b >> 3);  // an RLE block holds its one byte
    ++blocks;
  }
  return blocks;
}

TEST(CompactFrame, ColumnsEndZstdBlocksAndTheFrameDecompressesToTheSameContent) {
  const auto events = generate_trace(20000, 3);
  CompactFrameEncoder encoder(events.size());
  const auto content = encoder.encode(events);
  const std::vector<std::size_t> ends(encoder.block_ends().begin(), encoder.block_ends().end());
  ASSERT_GE(ends.size(), 8u);  // tokens, dictionary, threads, timestamps, sizes, addresses at least
  ASSERT_LE(ends.size(), kMaxCompactBlockEnds);
  for (std::size_t i = 0; i < ends.size(); ++i) {
    EXPECT_LT(ends[i], content.size());
    if (i != 0) {
      EXPECT_LT(ends[i - 1], ends[i]);
    }
  }
  // The tokens end first: after the magic, the version, N (3 varint bytes for 20,000) and N tokens.
  EXPECT_EQ(ends[0], 4u + 1u + 3u + events.size());

  FrameCompressor compressor(1);
  std::vector<std::byte> blocked(FrameCompressor::bound(content.size(), ends.size()));
  std::vector<std::byte> whole(FrameCompressor::bound(content.size()));
  Status s;
  blocked.resize(compressor.compress(content, ends, blocked, s));
  ASSERT_TRUE(s.is_ok()) << s.message();
  whole.resize(compressor.compress(content, whole, s));
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_NE(blocked, whole);
  EXPECT_GE(zstd_blocks(blocked), ends.size() + 1);
  EXPECT_LT(zstd_blocks(whole), ends.size());
  // The same content, with its size in the header, and the checksum verified.
  EXPECT_EQ(ZSTD_getFrameContentSize(blocked.data(), blocked.size()), content.size());
  std::vector<std::byte> back(content.size());
  EXPECT_EQ(ZSTD_decompress(back.data(), back.size(), blocked.data(), blocked.size()), content.size());
  EXPECT_TRUE(std::equal(back.begin(), back.end(), content.begin()));
  // No block ends: compress()'s own bytes.
  std::vector<std::byte> none(FrameCompressor::bound(content.size()));
  none.resize(compressor.compress(content, std::span<const std::size_t>{}, none, s));
  EXPECT_EQ(none, whole);
  // A buffer below the bound is an error, not an overrun.
  std::vector<std::byte> small(16);
  EXPECT_EQ(compressor.compress(content, ends, small, s), 0u);
  EXPECT_EQ(s.code(), Errc::bad_zstd);
  // And the context is usable again afterwards.
  Status again;
  std::vector<std::byte> after(FrameCompressor::bound(content.size(), ends.size()));
  after.resize(compressor.compress(content, ends, after, again));
  EXPECT_TRUE(again.is_ok());
  EXPECT_EQ(after, blocked);
}

std::vector<Event> walk(const std::vector<std::byte>& bytes, Status& status);

std::vector<std::byte> content_of(std::span<const Event> events) {
  CompactFrameEncoder encoder(events.size());
  const auto c = encoder.encode(events);
  return {c.begin(), c.end()};
}

Status decode_bytes(const std::vector<std::byte>& bytes, std::vector<Event>& out) {
  CompactFrameDecoder decoder;
  return decoder.decode(bytes, out);
}

TEST(CompactFrame, EveryTruncationIsAnErrorAndAppendsNothing) {
  const auto events = every_kind();
  const auto bytes = content_of(events);
  for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
    std::vector<std::byte> b(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut));
    std::vector<Event> out(1);
    const Status s = decode_bytes(b, out);
    ASSERT_FALSE(s.is_ok()) << cut;
    EXPECT_EQ(out.size(), 1u);
    EXPECT_NE(s.message().find("compact content at byte "), std::string::npos) << s.message();
  }
}

TEST(CompactFrame, NamedDamageIsRefusedWithItsOffset) {
  const std::vector<Event> events = {make_event(EventKind::Malloc, 1, 2, 10, 0x1000, 16),
                                     make_event(EventKind::Free, 1, 2, 11, 0x1000)};
  const auto good = content_of(events);
  // magic 0-3, version 5 (byte 4), n 5, tokens 6-7 (a Malloc by delta, a Free by live rank), d 8, pid tid 9-10,
  // threads 11-12, the 9 timestamp groups' modes 13-21, the timestamps 22-23, the size's low byte 24 and high
  // part 25, the live column (length 26, rank 0 at 27), the class and release columns (lengths 28, 29: empty),
  // the deltas (length 30, version 5's delta of 0x1000 at 31-32: zigzag64(0x100) << 1 = 0x400), version 5's
  // remainders (length 33: empty) and stacks flag 34 (0: no stacks).
  // The timestamps are grouped (version 3 on): the Free's (group 3 * 0 + 2, after an allocation) before the
  // Malloc's (group 3 * 2 + 0, the first event); both groups hold short gaps (version 4: mode 1), the gap
  // itself in one byte (10 from 0, then 1).
  const std::vector<std::uint8_t> expected = {0xc1, 0x6d, 0x74, 0x63, 5, 2, 0x01, 0x22, 1, 2,    4,
                                              0,    0,    0,    0,    1, 0, 0,    0,    1, 0,    0,  // modes
                                              0x01, 0x0a, 0x10, 0,    1, 0, 0,    0,    2, 0x80, 0x08, 0, 0};
  ASSERT_EQ(good.size(), expected.size());
  for (std::size_t i = 0; i < good.size(); ++i) EXPECT_EQ(static_cast<std::uint8_t>(good[i]), expected[i]) << i;
  auto check = [&](std::size_t at, std::uint8_t value, const std::string& what, Errc code = Errc::bad_compact) {
    auto b = good;
    b[at] = std::byte{value};
    std::vector<Event> out;
    const Status s = decode_bytes(b, out);
    EXPECT_EQ(s.code(), code) << what << ": " << s.message();
    EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
    EXPECT_TRUE(out.empty());
  };
  check(4, 6, "at byte 4: format version 6 (this reader knows 1 to 5)");
  check(4, 0, "at byte 4: format version 0 (this reader knows 1 to 5)");
  check(6, 9, "at byte 6: event 0: bad token 9");
  check(6, 0x11, "bad token 17");   // old_addr flag on a Malloc
  check(6, 0x21, "bad token 33");   // a release mode on an event without a release address
  check(7, 0x62, "bad token 98");   // an allocation mode on a Free
  check(6, 0xC1, "bad token 193");  // "the event's old_addr" without one
  check(8, 3, "at byte 8: a dictionary of 3 threads for 2 events");
  check(12, 1, "event 1: thread 1 of 1");
  check(15, 2, "at byte 15: timestamp group 2: mode 2 (0 or 1)");
  // An escaped short gap needs an escaped low byte and a high part, which the content does not have.
  check(22, 0xFF, "the content ends", Errc::truncated);
  check(27, 1, "at byte 27: event 1: names its thread's live allocation 1, which it does not have");
  check(27, 0xFF, "the content ends inside an address column", Errc::truncated);             // a byte value's escape
  check(6, 0x41, "at byte 29: the content ends inside an address column", Errc::truncated);  // class, empty
  check(30, 5, "an address column of 5 bytes in 4", Errc::truncated);
  check(31, 0x81, "at byte 34: event 0: the content ends inside the deltas' remainders", Errc::truncated);
  check(34, 2, "at byte 34: stacks flag 2 (0 or 1)");
  check(34, 1, "the content ends inside the stacks' first event", Errc::truncated);
  auto longer = good;
  longer.push_back(std::byte{0});
  std::vector<Event> out;
  EXPECT_NE(decode_bytes(longer, out).message().find("at byte 35: 1 bytes after the last column"), std::string::npos);
  auto unread = good;  // a live column of two ranks for one release
  unread[26] = std::byte{2};
  unread.insert(unread.begin() + 28, std::byte{0});
  EXPECT_NE(decode_bytes(unread, out).message().find("at byte 28: 1 bytes after the last value of address column 0"),
            std::string::npos)
      << decode_bytes(unread, out).message();
  auto many = good;
  many[5] = std::byte{0x81};  // 129 events, in a varint of 2 bytes: more than the bytes left
  many.insert(many.begin() + 6, std::byte{0x01});
  EXPECT_EQ(decode_bytes(many, out).code(), Errc::truncated);
}

// The byte offset of a content's 9 timestamp modes (version 4 on): after the magic, version, N, the tokens,
// a one-entry dictionary (a pid and tid below 64) and N one-byte thread indices.
std::size_t modes_at(std::size_t n) { return 5 + (n < 128 ? 1 : n < 16384 ? 2 : 3) + n + 1 + 2 + n; }

TEST(CompactFrame, ShortGapGroupsEscapeTheirLongGapsAndLongGapGroupsStaySplit) {
  // Malloc/Free pairs of one thread: every Free after a Malloc (group 3 * 0 + 2), every Malloc after a Free
  // (group 3 * 2 + 0, the first one too). The Frees' gaps are mostly below 255 (short gaps), with escapes at
  // 255, 256, 2^63 and a step back (modulo 2^64); the Mallocs' gaps are all 1000 or more (split).
  const std::uint64_t escaped[] = {255, 256, 1ull << 63, UINT64_MAX - 4};  // UINT64_MAX - 4: 5 back
  std::vector<Event> events;
  std::vector<std::uint64_t> free_gaps;
  for (int i = 0; i < 40; ++i) free_gaps.push_back(static_cast<std::uint64_t>(i % 5 == 0 ? 254 : i % 7));
  for (std::size_t j = 0; j < std::size(escaped); ++j) free_gaps[3 + 9 * j] = escaped[j];
  std::uint64_t ts = 0;
  for (std::size_t i = 0; i < free_gaps.size(); ++i) {
    const std::uint64_t addr = 0x10000 + i * 0x100;
    events.push_back(make_event(EventKind::Malloc, 1, 2, ts += 1000 + i * 977, addr, 16 + i));
    events.push_back(make_event(EventKind::Free, 1, 2, ts += free_gaps[i], addr));
  }
  EXPECT_EQ(through_compact(events), events);
  expect_lossless(events);

  const auto content = content_of(events);
  const std::size_t m = modes_at(events.size());
  ASSERT_EQ(static_cast<std::uint8_t>(content[4]), 5);
  for (unsigned g = 0; g < 9; ++g) {
    EXPECT_EQ(static_cast<std::uint8_t>(content[m + g]), g == 2 ? 1 : 0) << "group " << g;
  }
  // Group 2's first bytes come first (groups 0 and 1 are empty): the Frees' gaps, 255 for the escaped ones.
  const std::byte* const first = content.data() + m + 9;
  std::size_t escapes = 0;
  for (std::size_t i = 0; i < free_gaps.size(); ++i) {
    const std::uint64_t gap = events[2 * i + 1].timestamp - events[2 * i].timestamp;
    const auto b = static_cast<std::uint8_t>(first[i]);
    if (gap < 255) {
      EXPECT_EQ(b, gap) << "free " << i;
    } else {
      EXPECT_EQ(b, 255) << "free " << i;
      ++escapes;
    }
  }
  EXPECT_EQ(escapes, std::size(escaped));
  // Then group 6's: the Mallocs' low bytes of zigzag64(gap), split.
  for (std::size_t i = 1; i < free_gaps.size(); ++i) {
    const std::uint64_t gap = events[2 * i].timestamp - events[2 * i - 1].timestamp;
    EXPECT_EQ(static_cast<std::uint8_t>(first[free_gaps.size() + i]), static_cast<std::uint8_t>(gap << 1)) << i;
  }
  // The writer's threshold (docs/FORMAT.md): a group of 40 gaps holds short gaps from 13 below 255 on
  // (16 * 13 >= 5 * 40), split values below that.
  for (const std::size_t short_ones : {13u, 12u}) {
    std::vector<Event> mixed;
    ts = 0;
    for (std::size_t i = 0; i < 40; ++i) {
      mixed.push_back(make_event(EventKind::Malloc, 1, 2, ts += 1000, 0x10000 + i * 0x100, 16));
      mixed.push_back(make_event(EventKind::Free, 1, 2, ts += i < short_ones ? 7 : 300, 0x10000 + i * 0x100));
    }
    EXPECT_EQ(through_compact(mixed), mixed);
    const auto c = content_of(mixed);
    EXPECT_EQ(static_cast<std::uint8_t>(c[m + 2]), short_ones == 13 ? 1 : 0) << short_ones;
    EXPECT_EQ(static_cast<std::uint8_t>(c[m + 6]), 0) << short_ones;
  }
}

TEST(CompactFrame, HostileTimestampsRoundTripInShortGapGroups) {
  // Every group short (3 gaps in 4 below 255), the fourth gap hostile: the extremes of u64, steps back, the
  // wrap through 2^64. Kinds of all three classes, so that all 9 groups are used.
  const std::uint64_t hostile[] = {UINT64_MAX, 0,    1ull << 63,       (1ull << 63) - 1, (1ull << 63) + 1,
                                   255,        256,  UINT64_MAX - 254, 1ull << 56,       (1ull << 56) - 1,
                                   65535,      65536};
  const EventKind kinds[] = {EventKind::Malloc, EventKind::Free, EventKind::Realloc};
  std::vector<Event> events;
  std::uint64_t ts = UINT64_MAX - 100;
  std::size_t h = 0;
  for (int round = 0; round < 60; ++round) {
    for (const EventKind a : kinds) {
      for (const EventKind b : kinds) {
        const std::uint64_t gap = round % 4 == 3 ? hostile[h++ % std::size(hostile)] : (round * 37) % 255;
        const std::uint64_t addr = 0x7000 + static_cast<std::uint64_t>(round) * 64;
        events.push_back(make_event(a, 3, 4, ts += gap, addr, a == EventKind::Free ? 0 : 8));
        events.push_back(make_event(b, 3, 4, ts += (round + 1) % 255, addr + 32, b == EventKind::Free ? 0 : 8));
      }
    }
  }
  EXPECT_EQ(through_compact(events), events);
  expect_lossless(events);
  const auto content = content_of(events);
  std::size_t short_groups = 0;
  const std::size_t m = modes_at(events.size());
  for (unsigned g = 0; g < 9; ++g) short_groups += static_cast<std::uint8_t>(content[m + g]);
  EXPECT_EQ(short_groups, 9u);
}

// The bytes of the live (0) or class (1) column of the last encode(), its length varint first: the block ends
// after the sizes' high parts are the live, class, release, delta and remainder columns' ends (version 5: the
// content without stacks ends with the stacks flag after them).
std::vector<std::uint8_t> address_column(const CompactFrameEncoder& encoder, std::span<const std::byte> content,
                                         std::size_t column) {
  const auto ends = encoder.block_ends();
  EXPECT_GE(ends.size(), 6u);
  const std::size_t from = ends[ends.size() - 6 + column], to = ends[ends.size() - 5 + column];
  std::vector<std::uint8_t> out;
  for (std::size_t i = from; i < to; ++i) out.push_back(static_cast<std::uint8_t>(content[i]));
  return out;
}

TEST(CompactFrame, LiveRanksAndClassRanksAreBytesBelow255AndEscapedFrom255) {
  // 300 live allocations of one thread, then frees of the ones with 256, 255, 254 and 0 live allocations
  // after them: the live column holds FF 01, FF 00, FE, 00.
  std::vector<Event> live;
  std::uint64_t ts = 100;
  for (std::uint64_t i = 0; i < 300; ++i)
    live.push_back(make_event(EventKind::Malloc, 1, 2, ts++, 0x10000 + i * 0x100, 16));
  for (const std::uint64_t i : {43, 44, 45, 299})
    live.push_back(make_event(EventKind::Free, 1, 2, ts++, 0x10000 + i * 0x100));
  CompactFrameEncoder encoder(live.size());
  auto content = encoder.encode(live);
  EXPECT_EQ(address_column(encoder, content, 0), (std::vector<std::uint8_t>{6, 0xFF, 0x01, 0xFF, 0x00, 0xFE, 0x00}));
  EXPECT_EQ(through_compact(live), live);

  // 256 blocks of class 32 freed (each by its live rank: 255 for the first, then 254, ...), then allocated
  // again in the order they were freed: the first is the 256th free block of its class in the window (class
  // rank 255: FF 00), the second rank 254 (FE), the third 253 (FD).
  std::vector<Event> reused;
  for (std::uint64_t i = 0; i < 256; ++i)
    reused.push_back(make_event(EventKind::Malloc, 1, 2, ts++, 0x10000 + i * 0x100, 16));
  for (std::uint64_t i = 0; i < 256; ++i)
    reused.push_back(make_event(EventKind::Free, 1, 2, ts++, 0x10000 + i * 0x100));
  for (std::uint64_t i = 0; i < 3; ++i)
    reused.push_back(make_event(EventKind::Malloc, 1, 2, ts++, 0x10000 + i * 0x100, 24));
  CompactFrameEncoder reuse_encoder(reused.size());
  content = reuse_encoder.encode(reused);
  const auto live_ranks = address_column(reuse_encoder, content, 0);
  ASSERT_GE(live_ranks.size(), 5u);
  EXPECT_EQ(std::vector<std::uint8_t>(live_ranks.begin(), live_ranks.begin() + 5),
            (std::vector<std::uint8_t>{0x81, 0x02, 0xFF, 0x00, 0xFE}));  // 257 bytes: 255 as FF 00, then 254 ...
  EXPECT_EQ(address_column(reuse_encoder, content, 1), (std::vector<std::uint8_t>{4, 0xFF, 0x00, 0xFE, 0xFD}));
  EXPECT_EQ(through_compact(reused), reused);
  expect_lossless(reused);
}

TEST(CompactFrame, ByteValuesUpTo64BitsAreReadAndAboveAreRefused) {
  // The two-event content of NamedDamageIsRefusedWithItsOffset (its live column: length 1 at byte 26, rank 0),
  // its live rank replaced by a byte value: 254, 255 (FF 00), 256 (FF 01), 2^64 - 1 (FF, varint 2^64 - 256),
  // all but 0 ranks the thread does not have; FF then varint(2^64 - 1) is above 64 bits.
  const std::vector<Event> events = {make_event(EventKind::Malloc, 1, 2, 10, 0x1000, 16),
                                     make_event(EventKind::Free, 1, 2, 11, 0x1000)};
  const auto good = content_of(events);
  ASSERT_EQ(static_cast<std::uint8_t>(good[26]), 1);
  auto with_rank = [&](std::vector<std::uint8_t> value) {
    auto b = good;
    b[26] = static_cast<std::byte>(value.size());
    b.erase(b.begin() + 27);
    for (std::size_t i = 0; i < value.size(); ++i)
      b.insert(b.begin() + 27 + static_cast<std::ptrdiff_t>(i), std::byte{value[i]});
    std::vector<Event> out;
    const Status s = decode_bytes(b, out);
    EXPECT_TRUE(out.empty());
    return s.message();
  };
  auto expect_in = [](const std::string& message, const std::string& what) {
    EXPECT_NE(message.find(what), std::string::npos) << message;
  };
  expect_in(with_rank({0xFE}), "at byte 27: event 1: names its thread's live allocation 254, which it does not have");
  expect_in(with_rank({0xFF, 0x00}), "names its thread's live allocation 255,");
  expect_in(with_rank({0xFF, 0x01}), "names its thread's live allocation 256,");
  // 2^64 - 256 = 0xFFFFFFFFFFFFFF00: varint 80 FE FF FF FF FF FF FF FF 01.
  expect_in(with_rank({0xFF, 0x80, 0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}),
            "names its thread's live allocation 18446744073709551615,");
  expect_in(with_rank({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}),
            "at byte 27: an address column: a value above 64 bits");
  expect_in(with_rank({0xFF, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02}),
            "an address column does not fit 64 bits");
  expect_in(with_rank({0xFF}), "the content ends inside an address column");
}

TEST(CompactFrame, AllocationsNameFreeBlocksOfTheirClassAndReallocsInPlace) {
  // 24 and 20 bytes are one glibc chunk class (32), 40 another (48): the second Malloc at 0x1000 names the
  // free block of its class (rank 0 past the 0x2000 block of the other class), the Realloc in place its own
  // old_addr, the third Malloc the 0x2000 block by a release reference (its class differs).
  const std::vector<Event> events = {
      make_event(EventKind::Malloc, 1, 2, 10, 0x1000, 24), make_event(EventKind::Malloc, 1, 2, 11, 0x2000, 40),
      make_event(EventKind::Free, 1, 2, 12, 0x1000),       make_event(EventKind::Free, 1, 2, 13, 0x2000),
      make_event(EventKind::Malloc, 1, 2, 14, 0x1000, 20), make_realloc(1, 2, 15, 0x1000, 0x1000, 8),
      make_event(EventKind::Malloc, 1, 2, 16, 0x2000, 8)};
  const auto content = content_of(events);
  const std::uint8_t tokens[] = {0x01, 0x01, 0x22, 0x22, 0x41, 0xF4, 0x81};
  for (std::size_t i = 0; i < std::size(tokens); ++i) {
    EXPECT_EQ(static_cast<std::uint8_t>(content[6 + i]), tokens[i]) << "event " << i;
  }
  EXPECT_EQ(through_compact(events), events);
}

TEST(CompactFrame, OlderVersionArtifactsStayReadable) {
  // Written by the version 1, 2, 3, 4 and 5 encoders: tests/data/events.raw, and the first 10,000 events of
  // realistic-140k.raw (each one frame; version 5's without stacks: encode has none).
  const std::tuple<const char*, const char*, int> fixtures[] = {
      {"events.compact-v1.zst", "events.raw", 1}, {"realistic-10k.compact-v1.zst", "realistic-140k.raw", 1},
      {"events.compact-v2.zst", "events.raw", 2}, {"realistic-10k.compact-v2.zst", "realistic-140k.raw", 2},
      {"events.compact-v3.zst", "events.raw", 3}, {"realistic-10k.compact-v3.zst", "realistic-140k.raw", 3},
      {"events.compact-v4.zst", "events.raw", 4}, {"realistic-10k.compact-v4.zst", "realistic-140k.raw", 4},
      {"events.compact-v5.zst", "events.raw", 5}, {"realistic-10k.compact-v5.zst", "realistic-140k.raw", 5}};
  for (const auto& [artifact, raw, version] : fixtures) {
    const auto bytes = testing::read_file(testing::data_path(artifact));
    auto expected = testing::read_raw_events(testing::data_path(raw));
    std::vector<std::byte> content(ZSTD_getFrameContentSize(bytes.data(), bytes.size()));
    ASSERT_EQ(ZSTD_decompress(content.data(), content.size(), bytes.data(), bytes.size()), content.size()) << artifact;
    ASSERT_TRUE(is_compact_content(content));
    EXPECT_EQ(static_cast<std::uint8_t>(content[4]), version) << artifact;
    Status s;
    const auto got = walk(bytes, s);
    ASSERT_TRUE(s.is_ok()) << artifact << ": " << s.message();
    ASSERT_GT(got.size(), 500u);
    ASSERT_LE(got.size(), expected.size());
    expected.resize(got.size());
    EXPECT_EQ(got, through_msgpack(expected)) << artifact;
  }
}

// Version 5: the events' stacks in the frame, and what the decoder gives back of them.
FrameStacks stacks_through_compact(std::span<const Event> events, std::uint64_t first_event, std::vector<Event>& out) {
  CompactFrameEncoder encoder(std::max<std::size_t>(events.size(), 1));
  const auto bytes = encoder.encode(events, first_event);
  EXPECT_LE(bytes.size(), CompactFrameEncoder::output_bound(events.size()));
  CompactFrameDecoder decoder;
  FrameStacks stacks;
  const Status s = decoder.decode(bytes, out, &stacks);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return stacks;
}

TEST(CompactFrame, StacksAreCarriedAsTheDocumentsExampleSays) {
  std::vector<Event> events = {make_event(EventKind::Malloc, 1, 2, 10, 0x1000, 16),
                               make_event(EventKind::Free, 1, 2, 11, 0x1000)};
  events[0].stack = 7;
  CompactFrameEncoder encoder(2);
  const auto encoded = encoder.encode(events, 100);
  const std::vector<std::byte> bytes(encoded.begin(), encoded.end());
  // docs/FORMAT.md, "Version 5": version 4's example with the version 5, then the stacks flag 1, the first
  // event 100, a dictionary of one id (7), and the codes: the Malloc's entry 1, the Free's prediction (0).
  const std::vector<std::uint8_t> expected = {
      0xc1, 0x6d, 0x74, 0x63, 5, 2, 0x01, 0x22, 1, 2, 4, 0, 0, 0,    0,    1,    0,    0, 0, 1, 0,
      0,    0x01, 0x0a, 0x10, 0, 1, 0,    0,    0, 2, 0x80, 0x08, 0, 1, 0x64, 0x01, 0x07, 1, 0};
  ASSERT_EQ(bytes.size(), expected.size());
  for (std::size_t i = 0; i < bytes.size(); ++i) EXPECT_EQ(static_cast<std::uint8_t>(bytes[i]), expected[i]) << i;
  std::vector<Event> out;
  const FrameStacks stacks = stacks_through_compact(events, 100, out);
  EXPECT_TRUE(stacks.present);
  EXPECT_EQ(stacks.first_event, 100u);
  EXPECT_EQ(stacks.ids, (std::vector<std::uint32_t>{7, 0}));
  EXPECT_EQ(out, through_msgpack(events));  // Event::stack stays 0, as from msgpack
  // Without stacks: no stack section, and nothing for `stacks`.
  out.clear();
  FrameStacks none{true, 5, {1}};
  CompactFrameDecoder decoder;
  ASSERT_TRUE(decoder.decode(encoder.encode(events), out, &none).is_ok());
  EXPECT_FALSE(none.present);
  EXPECT_TRUE(none.ids.empty());

  const std::vector<std::byte>& good = bytes;
  auto check = [&](std::size_t at, std::uint8_t value, const std::string& what, Errc code = Errc::bad_compact) {
    auto b = good;
    b[at] = std::byte{value};
    std::vector<Event> o;
    FrameStacks st;
    const Status s = decoder.decode(b, o, &st);
    EXPECT_EQ(s.code(), code) << what << ": " << s.message();
    EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
    EXPECT_TRUE(o.empty());
    EXPECT_FALSE(st.present);
  };
  check(36, 3, "at byte 36: a stack dictionary of 3 ids for 2 events");
  check(38, 2, "at byte 38: event 0: stack code 2 of a dictionary of 1");
  check(39, 0xFF, "the content ends inside the stack codes", Errc::truncated);
  auto longer = good;
  longer.push_back(std::byte{0});
  std::vector<Event> o;
  EXPECT_NE(decoder.decode(longer, o).message().find("at byte 40: 1 bytes after the stack codes"), std::string::npos);
  auto wide = good;  // id 2^32 in the dictionary
  wide.erase(wide.begin() + 37);
  for (const int b : {0x80, 0x80, 0x80, 0x80, 0x10}) wide.insert(wide.end() - 2, static_cast<std::byte>(b));
  EXPECT_NE(decoder.decode(wide, o).message().find("at byte 37: a stack id above 32 bits"), std::string::npos)
      << decoder.decode(wide, o).message();
  for (std::size_t cut = 0; cut < good.size(); ++cut) {
    std::vector<std::byte> b(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(cut));
    FrameStacks st;
    EXPECT_FALSE(decoder.decode(b, o, &st).is_ok()) << cut;
    EXPECT_FALSE(st.present) << cut;
  }
}

TEST(CompactFrame, StacksOfManyThreadsKindsAndIdsRoundTrip) {
  // Generated events, each with a stack: the allocations from a few sites per kind, some frees with one,
  // hostile ids (UINT32_MAX, more than 255 distinct ids: codes of 2 bytes and more).
  auto events = generate_trace(20000, 11);
  std::uint64_t x = 12345;
  for (std::size_t i = 0; i < events.size(); ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const auto r = static_cast<std::uint32_t>(x >> 33);
    Event& e = events[i];
    e.stack = e.kind == EventKind::Free ? (r % 50 == 0 ? r % 7 + 1 : 0)
              : r % 10 < 7          ? static_cast<std::uint32_t>(e.kind) * 3 + (r >> 8) % 2
              : r % 10 < 9          ? 1000 + (r >> 8) % 600
                                    : (r % 2 == 0 ? UINT32_MAX : r);
  }
  std::vector<Event> out;
  const FrameStacks stacks = stacks_through_compact(events, UINT64_MAX - 3, out);
  ASSERT_TRUE(stacks.present);
  EXPECT_EQ(stacks.first_event, UINT64_MAX - 3);
  ASSERT_EQ(stacks.ids.size(), events.size());
  for (std::size_t i = 0; i < events.size(); ++i) ASSERT_EQ(stacks.ids[i], events[i].stack) << i;
  for (Event& e : events) e.stack = 0;
  EXPECT_EQ(out, through_msgpack(events));
}

TEST(CompactFrame, RandomDamageNeverCrashes) {
  const auto events = generate_trace(3000, 3);
  const auto good = content_of(events);
  std::mt19937 rng(11);
  for (int i = 0; i < 3000; ++i) {
    auto b = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) b[6 + rng() % (b.size() - 6)] = static_cast<std::byte>(rng());
    std::vector<Event> out;
    const Status s = decode_bytes(b, out);
    if (s.is_ok()) {
      EXPECT_EQ(out.size(), events.size());
    } else {
      EXPECT_TRUE(out.empty());
    }
  }
}

std::vector<Event> walk(const std::vector<std::byte>& bytes, Status& status) {
  MemorySource source(bytes);
  ArtifactDecoder decoder(source, "a.msgpack");
  std::vector<Event> out, buf(4096);
  while (const std::size_t n = decoder.next(buf)) out.insert(out.end(), buf.begin(), buf.begin() + n);
  status = decoder.status();
  return out;
}

TEST(CompactArtifact, SequentialAndIndexedReadersReadItAsTheCompatibleOne) {
  const auto events = generate_trace(10000, 5);
  const auto compact = build_artifact(events, 4096, true, -2, true);
  const auto compatible = build_artifact(events, 4096, true, -2, false);
  EXPECT_LT(compact.bytes.size(), compatible.bytes.size());
  Status s1, s2;
  const auto a = walk(compact.bytes, s1);
  const auto b = walk(compatible.bytes, s2);
  ASSERT_TRUE(s1.is_ok()) << s1.message();
  ASSERT_TRUE(s2.is_ok()) << s2.message();
  EXPECT_EQ(a, b);
  FrameDecoder decoder;
  std::vector<Event> indexed;
  for (std::size_t f = 0; f < compact.frame_offsets.size(); ++f) {
    const std::size_t end =
        f + 1 < compact.frame_offsets.size() ? compact.frame_offsets[f + 1] : compact.bytes.size() - (8 + 8 * 3 + 9);
    const Status s = decoder.decode(
        std::span(compact.bytes).subspan(compact.frame_offsets[f], end - compact.frame_offsets[f]), indexed);
    ASSERT_TRUE(s.is_ok()) << s.message();
  }
  EXPECT_EQ(indexed, b);
}

// A compact frame compressed by hand, so its content can be damaged where the encoder never would.
std::vector<std::byte> one_frame(std::span<const std::byte> content, bool with_size) {
  std::vector<std::byte> out(ZSTD_compressBound(content.size()) + 64);
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, with_size ? 1 : 0);
  std::size_t n = 0;
  if (with_size) {
    n = ZSTD_compress2(cctx, out.data(), out.size(), content.data(), content.size());
  } else {
    ZSTD_inBuffer in{content.data(), content.size(), 0};
    ZSTD_outBuffer o{out.data(), out.size(), 0};
    ZSTD_compressStream2(cctx, &o, &in, ZSTD_e_end);
    n = o.pos;
  }
  ZSTD_freeCCtx(cctx);
  out.resize(n);
  return out;
}

TEST(CompactArtifact, DamagedContentIsOneErrorNamingFileFrameAndOffsets) {
  const auto events = every_kind();
  const auto first = build_artifact(events, 64, false, -2, true);
  CompactFrameEncoder encoder(events.size());
  const auto encoded = encoder.encode(events);
  std::vector<std::byte> content(encoded.begin(), encoded.end());
  // The deltas end at the last block end but one (the remainders, then the stacks flag, after them).
  const auto ends = encoder.block_ends();
  ASSERT_GE(ends.size(), 2u);
  std::size_t last = ends[ends.size() - 2] - 1;
  content[last] |= std::byte{0x80};  // the last delta never ends
  while (last > 0 && (content[last - 1] & std::byte{0x80}) != std::byte{0}) --last;
  auto bytes = first.bytes;
  const std::size_t second_at = bytes.size();
  const auto bad = one_frame(content, true);
  bytes.insert(bytes.end(), bad.begin(), bad.end());
  Status s;
  const auto got = walk(bytes, s);
  EXPECT_EQ(got.size(), events.size());  // the first frame, none of the damaged one
  EXPECT_EQ(s.code(), Errc::truncated);
  EXPECT_EQ(s.message(), "a.msgpack: frame 1 at byte " + std::to_string(second_at) + ": compact content at byte " +
                             std::to_string(last) + ": the content ends inside an address column");
}

TEST(CompactArtifact, AFrameWithoutContentSizeIsRefused) {
  const auto content = content_of(every_kind());
  Status s;
  const auto got = walk(one_frame(content, false), s);
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(s.code(), Errc::bad_compact);
  EXPECT_NE(s.message().find("a compact frame must declare a content size"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace memtrack::codec
