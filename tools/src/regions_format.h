// `memtrack stats`'s renderings of an artifact's regions and pauses (analysis/regions.h): a table after the
// stats, and JSON members ("regions", "paused") spliced into the stats document. Times are shown after
// `origin` (the first event's timestamp), as the stats show them.
#pragma once

#include <cstdint>
#include <string>

#include "memtrack/analysis/regions.h"

namespace memtrack::tools {

// `only`: just the occurrences of that name (the pauses are listed either way).
std::string format_regions_table(const analysis::Regions& regions, std::uint64_t origin,
                                 const std::string* only = nullptr);
// `"regions":[...],"paused":[...]`, without braces.
std::string format_regions_json_members(const analysis::Regions& regions, std::uint64_t origin,
                                        const std::string* only = nullptr);
// `"region":{"name":...,"occurrences":N}` for stats --region.
std::string format_region_json_member(const std::string& name, std::uint64_t occurrences);
// Inserts `,members` before the closing brace of a JSON object document (the stats' one, ending in "}\n").
std::string splice_json(std::string document, const std::string& members);
// For errors: the names of the regions, "a, b, c" (or "none").
std::string region_names(const analysis::Regions& regions);

}  // namespace memtrack::tools
