#include "stats.h"

#include <cinttypes>
#include <cstdio>

#include "top_format.h"
#include "units.h"

namespace memtrack::tools {

using analysis::EventCounts;
using analysis::FileSummary;
using analysis::kKinds;
using analysis::kSizeBuckets;
using analysis::PidHeap;
using analysis::Stats;
using codec::EventKind;

namespace {

std::string u64(std::uint64_t v) { return std::to_string(v); }

std::string seconds(std::uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f s", static_cast<double>(ns) / 1e9);
  return buf;
}

std::uint64_t duration(const EventCounts& c) { return c.events == 0 ? 0 : c.last_timestamp - c.first_timestamp; }

// A moment of the trace as a person reads it: seconds after the first event (timestamps are CLOCK_MONOTONIC,
// whose origin means nothing outside the machine that recorded them).
std::string since_start(const EventCounts& c, std::uint64_t timestamp) {
  if (c.events == 0 || timestamp < c.first_timestamp) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "+%.6f s", static_cast<double>(timestamp - c.first_timestamp) / 1e9);
  return buf;
}

double ratio(const FileSummary& f) {
  return f.compressed_bytes == 0 ? 0.0
                                 : static_cast<double>(f.decompressed_bytes) / static_cast<double>(f.compressed_bytes);
}

std::string bucket_label(std::size_t k) {
  if (k == 0) return "0";
  const std::string lo = human_bytes(std::uint64_t{1} << (k - 1));
  return k == 64 ? ">= " + lo : lo + " .. < " + human_bytes(std::uint64_t{1} << k);
}

}  // namespace

std::string format_stats_table(const Stats& s, const analysis::SitesResult* leaks) {
  const EventCounts& c = s.counts;
  std::string out;
  char line[256];
  auto add = [&](const char* label, const std::string& value) {
    std::snprintf(line, sizeof line, "%-22s %s\n", label, value.c_str());
    out += line;
  };
  add("events", u64(c.events));
  add("duration", seconds(duration(c)));
  add("bytes allocated", u64(c.bytes_allocated) + " (" + human_bytes(c.bytes_allocated) + ")");
  add("peak live heap", u64(s.heap.total_peak_bytes()) + " (" + human_bytes(s.heap.total_peak_bytes()) + ") at " +
                            since_start(c, s.heap.total_peak_timestamp()));
  std::uint64_t leak_count = 0, leak_bytes = 0;
  for (const auto& [pid, h] : s.heap.pids()) {
    leak_count += h.live_count;
    leak_bytes += h.live_bytes;
  }
  add("still live at end",
      u64(leak_count) + " blocks, " + u64(leak_bytes) + " bytes (" + human_bytes(leak_bytes) + ")");
  add("brk bytes", u64(c.brk_bytes));
  char r[64];
  std::snprintf(r, sizeof r, "%.2fx", ratio(s.file));
  add("frames", u64(s.file.frames) + (s.file.indexed ? " (indexed)" : ""));
  add("compressed bytes", u64(s.file.compressed_bytes));
  add("msgpack bytes", u64(s.file.decompressed_bytes));
  add("compression ratio", r);

  out += "\nevents by kind\n";
  for (std::size_t k = 1; k < kKinds; ++k) {
    std::snprintf(line, sizeof line, "  %-14s %12" PRIu64 "\n",
                  std::string(codec::kind_name(static_cast<EventKind>(k))).c_str(), c.by_kind[k]);
    out += line;
  }

  out += "\nby pid\n";
  std::snprintf(line, sizeof line, "  %-8s %10s %14s %20s %10s %14s %14s %15s\n", "pid", "events", "peak live",
                "peak at", "leaks", "leaked bytes", "peak mapped", "unmatched frees");
  out += line;
  for (const auto& [pid, n] : c.by_pid) {
    const auto it = s.heap.pids().find(pid);
    const PidHeap h = it == s.heap.pids().end() ? PidHeap{} : it->second;
    std::snprintf(line, sizeof line,
                  "  %-8d %10" PRIu64 " %14" PRIu64 " %20s %10" PRIu64 " %14" PRIu64 " %14" PRIu64 " %15" PRIu64 "\n",
                  pid, n, h.peak_bytes, since_start(c, h.peak_timestamp).c_str(), h.live_count, h.live_bytes,
                  h.peak_mapped_bytes, h.unmatched_frees);
    out += line;
  }

  out += "\nallocation sizes\n";
  for (std::size_t k = 0; k < kSizeBuckets; ++k) {
    if (c.size_histogram[k] == 0) continue;
    std::snprintf(line, sizeof line, "  %-24s %12" PRIu64 "\n", bucket_label(k).c_str(), c.size_histogram[k]);
    out += line;
  }
  if (leaks != nullptr) out += format_leak_sites_table(*leaks);
  return out;
}

std::string format_stats_json(const Stats& s, const analysis::SitesResult* leaks) {
  const EventCounts& c = s.counts;
  std::string o = "{";
  o += "\"events\":" + u64(c.events);
  o += ",\"first_timestamp\":" + u64(c.events == 0 ? 0 : c.first_timestamp);
  o += ",\"last_timestamp\":" + u64(c.last_timestamp);
  o += ",\"duration_ns\":" + u64(duration(c));
  o += ",\"bytes_allocated\":" + u64(c.bytes_allocated);
  o += ",\"brk_bytes\":" + u64(c.brk_bytes);
  o += ",\"peak_live_bytes\":" + u64(s.heap.total_peak_bytes());
  o += ",\"peak_live_timestamp\":" + u64(s.heap.total_peak_timestamp());
  o += ",\"by_kind\":{";
  for (std::size_t k = 1; k < kKinds; ++k) {
    if (k > 1) o += ",";
    o += "\"" + std::string(codec::kind_name(static_cast<EventKind>(k))) + "\":" + u64(c.by_kind[k]);
  }
  o += "},\"pids\":[";
  bool first = true;
  std::uint64_t leak_count = 0, leak_bytes = 0;
  for (const auto& [pid, n] : c.by_pid) {
    const auto it = s.heap.pids().find(pid);
    const PidHeap h = it == s.heap.pids().end() ? PidHeap{} : it->second;
    leak_count += h.live_count;
    leak_bytes += h.live_bytes;
    o += first ? "{" : ",{";
    first = false;
    o += "\"pid\":" + std::to_string(pid) + ",\"events\":" + u64(n) + ",\"peak_live_bytes\":" + u64(h.peak_bytes) +
         ",\"peak_live_timestamp\":" + u64(h.peak_timestamp) + ",\"leaked_count\":" + u64(h.live_count) +
         ",\"leaked_bytes\":" + u64(h.live_bytes) + ",\"mapped_bytes\":" + u64(h.mapped_bytes) +
         ",\"peak_mapped_bytes\":" + u64(h.peak_mapped_bytes) +
         ",\"peak_mapped_timestamp\":" + u64(h.peak_mapped_timestamp) +
         ",\"unmatched_frees\":" + u64(h.unmatched_frees) + ",\"unmatched_munmaps\":" + u64(h.unmatched_munmaps) + "}";
  }
  o += "],\"leaked_count\":" + u64(leak_count) + ",\"leaked_bytes\":" + u64(leak_bytes);
  o += ",\"size_histogram\":[";
  first = true;
  for (std::size_t k = 0; k < kSizeBuckets; ++k) {
    if (c.size_histogram[k] == 0) continue;
    const std::uint64_t lo = analysis::SizeHistogram::bucket_min(k), hi = analysis::SizeHistogram::bucket_max(k);
    o += first ? "{" : ",{";
    first = false;
    o += "\"min\":" + u64(lo) + ",\"max\":" + u64(hi) + ",\"count\":" + u64(c.size_histogram[k]) + "}";
  }
  char r[64];
  std::snprintf(r, sizeof r, "%.4f", ratio(s.file));
  o += "],\"file\":{\"frames\":" + u64(s.file.frames) + ",\"indexed\":" + (s.file.indexed ? "true" : "false") +
       ",\"compressed_bytes\":" + u64(s.file.compressed_bytes) +
       ",\"msgpack_bytes\":" + u64(s.file.decompressed_bytes) + ",\"compression_ratio\":" + r + "}";
  o += ",\"complete\":" + std::string(s.status.is_ok() ? "true" : "false");
  if (leaks != nullptr) {
    o += ",\"top_leaks\":[";
    for (std::size_t i = 0; i < leaks->sites.size(); ++i) o += (i ? "," : "") + format_site_json(leaks->sites[i]);
    o += "]";
  }
  o += "}\n";
  return o;
}

}  // namespace memtrack::tools
