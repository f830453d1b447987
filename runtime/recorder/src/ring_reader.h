// Drains the shared ring in ticket order (which is causal order, ring.h) into the caller's buffer: the
// encoder's frame buffer when recording, so each event is copied once out of the ring, converted from the
// ring's RingEvent to codec::Event on the way, and not copied again. Converts TSC timestamps, and feeds every
// event it returns to the live heap of the recorder's summary and to the set of processes seen (process
// liveness).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <span>

#include "memtrack/analysis/live_heap.h"
#include "lifecycle.h"
#include "stack_tables.h"
#include "memtrack/codec/event.h"
#include "memtrack/pipeline/stream_encoder.h"
#include "processes.h"
#include "shared_ring.h"
#include "tsc_clock.h"

namespace memtrack::runtime {

// Written by the thread that waits for the tracked processes, read by the reader.
struct ProcessWatch {
  std::atomic<bool> all_exited{false};   // no tracked process is left: every ticket is final
  std::atomic<std::uint64_t> killed{0};  // tracked processes that died by a signal so far
};

class RingReader final : public pipeline::EventSource {
 public:
  // `tsc` may be null (producers wrote CLOCK_MONOTONIC nanoseconds).
  RingReader(SharedRing& ring, const ProcessWatch& watch, SeenProcesses& processes, analysis::LiveHeap& heap,
             TscClock* tsc)
      : ring_(ring), watch_(watch), processes_(processes), heap_(heap), tsc_(tsc) {}

  // Waits until at least one event is committed, then returns the committed events (up to out.size()) in
  // ticket order, their timestamps converted, added to the live heap and to the processes seen. Returns 0 once every
  // tracked process has exited and every ticket was read. Slots whose thread died before filling them are skipped
  // (abandoned()).
  std::size_t read(std::span<codec::Event> out) override;
  [[nodiscard]] codec::Status status() const override { return {}; }

  // Lifecycle notes met in the ring go to `lifecycle` (set before the first read()); without one they are
  // skipped.
  void set_lifecycle(Lifecycle* lifecycle) { lifecycle_ = lifecycle; }
  // Stack and module notes go to `stacks` (stack_tables.h), which also sees the fork and exec notes; `at_end`
  // runs once on this thread when the last ticket was read, before read() first returns 0 (the recording's
  // symbols are added to the context then, ahead of the encoder's last context frame).
  void set_stacks(StackTables* stacks, std::function<void()> at_end) {
    stacks_ = stacks;
    at_end_ = std::move(at_end);
  }
  // `tick` runs on this thread after every batch and every idle round (the live view's snapshots,
  // live_server.h); it must be cheap when it has nothing to do.
  void set_tick(std::function<void()> tick) { tick_ = std::move(tick); }
  // Tickets read so far (any thread): every note and event of a ticket below it has been handed on.
  [[nodiscard]] std::uint64_t position() const { return read_up_to_.load(std::memory_order_acquire); }

  [[nodiscard]] std::uint64_t events() const { return events_; }
  [[nodiscard]] std::uint64_t abandoned() const { return abandoned_; }

 private:
  // Reads shorter than this many events make the reader pause briefly (pause()).
  static constexpr std::size_t kShortBatch = 1024;
  void pause();
  void idle();
  bool owner_gone(std::uint64_t ticket, std::chrono::steady_clock::duration stuck_for) const;

  SharedRing& ring_;
  const ProcessWatch& watch_;
  SeenProcesses& processes_;
  analysis::LiveHeap& heap_;
  TscClock* tsc_;
  void on_note(const RingEvent& slot, std::uint64_t position);
  Lifecycle* lifecycle_ = nullptr;
  StackTables* stacks_ = nullptr;
  bool stacks_block_ = false;  // the NoteData slots being read belong to a stack note
  std::function<void()> at_end_;
  std::function<void()> tick_;
  std::atomic<std::uint64_t> read_up_to_{0};  // pos_, published after each batch
  std::uint64_t pos_ = 0;                     // the next ticket to read
  std::uint64_t events_ = 0;
  std::uint64_t abandoned_ = 0;
  int idle_rounds_ = 0;
  std::uint64_t stuck_at_ = UINT64_MAX;
  std::chrono::steady_clock::time_point stuck_since_;
  std::chrono::steady_clock::time_point last_check_;
};

}  // namespace memtrack::runtime
