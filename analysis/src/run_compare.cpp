#include "memtrack/analysis/run_compare.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <utility>

#include "memtrack/analysis/event_kinds.h"

namespace memtrack::analysis {
namespace {

std::string basename(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

ImageFigures figures_of(const ProcessImage& img) {
  return {img.heap.events, img.heap.peak_bytes, img.leaked_bytes(), img.leaked_count()};
}

bool equal(const ImageFigures& a, const ImageFigures& b) {
  return a.events == b.events && a.peak_bytes == b.peak_bytes && a.leaked_bytes == b.leaked_bytes &&
         a.leaked_blocks == b.leaked_blocks;
}

bool equal(const RegionRun& a, const RegionRun& b) {
  return a.peak_bytes == b.peak_bytes && a.allocated_bytes == b.allocated_bytes && a.allocations == b.allocations &&
         a.leaked_bytes == b.leaked_bytes && a.leaked_blocks == b.leaked_blocks;
}

template <typename Change>
void set_status(Change& c, bool same) {
  if (!c.base) {
    c.status = ChangeStatus::added;
  } else if (!c.head) {
    c.status = ChangeStatus::removed;
  } else {
    c.status = same ? ChangeStatus::same : ChangeStatus::changed;
  }
}

}  // namespace

RunTotals run_totals(const Stats& stats, const SitesResult* sites) {
  RunTotals t;
  const EventCounts& c = stats.counts;
  t.events = c.events;
  for (std::size_t k = 1; k < kKinds; ++k)
    if (allocates(static_cast<codec::EventKind>(k))) t.allocations += c.by_kind[k];
  t.allocated_bytes = c.bytes_allocated;
  t.peak_bytes = stats.heap.total_peak_bytes();
  const std::uint64_t ts = stats.heap.total_peak_timestamp();
  t.peak_at_ns = c.events != 0 && ts >= c.first_timestamp ? ts - c.first_timestamp : 0;
  // As `memtrack stats` sums them.
  for (const auto& [pid, h] : stats.heap.pids()) {
    t.leaked_bytes += h.live_bytes;
    t.leaked_blocks += h.live_count;
  }
  for (const ProcessImage& img : stats.heap.images())
    if (img.image == 0) ++t.processes;
  t.resident_sampled = stats.resident_recorded() && stats.resident.samples() != 0;
  t.peak_resident_bytes = stats.resident.peak().resident;
  if (sites != nullptr) {
    t.temporary = sites->unknown.temporary;
    for (const Site& s : sites->sites) t.temporary += s.totals.temporary;
  }
  return t;
}

std::vector<ImageChange> match_images(const std::deque<ProcessImage>& base, const std::deque<ProcessImage>& head) {
  // (executable, nth) -> the image of each side.
  const auto number = [](const std::deque<ProcessImage>& images) {
    std::vector<std::pair<std::string, std::uint32_t>> keys;
    std::map<std::string, std::uint32_t> seen;
    for (const ProcessImage& img : images) {
      std::string exe = basename(img.executable);
      const std::uint32_t nth = ++seen[exe];
      keys.emplace_back(std::move(exe), nth);
    }
    return keys;
  };
  const auto base_keys = number(base), head_keys = number(head);
  std::map<std::pair<std::string, std::uint32_t>, std::size_t> in_base;
  for (std::size_t i = 0; i < base.size(); ++i) in_base.emplace(base_keys[i], i);
  std::vector<bool> paired(base.size(), false);
  std::vector<ImageChange> out;
  for (std::size_t i = 0; i < head.size(); ++i) {
    ImageChange c;
    c.executable = head_keys[i].first;
    c.nth = head_keys[i].second;
    c.head = figures_of(head[i]);
    c.head_pid = head[i].pid;
    if (const auto b = in_base.find(head_keys[i]); b != in_base.end()) {
      c.base = figures_of(base[b->second]);
      c.base_pid = base[b->second].pid;
      paired[b->second] = true;
    }
    set_status(c, c.base && equal(*c.base, *c.head));
    out.push_back(std::move(c));
  }
  for (std::size_t i = 0; i < base.size(); ++i) {
    if (paired[i]) continue;
    ImageChange c;
    c.executable = base_keys[i].first;
    c.nth = base_keys[i].second;
    c.base = figures_of(base[i]);
    c.base_pid = base[i].pid;
    set_status(c, false);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<RegionFigures> region_figures(std::span<const RegionOccurrence> occurrences) {
  // Occurrences are listed as they ended; runs are kept in the order they began.
  std::vector<const RegionOccurrence*> sorted;
  sorted.reserve(occurrences.size());
  for (const RegionOccurrence& o : occurrences) sorted.push_back(&o);
  std::stable_sort(sorted.begin(), sorted.end(), [](const RegionOccurrence* a, const RegionOccurrence* b) {
    return a->begin_event != b->begin_event ? a->begin_event < b->begin_event : a->occurrence < b->occurrence;
  });
  std::vector<RegionFigures> out;
  std::map<std::string, std::size_t> index;
  for (const RegionOccurrence* o : sorted) {
    const auto [it, inserted] = index.try_emplace(o->name, out.size());
    if (inserted) out.push_back(RegionFigures{o->name, {}, {}, {}, {}});
    out[it->second].runs.push_back(
        RegionRun{o->peak_bytes, o->allocated_bytes, o->allocations, o->retained_bytes, o->retained_blocks});
  }
  for (RegionFigures& f : out) {
    const auto stat = [&](std::uint64_t RegionRun::*m) {
      std::vector<std::uint64_t> v;
      v.reserve(f.runs.size());
      for (const RegionRun& r : f.runs) v.push_back(r.*m);
      std::sort(v.begin(), v.end());
      f.min.*m = v.front();
      f.median.*m = v[(v.size() - 1) / 2];
      f.max.*m = v.back();
    };
    for (auto m : {&RegionRun::peak_bytes, &RegionRun::allocated_bytes, &RegionRun::allocations,
                   &RegionRun::leaked_bytes, &RegionRun::leaked_blocks})
      stat(m);
  }
  return out;
}

std::vector<RegionChange> match_regions(std::span<const RegionFigures> base, std::span<const RegionFigures> head) {
  std::map<std::string, std::size_t> in_base;
  for (std::size_t i = 0; i < base.size(); ++i) in_base.emplace(base[i].name, i);
  std::vector<bool> paired(base.size(), false);
  std::vector<RegionChange> out;
  for (const RegionFigures& h : head) {
    RegionChange c;
    c.name = h.name;
    c.head = h;
    if (const auto b = in_base.find(h.name); b != in_base.end()) {
      c.base = base[b->second];
      paired[b->second] = true;
    }
    set_status(c, c.base && c.base->runs.size() == h.runs.size() && equal(c.base->median, h.median));
    out.push_back(std::move(c));
  }
  for (std::size_t i = 0; i < base.size(); ++i) {
    if (paired[i]) continue;
    RegionChange c;
    c.name = base[i].name;
    c.base = base[i];
    set_status(c, false);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace memtrack::analysis
