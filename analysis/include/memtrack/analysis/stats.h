// A trace's summary, what `memtrack stats` reports: the counts (counts.h), the live heap (live_heap.h), the
// artifact's context records (who the processes were, docs/FORMAT.md "Context section") and what the file
// looked like. The accumulator is Stats: feed it events in artifact order with add() and context records
// with add_context() (before the events at their position, or earlier), or let compute_stats /
// compute_stats_indexed read a whole artifact into it, then read its fields.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "memtrack/analysis/artifact_pass.h"
#include "memtrack/analysis/counts.h"
#include "memtrack/analysis/frame_reader.h"
#include "memtrack/analysis/live_heap.h"
#include "memtrack/analysis/resident.h"
#include "memtrack/codec/byte_source.h"
#include "memtrack/codec/context.h"
#include "memtrack/codec/event.h"
#include "memtrack/codec/seek_table.h"
#include "memtrack/codec/status.h"

namespace memtrack::analysis {

struct FileSummary {
  std::uint64_t frames = 0;              // zstd data frames decoded
  std::uint64_t compressed_bytes = 0;    // file bytes read (data frames and skippable frames)
  std::uint64_t decompressed_bytes = 0;  // msgpack bytes
  bool indexed = false;                  // read through the frame index (frames decoded in parallel)
  // The stream ended with a valid frame index describing every frame read: our writer's mark of a stream
  // that finished (it writes the index only then).
  bool index_at_end = false;
};

// The context section's records other than the lifecycle ones (which the live heap applies); all empty for
// a version-1 artifact.
struct ContextSummary {
  std::uint64_t records = 0;  // every context record read, lifecycle ones included
  std::optional<codec::RecordingInfo> recording;
  std::vector<codec::Untracked> untracked;
  std::optional<codec::StreamEnd> end;
};

// What a pass read (artifact_pass.h) as the stats report it.
[[nodiscard]] FileSummary file_summary(const PassSummary& pass);

struct Stats {
  EventCounts counts;
  LiveHeap heap;
  FileSummary file;
  codec::Status status;  // not ok: the artifact is damaged, and the stats cover the events before the damage

  ContextSummary context;
  ForeignCounts foreign;  // events of types this reader does not know, in none of the numbers above
  // Resident memory from the Resident records (fed with the live heap, so only where this Stats drives it).
  ResidentBooks resident;

  // Whether the Recording lists the resident section (an artifact recorded with resident sampling).
  [[nodiscard]] bool resident_recorded() const {
    return context.recording && std::ranges::find(context.recording->sections, "resident") !=
                                    context.recording->sections.end();
  }

  // Whether the Recording lists the attached section (`memtrack attach`, docs/FORMAT.md): the recording began
  // while the process ran, so its peak is the peak since the attach and a free of a block allocated before
  // it (an unmatched free) is a free of a block from before the recording, not an error.
  [[nodiscard]] bool attached() const {
    return context.recording && std::ranges::find(context.recording->sections, "attached") !=
                                    context.recording->sections.end();
  }

  // Whether the Recording lists the resident-pages section, or the artifact has ResidentPages records.
  [[nodiscard]] bool resident_pages_recorded() const {
    return resident.page_snapshots() != 0 ||
           (context.recording && std::ranges::find(context.recording->sections, "resident-pages") !=
                                     context.recording->sections.end());
  }

  // Events in artifact order (the live heap depends on it). compute_stats_indexed instead counts each frame
  // on its own thread and merges, which gives the same counts.
  void add(std::span<const codec::Event> events) {
    counts.add(events);
    heap.add(events);
  }
  // A context record, in the order of the artifact's context frames; lifecycle records go to the live heap
  // (which applies them at their position), the others are kept above.
  void add_context(const codec::ContextRecord& record);
  // The same without the live heap's part: the record kept above, counted (the heap is fed by its driver).
  void keep_context(const codec::ContextRecord& record);

  // Whether the artifact has a context section: without one, the numbers are the version-1 model's
  // (every pid alive to the end, no exec, no fork inheritance) and the table says so.
  [[nodiscard]] bool has_context() const { return context.records != 0; }

  // Whether the stream is known to be whole (what the writer's end says): false if damaged, or if an `End`
  // record is not clean or disagrees with the events and data frames read; true with a clean, matching
  // `End`, else with a frame index at the end; false for an artifact with context but neither (our context
  // writer always ends with `End`: it was cut short); nullopt when the writer left no mark either way (no
  // context, no index: older artifacts, other writers).
  [[nodiscard]] std::optional<bool> complete() const;
};

// Stats fed by a pass (read_artifact, a region filter's downstream), whole or in part:
//   all                 counts, live heap, context
//   heap_and_context    the counts are made apart (compute_stats_indexed: per frame, in parallel)
//   counts_and_context  the live heap is driven by another consumer (`memtrack report`'s timeline)
class StatsConsumer final : public ArtifactConsumer {
 public:
  enum class Part : std::uint8_t { all, heap_and_context, counts_and_context };
  explicit StatsConsumer(Stats& stats, Part part = Part::all) : stats_(stats), part_(part) {}
  void add_context(const codec::ContextRecord& record) override {
    if (part_ == Part::counts_and_context)
      stats_.keep_context(record);
    else
      stats_.add_context(record);
  }
  void add(std::span<const codec::Event> events) override {
    if (part_ != Part::heap_and_context) stats_.counts.add(events);
    if (part_ != Part::counts_and_context) stats_.heap.add(events);
  }
  void add_foreign(const codec::ForeignEvent& event) override { stats_.foreign.add(event.type); }

 private:
  Stats& stats_;
  Part part_;
};

// Both read the context records in the same pass as the events (frame_reader.h), so the numbers are the same
// whether the artifact comes from a file or a pipe. `also`: more consumers fed in the same pass, in stream
// order, after the stats (e.g. `stats`' leak sites), from the reading thread (indexed: the in-order stage).

// Sequential (StreamFrameReader): any artifact, any source (pipes too), one frame of memory.
Stats compute_stats(codec::ByteSource& source, const std::string& name, const ProgressFn& progress = {},
                    std::span<ArtifactConsumer* const> also = {});

// With the frame index (IndexedFrameReader): frames are decoded and counted in parallel on the current TBB
// arena and fed to the live heap, with their context records, in frame order. `max_frames_in_flight` as
// IndexedFrameReader's.
Stats compute_stats_indexed(const codec::SeekTable& index, const ReadAt& read_at, const std::string& name,
                            const ProgressFn& progress = {}, std::size_t max_frames_in_flight = 0,
                            std::span<ArtifactConsumer* const> also = {});

}  // namespace memtrack::analysis
