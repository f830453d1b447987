#include "top_format.h"

#include <cinttypes>
#include <cstdio>

#include "stats.h"
#include "units.h"

namespace memtrack::tools {

using analysis::Site;
using analysis::SiteFrame;
using analysis::SiteOrder;
using analysis::SitesResult;

namespace {

std::string json_or_null(const std::string& s) { return s.empty() ? "null" : json_string(s); }

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

std::string u64(std::uint64_t v) { return std::to_string(v); }

}  // namespace

std::string_view order_name(SiteOrder order) {
  switch (order) {
    case SiteOrder::peak:
      return "peak";
    case SiteOrder::allocated:
      return "allocated";
    case SiteOrder::count:
      return "count";
    case SiteOrder::leaked:
      return "leaked";
    case SiteOrder::temporary:
      return "temporary";
  }
  return "peak";
}

bool parse_order(std::string_view name, SiteOrder& out) {
  for (const SiteOrder o :
       {SiteOrder::peak, SiteOrder::allocated, SiteOrder::count, SiteOrder::leaked, SiteOrder::temporary}) {
    if (name == order_name(o)) {
      out = o;
      return true;
    }
  }
  return false;
}

std::string format_stack_json(const std::vector<SiteFrame>& stack) {
  std::string o = "[";
  bool first = true;
  for (const SiteFrame& f : stack) {
    o += first ? "{" : ",{";
    first = false;
    if (f.truncated_marker) {
      o += "\"function\":\"[truncated]\",\"module\":null,\"file\":null,\"line\":null,\"address\":null}";
      continue;
    }
    o += "\"function\":" + json_or_null(f.function) + ",\"module\":" + json_or_null(f.module) +
         ",\"file\":" + json_or_null(f.file) + ",\"line\":" + (f.line == 0 ? "null" : u64(f.line)) +
         ",\"address\":" + (f.address ? json_string(hex(*f.address)) : "null") + "}";
  }
  return o + "]";
}

std::string format_site_json(const Site& s) {
  const analysis::SiteTotals& t = s.totals;
  return "{\"stack\":" + format_stack_json(s.stack) + ",\"peak_bytes\":" + u64(t.peak_bytes) +
         ",\"allocated_bytes\":" + u64(t.allocated_bytes) + ",\"allocations\":" + u64(t.allocations) +
         ",\"leaked_bytes\":" + u64(t.leaked_bytes) + ",\"leaked_blocks\":" + u64(t.leaked_blocks) +
         ",\"temporary\":" + u64(t.temporary) + "}";
}

std::string format_top_json(const SitesResult& result, SiteOrder order) {
  std::string o = "{\"by\":" + json_string(std::string(order_name(order))) + ",\"sites\":[";
  for (std::size_t i = 0; i < result.sites.size(); ++i) o += (i ? "," : "") + format_site_json(result.sites[i]);
  return o + "]}\n";
}

std::string format_leak_sites_table(const SitesResult& leaks, std::size_t frames) {
  std::string out = "\ntop leak sites\n";
  if (leaks.sites.empty()) return out + "  (none: every block with a stack was freed)\n";
  char line[256];
  for (const Site& s : leaks.sites) {
    std::snprintf(line, sizeof line, "  %" PRIu64 " bytes in %" PRIu64 " blocks (%s), %" PRIu64 " allocations\n",
                  s.totals.leaked_bytes, s.totals.leaked_blocks, human_bytes(s.totals.leaked_bytes).c_str(),
                  s.totals.allocations);
    out += line;
    std::size_t shown = 0;
    for (const SiteFrame& f : s.stack) {
      if (shown++ == frames) {
        out += "      ...\n";
        break;
      }
      out += "      " + format_frame(f) + "\n";
    }
  }
  return out;
}

std::string format_frame(const SiteFrame& f) {
  if (f.truncated_marker) return "[truncated: deeper callers not recorded]";
  std::string line = f.function.empty() ? "??" : f.function;
  if (!f.file.empty()) line += " (" + f.file + (f.line != 0 ? ":" + u64(f.line) : std::string()) + ")";
  if (f.inlined) line += " [inlined]";
  if (!f.module.empty()) {
    line += " in " + f.module;
    if (f.function.empty() && f.address) line += " +" + hex(*f.address);
  } else if (f.address) {
    line += " at " + hex(*f.address);
  }
  return line;
}

std::string format_top_table(const SitesResult& result, SiteOrder order, std::size_t frames) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "top %zu allocation sites by %s (peak live heap %s)\n", result.sites.size(),
                std::string(order_name(order)).c_str(), human_bytes(result.peak_bytes).c_str());
  out += line;
  std::size_t rank = 0;
  for (const Site& s : result.sites) {
    const analysis::SiteTotals& t = s.totals;
    std::snprintf(line, sizeof line,
                  "\n#%zu  peak %s, allocated %s in %" PRIu64 " allocations, leaked %s in %" PRIu64 " blocks, %" PRIu64
                  " temporary\n",
                  ++rank, human_bytes(t.peak_bytes).c_str(), human_bytes(t.allocated_bytes).c_str(), t.allocations,
                  human_bytes(t.leaked_bytes).c_str(), t.leaked_blocks, t.temporary);
    out += line;
    std::size_t shown = 0;
    for (const SiteFrame& f : s.stack) {
      if (frames != 0 && shown == frames) {
        out += "      ... " + u64(s.stack.size() - shown) + " more frames\n";
        break;
      }
      out += "      " + format_frame(f) + "\n";
      ++shown;
    }
  }
  if (result.unknown.allocations > 0) {
    std::snprintf(line, sizeof line,
                  "\nwithout a stack: %" PRIu64 " allocations, %s allocated, %s leaked, %s at the peak\n",
                  result.unknown.allocations, human_bytes(result.unknown.allocated_bytes).c_str(),
                  human_bytes(result.unknown.leaked_bytes).c_str(), human_bytes(result.unknown.peak_bytes).c_str());
    out += line;
  }
  return out;
}

}  // namespace memtrack::tools
