// One sequential pass over a whole artifact, data frames and context frames together, handing each consumer
// the context records and events in stream order (StreamFrameReader + stream_order.h: StreamOrder): a record
// before the events at and after its position. What `memtrack report`, `export` and `top` read with, feeding
// the sites, the timeline and the stats from one pass.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "memtrack/analysis/frame_reader.h"
#include "memtrack/codec/byte_source.h"
#include "memtrack/codec/context.h"
#include "memtrack/codec/event.h"
#include "memtrack/codec/status.h"

namespace memtrack::analysis {

struct PassSummary {
  std::uint64_t data_frames = 0, context_frames = 0;
  std::uint64_t skippable_frames = 0;    // context frames, the frame index, any other skippable frame
  std::uint64_t compressed_bytes = 0;    // file bytes read: up to the end of the last whole frame
  std::uint64_t decompressed_bytes = 0;  // msgpack bytes of the data frames
  std::uint64_t events = 0;
};

// Reads `source` (named `name` in errors) into every consumer. Errors: StreamFrameReader's
// ("<name>: frame <i> at byte <offset>: <what>", or the context decoder's message); everything valid before
// the damage has been delivered. The frame index (seek table) is a skippable frame and is stepped over.
codec::Status read_artifact(codec::ByteSource& source, const std::string& name,
                            std::span<ArtifactConsumer* const> consumers, PassSummary& summary,
                            const ProgressFn& progress = {});

// The same over an artifact in memory.
codec::Status read_artifact(std::span<const std::byte> file, const std::string& name,
                            std::span<ArtifactConsumer* const> consumers, PassSummary& summary,
                            const ProgressFn& progress = {});

}  // namespace memtrack::analysis
