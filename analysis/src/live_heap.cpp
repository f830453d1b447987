#include "memtrack/analysis/live_heap.h"

#include <algorithm>
#include <type_traits>
#include <utility>

#include "memtrack/analysis/event_kinds.h"

namespace memtrack::analysis {

using codec::Event;
using codec::EventKind;

namespace {

// A block's stored size carries two tags in its top bits, so a fork child needs no second table to know
// which of its blocks are its parent's (live_heap.h, "Lifecycle"):
// - kInherited: a fork child's copy of a block its parent held at the fork, not freed or reallocated since;
// - kShared: ... and the parent image still holds (and counts) it. Meaningful only while Books::parent is set:
//   a parent's end hands every copy to its children at once, without visiting their tables.
// Sizes are counted up to kSizeMask (2^62 - 1); only hostile input has larger blocks. (live_heap.h defines
// kInherited, kShared and kSizeMask.)

// Where a lifecycle record takes effect; none for the other records.
std::optional<std::uint64_t> lifecycle_position(const codec::ContextRecord& record) {
  return std::visit(
      [](const auto& r) -> std::optional<std::uint64_t> {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, codec::ProcessStart> || std::is_same_v<T, codec::ProcessExec> ||
                      std::is_same_v<T, codec::ProcessExit>)
          return r.event;
        if constexpr (std::is_same_v<T, codec::Untracked>)
          if (untracked_exec(r)) return r.event;
        return std::nullopt;
      },
      record);
}

}  // namespace

// These reasons name the image a tracked process execs into (the recorder writes the record just before the
// execve); the others ("left-running") are about a process, not an image.
bool untracked_exec(const codec::Untracked& record) {
  return record.pid.has_value() &&
         (record.reason == "static" || record.reason == "setuid" || record.reason == "setgid" ||
          record.reason == "no-access");
}

LiveHeap::LiveHeap(const LiveHeap& o)
    : images_(o.images_),
      books_(o.books_),
      total_live_(o.total_live_),
      total_peak_(o.total_peak_),
      total_peak_ts_(o.total_peak_ts_),
      last_ts_(o.last_ts_),
      events_seen_(o.events_seen_),
      late_(o.late_),
      lifecycle_(o.lifecycle_),
      pending_(o.pending_) {
  relink(o);
}

LiveHeap::LiveHeap(LiveHeap&& o) noexcept { *this = std::move(o); }

LiveHeap& LiveHeap::operator=(const LiveHeap& o) {
  if (this != &o) {
    LiveHeap copy(o);
    *this = std::move(copy);
  }
  return *this;
}

// Node-based containers (and a deque moved whole) move their nodes: the pointers into them stay valid in the
// new owner.
LiveHeap& LiveHeap::operator=(LiveHeap&& o) noexcept {
  if (this != &o) {
    client_ = std::exchange(o.client_, nullptr);
    images_ = std::move(o.images_);
    books_ = std::move(o.books_);
    last_pid_ = o.last_pid_;
    last_ = o.last_;
    total_live_ = o.total_live_;
    total_peak_ = o.total_peak_;
    total_peak_ts_ = o.total_peak_ts_;
    last_ts_ = o.last_ts_;
    events_seen_ = o.events_seen_;
    late_ = o.late_;
    lifecycle_ = o.lifecycle_;
    pending_ = std::move(o.pending_);
    pids_dirty_ = true;
    o.images_.clear();
    o.books_.clear();
    o.pending_ = {};
    o.last_ = nullptr;
    o.total_live_ = o.total_peak_ = o.total_peak_ts_ = o.last_ts_ = o.events_seen_ = o.late_ = 0;
    o.lifecycle_ = false;
    o.pids_dirty_ = true;
  }
  return *this;
}

// After a copy: the copied books still point into `from`; point them at this object's images and books.
void LiveHeap::relink(const LiveHeap& from) {
  std::unordered_map<const Books*, std::int32_t> pid_of;
  for (const auto& [pid, b] : from.books_) pid_of[&b] = pid;
  auto mine = [&](const Books* theirs) { return theirs == nullptr ? nullptr : &books_.at(pid_of.at(theirs)); };
  for (auto& [pid, b] : books_) {
    b.heap = &images_[b.image].heap;
    b.parent = mine(b.parent);
    for (Books*& s : b.sharers) s = mine(s);
  }
  last_ = nullptr;
  pids_dirty_ = true;
}

LiveHeap::Books& LiveHeap::new_image(std::int32_t pid) {
  ProcessImage& img = images_.emplace_back();
  img.pid = pid;
  auto [it, inserted] = books_.try_emplace(pid);
  if (!inserted) it->second = Books{};  // the caller ended the old image first
  if (client_ != nullptr) it->second.live.enable_payload();
  it->second.image = images_.size() - 1;
  it->second.heap = &img.heap;
  last_pid_ = pid;
  last_ = &it->second;
  return it->second;
}

LiveHeap::Books& LiveHeap::books_of(std::int32_t pid) {
  auto it = books_.find(pid);
  if (it == books_.end()) return new_image(pid);  // a pid seen first in its events: no context for it
  last_pid_ = pid;
  last_ = &it->second;
  return it->second;
}

void LiveHeap::map(Books& b, std::uint64_t addr, std::uint64_t size, std::uint64_t ts) {
  if (size == 0) return;
  unmap(b, addr, size);  // MAP_FIXED over an old mapping replaces the overlap
  b.mappings[addr] = size;
  PidHeap& h = *b.heap;
  h.mapped_bytes += size;
  if (h.mapped_bytes > h.peak_mapped_bytes) {
    h.peak_mapped_bytes = h.mapped_bytes;
    h.peak_mapped_timestamp = ts;
  }
}

// Removes [addr, addr + size) from the mappings, cutting mappings that overlap it partly.
void LiveHeap::unmap(Books& b, std::uint64_t addr, std::uint64_t size) {
  auto& mappings = b.mappings;
  const std::uint64_t end = addr + size < addr ? UINT64_MAX : addr + size;
  auto it = mappings.upper_bound(addr);
  if (it != mappings.begin()) --it;
  while (it != mappings.end() && it->first < end) {
    const std::uint64_t start = it->first, stop = it->first + it->second;
    if (stop <= addr) {
      ++it;
      continue;
    }
    const std::uint64_t cut_from = std::max(start, addr), cut_to = std::min(stop, end);
    b.heap->mapped_bytes -= cut_to - cut_from;
    it = mappings.erase(it);
    if (start < cut_from) mappings.emplace(start, cut_from - start);
    if (cut_to < stop) it = mappings.emplace(cut_to, stop - cut_to).first;
  }
}

// The parent image let go of `addr`: children that still shared their inherited copy with it count it now
// (the copy stays inherited: the child did not touch it).
void LiveHeap::unshare_children(Books& b, std::uint64_t addr, std::uint64_t& total_live) {
  for (Books* child : b.sharers) {
    std::uint64_t* stored = child->live.find(addr);
    if (stored == nullptr || (*stored & kShared) == 0) continue;
    *stored &= ~kShared;
    const std::uint64_t size = *stored & kSizeMask;
    child->shared_bytes -= size;
    --child->shared_count;
    total_live += size;
  }
}

// Block `addr` (its stored size and tags), just removed from b.live, leaves the books.
inline void LiveHeap::release(Books& b, std::uint64_t addr, std::uint64_t stored, std::uint64_t& total_live) {
  PidHeap& h = *b.heap;
  const std::uint64_t size = stored & kSizeMask;
  h.live_bytes -= size;
  --h.live_count;
  if ((stored & kInherited) != 0) [[unlikely]] {
    ProcessImage& img = images_[b.image];
    img.inherited_at_exit_bytes -= size;
    --img.inherited_at_exit_count;
    if ((stored & kShared) != 0 && b.parent != nullptr) {
      b.shared_bytes -= size;  // the parent's copy was the one counted: the total does not change
      --b.shared_count;
    } else {
      total_live -= size;
    }
  } else {
    total_live -= size;
  }
  if (!b.sharers.empty()) [[unlikely]]
    unshare_children(b, addr, total_live);
}

void LiveHeap::add(std::span<const Event> events) {
  pids_dirty_ = true;
  // Records wait for their position: split the span there. One comparison per call when none is pending.
  if (pending_.next() > events_seen_ + events.size()) {
    add_span(events);
    return;
  }
  const auto apply_record = [&](const codec::ContextRecord& r) { apply(r); };
  pending_.feed(events_seen_, events, [&](std::span<const Event> run) { add_span(run); }, apply_record);
  pending_.release_up_to(events_seen_, apply_record);  // those at the end of the span: due now
}

void LiveHeap::add_span(std::span<const Event> events) {
  // The recorder's reader thread runs this on every event, so the loop keeps its state in locals, looks the
  // pid up only when it changes, and leaves the rare kinds (mappings) out of line.
  // The block tables outgrow the caches: fetch the slot an event a few places ahead will touch.
  constexpr std::size_t kPrefetchDistance = 8;
  std::uint64_t total_live = total_live_, total_peak = total_peak_, total_peak_ts = total_peak_ts_;
  Books* b = last_;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (b == nullptr || e.pid != last_pid_) [[unlikely]]
      b = &books_of(e.pid);  // every pid is in pids(), even one that only moved the break
    if (i + kPrefetchDistance < events.size()) {
      const Event& ahead = events[i + kPrefetchDistance];
      if (ahead.pid == last_pid_)
        b->live.prefetch(ahead.kind == EventKind::Realloc && ahead.has_old_addr() ? ahead.old_addr : ahead.addr);
    }
    PidHeap& h = *b->heap;
    ++h.events;
    std::uint64_t addr = 0, size = 0;
    std::uint32_t payload = 0;
    if (releases(e, addr)) {
      if (b->live.erase(addr, size, payload)) {
        release(*b, addr, size, total_live);
        if (client_ != nullptr) [[unlikely]]
          tell_release(e.pid, addr, size, payload, HeapClient::Release::freed);
      } else {
        ++h.unmatched_frees;
      }
    }
    if (allocates(e.kind)) {
      const std::uint64_t bytes = std::min(e.size, kSizeMask);  // the top bits are the tags
      const std::uint32_t mine = client_ != nullptr ? client_->allocated(e, events_seen_ + i) : 0;
      if (b->live.insert(e.addr, bytes, mine, size, payload)) {  // a missed free: the new block replaces the old one
        release(*b, e.addr, size, total_live);
        if (client_ != nullptr) [[unlikely]]
          tell_release(e.pid, e.addr, size, payload, HeapClient::Release::replaced);
      }
      h.live_bytes += bytes;
      ++h.live_count;
      total_live += bytes;
      if (h.live_bytes > h.peak_bytes) {
        h.peak_bytes = h.live_bytes;
        h.peak_timestamp = e.timestamp;
      }
      if (total_live > total_peak) {
        total_peak = total_live;
        total_peak_ts = e.timestamp;
        if (client_ != nullptr) [[unlikely]]
          client_->new_peak();
      }
    } else if (e.kind == EventKind::Mmap) [[unlikely]] {
      map(*b, e.addr, e.size, e.timestamp);
    } else if (e.kind == EventKind::Munmap) [[unlikely]] {
      const std::uint64_t before = h.mapped_bytes;
      unmap(*b, e.addr, e.size);
      if (h.mapped_bytes == before) ++h.unmatched_munmaps;
    }
  }
  events_seen_ += events.size();
  if (!events.empty()) last_ts_ = events.back().timestamp;
  total_live_ = total_live;
  total_peak_ = total_peak;
  total_peak_ts_ = total_peak_ts;
}

void LiveHeap::add_context(const codec::ContextRecord& record) {
  const std::optional<std::uint64_t> at = lifecycle_position(record);
  if (!at) return;  // not a lifecycle record
  pids_dirty_ = true;
  if (*at > events_seen_) {
    pending_.push(*at, record);
    return;
  }
  if (*at < events_seen_) ++late_;
  apply(record);
}

void LiveHeap::sample_peak(std::uint64_t ts) {
  if (total_live_ > total_peak_) {
    total_peak_ = total_live_;
    total_peak_ts_ = ts;
    if (client_ != nullptr) client_->new_peak();
  }
}

void LiveHeap::tell_release(std::int32_t pid, std::uint64_t addr, std::uint64_t stored, std::uint32_t payload,
                            HeapClient::Release how) {
  client_->released(pid, addr, stored & kSizeMask, payload, (stored & kInherited) != 0, how);
}

// Ends the pid's current image, if it has one: it leaves the global heap, and children sharing blocks with it
// now count their copies.
void LiveHeap::end_image(std::int32_t pid, ProcessImage::End how, std::uint64_t event, std::uint64_t ts) {
  const auto it = books_.find(pid);
  if (it == books_.end()) return;
  Books& b = it->second;
  ProcessImage& img = images_[b.image];
  img.end = how;
  img.end_event = event;
  total_live_ -= img.heap.live_bytes - b.shared_bytes;
  for (Books* child : b.sharers) {
    // Their copies count from now on; their kShared tags are stale and read only while `parent` is set.
    total_live_ += child->shared_bytes;
    child->shared_bytes = child->shared_count = 0;
    child->parent = nullptr;
  }
  if (b.parent != nullptr) std::erase(b.parent->sharers, &b);
  if (client_ != nullptr) {
    const auto why = how == ProcessImage::End::exec ? HeapClient::Release::exec : HeapClient::Release::exit;
    b.live.for_each([&](std::uint64_t addr, std::uint64_t stored, std::uint32_t payload) {
      tell_release(pid, addr, stored, payload, why);
    });
  }
  if (how == ProcessImage::End::exec) {  // the address space is replaced: nothing of it leaks
    img.freed_by_exec_bytes = img.heap.live_bytes;
    img.freed_by_exec_count = img.heap.live_count;
    img.heap.live_bytes = img.heap.live_count = 0;
    img.heap.mapped_bytes = 0;
    img.inherited_at_exit_bytes = img.inherited_at_exit_count = 0;  // its copies are gone too
  } else {  // an exit: the blocks the parent made and the child never touched are the parent's, not leaks
    img.heap.live_bytes -= img.inherited_at_exit_bytes;
    img.heap.live_count -= img.inherited_at_exit_count;
  }
  books_.erase(it);
  last_ = nullptr;
  sample_peak(ts);
}

void LiveHeap::apply(const codec::ContextRecord& record) {
  lifecycle_ = true;
  last_ = nullptr;
  if (const auto* start = std::get_if<codec::ProcessStart>(&record)) {
    // A pid still current here was reused without an exit record: that process is gone.
    end_image(start->pid, ProcessImage::End::exit, start->event, start->timestamp);
    Books* parent = nullptr;
    if (const auto p = books_.find(start->ppid); p != books_.end()) parent = &p->second;
    Books& b = new_image(start->pid);
    ProcessImage& img = images_[b.image];
    img.ppid = start->ppid;
    img.start_event = start->event;
    if (parent != nullptr) {  // a fork: the child's address space is a copy of its parent's
      const ProcessImage& pimg = images_[parent->image];
      img.forked = true;
      img.executable = pimg.executable;
      img.argv = pimg.argv;
      img.untracked = pimg.untracked;
      // One copy of the parent's table, every block tagged as the parent's and shared with it (whatever its
      // tags were in the parent: they described the parent's own parent).
      b.live = parent->live;
      b.live.for_each_size([](std::uint64_t& stored) { stored = (stored & kSizeMask) | kInherited | kShared; });
      b.mappings = parent->mappings;
      b.shared_bytes = img.inherited_at_exit_bytes = img.inherited_bytes = pimg.heap.live_bytes;
      b.shared_count = img.inherited_at_exit_count = img.inherited_count = pimg.heap.live_count;
      b.heap->live_bytes = b.heap->peak_bytes = pimg.heap.live_bytes;
      b.heap->live_count = pimg.heap.live_count;
      b.heap->peak_timestamp = start->timestamp;
      b.heap->mapped_bytes = b.heap->peak_mapped_bytes = pimg.heap.mapped_bytes;
      b.heap->peak_mapped_timestamp = start->timestamp;
      if (b.shared_count != 0) {
        b.parent = parent;
        parent->sharers.push_back(&b);
      }
    }
  } else if (const auto* exec = std::get_if<codec::ProcessExec>(&record)) {
    const auto it = books_.find(exec->pid);
    ProcessImage* img = nullptr;
    if (it != books_.end() && images_[it->second.image].heap.events == 0 &&
        images_[it->second.image].inherited_count == 0 && images_[it->second.image].untracked.empty()) {
      img = &images_[it->second.image];  // the first image, named right after its ProcessStart
      img->forked = false;
    } else {
      std::optional<std::int32_t> ppid;
      std::uint32_t image = 0;
      if (it != books_.end()) {
        ppid = images_[it->second.image].ppid;
        image = images_[it->second.image].image + 1;
      }
      end_image(exec->pid, ProcessImage::End::exec, exec->event, exec->timestamp);
      Books& b = new_image(exec->pid);
      img = &images_[b.image];
      img->ppid = ppid;
      img->image = image;
      img->start_event = exec->event;
    }
    img->executable = exec->executable;
    img->argv = exec->argv;
  } else if (const auto* u = std::get_if<codec::Untracked>(&record)) {
    // The process execs an image memtrack cannot track: like an Exec, into an image without events.
    const auto it = books_.find(*u->pid);
    if (it == books_.end()) return;  // a process of unknown origin: only Stats' list names it
    ProcessImage* img = &images_[it->second.image];
    if (img->heap.events != 0 || img->inherited_count != 0 || !img->untracked.empty()) {
      const std::optional<std::int32_t> ppid = img->ppid;
      const std::uint32_t image = img->image + 1;
      end_image(*u->pid, ProcessImage::End::exec, u->event, last_ts_);
      Books& b = new_image(*u->pid);
      img = &images_[b.image];
      img->ppid = ppid;
      img->image = image;
      img->start_event = u->event;
    }
    img->forked = false;
    img->executable = u->executable;
    img->argv.clear();  // the record does not say
    img->untracked = u->reason;
  } else if (const auto* exit = std::get_if<codec::ProcessExit>(&record)) {
    const auto it = books_.find(exit->pid);
    if (it == books_.end()) return;
    ProcessImage& img = images_[it->second.image];
    img.exit_status = exit->status;
    img.exit_signal = exit->signal;
    end_image(exit->pid, ProcessImage::End::exit, exit->event, exit->timestamp);
  }
}

const std::map<std::int32_t, PidHeap>& LiveHeap::pids() const {
  if (!pids_dirty_) return pids_;
  pids_.clear();
  for (const ProcessImage& img : images_) {
    PidHeap& p = pids_[img.pid];
    const PidHeap& h = img.heap;
    p.live_bytes += img.leaked_bytes();
    p.live_count += img.leaked_count();
    if (h.peak_bytes > p.peak_bytes) {
      p.peak_bytes = h.peak_bytes;
      p.peak_timestamp = h.peak_timestamp;
    }
    p.mapped_bytes += h.mapped_bytes;
    if (h.peak_mapped_bytes > p.peak_mapped_bytes) {
      p.peak_mapped_bytes = h.peak_mapped_bytes;
      p.peak_mapped_timestamp = h.peak_mapped_timestamp;
    }
    p.unmatched_frees += h.unmatched_frees;
    p.unmatched_munmaps += h.unmatched_munmaps;
    p.events += h.events;
  }
  pids_dirty_ = false;
  return pids_;
}

}  // namespace memtrack::analysis
