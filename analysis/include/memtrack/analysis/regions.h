// Regions of an artifact (docs/FORMAT.md, "Context section: control"; what a region is: memtrack/control.h):
// the occurrences of each named region with their figures, and a filter that hands other consumers only a
// region's part of the artifact, so `stats`, `top` and `report` work on a region unchanged.
//
// Occurrences. A RegionBegin opens an occurrence on its (pid, tid); a RegionEnd closes the innermost one open
// on that (pid, tid) (an end with none open is ignored); an Exec or ProcessExit of the pid closes its open
// occurrences there; the end of the stream closes the rest. An occurrence contains the events positioned in
// [begin, end) of its pid and of that pid's descendants (ProcessStart's ppid, transitively; forked before the
// region or in it).
//
// Heap accounting of an occurrence (malloc family, event_kinds.h), exact whatever came before:
// - its blocks are the blocks allocated in it; allocations/allocated_bytes count them;
// - a release in it of one of its blocks lowers its live bytes (freed_bytes); a release in it of a block
//   allocated before it (or while paused, or by a process outside it) is counted in frees_of_older and
//   changes nothing else: that block never was the region's;
// - peak_bytes is the most of its blocks live at once; retained_* what is still live at its end.
// Mappings (Mmap/Munmap) and Brk count as events only.
//
// The filter (`select`): every context record is passed on (processes, stacks and modules are needed to read
// the events), with its position rewritten to count the passed events, and of the events:
// - the events inside any occurrence of the selected name (summed: several occurrences are one stream, an
//   event inside two nested occurrences of the name is passed once);
// - and, outside them, the releases of blocks allocated inside (a Realloc's old block as a Free), so a block
//   the region allocated and the program freed later is not a leak of the region: downstream, live bytes,
//   peaks and leaks are those of the region's blocks over their whole lives; "frees" include those releases.
// EventStacks are rebuilt for the passed events; the StreamEnd is passed by finish() with the passed count.
//
// Fed like any ArtifactConsumer (analysis::read_artifact: records before the events at their position;
// records given early wait for their position). Not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "memtrack/analysis/artifact_pass.h"

namespace memtrack::analysis {

struct RegionOccurrence {
  enum class Ended : std::uint8_t { open, region_end, exec, exit, stream_end };
  std::string name;
  std::uint32_t occurrence = 1;  // 1, 2, ... among the occurrences of `name`, in the order they began
  std::int32_t pid = 0, tid = 0;
  std::uint64_t begin_event = 0, end_event = 0;  // positions
  std::uint64_t begin_timestamp = 0, end_timestamp = 0;
  Ended ended = Ended::open;
  std::uint64_t events = 0;
  std::uint64_t allocations = 0, allocated_bytes = 0;
  std::uint64_t frees = 0, freed_bytes = 0;  // releases of its own blocks in it
  std::uint64_t frees_of_older = 0;          // releases in it of blocks that were not its own
  std::uint64_t peak_bytes = 0, peak_timestamp = 0;
  std::uint64_t retained_bytes = 0, retained_blocks = 0;  // its blocks live at its end
};

// A span of the stream while recording was paused.
struct PausedSpan {
  std::uint64_t begin_event = 0, end_event = 0;  // end: the Resume's position (or the end of the stream)
  std::uint64_t begin_timestamp = 0, end_timestamp = 0;
  std::string source;  // the Pause's
  bool resumed = false;
};

class Regions final : public ArtifactConsumer {
 public:
  // Without `select`: the occurrences and their figures only. With it: also a filter in front of `downstream`.
  explicit Regions(std::optional<std::string> select = std::nullopt, ArtifactConsumer* downstream = nullptr);

  void add_context(const codec::ContextRecord& record) override;
  void add(std::span<const codec::Event> events) override;
  // After the last event: closes what is open (stream_end) and passes the StreamEnd on.
  void finish();

  [[nodiscard]] const std::vector<RegionOccurrence>& occurrences() const { return done_; }
  [[nodiscard]] const std::vector<PausedSpan>& paused() const { return paused_; }
  // Whether the artifact says it records regions (the Recording's sections list "control").
  [[nodiscard]] bool has_control() const { return control_; }
  // Events passed downstream (the filter), and occurrences of the selected name met.
  [[nodiscard]] std::uint64_t passed() const { return passed_; }
  [[nodiscard]] std::uint64_t selected_occurrences() const { return selected_seen_; }

 private:
  struct Key {
    std::int32_t pid;
    std::uint64_t addr;
    friend bool operator==(const Key&, const Key&) = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      return std::hash<std::uint64_t>()(k.addr * 0x9E3779B97F4A7C15ull ^ static_cast<std::uint32_t>(k.pid));
    }
  };
  struct Open {
    RegionOccurrence occ;
    std::unordered_set<std::int32_t> members;  // its pid and descendants
    std::unordered_map<Key, std::uint64_t, KeyHash> blocks;
    std::uint64_t live = 0;
    bool selected = false;
  };

  void apply(const codec::ContextRecord& record);
  void close(std::uint64_t id, RegionOccurrence::Ended how, std::uint64_t position, std::uint64_t ts);
  void forward(codec::ContextRecord record);
  void flush_batch();
  void add_run(std::span<const codec::Event> events);
  bool in_selected(std::int32_t pid) const;

  std::optional<std::string> select_;
  ArtifactConsumer* downstream_;
  bool control_ = false;
  std::uint64_t seen_ = 0;    // events given to add()
  std::uint64_t passed_ = 0;  // events passed downstream
  std::uint64_t selected_seen_ = 0;
  std::uint64_t last_ts_ = 0;
  PositionQueue pending_;  // records given before their position
  std::map<std::int32_t, std::int32_t> parent_;
  std::map<std::uint64_t, Open> open_;  // by id, in the order they began
  std::uint64_t next_id_ = 0;
  std::map<std::pair<std::int32_t, std::int32_t>, std::vector<std::uint64_t>> stacks_;  // (pid, tid) -> open ids
  std::map<std::string, std::uint32_t> counts_;
  std::vector<RegionOccurrence> done_;
  std::vector<PausedSpan> paused_;
  std::optional<codec::StreamEnd> end_;
  // The filter's blocks: allocated in a selected occurrence and not yet released.
  std::unordered_map<Key, std::uint64_t, KeyHash> passed_blocks_;
  std::deque<codec::EventStacks> event_stacks_;  // of the frames being read
  std::vector<codec::Event> batch_;
  std::vector<std::uint32_t> batch_ids_;
  bool batch_has_ids_ = false;
};

}  // namespace memtrack::analysis
