#include "memtrack/codec/msgpack_encoder.h"

#include <cstring>
#include <msgpack.hpp>

namespace memtrack::codec {
namespace {

// msgpack-c's packer writes through any type with write(const char*, size_t). This one writes into memory
// sized in advance (kMaxEncodedEventBytes per event), so there is no bounds check or growth on the hot path.
struct RawWriter {
  std::byte* cursor;
  void write(const char* data, std::size_t size) {
    std::memcpy(cursor, data, size);
    cursor += size;
  }
};

// Keys and "type" values never change, so their msgpack bytes are written as constants (the fixmap header
// is fused with the first key). Everything variable goes through the packer, which picks the smallest
// integer encoding exactly as rmp does.
template <std::size_t N>
void put(RawWriter& w, const char (&bytes)[N]) {
  w.write(bytes, N - 1);
}

constexpr char kMap5Pid[] = "\x85\xa3pid";
constexpr char kMap6Pid[] = "\x86\xa3pid";
constexpr char kMap7Pid[] = "\x87\xa3pid";
constexpr char kTid[] = "\xa3tid";
constexpr char kTimestamp[] = "\xa9timestamp";
constexpr char kAddr[] =
    "\xa4"
    "addr";
constexpr char kOldAddr[] = "\xa8old_addr";
constexpr char kSize[] = "\xa4size";

void put_type(RawWriter& w, EventKind kind) {
  switch (kind) {
    case EventKind::Malloc:
      put(w, "\xa4type\xa6Malloc");
      return;
    case EventKind::Free:
      put(w,
          "\xa4type\xa4"
          "Free");
      return;
    case EventKind::Calloc:
      put(w,
          "\xa4type\xa6"
          "Calloc");
      return;
    case EventKind::Realloc:
      put(w, "\xa4type\xa7Realloc");
      return;
    case EventKind::AlignedAlloc:
      put(w,
          "\xa4type\xac"
          "AlignedAlloc");
      return;
    case EventKind::Mmap:
      put(w, "\xa4type\xa4Mmap");
      return;
    case EventKind::Munmap:
      put(w, "\xa4type\xa6Munmap");
      return;
    case EventKind::Brk:
      put(w,
          "\xa4type\xa3"
          "Brk");
      return;
  }
}

}  // namespace

std::size_t encode_event(const Event& e, std::byte* out) {
  RawWriter w{out};
  msgpack::packer<RawWriter> pk(w);
  const bool with_old = e.kind == EventKind::Realloc && e.has_old_addr();
  if (e.kind == EventKind::Free) {
    put(w, kMap5Pid);
  } else if (with_old) {
    put(w, kMap7Pid);
  } else {
    put(w, kMap6Pid);
  }
  pk.pack_int32(e.pid);
  put(w, kTid);
  pk.pack_int32(e.tid);
  put(w, kTimestamp);
  pk.pack_uint64(e.timestamp);
  put(w, kAddr);
  pk.pack_uint64(e.addr);
  put_type(w, e.kind);
  if (e.kind != EventKind::Free) {
    if (with_old) {
      put(w, kOldAddr);
      pk.pack_uint64(e.old_addr);
    }
    put(w, kSize);
    pk.pack_uint64(e.size);
  }
  return static_cast<std::size_t>(w.cursor - out);
}

FrameSerializer::FrameSerializer(std::size_t max_events)
    : max_events_(max_events), buffer_(max_events * kMaxEncodedEventBytes) {}

std::span<const std::byte> FrameSerializer::serialize(std::span<const Event> events) {
  std::byte* cursor = buffer_.data();
  for (const Event& e : events) cursor += encode_event(e, cursor);
  return {buffer_.data(), static_cast<std::size_t>(cursor - buffer_.data())};
}

}  // namespace memtrack::codec
