#include "memtrack/analysis/sites.h"

#include <algorithm>
#include <limits>
#include <set>
#include <type_traits>
#include <utility>

#include "memtrack/analysis/event_kinds.h"
#include "memtrack/analysis/resident_pages.h"

namespace memtrack::analysis {
namespace {

constexpr std::uint32_t kNoModule = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint32_t kMarker = kNoModule - 1;  // the truncation pseudo-node
constexpr std::uint32_t kUnknownSite = std::numeric_limits<std::uint32_t>::max();

struct FrameKey {
  std::uint32_t module = kNoModule;  // index into Impl::modules, or kNoModule / kMarker
  std::uint64_t address = 0;         // module-relative (absolute for kNoModule)
  friend auto operator<=>(const FrameKey&, const FrameKey&) = default;
};

std::string module_key(const std::string& path, const std::vector<std::uint8_t>& build_id) {
  if (build_id.empty()) return "p:" + path;
  std::string key = "b:";
  static constexpr char kHex[] = "0123456789abcdef";
  for (const std::uint8_t b : build_id) key += kHex[b >> 4], key += kHex[b & 15];
  return key;
}

struct ImageModule {
  std::uint64_t start = 0, end = 0, bias = 0;
  std::uint32_t module = 0;
};

// One process image's trace tree and module list (docs/FORMAT.md, "Trees").
struct Image {
  std::vector<std::uint32_t> parent = {0};
  std::vector<std::uint64_t> address = {0};
  std::vector<ImageModule> modules;                     // loaded now, sorted by start, non-overlapping
  std::vector<std::uint32_t> site_of = {kUnknownSite};  // memo: node -> site (kUnknownSite: not resolved)
  std::vector<bool> resolved = {true};
};

struct SiteData {
  std::vector<FrameKey> key;
  SiteTotals totals;
  std::uint64_t live_bytes = 0;
  std::uint64_t touch_epoch = 0;  // the peak epoch of the last change (see touch())
};

// Live bytes are counted up to LiveHeap's cap on a block (live_heap.h): only hostile input has larger ones.
constexpr std::uint64_t kBlockCap = (std::uint64_t{1} << 62) - 1;

}  // namespace

// The accumulator is a client of the live heap (live_heap.h: HeapClient): the heap's blocks carry their site,
// and the heap says when a block goes and when the peak rises, so sites and the heap are one model.
struct SiteAccumulator::Impl final : HeapClient {
  std::optional<std::int32_t> pid_filter;
  std::uint64_t events = 0;
  bool has_stacks = false;

  std::vector<std::pair<std::string, std::vector<std::uint8_t>>> modules;  // path, build-id
  std::unordered_map<std::string, std::uint32_t> module_index;
  std::unordered_map<std::int32_t, Image> images;  // the current image of each pid

  std::map<std::vector<FrameKey>, std::uint32_t> site_index;
  std::vector<SiteData> sites;
  SiteData unknown;

  // EventStacks not yet passed, by first_event.
  std::map<std::uint64_t, std::vector<std::uint32_t>> event_stacks;

  // Temporary allocations (heaptrack's): per pid, the address of its last allocation while no other heap
  // event of the pid (an allocation, or a free of a known block) has followed it.
  std::unordered_map<std::int32_t, std::uint64_t> last_allocation;

  // The heap: the accumulator's own, or one the caller drives (`memtrack report`'s timeline and sites).
  // The peak: each site's live bytes at the moment of the heap's peak are kept lazily: a peak starts a new
  // epoch, and a site changed for the first time since then saves its live bytes (unchanged since the peak)
  // before the change.
  LiveHeap own_heap;
  LiveHeap* heap = &own_heap;
  std::uint64_t index_offset = 0;  // stream index of an event = the heap's index + this (a pid filter skips)
  std::uint64_t epoch = 0;

  // Resident bytes per site (sites.h): per pid, its current image's last snapshot; the images that ended
  // (exec, a reused pid) keep theirs in resident_done.
  struct Snapshot {
    std::uint64_t event = 0;
    std::unordered_map<std::uint32_t, std::uint64_t> by_site;
  };
  std::unordered_map<std::int32_t, Snapshot> resident_now;
  std::unordered_map<std::uint32_t, std::uint64_t> resident_done;
  bool has_resident_pages = false;

  // Symbols records: module key -> address -> frames.
  std::unordered_map<std::string, std::map<std::uint64_t, std::vector<SiteFrame>>> symbols;

  SiteData& site(std::uint32_t i) { return i == kUnknownSite ? unknown : sites[i]; }

  void touch(SiteData& s) {
    if (s.touch_epoch < epoch) s.totals.peak_bytes = s.live_bytes;
    s.touch_epoch = epoch;
  }

  std::uint32_t module_of(const std::string& path, const std::vector<std::uint8_t>& build_id) {
    const auto [it, inserted] =
        module_index.try_emplace(module_key(path, build_id), static_cast<std::uint32_t>(modules.size()));
    if (inserted) modules.emplace_back(path, build_id);
    return it->second;
  }

  static void forget_resolutions(Image& img) { std::fill(img.resolved.begin(), img.resolved.end(), false); }

  void apply(const codec::Module& m) {
    Image& img = images[m.pid];
    auto& mods = img.modules;
    // A mapping replaces what overlapped it (as the kernel does); an unload removes what it covers.
    std::erase_if(mods, [&](const ImageModule& x) { return x.start < m.end && m.start < x.end; });
    if (m.loaded) {
      const ImageModule entry{m.start, m.end, m.bias, module_of(m.path, m.build_id)};
      mods.insert(std::upper_bound(mods.begin(), mods.end(), entry,
                                   [](const ImageModule& a, const ImageModule& b) { return a.start < b.start; }),
                  entry);
    }
    // The same return address may now be in another module: resolve nodes again from here on.
    forget_resolutions(img);
  }

  void apply(const codec::ResidentPages& r) {
    has_resident_pages = true;
    if (pid_filter && r.pid != *pid_filter) return;
    const auto [it, fresh] = resident_now.try_emplace(r.pid);
    Snapshot& snap = it->second;
    if (!fresh && (r.part == 0 || r.event != snap.event)) snap.by_site.clear();  // a later, higher snapshot
    snap.event = r.event;
    constexpr std::uint32_t kInheritedBlock = kUnknownSite - 1;  // no site: sites are indices below both
    std::vector<LiveBlock> blocks;
    std::vector<std::uint32_t> site_of_block;
    heap->for_each_live_block_of(r.pid,
                                 [&](std::uint64_t addr, std::uint64_t size, std::uint32_t site, bool inherited) {
                                   blocks.push_back({addr, size});
                                   // A fork child's unchanged copy shares its pages with the parent (copy-on-write),
                                   // whose snapshot counts them; it still takes its share of the pages it is on.
                                   site_of_block.push_back(inherited ? kInheritedBlock : site);
                                 });
    const std::vector<std::uint64_t> resident = resident_bytes_of(blocks, r);
    for (std::size_t i = 0; i < blocks.size(); ++i)
      if (resident[i] != 0 && site_of_block[i] != kInheritedBlock) snap.by_site[site_of_block[i]] += resident[i];
  }

  // The pid's current image ended: its last snapshot stays counted.
  void end_resident_image(std::int32_t pid) {
    const auto it = resident_now.find(pid);
    if (it == resident_now.end()) return;
    for (const auto& [site, bytes] : it->second.by_site) resident_done[site] += bytes;
    resident_now.erase(it);
  }

  void apply(const codec::StackNodes& r) {
    Image& img = images[r.pid];
    const std::size_t first = r.first_id, need = first + r.parents.size();
    if (img.parent.size() < need) {
      img.parent.resize(need, 0);
      img.address.resize(need, 0);
      img.site_of.resize(need, kUnknownSite);
      img.resolved.resize(need, false);
    }
    for (std::size_t i = 0; i < r.parents.size(); ++i) {
      img.parent[first + i] = r.parents[i];
      img.address[first + i] = r.addresses[i];
      img.resolved[first + i] = false;
    }
  }

  // The pid filter's heap sees only the pid's events and lifecycle records: their positions count its events.
  void feed_filtered(const codec::ContextRecord& record) {
    const std::int32_t pid = *pid_filter;
    const bool mine = std::visit(
        [&](const auto& r) {
          using T = std::decay_t<decltype(r)>;
          if constexpr (std::is_same_v<T, codec::ProcessStart> || std::is_same_v<T, codec::ProcessExec> ||
                        std::is_same_v<T, codec::ProcessExit>)
            return r.pid == pid;
          if constexpr (std::is_same_v<T, codec::Untracked>) return r.pid == pid;
          return false;
        },
        record);
    if (!mine) return;
    codec::ContextRecord copy = record;
    std::visit(
        [&](auto& r) {
          if constexpr (requires { r.event; }) r.event = own_heap.events();
        },
        copy);
    own_heap.add_context(copy);
  }

  void apply(const codec::ContextRecord& record) {
    // A shared heap gets its records from whoever drives it.
    if (pid_filter)
      feed_filtered(record);
    else if (heap == &own_heap)
      own_heap.add_context(record);
    if (marks_stacks(record)) has_stacks = true;
    if (const auto* m = std::get_if<codec::Module>(&record)) {
      apply(*m);
    } else if (const auto* n = std::get_if<codec::StackNodes>(&record)) {
      apply(*n);
    } else if (const auto* s = std::get_if<codec::EventStacks>(&record)) {
      if (!s->ids.empty()) event_stacks[s->first_event] = s->ids;
    } else if (const auto* y = std::get_if<codec::Symbols>(&record)) {
      apply(*y);
    } else if (const auto* rp = std::get_if<codec::ResidentPages>(&record)) {
      apply(*rp);
    } else if (const auto* p = std::get_if<codec::ProcessStart>(&record)) {
      end_resident_image(p->pid);
      const auto parent = images.find(p->ppid);
      if (parent != images.end() && p->ppid != p->pid) {
        Image copy = parent->second;  // the child's tree starts as its parent's (copy-on-write in the tracee)
        images[p->pid] = std::move(copy);
      } else {
        images[p->pid] = Image{};
      }
    } else if (const auto* x = std::get_if<codec::ProcessExec>(&record)) {
      end_resident_image(x->pid);
      images[x->pid] = Image{};
    } else if (const auto* u = std::get_if<codec::Untracked>(&record)) {
      if (untracked_exec(*u)) {  // an exec into an image without events
        end_resident_image(*u->pid);
        if (const auto it = images.find(*u->pid); it != images.end()) it->second = Image{};
      }
    }
  }

  void apply(const codec::Symbols& y) {
    auto& table = symbols[module_key(y.path, y.build_id)];
    std::size_t f = 0;
    for (std::size_t i = 0; i < y.addresses.size(); ++i) {
      std::vector<SiteFrame>& frames = table[y.addresses[i]];
      frames.clear();
      for (std::uint32_t d = 0; d < y.depths[i]; ++d, ++f) {
        SiteFrame fr;
        if (y.functions[f] != codec::kNoString) fr.function = y.strings[y.functions[f]];
        if (y.files[f] != codec::kNoString) fr.file = y.strings[y.files[f]];
        fr.line = y.lines[f];
        fr.inlined = d + 1 < y.depths[i];
        frames.push_back(std::move(fr));
      }
    }
  }

  FrameKey frame_key(const Image& img, std::uint64_t address) const {
    if (address == codec::kTruncatedStackAddress) return {kMarker, 0};
    const auto& mods = img.modules;
    auto it = std::upper_bound(mods.begin(), mods.end(), address,
                               [](std::uint64_t a, const ImageModule& m) { return a < m.start; });
    if (it != mods.begin() && address < (--it)->end) return {it->module, address - it->bias};
    return {kNoModule, address};
  }

  std::uint32_t site_of(std::int32_t pid, std::uint32_t id) {
    if (id == 0) return kUnknownSite;
    const auto found = images.find(pid);
    if (found == images.end()) return kUnknownSite;
    Image& img = found->second;
    if (id >= img.parent.size()) return kUnknownSite;
    if (img.resolved[id]) return img.site_of[id];
    std::vector<FrameKey> key;
    // Parents are defined before their children (smaller ids): a walk that does not descend is damage.
    for (std::uint32_t n = id; n != 0;) {
      key.push_back(frame_key(img, img.address[n]));
      const std::uint32_t p = img.parent[n];
      if (p >= n) break;
      n = p;
    }
    const auto [it, inserted] = site_index.try_emplace(std::move(key), static_cast<std::uint32_t>(sites.size()));
    if (inserted) {
      sites.emplace_back();
      sites.back().key = it->first;
      sites.back().touch_epoch = epoch;
    }
    img.site_of[id] = it->second;
    img.resolved[id] = true;
    return it->second;
  }

  std::uint32_t stack_id_of(std::uint64_t index) {
    while (!event_stacks.empty()) {
      const auto it = event_stacks.begin();
      if (index < it->first) return 0;
      if (index < it->first + it->second.size()) return it->second[index - it->first];
      event_stacks.erase(it);
    }
    return 0;
  }

  std::uint32_t allocated(const codec::Event& e, std::uint64_t index) override {
    const std::uint32_t si = site_of(e.pid, stack_id_of(index + index_offset));
    SiteData& s = site(si);
    touch(s);
    s.live_bytes += std::min(e.size, kBlockCap);
    ++s.totals.allocations;
    s.totals.allocated_bytes += e.size;
    last_allocation[e.pid] = e.addr;
    return si;
  }

  void released(std::int32_t pid, std::uint64_t addr, std::uint64_t size, std::uint32_t payload, bool inherited,
                Release how) override {
    // A free directly after the allocation it frees, with no heap event of the pid between them.
    bool temporary = false;
    if (how == Release::freed) {
      if (const auto it = last_allocation.find(pid); it != last_allocation.end()) {
        temporary = it->second == addr;
        last_allocation.erase(it);
      }
    }
    // A fork child's copy of its parent's block counts at the parent's site, as the parent's (sites.h).
    if (inherited) return;
    SiteData& s = site(payload);
    touch(s);
    s.live_bytes -= size;
    if (temporary) {
      ++s.totals.temporary;
    } else if (how == Release::exit) {
      s.totals.leaked_bytes += size;
      ++s.totals.leaked_blocks;
    }
  }

  void new_peak() override { ++epoch; }

  void add(std::span<const codec::Event> batch) {
    if (pid_filter) {
      // The pid's runs of events go to its heap; the stream index of each is kept through index_offset.
      std::size_t i = 0;
      while (i < batch.size()) {
        if (batch[i].pid != *pid_filter) {
          ++i;
          continue;
        }
        std::size_t j = i;
        while (j < batch.size() && batch[j].pid == *pid_filter) ++j;
        index_offset = events + i - own_heap.events();
        own_heap.add(batch.subspan(i, j - i));
        i = j;
      }
    } else if (heap == &own_heap) {
      index_offset = events - own_heap.events();
      own_heap.add(batch);
    }
    // A shared heap already has these events: its driver added them, and the callbacks came then.
    events += batch.size();
  }
};

SiteAccumulator::SiteAccumulator(std::optional<std::int32_t> pid, LiveHeap* heap) : impl_(std::make_unique<Impl>()) {
  impl_->pid_filter = pid;
  if (!pid && heap != nullptr) impl_->heap = heap;
  impl_->heap->set_client(impl_.get());
}
SiteAccumulator::~SiteAccumulator() {
  if (impl_->heap != &impl_->own_heap) impl_->heap->set_client(nullptr);
}

void SiteAccumulator::add_context(const codec::ContextRecord& record) { impl_->apply(record); }

void SiteAccumulator::add(std::span<const codec::Event> events) { impl_->add(events); }

bool SiteAccumulator::has_stacks() const { return impl_->has_stacks; }
bool SiteAccumulator::has_resident_pages() const { return impl_->has_resident_pages; }
std::uint64_t SiteAccumulator::events() const { return impl_->events; }

SitesResult SiteAccumulator::result(SiteOrder order, std::size_t limit, const ModuleSymbolizer& symbolizer) const {
  return collect(order, limit, symbolizer, nullptr, nullptr);
}

SitesResult SiteAccumulator::for_each_site(SiteOrder order, std::size_t limit, const ModuleSymbolizer& symbolizer,
                                           const std::function<void(const Site&)>& sink,
                                           const SitesBegin& begin) const {
  return collect(order, limit, symbolizer, &sink, begin ? &begin : nullptr);
}

SitesResult SiteAccumulator::collect(SiteOrder order, std::size_t limit, const ModuleSymbolizer& symbolizer,
                                     const std::function<void(const Site&)>* sink, const SitesBegin* begin) const {
  const Impl& d = *impl_;
  SitesResult out;
  out.has_stacks = d.has_stacks;
  out.has_resident_pages = d.has_resident_pages;
  out.events = d.events;
  out.peak_bytes = d.heap->total_peak_bytes();
  out.peak_timestamp = d.heap->total_peak_timestamp();

  const auto finish = [&](const SiteData& s) {
    SiteTotals t = s.totals;
    if (s.touch_epoch < d.epoch) t.peak_bytes = s.live_bytes;  // unchanged since the last peak
    return t;
  };
  std::vector<SiteTotals> totals(d.sites.size());
  for (std::size_t i = 0; i < d.sites.size(); ++i) totals[i] = finish(d.sites[i]);
  out.unknown = finish(d.unknown);
  // The exited images' leaks are in the totals; add what the running ones still hold.
  d.heap->for_each_live_block([&](std::int32_t, std::uint64_t size, std::uint32_t site, bool inherited) {
    if (inherited) return;  // the parent's (sites.h)
    SiteTotals& t = site == kUnknownSite ? out.unknown : totals[site];
    t.leaked_bytes += size;
    ++t.leaked_blocks;
  });

  const auto add_resident = [&](const std::unordered_map<std::uint32_t, std::uint64_t>& by_site) {
    for (const auto& [site, bytes] : by_site)
      (site == kUnknownSite ? out.unknown : totals[site]).resident_bytes += bytes;
  };
  add_resident(d.resident_done);
  for (const auto& [pid, snap] : d.resident_now) add_resident(snap.by_site);

  std::vector<std::uint32_t> rank;
  for (std::uint32_t i = 0; i < totals.size(); ++i)
    if (totals[i].allocations > 0) rank.push_back(i);
  std::stable_sort(rank.begin(), rank.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return ranks_before(totals[a], totals[b], order); });
  if (limit != 0 && rank.size() > limit) {
    for (std::size_t i = limit; i < rank.size(); ++i) out.rest += totals[rank[i]];
    out.rest_sites = rank.size() - limit;
    rank.resize(limit);
  }

  // Symbolize only what is shown: the addresses of the ranked sites, per module.
  std::map<std::uint32_t, std::set<std::uint64_t>> wanted;
  for (const std::uint32_t i : rank)
    for (const FrameKey& k : d.sites[i].key)
      if (k.module < kMarker) wanted[k.module].insert(k.address);
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::vector<SiteFrame>> resolved;
  for (const auto& [module, addresses] : wanted) {
    const auto& [path, build_id] = d.modules[module];
    const auto table = d.symbols.find(module_key(path, build_id));
    const std::vector<std::uint64_t> list(addresses.begin(), addresses.end());
    std::vector<std::vector<SiteFrame>> frames(list.size());
    if (table != d.symbols.end()) {
      for (std::size_t i = 0; i < list.size(); ++i)
        if (const auto f = table->second.find(list[i]); f != table->second.end()) frames[i] = f->second;
    } else if (symbolizer) {
      symbolizer(path, build_id, list, frames);
      frames.resize(list.size());
    }
    for (std::size_t i = 0; i < list.size(); ++i) resolved[{module, list[i]}] = std::move(frames[i]);
  }

  if (begin != nullptr) (*begin)(out, rank.size());
  for (const std::uint32_t i : rank) {
    Site site;
    site.totals = totals[i];
    for (const FrameKey& k : d.sites[i].key) {
      if (k.module == kMarker) {
        SiteFrame marker;
        marker.truncated_marker = true;
        site.stack.push_back(std::move(marker));
        continue;
      }
      const std::string* path = k.module == kNoModule ? nullptr : &d.modules[k.module].first;
      const auto r = path ? resolved.find({k.module, k.address}) : resolved.end();
      if (r == resolved.end() || r->second.empty()) {
        SiteFrame f;
        if (path) {
          f.module = *path;
          f.build_id = d.modules[k.module].second;
        }
        f.address = k.address;
        site.stack.push_back(std::move(f));
        continue;
      }
      for (SiteFrame f : r->second) {
        f.module = *path;
        f.build_id = d.modules[k.module].second;
        f.address = k.address;
        site.stack.push_back(std::move(f));
      }
    }
    if (sink != nullptr)
      (*sink)(site);
    else
      out.sites.push_back(std::move(site));
  }
  return out;
}

bool marks_stacks(const codec::ContextRecord& record) {
  if (std::holds_alternative<codec::StackNodes>(record) || std::holds_alternative<codec::EventStacks>(record))
    return true;
  const auto* info = std::get_if<codec::RecordingInfo>(&record);
  return info != nullptr && std::find(info->sections.begin(), info->sections.end(), "stacks") != info->sections.end();
}

bool ranks_before(const SiteTotals& x, const SiteTotals& y, SiteOrder order) {
  const std::uint64_t a = site_measure(x, order), b = site_measure(y, order);
  if (a != b) return a > b;
  if (x.allocated_bytes != y.allocated_bytes) return x.allocated_bytes > y.allocated_bytes;
  return x.allocations > y.allocations;
}

std::uint64_t site_measure(const SiteTotals& t, SiteOrder order) {
  switch (order) {
    case SiteOrder::peak:
      return t.peak_bytes;
    case SiteOrder::allocated:
      return t.allocated_bytes;
    case SiteOrder::count:
      return t.allocations;
    case SiteOrder::leaked:
      return t.leaked_bytes;
    case SiteOrder::temporary:
      return t.temporary;
    case SiteOrder::resident:
      return t.resident_bytes;
  }
  return 0;
}

}  // namespace memtrack::analysis
