// Property: events -> our writer (FrameSerializer + FrameCompressor, frames of N events) -> ArtifactDecoder
// gives back exactly the events, whatever the events, N, the zstd level and the caller's block size, and
// with a skippable frame (metadata) after the data frames.
//
// The input is not an artifact: it is a recipe. Its first bytes choose N, the level and the block size; the
// rest is read as events with integers of every msgpack width, so every encoder branch is reached.
//
// The same events also go through the pipeline (memtrack::pipeline::encode_stream) with a worker count
// (1..4) and an in-flight cap (1 or 3) taken from the input: its bytes must equal the single-threaded ones.
#include <algorithm>
#include <array>

#include "fuzz/fuzz_common.h"
#include "memtrack/pipeline/stream_encoder.h"

namespace {

using memtrack::codec::Event;
using memtrack::codec::EventKind;

Event next_event(memtrack::fuzz::InputReader& in) {
  Event e;
  const std::uint8_t control = in.byte();
  e.kind = static_cast<EventKind>(1 + control % 8);
  e.pid = static_cast<std::int32_t>(static_cast<std::uint32_t>(in.varint()));
  e.tid = static_cast<std::int32_t>(static_cast<std::uint32_t>(in.varint()));
  e.timestamp = in.varint();
  e.addr = in.varint();
  if (e.kind != EventKind::Free) e.size = in.varint();
  // A Realloc may lack old_addr (the old pointer was NULL): encoded as an absent key.
  if (e.kind == EventKind::Realloc && (control & 0x80) != 0) {
    e.old_addr = in.varint();
    e.flags = memtrack::codec::kFlagHasOldAddr;
  }
  return e;
}

// Hands the events to the pipeline in odd-sized blocks.
class SpanSource : public memtrack::pipeline::EventSource {
 public:
  SpanSource(const std::vector<Event>& events, std::size_t block) : events_(events), block_(block) {}
  std::size_t read(std::span<Event> out) override {
    const std::size_t n = std::min({out.size(), block_, events_.size() - pos_});
    std::copy_n(events_.begin() + static_cast<std::ptrdiff_t>(pos_), n, out.begin());
    pos_ += n;
    return n;
  }
  memtrack::codec::Status status() const override { return {}; }

 private:
  const std::vector<Event>& events_;
  std::size_t block_;
  std::size_t pos_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  memtrack::fuzz::InputReader in(data, size);
  const std::size_t frame_events = 1 + in.byte() % 64;
  static constexpr std::array<int, 4> kLevels = {memtrack::codec::kDefaultLevel, -1, 1, 3};
  const std::uint8_t options = in.byte();
  const int level = kLevels[options % kLevels.size()];
  const bool with_skippable = (options & 0x10) != 0;
  const std::size_t block = 1 + in.byte() % 100;

  std::vector<Event> events;
  while (!in.empty() && events.size() < 4096) events.push_back(next_event(in));

  auto bytes = memtrack::fuzz::encode_frames(events, frame_events, level);

  memtrack::pipeline::EncoderOptions pipeline_options;
  pipeline_options.workers = 1u + ((options >> 5) & 3u);
  pipeline_options.max_in_flight = (options & 0x80) != 0 ? 3 : 1;
  pipeline_options.frame_events = frame_events;
  pipeline_options.level = level;
  pipeline_options.write_seek_table = false;  // compared with the bare frames; the index has its own tests
  memtrack::pipeline::MemorySink sink;
  SpanSource source(events, block);
  const auto encoded = memtrack::pipeline::encode_stream(source, sink, pipeline_options);
  FUZZ_CHECK(encoded.is_ok(), "%s", encoded.message().c_str());
  FUZZ_CHECK(sink.bytes() == bytes, "pipeline (%u workers, K %zu) wrote %zu bytes, single-threaded %zu",
             pipeline_options.workers, pipeline_options.max_in_flight, sink.bytes().size(), bytes.size());
  if (with_skippable) {
    // Magic 0x184D2A5E, 3 bytes of payload: standard decoders, and ours, pass over it.
    const unsigned char skippable[] = {0x5e, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 'm', 't', 0};
    for (unsigned char b : skippable) bytes.push_back(static_cast<std::byte>(b));
  }

  const auto d = memtrack::fuzz::decode_all(bytes, block);
  FUZZ_CHECK(d.status.is_ok(), "%s", d.status.message().c_str());
  FUZZ_CHECK(d.events == events, "decoded %zu events, encoded %zu", d.events.size(), events.size());
  const std::size_t frames = events.empty() ? 1 : (events.size() + frame_events - 1) / frame_events;
  FUZZ_CHECK(d.progress.frames == frames, "%llu frames, expected %zu",
             static_cast<unsigned long long>(d.progress.frames), frames);
  FUZZ_CHECK(d.progress.skippable_frames == (with_skippable ? 1u : 0u), "skippable frames: %llu",
             static_cast<unsigned long long>(d.progress.skippable_frames));
  return 0;
}
