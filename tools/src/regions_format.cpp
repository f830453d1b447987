#include "regions_format.h"

#include <cstdio>
#include <set>

#include "json_writer.h"
#include "units.h"

namespace memtrack::tools {
namespace {

using analysis::RegionOccurrence;

const char* ended_name(RegionOccurrence::Ended e) {
  switch (e) {
    case RegionOccurrence::Ended::region_end:
      return "end";
    case RegionOccurrence::Ended::exec:
      return "exec";
    case RegionOccurrence::Ended::exit:
      return "exit";
    case RegionOccurrence::Ended::stream_end:
      return "stream end";
    case RegionOccurrence::Ended::open:
      break;
  }
  return "open";
}

std::string since(std::uint64_t origin, std::uint64_t ts) {
  if (ts < origin) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "+%.6f s", static_cast<double>(ts - origin) / 1e9);
  return buf;
}

std::string span(std::uint64_t a, std::uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f s", b >= a ? static_cast<double>(b - a) / 1e9 : 0.0);
  return buf;
}

std::string u64(std::uint64_t v) { return std::to_string(v); }

}  // namespace

std::string region_names(const analysis::Regions& regions) {
  std::set<std::string> names;
  for (const RegionOccurrence& o : regions.occurrences()) names.insert(o.name);
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + (n.empty() ? std::string("\"\"") : n);
  return out.empty() ? "none" : out;
}

std::string format_regions_table(const analysis::Regions& regions, std::uint64_t origin, const std::string* only) {
  std::string out;
  char line[512];
  bool any = false;
  for (const RegionOccurrence& o : regions.occurrences()) any = any || only == nullptr || o.name == *only;
  if (any) {
    out += "\nregions (figures of each region's own heap blocks; 'older frees': frees of blocks allocated before it)\n";
    std::snprintf(line, sizeof line, "  %-24s %4s %8s %10s %12s %14s %8s %12s %14s %14s %12s %12s %s\n", "region", "#",
                  "pid", "events", "allocations", "allocated", "frees", "older frees", "peak", "retained", "begin",
                  "duration", "ended");
    out += line;
    for (const RegionOccurrence& o : regions.occurrences()) {
      if (only != nullptr && o.name != *only) continue;
      std::snprintf(line, sizeof line, "  %-24s %4u %8d %10llu %12llu %14s %8llu %12llu %14s %14s %12s %12s %s\n",
                    o.name.c_str(), o.occurrence, o.pid, static_cast<unsigned long long>(o.events),
                    static_cast<unsigned long long>(o.allocations), human_bytes(o.allocated_bytes).c_str(),
                    static_cast<unsigned long long>(o.frees), static_cast<unsigned long long>(o.frees_of_older),
                    human_bytes(o.peak_bytes).c_str(), human_bytes(o.retained_bytes).c_str(),
                    since(origin, o.begin_timestamp).c_str(), span(o.begin_timestamp, o.end_timestamp).c_str(),
                    ended_name(o.ended));
      out += line;
    }
  }
  if (!regions.paused().empty()) {
    out += "\npaused (allocations not recorded; frees were)\n";
    for (const analysis::PausedSpan& p : regions.paused()) {
      std::snprintf(line, sizeof line, "  events %llu..%llu  from %s for %s  by %s%s\n",
                    static_cast<unsigned long long>(p.begin_event), static_cast<unsigned long long>(p.end_event),
                    since(origin, p.begin_timestamp).c_str(), span(p.begin_timestamp, p.end_timestamp).c_str(),
                    p.source.c_str(), p.resumed ? "" : " (never resumed)");
      out += line;
    }
  }
  return out;
}

std::string format_regions_json_members(const analysis::Regions& regions, std::uint64_t origin,
                                        const std::string* only) {
  std::string o = "\"regions\":[";
  bool first = true;
  for (const RegionOccurrence& r : regions.occurrences()) {
    if (only != nullptr && r.name != *only) continue;
    o += first ? "" : ",";
    first = false;
    o += "{\"name\":" + json_string(r.name) + ",\"occurrence\":" + u64(r.occurrence) +
         ",\"pid\":" + std::to_string(r.pid) + ",\"tid\":" + std::to_string(r.tid) +
         ",\"begin_event\":" + u64(r.begin_event) + ",\"end_event\":" + u64(r.end_event) +
         ",\"begin_ns\":" + u64(r.begin_timestamp >= origin ? r.begin_timestamp - origin : 0) +
         ",\"duration_ns\":" + u64(r.end_timestamp >= r.begin_timestamp ? r.end_timestamp - r.begin_timestamp : 0) +
         ",\"ended\":" + json_string(ended_name(r.ended)) + ",\"events\":" + u64(r.events) +
         ",\"allocations\":" + u64(r.allocations) + ",\"allocated_bytes\":" + u64(r.allocated_bytes) +
         ",\"frees\":" + u64(r.frees) + ",\"freed_bytes\":" + u64(r.freed_bytes) +
         ",\"frees_of_older\":" + u64(r.frees_of_older) + ",\"peak_bytes\":" + u64(r.peak_bytes) +
         ",\"retained_bytes\":" + u64(r.retained_bytes) + ",\"retained_blocks\":" + u64(r.retained_blocks) + "}";
  }
  o += "],\"paused\":[";
  first = true;
  for (const analysis::PausedSpan& p : regions.paused()) {
    o += first ? "" : ",";
    first = false;
    o += "{\"begin_event\":" + u64(p.begin_event) + ",\"end_event\":" + u64(p.end_event) +
         ",\"begin_ns\":" + u64(p.begin_timestamp >= origin ? p.begin_timestamp - origin : 0) +
         ",\"duration_ns\":" + u64(p.end_timestamp >= p.begin_timestamp ? p.end_timestamp - p.begin_timestamp : 0) +
         ",\"source\":" + json_string(p.source) + ",\"resumed\":" + (p.resumed ? "true" : "false") + "}";
  }
  return o + "]";
}

std::string format_region_json_member(const std::string& name, std::uint64_t occurrences) {
  return "\"region\":{\"name\":" + json_string(name) + ",\"occurrences\":" + u64(occurrences) + "}";
}

std::string splice_json(std::string document, const std::string& members) {
  const std::size_t brace = document.rfind('}');
  if (brace == std::string::npos) return document;
  document.insert(brace, "," + members);
  return document;
}

}  // namespace memtrack::tools
