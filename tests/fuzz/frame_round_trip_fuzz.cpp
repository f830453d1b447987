// Property: events -> our writer (FrameSerializer + FrameCompressor, frames of N events) -> ArtifactDecoder
// gives back exactly the events, whatever the events, N, the zstd level and the caller's block size, and
// with a skippable frame (metadata) after the data frames.
//
// The input is not an artifact: it is a recipe. Its first bytes choose N, the level and the block size; the
// rest is read as events with integers of every msgpack width, so every encoder branch is reached.
//
// TODO(pipeline): when memtrack::pipeline::encode_stream / StreamEncoder lands (issue 7 asks for "a random
// worker count"), take a worker count (1..4) and an in-flight cap from the input, encode the same events
// through the pipeline too, and check that its bytes equal this single-threaded encoding and decode to the
// events. Kept out for now so this target does not depend on the pipeline branch.
#include <array>

#include "fuzz/fuzz_common.h"

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
