#include "memtrack/analysis/frame_reader.h"

#include <tbb/parallel_pipeline.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "memtrack/codec/frame_decoder.h"

namespace memtrack::analysis {
namespace {

// Frames in flight share this budget (compressed bytes, decompressed buffer, decoded events).
constexpr std::uint64_t kMemoryBudget = 256u << 20;
constexpr std::size_t kSmallestEventBytes = 30;  // a Free with fixint values is 39 bytes; stay below it

}  // namespace

IndexedFrameReader::IndexedFrameReader(const codec::SeekTable& index, ReadAt read_at, std::string name,
                                       FrameRange range, std::size_t max_frames_in_flight)
    : index_(index), read_at_(std::move(read_at)), name_(std::move(name)) {
  // An entry that decompresses to nothing may be a skippable (context) frame: its first 4 bytes tell. A data
  // frame of an empty stream also decompresses to nothing, and stays (a read failure leaves it to decoding).
  // An entry larger than any frame stays too, so that reading it is refused by its size (never allocated).
  const std::size_t largest_frame = codec::FrameDecoder().max_frame_bytes();
  for (std::size_t i = 0; i < index.frames.size(); ++i) {
    const auto& f = index.frames[i];
    if (f.decompressed_size == 0 && f.compressed_size >= codec::kSkippableHeaderBytes &&
        f.compressed_size <= largest_frame) {
      std::byte magic[4];
      if (read_at_(f.offset, magic).is_ok()) {
        const std::uint32_t m = codec::load_le32(magic);
        if (codec::is_skippable_magic(m)) {
          skippable_bytes_ += f.compressed_size;
          if (m == codec::kContextFrameMagic) context_.push_back(i);
          continue;
        }
      }
    }
    // Data frame k's context frames are those between it and frame k + 1; frame 0 also takes those before it.
    context_begin_.push_back(data_.empty() ? 0 : context_.size());
    data_.push_back(i);
  }
  context_begin_.push_back(context_.size());
  last_ = std::min(range.last, data_.size());
  first_ = std::min(range.first, last_);
  if (max_frames_in_flight == 0) {
    std::uint64_t largest = 1;
    for (std::size_t i = first_; i < last_; ++i) {
      const auto& f = index.frames[data_[i]];
      const std::uint64_t bytes = f.compressed_size + std::uint64_t{f.decompressed_size} * 2 +
                                  std::uint64_t{f.decompressed_size} / kSmallestEventBytes * sizeof(codec::Event);
      largest = std::max(largest, bytes);
    }
    // The budget bounds memory whatever the core count; below it, two frames per thread keep every thread
    // busy, and more would only touch fresh memory (each slot's buffers are reused across its frames).
    const auto per_thread = static_cast<std::uint64_t>(2 * tbb::this_task_arena::max_concurrency() + 1);
    max_frames_in_flight =
        static_cast<std::size_t>(std::clamp<std::uint64_t>(std::min(kMemoryBudget / largest, per_thread), 2, 64));
  }
  slots_ = std::max<std::size_t>(1, std::min(max_frames_in_flight, last_ - first_));
}

std::uint64_t IndexedFrameReader::bytes_in_range() const {
  if (first_ == last_) return 0;
  const auto& a = index_.frames[data_[first_]];
  const auto& b = index_.frames[data_[last_ - 1]];
  return b.offset + b.compressed_size - a.offset;
}

codec::Status IndexedFrameReader::run(const ParallelFn& parallel, const InOrderFn& in_order) {
  // One slot per frame in flight, owning everything the frame needs, reused round-robin. Tokens leave the
  // last (serial, in-order) stage in order, so with K tokens alive, frame i's slot i % K is free again when
  // the input stage reaches frame i.
  struct Slot {
    codec::FrameDecoder decoder;
    std::vector<std::byte> compressed;
    std::vector<codec::Event> events;
    codec::ForeignEvents foreign;
    codec::FrameStacks stacks;
    codec::Status status;
    std::size_t decompressed = 0;
    DecodedFrame frame;
    // The context frames after the data frame: their bytes back to back, then their records. A damaged one
    // ends the run after the frame is delivered with the records before it (context_status).
    std::vector<std::byte> context_bytes;
    std::vector<codec::ContextRecord> records;
    codec::Status context_status;
  };
  std::vector<std::unique_ptr<Slot>> slots;
  for (std::size_t i = 0; i < slots_; ++i) slots.push_back(std::make_unique<Slot>());

  auto frame_error = [&](std::size_t i, codec::Errc code, const std::string& what) {
    return codec::Status(code, name_ + ": frame " + std::to_string(i) + " at byte " +
                                   std::to_string(index_.frames[data_[i]].offset) + ": " + what);
  };

  std::size_t next_frame = first_;
  // Set by the output stage, read by the input stage: different filters run concurrently, so atomic.
  std::atomic<bool> failed = false;
  codec::Status result;
  tbb::parallel_pipeline(
      slots_, tbb::make_filter<void, Slot*>(tbb::filter_mode::serial_in_order, [&](tbb::flow_control& fc) -> Slot* {
                if (next_frame == last_ || failed) {
                  fc.stop();
                  return nullptr;
                }
                const std::size_t i = next_frame++;
                Slot* s = slots[(i - first_) % slots_].get();
                s->frame = {};
                s->frame.index = i;
                s->frame.slot = (i - first_) % slots_;
                const std::uint32_t size = index_.frames[data_[i]].compressed_size;
                if (size > s->decoder.max_frame_bytes()) {  // never allocate what no frame can be
                  s->compressed.clear();
                  s->status =
                      frame_error(i, codec::Errc::too_large,
                                  "the index says " + std::to_string(size) + " bytes, more than a frame can be");
                  return s;
                }
                s->compressed.resize(size);
                s->status = read_at_(index_.frames[data_[i]].offset, s->compressed);
                s->context_bytes.clear();
                s->context_status = {};
                for (std::size_t c = context_begin_[i]; c < context_begin_[i + 1] && s->status.is_ok(); ++c) {
                  const auto& f = index_.frames[context_[c]];
                  const std::size_t at = s->context_bytes.size();
                  s->context_bytes.resize(at + f.compressed_size);  // sizes checked against a frame's bound
                  s->context_status = read_at_(f.offset, std::span(s->context_bytes).subspan(at, f.compressed_size));
                  if (!s->context_status.is_ok()) {
                    s->context_bytes.resize(at);
                    break;
                  }
                  s->frame.context_frames++;
                  s->frame.context_bytes += f.compressed_size;
                }
                return s;
              }) & tbb::make_filter<Slot*, Slot*>(tbb::filter_mode::parallel, [&](Slot* s) {
                s->events.clear();
                if (!s->status.is_ok()) return s;
                const codec::Status st = s->decoder.decode(s->compressed, s->events, &s->decompressed, &s->foreign, &s->stacks);
                if (!st.is_ok()) {
                  s->status = frame_error(s->frame.index, st.code(), st.message());
                  return s;
                }
                s->frame.events = s->events;
                s->frame.foreign = &s->foreign;
                s->frame.compressed_bytes = s->compressed.size();
                s->frame.msgpack_bytes = s->decompressed;
                s->records.clear();
                // A compact frame's own stacks (version 5): its EventStacks record, first after it.
                if (s->stacks.present)
                  s->records.emplace_back(codec::EventStacks{s->stacks.first_event, std::move(s->stacks.ids)});
                for (std::size_t c = context_begin_[s->frame.index], at = 0;
                     at < s->context_bytes.size() && s->context_status.is_ok(); ++c) {
                  const auto& f = index_.frames[context_[c]];
                  const codec::Status cs = codec::decode_context_frame(
                      std::span(s->context_bytes).subspan(at, f.compressed_size), f.offset, s->records);
                  if (!cs.is_ok()) s->context_status = {cs.code(), name_ + ": " + cs.message()};
                  at += f.compressed_size;
                }
                s->frame.context = s->records;
                if (parallel) parallel(s->frame);
                return s;
              }) & tbb::make_filter<Slot*, void>(tbb::filter_mode::serial_in_order, [&](Slot* s) {
                if (failed) return;
                codec::Status st = s->status.is_ok() ? in_order(s->frame) : s->status;
                if (st.is_ok()) st = s->context_status;
                if (!st.is_ok()) {
                  result = std::move(st);
                  failed = true;
                }
              }));
  return result;
}

}  // namespace memtrack::analysis
