// Byte identity with rmp_serde: encoding the conformance events must give the reference bytes exactly.
#include "memtrack/codec/msgpack_encoder.h"

#include <gtest/gtest.h>

#include <sstream>

#include "common/fixtures.h"

namespace memtrack::codec {
namespace {

using memtrack::testing::data_path;
using memtrack::testing::read_file;
using memtrack::testing::read_raw_events;
using memtrack::testing::to_hex;

// events.hex holds the reference bytes of each event on its own line.
std::vector<std::string> reference_hex_lines() {
  const auto bytes = read_file(data_path("events.hex"));
  std::istringstream in(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

TEST(MsgpackEncoder, EachConformanceEventMatchesRmpSerdeBytes) {
  const auto events = read_raw_events(data_path("events.raw"));
  const auto expected = reference_hex_lines();
  ASSERT_EQ(events.size(), 509u);
  ASSERT_EQ(expected.size(), events.size());
  std::byte buf[kMaxEncodedEventBytes + kEncoderSlackBytes];
  for (std::size_t i = 0; i < events.size(); ++i) {
    const std::size_t n = encode_event(events[i], buf);
    ASSERT_LE(n, kMaxEncodedEventBytes);
    ASSERT_EQ(to_hex(buf, n), expected[i])
        << "event " << i << " (" << kind_name(events[i].kind) << "): ours first, rmp_serde second";
  }
}

TEST(MsgpackEncoder, FrameOfConformanceEventsIsByteIdenticalToFixture) {
  const auto events = read_raw_events(data_path("events.raw"));
  const auto expected = read_file(data_path("events.msgpack"));
  FrameSerializer serializer(events.size());
  const auto bytes = serializer.serialize(events);
  ASSERT_EQ(bytes.size(), expected.size());
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), expected.begin()));
  // A reused serializer gives the same bytes again.
  const auto again = serializer.serialize(events);
  EXPECT_TRUE(std::equal(again.begin(), again.end(), expected.begin()));
}

TEST(MsgpackEncoder, WorstCaseEventFitsTheBound) {
  Event e = make_realloc(INT32_MIN, INT32_MIN, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX);
  std::byte buf[kMaxEncodedEventBytes + kEncoderSlackBytes];
  EXPECT_EQ(encode_event(e, buf), kMaxEncodedEventBytes);
  e.kind = EventKind::AlignedAlloc;
  e.flags = 0;
  EXPECT_LE(encode_event(e, buf), kMaxEncodedEventBytes);
}

TEST(MsgpackEncoder, FreeHasFiveKeysAndNoSize) {
  const Event e = make_event(EventKind::Free, 1, 2, 3, 4);
  std::byte buf[kMaxEncodedEventBytes + kEncoderSlackBytes];
  const std::size_t n = encode_event(e, buf);
  EXPECT_EQ(static_cast<unsigned>(buf[0]), 0x85u);
  EXPECT_EQ(to_hex(buf, n),
            "85a3706964"
            "01"
            "a3746964"
            "02"
            "a974696d657374616d70"
            "03"
            "a461646472"
            "04"
            "a474797065"
            "a446726565");
}

}  // namespace
}  // namespace memtrack::codec
