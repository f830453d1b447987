// One 65,536-event realistic frame, stage by stage on one thread:
//   BM_Compress_Frame/level:L  zstd alone on the frame's msgpack bytes, at the levels worth choosing from
//                              (-5 is the default); floor: BM_Floor_MemcpySerializedFrame (serialize.cpp)
//   BM_Encode_Frame            the encoder's per-frame work end to end: serialize + compress at the default
//                              level; floor: BM_Compress_Frame/level:-5, zstd alone on the same bytes
//   BM_EncodeCompatible_Frame/level:L and BM_EncodeCompact_Frame/level:L
//                              serialize + compress in each encoding at the same level (docs/FORMAT.md,
//                              "Compact data frames"): the CPU ratio and bytes per event from one run
//   BM_DecodeCompatible_Frame and BM_DecodeCompact_Frame
//                              FrameDecoder on the frame of each (level -2): decompress, verify, parse
#include <benchmark/benchmark.h>

#include <vector>

#include "bench_common.h"
#include "memtrack/codec/compact.h"
#include "memtrack/codec/frame_compressor.h"
#include "memtrack/codec/frame_decoder.h"
#include "memtrack/codec/msgpack_encoder.h"

namespace {

namespace bench = memtrack::bench;
namespace codec = memtrack::codec;
using bench::kFrameEvents;

void report(benchmark::State& state, std::size_t msgpack_bytes, std::size_t compressed_bytes) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kFrameEvents));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * msgpack_bytes));
  state.counters["msgpack_bytes_per_event"] = static_cast<double>(msgpack_bytes) / kFrameEvents;
  state.counters["compressed_bytes_per_event"] = static_cast<double>(compressed_bytes) / kFrameEvents;
}

void BM_Compress_Frame(benchmark::State& state) {
  codec::FrameSerializer serializer(kFrameEvents);
  const auto msgpack = serializer.serialize(bench::workload(kFrameEvents));
  codec::FrameCompressor compressor(static_cast<int>(state.range(0)));
  std::vector<std::byte> out(codec::FrameCompressor::bound(msgpack.size()));
  std::size_t compressed = 0;
  for (auto _ : state) {
    codec::Status status;
    compressed = compressor.compress(msgpack, out, status);
    if (!status.is_ok()) state.SkipWithError(status.message().c_str());
    benchmark::DoNotOptimize(out.data());
  }
  report(state, msgpack.size(), compressed);
}
BENCHMARK(BM_Compress_Frame)->ArgName("level")->Arg(-5)->Arg(-2)->Arg(-1)->Arg(1)->Arg(3)->Unit(benchmark::kMillisecond);

// What one slot of the pipeline does per frame, with the same reused serializer and compressor.
void BM_Encode_Frame(benchmark::State& state) {
  const auto events = bench::workload(kFrameEvents);
  codec::FrameSerializer serializer(kFrameEvents);
  codec::FrameCompressor compressor;
  std::vector<std::byte> out(codec::FrameCompressor::bound(serializer.capacity_bytes()));
  std::size_t msgpack_bytes = 0;
  std::size_t compressed = 0;
  for (auto _ : state) {
    const auto msgpack = serializer.serialize(events);
    codec::Status status;
    compressed = compressor.compress(msgpack, out, status);
    if (!status.is_ok()) state.SkipWithError(status.message().c_str());
    benchmark::DoNotOptimize(out.data());
    msgpack_bytes = msgpack.size();
  }
  report(state, msgpack_bytes, compressed);
}
BENCHMARK(BM_Encode_Frame)->Unit(benchmark::kMillisecond);

template <bool kCompact>
void encode_frame(benchmark::State& state) {
  const auto events = bench::workload(kFrameEvents);
  codec::FrameSerializer serializer(kFrameEvents);
  codec::CompactFrameEncoder compact(kFrameEvents);
  codec::FrameCompressor compressor(static_cast<int>(state.range(0)));
  std::vector<std::byte> out(codec::FrameCompressor::bound(serializer.capacity_bytes()));
  std::size_t content_bytes = 0;
  std::size_t compressed = 0;
  for (auto _ : state) {
    const auto content = kCompact ? compact.encode(events) : serializer.serialize(events);
    codec::Status status;
    compressed = compressor.compress(content, out, status);
    if (!status.is_ok()) state.SkipWithError(status.message().c_str());
    benchmark::DoNotOptimize(out.data());
    content_bytes = content.size();
  }
  report(state, content_bytes, compressed);
}
void BM_EncodeCompatible_Frame(benchmark::State& state) { encode_frame<false>(state); }
void BM_EncodeCompact_Frame(benchmark::State& state) { encode_frame<true>(state); }
BENCHMARK(BM_EncodeCompatible_Frame)->ArgName("level")->Arg(-5)->Arg(-2)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeCompact_Frame)->ArgName("level")->Arg(-5)->Arg(-2)->Arg(1)->Unit(benchmark::kMillisecond);

template <bool kCompact>
void decode_frame(benchmark::State& state) {
  const auto events = bench::workload(kFrameEvents);
  codec::FrameSerializer serializer(kFrameEvents);
  codec::CompactFrameEncoder compact(kFrameEvents);
  codec::FrameCompressor compressor(-2);
  const auto content = kCompact ? compact.encode(events) : serializer.serialize(events);
  std::vector<std::byte> frame(codec::FrameCompressor::bound(content.size()));
  codec::Status status;
  frame.resize(compressor.compress(content, frame, status));
  codec::FrameDecoder decoder;
  std::vector<codec::Event> out;
  out.reserve(kFrameEvents);
  for (auto _ : state) {
    out.clear();
    status = decoder.decode(frame, out);
    if (!status.is_ok()) state.SkipWithError(status.message().c_str());
    benchmark::DoNotOptimize(out.data());
  }
  report(state, content.size(), frame.size());
}
void BM_DecodeCompatible_Frame(benchmark::State& state) { decode_frame<false>(state); }
void BM_DecodeCompact_Frame(benchmark::State& state) { decode_frame<true>(state); }
BENCHMARK(BM_DecodeCompatible_Frame)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DecodeCompact_Frame)->Unit(benchmark::kMillisecond);

}  // namespace
