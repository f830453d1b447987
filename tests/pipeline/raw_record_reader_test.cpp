// The file-descriptor loops of the pipeline (memtrack/pipeline/fd_io.h, raw_record_reader.h): the raw record
// reader's validation errors name the record index and keep every record before it, through pipes that
// split records across reads; the encode path from a raw file to an artifact file through them.
#include "memtrack/pipeline/raw_record_reader.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>

#include "common/fixtures.h"
#include "memtrack/pipeline/fd_io.h"
#include "memtrack/pipeline/sink.h"
#include "memtrack/workload/realistic_events.h"
#include "pipeline/zstd_frames.h"

namespace memtrack::pipeline {
namespace {

using codec::Errc;
using codec::Event;
using codec::kRawRecordSize;

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

std::vector<Event> read_all(RawRecordReader& reader, std::size_t block) {
  std::vector<Event> all, buf(block);
  while (std::size_t n = reader.read(buf)) all.insert(all.end(), buf.begin(), buf.begin() + n);
  return all;
}

TEST(RawRecordReader, ReadsConformanceRecordsThroughAPipe) {
  const auto events = testing::read_raw_events(testing::data_path("events.raw"));
  PipeInput in(testing::raw_records(events));
  RawRecordReader reader(in.fds[0], "pipe");
  EXPECT_EQ(read_all(reader, 7), events);
  EXPECT_TRUE(reader.status().is_ok()) << reader.status().message();
}

// A request larger than the reader's own buffer is filled in several read(2) blocks, whole.
TEST(RawRecordReader, FillsRequestsLargerThanItsBlock) {
  const auto events = testing::read_raw_events(testing::data_path("realistic-140k.raw"));
  const std::size_t block = 3 * RawRecordReader::kBlockRecords + 5;
  ASSERT_GT(events.size(), 2 * block);
  PipeInput in(testing::raw_records(events));
  RawRecordReader reader(in.fds[0], "pipe");
  std::vector<Event> buf(block);
  EXPECT_EQ(reader.read(buf), block);  // blocks until full, though the pipe delivers 1000 bytes at a time
  EXPECT_TRUE(std::equal(buf.begin(), buf.end(), events.begin()));
  std::vector<Event> all(buf);
  const auto rest = read_all(reader, block);
  all.insert(all.end(), rest.begin(), rest.end());
  EXPECT_EQ(all, events);
  EXPECT_EQ(reader.records_read(), events.size());
  EXPECT_TRUE(reader.status().is_ok()) << reader.status().message();
}

TEST(RawRecordReader, UnknownKindNamesTheRecordAndKeepsThoseBefore) {
  const auto events = testing::read_raw_events(testing::data_path("events.raw"));
  auto bytes = testing::raw_records(events);
  bytes[300 * kRawRecordSize + 40] = std::byte{9};
  PipeInput in(bytes);
  RawRecordReader reader(in.fds[0], "in.raw");
  const auto got = read_all(reader, 64);
  EXPECT_EQ(got, std::vector<Event>(events.begin(), events.begin() + 300));
  EXPECT_EQ(reader.status().code(), Errc::bad_record);
  EXPECT_EQ(reader.status().message(), "in.raw: record 300: unknown kind 9");
}

TEST(RawRecordReader, TruncatedTailIsAnErrorAfterTheWholeRecords) {
  const auto events = testing::read_raw_events(testing::data_path("events.raw"));
  auto bytes = testing::raw_records(std::span(events.data(), 10));
  bytes.resize(bytes.size() + 20);
  PipeInput in(bytes);
  RawRecordReader reader(in.fds[0], "t.raw");
  EXPECT_EQ(read_all(reader, 4).size(), 10u);
  EXPECT_EQ(reader.status().code(), Errc::truncated);
  EXPECT_EQ(reader.status().message(), "t.raw: record 10: truncated (20 of 48 bytes at end of input)");
}

TEST(RawRecordReader, AStopFlagEndsReadingWithTheSignalNamed) {
  const auto events = testing::read_raw_events(testing::data_path("events.raw"));
  PipeInput in(testing::raw_records(events));
  RawRecordReader reader(in.fds[0], "stdin");
  volatile std::sig_atomic_t flag = SIGTERM;
  reader.stop_on_signal(&flag);
  std::vector<Event> buf(16);
  EXPECT_EQ(reader.read(buf), 0u);
  EXPECT_EQ(reader.status().code(), Errc::interrupted);
  EXPECT_EQ(reader.status().message(), "stdin: interrupted by SIGTERM after record 0");
}

TEST(RawRecordReader, AReadErrorNamesTheInput) {
  const int fd = ::open("/", O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  RawRecordReader reader(fd, "/");
  std::vector<Event> buf(16);
  EXPECT_EQ(reader.read(buf), 0u);
  EXPECT_EQ(reader.status().code(), Errc::io);
  EXPECT_EQ(reader.status().message(), "/: read failed after record 0: Is a directory");
  ::close(fd);
}

// The encode path from file to file: raw records read by RawRecordReader, encoded, written by FdSink: the
// file is exactly the reference artifact. Then FdSource reads it back.
TEST(FdIo, RawFileToArtifactFileThroughTheFdLoops) {
  const std::string raw_path = ::testing::TempDir() + "/pipeline_fd_io.raw";
  const std::string path = ::testing::TempDir() + "/pipeline_fd_io.zst";
  const auto events = workload::EventGenerator(6).take(1000);
  const auto raw = testing::raw_records(events);
  {
    const int fd = ::open(raw_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    FdSink raw_sink(fd, raw_path);
    EXPECT_TRUE(raw_sink.write(std::span(raw.data(), 100)).is_ok());
    EXPECT_TRUE(raw_sink.write(std::span(raw.data() + 100, raw.size() - 100)).is_ok());
    ::close(fd);
  }
  EXPECT_EQ(testing::read_file(raw_path), raw);
  {
    const int in = ::open(raw_path.c_str(), O_RDONLY | O_CLOEXEC);
    const int out = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_GE(in, 0);
    ASSERT_GE(out, 0);
    RawRecordReader source(in, raw_path);
    FdSink sink(out, path);
    EncoderOptions options;
    options.frame_events = 300;
    options.workers = 2;
    options.max_in_flight = 2;
    const codec::Status s = encode_stream(source, sink, options);
    EXPECT_TRUE(s.is_ok()) << s.message();
    ::close(in);
    ::close(out);
  }
  const auto expected = testing::reference_artifact(events, 300);
  EXPECT_EQ(testing::read_file(path), expected);

  const int in = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(in, 0);
  FdSource source(in);
  std::vector<std::byte> got(expected.size() + 10);
  std::size_t filled = 0;
  while (std::ptrdiff_t n = source.read(std::span(got.data() + filled, got.size() - filled))) {
    ASSERT_GT(n, 0);
    filled += static_cast<std::size_t>(n);
  }
  got.resize(filled);
  EXPECT_EQ(got, expected);
  ::close(in);
  std::remove(raw_path.c_str());
  std::remove(path.c_str());
}

TEST(FdIo, WriteAllReportsTheErrnoAndHowFarItGot) {
  const int fd = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  if (fd < 0) GTEST_SKIP() << "no /dev/full";
  const std::vector<std::byte> bytes(4096);
  const WriteResult r = write_all(fd, bytes);
  EXPECT_EQ(r.written, 0u);
  EXPECT_EQ(r.error, ENOSPC);
  EXPECT_EQ(errno_text(r.error), "No space left on device");
  ::close(fd);
}

}  // namespace
}  // namespace memtrack::pipeline
