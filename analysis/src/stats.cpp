#include "memtrack/analysis/stats.h"

#include <vector>

#include "memtrack/codec/artifact_decoder.h"

namespace memtrack::analysis {

Stats compute_stats(codec::ByteSource& source, const std::string& name, const ProgressFn& progress) {
  Stats stats;
  codec::ArtifactDecoder decoder(source, name);
  std::vector<codec::Event> events(65536);
  while (const std::size_t n = decoder.next(events)) {
    stats.add(std::span<const codec::Event>(events.data(), n));
    if (progress) progress(decoder.progress().compressed_bytes, decoder.progress().events);
  }
  stats.status = decoder.status();
  stats.file.frames = decoder.progress().frames;
  stats.file.compressed_bytes = decoder.progress().compressed_bytes;
  stats.file.decompressed_bytes = decoder.progress().decompressed_bytes;
  return stats;
}

Stats compute_stats_indexed(const codec::SeekTable& index, const ReadAt& read_at, const std::string& name,
                            const ProgressFn& progress, std::size_t max_frames_in_flight) {
  Stats stats;
  stats.file.indexed = true;
  IndexedFrameReader reader(index, read_at, name, {}, max_frames_in_flight);
  // The counts commute: each frame counts its own events in its slot, merged in frame order.
  std::vector<EventCounts> partial(reader.slots());
  std::uint64_t bytes_done = 0;
  stats.status = reader.run(
      [&](const DecodedFrame& f) {
        partial[f.slot] = EventCounts{};
        partial[f.slot].add(f.events);
      },
      [&](const DecodedFrame& f) {
        stats.counts.merge(partial[f.slot]);
        stats.heap.add(f.events);
        ++stats.file.frames;
        stats.file.decompressed_bytes += f.msgpack_bytes;
        bytes_done += f.compressed_bytes;
        if (progress) progress(bytes_done, stats.counts.events);
        return codec::Status{};
      });
  // Like the sequential path, count the index's skippable frame once the whole file was read.
  stats.file.compressed_bytes = bytes_done + (stats.status.is_ok() ? index.table_size : 0);
  return stats;
}

}  // namespace memtrack::analysis
