// The raw record reader: validation errors name the record index and keep every record before it.
#include "memtrack/codec/raw_record.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "common/fixtures.h"

namespace memtrack::codec {
namespace {

// Feeds bytes through a pipe, so the reader sees the same short reads as with a real producer.
struct PipeInput {
  int fds[2];
  std::thread writer;
  explicit PipeInput(std::vector<std::byte> bytes) {
    EXPECT_EQ(::pipe(fds), 0);
    writer = std::thread([this, b = std::move(bytes)] {
      std::size_t done = 0;
      while (done < b.size()) {
        // Odd-sized writes so records straddle reads.
        const std::size_t chunk = std::min<std::size_t>(1000, b.size() - done);
        const ssize_t n = ::write(fds[1], b.data() + done, chunk);
        if (n <= 0) break;
        done += static_cast<std::size_t>(n);
      }
      ::close(fds[1]);
    });
  }
  ~PipeInput() {
    writer.join();
    ::close(fds[0]);
  }
};

std::vector<std::byte> to_bytes(const std::vector<Event>& events) {
  std::vector<std::byte> b(events.size() * sizeof(Event));
  std::memcpy(b.data(), events.data(), b.size());
  return b;
}

std::vector<Event> read_all(RawRecordReader& reader, std::size_t block) {
  std::vector<Event> all, buf(block);
  while (std::size_t n = reader.read(buf)) all.insert(all.end(), buf.begin(), buf.begin() + n);
  return all;
}

TEST(RawRecord, ReadsConformanceRecordsThroughAPipe) {
  const auto events = testing::read_raw_events(testing::data_path("events.raw"));
  PipeInput in(to_bytes(events));
  RawRecordReader reader(in.fds[0], "pipe");
  EXPECT_EQ(read_all(reader, 7), events);
  EXPECT_TRUE(reader.status().is_ok()) << reader.status().message();
}

TEST(RawRecord, UnknownKindNamesTheRecordAndKeepsThoseBefore) {
  auto events = testing::read_raw_events(testing::data_path("events.raw"));
  reinterpret_cast<unsigned char*>(&events[300])[40] = 9;
  PipeInput in(to_bytes(events));
  RawRecordReader reader(in.fds[0], "in.raw");
  const auto got = read_all(reader, 64);
  EXPECT_EQ(got, std::vector<Event>(events.begin(), events.begin() + 300));
  EXPECT_EQ(reader.status().code(), Errc::bad_record);
  EXPECT_EQ(reader.status().message(), "in.raw: record 300: unknown kind 9");
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

TEST(RawRecord, TruncatedTailIsAnErrorAfterTheWholeRecords) {
  const auto events = testing::read_raw_events(testing::data_path("events.raw"));
  auto bytes = to_bytes(std::vector<Event>(events.begin(), events.begin() + 10));
  bytes.resize(bytes.size() + 20);
  PipeInput in(bytes);
  RawRecordReader reader(in.fds[0], "t.raw");
  EXPECT_EQ(read_all(reader, 4).size(), 10u);
  EXPECT_EQ(reader.status().code(), Errc::truncated);
  EXPECT_EQ(reader.status().message(), "t.raw: record 10: truncated (20 of 48 bytes at end of input)");
}

}  // namespace
}  // namespace memtrack::codec
