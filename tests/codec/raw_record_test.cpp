// The raw record as a wire form: pack/unpack byte layout (little-endian, field by field), the round trip on
// the conformance records, and validation errors naming the record index. Reading records from a file
// descriptor is the pipeline's (tests/pipeline/raw_record_reader_test.cpp).
#include "memtrack/codec/raw_record.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/fixtures.h"

namespace memtrack::codec {
namespace {

std::span<std::byte, kRawRecordSize> record(std::vector<std::byte>& bytes, std::size_t i) {
  return std::span<std::byte, kRawRecordSize>(bytes.data() + i * kRawRecordSize, kRawRecordSize);
}

TEST(RawRecord, PackWritesTheDocumentedLittleEndianLayout) {
  // docs/FORMAT.md, "The raw record": written out byte by byte, independently of pack_raw_record.
  const Event e = make_realloc(-2, 0x01020304, 0x1122334455667788, 0xa0a1a2a3a4a5a6a7, 0xb0b1b2b3b4b5b6b7, 0x40);
  std::byte out[kRawRecordSize];
  std::memset(out, 0xee, sizeof out);  // pack must write every byte, the reserved ones as zero
  pack_raw_record(e, out);
  EXPECT_EQ(testing::to_hex(out, sizeof out),
            "8877665544332211"  // timestamp
            "a7a6a5a4a3a2a1a0"  // addr (the new pointer)
            "4000000000000000"  // size
            "b7b6b5b4b3b2b1b0"  // old_addr
            "feffffff"          // pid -2
            "04030201"          // tid
            "04"                // kind: Realloc
            "01"                // flags: old_addr present
            "000000000000");    // reserved
}

TEST(RawRecord, ConformanceRecordsRoundTripByteForByte) {
  auto bytes = testing::read_file(testing::data_path("events.raw"));
  ASSERT_EQ(bytes.size() % kRawRecordSize, 0u);
  const std::size_t n = bytes.size() / kRawRecordSize;
  ASSERT_GT(n, 0u);
  std::vector<Event> events(n);
  std::size_t unpacked = 0;
  ASSERT_TRUE(unpack_raw_records(bytes, 0, events, unpacked).is_ok());
  ASSERT_EQ(unpacked, n);
  std::vector<std::byte> again(bytes.size());
  for (std::size_t i = 0; i < n; ++i) {
    Event one;
    ASSERT_TRUE(unpack_raw_record(record(bytes, i), i, one).is_ok());
    EXPECT_EQ(one, events[i]) << i;
    pack_raw_record(events[i], record(again, i));
  }
  EXPECT_EQ(again, bytes);
}

TEST(RawRecord, UnpackStopsAtTheFirstBadRecordNamingItsIndex) {
  const auto events = testing::read_raw_events(testing::data_path("events.raw"));
  ASSERT_GT(events.size(), 10u);
  auto bytes = testing::raw_records(events);
  bytes[7 * kRawRecordSize + raw_offset::kind] = std::byte{9};
  std::vector<Event> out(events.size());
  std::size_t unpacked = 0;
  const Status s = unpack_raw_records(bytes, 1000, out, unpacked);
  EXPECT_EQ(unpacked, 7u);
  EXPECT_EQ(s.code(), Errc::bad_record);
  EXPECT_EQ(s.message(), "record 1007: unknown kind 9");
  EXPECT_TRUE(std::equal(out.begin(), out.begin() + 7, events.begin()));
  // Only as many records as `out` holds, and only whole ones.
  std::vector<Event> three(3);
  EXPECT_TRUE(unpack_raw_records(std::span(bytes.data(), 4 * kRawRecordSize - 1), 0, three, unpacked).is_ok());
  EXPECT_EQ(unpacked, 3u);
  EXPECT_TRUE(unpack_raw_records(std::span(bytes.data(), 2 * kRawRecordSize + 5), 0, three, unpacked).is_ok());
  EXPECT_EQ(unpacked, 2u);
}

// Each fault of a record gets the same message from unpack_raw_record as from validate_record on the event.
TEST(RawRecord, UnpackAndValidateAgreeOnEveryFault) {
  struct Case {
    std::size_t offset;
    std::uint8_t value;
    const char* message;
  };
  const Case cases[] = {
      {raw_offset::kind, 0, "record 5: unknown kind 0"},
      {raw_offset::kind, 9, "record 5: unknown kind 9"},
      {raw_offset::flags, 2, "record 5: reserved flag bits set (flags=2)"},
      {raw_offset::flags, kFlagHasOldAddr, "record 5: old_addr flag on a Malloc record"},
      {raw_offset::reserved + 3, 1, "record 5: reserved bytes 42..47 not zero"},
      {raw_offset::old_addr, 1, "record 5: old_addr set without the old_addr flag"},
  };
  const Event malloc_event = make_event(EventKind::Malloc, 1, 1, 1, 1, 1);
  for (const Case& c : cases) {
    std::vector<std::byte> bytes(kRawRecordSize);
    pack_raw_record(malloc_event, record(bytes, 0));
    bytes[c.offset] = static_cast<std::byte>(c.value);
    Event e;
    const Status s = unpack_raw_record(record(bytes, 0), 5, e);
    EXPECT_EQ(s.code(), Errc::bad_record) << c.message;
    EXPECT_EQ(s.message(), c.message);
    // The same fault in an event (no unpacking: fields set directly).
    Event direct = malloc_event;
    if (c.offset == raw_offset::kind) direct.kind = static_cast<EventKind>(c.value);
    if (c.offset == raw_offset::flags) direct.flags = c.value;
    if (c.offset == raw_offset::reserved + 3) direct.reserved[3] = c.value;
    if (c.offset == raw_offset::old_addr) direct.old_addr = c.value;
    EXPECT_EQ(validate_record(direct, 5).message(), c.message);
  }
  std::vector<std::byte> bytes(kRawRecordSize);
  pack_raw_record(make_event(EventKind::Free, 1, 1, 1, 1, 7), record(bytes, 0));
  Event e;
  EXPECT_EQ(unpack_raw_record(record(bytes, 0), 0, e).message(), "record 0: Free record with a non-zero size");
}

TEST(RawRecord, ReservedBitsAndMisplacedFlagsAreErrors) {
  Event e = make_event(EventKind::Malloc, 1, 1, 1, 1, 1);
  EXPECT_TRUE(validate_record(e, 0).is_ok());
  e.flags = 2;
  EXPECT_EQ(validate_record(e, 5).message(), "record 5: reserved flag bits set (flags=2)");
  e.flags = kFlagHasOldAddr;
  EXPECT_FALSE(validate_record(e, 5).is_ok());
  e.flags = 0;
  e.reserved[3] = 1;
  EXPECT_FALSE(validate_record(e, 5).is_ok());
  Event f = make_event(EventKind::Free, 1, 1, 1, 1, 7);
  EXPECT_FALSE(validate_record(f, 0).is_ok());
}

}  // namespace
}  // namespace memtrack::codec
