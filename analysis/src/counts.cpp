#include "memtrack/analysis/counts.h"

#include <algorithm>
#include <bit>

#include "memtrack/analysis/event_kinds.h"

namespace memtrack::analysis {
namespace {

std::uint64_t add_saturating(std::uint64_t a, std::uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

}  // namespace

std::size_t SizeHistogram::bucket(std::uint64_t size) { return static_cast<std::size_t>(std::bit_width(size)); }

std::uint64_t SizeHistogram::bucket_min(std::size_t k) { return k == 0 ? 0 : std::uint64_t{1} << (k - 1); }

std::uint64_t SizeHistogram::bucket_max(std::size_t k) {
  return k == 0 ? 0 : k == 64 ? UINT64_MAX : (std::uint64_t{1} << k) - 1;
}

void SizeHistogram::merge(const SizeHistogram& o) {
  for (std::size_t i = 0; i < kSizeBuckets; ++i) counts[i] += o.counts[i];
}

void EventCounts::add(std::span<const codec::Event> block) {
  // pids repeat in long runs: look the map up only when the pid changes.
  std::int32_t last_pid = 0;
  std::uint64_t* pid_count = nullptr;
  for (const codec::Event& e : block) {
    ++by_kind[static_cast<std::size_t>(e.kind)];
    if (pid_count == nullptr || e.pid != last_pid) {
      last_pid = e.pid;
      pid_count = &by_pid[e.pid];
    }
    ++*pid_count;
    if (allocates(e.kind)) {
      bytes_allocated = add_saturating(bytes_allocated, e.size);
      size_histogram.add(e.size);
    } else if (e.kind == codec::EventKind::Brk) {
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
  size_histogram.merge(o.size_histogram);
  first_timestamp = std::min(first_timestamp, o.first_timestamp);
  last_timestamp = std::max(last_timestamp, o.last_timestamp);
}

void ForeignCounts::add(std::string_view type) {
  ++events;
  if (auto it = by_type.find(type); it != by_type.end()) {
    ++it->second;
  } else if (by_type.size() < kMaxTypes) {
    by_type.emplace(type, 1);
  } else {
    ++other_types;
  }
}

}  // namespace memtrack::analysis
