#include "diff_format.h"

#include <cinttypes>
#include <cstdio>

#include "json_writer.h"
#include "stats_format.h"
#include "top_format.h"
#include "units.h"

namespace memtrack::tools {

using analysis::ChangeStatus;
using analysis::ImageChange;
using analysis::ImageFigures;
using analysis::RegionChange;
using analysis::RegionRun;
using analysis::RunTotals;
using analysis::SiteChange;
using analysis::SiteTotals;

namespace {

std::string u64(std::uint64_t v) { return std::to_string(v); }

template <typename T>
struct Field {
  const char* json;   // the JSON member
  const char* label;  // the table's row or column
  std::uint64_t T::*member;
  bool bytes;
  bool brief = true;  // in the table's one-line summaries
};

constexpr Field<RunTotals> kTotals[] = {
    {"allocations", "allocations", &RunTotals::allocations, false},
    {"allocated_bytes", "bytes allocated", &RunTotals::allocated_bytes, true},
    {"peak_bytes", "peak heap", &RunTotals::peak_bytes, true},
    {"peak_at_ns", "peak at", &RunTotals::peak_at_ns, false},
    {"leaked_bytes", "leaked", &RunTotals::leaked_bytes, true},
    {"leaked_blocks", "leaked blocks", &RunTotals::leaked_blocks, false},
    {"temporary", "temporary", &RunTotals::temporary, false},
    {"processes", "processes", &RunTotals::processes, false},
    {"events", "events", &RunTotals::events, false},
};

// top --json's names, in its order.
constexpr Field<SiteTotals> kSite[] = {
    {"peak_bytes", "peak", &SiteTotals::peak_bytes, true},
    {"allocated_bytes", "allocated", &SiteTotals::allocated_bytes, true},
    {"allocations", "allocations", &SiteTotals::allocations, false},
    {"leaked_bytes", "leaked", &SiteTotals::leaked_bytes, true},
    {"leaked_blocks", "leaked blocks", &SiteTotals::leaked_blocks, false, false},
    {"temporary", "temporary", &SiteTotals::temporary, false},
};

constexpr Field<ImageFigures> kImage[] = {
    {"events", "events", &ImageFigures::events, false},
    {"peak_bytes", "peak", &ImageFigures::peak_bytes, true},
    {"leaked_bytes", "leaked", &ImageFigures::leaked_bytes, true},
    {"leaked_blocks", "leaked blocks", &ImageFigures::leaked_blocks, false, false},
};

constexpr Field<RegionRun> kRegion[] = {
    {"peak_bytes", "peak", &RegionRun::peak_bytes, true},
    {"allocated_bytes", "allocated", &RegionRun::allocated_bytes, true},
    {"allocations", "allocations", &RegionRun::allocations, false},
    {"leaked_bytes", "leaked", &RegionRun::leaked_bytes, true},
    {"leaked_blocks", "leaked blocks", &RegionRun::leaked_blocks, false, false},
};

template <typename T, std::size_t N>
std::string json_object(const T& v, const Field<T> (&fields)[N], const std::string& prefix = {}) {
  std::string o = "{" + prefix;
  for (std::size_t i = 0; i < N; ++i)
    o += (i || !prefix.empty() ? ",\"" : "\"") + std::string(fields[i].json) + "\":" + u64(v.*fields[i].member);
  return o + "}";
}

template <typename T, std::size_t N>
std::string json_delta(const T& b, const T& h, const Field<T> (&fields)[N], const std::string& prefix = {}) {
  std::string o = "{" + prefix;
  for (std::size_t i = 0; i < N; ++i)
    o += (i || !prefix.empty() ? ",\"" : "\"") + std::string(fields[i].json) +
         "\":" + signed_delta(b.*fields[i].member, h.*fields[i].member);
  return o + "}";
}

std::string json_percent(std::uint64_t b, std::uint64_t h) {
  if (b == 0) return h == 0 ? "0" : "null";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2f",
                (static_cast<double>(h) - static_cast<double>(b)) / static_cast<double>(b) * 100.0);
  return buf;
}

// `object` (a JSON object's text) with one more member at its end.
std::string with_member(std::string object, const char* name, const std::string& value) {
  object.pop_back();
  return object + (object.size() > 1 ? ",\"" : "\"") + name + "\":" + value + "}";
}

// The optional figures: stats' peak resident of a recording, top's resident bytes of a site.
constexpr Field<RunTotals> kPeakResident = {"peak_resident_bytes", "peak resident", &RunTotals::peak_resident_bytes,
                                            true};
constexpr Field<SiteTotals> kSiteResident = {"resident_bytes", "resident", &SiteTotals::resident_bytes, true};

// "+4.0 KiB", "-512 B", "0 B"; counts as "+3".
std::string signed_amount(std::uint64_t b, std::uint64_t h, bool bytes) {
  if (b == h) return bytes ? "0 B" : "0";
  const std::string sign = h > b ? "+" : "-";
  const std::uint64_t d = h > b ? h - b : b - h;
  return sign + (bytes ? human_bytes(d) : u64(d));
}

std::string amount(std::uint64_t v, bool bytes) { return bytes ? human_bytes(v) : u64(v); }

std::string ms(std::uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f s", static_cast<double>(ns) / 1e9);
  return buf;
}

std::string signed_ms(std::uint64_t b, std::uint64_t h) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.3f s", (static_cast<double>(h) - static_cast<double>(b)) / 1e9);
  return buf;
}

// "4.0 KiB -> 8.0 KiB (+4.0 KiB)"; "8.0 KiB" alone when unchanged.
std::string change(std::uint64_t b, std::uint64_t h, bool bytes, const char* arrow = " -> ") {
  if (b == h) return amount(h, bytes);
  return amount(b, bytes) + arrow + amount(h, bytes) + " (" + signed_amount(b, h, bytes) + ")";
}

std::string header_line(const DiffReport& r) {
  std::string s = "base " + r.base_name + ", head " + r.head_name;
  if (r.region) s += ", region " + *r.region;
  return s;
}

std::string no_stacks(const DiffReport& r) {
  if (r.without_stacks.empty()) return "neither recording has call stacks";
  return r.without_stacks + " has no call stacks (recorded with --no-stacks?): sites not compared";
}

std::string counts_line(const DiffReport& r) {
  const analysis::SitesDiff& d = r.sites;
  return u64(d.changed) + " changed, " + u64(d.added) + " new, " + u64(d.removed) + " gone, " + u64(d.same) + " same";
}

template <typename T, std::size_t N>
std::string changes_text(const T& b, const T& h, const Field<T> (&fields)[N], const char* arrow = " -> ") {
  std::string s;
  for (const Field<T>& f : fields) {
    if (!f.brief) continue;
    s += (s.empty() ? "" : ", ") + std::string(f.label) + " " + change(b.*f.member, h.*f.member, f.bytes, arrow);
  }
  return s;
}

std::string image_label(const ImageChange& c) {
  return (c.executable.empty() ? std::string("(unknown)") : c.executable) + " #" + u64(c.nth);
}

// Longer names (C++ templates) are cut in markdown's one-line cells.
constexpr std::size_t kMarkdownName = 60;

// Markdown table cells: a '|' would end the cell.
std::string md_escape(const std::string& s) {
  std::string o;
  for (const char c : s) {
    if (c == '|')
      o += "\\|";
    else if (c == '`')
      o += '\'';
    else
      o += c;
  }
  return o;
}

}  // namespace

const char* status_name(ChangeStatus s) {
  switch (s) {
    case ChangeStatus::same:
      return "same";
    case ChangeStatus::changed:
      return "changed";
    case ChangeStatus::added:
      return "new";
    case ChangeStatus::removed:
      return "gone";
  }
  return "same";
}

std::string signed_delta(std::uint64_t b, std::uint64_t h) { return h >= b ? u64(h - b) : "-" + u64(b - h); }

std::string percent_change(std::uint64_t b, std::uint64_t h) {
  if (b == 0) return h == 0 ? "0.0%" : "new";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%+.1f%%",
                (static_cast<double>(h) - static_cast<double>(b)) / static_cast<double>(b) * 100.0);
  return b == h ? "0.0%" : buf;
}

std::string format_diff_json(const DiffReport& r) {
  std::string o = "{\"base\":" + json_string(r.base_name) + ",\"head\":" + json_string(r.head_name) +
                  ",\"by\":" + json_string(std::string(order_name(r.order))) +
                  ",\"region\":" + (r.region ? json_string(*r.region) : std::string("null")) +
                  ",\"has_stacks\":" + (r.has_stacks ? "true" : "false");
  std::string tb = json_object(r.base, kTotals), th = json_object(r.head, kTotals),
              td = json_delta(r.base, r.head, kTotals);
  if (r.resident) {
    const std::uint64_t b = r.base.peak_resident_bytes, h = r.head.peak_resident_bytes;
    tb = with_member(tb, kPeakResident.json, u64(b));
    th = with_member(th, kPeakResident.json, u64(h));
    td = with_member(td, kPeakResident.json, signed_delta(b, h));
  }
  o += ",\"totals\":{\"base\":" + tb + ",\"head\":" + th + ",\"delta\":" + td + ",\"percent\":{";
  for (std::size_t i = 0; i < std::size(kTotals); ++i)
    o += (i ? ",\"" : "\"") + std::string(kTotals[i].json) +
         "\":" + json_percent(r.base.*kTotals[i].member, r.head.*kTotals[i].member);
  if (r.resident)
    o += ",\"" + std::string(kPeakResident.json) +
         "\":" + json_percent(r.base.peak_resident_bytes, r.head.peak_resident_bytes);
  o += "}}";

  o += ",\"sites\":[";
  for (std::size_t i = 0; i < r.sites.sites.size(); ++i) {
    const SiteChange& c = r.sites.sites[i];
    const auto side = [&](const SiteTotals& t) {
      const std::string obj = json_object(t, kSite);
      return r.resident_sites ? with_member(obj, kSiteResident.json, u64(t.resident_bytes)) : obj;
    };
    std::string delta = json_delta(c.base, c.head, kSite);
    if (r.resident_sites)
      delta = with_member(delta, kSiteResident.json, signed_delta(c.base.resident_bytes, c.head.resident_bytes));
    o += (i ? "," : "") + std::string("{\"stack\":") + format_stack_json(c.stack) +
         ",\"base\":" + (c.base_sites ? side(c.base) : "null") + ",\"head\":" + (c.head_sites ? side(c.head) : "null") +
         ",\"delta\":" + delta + ",\"status\":\"" + status_name(c.status) + "\"}";
  }
  const analysis::SitesDiff& d = r.sites;
  o += "],\"site_counts\":{\"same\":" + u64(d.same) + ",\"changed\":" + u64(d.changed) + ",\"new\":" + u64(d.added) +
       ",\"gone\":" + u64(d.removed) + "}";

  o += ",\"processes\":[";
  for (std::size_t i = 0; i < r.processes.size(); ++i) {
    const ImageChange& c = r.processes[i];
    const ImageFigures zero;
    o += (i ? "," : "") + std::string("{\"executable\":") + json_string(c.executable) + ",\"nth\":" + u64(c.nth) +
         ",\"base\":" + (c.base ? json_object(*c.base, kImage, "\"pid\":" + std::to_string(c.base_pid)) : "null") +
         ",\"head\":" + (c.head ? json_object(*c.head, kImage, "\"pid\":" + std::to_string(c.head_pid)) : "null") +
         ",\"delta\":" + json_delta(c.base.value_or(zero), c.head.value_or(zero), kImage) + ",\"status\":\"" +
         status_name(c.status) + "\"}";
  }
  o += "],\"regions\":[";
  for (std::size_t i = 0; i < r.regions.size(); ++i) {
    const RegionChange& c = r.regions[i];
    const RegionRun zero;
    const auto side = [&](const std::optional<analysis::RegionFigures>& f) {
      return f ? json_object(f->median, kRegion, "\"runs\":" + u64(f->runs.size())) : std::string("null");
    };
    const auto runs = [](const std::optional<analysis::RegionFigures>& f) { return f ? f->runs.size() : 0; };
    o += (i ? "," : "") + std::string("{\"name\":") + json_string(c.name) + ",\"base\":" + side(c.base) +
         ",\"head\":" + side(c.head) + ",\"delta\":" +
         json_delta(c.base ? c.base->median : zero, c.head ? c.head->median : zero, kRegion,
                    "\"runs\":" + signed_delta(runs(c.base), runs(c.head))) +
         ",\"status\":\"" + status_name(c.status) + "\"}";
  }
  return o + "]}\n";
}

std::string format_diff_table(const DiffReport& r) {
  std::string out = "memtrack diff: " + header_line(r) + "\n\n";
  char line[512];
  std::snprintf(line, sizeof line, "  %-16s %14s %14s %14s %9s\n", "", "base", "head", "delta", "change");
  out += line;
  for (const auto& f : kTotals) {
    const std::uint64_t b = r.base.*f.member, h = r.head.*f.member;
    if (f.member == &RunTotals::peak_at_ns) {
      std::snprintf(line, sizeof line, "  %-16s %14s %14s %14s\n", f.label, ms(b).c_str(), ms(h).c_str(),
                    signed_ms(b, h).c_str());
    } else {
      std::snprintf(line, sizeof line, "  %-16s %14s %14s %14s %9s\n", f.label, amount(b, f.bytes).c_str(),
                    amount(h, f.bytes).c_str(), signed_amount(b, h, f.bytes).c_str(), percent_change(b, h).c_str());
    }
    out += line;
    if (f.member == &RunTotals::peak_at_ns && r.resident) {
      const std::uint64_t rb = r.base.peak_resident_bytes, rh = r.head.peak_resident_bytes;
      std::snprintf(line, sizeof line, "  %-16s %14s %14s %14s %9s\n", kPeakResident.label, human_bytes(rb).c_str(),
                    human_bytes(rh).c_str(), signed_amount(rb, rh, true).c_str(), percent_change(rb, rh).c_str());
      out += line;
    }
  }

  if (!r.has_stacks) {
    out += "\nsites: " + no_stacks(r) + "\n";
  } else {
    out += "\nsites by change in " + std::string(order_name(r.order)) + ": " + counts_line(r) + "\n";
    std::size_t rank = 0;
    for (const SiteChange& c : r.sites.sites) {
      std::string figures = changes_text(c.base, c.head, kSite);
      if (r.order == analysis::SiteOrder::resident)  // the ranked measure first
        figures = std::string(kSiteResident.label) + " " + change(c.base.resident_bytes, c.head.resident_bytes, true) +
                  ", " + figures;
      out += "\n#" + u64(++rank) + "  " + status_name(c.status) + "  " + figures + "\n";
      std::size_t shown = 0;
      for (const analysis::SiteFrame& f : c.stack) {
        if (shown++ == 8) {
          out += "      ... " + u64(c.stack.size() - 8) + " more frames\n";
          break;
        }
        out += format_frame_line(f) + "\n";
      }
    }
  }

  if (!r.processes.empty()) {
    std::size_t same = 0;
    for (const ImageChange& c : r.processes) same += c.status == ChangeStatus::same;
    out += "\nprocesses (paired by executable and order of appearance): " + u64(r.processes.size() - same) +
           " differ, " + u64(same) + " same\n";
    const ImageFigures zero;
    std::size_t shown = 0;
    for (const ImageChange& c : r.processes) {
      if (c.status == ChangeStatus::same) continue;
      if (r.limit != 0 && shown++ == r.limit) {
        out += "  ... " + u64(r.processes.size() - same - r.limit) + " more (--json lists every process)\n";
        break;
      }
      const std::string pids =
          (c.base ? std::to_string(c.base_pid) : "-") + " -> " + (c.head ? std::to_string(c.head_pid) : "-");
      std::snprintf(line, sizeof line, "  %-28s %-8s pid %-16s ", image_label(c).c_str(), status_name(c.status),
                    pids.c_str());
      out += line + changes_text(c.base.value_or(zero), c.head.value_or(zero), kImage) + "\n";
    }
  }
  if (!r.regions.empty()) {
    out += "\nregions (paired by name; per-run medians)\n";
    const RegionRun zero;
    for (const RegionChange& c : r.regions) {
      const std::uint64_t rb = c.base ? c.base->runs.size() : 0, rh = c.head ? c.head->runs.size() : 0;
      out += "  " + c.name + "  " + status_name(c.status) + "  runs " + change(rb, rh, false) + ", " +
             changes_text(c.base ? c.base->median : zero, c.head ? c.head->median : zero, kRegion) + "\n";
    }
  }
  return out;
}

std::string format_diff_markdown(const DiffReport& r) {
  std::string out = "### memtrack diff\n\n" + md_escape(header_line(r)) + "\n\n";
  out += "| | base | head | delta | change |\n|---|---:|---:|---:|---:|\n";
  for (const auto& f : kTotals) {
    const std::uint64_t b = r.base.*f.member, h = r.head.*f.member;
    if (f.member == &RunTotals::peak_at_ns) {
      out += "| " + std::string(f.label) + " | " + ms(b) + " | " + ms(h) + " | " + signed_ms(b, h) + " | |\n";
    } else {
      out += "| " + std::string(f.label) + " | " + amount(b, f.bytes) + " | " + amount(h, f.bytes) + " | " +
             signed_amount(b, h, f.bytes) + " | " + percent_change(b, h) + " |\n";
    }
    if (f.member == &RunTotals::peak_at_ns && r.resident) {
      const std::uint64_t rb = r.base.peak_resident_bytes, rh = r.head.peak_resident_bytes;
      out += "| " + std::string(kPeakResident.label) + " | " + human_bytes(rb) + " | " + human_bytes(rh) + " | " +
             signed_amount(rb, rh, true) + " | " + percent_change(rb, rh) + " |\n";
    }
  }
  if (!r.has_stacks) {
    out += "\nSites: " + md_escape(no_stacks(r)) + ".\n";
  } else {
    out += "\n**Sites by change in " + std::string(order_name(r.order)) + "** (" + counts_line(r) + ")\n\n";
    const bool resident_column = r.order == analysis::SiteOrder::resident;
    out +=
        resident_column
            ? "| # | status | resident | peak | allocated | allocations | leaked | site "
              "|\n|---:|---|---:|---:|---:|---:|---:|---|\n"
            : "| # | status | peak | allocated | allocations | leaked | site |\n|---:|---|---:|---:|---:|---:|---|\n";
    std::size_t rank = 0;
    for (const SiteChange& c : r.sites.sites) {
      std::string site;
      std::size_t shown = 0;
      for (const analysis::SiteFrame& f : c.stack) {
        if (f.truncated_marker) break;
        if (shown == 4) {
          site += " ← …";
          break;
        }
        std::string name = f.function.empty() ? format_frame(f) : f.function;
        if (name.size() > kMarkdownName) {
          std::size_t cut = kMarkdownName;
          while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80)
            --cut;  // not inside a UTF-8 sequence
          name = name.substr(0, cut) + "…";
        }
        site += (shown++ ? " ← `" : "`") + md_escape(name) + "`";
      }
      out += "| " + u64(++rank) + " | " + status_name(c.status);
      if (resident_column) out += " | " + change(c.base.resident_bytes, c.head.resident_bytes, true, " → ");
      for (const auto& f : {kSite[0], kSite[1], kSite[2], kSite[3]})
        out += " | " + change(c.base.*f.member, c.head.*f.member, f.bytes, " → ");
      out += " | " + site + " |\n";
    }
  }
  if (!r.regions.empty()) {
    out += "\n**Regions** (per-run medians)\n\n";
    out += "| region | status | runs | peak | allocated | allocations | leaked |\n|---|---|---:|---:|---:|---:|---:|\n";
    const RegionRun zero;
    for (const RegionChange& c : r.regions) {
      const RegionRun& b = c.base ? c.base->median : zero;
      const RegionRun& h = c.head ? c.head->median : zero;
      out += "| `" + md_escape(c.name) + "` | " + status_name(c.status) + " | " +
             change(c.base ? c.base->runs.size() : 0, c.head ? c.head->runs.size() : 0, false, " → ");
      for (const auto& f : {kRegion[0], kRegion[1], kRegion[2], kRegion[3]})
        out += " | " + change(b.*f.member, h.*f.member, f.bytes, " → ");
      out += " |\n";
    }
  }
  return out;
}

}  // namespace memtrack::tools
