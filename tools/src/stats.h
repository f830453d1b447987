// What `memtrack stats` computes, as a library so tests and benchmarks can drive it without the CLI.
//
// Two halves, because they parallelize differently:
// - EventCounts is commutative (counts by kind and pid, bytes allocated, the size histogram, first and last
//   timestamps): each frame computes its own on any thread, and merge() adds them up.
// - LiveHeap depends on order (an allocation must be seen before its free): it is fed every event exactly
//   once, in artifact order, on one thread.
//
// Accounting rules (docs/FORMAT.md "Meaning"):
// - The live heap of a pid is the bytes of its Malloc, Calloc, AlignedAlloc and Realloc results not yet
//   freed. Free removes its address; Realloc removes old_addr (when present) and adds addr. Addresses are
//   per pid (processes have separate address spaces). An allocation at an address that is already live
//   (a missed free) replaces it; a free of an unknown address counts as an unmatched free.
// - Mmap/Munmap are tracked separately as mapped bytes, by address range (a munmap may cut part of a mapping).
// - Brk counts as an event and its size is summed as brk bytes, but it is not heap: malloc's own chunks
//   carved from the brk area are already counted by the allocation events, so adding brk would count them twice.
// - "Bytes allocated" sums the sizes of allocation events (Realloc counts its new size).
// - The size histogram buckets allocation sizes by powers of two: bucket 0 holds size 0, bucket k >= 1
//   holds [2^(k-1), 2^k).
// - Byte figures are 64-bit. Totals (bytes allocated, brk bytes) saturate at 2^64-1; live and mapped bytes
//   are exact while they stay below 2^64, which only hostile input (sizes near 2^64) can exceed.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "memtrack/codec/address_map.h"
#include "memtrack/codec/byte_source.h"
#include "memtrack/codec/event.h"
#include "memtrack/codec/seek_table.h"
#include "memtrack/codec/status.h"

namespace memtrack::tools {

inline constexpr std::size_t kKinds = 9;  // indexed by EventKind value; 0 unused
inline constexpr std::size_t kSizeBuckets = 65;

struct EventCounts {
  std::uint64_t events = 0;
  std::array<std::uint64_t, kKinds> by_kind{};
  std::map<std::int32_t, std::uint64_t> by_pid;
  std::uint64_t bytes_allocated = 0;
  std::uint64_t brk_bytes = 0;
  std::array<std::uint64_t, kSizeBuckets> size_histogram{};
  std::uint64_t first_timestamp = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t last_timestamp = 0;

  void add(std::span<const codec::Event> block);
  void merge(const EventCounts& other);
};

struct PidHeap {
  std::uint64_t live_bytes = 0, live_count = 0;
  std::uint64_t peak_bytes = 0, peak_timestamp = 0;
  std::uint64_t mapped_bytes = 0, peak_mapped_bytes = 0, peak_mapped_timestamp = 0;
  std::uint64_t unmatched_frees = 0, unmatched_munmaps = 0;
};

class LiveHeap {
 public:
  void add(std::span<const codec::Event> events);  // in artifact order
  [[nodiscard]] const std::map<std::int32_t, PidHeap>& pids() const { return summary_; }
  // Summed over pids: the peak of the total live heap and when it happened.
  [[nodiscard]] std::uint64_t total_peak_bytes() const { return total_peak_; }
  [[nodiscard]] std::uint64_t total_peak_timestamp() const { return total_peak_ts_; }

 private:
  struct Pid {
    PidHeap heap;
    codec::AddressMap live;                           // addr -> size
    std::map<std::uint64_t, std::uint64_t> mappings;  // start -> length, non-overlapping
  };
  Pid& pid(std::int32_t id);
  void allocate(Pid& p, std::uint64_t addr, std::uint64_t size, std::uint64_t ts);
  void release(Pid& p, std::uint64_t addr);
  void map(Pid& p, std::uint64_t addr, std::uint64_t size, std::uint64_t ts);
  void unmap(Pid& p, std::uint64_t addr, std::uint64_t size);

  std::map<std::int32_t, Pid> pids_;
  std::map<std::int32_t, PidHeap> summary_;  // refreshed by add(); what pids() returns
  std::int32_t last_pid_ = 0;
  Pid* last_ = nullptr;
  std::uint64_t total_live_ = 0, total_peak_ = 0, total_peak_ts_ = 0;
};

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
};

// Progress callback: bytes of the file consumed so far, events so far. Called from the thread that merges.
using ProgressFn = std::function<void(std::uint64_t bytes, std::uint64_t events)>;

// Sequential: any artifact, any source (pipes too), one frame of memory.
Stats compute_stats(codec::ByteSource& source, const std::string& name, const ProgressFn& progress = {});

// Reads `size` bytes at file offset `offset` into `out`.
using ReadAt = std::function<codec::Status(std::uint64_t offset, std::span<std::byte> out)>;

// With the frame index: frames are read in order, decoded and counted in parallel on the current TBB arena,
// and fed to the live heap in frame order. At most `max_frames_in_flight` frames are alive at once (0:
// derived from a memory budget and the index's frame sizes), whatever the number of threads.
Stats compute_stats_indexed(const codec::SeekTable& index, const ReadAt& read_at, const std::string& name,
                            const ProgressFn& progress = {}, std::size_t max_frames_in_flight = 0);

// Renderings: a readable table, or one JSON document.
std::string format_stats_table(const Stats& stats);
std::string format_stats_json(const Stats& stats);

}  // namespace memtrack::tools
