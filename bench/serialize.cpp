// Serialization of one 65,536-event realistic frame to msgpack, beside memcpy of the same output bytes.
// BM_Serialize_Frame runs codec::FrameSerializer, the serializer the pipeline's encode stage runs on every
// frame (pipeline/src/stream_encoder.cpp, FrameSlot::serializer), so the row is the product's cost.
#include <benchmark/benchmark.h>

#include <cstring>
#include <msgpack.hpp>
#include <vector>

#include "bench_common.h"
#include "memtrack/codec/msgpack_encoder.h"

namespace {

namespace bench = memtrack::bench;

using memtrack::codec::Event;

using bench::kFrameEvents;

// The first frame of the realistic workload (bench_common.h).
std::span<const Event> realistic_frame() { return bench::workload(kFrameEvents); }

void BM_Serialize_Frame(benchmark::State& state) {
  const auto events = realistic_frame();
  memtrack::codec::FrameSerializer serializer(kFrameEvents);
  std::size_t bytes = 0;
  for (auto _ : state) {
    auto out = serializer.serialize(events);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
    bytes = out.size();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kFrameEvents));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["bytes_per_event"] = static_cast<double>(bytes) / kFrameEvents;
}
BENCHMARK(BM_Serialize_Frame);

// The comparison row behind codec's direct writer: the same bytes through msgpack-c's packer (keys as
// constant writes, integers through pack_int32/pack_uint64). Kept so the choice can be re-measured.
struct RawWriter {
  char* cursor;
  void write(const char* data, std::size_t size) {
    std::memcpy(cursor, data, size);
    cursor += size;
  }
};

std::size_t encode_with_packer(const Event& e, char* out) {
  using memtrack::codec::EventKind;
  RawWriter w{out};
  msgpack::packer<RawWriter> pk(w);
  const bool is_free = e.kind == EventKind::Free;
  const bool with_old = e.kind == EventKind::Realloc && e.has_old_addr();
  const char header = static_cast<char>(0x85 + !is_free + with_old);
  w.write(&header, 1);
  w.write("\xa3pid", 4);
  pk.pack_int32(e.pid);
  w.write("\xa3tid", 4);
  pk.pack_int32(e.tid);
  w.write("\xa9timestamp", 10);
  pk.pack_uint64(e.timestamp);
  w.write(
      "\xa4"
      "addr",
      5);
  pk.pack_uint64(e.addr);
  w.write("\xa4type", 5);
  const auto name = memtrack::codec::kind_name(e.kind);
  pk.pack_str(static_cast<uint32_t>(name.size()));
  pk.pack_str_body(name.data(), static_cast<uint32_t>(name.size()));
  if (with_old) {
    w.write("\xa8old_addr", 9);
    pk.pack_uint64(e.old_addr);
  }
  if (!is_free) {
    w.write("\xa4size", 5);
    pk.pack_uint64(e.size);
  }
  return static_cast<std::size_t>(w.cursor - out);
}

void BM_Serialize_Frame_MsgpackPacker(benchmark::State& state) {
  const auto events = realistic_frame();
  std::vector<char> buffer(kFrameEvents * memtrack::codec::kMaxEncodedEventBytes);
  std::size_t bytes = 0;
  for (auto _ : state) {
    char* p = buffer.data();
    for (const Event& e : events) p += encode_with_packer(e, p);
    benchmark::DoNotOptimize(buffer.data());
    benchmark::ClobberMemory();
    bytes = static_cast<std::size_t>(p - buffer.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kFrameEvents));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_Serialize_Frame_MsgpackPacker);

// The floor: moving the same number of output bytes without encoding anything.
void BM_Floor_MemcpySerializedFrame(benchmark::State& state) {
  memtrack::codec::FrameSerializer serializer(kFrameEvents);
  const auto encoded = serializer.serialize(realistic_frame());
  std::vector<std::byte> src(encoded.begin(), encoded.end()), dst(src.size());
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), src.size());
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kFrameEvents));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * src.size()));
}
BENCHMARK(BM_Floor_MemcpySerializedFrame);

}  // namespace
