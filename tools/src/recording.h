// One recording read for comparison (`memtrack diff`, `memtrack check`): the stats, optionally every
// allocation site, and the region occurrences, all from one pass (with the frame index, the stats' parallel
// pass; with --region, the region filter's sequential one, as `stats --region` and `top --region` read).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "memtrack/analysis/regions.h"
#include "memtrack/analysis/run_compare.h"
#include "memtrack/analysis/sites.h"
#include "memtrack/analysis/stats.h"
#include "memtrack/codec/status.h"

namespace memtrack::tools {

struct Recording {
  std::string name;  // as in messages ("stdin" for -)
  analysis::Stats stats;
  std::optional<analysis::SitesResult> sites;  // every site, by `order`; none unless asked for
  bool has_stacks = false;
  std::vector<analysis::RegionOccurrence> occurrences;  // every region occurrence (all names)
  std::uint64_t region_occurrences = 0;                 // with RecordingOptions::region: of that name
  analysis::RunTotals totals;
};

struct RecordingOptions {
  std::optional<std::string> region;  // only the region's part (regions.h's filter); missing: an error
  // Only the first process image whose executable's basename is this (a second pass, after a first one finds
  // the image): its events, and the context records but other pids' lifecycle and region records.
  std::optional<std::string> pid_image;
  bool sites = false;
  analysis::SiteOrder order = analysis::SiteOrder::peak;
};

// No image of RecordingOptions::pid_image: a usage error of the command (exit status 2).
struct NoSuchImage : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Reads `path` ("-": stdin). Not ok: the file is damaged (nothing is kept: a prefix would read as the
// recording); the message says what and where. Throws std::runtime_error when it cannot be opened, NoSuchImage
// ("no process running IMAGE in FILE (images: ...)") when it has no image of options.pid_image.
codec::Status read_recording(const std::string& path, const RecordingOptions& options, Recording& out);

}  // namespace memtrack::tools
