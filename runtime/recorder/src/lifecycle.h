// The processes of a recording, from the lifecycle notes in the ring (ring.h, "Lifecycle notes"): the reader
// thread hands every note slot to on_slot() as it meets it in ticket order, with the number of events before
// it (its position, docs/FORMAT.md "Context section: positions"), and Lifecycle turns the notes into context
// records (ProcessStart, ProcessExec, ProcessExit, Untracked) added to the ContextChannel in that order. The
// recorder's main thread asks it which tracked processes are alive (the descendant policy, recorder.cpp) and,
// at the end, what went untracked (the summary).
//
// Thread safety: on_slot() and on_abandoned() from the reader only; the queries from any thread. A mutex
// guards the books: notes are per process or image, never per event.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "control_notes.h"
#include "memtrack/analysis/live_heap.h"
#include "memtrack/codec/context.h"
#include "memtrack/pipeline/context_channel.h"
#include "memtrack/runtime/ring.h"
#include "page_snapshots.h"
#include "tsc_clock.h"

namespace memtrack::runtime {

struct TrackedProcess {
  std::int32_t pid = 0;
  std::int32_t ppid = 0;
  std::string executable;  // of its current image (a fork child that did not exec: its parent's)
};

struct UntrackedProcess {
  std::int32_t pid = 0;  // 0: not known
  std::string executable;
  std::string reason;  // as in the Untracked record
};

class Lifecycle {
 public:
  // `tsc` may be null (the notes' timestamps are CLOCK_MONOTONIC nanoseconds already). `heap`, if given,
  // gets every record too (the summary's live heap: process exits and execs end images there as in
  // `memtrack stats`, so the summary's peak is stats' peak).
  Lifecycle(pipeline::ContextChannel& channel, TscClock* tsc, analysis::LiveHeap* heap = nullptr)
      : channel_(channel), tsc_(tsc), heap_(heap) {}

  // `fn` (set before the first slot) is called on the reader thread, under the books' lock, with the pid of
  // every process that starts (a fork child, or an image started by exec without a fork note).
  void on_new_process(std::function<void(std::int32_t)> fn) { on_new_process_ = std::move(fn); }

  // Where the sampler parks the snapshots its NoteResidentPages name (set before the first slot; null: such a
  // note is dropped).
  void set_page_snapshots(PageSnapshots* snapshots) { page_snapshots_ = snapshots; }

  // Reader thread: a committed slot whose kind is a note (RingEventKind::Note*), at event position
  // `position`.
  void on_slot(const RingEvent& slot, std::uint64_t position);
  // Reader thread: a slot skipped unfilled (its owner died). If it belonged to a note's block, the note's
  // payload is cut there.
  void on_abandoned(std::uint64_t position);

  // Tracked processes that started and have not exited, in pid order.
  [[nodiscard]] std::vector<TrackedProcess> alive() const;
  [[nodiscard]] bool is_alive(std::int32_t pid) const;
  // What was reported untracked (Untracked records), in record order.
  [[nodiscard]] std::vector<UntrackedProcess> untracked() const;
  // Records added to the channel so far; of those, Resident samples.
  [[nodiscard]] std::uint64_t records() const;
  [[nodiscard]] std::uint64_t resident_samples() const;
  // Reader thread: each process's resident bytes at its last Resident sample (the live view's).
  [[nodiscard]] const std::map<std::int32_t, std::uint64_t>& last_resident() const { return last_resident_; }
  // ResidentPages snapshots written (each one or more records).
  [[nodiscard]] std::uint64_t page_snapshots() const;

 private:
  struct Note {
    RingEvent head;
    std::uint64_t position = 0;
    std::uint64_t missing = 0;  // data slots still to come
    bool truncated = false;
    std::string payload;
  };
  void finish_note();
  void add(codec::ContextRecord record);
  std::uint64_t timestamp(std::uint64_t raw) const;

  pipeline::ContextChannel& channel_;
  TscClock* tsc_;
  analysis::LiveHeap* heap_;
  Note note_;  // the note whose data slots are being read (note_.missing != 0)
  mutable std::mutex mutex_;
  std::map<std::int32_t, TrackedProcess> alive_;
  std::vector<UntrackedProcess> untracked_;
  ControlBooks control_;
  std::function<void(std::int32_t)> on_new_process_;
  std::uint64_t records_ = 0;
  std::uint64_t resident_samples_ = 0;
  std::map<std::int32_t, std::uint64_t> last_resident_;  // reader thread only
  std::uint64_t page_snapshots_written_ = 0;
  PageSnapshots* page_snapshots_ = nullptr;
};

}  // namespace memtrack::runtime
