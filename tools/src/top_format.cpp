#include "top_format.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "json_writer.h"
#include "units.h"

namespace memtrack::tools {

using analysis::Site;
using analysis::SiteFrame;
using analysis::SiteOrder;
using analysis::SitesResult;

namespace {

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
    case SiteOrder::resident:
      return "resident";
  }
  return "peak";
}

bool parse_order(std::string_view name, SiteOrder& out) {
  for (const SiteOrder o : {SiteOrder::peak, SiteOrder::allocated, SiteOrder::count, SiteOrder::leaked,
                            SiteOrder::temporary, SiteOrder::resident}) {
    if (name == order_name(o)) {
      out = o;
      return true;
    }
  }
  return false;
}

void write_stack_json(JsonWriter& j, const std::vector<SiteFrame>& stack) {
  j.array(stack, [](JsonWriter& w, const SiteFrame& f) {
    w.begin_object().key("function");
    if (f.truncated_marker)
      w.str("[truncated]");
    else
      w.str_or_null(f.function);
    w.key("module").str_or_null(f.module).key("file").str_or_null(f.file).key("line").num_or_null(f.line);
    w.key("address");
    if (f.address)
      w.str(hex(*f.address));
    else
      w.null();
    w.end_object();
  });
}

std::string format_stack_json(const std::vector<SiteFrame>& stack) {
  std::string out;
  JsonWriter j(out);
  write_stack_json(j, stack);
  return out;
}

namespace {

// `resident`: the artifact has ResidentPages records, so resident_bytes is known.
void write_totals(JsonWriter& j, const analysis::SiteTotals& t, bool resident) {
  j.member("peak_bytes", t.peak_bytes)
      .member("allocated_bytes", t.allocated_bytes)
      .member("allocations", t.allocations);
  j.member("leaked_bytes", t.leaked_bytes).member("leaked_blocks", t.leaked_blocks).member("temporary", t.temporary);
  if (resident) j.member("resident_bytes", t.resident_bytes);
}

void write_site_json(JsonWriter& j, const Site& s, bool resident) {
  j.begin_object().key("stack");
  write_stack_json(j, s.stack);
  write_totals(j, s.totals, resident);
  j.end_object();
}

}  // namespace

void write_site_totals_json(JsonWriter& j, const analysis::SiteTotals& t) { write_totals(j, t, false); }

void write_site_json(JsonWriter& j, const Site& s) { write_site_json(j, s, false); }

std::string format_site_json(const Site& s) {
  std::string out;
  JsonWriter j(out);
  write_site_json(j, s);
  return out;
}

std::string format_top_json(const SitesResult& result, SiteOrder order) {
  std::string out;
  JsonWriter j(out);
  const bool resident = result.has_resident_pages;
  j.begin_object().member("by", order_name(order)).key("sites").array(result.sites, [&](JsonWriter& w, const Site& s) {
    write_site_json(w, s, resident);
  });
  // The listed sites + "rest" + "without_stack" = "totals", the whole artifact's (of --pid P, --region NAME).
  j.key("rest").begin_object().member("sites", result.rest_sites);
  write_totals(j, result.rest, resident);
  j.end_object().key("without_stack").begin_object();
  write_totals(j, result.unknown, resident);
  analysis::SiteTotals all = result.rest;
  all += result.unknown;
  for (const Site& s : result.sites) all += s.totals;
  j.end_object().key("totals").begin_object().member("sites", result.sites.size() + result.rest_sites);
  write_totals(j, all, resident);
  j.end_object().end_object();
  return out + "\n";
}

std::string format_leak_sites_table(const SitesResult& leaks, std::size_t frames) {
  std::string out = "\ntop leak sites\n";
  if (leaks.sites.empty()) return out + "  (none: every block with a stack was freed)\n";
  char line[256];
  for (const Site& s : leaks.sites) {
    std::snprintf(line, sizeof line, "  %" PRIu64 " bytes in %s (%s), %s\n", s.totals.leaked_bytes,
                  counted(s.totals.leaked_blocks, "block").c_str(), human_bytes(s.totals.leaked_bytes).c_str(),
                  counted(s.totals.allocations, "allocation").c_str());
    out += line;
    std::size_t shown = 0;
    for (const SiteFrame& f : s.stack) {
      if (shown++ == frames) {
        out += "      ...\n";
        break;
      }
      out += format_frame_line(f) + "\n";
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

std::string format_frame_line(const SiteFrame& f, std::size_t indent, std::size_t width) {
  const std::size_t room = width > indent + 8 ? width - indent : 8;
  std::string line = format_frame(f);
  if (line.size() > room) {
    SiteFrame shorter = f;
    auto base = [](const std::string& path) {
      const std::size_t slash = path.rfind('/');
      return slash == std::string::npos ? path : path.substr(slash + 1);
    };
    shorter.module = base(f.module);
    line = format_frame(shorter);
    if (line.size() > room) {
      shorter.file = base(f.file);
      line = format_frame(shorter);
    }
    if (line.size() > room) line = line.substr(0, room - 3) + "...";
  }
  return std::string(indent, ' ') + line;
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
    std::snprintf(line, sizeof line, "#%zu  peak %s, allocated %s in %s,", ++rank, human_bytes(t.peak_bytes).c_str(),
                  human_bytes(t.allocated_bytes).c_str(), counted(t.allocations, "allocation").c_str());
    const std::string head = line;
    std::snprintf(line, sizeof line, "leaked %s in %s, %" PRIu64 " temporary", human_bytes(t.leaked_bytes).c_str(),
                  counted(t.leaked_blocks, "block").c_str(), t.temporary);
    // One line when it fits 100 columns, else the leaks on a line of their own.
    out += "\n" + head + (head.size() + 1 + std::strlen(line) <= 100 ? " " : "\n    ") + line + "\n";
    // A line of its own: the numbers' line stays as it was without snapshots, within 100 columns.
    if (result.has_resident_pages)
      out += "    resident " + human_bytes(t.resident_bytes) + " at the highest page snapshots\n";
    std::size_t shown = 0;
    for (const SiteFrame& f : s.stack) {
      if (frames != 0 && shown == frames) {
        out += "      ... " + u64(s.stack.size() - shown) + " more frames\n";
        break;
      }
      out += format_frame_line(f) + "\n";
      ++shown;
    }
  }
  if (result.unknown.allocations > 0) {
    std::snprintf(line, sizeof line, "\nwithout a stack: %s, %s allocated, %s leaked, %s at the peak\n",
                  counted(result.unknown.allocations, "allocation").c_str(),
                  human_bytes(result.unknown.allocated_bytes).c_str(), human_bytes(result.unknown.leaked_bytes).c_str(),
                  human_bytes(result.unknown.peak_bytes).c_str());
    out += line;
  }
  return out;
}

}  // namespace memtrack::tools
