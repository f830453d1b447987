#include "stats_format.h"

#include <cinttypes>
#include <cstdio>
#include <set>

#include "json_writer.h"
#include "top_format.h"
#include "units.h"

namespace memtrack::tools {

using analysis::EventCounts;
using analysis::FileSummary;
using analysis::kKinds;
using analysis::kSizeBuckets;
using analysis::PidHeap;
using analysis::ProcessImage;
using analysis::Stats;
using codec::EventKind;

namespace {

std::string u64(std::uint64_t v) { return std::to_string(v); }

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

namespace {

template <class T>
std::string json_optional(const std::optional<T>& v) {
  return v ? std::to_string(*v) : "null";
}

// A command line as a person reads it, the way a shell would take it back: words joined by spaces, a word
// with a space, a quote or nothing in single quotes (double quotes if it holds a single quote), and control
// bytes shown as '?', so one row stays one line.
std::string command_line(const std::vector<std::string>& argv, const std::string& executable) {
  if (argv.empty()) return executable.empty() ? "?" : executable;
  std::string o;
  for (const std::string& a : argv) {
    if (!o.empty()) o += ' ';
    const bool quote = a.empty() || a.find_first_of(" \t'\"\\$`") != std::string::npos;
    const bool dq = a.find('\'') != std::string::npos;
    if (quote) o += dq ? '"' : '\'';
    for (const char ch : a) {
      if (dq && (ch == '"' || ch == '\\' || ch == '$' || ch == '`')) o += '\\';
      o += static_cast<unsigned char>(ch) < 0x20 || ch == 0x7F ? '?' : ch;
    }
    if (quote) o += dq ? '"' : '\'';
  }
  return o;
}

const char* end_name(ProcessImage::End e) {
  switch (e) {
    case ProcessImage::End::exec:
      return "exec";
    case ProcessImage::End::exit:
      return "exit";
    case ProcessImage::End::running:
      break;
  }
  return "running";
}

// How an image ended, in a table cell: its exit code, the signal that killed it, "exec", or "-".
std::string end_cell(const ProcessImage& img) {
  if (img.end == ProcessImage::End::exec) return "exec";
  if (img.end == ProcessImage::End::exit) {
    if (img.exit_signal) return "sig " + std::to_string(*img.exit_signal);
    if (img.exit_status) return std::to_string(*img.exit_status);
    return "exit";
  }
  return "-";
}

// An image's command in the table: a fork child that did not exec runs its parent's, an untracked image has
// only its executable.
std::string image_command(const ProcessImage& img) {
  std::string prefix = img.forked ? "[fork] " : "";
  if (!img.untracked.empty()) prefix += "[untracked: " + img.untracked + "] ";
  return prefix + command_line(img.argv, img.executable);
}

// The notes that qualify the numbers, one line each, after a blank line (so the table of an artifact without
// them is unchanged above it).
std::string notes(const Stats& s) {
  std::string o;
  if (!s.has_context())
    o += "note: no context section (version 1 artifact): every pid counts as alive to the end, exec and fork "
         "are not seen; numbers as before\n";
  const std::optional<bool> complete = s.complete();
  if (!complete.has_value())
    o += "note: complete: unknown (no frame index and no End record: this writer leaves no mark of the end)\n";
  else if (!*complete && s.status.is_ok())
    o += s.context.end ? "note: incomplete: the End record does not match the events and frames read\n"
                       : "note: incomplete: no End record (the recording was cut short)\n";
  if (s.heap.late_records() != 0 || s.heap.pending_records() != 0)
    o += "note: " + u64(s.heap.late_records()) + " context records out of order, " + u64(s.heap.pending_records()) +
         " positioned after the last event\n";
  return o.empty() ? o : "\n" + o;
}

}  // namespace

namespace {

// One of ProcessImage's block counters summed over every image.
BlockTotals sum_images(const Stats& s, std::uint64_t ProcessImage::*count, std::uint64_t ProcessImage::*bytes) {
  BlockTotals t;
  for (const ProcessImage& img : s.heap.images()) {
    t.count += img.*count;
    t.bytes += img.*bytes;
  }
  return t;
}

}  // namespace

BlockTotals still_live_at_end(const Stats& s) {
  BlockTotals t;
  for (const auto& [pid, h] : s.heap.pids()) {
    t.count += h.live_count;
    t.bytes += h.live_bytes;
  }
  return t;
}

BlockTotals freed_by_exec(const Stats& s) {
  return sum_images(s, &ProcessImage::freed_by_exec_count, &ProcessImage::freed_by_exec_bytes);
}

BlockTotals inherited_at_exit(const Stats& s) {
  return sum_images(s, &ProcessImage::inherited_at_exit_count, &ProcessImage::inherited_at_exit_bytes);
}

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
  const BlockTotals live = still_live_at_end(s);
  add("still live at end",
      counted(live.count, "block") + ", " + u64(live.bytes) + " bytes (" + human_bytes(live.bytes) + ")");
  if (s.has_context()) {
    const BlockTotals ex = freed_by_exec(s);
    add("freed by exec", counted(ex.count, "block") + ", " + u64(ex.bytes) + " bytes (" + human_bytes(ex.bytes) + ")");
    // Only when there are some: the table of an artifact without fork children that exited is unchanged.
    if (const BlockTotals inh = inherited_at_exit(s); inh.count != 0)
      add("inherited at exit", counted(inh.count, "block") + ", " + u64(inh.bytes) + " bytes (" + human_bytes(inh.bytes) +
                                   "): fork children's copies of their parents' blocks, not leaks");
    std::uint64_t exited = 0;
    for (const ProcessImage& img : s.heap.images()) exited += img.end == ProcessImage::End::exit ? 1 : 0;
    add("processes",
        u64(s.heap.pids().size()) + " (" + u64(s.heap.images().size()) + " images, " + u64(exited) + " exited)");
    if (s.context.recording) add("command", command_line(s.context.recording->command, ""));
    for (const codec::Untracked& u : s.context.untracked)
      add("untracked", (u.pid ? "pid " + std::to_string(*u.pid) + " " : std::string()) +
                           (u.executable.empty() ? "?" : u.executable) + " (" + u.reason + ")");
  }
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

  if (s.has_context()) {
    // One row per image: a pid that exec'd has a row per image (pid/1, pid/2...), the command each ran, and
    // how it ended; a fork child that did not exec runs its parent's command, marked [fork].
    out += "\nby process image\n";
    std::snprintf(line, sizeof line, "  %-10s %10s %14s %20s %10s %14s %14s %15s %14s %6s  %s\n", "pid", "events",
                  "peak live", "peak at", "leaks", "leaked bytes", "peak mapped", "unmatched frees", "freed by exec",
                  "end", "command");
    out += line;
    for (const ProcessImage& img : s.heap.images()) {
      const PidHeap& h = img.heap;
      const std::string label = std::to_string(img.pid) + (img.image ? "/" + std::to_string(img.image) : "");
      const std::string command = image_command(img);
      out += "  ";
      char cells[256];
      std::snprintf(cells, sizeof cells,
                    "%-10s %10" PRIu64 " %14" PRIu64 " %20s %10" PRIu64 " %14" PRIu64 " %14" PRIu64 " %15" PRIu64
                    " %14" PRIu64 " %6s  ",
                    label.c_str(), h.events, h.peak_bytes, since_start(c, h.peak_timestamp).c_str(), h.live_count,
                    h.live_bytes, h.peak_mapped_bytes, h.unmatched_frees, img.freed_by_exec_bytes,
                    end_cell(img).c_str());
      out += cells;
      out += command + "\n";  // unbounded: not through the fixed-size line buffer
    }
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
  return out + notes(s);
}

namespace {

// A pid's images in JSON (the keys a pid entry adds with context): its last image's command, and every
// image with its own numbers.
std::string image_json(const Stats& s, std::int32_t pid) {
  std::string o;
  const ProcessImage* last = nullptr;
  std::string images;
  for (const ProcessImage& img : s.heap.images()) {
    if (img.pid != pid) continue;
    last = &img;
    const PidHeap& h = img.heap;
    images += images.empty() ? "{" : ",{";
    images += "\"image\":" + u64(img.image) + ",\"ppid\":" + json_optional(img.ppid) +
              ",\"forked\":" + (img.forked ? "true" : "false") + ",\"executable\":" + json_string(img.executable) +
              ",\"argv\":" + json_strings(img.argv) + ",\"end\":\"" + end_name(img.end) + "\"" +
              ",\"exit_status\":" + json_optional(img.exit_status) +
              ",\"exit_signal\":" + json_optional(img.exit_signal) + ",\"events\":" + u64(h.events) +
              ",\"peak_live_bytes\":" + u64(h.peak_bytes) + ",\"peak_live_timestamp\":" + u64(h.peak_timestamp) +
              ",\"leaked_count\":" + u64(h.live_count) + ",\"leaked_bytes\":" + u64(h.live_bytes) +
              ",\"peak_mapped_bytes\":" + u64(h.peak_mapped_bytes) + ",\"unmatched_frees\":" + u64(h.unmatched_frees) +
              ",\"inherited_count\":" + u64(img.inherited_count) + ",\"inherited_bytes\":" + u64(img.inherited_bytes) +
              ",\"inherited_at_exit_count\":" + u64(img.inherited_at_exit_count) +
              ",\"inherited_at_exit_bytes\":" + u64(img.inherited_at_exit_bytes) +
              ",\"untracked\":" + (img.untracked.empty() ? std::string("null") : json_string(img.untracked)) +
              ",\"freed_by_exec_count\":" + u64(img.freed_by_exec_count) +
              ",\"freed_by_exec_bytes\":" + u64(img.freed_by_exec_bytes) + "}";
  }
  o += ",\"command\":" + (last ? json_strings(last->argv) : std::string("null"));
  o += ",\"images\":[" + images + "]";
  return o;
}

}  // namespace

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
  // With context, pids known only from records (a process without events) are listed too.
  std::set<std::int32_t> pids;
  for (const auto& [pid, n] : c.by_pid) pids.insert(pid);
  if (s.has_context())
    for (const auto& [pid, h] : s.heap.pids()) pids.insert(pid);
  for (const std::int32_t pid : pids) {
    const auto counted = c.by_pid.find(pid);
    const std::uint64_t n = counted == c.by_pid.end() ? 0 : counted->second;
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
         ",\"unmatched_frees\":" + u64(h.unmatched_frees) + ",\"unmatched_munmaps\":" + u64(h.unmatched_munmaps);
    if (s.has_context()) o += image_json(s, pid);
    o += "}";
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
  if (s.has_context()) {
    const BlockTotals ex = freed_by_exec(s);
    o += ",\"freed_by_exec_count\":" + u64(ex.count) + ",\"freed_by_exec_bytes\":" + u64(ex.bytes);
    const BlockTotals inh = inherited_at_exit(s);
    o += ",\"inherited_at_exit_count\":" + u64(inh.count) + ",\"inherited_at_exit_bytes\":" + u64(inh.bytes);
    o += ",\"recording\":";
    if (const auto& rec = s.context.recording) {
      o += "{\"memtrack\":" + json_string(rec->memtrack_version) + ",\"command\":" + json_strings(rec->command) +
           ",\"start_realtime_ns\":" + u64(rec->start_realtime_ns) + ",\"sections\":" + json_strings(rec->sections) +
           ",\"pid\":" + std::to_string(rec->pid) + "}";
    } else {
      o += "null";
    }
    o += ",\"untracked\":[";
    for (std::size_t i = 0; i < s.context.untracked.size(); ++i) {
      const codec::Untracked& u = s.context.untracked[i];
      o += std::string(i ? "," : "") + "{\"pid\":" + json_optional(u.pid) +
           ",\"executable\":" + json_string(u.executable) + ",\"reason\":" + json_string(u.reason) + "}";
    }
    o += "],\"context_records_out_of_order\":" + u64(s.heap.late_records()) +
         ",\"context_records_after_the_end\":" + u64(s.heap.pending_records());
  }
  // Whether the numbers are the lifecycle-aware ones (false: a version-1 artifact, numbers as before).
  o += ",\"context\":" + std::string(s.has_context() ? "true" : "false");
  const std::optional<bool> complete = s.complete();
  o += ",\"complete\":" + std::string(!complete ? "null" : *complete ? "true" : "false");
  if (leaks != nullptr) {
    o += ",\"top_leaks\":[";
    for (std::size_t i = 0; i < leaks->sites.size(); ++i) o += (i ? "," : "") + format_site_json(leaks->sites[i]);
    o += "]";
  }
  o += "}\n";
  return o;
}

}  // namespace memtrack::tools
