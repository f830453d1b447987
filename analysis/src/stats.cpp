#include "memtrack/analysis/stats.h"

#include <cstring>
#include <vector>

#include "memtrack/analysis/stream_frame_reader.h"

namespace memtrack::analysis {

void Stats::keep_context(const codec::ContextRecord& record) {
  ++context.records;
  if (const auto* r = std::get_if<codec::RecordingInfo>(&record)) {
    context.recording = *r;
  } else if (const auto* u = std::get_if<codec::Untracked>(&record)) {
    context.untracked.push_back(*u);
  } else if (const auto* e = std::get_if<codec::StreamEnd>(&record)) {
    context.end = *e;
  }
}

void Stats::add_context(const codec::ContextRecord& record) {
  keep_context(record);
  // The lifecycle records, an Untracked among them (an image the pid execs into ends its current one).
  if (!std::holds_alternative<codec::RecordingInfo>(record) && !std::holds_alternative<codec::StreamEnd>(record))
    heap.add_context(record);
}

std::optional<bool> Stats::complete() const {
  if (!status.is_ok()) return false;
  if (const auto& end = context.end) return end->clean && end->events == counts.events && end->frames == file.frames;
  if (file.index_at_end) return true;
  if (has_context()) return false;
  return std::nullopt;
}

namespace {

// Passes bytes through and keeps the last kSeekTableFooterSize, so a sequential reader (a pipe has no end to
// seek to) can tell whether the stream ended with a frame index.
class TailSource final : public codec::ByteSource {
 public:
  explicit TailSource(codec::ByteSource& inner) : inner_(inner) {}
  std::ptrdiff_t read(std::span<std::byte> out) override {
    const std::ptrdiff_t n = inner_.read(out);
    if (n > 0) {
      const auto got = static_cast<std::size_t>(n);
      if (got >= sizeof tail_) {
        std::memcpy(tail_, out.data() + got - sizeof tail_, sizeof tail_);
      } else {
        std::memmove(tail_, tail_ + got, sizeof tail_ - got);
        std::memcpy(tail_ + sizeof tail_ - got, out.data(), got);
      }
      total_ += got;
    }
    return n;
  }
  // The stream ended with a seek table footer (seekable magic, no reserved bits) counting `frames` frames.
  [[nodiscard]] bool ends_with_index(std::uint64_t frames) const {
    if (total_ < sizeof tail_) return false;
    auto u32 = [&](std::size_t at) { return codec::load_le32(reinterpret_cast<const std::byte*>(tail_ + at)); };
    return u32(5) == codec::kSeekableMagic && (tail_[4] & 0x7Fu) == 0 && u32(0) == frames;
  }

 private:
  codec::ByteSource& inner_;
  std::uint8_t tail_[codec::kSeekTableFooterSize] = {};
  std::uint64_t total_ = 0;
};

}  // namespace

FileSummary file_summary(const PassSummary& pass) {
  FileSummary f;
  f.frames = pass.data_frames;
  f.compressed_bytes = pass.compressed_bytes;
  f.decompressed_bytes = pass.decompressed_bytes;
  return f;
}

Stats compute_stats(codec::ByteSource& source, const std::string& name, const ProgressFn& progress,
                    std::span<ArtifactConsumer* const> also) {
  Stats stats;
  TailSource tail(source);
  StatsConsumer consumer(stats);
  std::vector<ArtifactConsumer*> consumers{&consumer};
  consumers.insert(consumers.end(), also.begin(), also.end());
  PassSummary pass;
  stats.status = read_artifact(tail, name, consumers, pass, progress);
  stats.file = file_summary(pass);
  // The index lists every zstd frame but itself: data frames and the other skippable (context) frames.
  stats.file.index_at_end = stats.status.is_ok() && pass.skippable_frames > 0 &&
                            tail.ends_with_index(pass.data_frames + pass.skippable_frames - 1);
  return stats;
}

Stats compute_stats_indexed(const codec::SeekTable& index, const ReadAt& read_at, const std::string& name,
                            const ProgressFn& progress, std::size_t max_frames_in_flight,
                            std::span<ArtifactConsumer* const> also) {
  Stats stats;
  stats.file.indexed = true;
  IndexedFrameReader reader(index, read_at, name, {}, max_frames_in_flight);
  StatsConsumer consumer(stats, StatsConsumer::Part::heap_and_context);
  std::vector<ArtifactConsumer*> consumers{&consumer};
  consumers.insert(consumers.end(), also.begin(), also.end());
  StreamOrder order(consumers);
  // The counts commute: each frame counts its own events in its slot, merged in frame order; the live heap
  // and the context records need stream order, so they are fed in order.
  std::vector<EventCounts> partial(reader.slots());
  std::uint64_t bytes_done = 0, data_bytes = 0;
  stats.status = reader.run(
      [&](const DecodedFrame& f) {
        partial[f.slot] = EventCounts{};
        partial[f.slot].add(f.events);
      },
      [&](const DecodedFrame& f) {
        stats.counts.merge(partial[f.slot]);
        order.add(f.context, f.events, f.foreign);
        ++stats.file.frames;
        stats.file.decompressed_bytes += f.msgpack_bytes;
        data_bytes += f.compressed_bytes;
        bytes_done += f.compressed_bytes + f.context_bytes;
        if (progress) progress(bytes_done, stats.counts.events);
        return codec::Status{};
      });
  order.finish();
  // Like the sequential path, the skippable frames (context frames and the index) once the whole file was read.
  stats.file.compressed_bytes = data_bytes + (stats.status.is_ok() ? reader.skippable_bytes() + index.table_size : 0);
  stats.file.index_at_end = stats.status.is_ok();
  return stats;
}

}  // namespace memtrack::analysis
