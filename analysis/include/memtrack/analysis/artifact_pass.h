// One sequential pass over a whole artifact in memory, data frames and context frames together, handing each
// consumer the context records and events in position order: a record before the events at and after its
// `event` position (context frames follow the data frame they describe, so a frame's events are held until
// the context frames after it are read). What `memtrack report` and `memtrack export` read with, feeding the
// sites, the timeline and the stats from one pass.
//
// (analysis::read_sites, sites.h, is the same pass for one SiteAccumulator; both should become this one
// once the shared frame readers of frame_reader.h deliver context records.)
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "memtrack/codec/context.h"
#include "memtrack/codec/event.h"
#include "memtrack/codec/status.h"

namespace memtrack::analysis {

// Called from the reading thread only, in the order described above.
class ArtifactConsumer {
 public:
  virtual ~ArtifactConsumer() = default;
  virtual void add_context(const codec::ContextRecord& record) = 0;
  virtual void add(std::span<const codec::Event> events) = 0;
};

struct PassSummary {
  std::uint64_t data_frames = 0, context_frames = 0;
  std::uint64_t compressed_bytes = 0;    // file bytes read
  std::uint64_t decompressed_bytes = 0;  // msgpack bytes of the data frames
  std::uint64_t events = 0;
};

// Progress: file bytes consumed so far, events so far (after each data frame).
using PassProgressFn = std::function<void(std::uint64_t bytes, std::uint64_t events)>;

// Reads `file` (named `name` in errors) into every consumer. Errors: "<name>: frame <i> at byte <offset>:
// <what>", or the context decoder's message; everything before the damage has been delivered (the held
// frame's events included). The frame index (seek table) is a skippable frame and is stepped over.
codec::Status read_artifact(std::span<const std::byte> file, const std::string& name,
                            std::span<ArtifactConsumer* const> consumers, PassSummary& summary,
                            const PassProgressFn& progress = {});

}  // namespace memtrack::analysis
