#include "memtrack/analysis/artifact_pass.h"

#include "memtrack/analysis/stream_frame_reader.h"

namespace memtrack::analysis {

codec::Status read_artifact(codec::ByteSource& source, const std::string& name,
                            std::span<ArtifactConsumer* const> consumers, PassSummary& summary,
                            const ProgressFn& progress) {
  StreamFrameReader reader(source, name);
  StreamOrder order(consumers);
  const codec::Status status = reader.run([&](const DecodedFrame& f) {
    order.add(f.context, f.events, f.foreign);
    if (progress) progress(reader.progress().compressed_bytes, order.events());
    return codec::Status{};
  });
  order.finish();
  const StreamProgress& p = reader.progress();
  summary = {};
  summary.data_frames = p.data_frames;
  summary.context_frames = p.context_frames;
  summary.skippable_frames = p.skippable_frames;
  summary.compressed_bytes = p.compressed_bytes;
  summary.decompressed_bytes = p.decompressed_bytes;
  summary.events = order.events();
  return status;
}

codec::Status read_artifact(std::span<const std::byte> file, const std::string& name,
                            std::span<ArtifactConsumer* const> consumers, PassSummary& summary,
                            const ProgressFn& progress) {
  codec::MemorySource source(file);
  return read_artifact(source, name, consumers, summary, progress);
}

}  // namespace memtrack::analysis
