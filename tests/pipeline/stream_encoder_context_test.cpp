// EncoderOptions::frame_context and ::context (stream_encoder.h): the context frames the encoder interleaves
// leave the data frames byte-identical to an encoding of the same events without them (docs/FORMAT.md,
// "Context section: stacks and modules": data frames are unchanged by stacks), every frame is in the index,
// and each data frame is followed by its frame_context bytes.
#include <gtest/gtest.h>
#include <zstd.h>

#include <cstring>
#include <vector>

#include "memtrack/codec/context.h"
#include "memtrack/pipeline/context_channel.h"
#include "memtrack/pipeline/sink.h"
#include "memtrack/pipeline/stream_encoder.h"

namespace {

using namespace memtrack;

std::vector<codec::Event> events_with_stacks(std::size_t n) {
  std::vector<codec::Event> out;
  for (std::size_t i = 0; i < n; ++i) {
    codec::Event e = codec::make_event(i % 3 == 0 ? codec::EventKind::Free : codec::EventKind::Malloc, 7,
                                       8 + static_cast<int>(i % 2), 1000 + i, 0x10000 + 64 * (i % 97), 32 + i % 5);
    if (e.kind == codec::EventKind::Free) e.size = 0;
    e.stack = e.kind == codec::EventKind::Free ? 0 : static_cast<std::uint32_t>(1 + i % 11);
    out.push_back(e);
  }
  return out;
}

// Splits an artifact into its frames (zstd frames and skippable frames), in order; the trailing index too.
std::vector<std::vector<std::byte>> frames_of(const std::vector<std::byte>& bytes) {
  std::vector<std::vector<std::byte>> frames;
  std::size_t at = 0;
  while (at < bytes.size()) {
    const std::size_t size = ZSTD_findFrameCompressedSize(bytes.data() + at, bytes.size() - at);
    if (ZSTD_isError(size)) throw std::runtime_error("not a frame");
    frames.emplace_back(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                        bytes.begin() + static_cast<std::ptrdiff_t>(at + size));
    at += size;
  }
  return frames;
}

TEST(EncoderContext, DataFramesAreByteIdenticalWithAndWithoutContextFrames) {
  const std::vector<codec::Event> events = events_with_stacks(10000);
  pipeline::EncoderOptions plain;
  plain.frame_events = 1000;
  plain.workers = 2;
  pipeline::MemorySink plain_sink;
  {
    pipeline::StreamEncoder enc(plain_sink, plain);
    std::vector<codec::Event> no_stacks = events;
    for (codec::Event& e : no_stacks) e.stack = 0;
    ASSERT_TRUE(enc.push(no_stacks).is_ok());
    ASSERT_TRUE(enc.finish().is_ok());
  }

  pipeline::ContextChannel channel;
  channel.add(codec::StreamEnd{1, 2, true});
  pipeline::EncoderOptions with = plain;
  with.context = &channel;
  with.frame_context = [](std::span<const codec::Event> evs, std::uint64_t first, std::vector<std::byte>& out) {
    codec::EventStacks r;
    r.first_event = first;
    for (const codec::Event& e : evs) r.ids.push_back(e.stack);
    codec::FrameCompressor compressor(3);
    std::vector<std::byte> scratch;
    const std::vector<codec::ContextRecord> records{r};
    (void)codec::encode_context_frame(records, compressor, scratch, out);
  };
  pipeline::MemorySink sink;
  {
    pipeline::StreamEncoder enc(sink, with);
    ASSERT_TRUE(enc.push(events).is_ok());
    ASSERT_TRUE(enc.finish().is_ok());
  }

  const auto a = frames_of(plain_sink.bytes());
  const auto b = frames_of(sink.bytes());
  std::vector<std::vector<std::byte>> data;
  std::vector<codec::ContextRecord> context;
  std::size_t expected_first = 0;
  for (std::size_t i = 0; i + 1 < b.size(); ++i) {
    if (codec::is_context_frame(b[i])) {
      std::vector<codec::ContextRecord> records;
      ASSERT_TRUE(codec::decode_context_frame(b[i], 0, records).is_ok());
      for (const codec::ContextRecord& r : records) {
        if (const auto* s = std::get_if<codec::EventStacks>(&r)) {
          // Right after its data frame: the frame it describes is the last data frame seen.
          EXPECT_EQ(s->first_event, expected_first);
          ASSERT_EQ(s->ids.size(), 1000u);
          for (std::size_t k = 0; k < s->ids.size(); ++k) EXPECT_EQ(s->ids[k], events[s->first_event + k].stack);
        }
        context.push_back(r);
      }
    } else {
      data.push_back(b[i]);
      expected_first = (data.size() - 1) * 1000;
    }
  }
  // The plain artifact: its data frames, then its index.
  ASSERT_EQ(data.size() + 1, a.size());
  for (std::size_t i = 0; i < data.size(); ++i) EXPECT_EQ(data[i], a[i]) << "data frame " << i;
  // One EventStacks per data frame, and the channel's record once.
  std::size_t stacks = 0, ends = 0;
  for (const codec::ContextRecord& r : context) {
    stacks += std::holds_alternative<codec::EventStacks>(r);
    ends += std::holds_alternative<codec::StreamEnd>(r);
  }
  EXPECT_EQ(stacks, data.size());
  EXPECT_EQ(ends, 1u);
}

}  // namespace
