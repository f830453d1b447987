#include "memtrack/analysis/stream_order.h"

#include <type_traits>
#include <variant>

namespace memtrack::analysis {

std::optional<std::uint64_t> position_of(const codec::ContextRecord& record) {
  return std::visit(
      [](const auto& x) -> std::optional<std::uint64_t> {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, codec::EventStacks>) {
          return x.first_event;
        } else if constexpr (requires { x.event; }) {
          return x.event;
        } else {
          return std::nullopt;  // RecordingInfo, StreamEnd, Symbols
        }
      },
      record);
}

StreamOrder::StreamOrder(std::span<ArtifactConsumer* const> consumers, std::uint64_t first_event)
    : consumers_(consumers), next_event_(first_event) {}

void StreamOrder::add(std::span<codec::ContextRecord> records, std::span<const codec::Event> events,
                      const codec::ForeignEvents* foreign) {
  // A record without a position (End, Symbols) goes where it was read: after the events of the frame it
  // follows. The Recording describes the whole stream: first.
  const std::uint64_t frame_end = next_event_ + events.size();
  for (codec::ContextRecord& r : records) {
    const std::uint64_t at = std::holds_alternative<codec::RecordingInfo>(r) ? 0 : position_of(r).value_or(frame_end);
    waiting_.push(at, std::move(r));
  }
  std::size_t done = 0;
  const auto feed = [&](std::size_t until) {
    waiting_.feed(
        next_event_ + done, events.subspan(done, until - done),
        [&](std::span<const codec::Event> run) {
          for (ArtifactConsumer* c : consumers_) c->add(run);
        },
        [&](const codec::ContextRecord& record) {
          for (ArtifactConsumer* c : consumers_) c->add_context(record);
        });
    done = until;
  };
  // Foreign events hold no position of their own: positions count known events only.
  for (std::size_t i = 0; foreign != nullptr && i < foreign->size(); ++i) {
    const codec::ForeignEvent f = (*foreign)[i];
    feed(std::min(f.position, events.size()));
    for (ArtifactConsumer* c : consumers_) c->add_foreign(f);
  }
  feed(events.size());
  next_event_ = frame_end;
}

void StreamOrder::finish() {
  waiting_.drain([&](const codec::ContextRecord& record) {
    for (ArtifactConsumer* c : consumers_) c->add_context(record);
  });
}

}  // namespace memtrack::analysis
