#include "lifecycle.h"

#include <cstring>
#include <span>

#include "memtrack/runtime/image_check.h"

namespace memtrack::runtime {

std::uint64_t Lifecycle::timestamp(std::uint64_t raw) const {
  if (tsc_ == nullptr) return raw;
  codec::Event e;
  e.timestamp = raw;
  tsc_->convert(std::span<codec::Event>(&e, 1));
  return e.timestamp;
}

void Lifecycle::add(codec::ContextRecord record) {
  if (heap_ != nullptr) heap_->add_context(record);  // at its position: after the events before it
  channel_.add(std::move(record));
  ++records_;
}

void Lifecycle::on_slot(const RingEvent& slot, std::uint64_t position) {
  if (slot.kind == RingEventKind::NoteData) {
    if (note_.missing == 0) return;  // a data slot whose head was skipped: nothing to attach it to
    RingNoteData d;
    std::memcpy(&d, &slot, sizeof d);
    note_.payload.append(d.bytes, d.length < kNoteDataBytes ? d.length : kNoteDataBytes);
    if (--note_.missing == 0) finish_note();
    return;
  }
  if (note_.missing != 0) {  // a new note before the last one's data: the block was cut
    note_.truncated = true;
    note_.missing = 0;
    finish_note();
  }
  note_ = Note{};
  note_.head = slot;
  note_.position = position;
  note_.truncated = (slot.flags & kRingNoteTruncated) != 0;
  note_.missing = (slot.kind == RingEventKind::NoteExec || slot.kind == RingEventKind::NoteUntracked ||
                   slot.kind == RingEventKind::NoteResident || ControlBooks::takes(slot.kind))
                      ? slot.old_addr
                      : 0;
  if (note_.missing == 0) finish_note();
}

void Lifecycle::on_abandoned(std::uint64_t) {
  if (note_.missing == 0) return;
  note_.truncated = true;
  if (--note_.missing == 0) finish_note();
}

void Lifecycle::finish_note() {
  const RingEvent& h = note_.head;
  const std::uint64_t ts = timestamp(h.timestamp);
  const std::lock_guard lock(mutex_);
  switch (h.kind) {
    case RingEventKind::NoteStart: {
      // A fork child: it runs its parent's image until it execs.
      // A pid still in the books belonged to a process whose end we missed (it was reaped by its tracked
      // parent and the pid reused before the recorder's check saw it gone): it ended before this fork.
      if (alive_.erase(h.pid) != 0) add(codec::ProcessExit{h.pid, note_.position, ts, {}, {}});
      TrackedProcess p{h.pid, static_cast<std::int32_t>(h.addr), {}};
      if (const auto parent = alive_.find(p.ppid); parent != alive_.end()) p.executable = parent->second.executable;
      add(codec::ProcessStart{h.pid, p.ppid, note_.position, ts});
      alive_[h.pid] = std::move(p);
      if (on_new_process_) on_new_process_(h.pid);
      break;
    }
    case RingEventKind::NoteExec: {
      // Payload: executable NUL argv[0] NUL argv[1] NUL ...
      codec::ProcessExec exec{h.pid, note_.position, ts, {}, {}};
      const std::string& s = note_.payload;
      const std::size_t nul = s.find('\0');
      exec.executable = s.substr(0, nul);
      for (std::size_t i = nul == std::string::npos ? s.size() : nul + 1; i < s.size();) {
        std::size_t end = s.find('\0', i);
        if (end == std::string::npos) end = s.size();
        exec.argv.push_back(s.substr(i, end - i));
        i = end + 1;
      }
      if (note_.truncated && !exec.argv.empty()) exec.argv.back() += "...";
      auto it = alive_.find(h.pid);
      if (it == alive_.end()) {
        // The command itself, or a child started by posix_spawn or vfork (no fork note): it starts here.
        add(codec::ProcessStart{h.pid, static_cast<std::int32_t>(h.addr), note_.position, ts});
        it = alive_.emplace(h.pid, TrackedProcess{h.pid, static_cast<std::int32_t>(h.addr), {}}).first;
        if (on_new_process_) on_new_process_(h.pid);
      }
      it->second.executable = exec.executable;
      add(std::move(exec));
      break;
    }
    case RingEventKind::NoteExit: {
      // The first note of a process's exit counts (exit() notes it, then the recorder may reap it).
      if (alive_.erase(h.pid) == 0) break;
      codec::ProcessExit exit{h.pid, note_.position, ts, {}, {}};
      if (h.flags & kRingNoteHasStatus) exit.status = static_cast<std::int32_t>(h.addr);
      if (h.flags & kRingNoteSignal) exit.signal = static_cast<std::int32_t>(h.addr);
      add(exit);
      break;
    }
    case RingEventKind::NoteUntracked: {
      UntrackedProcess u{h.pid, note_.payload, untracked_reason_name(static_cast<int>(h.addr))};
      codec::Untracked rec;
      if (h.pid != 0) rec.pid = h.pid;
      rec.executable = u.executable;
      rec.reason = u.reason;
      rec.event = note_.position;
      add(std::move(rec));
      untracked_.push_back(std::move(u));
      break;
    }
    case RingEventKind::NoteResident: {
      // A sample of a process that is no longer alive here (its exit was noted between the sampler's read and
      // its note) or one cut short is dropped: it would describe a process after its end.
      RingResidentPayload p;
      if (note_.truncated || note_.payload.size() != sizeof p || !alive_.contains(h.pid)) break;
      std::memcpy(&p, note_.payload.data(), sizeof p);
      add(codec::Resident{h.pid, note_.position, ts, p.anon, p.file, p.shmem, p.swap, p.own, p.hwm});
      last_resident_[h.pid] = p.anon + p.file + p.shmem;
      ++resident_samples_;
      break;
    }
    case RingEventKind::NoteResidentPages: {
      // Taken even when dropped, so nothing stays parked; dropped for a process no longer alive, as a sample.
      std::optional<codec::ResidentPages> snapshot;
      if (page_snapshots_ != nullptr) snapshot = page_snapshots_->take(h.addr);
      if (!snapshot || !alive_.contains(h.pid)) break;
      snapshot->pid = h.pid;
      snapshot->event = note_.position;
      snapshot->timestamp = ts;
      for (codec::ResidentPages& part : codec::split_resident_pages(*snapshot)) add(std::move(part));
      ++page_snapshots_written_;
      break;
    }
    default:
      // Control notes (pause, resume, regions: control_notes.h); a kind of a newer ring version cannot reach
      // us (the version check).
      if (ControlBooks::takes(h.kind))
        if (auto record = control_.on_note(h, note_.position, ts, note_.payload)) add(std::move(*record));
      break;
  }
}

std::vector<TrackedProcess> Lifecycle::alive() const {
  const std::lock_guard lock(mutex_);
  std::vector<TrackedProcess> out;
  out.reserve(alive_.size());
  for (const auto& [pid, p] : alive_) out.push_back(p);
  return out;
}

bool Lifecycle::is_alive(std::int32_t pid) const {
  const std::lock_guard lock(mutex_);
  return alive_.contains(pid);
}

std::vector<UntrackedProcess> Lifecycle::untracked() const {
  const std::lock_guard lock(mutex_);
  return untracked_;
}

std::uint64_t Lifecycle::resident_samples() const {
  const std::lock_guard lock(mutex_);
  return resident_samples_;
}

std::uint64_t Lifecycle::page_snapshots() const {
  const std::lock_guard lock(mutex_);
  return page_snapshots_written_;
}

std::uint64_t Lifecycle::records() const {
  const std::lock_guard lock(mutex_);
  return records_;
}

}  // namespace memtrack::runtime
