#include "memtrack/codec/msgpack_encoder.h"

#include <array>
#include <bit>
#include <cstring>

#include "memtrack/codec/schema.h"
#include "msgpack_schema_internal.h"

namespace memtrack::codec {
namespace {

// A direct msgpack writer for the one map shape we emit, built from the schema (memtrack/codec/schema.h).
// msgpack-c's packer produces the same bytes but ran at over twice the cost of this writer in
// bench/serialize.cpp (BM_Serialize_Frame_MsgpackPacker, kept there as the comparison row): every integer and
// key went through a non-inlined write of variable size. Here keys are fixed-size stores of constants
// (computed from the schema at compile time) and integers pick rmp's smallest encoding inline.
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

template <schema::Field F>
inline std::byte* put_key(std::byte* p) {
  constexpr const msgpack_schema::FixStr& key = msgpack_schema::kKey<F>;
  std::memcpy(p, key.bytes.data(), key.size);
  return p + key.size;
}

// `"type": "<variant>"` for each kind, built from the schema and padded to a fixed 24-byte copy so writing
// it needs no branch on the kind; `length` says how far to advance. The 24-byte store can pass the event's
// end, which is why buffers have kEncoderSlackBytes of slack. The variant's key flags sit in the same entry,
// so one load per event gives the map's shape too. 32 bytes, aligned: indexing is a shift, the copy aligned.
struct alignas(32) TypeEntry {
  char bytes[24];
  std::uint8_t length;
  std::uint8_t map_header;     // fixmap of the keys every event of the variant has (schema::key_count)
  std::uint8_t old_addr_flag;  // kFlagHasOldAddr if the variant may have old_addr, else 0
  bool has_size;
};
static_assert(sizeof(TypeEntry) == 32 && sizeof(TypeEntry::bytes) <= kEncoderSlackBytes);

constexpr auto kTypes = [] {
  std::array<TypeEntry, schema::kVariants.size()> t{};
  // Entry 0 (not a kind: a precondition violation) writes what it always did: no type, and a size.
  t[0] = {
      {}, 0, static_cast<std::uint8_t>(0x80 + schema::key_count(schema::variant(EventKind::Malloc), false)), 0, true};
  constexpr msgpack_schema::FixStr key = msgpack_schema::kKey<schema::Field::type>;
  for (std::size_t k = 1; k < t.size(); ++k) {
    const schema::Variant& v = schema::kVariants[k];
    const msgpack_schema::FixStr name = msgpack_schema::fixstr(v.name);
    if (key.size + name.size > sizeof t[k].bytes) throw "a variant name is too long for TypeEntry";
    std::size_t n = 0;
    for (std::size_t i = 0; i < key.size; ++i) t[k].bytes[n++] = key.bytes[i];
    for (std::size_t i = 0; i < name.size; ++i) t[k].bytes[n++] = name.bytes[i];
    t[k].length = static_cast<std::uint8_t>(n);
    t[k].map_header = static_cast<std::uint8_t>(0x80 + schema::key_count(v, false));
    t[k].old_addr_flag = v.has_old_addr ? kFlagHasOldAddr : 0;
    t[k].has_size = v.has_size;
  }
  return t;
}();

// kMaxEncodedEventBytes, derived from the schema: every key, every integer at full width (5 bytes for an
// i32, 9 for a u64), the longest variant name, old_addr where a variant may have it.
constexpr std::size_t max_encoded_bytes() {
  using schema::Field;
  constexpr std::size_t kValueBytes[schema::kFieldCount] = {5, 5, 9, 9, 0, 9, 9};  // type: its name, below
  std::size_t worst = 0;
  for (std::size_t k = 1; k < schema::kVariants.size(); ++k) {
    const schema::Variant& v = schema::kVariants[k];
    std::size_t n = 1;  // fixmap header
    for (std::size_t f = 0; f < schema::kFieldCount; ++f) {
      const auto field = static_cast<Field>(f);
      if (field == Field::size && !v.has_size) continue;
      if (field == Field::old_addr && !v.has_old_addr) continue;
      n += msgpack_schema::fixstr(schema::field_name(field)).size + kValueBytes[f];
    }
    n += msgpack_schema::fixstr(v.name).size;
    worst = n > worst ? n : worst;
  }
  return worst;
}
static_assert(max_encoded_bytes() == kMaxEncodedEventBytes, "kMaxEncodedEventBytes must match the schema");

// Forced inline so the frame loop has no call per event (GCC's heuristics inline it at -O3 but not at -O2,
// and not at -O3 either once the table lookups made it a little longer). Writes the keys in schema::Field
// order.
[[gnu::always_inline]] inline std::size_t encode_one(const Event& e, std::byte* out) {
  using schema::Field;
  const auto k = static_cast<std::uint8_t>(e.kind);
  const TypeEntry& type = kTypes[k < kTypes.size() ? k : 0];
  const bool with_old = (e.flags & type.old_addr_flag) != 0;
  std::byte* p = out;
  *p++ = static_cast<std::byte>(type.map_header + with_old);  // fixmap with the exact entry count
  p = put_int32(put_key<Field::pid>(p), e.pid);
  p = put_int32(put_key<Field::tid>(p), e.tid);
  p = put_uint(put_key<Field::timestamp>(p), e.timestamp);
  p = put_uint(put_key<Field::addr>(p), e.addr);
  std::memcpy(p, type.bytes, sizeof type.bytes);
  p += type.length;
  if (with_old) {  // rare (reallocs only), so predicted
    p = put_uint(put_key<Field::old_addr>(p), e.old_addr);
  }
  // Written for every event and kept or dropped by how far the cursor moves: whether an event has a size (is
  // not a Free) is as unpredictable as a coin toss in real traces.
  std::byte* const end = put_uint_branchless(put_key<Field::size>(p), e.size);
  p = type.has_size ? end : p;
  return static_cast<std::size_t>(p - out);
}

}  // namespace

std::size_t encode_event(const Event& e, std::byte* out) { return encode_one(e, out); }

FrameSerializer::FrameSerializer(std::size_t max_events) : max_events_(max_events), buffer_(buffer_bytes(max_events)) {}

std::span<const std::byte> FrameSerializer::serialize(std::span<const Event> events) {
  std::byte* const begin = buffer_.data();
  std::byte* cursor = begin;
  for (const Event& e : events) cursor += encode_one(e, cursor);
  return {begin, static_cast<std::size_t>(cursor - begin)};
}

}  // namespace memtrack::codec
