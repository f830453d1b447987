#include "memtrack/codec/msgpack_encoder.h"

#include <array>
#include <bit>
#include <cstring>

namespace memtrack::codec {
namespace {

// A direct msgpack writer for the one map shape we emit. msgpack-c's packer produces the same bytes but ran
// at over twice the cost of this writer in bench/serialize.cpp (BM_Serialize_Frame_MsgpackPacker, kept there as
// the comparison row): every integer and key went through a non-inlined write of variable size. Here keys
// are fixed-size stores of constants and integers pick rmp's smallest encoding inline.
// Byte identity with rmp_serde is guarded by tests/codec/msgpack_encoder_test.cpp.

inline std::uint16_t to_big_endian(std::uint16_t v) { return __builtin_bswap16(v); }
inline std::uint32_t to_big_endian(std::uint32_t v) { return __builtin_bswap32(v); }
inline std::uint64_t to_big_endian(std::uint64_t v) { return __builtin_bswap64(v); }
static_assert(std::endian::native == std::endian::little, "to_big_endian assumes a little-endian host");

template <typename T>
inline std::byte* store_be(std::byte* p, T v) {
  v = to_big_endian(v);
  std::memcpy(p, &v, sizeof v);
  return p + sizeof v;
}

template <std::size_t N>
inline std::byte* put(std::byte* p, const char (&bytes)[N]) {
  std::memcpy(p, bytes, N - 1);
  return p + (N - 1);
}

// Unsigned (and non-negative signed) values: positive fixint, or cc/cd/ce/cf with the smallest width.
// Two ways to pick the width, both giving rmp's bytes:
// - put_uint: a ladder of branches. For fields whose width hardly changes from one event to the next
//   (pid, tid, timestamp, addr in real traces) every branch is predicted and this is the cheapest.
// - put_uint_branchless: a table lookup. For `size`, whose width changes at random between events, a
//   mispredicted branch would cost more than the encoding. Stores 9 bytes (the slack covers it).
inline std::byte* put_uint(std::byte* p, std::uint64_t v) {
  if (v > 0xffffffff) {
    *p = std::byte{0xcf};
    return store_be(p + 1, v);
  }
  if (v > 0xffff) {
    *p = std::byte{0xce};
    return store_be(p + 1, static_cast<std::uint32_t>(v));
  }
  if (v > 0xff) {
    *p = std::byte{0xcd};
    return store_be(p + 1, static_cast<std::uint16_t>(v));
  }
  if (v > 0x7f) {
    p[0] = std::byte{0xcc};
    p[1] = static_cast<std::byte>(v);
    return p + 2;
  }
  *p = static_cast<std::byte>(v);
  return p + 1;
}

struct UintClass {
  std::uint8_t marker;  // 0 for positive fixint
  std::uint8_t width;   // bytes after the marker
};
constexpr auto kUintClasses = [] {
  std::array<UintClass, 65> t{};
  for (unsigned bits = 0; bits <= 64; ++bits) {
    if (bits <= 7)
      t[bits] = {0x00, 0};
    else if (bits <= 8)
      t[bits] = {0xcc, 1};
    else if (bits <= 16)
      t[bits] = {0xcd, 2};
    else if (bits <= 32)
      t[bits] = {0xce, 4};
    else
      t[bits] = {0xcf, 8};
  }
  return t;
}();

inline std::byte* put_uint_branchless(std::byte* p, std::uint64_t v) {
  const unsigned bits = 64u - static_cast<unsigned>(__builtin_clzll(v | 1));  // bit width, 1 for v == 0
  const UintClass c = kUintClasses[bits];
  const auto fixint_mask = static_cast<std::uint8_t>(-static_cast<int>(c.width == 0));  // 0xff for fixint
  *p = static_cast<std::byte>(c.marker | (static_cast<std::uint8_t>(v) & fixint_mask));
  store_be(p + 1, v << ((64 - 8 * c.width) & 63));  // width 8: the whole value; width 0: ignored bytes
  return p + 1 + c.width;
}

// Negative values: negative fixint, or d0/d1/d2 with the smallest width.
inline std::byte* put_int32(std::byte* p, std::int32_t v) {
  if (v >= 0) return put_uint(p, static_cast<std::uint64_t>(v));
  if (v >= -32) {
    *p = static_cast<std::byte>(static_cast<std::uint8_t>(v));
    return p + 1;
  }
  if (v >= -128) {
    p[0] = std::byte{0xd0};
    p[1] = static_cast<std::byte>(static_cast<std::uint8_t>(v));
    return p + 2;
  }
  if (v >= -32768) {
    *p = std::byte{0xd1};
    return store_be(p + 1, static_cast<std::uint16_t>(v));
  }
  *p = std::byte{0xd2};
  return store_be(p + 1, static_cast<std::uint32_t>(v));
}

// `"type": "<variant>"` for each kind, padded to a fixed 24-byte copy so writing it needs no branch on the
// kind; `length` says how far to advance. The 24-byte store can pass the event's end, which is why buffers
// have kEncoderSlackBytes of slack.
struct TypeEntry {
  char bytes[24];
  std::size_t length;
};
constexpr TypeEntry kTypes[9] = {
    {"", 0},
    {"\xa4type\xa6Malloc", 12},
    {"\xa4type\xa4"
     "Free",
     10},
    {"\xa4type\xa6"
     "Calloc",
     12},
    {"\xa4type\xa7Realloc", 13},
    {"\xa4type\xac"
     "AlignedAlloc",
     18},
    {"\xa4type\xa4Mmap", 10},
    {"\xa4type\xa6Munmap", 12},
    {"\xa4type\xa3"
     "Brk",
     9},
};

// Defined here so the frame loop inlines it.
inline std::size_t encode_one(const Event& e, std::byte* out) {
  const bool is_free = e.kind == EventKind::Free;
  const bool with_old = e.kind == EventKind::Realloc && e.has_old_addr();
  std::byte* p = out;
  *p++ = static_cast<std::byte>(0x85 + !is_free + with_old);  // fixmap with the exact entry count
  p = put(p, "\xa3pid");
  p = put_int32(p, e.pid);
  p = put(p, "\xa3tid");
  p = put_int32(p, e.tid);
  p = put(p, "\xa9timestamp");
  p = put_uint(p, e.timestamp);
  p = put(p,
          "\xa4"
          "addr");
  p = put_uint(p, e.addr);
  const TypeEntry& type = kTypes[static_cast<std::uint8_t>(e.kind) <= 8 ? static_cast<std::uint8_t>(e.kind) : 0];
  std::memcpy(p, type.bytes, sizeof type.bytes);
  p += type.length;
  if (with_old) {  // rare (reallocs only), so predicted
    p = put_uint(put(p, "\xa8old_addr"), e.old_addr);
  }
  // Written for every event and kept or dropped by how far the cursor moves: whether an event is a Free is
  // as unpredictable as a coin toss in real traces.
  std::byte* const end = put_uint_branchless(put(p, "\xa4size"), e.size);
  p = is_free ? p : end;
  return static_cast<std::size_t>(p - out);
}

}  // namespace

std::size_t encode_event(const Event& e, std::byte* out) { return encode_one(e, out); }

FrameSerializer::FrameSerializer(std::size_t max_events)
    : max_events_(max_events), buffer_(max_events * kMaxEncodedEventBytes + kEncoderSlackBytes) {}

std::span<const std::byte> FrameSerializer::serialize(std::span<const Event> events) {
  std::byte* cursor = buffer_.data();
  for (const Event& e : events) cursor += encode_one(e, cursor);
  return {buffer_.data(), static_cast<std::size_t>(cursor - buffer_.data())};
}

}  // namespace memtrack::codec
