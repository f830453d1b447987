#include "memtrack/analysis/site_match.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace memtrack::analysis {
namespace {

std::string_view basename(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Length-prefixed, so no name can be mistaken for a separator.
void put(std::string& key, std::string_view part) {
  key += std::to_string(part.size());
  key += ':';
  key += part;
}

void put(std::string& key, std::uint64_t v) { put(key, std::to_string(v)); }

void add_totals(SiteTotals& into, const SiteTotals& t) {
  into.allocations += t.allocations;
  into.allocated_bytes += t.allocated_bytes;
  into.leaked_bytes += t.leaked_bytes;
  into.leaked_blocks += t.leaked_blocks;
  into.peak_bytes += t.peak_bytes;
  into.temporary += t.temporary;
  into.resident_bytes += t.resident_bytes;
}

// Resident bytes only when ranked by them: they move with the kernel's timing from run to run, so by the
// other measures a site whose heap figures did not move is the same.
bool equal(const SiteTotals& a, const SiteTotals& b, SiteOrder order) {
  return a.allocations == b.allocations && a.allocated_bytes == b.allocated_bytes && a.leaked_bytes == b.leaked_bytes &&
         a.leaked_blocks == b.leaked_blocks && a.peak_bytes == b.peak_bytes && a.temporary == b.temporary &&
         (order != SiteOrder::resident || a.resident_bytes == b.resident_bytes);
}

std::uint64_t distance(std::uint64_t a, std::uint64_t b) { return a > b ? a - b : b - a; }

}  // namespace

void append_frame_identity(std::string& key, const SiteFrame& f) {
  static constexpr char kHex[] = "0123456789abcdef";
  if (f.truncated_marker) {
    key += 'T';
  } else if (!f.function.empty()) {
    key += 'F';
    put(key, f.function);
    put(key, basename(f.file));
    put(key, basename(f.module));
  } else if (!f.build_id.empty()) {
    key += 'B';
    std::string id;
    for (const std::uint8_t b : f.build_id) id += kHex[b >> 4], id += kHex[b & 15];
    put(key, id);
    put(key, f.address.value_or(0));
  } else if (!f.module.empty()) {
    key += 'P';
    put(key, f.module);
    put(key, f.address.value_or(0));
  } else {
    key += 'A';
    put(key, f.address.value_or(0));
  }
}

std::string site_identity(const Site& site) {
  std::string key;
  for (const SiteFrame& f : site.stack) append_frame_identity(key, f);
  return key;
}

SitesDiff match_sites(std::span<const Site> base, std::span<const Site> head, SiteOrder order, std::size_t limit) {
  std::vector<SiteChange> all;
  std::unordered_map<std::string, std::size_t> index;
  const auto add_side = [&](std::span<const Site> sites, bool is_head) {
    for (const Site& s : sites) {
      const auto [it, inserted] = index.try_emplace(site_identity(s), all.size());
      if (inserted) all.emplace_back();
      SiteChange& c = all[it->second];
      std::uint32_t& merged = is_head ? c.head_sites : c.base_sites;
      // The shown frames: head's first site, else base's.
      if (is_head ? merged == 0 : c.stack.empty()) c.stack = s.stack;
      add_totals(is_head ? c.head : c.base, s.totals);
      ++merged;
    }
  };
  // Head first, so that the ranking's ties keep head's order and removed sites come after.
  add_side(head, true);
  add_side(base, false);

  SitesDiff out;
  for (SiteChange& c : all) {
    if (c.base_sites == 0) {
      c.status = ChangeStatus::added;
      ++out.added;
    } else if (c.head_sites == 0) {
      c.status = ChangeStatus::removed;
      ++out.removed;
    } else if (equal(c.base, c.head, order)) {
      c.status = ChangeStatus::same;
      ++out.same;
    } else {
      c.status = ChangeStatus::changed;
      ++out.changed;
    }
  }
  std::vector<std::size_t> rank(all.size());
  for (std::size_t i = 0; i < rank.size(); ++i) rank[i] = i;
  const auto keys = [&](std::size_t i) {
    const SiteChange& c = all[i];
    return std::make_tuple(distance(site_measure(c.base, order), site_measure(c.head, order)),
                           distance(c.base.allocated_bytes, c.head.allocated_bytes),
                           distance(c.base.allocations, c.head.allocations),
                           std::max(site_measure(c.base, order), site_measure(c.head, order)));
  };
  std::stable_sort(rank.begin(), rank.end(), [&](std::size_t a, std::size_t b) { return keys(a) > keys(b); });
  if (limit != 0 && rank.size() > limit) rank.resize(limit);
  out.sites.reserve(rank.size());
  for (const std::size_t i : rank) out.sites.push_back(std::move(all[i]));
  return out;
}

}  // namespace memtrack::analysis
