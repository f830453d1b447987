// memtrack convert: an artifact's data frames re-encoded in the other encoding (CodSpeed-compatible msgpack
// or compact columns, docs/FORMAT.md), streaming with memory bounded by one frame.
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "args.h"
#include "commands.h"
#include "io.h"
#include "memtrack/codec/compact.h"
#include "memtrack/codec/context.h"
#include "memtrack/codec/frame_compressor.h"
#include "memtrack/codec/frame_walker.h"
#include "memtrack/codec/msgpack_encoder.h"
#include "memtrack/codec/seek_table.h"
#include "memtrack/pipeline/fd_io.h"
#include "memtrack/pipeline/sink.h"
#include "output_checks.h"

namespace memtrack::tools {
namespace {

constexpr const char* kHelp =
    "usage: memtrack convert --to codspeed|compact FILE [-o OUT|-] [--level L]\n\n"
    "Re-encodes an artifact's data frames: --to codspeed writes CodSpeed-compatible msgpack (what\n"
    "'memtrack encode' writes, and CodSpeed's reader reads), --to compact the compact columns of\n"
    "'encode --compact' and 'record --compact' (docs/FORMAT.md, \"Compact data frames\"); either input\n"
    "encoding is read. The events, their order and their frames stay as they are: one output frame per input\n"
    "frame (a frame of more than 65536 events, which no memtrack writer writes, is cut into frames of 65536),\n"
    "so the data frames are byte for byte what 'memtrack encode --level L' writes for the same events in the\n"
    "same frames, and an artifact without context converts to exactly encode's file. Context frames are copied\n"
    "unchanged after the frame they followed, but for call stacks: --to compact moves a frame's stacks (the\n"
    "context frame right after it that holds only its EventStacks record) into the frame (compact version 5),\n"
    "--to codspeed writes them out again as that context frame (at --level L); the frame index is written\n"
    "anew; other skippable frames are left out. Memory is bounded by one frame.\n\n"
    "  --to ENCODING         codspeed or compact\n"
    "  -o, --output OUT      artifact to write (default: - for stdout)\n"
    "  --level L             zstd level of the data frames, -7..22 (default: encode's for the encoding:\n"
    "                        -5 for codspeed, 1 for compact)\n\n"
    "A damaged input stops the conversion with the decoder's error (file, frame, byte offset); OUT then holds\n"
    "the frames before the damage, without a frame index.\n";

constexpr std::size_t kMaxOutputFrameEvents = 65536;

class Converter {
 public:
  Converter(bool compact, int level, pipeline::Sink& sink) : compressor_(level), sink_(sink) {
    if (compact) {
      compact_.emplace(kMaxOutputFrameEvents);
    } else {
      msgpack_.emplace(kMaxOutputFrameEvents);
    }
    compressed_.resize(
        codec::FrameCompressor::bound(std::max(codec::FrameSerializer::output_bound(kMaxOutputFrameEvents),
                                               codec::CompactFrameEncoder::output_bound(kMaxOutputFrameEvents)),
                                      codec::kMaxCompactBlockEnds));
    events_.reserve(kMaxOutputFrameEvents);
  }

  // Adds events of the current input frame, writing a frame whenever more than kMaxOutputFrameEvents are
  // pending (a whole frame of exactly that many waits for end_frame, which may give it its stacks).
  codec::Status add(std::span<const codec::Event> events) {
    while (!events.empty()) {
      if (events_.size() == kMaxOutputFrameEvents) {
        if (codec::Status s = flush(); !s.is_ok()) return s;
      }
      const std::size_t n = std::min(events.size(), kMaxOutputFrameEvents - events_.size());
      events_.insert(events_.end(), events.begin(), events.begin() + static_cast<std::ptrdiff_t>(n));
      events = events.subspan(n);
    }
    return {};
  }

  // The end of an input data frame: its pending events (none: an empty input frame) become one frame, held
  // until the item after it (the context frame that may hold its stacks) is seen. `stacks`: the input
  // frame's own (a compact version 5 frame's).
  codec::Status end_frame(bool frame_was_empty, const codec::FrameStacks& stacks, std::uint64_t frame_events) {
    first_event_ = events_before_;
    events_before_ += frame_events;
    if (events_.empty() && !frame_was_empty) return {};
    held_ = true;
    held_stacks_ = stacks.present && stacks.ids.size() == events_.size();
    if (held_stacks_) {
      stacks_first_ = stacks.first_event;
      for (std::size_t i = 0; i < events_.size(); ++i) events_[i].stack = stacks.ids[i];
    }
    if (stacks.present && !held_stacks_) {  // the events were cut into several frames: stacks as a record
      if (codec::Status s = flush(); !s.is_ok()) return s;
      return write_stacks(stacks.first_event, stacks.ids);
    }
    return {};
  }

  // Anything but a context frame after a data frame: the held frame goes out as it is.
  codec::Status next_item() { return held_ ? flush_held(false) : codec::Status{}; }

  codec::Status copy(std::span<const std::byte> skippable) {
    if (held_) {
      const bool absorbed = compact_ && !held_stacks_ && absorb_stacks(skippable);
      if (codec::Status s = flush_held(absorbed); !s.is_ok()) return s;
      if (absorbed) return {};
    }
    index_.add(static_cast<std::uint32_t>(skippable.size()), 0);
    return sink_.write(skippable);
  }

  codec::Status finish() {
    if (codec::Status s = next_item(); !s.is_ok()) return s;
    const auto table = index_.finish();
    return sink_.write(table);
  }

 private:
  // The held frame, with its stacks in it (compact) or after it as a context frame (codspeed).
  codec::Status flush_held(bool absorbed) {
    held_ = false;
    const bool with_stacks = held_stacks_ || absorbed;
    held_stacks_ = false;
    if (!with_stacks || compact_) return flush(with_stacks);
    stack_ids_.resize(events_.size());
    for (std::size_t i = 0; i < events_.size(); ++i) stack_ids_[i] = events_[i].stack;
    const std::uint64_t first = stacks_first_;
    if (codec::Status s = flush(false); !s.is_ok()) return s;
    return write_stacks(first, stack_ids_);
  }

  // The EventStacks record of a frame's stacks in a context frame of its own, as the recorder writes it.
  codec::Status write_stacks(std::uint64_t first_event, std::span<const std::uint32_t> ids) {
    records_.clear();
    records_.emplace_back(codec::EventStacks{first_event, {ids.begin(), ids.end()}});
    context_.clear();
    if (codec::Status s = codec::encode_context_frame(records_, compressor_, scratch_, context_); !s.is_ok()) return s;
    index_.add(static_cast<std::uint32_t>(context_.size()), 0);
    return sink_.write(context_);
  }

  // True when context frame `skippable` holds exactly the held frame's EventStacks record (one record
  // covering its events from their first, nothing else): its ids go into the held events.
  bool absorb_stacks(std::span<const std::byte> skippable) {
    records_.clear();
    if (events_.empty()) return false;  // an empty frame's compact content is empty: its stacks stay a record
    if (!codec::decode_context_frame(skippable, 0, records_).is_ok() || records_.size() != 1) return false;
    const auto* es = std::get_if<codec::EventStacks>(&records_[0]);
    if (es == nullptr || es->first_event != first_event_ || es->ids.size() != events_.size()) return false;
    // Nothing the reader skipped (a record of a type it does not know): the payload is exactly that record.
    constexpr std::size_t kHeader = 16;  // skippable frame header, then MTCX, version, flags, reserved
    if (skippable.size() <= kHeader) return false;
    const unsigned long long size = ZSTD_getFrameContentSize(skippable.data() + kHeader, skippable.size() - kHeader);
    if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR || size > (std::size_t{64} << 20))
      return false;
    payload_.resize(static_cast<std::size_t>(size));
    const std::size_t got =
        ZSTD_decompress(payload_.data(), payload_.size(), skippable.data() + kHeader, skippable.size() - kHeader);
    context_.clear();
    if (ZSTD_isError(got) || got != payload_.size() ||
        !codec::encode_context_frame(records_, compressor_, scratch_, context_).is_ok() || scratch_ != payload_)
      return false;
    for (std::size_t i = 0; i < events_.size(); ++i) events_[i].stack = es->ids[i];
    stacks_first_ = es->first_event;
    return true;
  }

  codec::Status flush(bool with_stacks = false) {
    const std::span<const std::byte> content = !compact_      ? msgpack_->serialize(events_)
                                               : with_stacks ? compact_->encode(events_, stacks_first_)
                                                             : compact_->encode(events_);
    codec::Status s;
    const std::span<const std::size_t> block_ends = compact_ ? compact_->block_ends() : std::span<const std::size_t>{};
    const std::size_t size = compressor_.compress(content, block_ends, compressed_, s);
    events_.clear();
    if (!s.is_ok()) return s;
    index_.add(static_cast<std::uint32_t>(size), static_cast<std::uint32_t>(content.size()));
    return sink_.write({compressed_.data(), size});
  }

  std::optional<codec::CompactFrameEncoder> compact_;
  std::optional<codec::FrameSerializer> msgpack_;
  codec::FrameCompressor compressor_;
  pipeline::Sink& sink_;
  std::vector<codec::Event> events_;
  std::vector<std::byte> compressed_;
  codec::SeekTableBuilder index_;
  bool held_ = false, held_stacks_ = false;
  std::uint64_t events_before_ = 0, first_event_ = 0, stacks_first_ = 0;
  std::vector<std::uint32_t> stack_ids_;
  std::vector<codec::ContextRecord> records_;
  std::vector<std::byte> scratch_, context_, payload_;
};

}  // namespace

int run_convert(int argc, char** argv) {
  Args args(argc, argv, 2);
  if (args.flag("help", "h")) {
    print_stdout(kHelp);
    return 0;
  }
  const auto to = args.value("to");
  if (!to) throw UsageError("missing --to codspeed|compact");
  if (*to != "codspeed" && *to != "compact") throw UsageError("--to " + *to + ": expected codspeed or compact");
  const std::string output = args.value("output", "o").value_or("-");
  const bool compact = *to == "compact";
  // encode's default for the encoding written, so that a default conversion is what encode writes.
  const int level = static_cast<int>(parse_int(
      "level", args.value("level").value_or(compact ? std::to_string(codec::kDefaultCompactLevel) : "-5"), -7, 22));
  const auto files = args.positionals();
  if (files.size() != 1) throw UsageError(files.empty() ? "missing FILE" : "more than one FILE");
  refuse_output_is_input(files[0], output);
  if (output == "-" && ::isatty(1)) throw UsageError("refusing to write a binary artifact to a terminal; use -o FILE");

  const int in_fd = open_input(files[0]);
  const std::string in_name = files[0] == "-" ? "stdin" : files[0];
  OutputFile out_file(output);
  pipeline::FdSink sink(out_file.fd(), out_file.name());
  pipeline::FdSource source(in_fd);
  codec::FrameWalker walker(source, in_name, {}, {.hold_context = true, .piece_events = kMaxOutputFrameEvents});
  Converter converter(compact, level, sink);
  codec::Status status;
  bool wrote = false, frame_empty = true;
  std::uint64_t frame_events = 0;
  while (status.is_ok()) {
    const codec::FrameWalker::Item item = walker.next();
    if (item == codec::FrameWalker::Item::end) {
      const codec::Status held = converter.next_item();  // the frame before the end or the damage
      status = walker.status();
      if (status.is_ok()) status = held;
      break;
    }
    if (item == codec::FrameWalker::Item::frame_begin) {
      frame_empty = true;
      frame_events = 0;
      status = converter.next_item();
    } else if (item == codec::FrameWalker::Item::events) {
      frame_empty = frame_empty && walker.events().empty();
      frame_events += walker.events().size();
      status = converter.add(walker.events());
      if (status.is_ok() && walker.frame_done()) status = converter.end_frame(frame_empty, walker.stacks(), frame_events);
      wrote = true;
    } else if (walker.skippable_magic() == codec::kContextFrameMagic) {
      status = converter.copy(walker.skippable_bytes());
    } else {
      status = converter.next_item();
    }
  }
  if (status.is_ok()) status = converter.finish();
  // As decode: an existing OUT is replaced by a whole conversion, or by the frames before a damage.
  if ((status.is_ok() || wrote) && status.code() != codec::Errc::io) {
    if (codec::Status c = out_file.commit(); status.is_ok()) status = c;
  }
  close_fd(in_fd);
  if (!status.is_ok()) {
    std::fprintf(stderr, "memtrack convert: %s\n", status.message().c_str());
    return exit_status(status);
  }
  return 0;
}

}  // namespace memtrack::tools
