// The context section's records and frames (docs/FORMAT.md, "Context section"): round trips of every
// record type, the lenient reading promised for version 2 (unknown keys and record types, any integer
// width), and clear errors for everything else.
#include "memtrack/codec/context.h"

#include <gtest/gtest.h>

#include <cstring>
#include <iterator>
#include <map>
#include <msgpack.hpp>
#include <string>
#include <variant>

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
      Resident{7, 63, 173, 64ull << 20, 3ull << 20, 4096, 0, 65536, 70ull << 20},
      Resident{8, 64, 174, 0, 0, 0, 1ull << 40, 0, 0},
      ResidentPages{7, 65, 175, 0, 4096, {0x1000, 0x10000}, {3, 9}, {0x05, 0xff, 0x01}},
      ResidentPages{7, 65, 175, 1, 4096, {}, {}, {}},
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

// Every record of all_records(), byte for byte, so that a change to the encoder that moves one byte fails
// here rather than in a consumer: keys in docs/FORMAT.md's order, integers in their smallest encoding,
// columns as bin values of little-endian integers (read back with python3-msgpack when these were written).
// Each also reads back as itself from a frame of its own. all_records() has every record type.
TEST(Context, EveryRecordIsItsDocumentedBytes) {
  const char* const expected[] = {
      "87a474797065a95265636f7264696e67a86d656d747261636ba5302e322e30a7636f6d6d616e6493a27368a22d63a26c73b173746172745f"
      "7265616c74696d655f6e73cf187d0c29351e0d15b273746172745f6d6f6e6f746f6e69635f6e73ce0001e240a873656374696f6e7391a96c"
      "6966656379636c65a3706964cd1092",
      "85a474797065ac50726f636573735374617274a370696407a470706964cd1092a56576656e7400a974696d657374616d7064",
      "86a474797065a445786563a370696407a56576656e7400a974696d657374616d7065aa65786563757461626c65a72f62696e2f7368a46172"
      "677693a27368a22d63a26c73",
      "85a474797065ac50726f636573735374617274a370696408a47070696407a56576656e74cd3039a974696d657374616d70ccc8",
      "86a474797065a445786563a370696408a56576656e74cd303ea974696d657374616d70ccc9aa65786563757461626c65ab2f7573722f6269"
      "6e2f6c73a46172677691a26c73",
      "86a474797065ab50726f6365737345786974a370696408a56576656e74cd4e20a974696d657374616d70cd012ca673746174757300a67369"
      "676e616cc0",
      "86a474797065ab50726f6365737345786974a370696407a56576656e74cd4e21a974696d657374616d70cd012da6737461747573c0a67369"
      "676e616c09",
      "85a474797065a9556e747261636b6564a3706964c0aa65786563757461626c65af2f7573722f62696e2f706173737764a6726561736f6ea6"
      "736574756964a56576656e74cd4e21",
      "85a474797065a9556e747261636b6564a370696409aa65786563757461626c65a0a6726561736f6eac6c6566742d72756e6e696e67a56576"
      "656e74cd4e21",
      "84a474797065a3456e64a66576656e7473cd4e21a66672616d657301a5636c65616ec3",
      "89a474797065a64d6f64756c65a370696407a56576656e7400a470617468ad2f7573722f62696e2f70726f67a86275696c645f6964c403ab"
      "cd01a462696173cf0000555500000000a57374617274cf0000555500001000a3656e64cf0000555500009000a66c6f61646564c3",
      "89a474797065a64d6f64756c65a370696407a56576656e74cd0384a470617468af2f746d702f6c6962676f6e652e736fa86275696c645f69"
      "64c400a462696173cf00007f0000000000a57374617274cf00007f0000000000a3656e64cf00007f0000010000a66c6f61646564c2",
      "86a474797065aa537461636b4e6f646573a370696407a56576656e740aa866697273745f696401a7706172656e7473c41000000000010000"
      "000100000000000000a9616464726573736573c420341200005555000042000000007f0000f0ffffffffffffff0100000000000000",
      "83a474797065ab4576656e74537461636b73ab66697273745f6576656e7400a3696473c410020000000000000003000000ffffffff",
      "89a474797065a753796d626f6c73a470617468ad2f7573722f62696e2f70726f67a86275696c645f6964c403abcd01a96164647265737365"
      "73c418341200000000000000130000000000009999000000000000a6646570746873c40c020000000100000000000000a966756e6374696f"
      "6e73c40c000000000100000002000000a566696c6573c40c0300000003000000ffffffffa56c696e6573c40c0a0000001400000000000000"
      "a7737472696e677394a7696e6e65722829aa6f7574657228696e7429a46d61696ead2f7372632f70726f672e637070",
      "86a474797065a55061757365a3706964cd1092a374696400a56576656e7400a974696d657374616d7063a6736f75726365a57374617274",
      "86a474797065a6526573756d65a370696407a374696407a56576656e7428a974696d657374616d70cc96a6736f75726365a76c6962726172"
      "79",
      "86a474797065ab526567696f6e426567696ea370696407a374696407a56576656e7429a974696d657374616d70cc97a46e616d65aa62656e"
      "63682f736f7274",
      "86a474797065ab526567696f6e426567696ea370696407a374696408a56576656e7432a974696d657374616d70cca0a46e616d65a0",
      "85a474797065a9526567696f6e456e64a370696407a374696408a56576656e743ca974696d657374616d70ccaa",
      "85a474797065a9526567696f6e456e64a370696407a374696407a56576656e743da974696d657374616d70ccab",
      "86a474797065a55061757365a3706964cd1092a374696400a56576656e743ea974696d657374616d70ccaca6736f75726365a67369676e61"
      "6c",
      "8aa474797065a85265736964656e74a370696407a56576656e743fa974696d657374616d70ccada4616e6f6ece04000000a466696c65ce00"
      "300000a573686d656dcd1000a47377617000a36f776ece00010000a368776dce04600000",
      "8aa474797065a85265736964656e74a370696408a56576656e7440a974696d657374616d70ccaea4616e6f6e00a466696c6500a573686d65"
      "6d00a473776170cf0000010000000000a36f776e00a368776d00",
      "89a474797065ad5265736964656e745061676573a370696407a56576656e7441a974696d657374616d70ccafa47061727400a9706167655f"
      "73697a65cd1000a6737461727473c41000100000000000000000010000000000a57061676573c41003000000000000000900000000000000"
      "a770726573656e74c40305ff01",
      "89a474797065ad5265736964656e745061676573a370696407a56576656e7441a974696d657374616d70ccafa47061727401a9706167655f"
      "73697a65cd1000a6737461727473c400a57061676573c400a770726573656e74c400",
  };
  const std::vector<ContextRecord> records = all_records();
  ASSERT_EQ(records.size(), std::size(expected));
  std::vector<bool> types(std::variant_size_v<ContextRecord>);
  for (std::size_t i = 0; i < records.size(); ++i) {
    types[records[i].index()] = true;
    std::vector<std::byte> got;
    encode_context_record(records[i], got);
    std::string hex;
    for (const std::byte b : got) {
      constexpr char kDigits[] = "0123456789abcdef";
      hex += kDigits[std::to_integer<unsigned>(b) >> 4];
      hex += kDigits[std::to_integer<unsigned>(b) & 15];
    }
    EXPECT_EQ(hex, expected[i]) << "record " << i;
    std::vector<ContextRecord> back;
    const Status s = decode_context_frame(frame_of_payload(got), 0, back);
    ASSERT_TRUE(s) << "record " << i << ": " << s.message();
    ASSERT_EQ(back.size(), 1u) << "record " << i;
    EXPECT_EQ(back[0], records[i]) << "record " << i;
  }
  for (std::size_t t = 0; t < types.size(); ++t) EXPECT_TRUE(types[t]) << "no record of variant index " << t;
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

// The resident record's bytes (docs/FORMAT.md, "Context section: resident"): keys in the documented order.
TEST(Context, ResidentRecordsAreTheDocumentedBytes) {
  std::vector<std::byte> got;
  encode_context_record(Resident{7, 8, 9, 1, 2, 3, 4, 5, 6}, got);
  const unsigned char want[] = {0x8a, 0xa4, 't', 'y', 'p', 'e', 0xa8, 'R', 'e', 's', 'i', 'd', 'e', 'n', 't', 0xa3,
                                'p', 'i', 'd', 0x07, 0xa5, 'e', 'v', 'e', 'n', 't', 0x08, 0xa9, 't', 'i', 'm', 'e',
                                's', 't', 'a', 'm', 'p', 0x09, 0xa4, 'a', 'n', 'o', 'n', 0x01, 0xa4, 'f', 'i', 'l',
                                'e', 0x02, 0xa5, 's', 'h', 'm', 'e', 'm', 0x03, 0xa4, 's', 'w', 'a', 'p', 0x04, 0xa3,
                                'o', 'w', 'n', 0x05, 0xa3, 'h', 'w', 'm', 0x06};
  ASSERT_EQ(got.size(), sizeof want);
  EXPECT_EQ(std::memcmp(got.data(), want, sizeof want), 0);

  // Without its keys: an error naming the key, as for every record.
  std::vector<std::byte> payload;
  Stream st{payload};
  msgpack::packer<Stream> pk(st);
  pk.pack_map(4);
  pk.pack(std::string("type"));
  pk.pack(std::string("Resident"));
  pk.pack(std::string("pid"));
  pk.pack(1);
  pk.pack(std::string("event"));
  pk.pack(2);
  pk.pack(std::string("timestamp"));
  pk.pack(3);
  std::vector<ContextRecord> back;
  const Status s = decode_context_frame(frame_of_payload(payload), 0, back);
  EXPECT_NE(s.message().find("missing key \"anon\""), std::string::npos) << s.message();
}

// ResidentPages (docs/FORMAT.md, "Context section: resident"): the reader refuses ranges the analysis could
// not walk, and bits that do not match them.
TEST(Context, ResidentPagesWithBadRangesOrBitsAreErrors) {
  const auto refused = [](ResidentPages r, const char* what) {
    std::vector<ContextRecord> back;
    const Status s = decode_context_frame(frame_of({r}), 0, back);
    EXPECT_FALSE(s) << what;
    EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
    EXPECT_TRUE(back.empty());
  };
  const ResidentPages good{7, 1, 2, 0, 4096, {0x1000, 0x3000}, {2, 9}, {0x03, 0xff, 0x01}};
  std::vector<ContextRecord> back;
  ASSERT_TRUE(decode_context_frame(frame_of({good}), 0, back));
  ResidentPages r = good;
  r.present.pop_back();
  refused(r, "need 3 bytes of bits but present has 2");
  r = good;
  r.pages.pop_back();
  refused(r, "2 starts but 1 page counts");
  r = good;
  r.starts[1] = 0x2000;  // inside the first range
  refused(r, "range 1");
  r = good;
  r.starts[0] = 0x1001;
  refused(r, "range 0");
  r = good;
  r.page_size = 3000;
  refused(r, "not a power of two");
  r = good;
  r.starts = {0xffff'ffff'ffff'f000ull, 0};
  r.pages = {2, 0};
  r.present = {0x03};
  refused(r, "range 0");
}

TEST(Context, ASplitSnapshotHasTheSameBitsInPartsUnderTheLimit) {
  ResidentPages whole{7, 1, 2, 0, 4096, {0x10000, 0x100000, 0x400000}, {3, 300, 17}, {}};
  for (const std::uint64_t n : whole.pages) whole.present.resize(whole.present.size() + resident_bitmap_bytes(n));
  for (std::size_t i = 0; i < whole.present.size(); ++i) whole.present[i] = static_cast<std::uint8_t>(i * 37 + 11);
  // Bits past a range's pages are padding: the split keeps only the range's.
  whole.present[0] &= 0x07;
  whole.present[whole.present.size() - 1] &= 0x01;
  whole.present[1 + 300 / 8] &= 0x0f;
  const std::vector<ResidentPages> parts = split_resident_pages(whole, 16);
  ASSERT_GT(parts.size(), 3u);
  std::map<std::uint64_t, bool> want, got;
  std::uint64_t bit = 0;
  for (std::size_t i = 0; i < whole.starts.size(); ++i) {
    for (std::uint64_t j = 0; j < whole.pages[i]; ++j)
      want[whole.starts[i] + j * 4096] = (whole.present[(bit + j) / 8] >> ((bit + j) % 8)) & 1;
    bit += resident_bitmap_bytes(whole.pages[i]) * 8;
  }
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const ResidentPages& p = parts[k];
    EXPECT_EQ(p.part, k);
    EXPECT_EQ(p.event, 1u);
    EXPECT_LE(p.present.size(), 16u);
    std::vector<ContextRecord> back;
    const Status decoded = decode_context_frame(frame_of({p}), 0, back);  // each part is a valid record
    ASSERT_TRUE(decoded) << decoded.message();
    std::uint64_t b = 0;
    for (std::size_t i = 0; i < p.starts.size(); ++i) {
      for (std::uint64_t j = 0; j < p.pages[i]; ++j)
        got[p.starts[i] + j * 4096] = (p.present[(b + j) / 8] >> ((b + j) % 8)) & 1;
      b += resident_bitmap_bytes(p.pages[i]) * 8;
    }
  }
  EXPECT_EQ(got, want);
  const std::vector<ResidentPages> one = split_resident_pages(whole);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0], whole);
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
