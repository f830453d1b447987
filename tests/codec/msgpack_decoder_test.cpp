// The event parser: exact on the reference bytes, as lenient as rmp_serde, strict on malformed input.
#include "memtrack/codec/msgpack_decoder.h"

#include <gtest/gtest.h>

#include <msgpack.hpp>

#include "common/fixtures.h"
#include "memtrack/codec/msgpack_encoder.h"
#include "memtrack/codec/schema.h"

namespace memtrack::codec {
namespace {

std::span<const std::byte> bytes_of(const msgpack::sbuffer& b) {
  return {reinterpret_cast<const std::byte*>(b.data()), b.size()};
}

ParseResult parse_all(std::span<const std::byte> bytes, Event& e, std::string& error) {
  std::size_t off = 0;
  const ParseResult r = parse_event(bytes.data(), bytes.size(), off, e, error);
  if (r == ParseResult::ok) {
    EXPECT_EQ(off, bytes.size());
  }
  return r;
}

// Builds maps key by key so tests can reorder keys, widen integers and add unknown keys.
struct MapBuilder {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk{buf};
  explicit MapBuilder(uint32_t n, bool map16 = false) {
    if (map16) {
      const char h[3] = {'\xde', 0, static_cast<char>(n)};
      buf.write(h, 3);
    } else {
      pk.pack_map(n);
    }
  }
  MapBuilder& key(const std::string& k) {
    pk.pack(k);
    return *this;
  }
  MapBuilder& str8_key(const std::string& k) {  // force the str8 header rmp_serde never writes for short keys
    const char h[2] = {'\xd9', static_cast<char>(k.size())};
    buf.write(h, 2);
    buf.write(k.data(), k.size());
    return *this;
  }
  template <typename T>
  MapBuilder& kv(const std::string& k, const T& v) {
    pk.pack(k);
    pk.pack(v);
    return *this;
  }
  MapBuilder& wide_u64(const std::string& k, uint64_t v) {  // always 0xcf, whatever the value
    pk.pack(k);
    char h[9] = {'\xcf'};
    for (int i = 0; i < 8; ++i) h[1 + i] = static_cast<char>(v >> (56 - 8 * i));
    buf.write(h, 9);
    return *this;
  }
  MapBuilder& wide_i32(const std::string& k, int32_t v) {  // always 0xd3 (int64)
    pk.pack(k);
    const auto u = static_cast<uint64_t>(static_cast<int64_t>(v));
    char h[9] = {'\xd3'};
    for (int i = 0; i < 8; ++i) h[1 + i] = static_cast<char>(u >> (56 - 8 * i));
    buf.write(h, 9);
    return *this;
  }
};

TEST(MsgpackDecoder, ParsesEveryReferenceEventBackToItsRecord) {
  const auto events = testing::read_raw_events(testing::data_path("events.raw"));
  const auto bytes = testing::read_file(testing::data_path("events.msgpack"));
  std::size_t off = 0;
  std::string error;
  for (std::size_t i = 0; i < events.size(); ++i) {
    Event e;
    ASSERT_EQ(parse_event(bytes.data(), bytes.size(), off, e, error), ParseResult::ok)
        << "event " << i << ": " << error;
    ASSERT_EQ(e, events[i]) << "event " << i;
  }
  EXPECT_EQ(off, bytes.size());
}

// The writer, both parsers and kind_name() read one table (memtrack/codec/schema.h): every variant it lists
// is written with its name and key count, read back by the fast path, and read back by the visitor when its
// keys come in reverse order (which the fast path refuses).
TEST(MsgpackDecoder, EveryVariantOfTheSchemaRoundTripsThroughBothParsers) {
  for (std::uint8_t k = 1; is_valid_kind(k); ++k) {
    const auto kind = static_cast<EventKind>(k);
    const schema::Variant& v = schema::variant(kind);
    SCOPED_TRACE(std::string(v.name));
    EXPECT_EQ(kind_name(kind), v.name);
    Event e = make_event(kind, -7, 8, 9, 10, v.has_size ? 11 : 0);
    if (v.has_old_addr) {
      e.old_addr = 12;
      e.flags = kFlagHasOldAddr;
    }
    std::byte buf[kMaxEncodedEventBytes + kEncoderSlackBytes];
    const std::size_t n = encode_event(e, buf);
    EXPECT_EQ(static_cast<unsigned>(buf[0]), 0x80u + schema::key_count(v, e.has_old_addr()));
    Event back;
    std::string error;
    ASSERT_EQ(parse_all(std::span(buf, n), back, error), ParseResult::ok) << error;
    EXPECT_EQ(back, e);

    MapBuilder m(static_cast<uint32_t>(schema::key_count(v, e.has_old_addr())));
    if (v.has_size) m.kv("size", e.size);
    if (v.has_old_addr) m.kv("old_addr", e.old_addr);
    m.kv("type", std::string(v.name)).kv("addr", e.addr).kv("timestamp", e.timestamp).kv("tid", e.tid).kv("pid", e.pid);
    Event shuffled;
    ASSERT_EQ(parse_all(bytes_of(m.buf), shuffled, error), ParseResult::ok) << error;
    EXPECT_EQ(shuffled, e);
  }
  EXPECT_EQ(kind_name(static_cast<EventKind>(0)), "Unknown");
  EXPECT_EQ(kind_name(static_cast<EventKind>(schema::kVariants.size())), "Unknown");
}

TEST(MsgpackDecoder, ShuffledKeysWideIntegersAndUnknownKeys) {
  MapBuilder m(9);
  m.kv("type", std::string("Realloc"))
      .wide_u64("size", 7)
      .kv("extra", std::vector<int>{1, 2, 3})
      .wide_u64("old_addr", 0x1000)
      .wide_i32("tid", -5)
      .kv("nested", std::map<std::string, std::vector<std::string>>{{"a", {"b"}}})
      .wide_u64("addr", 0x2000)
      .wide_i32("pid", 42)
      .wide_u64("timestamp", 99);
  Event e;
  std::string error;
  ASSERT_EQ(parse_all(bytes_of(m.buf), e, error), ParseResult::ok) << error;
  EXPECT_EQ(e, make_realloc(42, -5, 99, 0x2000, 0x1000, 7));
}

TEST(MsgpackDecoder, Map16HeaderStr8KeysAndMissingOldAddr) {
  MapBuilder m(6, /*map16=*/true);
  m.str8_key("pid").pk.pack(1);
  m.str8_key("tid").pk.pack(2);
  m.str8_key("timestamp").pk.pack(3);
  m.str8_key("addr").pk.pack(4);
  m.str8_key("type").pk.pack(std::string("Realloc"));
  m.str8_key("size").pk.pack(5);
  Event e;
  std::string error;
  ASSERT_EQ(parse_all(bytes_of(m.buf), e, error), ParseResult::ok) << error;
  EXPECT_EQ(e, make_event(EventKind::Realloc, 1, 2, 3, 4, 5));
  EXPECT_FALSE(e.has_old_addr());
}

TEST(MsgpackDecoder, NilOldAddrIsAbsentAndFreeIgnoresSize) {
  MapBuilder m(7);
  m.kv("pid", 1).kv("tid", 2).kv("timestamp", 3).kv("addr", 4).kv("type", std::string("Realloc")).kv("size", 5);
  m.key("old_addr").pk.pack_nil();
  Event e;
  std::string error;
  ASSERT_EQ(parse_all(bytes_of(m.buf), e, error), ParseResult::ok) << error;
  EXPECT_FALSE(e.has_old_addr());

  MapBuilder f(6);
  f.kv("pid", 1).kv("tid", 2).kv("timestamp", 3).kv("addr", 4).kv("type", std::string("Free")).kv("size", 9);
  ASSERT_EQ(parse_all(bytes_of(f.buf), e, error), ParseResult::ok) << error;
  EXPECT_EQ(e, make_event(EventKind::Free, 1, 2, 3, 4, 0));
}

// Regression (msgpack_event_parse_fuzz): nil as the value of an unknown key read kFieldNames out of bounds
// and rejected the event; rmp_serde ignores an unknown key whatever its value.
TEST(MsgpackDecoder, NilUnderAnUnknownKeyIsIgnored) {
  MapBuilder m(6);
  m.kv("pid", 1).kv("tid", 2).key("").pk.pack_nil();
  m.kv("timestamp", 3).kv("addr", 4).kv("type", std::string("Free"));
  Event e;
  std::string error;
  ASSERT_EQ(parse_all(bytes_of(m.buf), e, error), ParseResult::ok) << error;
  EXPECT_EQ(e, make_event(EventKind::Free, 1, 2, 3, 4, 0));
}

struct BadCase {
  const char* name;
  std::function<void(MapBuilder&)> build;
  uint32_t entries;
  const char* expected_error;
};

TEST(MsgpackDecoder, MalformedEventsAreErrorsThatSayWhat) {
  const std::vector<BadCase> cases = {
      {"missing pid",
       [](MapBuilder& m) { m.kv("tid", 2).kv("timestamp", 3).kv("addr", 4).kv("type", std::string("Free")); }, 4,
       "missing key \"pid\""},
      {"pid too big",
       [](MapBuilder& m) {
         m.kv("pid", 1ull << 31).kv("tid", 2).kv("timestamp", 3).kv("addr", 4).kv("type", std::string("Free"));
       },
       5, "key \"pid\" is out of range"},
      {"negative size",
       [](MapBuilder& m) {
         m.kv("pid", 1).kv("tid", 2).kv("timestamp", 3).kv("addr", 4).kv("type", std::string("Malloc")).kv("size", -1);
       },
       6, "key \"size\" is out of range"},
      {"unknown type without pid",
       [](MapBuilder& m) {
         m.kv("tid", 2).kv("timestamp", 3).kv("addr", 4).kv("type", std::string("Rss")).kv("size", 1);
       },
       5, "missing key \"pid\""},
      {"negative size before the type",
       [](MapBuilder& m) {
         m.kv("pid", 1).kv("size", -1).kv("tid", 2).kv("timestamp", 3).kv("addr", 4).kv("type", std::string("Malloc"));
       },
       6, "key \"size\" is out of range"},
      {"size is a string before the type",
       [](MapBuilder& m) {
         m.kv("size", std::string("x")).kv("pid", 1).kv("tid", 2).kv("timestamp", 3).kv("addr", 4);
         m.kv("type", std::string("Calloc"));
       },
       6, "key \"size\" has a string"},
      {"type is an integer",
       [](MapBuilder& m) { m.kv("pid", 1).kv("tid", 2).kv("timestamp", 3).kv("addr", 4).kv("type", 1).kv("size", 1); },
       6, "key \"type\" has an integer"},
      {"addr is a string",
       [](MapBuilder& m) {
         m.kv("pid", 1).kv("tid", 2).kv("timestamp", 3).kv("addr", std::string("x")).kv("type", std::string("Free"));
       },
       5, "key \"addr\" has a string"},
      {"duplicate key",
       [](MapBuilder& m) {
         m.kv("pid", 1).kv("pid", 1).kv("tid", 2).kv("timestamp", 3).kv("addr", 4).kv("type", std::string("Free"));
       },
       6, "duplicate key \"pid\""},
      {"malloc without size",
       [](MapBuilder& m) {
         m.kv("pid", 1).kv("tid", 2).kv("timestamp", 3).kv("addr", 4).kv("type", std::string("Malloc"));
       },
       5, "missing key \"size\" for Malloc"},
      {"timestamp is a float",
       [](MapBuilder& m) {
         m.kv("pid", 1).kv("tid", 2).kv("timestamp", 3.5).kv("addr", 4).kv("type", std::string("Free"));
       },
       5, "key \"timestamp\" has a float"},
  };
  for (const auto& c : cases) {
    MapBuilder m(c.entries);
    c.build(m);
    Event e;
    std::string error;
    EXPECT_EQ(parse_all(bytes_of(m.buf), e, error), ParseResult::error) << c.name;
    EXPECT_EQ(error, c.expected_error) << c.name;
  }
}

// A type this reader does not know is a foreign event, not an error: parsed past, its common keys checked
// and kept, its type viewed in the input, its other keys its own (even ones named like ours, of any value).
TEST(MsgpackDecoder, AnUnknownTypeIsAForeignEventParsedPast) {
  MapBuilder m(8);
  m.kv("pid", -7).kv("tid", 42).kv("timestamp", 0xdead).kv("addr", 0);
  m.kv("size", -5).kv("type", std::string("Rmap")).kv("old_addr", std::string("x"));
  m.key("nested").pk.pack_array(2);
  m.pk.pack_map(1);
  m.pk.pack_nil();
  m.pk.pack_bin(2);
  m.pk.pack_bin_body("\x01\x02", 2);
  m.pk.pack_double(1.5);
  msgpack::sbuffer twice;
  twice.write(m.buf.data(), m.buf.size());
  twice.write(m.buf.data(), m.buf.size());
  const auto bytes = bytes_of(twice);
  Event e;
  std::string error;
  std::string_view type;
  std::size_t off = 0;
  ASSERT_EQ(parse_event(bytes.data(), bytes.size(), off, e, error, &type), ParseResult::foreign) << error;
  EXPECT_EQ(off, m.buf.size());
  EXPECT_EQ(type, "Rmap");
  EXPECT_GE(reinterpret_cast<const std::byte*>(type.data()), bytes.data());
  EXPECT_LT(reinterpret_cast<const std::byte*>(type.data()), bytes.data() + off);
  EXPECT_EQ(e.pid, -7);
  EXPECT_EQ(e.tid, 42);
  EXPECT_EQ(e.timestamp, 0xdeadu);
  EXPECT_EQ(e.addr, 0u);
  ASSERT_EQ(parse_event(bytes.data(), bytes.size(), off, e, error), ParseResult::foreign) << error;
  EXPECT_EQ(off, bytes.size());
}

TEST(MsgpackDecoder, NonMapValuesAreErrors) {
  for (const std::string hex : {"05", "c0", "a3616263", "93010203", "c3", "cb3ff0000000000000"}) {
    std::vector<std::byte> b;
    for (std::size_t i = 0; i < hex.size(); i += 2)
      b.push_back(static_cast<std::byte>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    Event e;
    std::string error;
    std::size_t off = 0;
    EXPECT_EQ(parse_event(b.data(), b.size(), off, e, error), ParseResult::error) << hex;
    EXPECT_NE(error.find("expected a map"), std::string::npos) << hex << ": " << error;
  }
}

TEST(MsgpackDecoder, EveryTruncationOfAnEventNeedsMoreBytes) {
  const auto bytes = testing::read_file(testing::data_path("events.msgpack"));
  // The third reference event is a Realloc with old_addr: every prefix of it is incomplete, never an event.
  std::size_t start = 0;
  Event e;
  std::string error;
  for (int i = 0; i < 2; ++i) ASSERT_EQ(parse_event(bytes.data(), bytes.size(), start, e, error), ParseResult::ok);
  std::size_t end = start;
  ASSERT_EQ(parse_event(bytes.data(), bytes.size(), end, e, error), ParseResult::ok);
  for (std::size_t cut = start; cut < end; ++cut) {
    std::size_t off = start;
    EXPECT_EQ(parse_event(bytes.data(), cut, off, e, error), ParseResult::need_more)
        << "cut at " << cut << ": " << error;
    EXPECT_EQ(off, start);
  }
}

TEST(MsgpackDecoder, HugeDeclaredSizesDoNotAllocate) {
  // map32 declaring 4 billion entries, str32 declaring 4 GiB, array32 of 4 billion under an unknown key:
  // the parser waits for bytes that never come instead of reserving anything.
  for (const std::string& hex : {std::string("dfffffffff"), std::string("81dbffffffff"),
                                 std::string("81a178ddffffffff"), std::string("81a178dbffffffff61")}) {
    std::vector<std::byte> b;
    for (std::size_t i = 0; i < hex.size(); i += 2)
      b.push_back(static_cast<std::byte>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    Event e;
    std::string error;
    std::size_t off = 0;
    EXPECT_EQ(parse_event(b.data(), b.size(), off, e, error), ParseResult::need_more) << hex << ": " << error;
  }
}

}  // namespace
}  // namespace memtrack::codec
