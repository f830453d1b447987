// `memtrack stats`'s renderings of a trace's summary (memtrack::analysis computes it): a readable table, or
// one JSON document. Both list every pid of the counts, in pid order, and skip empty size buckets.
#pragma once

#include <string>

#include "memtrack/analysis/stats.h"

namespace memtrack::tools {

std::string format_stats_table(const analysis::Stats& stats);
std::string format_stats_json(const analysis::Stats& stats);

}  // namespace memtrack::tools
