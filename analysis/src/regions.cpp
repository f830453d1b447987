#include "memtrack/analysis/regions.h"

#include <algorithm>
#include <variant>

#include "memtrack/analysis/event_kinds.h"

namespace memtrack::analysis {

Regions::Regions(std::optional<std::string> select, ArtifactConsumer* downstream)
    : select_(std::move(select)), downstream_(select_ ? downstream : nullptr) {}

void Regions::forward(codec::ContextRecord record) {
  if (downstream_ == nullptr) return;
  flush_batch();  // the events before it go first: downstream, its position is the next passed event
  // Positions count the passed events; what lies before the next passed event takes effect before it.
  std::visit(
      [&](auto& x) {
        if constexpr (requires { x.event; }) x.event = passed_;
      },
      record);
  downstream_->add_context(record);
}

void Regions::add_context(const codec::ContextRecord& record) {
  const std::optional<std::uint64_t> at = position_of(record);
  if (at && *at > seen_) {
    pending_.push(*at, record);
    return;
  }
  apply(record);
}

bool Regions::in_selected(std::int32_t pid) const {
  for (const auto& [id, o] : open_)
    if (o.selected && o.members.contains(pid)) return true;
  return false;
}

void Regions::close(std::uint64_t id, RegionOccurrence::Ended how, std::uint64_t position, std::uint64_t ts) {
  const auto it = open_.find(id);
  if (it == open_.end()) return;
  Open& o = it->second;
  o.occ.ended = how;
  o.occ.end_event = position;
  o.occ.end_timestamp = ts;
  o.occ.retained_bytes = o.live;
  o.occ.retained_blocks = o.blocks.size();
  done_.push_back(std::move(o.occ));
  for (auto& [key, ids] : stacks_) std::erase(ids, id);
  open_.erase(it);
}

void Regions::apply(const codec::ContextRecord& record) {
  if (const auto* info = std::get_if<codec::RecordingInfo>(&record)) {
    control_ = std::find(info->sections.begin(), info->sections.end(), "control") != info->sections.end();
  } else if (const auto* b = std::get_if<codec::RegionBegin>(&record)) {
    flush_batch();
    Open o;
    o.occ.name = b->name;
    o.occ.occurrence = ++counts_[b->name];
    o.occ.pid = b->pid;
    o.occ.tid = b->tid;
    o.occ.begin_event = b->event;
    o.occ.begin_timestamp = b->timestamp;
    o.selected = select_ && *select_ == b->name;
    if (o.selected) ++selected_seen_;
    // Its pid and every known descendant of it.
    o.members.insert(b->pid);
    for (bool grew = true; grew;) {
      grew = false;
      for (const auto& [pid, ppid] : parent_)
        if (o.members.contains(ppid) && o.members.insert(pid).second) grew = true;
    }
    const std::uint64_t id = next_id_++;
    open_.emplace(id, std::move(o));
    stacks_[{b->pid, b->tid}].push_back(id);
  } else if (const auto* e = std::get_if<codec::RegionEnd>(&record)) {
    flush_batch();
    auto it = stacks_.find({e->pid, e->tid});
    if (it != stacks_.end() && !it->second.empty())
      close(it->second.back(), RegionOccurrence::Ended::region_end, e->event, e->timestamp);
  } else if (const auto* p = std::get_if<codec::Pause>(&record)) {
    paused_.push_back({p->event, p->event, p->timestamp, p->timestamp, p->source, false});
  } else if (const auto* r = std::get_if<codec::Resume>(&record)) {
    if (!paused_.empty() && !paused_.back().resumed) {
      paused_.back().end_event = r->event;
      paused_.back().end_timestamp = r->timestamp;
      paused_.back().resumed = true;
    }
  } else if (const auto* s = std::get_if<codec::ProcessStart>(&record)) {
    flush_batch();
    parent_[s->pid] = s->ppid;
    for (auto& [id, o] : open_)
      if (o.members.contains(s->ppid)) o.members.insert(s->pid);
    // A fork child holds copies of its parent's blocks: its frees of the region's ones are the region's.
    std::vector<std::pair<Key, std::uint64_t>> copies;
    for (const auto& [key, size] : passed_blocks_)
      if (key.pid == s->ppid) copies.push_back({Key{s->pid, key.addr}, size});
    for (const auto& [key, size] : copies) passed_blocks_[key] = size;
  } else if (std::holds_alternative<codec::ProcessExec>(record) || std::holds_alternative<codec::ProcessExit>(record)) {
    flush_batch();
    std::int32_t pid = 0;
    std::uint64_t at = 0, ts = 0;
    RegionOccurrence::Ended how = RegionOccurrence::Ended::exit;
    if (const auto* x = std::get_if<codec::ProcessExec>(&record)) {
      pid = x->pid, at = x->event, ts = x->timestamp, how = RegionOccurrence::Ended::exec;
    } else {
      const auto& y = std::get<codec::ProcessExit>(record);
      pid = y.pid, at = y.event, ts = y.timestamp;
    }
    std::vector<std::uint64_t> ending;
    for (const auto& [id, o] : open_)
      if (o.occ.pid == pid) ending.push_back(id);
    for (const std::uint64_t id : ending) close(id, how, at, ts);
    // The image's blocks are gone with it (exec) or are its leaks (exit): none is released later.
    std::erase_if(passed_blocks_, [&](const auto& kv) { return kv.first.pid == pid; });
  } else if (const auto* es = std::get_if<codec::EventStacks>(&record)) {
    event_stacks_.push_back(*es);
    return;  // rebuilt for the passed events (flush_batch)
  } else if (const auto* end = std::get_if<codec::StreamEnd>(&record)) {
    end_ = *end;
    return;  // finish() passes it on, with the passed count
  }
  forward(record);
}

void Regions::flush_batch() {
  if (downstream_ == nullptr || batch_.empty()) return;
  if (batch_has_ids_) downstream_->add_context(codec::EventStacks{passed_ - batch_.size(), batch_ids_});
  downstream_->add(batch_);
  batch_.clear();
  batch_ids_.clear();
  batch_has_ids_ = false;
}

void Regions::add(std::span<const codec::Event> events) {
  pending_.feed(
      seen_, events, [&](std::span<const codec::Event> run) { add_run(run); },
      [&](const codec::ContextRecord& r) { apply(r); });
  flush_batch();
}

// Events with no record positioned among them.
void Regions::add_run(std::span<const codec::Event> events) {
  // Nothing open, no filter (stats of an artifact without regions): only the count moves.
  if (downstream_ == nullptr && open_.empty()) {
    seen_ += events.size();
    if (!events.empty()) last_ts_ = events.back().timestamp;
    return;
  }
  for (const codec::Event& e : events) {
    const std::uint64_t g = seen_++;
    last_ts_ = e.timestamp;
    std::uint64_t released = 0;
    const bool releases_block = releases(e, released);
    const bool allocating = allocates(e.kind);
    for (auto& [id, o] : open_) {
      if (!o.members.contains(e.pid)) continue;
      RegionOccurrence& occ = o.occ;
      ++occ.events;
      if (releases_block) {
        const auto it = o.blocks.find(Key{e.pid, released});
        if (it != o.blocks.end()) {
          ++occ.frees;
          occ.freed_bytes += it->second;
          o.live -= it->second;
          o.blocks.erase(it);
        } else {
          ++occ.frees_of_older;
        }
      }
      if (allocating) {
        ++occ.allocations;
        occ.allocated_bytes += e.size;
        auto [it, fresh] = o.blocks.try_emplace(Key{e.pid, e.addr}, e.size);
        if (!fresh) o.live -= it->second, it->second = e.size;  // a missed free: replaced, as the live heap does
        o.live += e.size;
        if (o.live > occ.peak_bytes) occ.peak_bytes = o.live, occ.peak_timestamp = e.timestamp;
      }
    }
    if (downstream_ == nullptr) continue;
    // The filter: inside a selected occurrence, or a later release of a block allocated inside one.
    codec::Event out = e;
    bool pass = in_selected(e.pid);
    if (pass) {
      if (releases_block) passed_blocks_.erase(Key{e.pid, released});
      if (allocating) passed_blocks_[Key{e.pid, e.addr}] = e.size;
    } else if (releases_block) {
      const auto it = passed_blocks_.find(Key{e.pid, released});
      if (it != passed_blocks_.end()) {
        passed_blocks_.erase(it);
        pass = true;
        if (e.kind == codec::EventKind::Realloc) {  // only its release is the region's
          out.kind = codec::EventKind::Free;
          out.addr = released;
          out.size = 0;
          out.old_addr = 0;
          out.flags = 0;
        }
      }
    }
    if (!pass) continue;
    while (!event_stacks_.empty() && event_stacks_.front().first_event + event_stacks_.front().ids.size() <= g)
      event_stacks_.pop_front();
    std::uint32_t id = 0;
    for (const codec::EventStacks& s : event_stacks_)
      if (g >= s.first_event && g < s.first_event + s.ids.size()) id = s.ids[g - s.first_event];
    if (out.kind != e.kind) id = 0;  // a Free carries no stack
    batch_has_ids_ = batch_has_ids_ || !event_stacks_.empty();
    batch_.push_back(out);
    batch_ids_.push_back(id);
    ++passed_;
  }
}

void Regions::finish() {
  pending_.drain([&](const codec::ContextRecord& r) { apply(r); });
  flush_batch();
  while (!open_.empty()) close(open_.begin()->first, RegionOccurrence::Ended::stream_end, seen_, last_ts_);
  if (!paused_.empty() && !paused_.back().resumed) {
    paused_.back().end_event = seen_;
    paused_.back().end_timestamp = last_ts_;
  }
  if (downstream_ != nullptr && end_) {
    codec::StreamEnd end = *end_;
    end.events = passed_;
    downstream_->add_context(end);
  }
  std::stable_sort(done_.begin(), done_.end(),
                   [](const RegionOccurrence& a, const RegionOccurrence& b) { return a.begin_event < b.begin_event; });
}

}  // namespace memtrack::analysis
