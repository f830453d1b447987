// Decoding an artifact of the realistic workload (16 frames of 65,536 events, ~1M events; 2 frames in smoke
// mode; bench_common.h) at the default level, with the frame index, beside zstd alone on the same bytes; and
// `memtrack stats` through the index on 1 and 2 threads.
//
// Ratios to read from one run:
//   BM_Decode_Artifact / BM_Floor_ZstdDecompress           goal: <= 2 (decoding within 2x of zstd alone)
//   BM_Stats_Indexed/threads:1 / BM_Stats_Indexed/threads:2 goal: >= 1.7 (needs two free cores; the
//   bound two cores allow is threads:1 / max(threads:1 / 2, BM_Stats_SerialStage))
#include <benchmark/benchmark.h>
#include <tbb/task_arena.h>
#include <zstd.h>

#include <cstring>
#include <stdexcept>
#include <vector>

#include "bench_common.h"
#include "memtrack/analysis/stats.h"
#include "memtrack/codec/artifact_decoder.h"
#include "memtrack/codec/byte_source.h"
#include "memtrack/codec/frame_compressor.h"
#include "memtrack/codec/msgpack_encoder.h"
#include "memtrack/codec/seek_table.h"

namespace {

using memtrack::codec::Event;
namespace codec = memtrack::codec;

using memtrack::bench::kFrameEvents;

struct Corpus {
  std::size_t events = 0;
  std::size_t msgpack_bytes = 0;
  std::vector<std::byte> artifact;  // data frames + seek table
  codec::SeekTable index;
};

const Corpus& corpus() {
  static const Corpus c = [] {
    const auto events = memtrack::bench::workload(memtrack::bench::decode_stream_events());
    Corpus out;
    out.events = events.size();
    codec::FrameSerializer serializer(kFrameEvents);
    codec::FrameCompressor compressor;
    codec::SeekTableBuilder table;
    std::vector<std::byte> buf(codec::FrameCompressor::bound(serializer.capacity_bytes()));
    for (std::size_t i = 0; i < events.size(); i += kFrameEvents) {
      const auto msgpack = serializer.serialize(events.subspan(i, std::min(kFrameEvents, events.size() - i)));
      codec::Status s;
      const std::size_t n = compressor.compress(msgpack, buf, s);
      if (!s.is_ok()) throw std::runtime_error(s.message());
      out.artifact.insert(out.artifact.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
      table.add(static_cast<std::uint32_t>(n), static_cast<std::uint32_t>(msgpack.size()));
      out.msgpack_bytes += msgpack.size();
    }
    const auto t = table.finish();
    out.artifact.insert(out.artifact.end(), t.begin(), t.end());
    const codec::Status s = codec::parse_seek_table(t, out.artifact.size(), out.index);
    if (!s.is_ok()) throw std::runtime_error(s.message());
    return out;
  }();
  return c;
}

void report(benchmark::State& state, const Corpus& c) {
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * c.events));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * c.msgpack_bytes));
  state.counters["frames"] = static_cast<double>(c.index.frames.size());
}

// Our sequential decoder, the path of `memtrack decode`: frames verified, msgpack parsed, events copied out.
void BM_Decode_Artifact(benchmark::State& state) {
  const Corpus& c = corpus();
  std::vector<Event> out(4096);
  for (auto _ : state) {
    codec::MemorySource source(c.artifact);
    codec::ArtifactDecoder decoder(source, "bench");
    std::size_t events = 0;
    while (const std::size_t n = decoder.next(out)) events += n;
    if (events != c.events || !decoder.status().is_ok()) state.SkipWithError("decode failed");
    benchmark::DoNotOptimize(out.data());
  }
  report(state, c);
}
BENCHMARK(BM_Decode_Artifact)->Unit(benchmark::kMillisecond);

// The floor: zstd alone over the same bytes into a reused buffer, nothing else.
void BM_Floor_ZstdDecompress(benchmark::State& state) {
  const Corpus& c = corpus();
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  std::vector<std::byte> out(256u << 10);
  for (auto _ : state) {
    ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
    ZSTD_inBuffer in{c.artifact.data(), c.artifact.size(), 0};
    std::size_t produced = 0;
    while (in.pos < in.size) {
      ZSTD_outBuffer o{out.data(), out.size(), 0};
      const std::size_t r = ZSTD_decompressStream(dctx, &o, &in);
      if (ZSTD_isError(r)) {
        state.SkipWithError(ZSTD_getErrorName(r));
        break;
      }
      produced += o.pos;
      benchmark::DoNotOptimize(out.data());
    }
    if (produced != c.msgpack_bytes) state.SkipWithError("size mismatch");
  }
  ZSTD_freeDCtx(dctx);
  report(state, c);
}
BENCHMARK(BM_Floor_ZstdDecompress)->Unit(benchmark::kMillisecond);

// `memtrack stats` through the index in a TBB arena of N threads (frames decoded and counted in parallel,
// the live heap fed in frame order).
void BM_Stats_Indexed(benchmark::State& state) {
  const Corpus& c = corpus();
  const auto threads = static_cast<int>(state.range(0));
  tbb::task_arena arena(threads);
  const memtrack::analysis::ReadAt read = [&](std::uint64_t offset, std::span<std::byte> out) {
    std::memcpy(out.data(), c.artifact.data() + offset, out.size());
    return codec::Status{};
  };
  for (auto _ : state) {
    memtrack::analysis::Stats s;
    arena.execute([&] { s = memtrack::analysis::compute_stats_indexed(c.index, read, "bench"); });
    if (s.counts.events != c.events || !s.status.is_ok()) state.SkipWithError("stats failed");
    benchmark::DoNotOptimize(s.heap.total_peak_bytes());
  }
  report(state, c);
}
BENCHMARK(BM_Stats_Indexed)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->MeasureProcessCPUTime()  // CPU column: all threads, so CPU / Time shows how many cores it kept busy
    ->Unit(benchmark::kMillisecond);

// The serial (in-order) stage of BM_Stats_Indexed alone: the live heap fed the already-decoded events frame
// by frame. With 2 threads the indexed stats cannot beat max(T1 / 2, this), so T1 / max(T1 / 2, this) is the
// speedup two free cores allow; measured here so the bound can be read even on a machine without them.
void BM_Stats_SerialStage(benchmark::State& state) {
  const Corpus& c = corpus();
  static const std::vector<Event> events = [&] {
    std::vector<Event> all;
    codec::MemorySource source(c.artifact);
    codec::ArtifactDecoder decoder(source, "bench");
    std::vector<Event> block(kFrameEvents);
    while (const std::size_t n = decoder.next(block)) all.insert(all.end(), block.begin(), block.begin() + n);
    return all;
  }();
  for (auto _ : state) {
    memtrack::analysis::LiveHeap heap;
    for (std::size_t i = 0; i < events.size(); i += kFrameEvents) {
      heap.add(std::span(events.data() + i, std::min(kFrameEvents, events.size() - i)));
    }
    benchmark::DoNotOptimize(heap.total_peak_bytes());
  }
  report(state, c);
}
BENCHMARK(BM_Stats_SerialStage)->Unit(benchmark::kMillisecond);

// The same without the index (sequential decoder, one thread): what an older artifact costs.
void BM_Stats_Sequential(benchmark::State& state) {
  const Corpus& c = corpus();
  for (auto _ : state) {
    codec::MemorySource source(c.artifact);
    const memtrack::analysis::Stats s = memtrack::analysis::compute_stats(source, "bench");
    if (s.counts.events != c.events || !s.status.is_ok()) state.SkipWithError("stats failed");
    benchmark::DoNotOptimize(s.heap.total_peak_bytes());
  }
  report(state, c);
}
BENCHMARK(BM_Stats_Sequential)->Unit(benchmark::kMillisecond);

}  // namespace
