// Lifecycle numbers from artifact bytes: data frames written by the pipeline's encode_stream, context frames
// (codec::encode_context_frame) spliced after them where docs/FORMAT.md "Context section: positions" puts
// them, a frame index listing both. Read back frame by frame as the format promises (a data frame, then the
// context frames after it, whose records are applied among that frame's events), the numbers are the ones
// computed by hand in lifecycle_test.cpp; so are those of compute_stats (StreamFrameReader) and
// compute_stats_indexed (IndexedFrameReader), which read the context frames in the same pass as the events. Artifacts
// cut at every frame boundary keep the records of the frames they keep, and are not complete.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "lifecycle_trace.h"
#include "memtrack/analysis/artifact_pass.h"
#include "memtrack/analysis/stats.h"
#include "memtrack/codec/byte_source.h"
#include "memtrack/codec/context.h"
#include "memtrack/codec/frame_decoder.h"
#include "memtrack/codec/seek_table.h"
#include "memtrack/pipeline/sink.h"
#include "memtrack/pipeline/stream_encoder.h"
#include "pipeline/zstd_frames.h"

namespace memtrack::analysis {
namespace {

using codec::ContextRecord;
using codec::Event;
using testing::kMiB;
using testing::kRecorder;
using testing::position;
using testing::Trace;

class SpanSource final : public pipeline::EventSource {
 public:
  explicit SpanSource(std::span<const Event> events) : events_(events) {}
  std::size_t read(std::span<Event> out) override {
    const std::size_t n = std::min(out.size(), events_.size() - pos_);
    std::copy_n(events_.begin() + static_cast<std::ptrdiff_t>(pos_), n, out.begin());
    pos_ += n;
    return n;
  }
  codec::Status status() const override { return {}; }

 private:
  std::span<const Event> events_;
  std::size_t pos_ = 0;
};

struct Built {
  std::vector<std::byte> bytes;
  struct Boundary {
    std::size_t offset = 0;     // where a frame (data or context) ends, the index excluded
    std::uint64_t covered = 0;  // events whose records are all in the artifact up to here
  };
  std::vector<Boundary> boundaries;
};

// Data frames of `frame_events` from encode_stream; after data frame m, one context frame with every record
// positioned at or before m's end not written yet (the Recording record first); after the last one, the End
// record; then a seek table of all of them.
Built build(const Trace& t, std::size_t frame_events, bool with_end = true) {
  pipeline::MemorySink sink;
  SpanSource source(t.events);
  pipeline::EncoderOptions options;
  options.frame_events = frame_events;
  options.workers = 2;
  options.write_seek_table = false;
  const codec::Status s = pipeline::encode_stream(source, sink, options);
  if (!s.is_ok()) throw std::runtime_error(s.message());
  const auto frames = testing::split_frames(sink.bytes());

  std::vector<ContextRecord> records;
  records.emplace_back(codec::RecordingInfo{"test", {"sh", "-c", "work"}, 1, 2, {"lifecycle"}, kRecorder});
  records.insert(records.end(), t.records.begin(), t.records.end());
  codec::FrameCompressor compressor(3);
  std::vector<std::byte> scratch;
  codec::SeekTableBuilder index;
  Built b;
  std::size_t next = 0, end_event = 0;
  auto context_frame = [&](std::span<const ContextRecord> batch) {
    std::vector<std::byte> frame;
    const codec::Status st = codec::encode_context_frame(batch, compressor, scratch, frame);
    if (!st.is_ok()) throw std::runtime_error(st.message());
    b.bytes.insert(b.bytes.end(), frame.begin(), frame.end());
    b.boundaries.push_back({b.bytes.size(), end_event});
    index.add(static_cast<std::uint32_t>(frame.size()), 0);
  };
  for (std::size_t m = 0; m < frames.size(); ++m) {
    const auto* data = sink.bytes().data() + frames[m].offset;
    b.bytes.insert(b.bytes.end(), data, data + frames[m].size);
    // The records of this frame's events follow it: up to here, only those of the frames before.
    b.boundaries.push_back({b.bytes.size(), end_event});
    index.add(static_cast<std::uint32_t>(frames[m].size), static_cast<std::uint32_t>(frames[m].content_size));
    end_event = std::min(t.events.size(), (m + 1) * frame_events);
    std::vector<ContextRecord> batch;
    const bool last = m + 1 == frames.size();
    while (next < records.size() && (last || position(records[next]) <= end_event)) batch.push_back(records[next++]);
    if (last && with_end) batch.emplace_back(codec::StreamEnd{t.events.size(), frames.size(), true});
    if (!batch.empty()) context_frame(batch);
  }
  const auto table = index.finish();
  b.bytes.insert(b.bytes.end(), table.begin(), table.end());
  return b;
}

// Reads `bytes` as FORMAT.md promises a sequential reader can: each data frame's events are handed over after
// the records of the context frames that follow it (a one-frame delay). Stops at the frame index.
Stats read_with_context(std::span<const std::byte> bytes) {
  Stats stats;
  codec::FrameDecoder decoder;
  std::vector<Event> pending, events;
  auto flush = [&] {
    stats.add(pending);
    pending.clear();
  };
  std::size_t pos = 0;
  while (pos + 8 <= bytes.size()) {
    std::uint32_t magic = 0, size = 0;
    std::memcpy(&magic, bytes.data() + pos, 4);
    std::memcpy(&size, bytes.data() + pos + 4, 4);
    if (magic == codec::kSeekTableSkippableMagic) break;
    if (codec::is_context_frame(bytes.subspan(pos))) {
      std::vector<ContextRecord> records;
      const codec::Status s = codec::decode_context_frame(bytes.subspan(pos, 8 + std::size_t{size}), pos, records);
      if (!s.is_ok()) throw std::runtime_error(s.message());
      for (const auto& r : records) stats.add_context(r);
      pos += 8 + std::size_t{size};
      continue;
    }
    flush();  // the previous data frame had no context frame after it
    const std::size_t n = ZSTD_findFrameCompressedSize(bytes.data() + pos, bytes.size() - pos);
    if (ZSTD_isError(n)) throw std::runtime_error("bad frame");
    events.clear();
    const codec::Status s = decoder.decode(bytes.subspan(pos, n), events);
    if (!s.is_ok()) throw std::runtime_error(s.message());
    pending = events;
    ++stats.file.frames;
    pos += n;
  }
  flush();
  return stats;
}

// The trace of lifecycle_test.cpp's SequentialChildrenPeakIsOneChilds: a shell holding 1000 bytes runs 30
// children one after another, each holding 1 MiB.
Trace sequential_children() {
  Trace t;
  t.start(10, kRecorder);
  t.exec(10, "/bin/sh", {"sh", "-c", "loop"});
  t.malloc(10, 0x1000, 1000);
  for (int i = 0; i < 30; ++i) {
    const std::int32_t pid = 100 + i;
    t.start(pid, 10);
    t.malloc(pid, 0x5000, 24);
    t.exec(pid, "/usr/bin/child", {"child", std::to_string(i)});
    for (int k = 0; k < 4; ++k) t.malloc(pid, 0x10000 + 0x100000 * k, kMiB / 4);
    t.exit(pid);
  }
  return t;
}

TEST(LifecycleArtifact, RecordsAfterTheirFramesGiveTheLifecycleNumbers) {
  const Trace t = sequential_children();
  for (const std::size_t frame_events : {1, 3, 7, 64, 1000}) {
    const Built b = build(t, frame_events);
    const Stats s = read_with_context(b.bytes);
    EXPECT_EQ(s.counts.events, t.events.size());
    EXPECT_EQ(s.heap.total_peak_bytes(), 1000 + kMiB) << frame_events;
    EXPECT_EQ(s.heap.late_records(), 0u) << frame_events;
    EXPECT_EQ(s.heap.pending_records(), 0u) << frame_events;
    EXPECT_EQ(s.heap.images().size(), 61u);
    ASSERT_TRUE(s.context.recording);
    EXPECT_EQ(s.context.recording->command, (std::vector<std::string>{"sh", "-c", "work"}));
    EXPECT_EQ(s.complete(), true);
  }
}

codec::SeekTable index_of(std::span<const std::byte> bytes) {
  codec::Status st;
  const std::uint64_t size = codec::seek_table_size(bytes.last(codec::kSeekTableFooterSize), bytes.size(), st);
  codec::SeekTable index;
  const codec::Status parsed = codec::parse_seek_table(bytes.last(size), bytes.size(), index);
  if (!st.is_ok() || !parsed.is_ok()) throw std::runtime_error("no index");
  return index;
}

void expect_same(const Stats& a, const Stats& b, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(a.counts.events, b.counts.events);
  EXPECT_EQ(a.heap.total_peak_bytes(), b.heap.total_peak_bytes());
  EXPECT_EQ(a.heap.total_live_bytes(), b.heap.total_live_bytes());
  EXPECT_EQ(a.heap.images().size(), b.heap.images().size());
  EXPECT_EQ(a.heap.late_records(), b.heap.late_records());
  EXPECT_EQ(a.heap.pending_records(), b.heap.pending_records());
  EXPECT_EQ(a.context.records, b.context.records);
  EXPECT_EQ(a.complete(), b.complete());
  for (std::size_t i = 0; i < std::min(a.heap.images().size(), b.heap.images().size()); ++i) {
    EXPECT_EQ(a.heap.images()[i].heap.peak_bytes, b.heap.images()[i].heap.peak_bytes) << "image " << i;
    EXPECT_EQ(a.heap.images()[i].heap.live_bytes, b.heap.images()[i].heap.live_bytes) << "image " << i;
  }
}

// The one reader, three ways in: a stream (a pipe: StreamFrameReader), the frame index (IndexedFrameReader,
// frames decoded in parallel), bytes in memory (read_artifact): the numbers of the frame-by-frame reading
// the format describes, records applied at their positions (none late), whatever the frame size.
TEST(LifecycleArtifact, StreamIndexedAndInMemoryReadersGiveTheLifecycleNumbers) {
  const Trace t = sequential_children();
  for (const std::size_t frame_events : {1, 3, 7, 64, 1000}) {
    const Built b = build(t, frame_events);
    const std::string what = std::to_string(frame_events) + " events per frame";
    const Stats expected = read_with_context(b.bytes);
    codec::MemorySource source(b.bytes);
    const Stats streamed = compute_stats(source, "mem");
    ASSERT_TRUE(streamed.status.is_ok()) << streamed.status.message();
    EXPECT_EQ(streamed.heap.total_peak_bytes(), 1000 + kMiB) << what;
    EXPECT_EQ(streamed.heap.late_records(), 0u) << what;
    EXPECT_TRUE(streamed.file.index_at_end) << what;
    expect_same(streamed, expected, "stream, " + what);
    const codec::SeekTable index = index_of(b.bytes);
    for (const std::size_t in_flight : {1u, 2u, 0u}) {
      const Stats indexed = compute_stats_indexed(
          index,
          [&](std::uint64_t offset, std::span<std::byte> out) {
            std::memcpy(out.data(), b.bytes.data() + offset, out.size());
            return codec::Status{};
          },
          "mem", {}, in_flight);
      ASSERT_TRUE(indexed.status.is_ok()) << indexed.status.message();
      expect_same(indexed, expected, "indexed, " + what + ", " + std::to_string(in_flight) + " in flight");
      EXPECT_EQ(indexed.file.compressed_bytes, b.bytes.size()) << what;
    }
    // read_artifact: the same records and events in the same order as the stream reader gives the stats.
    struct Log final : ArtifactConsumer {
      std::vector<std::string> seen;
      void add_context(const ContextRecord& r) override {
        seen.push_back("r" + std::to_string(r.index()) + "@" + std::to_string(position_of(r).value_or(0)));
      }
      void add(std::span<const Event> events) override {
        for (const Event& e : events) seen.push_back("e" + std::to_string(e.timestamp));
      }
    } log;
    ArtifactConsumer* consumers[] = {&log};
    PassSummary summary;
    ASSERT_TRUE(read_artifact(b.bytes, "mem", consumers, summary).is_ok());
    EXPECT_EQ(summary.events, t.events.size());
    EXPECT_EQ(summary.compressed_bytes, b.bytes.size());
    // Every record comes before the event at its position and after the one before it.
    std::uint64_t events_seen = 0;
    for (const std::string& x : log.seen) {
      if (x[0] == 'e') {
        ++events_seen;
      } else {
        const std::uint64_t pos = std::stoull(x.substr(x.find('@') + 1));
        // (End, index 5, has no position: it comes when read, after the last frame's events.)
        if (x.rfind("r5@", 0) != 0) {
          EXPECT_EQ(pos, events_seen) << x << ", " << what;
        }
      }
    }
    EXPECT_EQ(events_seen, t.events.size());
  }
}

// Cut at every byte: the stream reader never reads past the cut, reports an error naming a frame for every
// cut inside a frame, and delivers only events of whole data frames (a prefix of the trace).
TEST(LifecycleArtifact, StreamReaderCutAtEveryByteDeliversAPrefixAndOneError) {
  const Trace t = sequential_children();
  const Built b = build(t, 16);
  std::vector<std::size_t> ends;
  for (const auto& boundary : b.boundaries) ends.push_back(boundary.offset);
  for (std::size_t n = 1; n < b.bytes.size(); ++n) {
    const std::vector<std::byte> cut(b.bytes.begin(), b.bytes.begin() + static_cast<std::ptrdiff_t>(n));
    codec::MemorySource source(cut);
    const Stats s = compute_stats(source, "cut");
    const bool at_boundary = std::find(ends.begin(), ends.end(), n) != ends.end();
    EXPECT_EQ(s.status.is_ok(), at_boundary) << n << ": " << s.status.message();
    if (!s.status.is_ok()) {
      EXPECT_EQ(s.status.message().rfind("cut: ", 0), 0u) << s.status.message();
    }
    EXPECT_EQ(s.counts.events % 16 == 0 || s.counts.events == t.events.size(), true) << n;
    EXPECT_LE(s.file.compressed_bytes, n);
  }
}

TEST(LifecycleArtifact, TodaysSequentialReaderReadsEveryEventAndSeesTheIndex) {
  const Trace t = sequential_children();
  const Built b = build(t, 7);
  codec::MemorySource source(b.bytes);
  const Stats s = compute_stats(source, "mem");
  ASSERT_TRUE(s.status.is_ok()) << s.status.message();
  EXPECT_EQ(s.counts.events, t.events.size());
  // The index counts context frames too: found at the end whatever their number.
  EXPECT_TRUE(s.file.index_at_end);
  EXPECT_EQ(s.file.frames, (t.events.size() + 6) / 7);
}

// Cut after every frame. A cut after a context frame keeps the records of every data frame kept, and the
// lifecycle numbers are those of feeding the kept events and the records positioned in them directly. A cut
// between a data frame and its context frame loses the records of that frame's events only (the numbers are
// those of the records up to the frame before). Without the End record the artifact is never complete: false
// once a context frame was read, unknown before (indistinguishable from a version-1 artifact cut short).
TEST(LifecycleArtifact, CutAtEveryFrameBoundaryKeepsTheContextOfTheFramesBeforeIt) {
  const Trace t = sequential_children();
  const Built b = build(t, 16);
  std::size_t with_context = 0;
  for (std::size_t i = 0; i + 1 < b.boundaries.size(); ++i) {
    const std::span<const std::byte> cut(b.bytes.data(), b.boundaries[i].offset);
    const Stats s = read_with_context(cut);
    const std::uint64_t kept = s.counts.events;
    const std::uint64_t covered = i == 0 ? 0 : b.boundaries[i - 1].covered;
    const bool after_context =
        codec::is_context_frame(std::span<const std::byte>(b.bytes).subspan(i == 0 ? 0 : b.boundaries[i - 1].offset));
    const std::uint64_t records_up_to = after_context ? b.boundaries[i].covered : covered;
    LiveHeap direct;
    for (const auto& r : t.records)
      if (position(r) <= records_up_to) direct.add_context(r);
    direct.add(std::span<const Event>(t.events).first(kept));
    EXPECT_EQ(s.heap.total_peak_bytes(), direct.total_peak_bytes()) << "cut " << i;
    EXPECT_EQ(s.heap.total_live_bytes(), direct.total_live_bytes()) << "cut " << i;
    EXPECT_EQ(s.heap.images().size(), direct.images().size()) << "cut " << i;
    if (s.has_context()) {
      ++with_context;
      EXPECT_EQ(s.complete(), false) << "cut " << i;
    } else {
      EXPECT_EQ(s.complete(), std::nullopt) << "cut " << i;
    }
    // The sequential reader reads the context frames in the same pass (it used to skip them, and said
    // "unknown"): the same numbers as the frame-by-frame reading above.
    codec::MemorySource source(cut);
    const Stats today = compute_stats(source, "cut");
    EXPECT_EQ(today.counts.events, kept);
    EXPECT_EQ(today.complete(), s.complete()) << "cut " << i;
    EXPECT_EQ(today.heap.total_peak_bytes(), direct.total_peak_bytes()) << "cut " << i;
    EXPECT_EQ(today.heap.images().size(), direct.images().size()) << "cut " << i;
    EXPECT_EQ(today.has_context(), s.has_context()) << "cut " << i;
  }
  EXPECT_GT(with_context, b.boundaries.size() / 2);
}

}  // namespace
}  // namespace memtrack::analysis
