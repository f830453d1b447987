// What every benchmark file shares: the workload, its sizes (full or smoke), and the null sink and memory
// source the pipeline benchmarks drive the encoder with.
//
// Sizes. A full run uses streams long enough for steady state: the pipeline throughput and peak-memory
// streams are 64 frames (~4.2M events, as in bench/encode_rss.sh), so every one of the K slots is reused many
// times. With MEMTRACK_BENCH_SMOKE=1 in the environment (the ctest `bench` label) every stream is a few
// frames, so the whole suite runs in seconds and only proves that it still works.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>

#include "memtrack/codec/event.h"
#include "memtrack/codec/status.h"
#include "memtrack/pipeline/sink.h"
#include "memtrack/pipeline/stream_encoder.h"

namespace memtrack::bench {

inline constexpr std::size_t kFrameEvents = 65536;  // the encoder's default frame, and CodSpeed's

bool smoke();                        // MEMTRACK_BENCH_SMOKE is set to a non-empty value other than "0"
std::size_t stream_events();         // the pipeline throughput stream: 64 frames, smoke 4
std::size_t peak_stream_events();    // the peak-memory stream: 64 frames, smoke 4
std::size_t decode_stream_events();  // the decoded artifact: 16 frames, smoke 2

// The first n events of the realistic workload (seed 1), generated once and shared by every benchmark.
// The events live outside any benchmark's measured memory: they are the input, like CodSpeed's input Vec.
std::span<const codec::Event> workload(std::size_t n);

// Takes bytes and keeps nothing, so the output does not count as encoder memory or time.
struct NullSink : pipeline::Sink {
  codec::Status write(std::span<const std::byte>) override { return {}; }
};

// The events from memory, in reads as large as the encoder asks for (it asks for the rest of a slot).
class MemorySource : public pipeline::EventSource {
 public:
  explicit MemorySource(std::span<const codec::Event> events) : events_(events) {}
  std::size_t read(std::span<codec::Event> out) override {
    const std::size_t n = std::min(out.size(), events_.size() - pos_);
    std::copy_n(events_.begin() + static_cast<std::ptrdiff_t>(pos_), n, out.begin());
    pos_ += n;
    return n;
  }
  codec::Status status() const override { return {}; }

 private:
  std::span<const codec::Event> events_;
  std::size_t pos_ = 0;
};

}  // namespace memtrack::bench
