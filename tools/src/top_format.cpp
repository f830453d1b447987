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

TopJsonStream::TopJsonStream(SiteOrder order, bool resident) : j_(out_), resident_(resident) {
  j_.begin_object().member("by", order_name(order)).key("sites").begin_array();
}

void TopJsonStream::add(const Site& site) {
  write_site_json(j_, site, resident_);
  listed_ += site.totals;
  ++sites_;
}

void TopJsonStream::finish(const SitesResult& summary) {
  j_.end_array();
  // The listed sites + "rest" + "without_stack" = "totals", the whole artifact's (of --pid P, --region NAME).
  j_.key("rest").begin_object().member("sites", summary.rest_sites);
  write_totals(j_, summary.rest, resident_);
  j_.end_object().key("without_stack").begin_object();
  write_totals(j_, summary.unknown, resident_);
  analysis::SiteTotals all = listed_;
  all += summary.rest;
  all += summary.unknown;
  j_.end_object().key("totals").begin_object().member("sites", sites_ + summary.rest_sites);
  write_totals(j_, all, resident_);
  j_.end_object().end_object();
  out_ += "\n";
}

std::string TopJsonStream::take() {
  std::string text;
  text.swap(out_);
  return text;
}

std::string format_top_json(const SitesResult& result, SiteOrder order) {
  TopJsonStream stream(order, result.has_resident_pages);
  for (const Site& s : result.sites) stream.add(s);
  stream.finish(result);
  return stream.take();
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

std::string format_top_table_head(const SitesResult& summary, std::size_t sites, SiteOrder order) {
  char line[512];
  std::snprintf(line, sizeof line, "top %zu allocation sites by %s (peak live heap %s)\n", sites,
                std::string(order_name(order)).c_str(), human_bytes(summary.peak_bytes).c_str());
  return line;
}

std::string format_top_table_site(const Site& site, std::size_t rank, bool resident, std::size_t frames) {
  const analysis::SiteTotals& t = site.totals;
  char line[512];
  std::snprintf(line, sizeof line, "#%zu  peak %s, allocated %s in %s,", rank, human_bytes(t.peak_bytes).c_str(),
                human_bytes(t.allocated_bytes).c_str(), counted(t.allocations, "allocation").c_str());
  const std::string head = line;
  std::snprintf(line, sizeof line, "leaked %s in %s, %" PRIu64 " temporary", human_bytes(t.leaked_bytes).c_str(),
                counted(t.leaked_blocks, "block").c_str(), t.temporary);
  // One line when it fits 100 columns, else the leaks on a line of their own.
  std::string out = "\n" + head + (head.size() + 1 + std::strlen(line) <= 100 ? " " : "\n    ") + line + "\n";
  // A line of its own: the numbers' line stays as it was without snapshots, within 100 columns.
  if (resident) out += "    resident " + human_bytes(t.resident_bytes) + " at the highest page snapshots\n";
  std::size_t shown = 0;
  for (const SiteFrame& f : site.stack) {
    if (frames != 0 && shown == frames) {
      out += "      ... " + u64(site.stack.size() - shown) + " more frames\n";
      break;
    }
    out += format_frame_line(f) + "\n";
    ++shown;
  }
  return out;
}

std::string format_top_table_tail(const SitesResult& summary) {
  if (summary.unknown.allocations == 0) return {};
  char line[512];
  std::snprintf(line, sizeof line, "\nwithout a stack: %s, %s allocated, %s leaked, %s at the peak\n",
                counted(summary.unknown.allocations, "allocation").c_str(),
                human_bytes(summary.unknown.allocated_bytes).c_str(), human_bytes(summary.unknown.leaked_bytes).c_str(),
                human_bytes(summary.unknown.peak_bytes).c_str());
  return line;
}

std::string format_top_table(const SitesResult& result, SiteOrder order, std::size_t frames) {
  std::string out = format_top_table_head(result, result.sites.size(), order);
  std::size_t rank = 0;
  for (const Site& s : result.sites) out += format_top_table_site(s, ++rank, result.has_resident_pages, frames);
  return out + format_top_table_tail(result);
}

}  // namespace memtrack::tools
