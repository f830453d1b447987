#include "stats_format.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <set>
#include <sstream>
#include <string_view>

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

// A name from the input as the table shows it: as it is when printable ASCII, else as a JSON string.
std::string printable(std::string_view name) {
  const bool plain =
      !name.empty() && std::all_of(name.begin(), name.end(), [](char ch) { return ch > 0x20 && ch < 0x7f; });
  return plain ? std::string(name) : json_string(name);
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

// The same moment in a table cell: milliseconds are what a person compares there ("+0.012 s").
std::string since_start_cell(const EventCounts& c, std::uint64_t timestamp) {
  if (c.events == 0 || timestamp < c.first_timestamp) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "+%.3f s", static_cast<double>(timestamp - c.first_timestamp) / 1e9);
  return buf;
}

// The table's width: every line of the text table fits it; full precision is in --json.
constexpr std::size_t kWidth = 100;

// `line` cut to kWidth columns, its end shown as "..." when cut (a table row's command).
std::string fit(std::string line) {
  if (line.size() > kWidth) line = line.substr(0, kWidth - 3) + "...";
  return line;
}

// "LABEL                  VALUE" with VALUE wrapped at spaces to kWidth columns, continuation lines
// indented under it; a word longer than a line stays whole.
std::string labelled(const char* label, const std::string& value, std::size_t indent = 23) {
  char head[64];
  std::snprintf(head, sizeof head, "%-*s", static_cast<int>(indent - 1), label);
  std::string out = std::string(head) + " ";
  std::size_t col = out.size(), i = 0;
  bool first = true;
  while (i < value.size()) {
    std::size_t j = value.find(' ', i);
    if (j == std::string::npos) j = value.size();
    const std::size_t word = j - i;
    if (!first && col + 1 + word > kWidth) {
      out += "\n" + std::string(indent, ' ');
      col = indent;
      first = true;
    }
    if (!first) {
      out += ' ';
      ++col;
    }
    out.append(value, i, word);
    col += word;
    first = false;
    i = j + 1;
  }
  return out + "\n";
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
  if (o.empty()) return o;
  // Each note wrapped to kWidth columns, its continuation lines under its text.
  std::string wrapped = "\n";
  std::istringstream lines(o);
  for (std::string line; std::getline(lines, line);) {
    constexpr std::string_view kLabel = "note: ";
    wrapped += line.size() > kWidth && line.starts_with(kLabel)
                   ? labelled("note:", line.substr(kLabel.size()), kLabel.size())
                   : line + "\n";
  }
  return wrapped;
}

// Resident memory minus the live heap, signed, in a person's units.
std::string signed_bytes(std::int64_t v) {
  return v < 0 ? "-" + human_bytes(static_cast<std::uint64_t>(-v)) : human_bytes(static_cast<std::uint64_t>(v));
}

constexpr const char* kGapExplanation =
    "the allocator's overhead and retention (freed memory it keeps), plus stacks, static data and anonymous "
    "mappings outside the heap; negative when heap blocks are not resident (never touched, or swapped out)";

// Pids the resident section says nothing about: known to the live heap (events or lifecycle) and never
// sampled.
std::vector<std::int32_t> unsampled_pids(const Stats& s) {
  std::vector<std::int32_t> out;
  for (const auto& [pid, h] : s.heap.pids())
    if (!s.resident.pids().contains(pid)) out.push_back(pid);
  return out;
}

// Sampled pids without a page snapshot (docs/RUNTIME.md, "Resident pages": their pagemap could not be read, or
// their anonymous memory never grew enough).
std::vector<std::int32_t> unsnapshotted_pids(const Stats& s) {
  std::vector<std::int32_t> out;
  for (const auto& [pid, pr] : s.resident.pids())
    if (pr.samples != 0 && pr.page_snapshots == 0) out.push_back(pid);
  return out;
}

// The table's resident section (docs/RUNTIME.md, "Resident memory"): only for a recording with the section,
// so every other artifact's table is unchanged.
std::string resident_table(const Stats& s) {
  if (!s.resident_recorded()) return {};
  const analysis::ResidentBooks& r = s.resident;
  if (r.samples() == 0) return "\nresident memory: not recorded (no process was sampled)\n";
  const EventCounts& c = s.counts;
  std::string out = "\nresident memory (sampled from /proc; memtrack's own pages, at most " + human_bytes(r.own_max()) +
                    ", left out)\n";
  const analysis::ResidentPoint& p = r.peak();
  out += labelled("  peak resident",
                  u64(p.resident) + " (" + human_bytes(p.resident) + ") at " + since_start(c, p.timestamp) + ": anon " +
                      human_bytes(p.anon) + ", file " + human_bytes(p.file) + ", shmem " + human_bytes(p.shmem) +
                      "; swap " + human_bytes(p.swap),
                  25);
  out += labelled(
      "  anon - live heap",
      signed_bytes(p.gap()) + " at that peak (live heap " + human_bytes(p.live_heap) + "): " + kGapExplanation, 25);
  char line[256];
  std::snprintf(line, sizeof line, "  %-8s %13s %10s %10s %10s %16s %10s %8s\n", "pid", "peak resident", "peak at",
                "anon", "live heap", "anon - live heap", "VmHWM", "samples");
  out += line;
  for (const auto& [pid, pr] : r.pids()) {
    const analysis::ResidentPoint& q = pr.peak;
    std::snprintf(line, sizeof line, "  %-8d %13s %10s %10s %10s %16s %10s %8" PRIu64 "\n", pid,
                  human_bytes(q.resident).c_str(), since_start_cell(c, q.timestamp).c_str(),
                  human_bytes(q.anon).c_str(), human_bytes(q.live_heap).c_str(), signed_bytes(q.gap()).c_str(),
                  human_bytes(pr.hwm).c_str(), pr.samples);
    out += line;
  }
  for (const std::int32_t pid : unsampled_pids(s)) {
    std::snprintf(line, sizeof line, "  %-8d not sampled (it ended before its first sample, or /proc hid it)\n", pid);
    out += line;
  }
  if (s.resident_pages_recorded()) {
    std::string pages = counted(r.page_snapshots(), "snapshot") + " (resident per site: top --by resident)";
    const std::vector<std::int32_t> unsnapped = unsnapshotted_pids(s);
    if (!unsnapped.empty()) {
      pages += "; not sampled:";
      for (const std::int32_t pid : unsnapped) pages += " " + std::to_string(pid);
    }
    out += labelled("  resident pages", pages, 25);
  }
  return out;
}

void resident_point_json(JsonWriter& j, const analysis::ResidentPoint& p) {
  j.begin_object().member("anon_bytes", p.anon).member("file_bytes", p.file).member("shmem_bytes", p.shmem);
  j.member("swap_bytes", p.swap).member("live_heap_bytes", p.live_heap);
  j.key("anon_minus_live_heap_bytes").num(p.gap()).member("memtrack_own_bytes", p.own).member("event", p.event);
  j.end_object();
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

std::string format_stats_table(const Stats& s, const analysis::SitesResult* leaks, bool resident) {
  const EventCounts& c = s.counts;
  std::string out;
  char line[256];
  auto add = [&](const char* label, const std::string& value) { out += labelled(label, value); };
  add("events", u64(c.events));
  add("duration", seconds(duration(c)));
  add("bytes allocated", u64(c.bytes_allocated) + " (" + human_bytes(c.bytes_allocated) + ")");
  add(s.attached() ? "peak since attach" : "peak live heap", u64(s.heap.total_peak_bytes()) + " (" + human_bytes(s.heap.total_peak_bytes()) + ") at " +
                            since_start(c, s.heap.total_peak_timestamp()));
  if (s.attached()) {
    std::uint64_t before = 0;
    for (const ProcessImage& img : s.heap.images()) before += img.heap.unmatched_frees;
    add("attached", "the recording began while the process ran; " + u64(before) +
                        " frees of blocks from before the recording (not errors)");
  }
  const BlockTotals live = still_live_at_end(s);
  add("still live at end",
      counted(live.count, "block") + ", " + u64(live.bytes) + " bytes (" + human_bytes(live.bytes) + ")");
  if (s.has_context()) {
    const BlockTotals ex = freed_by_exec(s);
    add("freed by exec", counted(ex.count, "block") + ", " + u64(ex.bytes) + " bytes (" + human_bytes(ex.bytes) + ")");
    // Only when there are some: the table of an artifact without fork children that exited is unchanged.
    if (const BlockTotals inh = inherited_at_exit(s); inh.count != 0)
      add("inherited at exit", counted(inh.count, "block") + ", " + u64(inh.bytes) + " bytes (" +
                                   human_bytes(inh.bytes) +
                                   "): fork children's copies of their parents' blocks, not leaks");
    std::uint64_t exited = 0;
    for (const ProcessImage& img : s.heap.images()) exited += img.end == ProcessImage::End::exit ? 1 : 0;
    add("processes",
        u64(s.heap.pids().size()) + " (" + counted(s.heap.images().size(), "image") + ", " + u64(exited) + " exited)");
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

  if (s.foreign.events != 0) {
    out += "\nevents of other types (unknown to this version, in no number above)\n";
    for (const auto& [type, n] : s.foreign.by_type) {
      std::snprintf(line, sizeof line, "  %-14s %12" PRIu64 "\n", printable(type).c_str(), n);
      out += line;
    }
    if (s.foreign.other_types != 0) {
      std::snprintf(line, sizeof line, "  %-14s %12" PRIu64 "\n", "(more types)", s.foreign.other_types);
      out += line;
    }
  }

  if (s.has_context()) {
    // One row per image: a pid that exec'd has a row per image (pid/1, pid/2...), the command each ran, and
    // how it ended; a fork child that did not exec runs its parent's command, marked [fork].
    out += "\nby process image\n";
    // Columns that are 0 on every row are left out (peak mapped, unmatched frees, freed by exec).
    bool mapped = false, unmatched = false, exec_freed = false;
    for (const ProcessImage& img : s.heap.images()) {
      mapped = mapped || img.heap.peak_mapped_bytes != 0;
      unmatched = unmatched || img.heap.unmatched_frees != 0;
      exec_freed = exec_freed || img.freed_by_exec_bytes != 0;
    }
    // When each image peaked and how many blocks it leaked are in --json (and per pid below): the command
    // needs the room.
    auto row = [&](const std::string& pid, const std::string& events, const std::string& peak,
                   const std::string& leaked, const std::string& map, const std::string& unm, const std::string& exe,
                   const std::string& end, const std::string& cmd) {
      char cells[256];
      std::snprintf(cells, sizeof cells, "  %-10s %8s %10s %10s", pid.c_str(), events.c_str(), peak.c_str(),
                    leaked.c_str());
      std::string text = cells;
      auto cell = [&text](int width, const std::string& v) {
        char b[64];
        std::snprintf(b, sizeof b, " %*s", width, v.c_str());
        text += b;
      };
      if (mapped) cell(11, map);
      if (unmatched) cell(9, unm);
      if (exec_freed) cell(10, exe);
      cell(6, end);
      out += fit(text + "  " + cmd) + "\n";
    };
    row("pid", "events", "peak live", "leaked", "peak mapped", "unmatched", "exec-freed", "end", "command");
    for (const ProcessImage& img : s.heap.images()) {
      const PidHeap& h = img.heap;
      row(std::to_string(img.pid) + (img.image ? "/" + std::to_string(img.image) : ""), u64(h.events),
          human_bytes(h.peak_bytes), human_bytes(img.leaked_bytes()), human_bytes(h.peak_mapped_bytes),
          u64(h.unmatched_frees), human_bytes(img.freed_by_exec_bytes), end_cell(img), image_command(img));
    }
  }

  out += "\nby pid\n";
  {
    bool mapped = false, unmatched = false;
    for (const auto& [pid, n] : c.by_pid) {
      const auto it = s.heap.pids().find(pid);
      if (it == s.heap.pids().end()) continue;
      mapped = mapped || it->second.peak_mapped_bytes != 0;
      unmatched = unmatched || it->second.unmatched_frees != 0;
    }
    auto row = [&](const std::string& pid, const std::string& events, const std::string& peak, const std::string& at,
                   const std::string& nleaks, const std::string& leaked, const std::string& map,
                   const std::string& unm) {
      std::snprintf(line, sizeof line, "  %-8s %9s %10s %10s %7s %10s", pid.c_str(), events.c_str(), peak.c_str(),
                    at.c_str(), nleaks.c_str(), leaked.c_str());
      out += line;
      if (mapped) {
        std::snprintf(line, sizeof line, " %11s", map.c_str());
        out += line;
      }
      if (unmatched) {
        std::snprintf(line, sizeof line, " %9s", unm.c_str());
        out += line;
      }
      out += "\n";
    };
    row("pid", "events", "peak live", "peak at", "leaks", "leaked", "peak mapped", "unmatched");
    for (const auto& [pid, n] : c.by_pid) {
      const auto it = s.heap.pids().find(pid);
      const PidHeap h = it == s.heap.pids().end() ? PidHeap{} : it->second;
      row(std::to_string(pid), u64(n), human_bytes(h.peak_bytes), since_start_cell(c, h.peak_timestamp),
          u64(h.live_count), human_bytes(h.live_bytes), human_bytes(h.peak_mapped_bytes), u64(h.unmatched_frees));
    }
  }

  if (resident) out += resident_table(s);

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
void image_json(JsonWriter& j, const Stats& s, std::int32_t pid) {
  const ProcessImage* last = nullptr;
  for (const ProcessImage& img : s.heap.images())
    if (img.pid == pid) last = &img;
  j.key("command");
  if (last)
    j.strs(last->argv);
  else
    j.null();
  j.key("images").begin_array();
  for (const ProcessImage& img : s.heap.images()) {
    if (img.pid != pid) continue;
    const PidHeap& h = img.heap;
    j.begin_object().member("image", img.image).key("ppid").num(img.ppid).member("forked", img.forked);
    j.member("executable", img.executable).key("argv").strs(img.argv).member("end", end_name(img.end));
    j.key("exit_status").num(img.exit_status).key("exit_signal").num(img.exit_signal).member("events", h.events);
    j.member("peak_live_bytes", h.peak_bytes).member("peak_live_timestamp", h.peak_timestamp);
    j.member("leaked_count", img.leaked_count()).member("leaked_bytes", img.leaked_bytes());
    j.member("peak_mapped_bytes", h.peak_mapped_bytes).member("unmatched_frees", h.unmatched_frees);
    j.member("inherited_count", img.inherited_count).member("inherited_bytes", img.inherited_bytes);
    j.member("inherited_at_exit_count", img.inherited_at_exit_count);
    j.member("inherited_at_exit_bytes", img.inherited_at_exit_bytes);
    j.key("untracked").str_or_null(img.untracked);
    j.member("freed_by_exec_count", img.freed_by_exec_count).member("freed_by_exec_bytes", img.freed_by_exec_bytes);
    j.end_object();
  }
  j.end_array();
}

}  // namespace

std::string format_stats_json(const Stats& s, const analysis::SitesResult* leaks, bool resident) {
  const bool with_resident = resident && s.resident_recorded();
  const EventCounts& c = s.counts;
  std::string o;
  JsonWriter j(o);
  j.begin_object().member("events", c.events).member("first_timestamp", c.events == 0 ? 0 : c.first_timestamp);
  j.member("last_timestamp", c.last_timestamp).member("duration_ns", duration(c));
  j.member("bytes_allocated", c.bytes_allocated).member("brk_bytes", c.brk_bytes);
  j.member("peak_live_bytes", s.heap.total_peak_bytes()).member("peak_live_timestamp", s.heap.total_peak_timestamp());
  j.key("by_kind").begin_object();
  for (std::size_t k = 1; k < kKinds; ++k) j.member(codec::kind_name(static_cast<EventKind>(k)), c.by_kind[k]);
  j.end_object();
  // Only when there are some: the document of an artifact without them is unchanged.
  if (s.foreign.events != 0) {
    j.key("foreign_events").begin_object().member("events", s.foreign.events).key("by_type").begin_object();
    for (const auto& [type, n] : s.foreign.by_type) j.member(type, n);
    j.end_object().member("other_types", s.foreign.other_types).end_object();
  }
  j.key("pids").begin_array();
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
    j.begin_object().member("pid", pid).member("events", n).member("peak_live_bytes", h.peak_bytes);
    j.member("peak_live_timestamp", h.peak_timestamp).member("leaked_count", h.live_count);
    j.member("leaked_bytes", h.live_bytes).member("mapped_bytes", h.mapped_bytes);
    j.member("peak_mapped_bytes", h.peak_mapped_bytes).member("peak_mapped_timestamp", h.peak_mapped_timestamp);
    j.member("unmatched_frees", h.unmatched_frees).member("unmatched_munmaps", h.unmatched_munmaps);
    if (s.has_context()) image_json(j, s, pid);
    if (with_resident) {
      const auto rp = s.resident.pids().find(pid);
      j.key("peak_resident_bytes");
      if (rp == s.resident.pids().end()) {
        j.null().member("resident_samples", 0).key("resident_at_peak").null();
      } else {
        j.num(rp->second.peak.resident).member("peak_resident_timestamp", rp->second.peak.timestamp);
        j.member("resident_samples", rp->second.samples).member("vm_hwm_bytes", rp->second.hwm);
        if (s.resident_pages_recorded()) j.member("resident_page_snapshots", rp->second.page_snapshots);
        j.key("resident_at_peak");
        resident_point_json(j, rp->second.peak);
      }
    }
    j.end_object();
  }
  j.end_array().member("leaked_count", leak_count).member("leaked_bytes", leak_bytes);
  j.key("size_histogram").begin_array();
  for (std::size_t k = 0; k < kSizeBuckets; ++k) {
    if (c.size_histogram[k] == 0) continue;
    j.begin_object().member("min", analysis::SizeHistogram::bucket_min(k));
    j.member("max", analysis::SizeHistogram::bucket_max(k)).member("count", c.size_histogram[k]).end_object();
  }
  char r[64];
  std::snprintf(r, sizeof r, "%.4f", ratio(s.file));
  j.end_array().key("file").begin_object().member("frames", s.file.frames).member("indexed", s.file.indexed);
  j.member("compressed_bytes", s.file.compressed_bytes).member("msgpack_bytes", s.file.decompressed_bytes);
  j.key("compression_ratio").raw(r).end_object();
  if (s.has_context()) {
    const BlockTotals ex = freed_by_exec(s);
    j.member("freed_by_exec_count", ex.count).member("freed_by_exec_bytes", ex.bytes);
    const BlockTotals inh = inherited_at_exit(s);
    j.member("inherited_at_exit_count", inh.count).member("inherited_at_exit_bytes", inh.bytes);
    j.key("recording");
    if (const auto& rec = s.context.recording) {
      j.begin_object().member("memtrack", rec->memtrack_version).key("command").strs(rec->command);
      j.member("start_realtime_ns", rec->start_realtime_ns).key("sections").strs(rec->sections);
      j.member("pid", rec->pid).end_object();
    } else {
      j.null();
    }
    j.key("untracked").array(s.context.untracked, [](JsonWriter& w, const codec::Untracked& u) {
      w.begin_object().key("pid").num(u.pid).member("executable", u.executable).member("reason", u.reason);
      w.end_object();
    });
    j.member("context_records_out_of_order", s.heap.late_records());
    j.member("context_records_after_the_end", s.heap.pending_records());
  }
  if (with_resident) {
    const analysis::ResidentBooks& books = s.resident;
    j.key("peak_resident_bytes");
    if (books.samples() == 0) {
      j.null().key("resident_at_peak").null();
    } else {
      j.num(books.peak().resident).member("peak_resident_timestamp", books.peak().timestamp).key("resident_at_peak");
      resident_point_json(j, books.peak());
      j.member("anon_minus_live_heap_explanation", kGapExplanation);
    }
    j.member("resident_samples", books.samples()).member("resident_memtrack_own_bytes_max", books.own_max());
    j.key("resident_unsampled_pids").array(unsampled_pids(s), [](JsonWriter& w, std::int32_t pid) { w.num(pid); });
    if (s.resident_pages_recorded()) {
      j.member("resident_page_snapshots", books.page_snapshots());
      j.key("resident_pages_unsampled_pids").array(unsnapshotted_pids(s), [](JsonWriter& w, std::int32_t pid) {
        w.num(pid);
      });
    }
  }
  // Whether the numbers are the lifecycle-aware ones (false: a version-1 artifact, numbers as before).
  j.member("context", s.has_context());
  const std::optional<bool> complete = s.complete();
  j.key("complete");
  if (complete)
    j.boolean(*complete);
  else
    j.null();
  if (leaks != nullptr) j.key("top_leaks").array(leaks->sites, write_site_json);
  j.end_object();
  return o + "\n";
}

}  // namespace memtrack::tools
