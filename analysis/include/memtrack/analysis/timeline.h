// Memory over time, what `memtrack report` charts: the global live heap and mapped bytes after every event,
// per process image its own live heap, resident memory (the whole recording's and each process's, from the
// `Resident` samples when the artifact has them), and the lifecycle markers (start, exec, exit), downsampled as they are
// recorded so that a recording of any length keeps a bounded series.
//
// Downsampling: a series is a row of at most `max_points` time buckets of equal width over
// [first event, now]; a bucket keeps the largest value sampled in it (the chart is about how high memory
// went) and the time of that sample. When time runs past the last bucket the width doubles and neighbouring
// buckets merge (each keeping the larger), so any bucket's value is the exact maximum of the samples in it.
// The global heap's exact peak is LiveHeap's (total_peak_*), not a sample.
//
// TimelineBuilder is fed context records and events in position order (artifact_pass.h), and drives the
// LiveHeap it is given (which must see every event, in order, only through it). Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "memtrack/analysis/live_heap.h"
#include "memtrack/analysis/resident.h"
#include "memtrack/analysis/stream_order.h"
#include "memtrack/codec/context.h"
#include "memtrack/codec/event.h"

namespace memtrack::analysis {

// One downsampled series. Times are nanoseconds since the origin the builder was given (the first event).
class MaxSeries {
 public:
  explicit MaxSeries(std::size_t max_points = 2000);
  void add(std::uint64_t t, std::uint64_t value, std::uint64_t value2 = 0);
  // The non-empty buckets in time order: t (the time of the bucket's largest value), value, and the bucket's
  // largest value2 (e.g. mapped bytes beside heap bytes).
  struct Point {
    std::uint64_t t, value, value2;
  };
  [[nodiscard]] std::vector<Point> points() const;
  [[nodiscard]] std::uint64_t samples() const { return samples_; }

 private:
  struct Bucket {
    std::uint64_t t = 0, value = 0, value2 = 0;
    bool used = false;
  };
  std::size_t max_;
  std::uint64_t width_ = 1;  // nanoseconds per bucket, a power of two
  std::vector<Bucket> buckets_;
  std::uint64_t samples_ = 0;
};

struct TimelineMarker {
  enum class Kind : std::uint8_t { start, exec, exit };
  std::uint64_t t_ns = 0;
  Kind kind = Kind::start;
  std::int32_t pid = 0;
  std::string label;  // "pid 12 from 11", the exec'd command line, "exit status 0" / "killed by signal 9"
};

struct ImageSeries {
  std::int32_t pid = 0;
  std::size_t image = 0;  // index in LiveHeap::images()
  std::string label;      // "pid 12 ./prog arg" (the image's command when known)
  std::uint64_t peak_bytes = 0;
  std::vector<MaxSeries::Point> points;  // value = the image's live heap
};

// One process's resident memory (docs/FORMAT.md, "Context section: resident"): each sample's anon + file +
// shmem, and 0 at its exit. A pid, not an image: a sample does not change at exec.
struct PidResidentSeries {
  std::int32_t pid = 0;
  std::uint64_t peak_bytes = 0;
  std::vector<MaxSeries::Point> points;  // value = resident bytes
};

struct Timeline {
  std::vector<MaxSeries::Point> total;  // value = live heap, value2 = mapped bytes (images alive)
  std::uint64_t samples = 0;            // samples before downsampling (events, and lifecycle records)
  std::uint64_t peak_bytes = 0, peak_t_ns = 0;
  std::vector<ImageSeries> images;  // the images with the largest peaks, largest first
  std::size_t images_total = 0;     // images that had any heap (images.size() may be fewer)
  std::vector<TimelineMarker> markers;
  bool has_lifecycle = false;
  // Empty without Resident records. value = the resident bytes of the processes alive (of `pid` when set).
  std::vector<MaxSeries::Point> resident;
  std::vector<PidResidentSeries> resident_pids;  // the pids with the largest peaks, largest first
};

class TimelineBuilder final : public ArtifactConsumer {
 public:
  // `heap` outlives the builder. `pid`: only that pid's images make the global series (its peak is then the
  // highest sample). At most `max_images` per-image series are kept in the result.
  explicit TimelineBuilder(LiveHeap& heap, std::size_t max_points = 2000, std::size_t max_images = 32,
                           std::optional<std::int32_t> pid = std::nullopt);

  void add_context(const codec::ContextRecord& record) override;  // at its position (before the events after it)
  void add(std::span<const codec::Event> events) override;

  [[nodiscard]] Timeline result() const;

 private:
  struct ImageTrack {
    MaxSeries series;
    std::uint64_t last_mapped = 0;  // what total_mapped_ holds for it
  };
  void sync_images();
  [[nodiscard]] std::uint64_t rel(std::uint64_t ts) const { return ts > origin_ ? ts - origin_ : 0; }
  void sample_total(std::uint64_t ts);
  void add_resident(const codec::ContextRecord& record);
  void recount_mapped();

  LiveHeap& heap_;
  std::size_t max_points_, max_images_;
  std::optional<std::int32_t> pid_;
  bool origin_set_ = false;
  std::uint64_t origin_ = 0;  // the first event's timestamp; records before it are at 0
  MaxSeries total_;
  std::uint64_t total_mapped_ = 0;                         // over alive images (of pid_ when set)
  std::vector<ImageTrack> tracks_;                         // by image index
  std::unordered_map<std::int32_t, std::size_t> current_;  // pid -> its current image's index
  std::size_t images_seen_ = 0;
  std::vector<TimelineMarker> markers_;
  ResidentBooks resident_;  // the sum over the processes alive
  MaxSeries resident_total_;
  struct PidResidentTrack {
    MaxSeries series;
    std::uint64_t peak = 0;
  };
  std::map<std::int32_t, PidResidentTrack> resident_pids_;
};

}  // namespace memtrack::analysis
