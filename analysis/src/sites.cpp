#include "memtrack/analysis/sites.h"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

#include "memtrack/analysis/event_kinds.h"

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

struct Block {
  std::uint64_t size = 0;
  std::uint32_t site = kUnknownSite;
  std::int32_t tid = 0;
  std::uint64_t serial = 0;
};

using Books = std::unordered_map<std::uint64_t, Block>;

// A template so the check is made on the LiveHeap this is built with: a lifecycle-aware one takes records.
template <typename Heap>
void feed_lifecycle(Heap& heap, const codec::ContextRecord& record) {
  if constexpr (requires { heap.add_context(record); }) heap.add_context(record);
}

}  // namespace

struct SiteAccumulator::Impl {
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

  std::unordered_map<std::int32_t, Books> books;                 // live blocks of each pid's current image
  std::vector<Books> ended;                                      // blocks of exited processes: their leaks
  std::unordered_map<std::uint64_t, std::uint64_t> last_serial;  // (pid, tid) -> its last allocation
  std::uint64_t serial = 0;

  // The peak: the live heap's own model decides when it is reached; each site's live bytes at that moment
  // are kept lazily: a peak starts a new epoch, and a site changed for the first time since then saves its
  // live bytes (unchanged since the peak) before the change.
  LiveHeap own_heap;
  const LiveHeap* shared_heap = nullptr;  // driven by the caller (one model for `report`'s timeline and sites)
  std::uint64_t peak = 0, epoch = 0;
  [[nodiscard]] const LiveHeap& heap() const { return shared_heap != nullptr ? *shared_heap : own_heap; }

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

  void end_books(std::int32_t pid, bool leaks) {
    const auto it = books.find(pid);
    if (it == books.end()) return;
    for (const auto& [addr, b] : it->second) {
      SiteData& s = site(b.site);
      touch(s);
      s.live_bytes -= b.size;
    }
    if (leaks) ended.push_back(std::move(it->second));
    books.erase(it);
  }

  void apply(const codec::ContextRecord& record) {
    // A lifecycle-aware live heap (one with add_context) decides the peak from the records too. Not with a
    // pid filter: that heap only sees the pid's events, so the records' positions would not match.
    // A shared heap gets its records from whoever drives it.
    if (!pid_filter && shared_heap == nullptr) feed_lifecycle(own_heap, record);
    if (marks_stacks(record)) has_stacks = true;
    if (const auto* m = std::get_if<codec::Module>(&record)) {
      apply(*m);
    } else if (const auto* n = std::get_if<codec::StackNodes>(&record)) {
      apply(*n);
    } else if (const auto* s = std::get_if<codec::EventStacks>(&record)) {
      if (!s->ids.empty()) event_stacks[s->first_event] = s->ids;
    } else if (const auto* y = std::get_if<codec::Symbols>(&record)) {
      apply(*y);
    } else if (const auto* p = std::get_if<codec::ProcessStart>(&record)) {
      end_books(p->pid, true);  // a reused pid: the old process's blocks are its leaks
      const auto parent = images.find(p->ppid);
      if (parent != images.end() && p->ppid != p->pid) {
        Image copy = parent->second;  // the child's tree starts as its parent's (copy-on-write in the tracee)
        images[p->pid] = std::move(copy);
      } else {
        images[p->pid] = Image{};
      }
    } else if (const auto* x = std::get_if<codec::ProcessExec>(&record)) {
      end_books(x->pid, false);  // gone with the address space: not leaks
      images[x->pid] = Image{};
    } else if (const auto* u = std::get_if<codec::Untracked>(&record)) {
      if (untracked_exec(*u)) {  // an exec into an image without events
        end_books(*u->pid, false);
        if (const auto it = images.find(*u->pid); it != images.end()) it->second = Image{};
      }
    } else if (const auto* e = std::get_if<codec::ProcessExit>(&record)) {
      end_books(e->pid, true);
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

  void release(Books& b, std::int32_t pid, std::uint64_t addr) {
    const auto it = b.find(addr);
    if (it == b.end()) return;  // unmatched (e.g. a block inherited at a fork)
    const Block& blk = it->second;
    SiteData& s = site(blk.site);
    touch(s);
    s.live_bytes -= blk.size;
    const auto last = last_serial.find(thread_key(pid, blk.tid));
    if (last != last_serial.end() && last->second == blk.serial) ++s.totals.temporary;
    b.erase(it);
  }

  static std::uint64_t thread_key(std::int32_t pid, std::int32_t tid) {
    return (std::uint64_t{static_cast<std::uint32_t>(pid)} << 32) | static_cast<std::uint32_t>(tid);
  }

  void add(const codec::Event& e) {
    const std::uint64_t index = events++;
    const std::uint32_t stack = stack_id_of(index);
    if (pid_filter && e.pid != *pid_filter) return;
    Books& b = books[e.pid];
    std::uint64_t addr = 0;
    if (releases(e, addr)) release(b, e.pid, addr);
    if (allocates(e.kind)) {
      const std::uint32_t si = site_of(e.pid, stack);
      if (const auto old = b.find(e.addr); old != b.end()) {  // a missed free: replaced, as in LiveHeap
        SiteData& o = site(old->second.site);
        touch(o);
        o.live_bytes -= old->second.size;
        b.erase(old);
      }
      SiteData& s = site(si);
      touch(s);
      s.live_bytes += e.size;
      ++s.totals.allocations;
      s.totals.allocated_bytes += e.size;
      b[e.addr] = Block{e.size, si, e.tid, ++serial};
      last_serial[thread_key(e.pid, e.tid)] = serial;
    }
    // A shared heap already has this event (its driver adds each event just before this add).
    if (shared_heap == nullptr) own_heap.add(std::span<const codec::Event>(&e, 1));
    if (heap().total_peak_bytes() > peak) {
      peak = heap().total_peak_bytes();
      ++epoch;
    }
  }
};

SiteAccumulator::SiteAccumulator(std::optional<std::int32_t> pid, const LiveHeap* heap)
    : impl_(std::make_unique<Impl>()) {
  impl_->pid_filter = pid;
  if (!pid) impl_->shared_heap = heap;
}
SiteAccumulator::~SiteAccumulator() = default;

void SiteAccumulator::add_context(const codec::ContextRecord& record) { impl_->apply(record); }

void SiteAccumulator::add(std::span<const codec::Event> events) {
  for (const codec::Event& e : events) impl_->add(e);
}

bool SiteAccumulator::has_stacks() const { return impl_->has_stacks; }
std::uint64_t SiteAccumulator::events() const { return impl_->events; }

SitesResult SiteAccumulator::result(SiteOrder order, std::size_t limit, const ModuleSymbolizer& symbolizer) const {
  const Impl& d = *impl_;
  SitesResult out;
  out.has_stacks = d.has_stacks;
  out.events = d.events;
  out.peak_bytes = d.heap().total_peak_bytes();
  out.peak_timestamp = d.heap().total_peak_timestamp();

  const auto finish = [&](const SiteData& s) {
    SiteTotals t = s.totals;
    if (s.touch_epoch < d.epoch) t.peak_bytes = s.live_bytes;  // unchanged since the last peak
    return t;
  };
  std::vector<SiteTotals> totals(d.sites.size());
  for (std::size_t i = 0; i < d.sites.size(); ++i) totals[i] = finish(d.sites[i]);
  out.unknown = finish(d.unknown);
  const auto leak = [&](const Books& books) {
    for (const auto& [addr, b] : books) {
      SiteTotals& t = b.site == kUnknownSite ? out.unknown : totals[b.site];
      t.leaked_bytes += b.size;
      ++t.leaked_blocks;
    }
  };
  for (const auto& [pid, books] : d.books) leak(books);
  for (const Books& books : d.ended) leak(books);

  const auto metric = [&](const SiteTotals& t) {
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
    }
    return std::uint64_t{0};
  };
  std::vector<std::uint32_t> rank;
  for (std::uint32_t i = 0; i < totals.size(); ++i)
    if (totals[i].allocations > 0) rank.push_back(i);
  std::stable_sort(rank.begin(), rank.end(), [&](std::uint32_t a, std::uint32_t b) {
    const SiteTotals &x = totals[a], &y = totals[b];
    if (metric(x) != metric(y)) return metric(x) > metric(y);
    if (x.allocated_bytes != y.allocated_bytes) return x.allocated_bytes > y.allocated_bytes;
    return x.allocations > y.allocations;
  });
  if (limit != 0 && rank.size() > limit) rank.resize(limit);

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
    out.sites.push_back(std::move(site));
  }
  return out;
}

}  // namespace memtrack::analysis
