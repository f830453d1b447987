// Stream order: how every consumer of an artifact is fed (docs/FORMAT.md, "Context section: positions").
// A context record applies before the events at and after its position (its `event`, EventStacks'
// `first_event`); the Recording comes first; the records without a position (End, Symbols) come after the
// events of the data frame they were read after.
//   - ArtifactConsumer: what the readers feed (stats, sites, timeline, regions, decode's context writer).
//   - PositionQueue: records waiting for their position, the one implementation of "apply a record at its
//     position" (StreamOrder's, LiveHeap's and Regions' early records).
//   - StreamOrder: from frames (events + the records read after them) to stream order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "memtrack/codec/context.h"
#include "memtrack/codec/event.h"
#include "memtrack/codec/foreign_event.h"

namespace memtrack::analysis {

// Receives an artifact in stream order (above). Called from one thread at a time.
class ArtifactConsumer {
 public:
  virtual ~ArtifactConsumer() = default;
  virtual void add_context(const codec::ContextRecord& record) = 0;
  virtual void add(std::span<const codec::Event> events) = 0;
  // An event of a type this reader does not know, where it was among the events (foreign_event.h). The
  // analyses ignore them; decode writes them, stats counts them.
  virtual void add_foreign(const codec::ForeignEvent&) {}
};

// Several consumers as one (a region filter's downstream), fed in the order given.
class Fanout final : public ArtifactConsumer {
 public:
  explicit Fanout(std::vector<ArtifactConsumer*> consumers) : consumers_(std::move(consumers)) {}
  void add_context(const codec::ContextRecord& record) override {
    for (ArtifactConsumer* c : consumers_) c->add_context(record);
  }
  void add(std::span<const codec::Event> events) override {
    for (ArtifactConsumer* c : consumers_) c->add(events);
  }
  void add_foreign(const codec::ForeignEvent& event) override {
    for (ArtifactConsumer* c : consumers_) c->add_foreign(event);
  }

 private:
  std::vector<ArtifactConsumer*> consumers_;
};

// Progress of a pass: file bytes consumed so far, events so far (after each data frame).
using ProgressFn = std::function<void(std::uint64_t bytes, std::uint64_t events)>;

// The position a record applies at: the number of events before it (docs/FORMAT.md, "Context section:
// positions"); nullopt for the records without one (Recording, End, Symbols).
[[nodiscard]] std::optional<std::uint64_t> position_of(const codec::ContextRecord& record);

// Records waiting for their position, in position order (equal positions in the order pushed: a
// ProcessStart before the Exec at its position).
class PositionQueue {
 public:
  void push(std::uint64_t position, codec::ContextRecord record) {
    const auto at = std::upper_bound(waiting_.begin() + static_cast<std::ptrdiff_t>(head_), waiting_.end(), position,
                                     [](std::uint64_t p, const Entry& e) { return p < e.first; });
    waiting_.emplace(at, position, std::move(record));
  }
  [[nodiscard]] bool empty() const { return head_ == waiting_.size(); }
  [[nodiscard]] std::size_t size() const { return waiting_.size() - head_; }
  // The first waiting record's position; UINT64_MAX when none waits.
  [[nodiscard]] std::uint64_t next() const { return empty() ? UINT64_MAX : waiting_[head_].first; }

  // `events` are the stream's events from index `first`: calls on_events(run) with the runs between the
  // positions of the waiting records, and on_record(record) for each record whose position is reached, before
  // the events at it (a record at the end of `events` waits for the next call or drain()).
  template <typename OnEvents, typename OnRecord>
  void feed(std::uint64_t first, std::span<const codec::Event> events, OnEvents&& on_events, OnRecord&& on_record) {
    std::size_t e = 0;
    while (e < events.size()) {
      while (head_ < waiting_.size() && waiting_[head_].first <= first + e) on_record(pop());
      const std::uint64_t at = next();
      const std::size_t run = at - first >= events.size() ? events.size() : static_cast<std::size_t>(at - first);
      on_events(events.subspan(e, run - e));
      e = run;
    }
    compact();
  }
  // Hands on every record with a position of at most `position`, in order.
  template <typename OnRecord>
  void release_up_to(std::uint64_t position, OnRecord&& on_record) {
    while (head_ < waiting_.size() && waiting_[head_].first <= position) on_record(pop());
    compact();
  }
  // Hands on every waiting record, in order (the end of the stream).
  template <typename OnRecord>
  void drain(OnRecord&& on_record) {
    release_up_to(UINT64_MAX, on_record);
  }

 private:
  using Entry = std::pair<std::uint64_t, codec::ContextRecord>;
  codec::ContextRecord pop() { return std::move(waiting_[head_++].second); }
  void compact() {
    waiting_.erase(waiting_.begin(), waiting_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
  std::vector<Entry> waiting_;
  std::size_t head_ = 0;  // waiting_[0, head_) were handed on (erased at the end of each call)
};

// From frames (events + the records read after them) to stream order: records wait until the events before
// their position have been delivered. Feed it every frame in order with add(); finish() at the end delivers
// the records positioned after the last event. `first_event`: the stream index of the first event it gets.
class StreamOrder {
 public:
  explicit StreamOrder(std::span<ArtifactConsumer* const> consumers, std::uint64_t first_event = 0);
  // The frame's records (moved from), then its events and its foreign events, interleaved.
  void add(std::span<codec::ContextRecord> records, std::span<const codec::Event> events,
           const codec::ForeignEvents* foreign = nullptr);
  void finish();
  [[nodiscard]] std::uint64_t events() const { return next_event_; }

 private:
  std::span<ArtifactConsumer* const> consumers_;
  std::uint64_t next_event_;
  PositionQueue waiting_;
};

}  // namespace memtrack::analysis
