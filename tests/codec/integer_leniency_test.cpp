// Every integer encoding rmp_serde accepts for each field decodes to the same event as the canonical bytes,
// and only values outside a field's range are errors (naming frame and offset, through the artifact
// decoder). rmp_serde reads an unsigned field from any integer marker whose value is non-negative and fits
// (int8..int64 included, as writers that use int64 for every integer emit), and a signed field from any
// marker whose value fits i32 (uint8..uint64 included).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "memtrack/codec/artifact_decoder.h"
#include "memtrack/codec/byte_source.h"
#include "memtrack/codec/event.h"
#include "memtrack/codec/frame_compressor.h"
#include "memtrack/codec/msgpack_encoder.h"

namespace memtrack::codec {
namespace {

// One integer as msgpack with an explicit marker; the value is written in the marker's width, big-endian.
struct Marker {
  std::uint8_t byte;  // 0 = positive fixint, 0xe0 = negative fixint
  int width;          // bytes after the marker
  bool is_signed;
};
constexpr Marker kMarkers[] = {{0x00, 0, false}, {0xe0, 0, true},  {0xcc, 1, false}, {0xcd, 2, false},
                               {0xce, 4, false}, {0xcf, 8, false}, {0xd0, 1, true},  {0xd1, 2, true},
                               {0xd2, 4, true},  {0xd3, 8, true}};

// Whether `v` can be written with marker `m` at all (msgpack's own rule, independent of the field).
bool representable(const Marker& m, std::int64_t v, bool v_is_u64_max = false) {
  if (v_is_u64_max) return m.byte == 0xcf;
  if (m.byte == 0x00) return v >= 0 && v <= 0x7f;
  if (m.byte == 0xe0) return v >= -32 && v < 0;
  if (!m.is_signed) {
    if (v < 0) return false;
    return m.width == 8 || static_cast<std::uint64_t>(v) < (std::uint64_t{1} << (8 * m.width));
  }
  if (m.width == 8) return true;
  const std::int64_t lim = std::int64_t{1} << (8 * m.width - 1);
  return v >= -lim && v < lim;
}

void put_int(std::string& out, const Marker& m, std::uint64_t bits) {
  if (m.width == 0) {
    out.push_back(static_cast<char>(m.byte == 0 ? bits : (bits & 0xff)));
    return;
  }
  out.push_back(static_cast<char>(m.byte));
  for (int i = m.width - 1; i >= 0; --i) out.push_back(static_cast<char>(bits >> (8 * i)));
}

void put_str(std::string& out, const std::string& s) {
  out.push_back(static_cast<char>(0xa0 | s.size()));
  out += s;
}

void put_canonical_uint(std::string& out, std::uint64_t v) {
  const Marker m = v <= 0x7f ? kMarkers[0] : v <= 0xff ? kMarkers[2] : v <= 0xffff ? kMarkers[3]
                                          : v <= 0xffffffff ? kMarkers[4] : kMarkers[5];
  put_int(out, m, v);
}

// A Realloc with every field (pid, tid, timestamp, addr, old_addr, size), `field` written with `m`.
std::string realloc_map(const std::string& field, const Marker& m, std::uint64_t bits, const Event& e) {
  std::string out;
  out.push_back(static_cast<char>(0x87));
  const auto field_value = [&](const std::string& name, std::uint64_t canonical, bool is_i32) {
    put_str(out, name);
    if (name == field) {
      put_int(out, m, bits);
    } else if (is_i32 && static_cast<std::int64_t>(canonical) < 0) {
      put_int(out, kMarkers[9], canonical);
    } else {
      put_canonical_uint(out, canonical);
    }
  };
  field_value("pid", static_cast<std::uint64_t>(static_cast<std::int64_t>(e.pid)), true);
  field_value("tid", static_cast<std::uint64_t>(static_cast<std::int64_t>(e.tid)), true);
  field_value("timestamp", e.timestamp, false);
  field_value("addr", e.addr, false);
  put_str(out, "type");
  put_str(out, "Realloc");
  field_value("old_addr", e.old_addr, false);
  field_value("size", e.size, false);
  return out;
}

struct Decoded {
  std::vector<Event> events;
  Status status;
};

Decoded decode_artifact(const std::string& msgpack) {
  FrameCompressor compressor(1);
  std::vector<std::byte> frame(FrameCompressor::bound(msgpack.size()));
  Status st;
  frame.resize(compressor.compress({reinterpret_cast<const std::byte*>(msgpack.data()), msgpack.size()}, frame, st));
  EXPECT_TRUE(st) << st.message();
  MemorySource source(frame);
  ArtifactDecoder decoder(source, "lenient.zst");
  Decoded d;
  std::vector<Event> buf(16);
  while (const std::size_t n = decoder.next(buf)) d.events.insert(d.events.end(), buf.begin(), buf.begin() + n);
  d.status = decoder.status();
  return d;
}

struct FieldCase {
  std::string name;
  bool is_i32;
  std::vector<std::int64_t> values;  // in range for the field
};

TEST(IntegerLeniency, EveryMarkerRmpSerdeAcceptsDecodesToTheCanonicalEvent) {
  const std::vector<FieldCase> fields = {
      {"pid", true, {0, 5, -3, 127, -32, 128, -129, 32767, -32768, 65535, 2147483647, -2147483648LL}},
      {"tid", true, {1, -1, 200, 70000, -70000, 2147483647}},
      {"timestamp", false, {0, 9, 255, 256, 65535, 65536, 4294967295LL, 4294967296LL, INT64_MAX}},
      {"addr", false, {0, 127, 128, 40000, 3000000000LL, 0x7fff12345678LL}},
      {"old_addr", false, {0, 1, 300, 0x10000, 0x7ffffffffffLL}},
      {"size", false, {0, 31, 32, 255, 1000, 100000, 5000000000LL}},
  };
  int checked = 0;
  for (const FieldCase& f : fields) {
    for (const std::int64_t v : f.values) {
      Event want = make_realloc(7, 8, 9, 0x5000, 0x4000, 64);
      if (f.name == "pid") want.pid = static_cast<std::int32_t>(v);
      if (f.name == "tid") want.tid = static_cast<std::int32_t>(v);
      if (f.name == "timestamp") want.timestamp = static_cast<std::uint64_t>(v);
      if (f.name == "addr") want.addr = static_cast<std::uint64_t>(v);
      if (f.name == "old_addr") want.old_addr = static_cast<std::uint64_t>(v);
      if (f.name == "size") want.size = static_cast<std::uint64_t>(v);
      // The canonical bytes of the same event, from our writer.
      std::vector<std::byte> canonical(kMaxEncodedEventBytes + 16);
      const std::size_t n = encode_event(want, canonical.data());
      const Decoded ref = decode_artifact(std::string(reinterpret_cast<const char*>(canonical.data()), n));
      ASSERT_TRUE(ref.status) << ref.status.message();
      ASSERT_EQ(ref.events, std::vector<Event>{want});
      for (const Marker& m : kMarkers) {
        if (!representable(m, v)) continue;
        const Decoded d = decode_artifact(realloc_map(f.name, m, static_cast<std::uint64_t>(v), want));
        ASSERT_TRUE(d.status) << f.name << "=" << v << " marker 0x" << std::hex << int(m.byte) << ": "
                              << d.status.message();
        EXPECT_EQ(d.events, ref.events) << f.name << "=" << v << " marker 0x" << std::hex << int(m.byte);
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 200);
  // u64::MAX exists only as 0xcf: accepted for every unsigned field.
  for (const std::string f : {"timestamp", "addr", "old_addr", "size"}) {
    const Decoded d = decode_artifact(realloc_map(f, kMarkers[5], UINT64_MAX, make_realloc(7, 8, 9, 1, 2, 3)));
    EXPECT_TRUE(d.status) << f << ": " << d.status.message();
  }
}

TEST(IntegerLeniency, OnlyValuesOutsideTheFieldsRangeAreErrorsNamingFrameAndOffset) {
  struct Bad {
    std::string field;
    Marker marker;
    std::uint64_t bits;
  };
  const std::vector<Bad> cases = {
      {"pid", kMarkers[9], std::uint64_t{1} << 31},                            // int64 2^31
      {"pid", kMarkers[5], std::uint64_t{1} << 31},                            // uint64 2^31
      {"tid", kMarkers[9], static_cast<std::uint64_t>(-(std::int64_t{1} << 31) - 1)},  // below i32
      {"timestamp", kMarkers[6], static_cast<std::uint64_t>(-1)},              // int8 -1
      {"addr", kMarkers[9], static_cast<std::uint64_t>(INT64_MIN)},            // int64 min
      {"size", kMarkers[1], static_cast<std::uint64_t>(-5)},                   // negative fixint
      {"old_addr", kMarkers[8], static_cast<std::uint64_t>(-70000)},           // int32 negative
  };
  for (const Bad& c : cases) {
    // One good event first, so the error names an offset other than 0.
    std::vector<std::byte> first(kMaxEncodedEventBytes + 16);
    const std::size_t n = encode_event(make_event(EventKind::Malloc, 1, 1, 1, 1, 1), first.data());
    const std::string good(reinterpret_cast<const char*>(first.data()), n);
    const Decoded d = decode_artifact(good + realloc_map(c.field, c.marker, c.bits, make_realloc(7, 8, 9, 1, 2, 3)));
    // A frame is verified whole before any of its events is yielded (docs/FORMAT.md), so none are.
    EXPECT_TRUE(d.events.empty()) << c.field;
    ASSERT_FALSE(d.status) << c.field;
    EXPECT_NE(d.status.message().find("lenient.zst: frame 0 at byte 0"), std::string::npos) << d.status.message();
    EXPECT_NE(d.status.message().find("key \"" + c.field + "\" is out of range"), std::string::npos)
        << d.status.message();
    EXPECT_NE(d.status.message().find(std::to_string(n)), std::string::npos)
        << "names the event's offset " << n << ": " << d.status.message();
  }
}

}  // namespace
}  // namespace memtrack::codec
