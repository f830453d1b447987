#include "stats.h"

#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cinttypes>
#include <cstdio>
#include <memory>

#include "memtrack/codec/artifact_decoder.h"
#include "memtrack/codec/frame_decoder.h"
#include "units.h"

namespace memtrack::tools {
namespace {

using codec::Event;
using codec::EventKind;

// Totals saturate instead of wrapping: only hostile input (sizes near 2^64) gets there, and a total pinned
// at the maximum is recognisable where a wrapped one would look plausible.
std::uint64_t add_saturating(std::uint64_t a, std::uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

bool is_allocation(EventKind k) {
  return k == EventKind::Malloc || k == EventKind::Calloc || k == EventKind::AlignedAlloc || k == EventKind::Realloc;
}

// Frames in flight share this budget (compressed bytes, decompressed buffer, decoded events).
constexpr std::uint64_t kMemoryBudget = 256u << 20;
constexpr std::size_t kSmallestEventBytes = 30;  // a Free with fixint values is 39 bytes; stay below it

}  // namespace

void EventCounts::add(std::span<const Event> block) {
  // pids repeat in long runs: look the map up only when the pid changes.
  std::int32_t last_pid = 0;
  std::uint64_t* pid_count = nullptr;
  for (const Event& e : block) {
    ++by_kind[static_cast<std::size_t>(e.kind)];
    if (pid_count == nullptr || e.pid != last_pid) {
      last_pid = e.pid;
      pid_count = &by_pid[e.pid];
    }
    ++*pid_count;
    if (is_allocation(e.kind)) {
      bytes_allocated = add_saturating(bytes_allocated, e.size);
      ++size_histogram[static_cast<std::size_t>(std::bit_width(e.size))];
    } else if (e.kind == EventKind::Brk) {
      brk_bytes = add_saturating(brk_bytes, e.size);
    }
    first_timestamp = std::min(first_timestamp, e.timestamp);
    last_timestamp = std::max(last_timestamp, e.timestamp);
  }
  events += block.size();
}

void EventCounts::merge(const EventCounts& o) {
  events += o.events;
  for (std::size_t i = 0; i < kKinds; ++i) by_kind[i] += o.by_kind[i];
  for (const auto& [pid, n] : o.by_pid) by_pid[pid] += n;
  bytes_allocated = add_saturating(bytes_allocated, o.bytes_allocated);
  brk_bytes = add_saturating(brk_bytes, o.brk_bytes);
  for (std::size_t i = 0; i < kSizeBuckets; ++i) size_histogram[i] += o.size_histogram[i];
  first_timestamp = std::min(first_timestamp, o.first_timestamp);
  last_timestamp = std::max(last_timestamp, o.last_timestamp);
}

LiveHeap::Pid& LiveHeap::pid(std::int32_t id) {
  if (last_ == nullptr || id != last_pid_) {
    last_pid_ = id;
    last_ = &pids_[id];  // std::map: references stay valid as pids are added
  }
  return *last_;
}

void LiveHeap::allocate(Pid& p, std::uint64_t addr, std::uint64_t size, std::uint64_t ts) {
  std::uint64_t old_size = 0;
  if (p.live.insert(addr, size, old_size)) {  // a missed free: the new block replaces the old one
    p.heap.live_bytes -= old_size;
    total_live_ -= old_size;
    --p.heap.live_count;
  }
  p.heap.live_bytes += size;
  ++p.heap.live_count;
  total_live_ += size;
  if (p.heap.live_bytes > p.heap.peak_bytes) {
    p.heap.peak_bytes = p.heap.live_bytes;
    p.heap.peak_timestamp = ts;
  }
  if (total_live_ > total_peak_) {
    total_peak_ = total_live_;
    total_peak_ts_ = ts;
  }
}

void LiveHeap::release(Pid& p, std::uint64_t addr) {
  std::uint64_t size = 0;
  if (!p.live.erase(addr, size)) {
    ++p.heap.unmatched_frees;
    return;
  }
  p.heap.live_bytes -= size;
  total_live_ -= size;
  --p.heap.live_count;
}

void LiveHeap::map(Pid& p, std::uint64_t addr, std::uint64_t size, std::uint64_t ts) {
  if (size == 0) return;
  // A new mapping over an old one (MAP_FIXED) replaces the overlap, as the kernel does.
  unmap(p, addr, size);
  p.mappings[addr] = size;
  p.heap.mapped_bytes += size;
  if (p.heap.mapped_bytes > p.heap.peak_mapped_bytes) {
    p.heap.peak_mapped_bytes = p.heap.mapped_bytes;
    p.heap.peak_mapped_timestamp = ts;
  }
}

// Removes [addr, addr + size) from the mappings, cutting mappings that overlap it partly.
void LiveHeap::unmap(Pid& p, std::uint64_t addr, std::uint64_t size) {
  const std::uint64_t end = addr + size < addr ? UINT64_MAX : addr + size;
  auto it = p.mappings.upper_bound(addr);
  if (it != p.mappings.begin()) --it;
  while (it != p.mappings.end() && it->first < end) {
    const std::uint64_t start = it->first, stop = it->first + it->second;
    if (stop <= addr) {
      ++it;
      continue;
    }
    const std::uint64_t cut_from = std::max(start, addr), cut_to = std::min(stop, end);
    p.heap.mapped_bytes -= cut_to - cut_from;
    it = p.mappings.erase(it);
    if (start < cut_from) p.mappings.emplace(start, cut_from - start);
    if (cut_to < stop) it = p.mappings.emplace(cut_to, stop - cut_to).first;
  }
}

void LiveHeap::add(std::span<const Event> events) {
  constexpr std::size_t kPrefetchDistance = 8;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (i + kPrefetchDistance < events.size() && last_ != nullptr) {
      const Event& ahead = events[i + kPrefetchDistance];
      if (ahead.pid == last_pid_) {
        last_->live.prefetch(ahead.kind == EventKind::Realloc && ahead.has_old_addr() ? ahead.old_addr : ahead.addr);
      }
    }
    const Event& e = events[i];
    switch (e.kind) {
      case EventKind::Malloc:
      case EventKind::Calloc:
      case EventKind::AlignedAlloc:
        allocate(pid(e.pid), e.addr, e.size, e.timestamp);
        break;
      case EventKind::Realloc: {
        Pid& p = pid(e.pid);
        if (e.has_old_addr()) release(p, e.old_addr);
        allocate(p, e.addr, e.size, e.timestamp);
        break;
      }
      case EventKind::Free:
        release(pid(e.pid), e.addr);
        break;
      case EventKind::Mmap:
        map(pid(e.pid), e.addr, e.size, e.timestamp);
        break;
      case EventKind::Munmap: {
        Pid& p = pid(e.pid);
        const std::uint64_t before = p.heap.mapped_bytes;
        unmap(p, e.addr, e.size);
        if (p.heap.mapped_bytes == before) ++p.heap.unmatched_munmaps;
        break;
      }
      case EventKind::Brk:
        pid(e.pid);  // the pid appears in the table even if it only moved the break
        break;
    }
  }
  for (const auto& [id, p] : pids_) summary_[id] = p.heap;
}

Stats compute_stats(codec::ByteSource& source, const std::string& name, const ProgressFn& progress) {
  Stats stats;
  codec::ArtifactDecoder decoder(source, name);
  std::vector<Event> events(65536);
  while (const std::size_t n = decoder.next(events)) {
    const std::span<const Event> block(events.data(), n);
    stats.counts.add(block);
    stats.heap.add(block);
    if (progress) progress(decoder.progress().compressed_bytes, decoder.progress().events);
  }
  stats.status = decoder.status();
  stats.file.frames = decoder.progress().frames;
  stats.file.compressed_bytes = decoder.progress().compressed_bytes;
  stats.file.decompressed_bytes = decoder.progress().decompressed_bytes;
  return stats;
}

Stats compute_stats_indexed(const codec::SeekTable& index, const ReadAt& read_at, const std::string& name,
                            const ProgressFn& progress, std::size_t max_frames_in_flight) {
  // One slot per frame in flight, owning everything the frame needs, reused round-robin. Tokens leave the
  // last (serial, in-order) stage in order, so with K tokens alive, frame i's slot i % K is free again when
  // the input stage reaches frame i.
  struct Slot {
    codec::FrameDecoder decoder;
    std::vector<std::byte> compressed;
    std::vector<Event> events;
    EventCounts counts;
    codec::Status status;
    std::size_t decompressed = 0;
    std::size_t index = 0;
  };

  Stats stats;
  stats.file.indexed = true;
  const std::size_t frames = index.frames.size();
  if (max_frames_in_flight == 0) {
    std::uint64_t largest = 1;
    for (const auto& f : index.frames) {
      const std::uint64_t bytes = f.compressed_size + std::uint64_t{f.decompressed_size} * 2 +
                                  std::uint64_t{f.decompressed_size} / kSmallestEventBytes * sizeof(Event);
      largest = std::max(largest, bytes);
    }
    // The budget bounds memory whatever the core count; below it, two frames per thread keep every thread
    // busy, and more would only touch fresh memory (each slot's buffers are reused across its frames).
    const auto per_thread = static_cast<std::uint64_t>(2 * tbb::this_task_arena::max_concurrency() + 1);
    max_frames_in_flight =
        static_cast<std::size_t>(std::clamp<std::uint64_t>(std::min(kMemoryBudget / largest, per_thread), 2, 64));
  }
  const std::size_t slots_count = std::max<std::size_t>(1, std::min(max_frames_in_flight, frames));
  std::vector<std::unique_ptr<Slot>> slots;
  for (std::size_t i = 0; i < slots_count; ++i) slots.push_back(std::make_unique<Slot>());

  std::size_t next_frame = 0;
  // Set by the output stage, read by the input stage: different filters run concurrently, so atomic.
  std::atomic<bool> failed = false;
  std::uint64_t bytes_done = 0;

  auto frame_error = [&](std::size_t i, const std::string& what) {
    return codec::Status(codec::Errc::bad_zstd, name + ": frame " + std::to_string(i) + " at byte " +
                                                    std::to_string(index.frames[i].offset) + ": " + what);
  };

  tbb::parallel_pipeline(
      slots_count,
      tbb::make_filter<void, Slot*>(tbb::filter_mode::serial_in_order, [&](tbb::flow_control& fc) -> Slot* {
        if (next_frame == frames || failed) {
          fc.stop();
          return nullptr;
        }
        const std::size_t i = next_frame++;
        Slot* s = slots[i % slots_count].get();
        s->index = i;
        const std::uint32_t size = index.frames[i].compressed_size;
        if (size > s->decoder.max_frame_bytes()) {  // never allocate what no frame can be
          s->compressed.clear();
          s->status = frame_error(i, "the index says " + std::to_string(size) + " bytes, more than a frame can be");
          return s;
        }
        s->compressed.resize(size);
        s->status = read_at(index.frames[i].offset, s->compressed);
        return s;
      }) & tbb::make_filter<Slot*, Slot*>(tbb::filter_mode::parallel, [&](Slot* s) {
        s->events.clear();
        s->counts = EventCounts{};
        if (!s->status.is_ok()) return s;
        codec::Status st = s->decoder.decode(s->compressed, s->events, &s->decompressed);
        if (!st.is_ok()) {
          s->status = {st.code(), frame_error(s->index, st.message()).message()};
          return s;
        }
        s->counts.add(s->events);
        return s;
      }) & tbb::make_filter<Slot*, void>(tbb::filter_mode::serial_in_order, [&](Slot* s) {
        if (failed) return;
        if (!s->status.is_ok()) {
          stats.status = s->status;
          failed = true;
          return;
        }
        stats.counts.merge(s->counts);
        stats.heap.add(s->events);
        ++stats.file.frames;
        stats.file.decompressed_bytes += s->decompressed;
        bytes_done += s->compressed.size();
        if (progress) progress(bytes_done, stats.counts.events);
      }));
  // Like the sequential path, count the index's skippable frame once the whole file was read.
  stats.file.compressed_bytes = bytes_done + (stats.status.is_ok() ? index.table_size : 0);
  return stats;
}

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

std::string format_stats_table(const Stats& s) {
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
  return out;
}

std::string format_stats_json(const Stats& s) {
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
    const std::uint64_t lo = k == 0 ? 0 : std::uint64_t{1} << (k - 1);
    const std::uint64_t hi = k == 0 ? 0 : k == 64 ? UINT64_MAX : (std::uint64_t{1} << k) - 1;
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
  o += "}\n";
  return o;
}

}  // namespace memtrack::tools
