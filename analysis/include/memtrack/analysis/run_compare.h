// One recording's headline figures, its processes and its regions, in forms two recordings can be compared
// in (`memtrack diff`, `memtrack check`, `memtrack stats --regions`). Sites are paired in site_match.h.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "memtrack/analysis/live_heap.h"
#include "memtrack/analysis/regions.h"
#include "memtrack/analysis/site_match.h"
#include "memtrack/analysis/sites.h"
#include "memtrack/analysis/stats.h"

namespace memtrack::analysis {

// What `memtrack stats` reports for the whole recording, with the site accumulator's temporary count.
struct RunTotals {
  std::uint64_t events = 0;
  std::uint64_t allocations = 0, allocated_bytes = 0;  // allocating events (event_kinds.h) and their bytes
  std::uint64_t peak_bytes = 0;                        // the peak of the live heap (LiveHeap's total)
  std::uint64_t peak_at_ns = 0;                        // when: after the first event
  std::uint64_t leaked_bytes = 0, leaked_blocks = 0;   // stats' leaks (live at the end, exec'd images aside)
  std::uint64_t temporary = 0;                         // the sites' and the allocations' without a stack
  std::uint64_t processes = 0;                         // process images that began as a process (not an exec)
  // The peak of resident memory (stats' "peak resident", resident.h), when the recording has samples.
  bool resident_sampled = false;
  std::uint64_t peak_resident_bytes = 0;
};

// `sites`: the same pass's sites (any limit: only the unknown and per-site temporary counts are read, so it
// must hold every site, limit 0), or null when they were not accumulated (temporary stays 0).
[[nodiscard]] RunTotals run_totals(const Stats& stats, const SitesResult* sites);

// One process image's figures (live_heap.h's ProcessImage).
struct ImageFigures {
  std::uint64_t events = 0, peak_bytes = 0, leaked_bytes = 0, leaked_blocks = 0;
};

// Images paired by executable (its basename) and order of appearance: the k-th image of an executable in
// base with the k-th in head. Without a context section the executable is empty and images pair in pid order.
struct ImageChange {
  std::string executable;                   // the basename
  std::uint32_t nth = 1;                    // 1, 2, ... among the images of that executable
  std::int32_t base_pid = 0, head_pid = 0;  // 0 on a side without it
  std::optional<ImageFigures> base, head;
  ChangeStatus status = ChangeStatus::same;
};

// In head's order, then base's unmatched ones.
[[nodiscard]] std::vector<ImageChange> match_images(const std::deque<ProcessImage>& base,
                                                    const std::deque<ProcessImage>& head);

// A region occurrence's figures (regions.h): its own blocks' peak, allocations and their bytes, and what of
// them was still live at its end.
struct RegionRun {
  std::uint64_t peak_bytes = 0, allocated_bytes = 0, allocations = 0, leaked_bytes = 0, leaked_blocks = 0;
};

// Every occurrence of one region name, and per measure the smallest, the median (the middle run; the lower
// of the two middle ones for an even count) and the largest over them.
struct RegionFigures {
  std::string name;
  std::vector<RegionRun> runs;  // in the order they began
  RegionRun min, median, max;
};

// By name, in the order each name first began.
[[nodiscard]] std::vector<RegionFigures> region_figures(std::span<const RegionOccurrence> occurrences);

// Regions paired by name; the medians are compared.
struct RegionChange {
  std::string name;
  std::optional<RegionFigures> base, head;
  ChangeStatus status = ChangeStatus::same;
};

// In head's order, then base's unmatched ones.
[[nodiscard]] std::vector<RegionChange> match_regions(std::span<const RegionFigures> base,
                                                      std::span<const RegionFigures> head);

}  // namespace memtrack::analysis
