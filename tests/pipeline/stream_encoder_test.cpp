#include "memtrack/pipeline/stream_encoder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "common/fixtures.h"
#include "memtrack/codec/byte_source.h"
#include "memtrack/codec/compact.h"
#include "memtrack/codec/frame_walker.h"
#include "memtrack/codec/seek_table.h"
#include "memtrack/workload/realistic_events.h"
#include "pipeline/zstd_frames.h"
#include "stream_encoder_internal.h"

namespace memtrack::pipeline {
namespace {

using codec::Event;
using workload::EventGenerator;

// Feeds encode_stream from memory in irregular read sizes, like a pipe does.
class VectorSource : public EventSource {
 public:
  explicit VectorSource(std::span<const Event> events, std::size_t max_read = 977, codec::Status end = {})
      : events_(events), max_read_(max_read), end_(std::move(end)) {}
  std::size_t read(std::span<Event> out) override {
    const std::size_t n = std::min({out.size(), events_.size() - pos_, max_read_});
    std::copy_n(events_.begin() + static_cast<std::ptrdiff_t>(pos_), n, out.begin());
    pos_ += n;
    return n;
  }
  codec::Status status() const override { return pos_ == events_.size() ? end_ : codec::Status{}; }

 private:
  std::span<const Event> events_;
  std::size_t pos_ = 0;
  std::size_t max_read_;
  codec::Status end_;
};

// Fails its `fail_at`-th write (0-based), having written nothing of it, and every write after.
class FailingSink : public Sink {
 public:
  explicit FailingSink(std::size_t fail_at) : fail_at_(fail_at) {}
  codec::Status write(std::span<const std::byte> bytes) override {
    if (writes_++ >= fail_at_) return {codec::Errc::io, "test sink: No space left on device"};
    return inner_.write(bytes);
  }
  const std::vector<std::byte>& bytes() const { return inner_.bytes(); }
  std::size_t writes() const { return writes_; }

 private:
  std::size_t fail_at_;
  std::size_t writes_ = 0;
  MemorySink inner_;
};

// A memory sink that counts its writes, readable from another thread while the encoder runs.
struct CountingSink : Sink {
  std::atomic<std::uint64_t> writes{0};
  MemorySink inner;
  codec::Status write(std::span<const std::byte> bytes) override {
    codec::Status s = inner.write(bytes);
    writes.fetch_add(1);
    return s;
  }
};

EncoderOptions small_frames(std::size_t frame_events, unsigned workers, std::size_t k) {
  EncoderOptions o;
  o.frame_events = frame_events;
  o.workers = workers;
  o.max_in_flight = k;
  return o;
}

// Pushes in chunks of varying size, including single events, crossing frame boundaries.
codec::Status push_all(StreamEncoder& encoder, std::span<const Event> events) {
  std::size_t pos = 0;
  std::size_t step = 1;
  while (pos < events.size()) {
    const std::size_t n = std::min(step, events.size() - pos);
    codec::Status s = n == 1 ? encoder.push(events[pos]) : encoder.push(events.subspan(pos, n));
    if (!s.is_ok()) return s;
    pos += n;
    step = (step * 7 + 3) % 1000;
  }
  return encoder.finish();
}

std::vector<std::byte> encode_push(std::span<const Event> events, const EncoderOptions& options) {
  MemorySink sink;
  StreamEncoder encoder(sink, options);
  const codec::Status s = push_all(encoder, events);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return sink.bytes();
}

std::vector<std::byte> encode_pull(std::span<const Event> events, const EncoderOptions& options) {
  MemorySink sink;
  VectorSource source(events);
  const codec::Status s = encode_stream(source, sink, options);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return sink.bytes();
}

TEST(StreamEncoder, EmptyStreamWritesOneValidEmptyFrame) {
  for (const bool pull : {false, true}) {
    const auto bytes = pull ? encode_pull({}, small_frames(64, 2, 2)) : encode_push({}, small_frames(64, 2, 2));
    const auto frames = testing::data_frames(bytes);  // one empty data frame, then the index
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].content_size, 0u);
    EXPECT_TRUE(testing::decompress_all(bytes).empty());
    EXPECT_EQ(bytes, testing::reference_artifact({}, 64));
  }
}

TEST(StreamEncoder, RoundTripsAtFrameBoundaries) {
  const auto all = EventGenerator(7).take(65537);
  for (const std::size_t n :
       {std::size_t{0}, std::size_t{1}, std::size_t{65535}, std::size_t{65536}, std::size_t{65537}}) {
    SCOPED_TRACE(n);
    const std::span<const Event> events(all.data(), n);
    EncoderOptions options;
    options.workers = 2;
    MemorySink sink;
    StreamEncoder encoder(sink, options);
    ASSERT_TRUE(push_all(encoder, events).is_ok());
    EXPECT_EQ(encoder.stats().events, n);

    const auto frames = testing::data_frames(sink.bytes());
    ASSERT_EQ(frames.size(), n == 0 ? 1u : (n + 65535) / 65536);
    const auto expected = testing::msgpack_of(events);
    std::size_t content = 0;
    for (const auto& f : frames) {
      ASSERT_NE(f.content_size, ZSTD_CONTENTSIZE_UNKNOWN);
      ASSERT_NE(f.content_size, ZSTD_CONTENTSIZE_ERROR);
      content += f.content_size;
    }
    EXPECT_EQ(content, expected.size());
    EXPECT_EQ(testing::decompress_all(sink.bytes()), expected);
    EXPECT_EQ(encoder.stats().frames, frames.size());
    EXPECT_EQ(encoder.stats().bytes_in, expected.size());
    EXPECT_EQ(encoder.stats().bytes_out, sink.bytes().size());
    // Every frame, even the empty one, was serialized and compressed on a pool thread, and that took CPU time.
    EXPECT_GT(encoder.stats().encode_cpu_ns, 0u);
  }
}

TEST(StreamEncoder, SameBytesForEveryWorkerCountAndInFlightCap) {
  const auto events = EventGenerator(11).take(20'000);  // 79 frames of 256, the last one partial
  const auto reference = testing::reference_artifact(events, 256);
  for (unsigned workers = 1; workers <= 8; ++workers) {
    for (const std::size_t k : {1u, 2u, 3u, 8u}) {
      SCOPED_TRACE("workers " + std::to_string(workers) + " K " + std::to_string(k));
      EXPECT_EQ(encode_push(events, small_frames(256, workers, k)), reference);
      EXPECT_EQ(encode_pull(events, small_frames(256, workers, k)), reference);
    }
  }
}

TEST(StreamEncoder, CompactFramesAreTheCodecsForEveryWorkerCountAndInFlightCap) {
  const auto events = EventGenerator(12).take(20'000);
  const auto reference = testing::build_artifact(events, 256, true, codec::kDefaultLevel, true).bytes;
  EXPECT_NE(reference, testing::reference_artifact(events, 256));
  for (const unsigned workers : {1u, 3u}) {
    for (const std::size_t k : {1u, 3u}) {
      SCOPED_TRACE("workers " + std::to_string(workers) + " K " + std::to_string(k));
      EncoderOptions options = small_frames(256, workers, k);
      options.compact = true;
      EXPECT_EQ(encode_push(events, options), reference);
      EXPECT_EQ(encode_pull(events, options), reference);
    }
  }
  MemorySink sink;
  EncoderOptions too_big;
  too_big.compact = true;
  too_big.frame_events = codec::kMaxCompactFrameEvents + 1;
  EXPECT_THROW(StreamEncoder(sink, too_big), std::runtime_error);
}

TEST(StreamEncoder, CompactFramesCarryTheirEventsStacksAtTheirFirstEvent) {
  auto events = EventGenerator(13).take(5'000);
  for (std::size_t i = 0; i < events.size(); ++i)
    events[i].stack = events[i].kind == codec::EventKind::Free ? 0 : static_cast<std::uint32_t>(1 + i % 7);
  for (const unsigned workers : {1u, 3u}) {
    SCOPED_TRACE("workers " + std::to_string(workers));
    EncoderOptions options = small_frames(256, workers, 3);
    options.compact = true;
    options.compact_stacks = true;
    const auto bytes = encode_push(events, options);
    codec::MemorySource source(bytes);
    codec::FrameWalker walker(source, "a");
    std::size_t seen = 0, frames = 0;
    for (auto item = walker.next(); item != codec::FrameWalker::Item::end; item = walker.next()) {
      if (item != codec::FrameWalker::Item::events) continue;
      const codec::FrameStacks& st = walker.stacks();
      ASSERT_TRUE(st.present);
      EXPECT_EQ(st.first_event, seen);
      ASSERT_EQ(st.ids.size(), walker.events().size());
      for (std::size_t i = 0; i < st.ids.size(); ++i) ASSERT_EQ(st.ids[i], events[seen + i].stack) << seen + i;
      seen += st.ids.size();
      ++frames;
    }
    EXPECT_TRUE(walker.status().is_ok()) << walker.status().message();
    EXPECT_EQ(seen, events.size());
    EXPECT_EQ(frames, (events.size() + 255) / 256);
  }
}

TEST(StreamEncoder, DerivedCapMatchesExplicitCapBytes) {
  const auto events = EventGenerator(3).take(70'000);
  EncoderOptions options;
  options.workers = 3;
  EXPECT_EQ(encode_pull(events, options), testing::reference_artifact(events, 65536));
}

// Frames finish encoding out of order (random delays); the sink must still see them in order, and never
// more than K frames may be alive.
TEST(StreamEncoder, OrderPreservedAcrossHundredsOfFramesWithRandomEncodeDelays) {
  constexpr std::size_t kFrame = 64;
  constexpr std::size_t kK = 6;
  const auto events = EventGenerator(5).take(kFrame * 300 + 17);
  for (const bool pull : {false, true}) {
    CountingSink sink;
    std::atomic<std::uint64_t> max_ahead{0};
    EncoderOptions options = small_frames(kFrame, 4, kK);
    const internal::ScopedEncodeHook hook([&](std::uint64_t frame) {
      // Frame n is encoded only once frame n - K has been written.
      const std::uint64_t ahead = frame - std::min(frame, sink.writes.load());
      std::uint64_t seen = max_ahead.load();
      while (ahead > seen && !max_ahead.compare_exchange_weak(seen, ahead)) {
      }
      // A deterministic pseudo-random delay of 0..400 us per frame.
      const std::uint64_t h = (frame * 0x9e3779b97f4a7c15ull) >> 55;
      std::this_thread::sleep_for(std::chrono::microseconds(h % 400));
    });
    codec::Status status;
    if (pull) {
      VectorSource source(events, 50);
      status = encode_stream(source, sink, options);
    } else {
      StreamEncoder encoder(sink, options);
      status = push_all(encoder, events);
    }
    ASSERT_TRUE(status.is_ok()) << status.message();
    EXPECT_EQ(sink.writes.load(), 302u);  // 301 frames, then the index
    EXPECT_LE(max_ahead.load(), kK - 1);
    EXPECT_EQ(sink.inner.bytes(), testing::reference_artifact(events, kFrame));
    // Frame by frame, too: the i-th frame holds events [i * 64, (i + 1) * 64).
    const auto frames = testing::data_frames(sink.inner.bytes());
    ASSERT_EQ(frames.size(), 301u);
    for (std::size_t i = 0; i < frames.size(); i += 37) {
      const std::span<const std::byte> frame(sink.inner.bytes().data() + frames[i].offset, frames[i].size);
      const std::size_t n = std::min(kFrame, events.size() - i * kFrame);
      EXPECT_EQ(testing::decompress_all(frame), testing::msgpack_of(std::span(events).subspan(i * kFrame, n)));
    }
  }
}

// A stream whose frames are written before the next one fills (a recording whose encoder keeps up) reuses
// the slot freed last: it allocates one slot's buffers, not K (with slot n % K it allocated all K).
TEST(StreamEncoder, FramesWrittenOneAtATimeReuseOneSlot) {
  constexpr std::size_t kFrame = 64;
  constexpr std::size_t kFrames = 20;
  const auto events = EventGenerator(4).take(kFrame * kFrames);
  CountingSink sink;
  StreamEncoder encoder(sink, small_frames(kFrame, 2, 6));
  for (std::size_t i = 0; i < kFrames; ++i) {
    ASSERT_TRUE(encoder.push(std::span(events).subspan(i * kFrame, kFrame)).is_ok());
    // The frame fills at its last event and goes to the pool; the next push acquires another slot.
    while (sink.writes.load() < i + 1) std::this_thread::sleep_for(std::chrono::microseconds(100));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the writer frees the slot after the write
  }
  ASSERT_TRUE(encoder.finish().is_ok());
  EXPECT_EQ(encoder.stats().in_flight_cap, 6u);
  // Frame i + 1 fills while frame i may still be unwritten only if the writer was descheduled for 5 ms.
  EXPECT_LE(encoder.stats().slots_used, 2u);
  EXPECT_GE(encoder.stats().slots_used, 1u);
  EXPECT_EQ(sink.inner.bytes(), testing::reference_artifact(events, kFrame));
}

TEST(StreamEncoder, FailingSinkStopsWithErrorAndLeavesDecodablePrefix) {
  constexpr std::size_t kFrame = 128;
  const auto events = EventGenerator(9).take(kFrame * 200);
  for (const std::size_t fail_at : {0u, 1u, 5u, 150u}) {
    for (const bool pull : {false, true}) {
      SCOPED_TRACE("fail_at " + std::to_string(fail_at) + (pull ? " pull" : " push"));
      FailingSink sink(fail_at);
      EncoderOptions options = small_frames(kFrame, 3, 4);
      const internal::ScopedEncodeHook hook(
          [](std::uint64_t frame) { std::this_thread::sleep_for(std::chrono::microseconds((frame % 3) * 50)); });
      codec::Status status;
      if (pull) {
        VectorSource source(events);
        status = encode_stream(source, sink, options);
      } else {
        StreamEncoder encoder(sink, options);
        status = push_all(encoder, events);
        // Later calls keep returning the same error, without hanging.
        EXPECT_EQ(encoder.push(events[0]).message(), status.message());
        EXPECT_EQ(encoder.finish().message(), status.message());
        EXPECT_EQ(encoder.stats().frames, fail_at);
      }
      ASSERT_FALSE(status.is_ok());
      EXPECT_EQ(status.code(), codec::Errc::io);
      EXPECT_NE(status.message().find("frame " + std::to_string(fail_at)), std::string::npos) << status.message();
      EXPECT_NE(status.message().find("No space left on device"), std::string::npos) << status.message();
      // Exactly the frames before the failing one, and they decode to their events.
      EXPECT_EQ(sink.writes(), fail_at + 1);
      EXPECT_EQ(testing::split_frames(sink.bytes()).size(), fail_at);
      EXPECT_EQ(testing::decompress_all(sink.bytes()), testing::msgpack_of(std::span(events).first(fail_at * kFrame)));
    }
  }
}

// Many short runs with random worker counts, caps, delays and failure points: every run must end (ctest's
// timeout catches a hang), report the failure if one was injected, and leave exactly the frames before it.
TEST(StreamEncoder, RandomFailuresNeverHangAndLeaveExactPrefixes) {
  const auto events = EventGenerator(21).take(32 * 40);
  std::uint64_t rng = 12345;
  auto next = [&rng](std::uint64_t n) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (rng >> 33) % n;
  };
  for (int run = 0; run < 60; ++run) {
    const std::size_t frames_total = 40;
    // Writes 0..39 are the frames, write 40 the index; fail_at > 40 never fails.
    const std::size_t fail_at = next(frames_total + 5);
    EncoderOptions options = small_frames(32, 1 + static_cast<unsigned>(next(6)), 1 + next(5));
    const std::uint64_t jitter = next(3);
    const internal::ScopedEncodeHook hook([jitter](std::uint64_t frame) {
      if (jitter != 0 && frame % (jitter + 1) == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
    });
    FailingSink sink(fail_at);
    codec::Status status;
    if (next(2) == 0) {
      VectorSource source(events, 1 + next(100));
      status = encode_stream(source, sink, options);
    } else {
      StreamEncoder encoder(sink, options);
      status = push_all(encoder, events);
    }
    SCOPED_TRACE("run " + std::to_string(run) + " fail_at " + std::to_string(fail_at));
    const std::size_t written = std::min(fail_at, frames_total);
    EXPECT_EQ(status.is_ok(), fail_at > frames_total) << status.message();
    EXPECT_EQ(testing::decompress_all(sink.bytes()), testing::msgpack_of(std::span(events).first(written * 32)));
  }
}

// The arena really runs min(workers, K) encoders at once, on distinct threads, even when that is more than
// oneTBB's default pool (hardware_concurrency - 1 workers): frames that sleep while encoding must overlap.
TEST(StreamEncoder, EncodesUpToMinOfWorkersAndKFramesAtOnce) {
  const auto events = EventGenerator(8).take(16 * 60);
  for (const auto& [workers, k] :
       {std::pair{2u, std::size_t{8}}, std::pair{4u, std::size_t{8}}, std::pair{8u, std::size_t{3}}}) {
    std::mutex m;
    std::set<std::thread::id> threads;
    std::atomic<int> running{0};
    std::atomic<int> most{0};
    const auto expected = static_cast<int>(std::min<std::size_t>(workers, k));
    // Each encode stays in the hook until `expected` encodes were inside at once (or a deadline passes):
    // on a loaded machine a fixed sleep may end before the other workers are scheduled, so waiting for
    // them is what makes the maximum reachable; the bound itself (never more) is what is tested.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    EncoderOptions options = small_frames(16, workers, k);
    const internal::ScopedEncodeHook hook([&](std::uint64_t) {
      {
        std::lock_guard lock(m);
        threads.insert(std::this_thread::get_id());
      }
      const int now = ++running;
      int seen = most.load();
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      while (most.load() < expected && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      --running;
    });
    MemorySink sink;
    VectorSource source(events);
    ASSERT_TRUE(encode_stream(source, sink, options).is_ok());
    EXPECT_EQ(most.load(), expected) << "workers " << workers << " K " << k;
    EXPECT_GE(threads.size(), static_cast<std::size_t>(expected));  // oneTBB may rotate workers over time
  }
}

// A sink that blocks until released: the producer must feel backpressure, and finish() must complete once
// the sink moves again.
TEST(StreamEncoder, SlowSinkBlocksProducerNotPool) {
  struct GateSink : Sink {
    std::mutex m;
    std::condition_variable cv;
    bool open = false;
    MemorySink inner;
    codec::Status write(std::span<const std::byte> bytes) override {
      std::unique_lock lock(m);
      cv.wait(lock, [&] { return open; });
      return inner.write(bytes);
    }
  };
  GateSink sink;
  const auto events = EventGenerator(2).take(64 * 40);
  std::atomic<bool> done{false};
  std::thread producer([&] {
    StreamEncoder encoder(sink, small_frames(64, 2, 3));
    EXPECT_TRUE(push_all(encoder, events).is_ok());
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(done.load());  // 40 frames cannot fit in 3 slots while the sink is closed
  {
    std::lock_guard lock(sink.m);
    sink.open = true;
  }
  sink.cv.notify_all();
  producer.join();
  EXPECT_TRUE(done.load());
  EXPECT_EQ(sink.inner.bytes(), testing::reference_artifact(events, 64));
}

TEST(StreamEncoder, ThrowingSinkIsAnError) {
  struct ThrowingSink : Sink {
    codec::Status write(std::span<const std::byte>) override { throw std::runtime_error("disk on fire"); }
  };
  ThrowingSink sink;
  StreamEncoder encoder(sink, small_frames(16, 2, 2));
  const auto events = EventGenerator(1).take(100);
  const codec::Status status = push_all(encoder, events);
  EXPECT_EQ(status.code(), codec::Errc::io);
  EXPECT_NE(status.message().find("frame 0 (events 0 to 15): sink threw: disk on fire"), std::string::npos)
      << status.message();
}

TEST(StreamEncoder, SourceErrorKeepsEventsReadBeforeIt) {
  const auto events = EventGenerator(4).take(1000);
  MemorySink sink;
  VectorSource source(events, 300, {codec::Errc::bad_record, "stdin: record 1000: unknown kind 9"});
  const codec::Status status = encode_stream(source, sink, small_frames(256, 2, 2));
  EXPECT_EQ(status.code(), codec::Errc::bad_record);
  EXPECT_EQ(status.message(), "stdin: record 1000: unknown kind 9");
  EXPECT_EQ(sink.bytes(), testing::reference_artifact(events, 256));
}

TEST(StreamEncoder, FinishIsIdempotentAndPushAfterFinishIsRejected) {
  MemorySink sink;
  StreamEncoder encoder(sink, small_frames(16, 1, 2));
  const auto events = EventGenerator(1).take(40);
  ASSERT_TRUE(encoder.push(events).is_ok());
  ASSERT_TRUE(encoder.finish().is_ok());
  ASSERT_TRUE(encoder.finish().is_ok());
  EXPECT_EQ(encoder.push(events[0]).code(), codec::Errc::usage);
  EXPECT_EQ(sink.bytes(), testing::reference_artifact(events, 16));
  EXPECT_EQ(encoder.stats().frames, 3u);
  EXPECT_EQ(encoder.stats().in_flight_cap, 2u);
}

TEST(StreamEncoder, DestructorFinishes) {
  MemorySink sink;
  const auto events = EventGenerator(1).take(100);
  {
    StreamEncoder encoder(sink, small_frames(16, 2, 2));
    ASSERT_TRUE(encoder.push(events).is_ok());
  }
  EXPECT_EQ(sink.bytes(), testing::reference_artifact(events, 16));
}

TEST(StreamEncoder, SetupErrorsThrow) {
  MemorySink sink;
  EncoderOptions bad_frame;
  bad_frame.frame_events = 0;
  EXPECT_THROW(StreamEncoder(sink, bad_frame), std::runtime_error);
  EncoderOptions bad_level;
  bad_level.level = 1000;
  EXPECT_THROW(StreamEncoder(sink, bad_level), std::runtime_error);
}

TEST(InFlightCap, DerivedFromBudgetNotFromWorkers) {
  EncoderOptions options;
  const std::size_t k = derive_in_flight_cap(options);
  EXPECT_GE(k, 2u);
  EXPECT_LE(k * slot_bytes(options), kDefaultMemoryBudgetBytes);
  for (const unsigned workers : {1u, 2u, 16u, 64u}) {
    options.workers = workers;
    EXPECT_EQ(derive_in_flight_cap(options), k);
  }
  options.memory_budget_bytes = 1;  // too small for anything: the floor of 2 still applies
  EXPECT_EQ(derive_in_flight_cap(options), 2u);
  options.memory_budget_bytes = std::size_t{1} << 40;
  EXPECT_EQ(derive_in_flight_cap(options), kMaxDerivedInFlight);
  options.max_in_flight = 5;
  EXPECT_EQ(derive_in_flight_cap(options), 5u);
}

TEST(FdSink, ClosedPipeIsAnErrorNotASignal) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  FdSink sink(fds[1], "test pipe");
  const auto events = EventGenerator(1).take(1000);
  VectorSource source(events);
  const codec::Status status = encode_stream(source, sink, small_frames(100, 2, 2));
  ::close(fds[1]);
  ASSERT_FALSE(status.is_ok());
  EXPECT_EQ(status.code(), codec::Errc::io);
  EXPECT_NE(status.message().find("frame 0"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("test pipe: write failed"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("Broken pipe"), std::string::npos) << status.message();
}

// A pipe holds 64 KiB, so every 64k-event frame (~1.3 MB) goes through many short writes to a slow reader.
TEST(FdSink, ShortWritesToASlowPipeReaderLoseNothing) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::vector<std::byte> received;
  std::thread reader([&] {
    std::byte buf[4096];
    for (;;) {
      const ssize_t n = ::read(fds[0], buf, sizeof buf);
      if (n <= 0) break;
      received.insert(received.end(), buf, buf + n);
    }
  });
  const auto events = EventGenerator(6).take(150'000);
  {
    FdSink sink(fds[1], "pipe");
    EncoderOptions options;
    options.workers = 2;
    VectorSource source(events);
    EXPECT_TRUE(encode_stream(source, sink, options).is_ok());
  }
  ::close(fds[1]);
  reader.join();
  ::close(fds[0]);
  EXPECT_EQ(received, testing::reference_artifact(events, 65536));
}

}  // namespace
}  // namespace memtrack::pipeline

namespace memtrack::pipeline {
namespace {

// The index the writer appends describes exactly the frames it wrote: offsets, compressed sizes and content
// sizes, for any worker count; and an encoder told not to write one writes only frames.
TEST(StreamEncoder, SeekTableDescribesTheFramesWritten) {
  const auto events = EventGenerator(11).take(1000);
  for (const unsigned workers : {1u, 3u}) {
    const auto bytes = encode_push(events, small_frames(64, workers, 3));
    const auto frames = testing::data_frames(bytes);
    ASSERT_EQ(frames.size(), 16u);  // 15 full frames of 64 and one of 40
    const std::size_t table_offset = frames.back().offset + frames.back().size;
    codec::Status status;
    const std::uint64_t table_size =
        codec::seek_table_size(std::span(bytes).last(codec::kSeekTableFooterSize), bytes.size(), status);
    ASSERT_TRUE(status.is_ok()) << status.message();
    ASSERT_EQ(table_size, bytes.size() - table_offset);
    codec::SeekTable table;
    ASSERT_TRUE(codec::parse_seek_table(std::span(bytes).subspan(table_offset), bytes.size(), table).is_ok());
    ASSERT_EQ(table.frames.size(), frames.size());
    for (std::size_t i = 0; i < frames.size(); ++i) {
      EXPECT_EQ(table.frames[i].offset, frames[i].offset) << i;
      EXPECT_EQ(table.frames[i].compressed_size, frames[i].size) << i;
      EXPECT_EQ(table.frames[i].decompressed_size, frames[i].content_size) << i;
    }
  }
  EncoderOptions no_index = small_frames(64, 2, 3);
  no_index.write_seek_table = false;
  const auto bare = encode_push(events, no_index);
  EXPECT_EQ(bare, testing::reference_artifact(events, 64, codec::kDefaultLevel, /*with_index=*/false));
}

}  // namespace
}  // namespace memtrack::pipeline

namespace memtrack::pipeline {
namespace {

TEST(StreamEncoderContext, ContextFramesFollowDataFramesAndLeaveTheirBytesAlone) {
  const std::vector<Event> events = EventGenerator(71).take(10 * 1000 + 7);
  const std::vector<std::byte> reference = testing::reference_artifact(events, 1000);
  ContextChannel channel;
  channel.add(codec::ProcessStart{7, 1, 0, 5});
  EncoderOptions o = small_frames(1000, 2, 3);
  o.context = &channel;
  std::atomic<int> built = 0;
  o.frame_context = [&](const FrameContextInput& in, std::vector<codec::ContextRecord>& out) {
    ++built;
    out.push_back(codec::Untracked{std::nullopt, "frame" + std::to_string(in.frame), "test", in.first_event});
    return codec::Status{};
  };
  MemorySink sink;
  StreamEncoder encoder(sink, o);
  ASSERT_TRUE(encoder.push(events).is_ok());
  ASSERT_TRUE(encoder.finish().is_ok());
  EXPECT_EQ(built.load(), 11);
  const auto frames = testing::split_frames(sink.bytes());
  std::vector<std::byte> data;
  std::vector<codec::ContextRecord> records;
  std::size_t context = 0;
  for (std::size_t i = 0; i + 1 < frames.size(); ++i) {
    const auto bytes = std::span(sink.bytes()).subspan(frames[i].offset, frames[i].size);
    if (codec::is_context_frame(bytes)) {
      ++context;
      ASSERT_TRUE(codec::decode_context_frame(bytes, frames[i].offset, records).is_ok());
    } else {
      data.insert(data.end(), bytes.begin(), bytes.end());
    }
  }
  // The data frames are the reference artifact's, byte for byte (its seek table aside).
  const auto ref_frames = testing::data_frames(reference);
  EXPECT_EQ(data, std::vector<std::byte>(reference.begin(),
                                         reference.begin() + static_cast<std::ptrdiff_t>(ref_frames.back().offset +
                                                                                         ref_frames.back().size)));
  EXPECT_EQ(context, 11u + 1u + 1u);  // one per frame, the channel's after frame 0, the last with End
  ASSERT_GE(records.size(), 3u);
  EXPECT_EQ(std::get<codec::StreamEnd>(records.back()), (codec::StreamEnd{10007, 11, true}));
  EXPECT_EQ(encoder.stats().context_frames, 13u);
  // The seek table lists every frame, context frames with decompressed size 0.
  codec::Status st;
  const auto& b = sink.bytes();
  const std::uint64_t size = codec::seek_table_size(std::span(b.data() + b.size() - 9, 9), b.size(), st);
  codec::SeekTable table;
  ASSERT_TRUE(codec::parse_seek_table(std::span(b.data() + b.size() - size, size), b.size(), table).is_ok());
  EXPECT_EQ(table.frames.size(), 11u + 13u);
}

}  // namespace
}  // namespace memtrack::pipeline
