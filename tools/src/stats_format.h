// `memtrack stats`'s renderings of a trace's summary (memtrack::analysis computes it): a readable table, or
// one JSON document. Both list every pid of the counts, in pid order, and skip empty size buckets.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memtrack/analysis/sites.h"
#include "memtrack/analysis/stats.h"

namespace memtrack::tools {

// `leaks`: the top leak sites of an artifact with call stacks, listed at the end (the table's "top leak
// sites", JSON's "top_leaks"); null for an artifact without stacks, whose output is what it always was.
// `resident`: the resident memory figures of a recording with the resident section; false for a region's
// stats (`stats --region`), whose figures are of the region's own blocks while resident memory is of whole
// processes.
std::string format_stats_table(const analysis::Stats& stats, const analysis::SitesResult* leaks = nullptr,
                               bool resident = true);
std::string format_stats_json(const analysis::Stats& stats, const analysis::SitesResult* leaks = nullptr,
                              bool resident = true);

// Block totals both the stats table and the report's summary print.
struct BlockTotals {
  std::uint64_t count = 0, bytes = 0;
};
// What every pid still holds at the end (the leaks).
BlockTotals still_live_at_end(const analysis::Stats& s);
// What exec'd images held when they were replaced (not leaks).
BlockTotals freed_by_exec(const analysis::Stats& s);
// Fork children's copies of their parents' blocks, held unchanged when they exited: not leaks (live_heap.h).
BlockTotals inherited_at_exit(const analysis::Stats& s);

}  // namespace memtrack::tools
