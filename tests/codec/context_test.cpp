// The context section's records and frames (docs/FORMAT.md, "Context section"): round trips of every
// record type, the lenient reading promised for version 2 (unknown keys and record types, any integer
// width), and clear errors for everything else.
#include "memtrack/codec/context.h"

#include <gtest/gtest.h>

#include <cstring>
#include <msgpack.hpp>

namespace memtrack::codec {
namespace {

std::vector<ContextRecord> all_records() {
  return {
      RecordingInfo{"0.2.0", {"sh", "-c", "ls"}, 1764580000123456789ull, 123456, {"lifecycle"}, 4242},
      ProcessStart{7, 4242, 0, 100},
      ProcessExec{7, 0, 101, "/bin/sh", {"sh", "-c", "ls"}},
      ProcessStart{8, 7, 12345, 200},
      ProcessExec{8, 12350, 201, "/usr/bin/ls", {"ls"}},
      ProcessExit{8, 20000, 300, 0, std::nullopt},
      ProcessExit{7, 20001, 301, std::nullopt, 9},
      Untracked{std::nullopt, "/usr/bin/passwd", "setuid", 20001},
      Untracked{9, "", "left-running", 20001},
      StreamEnd{20001, 1, true},
      Module{7,
             0,
             "/usr/bin/prog",
             {0xab, 0xcd, 0x01},
             0x5555'0000'0000ull,
             0x5555'0000'1000ull,
             0x5555'0000'9000ull,
             true},
      Module{7, 900, "/tmp/libgone.so", {}, 0x7f00'0000'0000ull, 0x7f00'0000'0000ull, 0x7f00'0001'0000ull, false},
      StackNodes{7, 10, 1, {0, 1, 1, 0}, {0x5555'0000'1234ull, 0x7f00'0000'0042ull, 0xffff'ffff'ffff'fff0ull, 1}},
      EventStacks{0, {2, 0, 3, 0xffffffffu}},
      Symbols{"/usr/bin/prog",
              {0xab, 0xcd, 0x01},
              {0x1234, 0x1300, 0x9999},
              {2, 1, 0},
              {0, 1, 2},
              {3, 3, kNoString},
              {10, 20, 0},
              {"inner()", "outer(int)", "main", "/src/prog.cpp"}},
      Pause{4242, 0, 0, 99, "start"},
      Resume{7, 7, 40, 150, "library"},
      RegionBegin{7, 7, 41, 151, "bench/sort"},
      RegionBegin{7, 8, 50, 160, ""},
      RegionEnd{7, 8, 60, 170},
      RegionEnd{7, 7, 61, 171},
      Pause{4242, 0, 62, 172, "signal"},
  };
}

std::vector<std::byte> frame_of(const std::vector<ContextRecord>& records) {
  FrameCompressor compressor(3);
  std::vector<std::byte> scratch, out;
  EXPECT_TRUE(encode_context_frame(records, compressor, scratch, out));
  return out;
}

// A frame around a payload written by hand (as another writer could), compressed with zstd directly.
std::vector<std::byte> frame_of_payload(const std::vector<std::byte>& payload) {
  FrameCompressor compressor(1);
  std::vector<std::byte> out(kContextHeaderBytes + FrameCompressor::bound(payload.size()));
  Status status;
  const std::size_t n = compressor.compress(payload, std::span(out).subspan(kContextHeaderBytes), status);
  EXPECT_TRUE(status);
  out.resize(kContextHeaderBytes + n);
  const std::uint32_t magic = kContextFrameMagic, size = static_cast<std::uint32_t>(out.size() - 8);
  std::memcpy(out.data(), &magic, 4);
  std::memcpy(out.data() + 4, &size, 4);
  std::memcpy(out.data() + 8, "MTCX", 4);
  out[12] = std::byte{2};
  out[13] = std::byte{1};
  return out;
}

struct Stream {
  std::vector<std::byte>& out;
  void write(const char* d, std::size_t n) {
    out.insert(out.end(), reinterpret_cast<const std::byte*>(d), reinterpret_cast<const std::byte*>(d) + n);
  }
};

TEST(Context, EveryRecordRoundTrips) {
  const std::vector<ContextRecord> records = all_records();
  const std::vector<std::byte> frame = frame_of(records);
  ASSERT_TRUE(is_context_frame(frame));
  std::vector<ContextRecord> back;
  const Status s = decode_context_frame(frame, 1000, back);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(back, records);
}

TEST(Context, HeaderIsTheDocumentedLayout) {
  const std::vector<std::byte> frame = frame_of({StreamEnd{1, 1, true}});
  const unsigned char expected[] = {0x5b, 0x2a, 0x4d, 0x18};
  EXPECT_EQ(std::memcmp(frame.data(), expected, 4), 0);
  std::uint32_t size = 0;
  std::memcpy(&size, frame.data() + 4, 4);
  EXPECT_EQ(size, frame.size() - 8);
  EXPECT_EQ(std::memcmp(frame.data() + 8, "MTCX", 4), 0);
  EXPECT_EQ(frame[12], std::byte{2});
  EXPECT_EQ(frame[13], std::byte{1});
}

TEST(Context, UnknownTypesAndKeysAreSkippedAndIntegersMayUseAnyWidth) {
  std::vector<std::byte> payload;
  Stream st{payload};
  msgpack::packer<Stream> pk(st);
  pk.pack_map(2), pk.pack(std::string("type")), pk.pack(std::string("FutureThing")), pk.pack(std::string("x")),
      pk.pack(1);
  // A ProcessStart with keys out of order, an extra key, and pid written as int64 (d3).
  pk.pack_map(6);
  pk.pack(std::string("event")), pk.pack_uint64(5);
  pk.pack(std::string("extra")), pk.pack_array(0);
  pk.pack(std::string("ppid")), pk.pack_int64(1);
  pk.pack(std::string("type")), pk.pack(std::string("ProcessStart"));
  pk.pack(std::string("timestamp")), pk.pack_uint8(9);
  pk.pack(std::string("pid")), pk.pack_int64(77);
  std::vector<ContextRecord> back;
  const Status s = decode_context_frame(frame_of_payload(payload), 0, back);
  ASSERT_TRUE(s) << s.message();
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(std::get<ProcessStart>(back[0]), (ProcessStart{77, 1, 5, 9}));
}

TEST(Context, ANewerVersionIsRefusedByName) {
  std::vector<std::byte> frame = frame_of({StreamEnd{}});
  frame[12] = std::byte{3};
  std::vector<ContextRecord> back;
  const Status s = decode_context_frame(frame, 4096, back);
  EXPECT_FALSE(s);
  EXPECT_NE(s.message().find("context frame at byte 4096: format version 3 (written by a newer memtrack"),
            std::string::npos)
      << s.message();
  EXPECT_TRUE(back.empty());
}

TEST(Context, BadRecordsNameTheirOffsetAndKeepNothingOfTheFrame) {
  std::vector<std::byte> payload;
  encode_context_record(ProcessStart{1, 0, 0, 0}, payload);
  const std::size_t second = payload.size();
  Stream st{payload};
  msgpack::packer<Stream> pk(st);
  pk.pack_map(2), pk.pack(std::string("type")), pk.pack(std::string("ProcessExit")), pk.pack(std::string("pid")),
      pk.pack(std::string("seven"));
  std::vector<ContextRecord> back{StreamEnd{}};
  const Status s = decode_context_frame(frame_of_payload(payload), 64, back);
  EXPECT_EQ(s.code(), Errc::bad_msgpack);
  EXPECT_NE(s.message().find("record at payload offset " + std::to_string(second) + ": key \"pid\" is not an integer"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(back.size(), 1u);  // what the caller had before stays; nothing of the bad frame is added
}

TEST(Context, OutOfRangeAndMissingKeysAreErrors) {
  std::vector<std::byte> payload;
  Stream st{payload};
  msgpack::packer<Stream> pk(st);
  pk.pack_map(5), pk.pack(std::string("type")), pk.pack(std::string("ProcessStart"));
  pk.pack(std::string("pid")), pk.pack_uint64(1ull << 40);
  pk.pack(std::string("ppid")), pk.pack(1), pk.pack(std::string("event")), pk.pack(1);
  pk.pack(std::string("timestamp")), pk.pack(1);
  std::vector<ContextRecord> back;
  Status s = decode_context_frame(frame_of_payload(payload), 0, back);
  EXPECT_NE(s.message().find("key \"pid\" is out of range"), std::string::npos) << s.message();

  payload.clear();
  pk.pack_map(1), pk.pack(std::string("type")), pk.pack(std::string("End"));
  s = decode_context_frame(frame_of_payload(payload), 0, back);
  EXPECT_NE(s.message().find("missing key \"events\""), std::string::npos) << s.message();
}

TEST(Context, DamagedFramesAreErrorsNotCrashes) {
  const std::vector<std::byte> good = frame_of(all_records());
  std::vector<ContextRecord> back;
  for (std::size_t cut = 0; cut < good.size(); ++cut) {
    std::vector<std::byte> bad(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(cut));
    EXPECT_FALSE(decode_context_frame(bad, 0, back)) << "cut at " << cut;
  }
  for (std::size_t i = kContextHeaderBytes; i < good.size(); ++i) {
    std::vector<std::byte> bad = good;
    bad[i] ^= std::byte{0x40};
    back.clear();
    (void)decode_context_frame(bad, 0, back);  // the checksum catches most; none may crash or hang
  }
  std::vector<std::byte> other = good;
  std::memcpy(other.data() + 8, "XXXX", 4);
  EXPECT_NE(decode_context_frame(other, 0, back).message().find("no MTCX tag"), std::string::npos);
}

// The stacks records' bytes, exactly as docs/FORMAT.md's table says: keys in this order, columns as bin
// values of little-endian integers.
TEST(Context, StackRecordsAreTheDocumentedBytes) {
  std::vector<std::byte> got;
  encode_context_record(EventStacks{5, {1, 0x01020304u}}, got);
  const unsigned char expected[] = {0x83, 0xa4, 't',  'y',  'p',  'e',  0xab, 'E',  'v', 'e', 'n', 't',
                                    'S',  't',  'a',  'c',  'k',  's',  0xab, 'f',  'i', 'r', 's', 't',
                                    '_',  'e',  'v',  'e',  'n',  't',  0x05, 0xa3, 'i', 'd', 's', 0xc4,
                                    0x08, 0x01, 0x00, 0x00, 0x00, 0x04, 0x03, 0x02, 0x01};
  ASSERT_EQ(got.size(), sizeof expected);
  EXPECT_EQ(std::memcmp(got.data(), expected, sizeof expected), 0);

  got.clear();
  encode_context_record(StackNodes{3, 4, 9, {0}, {0x1122334455667788ull}}, got);
  const unsigned char nodes_tail[] = {0xa9, 'a',  'd',  'd',  'r',  'e',  's',  's',  'e',  's',
                                      0xc4, 0x08, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11};
  ASSERT_GE(got.size(), sizeof nodes_tail);
  EXPECT_EQ(got[0], std::byte{0x86});
  EXPECT_EQ(std::memcmp(got.data() + got.size() - sizeof nodes_tail, nodes_tail, sizeof nodes_tail), 0);
}

TEST(Context, StackRecordsWithInconsistentColumnsAreErrors) {
  const auto decode_one = [](const ContextRecord& r) {
    std::vector<std::byte> payload;
    encode_context_record(r, payload);
    std::vector<ContextRecord> back;
    return decode_context_frame(frame_of_payload(payload), 0, back).message();
  };
  EXPECT_NE(decode_one(StackNodes{1, 0, 1, {0, 1}, {5}}).find("StackNodes has 2 parents but 1 addresses"),
            std::string::npos);
  EXPECT_NE(decode_one(StackNodes{1, 0, 0, {0}, {5}}).find("ids out of range"), std::string::npos);
  EXPECT_NE(decode_one(Symbols{"m", {}, {1, 2}, {1}, {0}, {0}, {0}, {"f"}}).find("2 addresses but 1 depths"),
            std::string::npos);
  EXPECT_NE(decode_one(Symbols{"m", {}, {1}, {2}, {0}, {0}, {0}, {"f"}}).find("add up to 2 frames"), std::string::npos);
  EXPECT_NE(decode_one(Symbols{"m", {}, {1}, {1}, {1}, {0}, {0}, {"f"}}).find("string index 1 beyond its 1"),
            std::string::npos);

  // A column whose length is not a whole number of its integers.
  std::vector<std::byte> payload;
  Stream st{payload};
  msgpack::packer<Stream> pk(st);
  pk.pack_map(3), pk.pack(std::string("type")), pk.pack(std::string("EventStacks"));
  pk.pack(std::string("first_event")), pk.pack(0);
  pk.pack(std::string("ids")), pk.pack_bin(3), pk.pack_bin_body("abc", 3);
  std::vector<ContextRecord> back;
  const Status s = decode_context_frame(frame_of_payload(payload), 0, back);
  EXPECT_NE(s.message().find("key \"ids\" has 3 bytes, not a whole number of 4-byte integers"), std::string::npos)
      << s.message();
}

// The control records' bytes (docs/FORMAT.md, "Context section: control"): keys in the documented order.
TEST(Context, ControlRecordsAreTheDocumentedBytes) {
  std::vector<std::byte> got;
  encode_context_record(RegionEnd{7, 8, 9, 10}, got);
  const unsigned char end[] = {0x85, 0xa4, 't',  'y',  'p', 'e',  0xa9, 'R', 'e', 'g', 'i',  'o',  'n', 'E', 'n',
                               'd',  0xa3, 'p',  'i',  'd', 0x07, 0xa3, 't', 'i', 'd', 0x08, 0xa5, 'e', 'v', 'e',
                               'n',  't',  0x09, 0xa9, 't', 'i',  'm',  'e', 's', 't', 'a',  'm',  'p', 0x0a};
  ASSERT_EQ(got.size(), sizeof end);
  EXPECT_EQ(std::memcmp(got.data(), end, sizeof end), 0);

  got.clear();
  encode_context_record(RegionBegin{7, 8, 9, 10, "ab"}, got);
  const unsigned char begin_tail[] = {0xa4, 'n', 'a', 'm', 'e', 0xa2, 'a', 'b'};
  ASSERT_GE(got.size(), sizeof begin_tail);
  EXPECT_EQ(got[0], std::byte{0x86});
  EXPECT_EQ(std::memcmp(got.data() + got.size() - sizeof begin_tail, begin_tail, sizeof begin_tail), 0);

  got.clear();
  encode_context_record(Pause{1, 2, 3, 4, "ctl"}, got);
  const unsigned char pause_head[] = {0x86, 0xa4, 't', 'y', 'p', 'e', 0xa5, 'P', 'a', 'u', 's', 'e'};
  const unsigned char pause_tail[] = {0xa6, 's', 'o', 'u', 'r', 'c', 'e', 0xa3, 'c', 't', 'l'};
  ASSERT_GE(got.size(), sizeof pause_head + sizeof pause_tail);
  EXPECT_EQ(std::memcmp(got.data(), pause_head, sizeof pause_head), 0);
  EXPECT_EQ(std::memcmp(got.data() + got.size() - sizeof pause_tail, pause_tail, sizeof pause_tail), 0);
}

TEST(Context, ControlRecordsWithoutTheirKeysAreErrors) {
  std::vector<std::byte> payload;
  Stream st{payload};
  msgpack::packer<Stream> pk(st);
  pk.pack_map(5), pk.pack(std::string("type")), pk.pack(std::string("RegionBegin"));
  pk.pack(std::string("pid")), pk.pack(1), pk.pack(std::string("tid")), pk.pack(1);
  pk.pack(std::string("event")), pk.pack(0), pk.pack(std::string("timestamp")), pk.pack(0);
  std::vector<ContextRecord> back;
  const Status s = decode_context_frame(frame_of_payload(payload), 0, back);
  EXPECT_NE(s.message().find("missing key \"name\""), std::string::npos) << s.message();
  EXPECT_TRUE(back.empty());
}

}  // namespace
}  // namespace memtrack::codec
