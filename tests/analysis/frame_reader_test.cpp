// IndexedFrameReader, the one indexed frame reader of `stats` and `decode --frames`: a range of frames comes
// out whole and in order at any parallelism; the first bad frame ends the run after every frame before it,
// with one error naming the frame and its offset; an index entry larger than any frame is refused as
// too_large before anything is read or allocated.
#include "memtrack/analysis/frame_reader.h"

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <cstring>
#include <vector>

#include "common/artifacts.h"
#include "memtrack/codec/seek_table.h"

namespace memtrack::analysis {
namespace {

using codec::Event;

codec::SeekTable index_of(const std::vector<std::byte>& bytes) {
  codec::Status st;
  const std::uint64_t size = codec::seek_table_size(std::span(bytes.data() + bytes.size() - 9, 9), bytes.size(), st);
  codec::SeekTable index;
  EXPECT_TRUE(
      codec::parse_seek_table(std::span(bytes.data() + bytes.size() - size, size), bytes.size(), index).is_ok());
  return index;
}

ReadAt reader_of(const std::vector<std::byte>& bytes, std::atomic<int>* reads = nullptr) {
  return [&bytes, reads](std::uint64_t offset, std::span<std::byte> out) {
    if (reads != nullptr) ++*reads;
    std::memcpy(out.data(), bytes.data() + offset, out.size());
    return codec::Status{};
  };
}

TEST(IndexedFrameReader, ARangeComesOutWholeAndInOrderAtAnyParallelism) {
  const auto events = testing::generate_trace(10 * 1000, 31);
  const auto a = testing::build_artifact(events, 1000, true);
  const codec::SeekTable index = index_of(a.bytes);
  ASSERT_EQ(index.frames.size(), 10u);
  for (int threads : {1, 2}) {
    for (std::size_t in_flight : {1u, 3u, 0u}) {
      SCOPED_TRACE(std::to_string(threads) + " threads, " + std::to_string(in_flight) + " in flight");
      tbb::task_arena arena(threads);
      IndexedFrameReader reader(index, reader_of(a.bytes), "r.zst", {2, 7}, in_flight);
      ASSERT_GE(reader.slots(), 1u);
      std::vector<std::size_t> order;
      std::vector<Event> got;
      std::atomic<std::size_t> parallel_calls = 0;
      codec::Status st;
      arena.execute([&] {
        st = reader.run([&](const DecodedFrame& f) { parallel_calls += f.events.size() == 1000 ? 1 : 0; },
                        [&](const DecodedFrame& f) {
                          EXPECT_LT(f.slot, reader.slots());
                          EXPECT_EQ(f.compressed_bytes, index.frames[f.index].compressed_size);
                          EXPECT_EQ(f.msgpack_bytes, index.frames[f.index].decompressed_size);
                          order.push_back(f.index);
                          got.insert(got.end(), f.events.begin(), f.events.end());
                          return codec::Status{};
                        });
      });
      ASSERT_TRUE(st.is_ok()) << st.message();
      EXPECT_EQ(order, (std::vector<std::size_t>{2, 3, 4, 5, 6}));
      EXPECT_EQ(parallel_calls.load(), 5u);
      ASSERT_EQ(got.size(), 5000u);
      EXPECT_EQ(std::memcmp(got.data(), events.data() + 2000, got.size() * sizeof(Event)), 0);
    }
  }
}

TEST(IndexedFrameReader, TheInOrderStageStopsTheRunWithItsStatus) {
  const auto events = testing::generate_trace(8 * 500, 32);
  const auto a = testing::build_artifact(events, 500, true);
  const codec::SeekTable index = index_of(a.bytes);
  IndexedFrameReader reader(index, reader_of(a.bytes), "w.zst", {}, 2);
  std::size_t delivered = 0;
  const codec::Status st = reader.run({}, [&](const DecodedFrame& f) {
    ++delivered;
    return f.index == 3 ? codec::Status{codec::Errc::io, "stdout: write failed"} : codec::Status{};
  });
  EXPECT_EQ(st.code(), codec::Errc::io);
  EXPECT_EQ(st.message(), "stdout: write failed");
  EXPECT_EQ(delivered, 4u);
}

TEST(IndexedFrameReader, ADamagedFrameEndsTheRunAfterTheFramesBeforeIt) {
  const auto events = testing::generate_trace(6 * 500, 33);
  auto a = testing::build_artifact(events, 500, true);
  a.bytes[a.frame_offsets[4] + 40] ^= std::byte{0x08};
  const codec::SeekTable index = index_of(a.bytes);
  IndexedFrameReader reader(index, reader_of(a.bytes), "d.zst");
  std::vector<std::size_t> order;
  const codec::Status st = reader.run({}, [&](const DecodedFrame& f) {
    order.push_back(f.index);
    return codec::Status{};
  });
  EXPECT_FALSE(st.is_ok());
  EXPECT_EQ(st.message().rfind("d.zst: frame 4 at byte " + std::to_string(a.frame_offsets[4]) + ": ", 0), 0u)
      << st.message();
  EXPECT_EQ(order, (std::vector<std::size_t>{0, 1, 2, 3}));
}

TEST(IndexedFrameReader, AnEntryLargerThanAnyFrameIsTooLargeAndNeverRead) {
  codec::SeekTable index;
  index.frames.push_back({0, 17u << 20, 100});
  index.table_offset = 17u << 20;
  std::atomic<int> reads = 0;
  const std::vector<std::byte> none;
  IndexedFrameReader reader(index, reader_of(none, &reads), "huge.zst");
  bool delivered = false;
  const codec::Status st = reader.run({}, [&](const DecodedFrame&) {
    delivered = true;
    return codec::Status{};
  });
  EXPECT_EQ(st.code(), codec::Errc::too_large);
  EXPECT_EQ(st.message(), "huge.zst: frame 0 at byte 0: the index says " + std::to_string(17u << 20) +
                              " bytes, more than a frame can be");
  EXPECT_FALSE(delivered);
  EXPECT_EQ(reads.load(), 0);
}

}  // namespace
}  // namespace memtrack::analysis
