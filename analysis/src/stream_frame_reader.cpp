#include "memtrack/analysis/stream_frame_reader.h"

#include <string>
#include <vector>

#include "memtrack/codec/context.h"
#include "memtrack/codec/frame_walker.h"

namespace memtrack::analysis {
namespace {

constexpr std::size_t kPieceEvents = 65536;  // a streamed frame goes out in pieces of at most this many events

}  // namespace

struct StreamFrameReader::Impl {
  std::string name;
  codec::FrameWalker walker;
  StreamProgress progress;
  std::vector<codec::ContextRecord> records;           // read since the held frame
  DecodedFrame held;                                   // what is known of the held frame
  std::span<const codec::Event> held_events;           // the walker's, valid until it decodes the next data frame
  const codec::ForeignEvents* held_foreign = nullptr;  // the same
  // A compact frame's own stacks (version 5): its EventStacks record, first among the records after it, as
  // the recorder writes it into the first context frame after a compatible frame.
  codec::EventStacks held_stacks;
  bool held_has_stacks = false;
  bool holding = false;

  Impl(codec::ByteSource& s, std::string n)
      : name(n), walker(s, std::move(n), {}, {.hold_context = true, .piece_events = kPieceEvents}) {}

  codec::Status deliver(const IndexedFrameReader::InOrderFn& in_order, std::span<const codec::Event> events,
                        const codec::ForeignEvents* foreign) {
    DecodedFrame f = held;
    f.events = events;
    f.foreign = foreign;
    if (held_has_stacks) records.insert(records.begin(), codec::ContextRecord{std::move(held_stacks)});
    f.context = records;
    const codec::Status s = in_order(f);
    progress.events += events.size();
    records.clear();
    held = {};
    held_events = {};
    held_foreign = nullptr;
    held_stacks = {};
    held_has_stacks = false;
    holding = false;
    return s;
  }

  codec::Status context_frame() {
    ++progress.context_frames;
    ++held.context_frames;
    held.context_bytes += walker.skippable_size();
    const codec::Status s = codec::decode_context_frame(walker.skippable_bytes(), walker.frame_offset(), records);
    if (!s.is_ok()) return {s.code(), name + ": " + s.message()};
    return {};
  }

  codec::Status run(const IndexedFrameReader::InOrderFn& in_order) {
    codec::Status status;
    bool consumer_failed = false;
    for (;;) {
      const codec::FrameWalker::Item item = walker.next();
      if (item == codec::FrameWalker::Item::end) {
        status = walker.status();
        break;
      }
      if (item == codec::FrameWalker::Item::skippable) {
        ++progress.skippable_frames;
        progress.compressed_bytes = walker.offset();
        if (walker.skippable_magic() != codec::kContextFrameMagic) continue;
        status = context_frame();
        if (!status.is_ok()) break;
        continue;
      }
      if (item == codec::FrameWalker::Item::frame_begin) {
        if (!holding) continue;
        // A new data frame: every context frame of the held one has been read.
        status = deliver(in_order, held_events, held_foreign);
        if (!status.is_ok()) {
          consumer_failed = true;
          break;
        }
        continue;
      }
      if (!walker.frame_done()) {  // a piece of a streamed frame
        held.index = walker.frame_index();
        status = deliver(in_order, walker.events(), &walker.foreign());
        if (!status.is_ok()) {
          consumer_failed = true;
          break;
        }
        continue;
      }
      progress.decompressed_bytes += walker.frame_content_bytes();
      progress.compressed_bytes = walker.offset();
      ++progress.data_frames;
      held.index = walker.frame_index() - 1;
      held.compressed_bytes = walker.frame_compressed_bytes();
      held.msgpack_bytes = walker.frame_content_bytes();
      held_events = walker.events();
      held_foreign = &walker.foreign();
      if (const codec::FrameStacks& st = walker.stacks(); st.present) {
        held_stacks.first_event = st.first_event;
        held_stacks.ids = st.ids;
        held_has_stacks = true;
      }
      holding = true;
    }
    // Everything valid before the end or the damage: the held frame and the records read after it (or,
    // without any data frame, before the end).
    if (!consumer_failed && (holding || !records.empty())) {
      if (!holding) held.index = walker.frame_index();
      const codec::Status s = deliver(in_order, held_events, held_foreign);
      if (status.is_ok()) status = s;
    }
    return status;
  }
};

StreamFrameReader::StreamFrameReader(codec::ByteSource& source, std::string name)
    : impl_(std::make_unique<Impl>(source, std::move(name))) {}
StreamFrameReader::~StreamFrameReader() = default;

codec::Status StreamFrameReader::run(const IndexedFrameReader::InOrderFn& in_order) { return impl_->run(in_order); }
const StreamProgress& StreamFrameReader::progress() const { return impl_->progress; }

}  // namespace memtrack::analysis
