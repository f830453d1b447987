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
  std::string o;
  JsonWriter j = JsonWriter::members(o);
  const auto since = [&](std::uint64_t t) { return t >= origin ? t - origin : 0; };
  const auto span = [](std::uint64_t begin, std::uint64_t end) { return end >= begin ? end - begin : 0; };
  j.key("regions").begin_array();
  for (const RegionOccurrence& r : regions.occurrences()) {
    if (only != nullptr && r.name != *only) continue;
    j.begin_object().member("name", r.name).member("occurrence", r.occurrence).member("pid", r.pid);
    j.member("tid", r.tid).member("begin_event", r.begin_event).member("end_event", r.end_event);
    j.member("begin_ns", since(r.begin_timestamp)).member("duration_ns", span(r.begin_timestamp, r.end_timestamp));
    j.member("ended", ended_name(r.ended)).member("events", r.events).member("allocations", r.allocations);
    j.member("allocated_bytes", r.allocated_bytes).member("frees", r.frees).member("freed_bytes", r.freed_bytes);
    j.member("frees_of_older", r.frees_of_older).member("peak_bytes", r.peak_bytes);
    j.member("retained_bytes", r.retained_bytes).member("retained_blocks", r.retained_blocks).end_object();
  }
  j.end_array().key("paused").array(regions.paused(), [&](JsonWriter& w, const analysis::PausedSpan& p) {
    w.begin_object().member("begin_event", p.begin_event).member("end_event", p.end_event);
    w.member("begin_ns", since(p.begin_timestamp)).member("duration_ns", span(p.begin_timestamp, p.end_timestamp));
    w.member("source", p.source).member("resumed", p.resumed).end_object();
  });
  return o;
}

std::string format_region_json_member(const std::string& name, std::uint64_t occurrences) {
  std::string o;
  JsonWriter::members(o).key("region").begin_object().member("name", name).member("occurrences", occurrences).end_object();
  return o;
}

std::string splice_json(std::string document, const std::string& members) {
  const std::size_t brace = document.rfind('}');
  if (brace == std::string::npos) return document;
  document.insert(brace, "," + members);
  return document;
}

}  // namespace memtrack::tools
