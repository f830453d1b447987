// Property: CompactFrameDecoder on any content never crashes or reads past it, appends nothing when it
// fails, and is consistent: what it decodes, encoded again and decoded, is the same events; and events ->
// CompactFrameEncoder -> CompactFrameDecoder gives exactly what the msgpack encoding of them gives back.
//
// The input's first byte picks the mode. Even: the rest is the content after the magic and version (so the
// fuzzer is in the columns from its first mutation), version 1 + (mode >> 1) % 5 (1 to 5). Odd: the rest is a recipe of
// events (as in frame_round_trip_fuzz), each with a call stack id, round-tripped (with the stacks in the frame,
// version 5's stack section, when mode bit 6 is set: the decoder must give back every id), then the encoded
// content damaged at input-chosen bytes and decoded.
#include <string>

#include "fuzz/fuzz_common.h"
#include "memtrack/codec/compact.h"
#include "memtrack/codec/msgpack_decoder.h"
#include "memtrack/codec/raw_record.h"

namespace {

using memtrack::codec::CompactFrameDecoder;
using memtrack::codec::CompactFrameEncoder;
using memtrack::codec::Event;
using memtrack::codec::EventKind;

Event next_event(memtrack::fuzz::InputReader& in) {
  Event e;
  const std::uint8_t control = in.byte();
  e.kind = static_cast<EventKind>(1 + control % 8);
  // Few distinct threads and addresses unless the input asks for more, so references are taken.
  e.pid = static_cast<std::int32_t>(static_cast<std::uint32_t>((control & 0x40) ? in.varint() : in.byte() % 3));
  e.tid = static_cast<std::int32_t>(static_cast<std::uint32_t>((control & 0x20) ? in.varint() : in.byte() % 3));
  e.timestamp = in.varint();
  e.addr = (control & 0x10) ? in.varint() : 0x1000 + (in.byte() % 8) * 16;
  if (e.kind != EventKind::Free) e.size = in.varint();
  if (e.kind == EventKind::Realloc && (control & 0x80) != 0) {
    e.old_addr = (control & 0x08) ? in.varint() : 0x1000 + (in.byte() % 8) * 16;
    e.flags = memtrack::codec::kFlagHasOldAddr;
  }
  // A few sites unless the input asks for any id.
  const std::uint8_t site = in.byte();
  e.stack = (site & 0x80) != 0 ? static_cast<std::uint32_t>(in.varint()) : site % 5;
  return e;
}

std::vector<Event> through_msgpack(const std::vector<Event>& events) {
  memtrack::codec::FrameSerializer serializer(events.size());
  const auto bytes = serializer.serialize(events);
  std::vector<Event> out;
  std::string error;
  for (std::size_t pos = 0; pos < bytes.size();) {
    Event e;
    FUZZ_CHECK(
        memtrack::codec::parse_event(bytes.data(), bytes.size(), pos, e, error) == memtrack::codec::ParseResult::ok,
        "%s", error.c_str());
    out.push_back(e);
  }
  return out;
}

// Decodes `content`; on success checks the events and that they encode and decode to themselves.
void decode_checked(std::span<const std::byte> content) {
  CompactFrameDecoder decoder;
  std::vector<Event> out(1);  // one event already there: a failure must leave it alone
  memtrack::codec::FrameStacks stacks;
  const memtrack::codec::Status s = decoder.decode(content, out, &stacks);
  if (!s.is_ok()) {
    FUZZ_CHECK(out.size() == 1, "a failed decode left %zu events", out.size());
    FUZZ_CHECK(!stacks.present && stacks.ids.empty(), "a failed decode gave stacks");
    FUZZ_CHECK(s.message().rfind("compact content at byte ", 0) == 0, "message '%s'", s.message().c_str());
    return;
  }
  out.erase(out.begin());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const memtrack::codec::Status v = memtrack::codec::validate_record(out[i], i);
    FUZZ_CHECK(v.is_ok(), "decoded an invalid event: %s", v.message().c_str());
  }
  for (const Event& e : out) FUZZ_CHECK(e.stack == 0, "a decoded event has a stack of its own");
  FUZZ_CHECK(!stacks.present || stacks.ids.size() == out.size(), "%zu stack ids for %zu events", stacks.ids.size(),
             out.size());
  if (out.empty()) return;
  if (stacks.present)
    for (std::size_t i = 0; i < out.size(); ++i) out[i].stack = stacks.ids[i];
  CompactFrameEncoder encoder(out.size());
  std::vector<Event> again;
  memtrack::codec::FrameStacks stacks_again;
  const memtrack::codec::Status s2 =
      decoder.decode(stacks.present ? encoder.encode(out, stacks.first_event) : encoder.encode(out), again,
                     &stacks_again);
  for (Event& e : out) e.stack = 0;
  FUZZ_CHECK(s2.is_ok() && again == out, "re-encoded events decode differently: %s", s2.message().c_str());
  FUZZ_CHECK(stacks_again.present == stacks.present && stacks_again.first_event == stacks.first_event &&
                 stacks_again.ids == stacks.ids,
             "re-encoded stacks decode differently");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  memtrack::fuzz::InputReader in(data, size);
  const std::uint8_t mode = in.byte();
  if ((mode & 1) == 0) {
    std::vector<std::byte> content(std::begin(memtrack::codec::kCompactMagic),
                                   std::end(memtrack::codec::kCompactMagic));
    content.push_back(std::byte{static_cast<std::uint8_t>(1 + (mode >> 1) % 5)});
    const auto rest = memtrack::fuzz::as_bytes(data, size).subspan(size == 0 ? 0 : 1);
    content.insert(content.end(), rest.begin(), rest.end());
    decode_checked(content);
    return 0;
  }
  std::vector<Event> events;
  const std::size_t limit = 1 + in.byte() * 16u;
  while (!in.empty() && events.size() < limit) events.push_back(next_event(in));
  if (events.empty()) return 0;
  const bool with_stacks = (mode & 0x40) != 0;
  const std::uint64_t first_event = with_stacks ? in.varint() : 0;
  CompactFrameEncoder encoder(events.size());
  const auto encoded = with_stacks ? encoder.encode(events, first_event) : encoder.encode(events);
  std::vector<std::byte> content(encoded.begin(), encoded.end());
  FUZZ_CHECK(content.size() <= CompactFrameEncoder::output_bound(events.size()), "content above its bound");
  CompactFrameDecoder decoder;
  std::vector<Event> out;
  memtrack::codec::FrameStacks stacks;
  const memtrack::codec::Status s = decoder.decode(content, out, &stacks);
  FUZZ_CHECK(s.is_ok(), "our own content fails: %s", s.message().c_str());
  FUZZ_CHECK(stacks.present == with_stacks, "stacks %s", stacks.present ? "given without any" : "lost");
  if (with_stacks) {
    FUZZ_CHECK(stacks.first_event == first_event && stacks.ids.size() == events.size(), "stacks' frame differs");
    for (std::size_t i = 0; i < events.size(); ++i)
      FUZZ_CHECK(stacks.ids[i] == events[i].stack, "event %zu: stack %u, not %u", i, stacks.ids[i], events[i].stack);
  }
  for (Event& e : events) e.stack = 0;  // the msgpack map does not carry it
  FUZZ_CHECK(out == through_msgpack(events), "compact and msgpack give different events");
  // Damage: (offset, byte) pairs from what is left of the input, or a cut.
  const std::uint8_t damage = static_cast<std::uint8_t>(mode >> 1);
  if (damage % 4 == 1) content.resize(content.size() * in.byte() / 256);
  for (unsigned i = 0; i < damage % 8 && content.size() > 5; ++i) {  // a cut may leave less than the header
    const std::size_t at = 5 + ((std::size_t{in.byte()} << 8) | in.byte()) % (content.size() - 5 + 1);
    if (at < content.size()) content[at] = static_cast<std::byte>(in.byte());
  }
  decode_checked(content);
  return 0;
}
