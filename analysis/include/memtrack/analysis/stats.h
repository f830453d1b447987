// A trace's summary, what `memtrack stats` reports: the counts (counts.h), the live heap (live_heap.h) and
// what the file looked like. The accumulator is Stats: feed it events in artifact order with add(), or let
// compute_stats / compute_stats_indexed read a whole artifact into it, then read its fields.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "memtrack/analysis/counts.h"
#include "memtrack/analysis/frame_reader.h"
#include "memtrack/analysis/live_heap.h"
#include "memtrack/codec/byte_source.h"
#include "memtrack/codec/event.h"
#include "memtrack/codec/seek_table.h"
#include "memtrack/codec/status.h"

namespace memtrack::analysis {

struct FileSummary {
  std::uint64_t frames = 0;              // zstd data frames decoded
  std::uint64_t compressed_bytes = 0;    // file bytes read (data frames and skippable frames)
  std::uint64_t decompressed_bytes = 0;  // msgpack bytes
  bool indexed = false;                  // read through the frame index (frames decoded in parallel)
};

struct Stats {
  EventCounts counts;
  LiveHeap heap;
  FileSummary file;
  codec::Status status;  // not ok: the artifact is damaged, and the stats cover the events before the damage

  // Events in artifact order (the live heap depends on it). compute_stats_indexed instead counts each frame
  // on its own thread and merges, which gives the same counts.
  void add(std::span<const codec::Event> events) {
    counts.add(events);
    heap.add(events);
  }
};

// Progress callback: bytes of the file consumed so far, events so far. Called from the thread that merges.
using ProgressFn = std::function<void(std::uint64_t bytes, std::uint64_t events)>;

// Sequential: any artifact, any source (pipes too), one frame of memory.
Stats compute_stats(codec::ByteSource& source, const std::string& name, const ProgressFn& progress = {});

// With the frame index (IndexedFrameReader): frames are decoded and counted in parallel on the current TBB
// arena and fed to the live heap in frame order. `max_frames_in_flight` as IndexedFrameReader's.
Stats compute_stats_indexed(const codec::SeekTable& index, const ReadAt& read_at, const std::string& name,
                            const ProgressFn& progress = {}, std::size_t max_frames_in_flight = 0);

}  // namespace memtrack::analysis
