#include "memtrack/codec/msgpack_decoder.h"

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <msgpack.hpp>
#include <string_view>
#include <type_traits>

#include "memtrack/codec/schema.h"
#include "msgpack_schema_internal.h"

namespace memtrack::codec {
namespace {

using schema::Field;

// A key the schema does not have (or a key that is not a string): its value is skipped.
constexpr auto kUnknownField = static_cast<Field>(schema::kFieldCount);

// Maps a name to its index in a table of names with one hash, one table load and one compare: the parsers
// look up the kind of every event and the fast path cannot afford comparing against each name in turn.
// The hash (length and first two bytes, times a multiplier, top bits) is chosen at compile time so that the
// table's names never collide; a schema change that defeats every multiplier fails to compile.
template <std::size_t N>
class NameLookup {
 public:
  static constexpr std::uint8_t kNone = 0xff;

  constexpr explicit NameLookup(const std::array<std::string_view, N>& names) {
    for (std::size_t i = 0; i < N; ++i) names_[i] = names[i];
    names_[N] = {};  // where empty slots point: an empty name, which the length compare rejects
    for (std::uint32_t m = 0x9e3779b1u; m != 0x9e3779b1u + 2 * 4096; m += 2) {  // odd multipliers
      multiplier_ = m;
      slot_.fill(static_cast<std::uint8_t>(N));
      bool ok = true;
      for (std::size_t i = 0; i < N && ok; ++i) {
        if (names[i].empty()) continue;  // kVariants[0]: no kind
        if (names[i].size() < 2) throw "NameLookup needs names of at least two bytes";
        const unsigned h = hash(names[i]);
        ok = slot_[h] == N;
        slot_[h] = static_cast<std::uint8_t>(i);
      }
      if (ok) return;
    }
    throw "no multiplier separates the schema's names: change NameLookup's hash";
  }

  // The index of `name` in the table, or kNone.
  [[nodiscard]] constexpr std::uint8_t find(std::string_view name) const {
    if (name.size() < 2) return kNone;
    const std::uint8_t i = slot_[hash(name)];
    // Compared here rather than with operator==, which calls memcmp for every event.
    const std::string_view expected = names_[i];
    if (expected.size() != name.size()) return kNone;
    for (std::size_t j = 0; j < expected.size(); ++j) {
      if (name[j] != expected[j]) return kNone;
    }
    return i;
  }

 private:
  static constexpr unsigned kBits = 5;
  static_assert(N < kNone && N < (1u << kBits));
  static_assert(std::endian::native == std::endian::little, "hash() reads two bytes as one little-endian load");

  [[nodiscard]] constexpr unsigned hash(std::string_view s) const {
    std::uint32_t first_two;  // the first two bytes, as one little-endian load reads them
    if (std::is_constant_evaluated()) {
      first_two = static_cast<unsigned char>(s[0]) | static_cast<std::uint32_t>(static_cast<unsigned char>(s[1])) << 8;
    } else {
      std::uint16_t v;
      std::memcpy(&v, s.data(), sizeof v);
      first_two = v;
    }
    const std::uint32_t key = static_cast<std::uint32_t>(s.size()) << 16 | first_two;
    return static_cast<std::uint32_t>(key * multiplier_) >> (32 - kBits);
  }

  std::array<std::string_view, N + 1> names_{};
  std::array<std::uint8_t, std::size_t{1} << kBits> slot_{};
  std::uint32_t multiplier_ = 0;
};

constexpr auto kVariantNames = [] {
  std::array<std::string_view, schema::kVariants.size()> names{};
  for (std::size_t k = 0; k < names.size(); ++k) names[k] = schema::kVariants[k].name;
  return names;
}();
constexpr NameLookup kKindLookup(kVariantNames);
// What the fast path checks per variant: the fixmap header our writer (and rmp_serde) puts, without and with
// old_addr (0, which no fixmap equals, where the variant has no old_addr), and whether a size follows.
// Internal linkage, so -fPIC code reads it directly rather than through the GOT.
struct CanonicalShape {
  std::uint8_t header;
  std::uint8_t header_with_old_addr;
  bool has_size;
};
constexpr auto kCanonicalShapes = [] {
  std::array<CanonicalShape, schema::kVariants.size()> t{};
  for (std::size_t k = 0; k < t.size(); ++k) {
    const schema::Variant& v = schema::kVariants[k];
    t[k].header = static_cast<std::uint8_t>(0x80 + schema::key_count(v, false));
    t[k].header_with_old_addr = v.has_old_addr ? static_cast<std::uint8_t>(0x80 + schema::key_count(v, true)) : 0;
    t[k].has_size = v.has_size;
  }
  return t;
}();
constexpr NameLookup kFieldLookup(schema::kFieldNames);

Field field_of(std::string_view key) {
  const std::uint8_t f = kFieldLookup.find(key);
  return f == kFieldLookup.kNone ? kUnknownField : static_cast<Field>(f);
}

// Out of line, as before the schema table: inlined into the fast path, GCC spilled the compare loop's
// pointer to the stack.
[[gnu::noinline]] bool kind_of(std::string_view name, EventKind& kind) {
  const std::uint8_t k = kKindLookup.find(name);
  if (k == kKindLookup.kNone) return false;
  kind = static_cast<EventKind>(k);
  return true;
}

std::string quoted(Field f) { return "\"" + std::string(schema::field_name(f)) + "\""; }

// Receives msgpack-c's parse callbacks for one value and checks it against the MemtrackEvent schema.
// Nothing is allocated: values land straight in the Event, unknown keys' values are skipped by depth.
class EventVisitor : public msgpack::null_visitor {
 public:
  explicit EventVisitor(Event& out, std::string& error) : out_(out), error_(error) {}

  bool visit_nil() {
    if (depth_ == 0) return fail("expected a map, found nil");
    if (!at_value()) return skip();
    // rmp_serde reads nil as None for old_addr; any other required field cannot be nil. An unknown key's
    // value is ignored whatever it is, nil included (found by fuzzing: this fell through to fail_type,
    // which indexed kFieldNames out of bounds and rejected a valid event).
    if (current_ == Field::old_addr) return mark(Field::old_addr);
    if (current_ == kUnknownField) return true;
    return fail_type("nil");
  }
  bool visit_boolean(bool) { return scalar("a boolean"); }
  bool visit_float32(float) { return scalar("a float"); }
  bool visit_float64(double) { return scalar("a float"); }
  bool visit_bin(const char*, uint32_t) { return scalar("binary data"); }
  bool visit_ext(const char*, uint32_t) { return scalar("an ext value"); }

  bool visit_positive_integer(uint64_t v) {
    if (depth_ == 0) return fail("expected a map, found an integer");
    if (!at_value()) return skip_key();
    switch (current_) {
      case Field::pid:
      case Field::tid:
        if (v > static_cast<uint64_t>(std::numeric_limits<std::int32_t>::max())) return fail_range();
        (current_ == Field::pid ? out_.pid : out_.tid) = static_cast<std::int32_t>(v);
        return mark(current_);
      case Field::timestamp:
        out_.timestamp = v;
        return mark(current_);
      case Field::addr:
        out_.addr = v;
        return mark(current_);
      case Field::size:
        out_.size = v;
        return mark(current_);
      case Field::old_addr:
        out_.old_addr = v;
        out_.flags = kFlagHasOldAddr;
        return mark(current_);
      case Field::type:
        return fail_type("an integer");
      default:
        return true;
    }
  }
  // msgpack-c reports every signed marker (negative fixint, int8..int64) here, whatever the sign. rmp_serde
  // reads a non-negative one into an unsigned field, as other writers (int64 for every integer) rely on.
  bool visit_negative_integer(int64_t v) {
    if (v >= 0) return visit_positive_integer(static_cast<uint64_t>(v));
    if (depth_ == 0) return fail("expected a map, found an integer");
    if (!at_value()) return skip_key();
    if (current_ == Field::pid || current_ == Field::tid) {
      if (v < std::numeric_limits<std::int32_t>::min()) return fail_range();
      (current_ == Field::pid ? out_.pid : out_.tid) = static_cast<std::int32_t>(v);
      return mark(current_);
    }
    if (current_ == kUnknownField) return true;
    return current_ == Field::type ? fail_type("an integer") : fail_range();
  }
  bool visit_str(const char* data, uint32_t size) {
    const std::string_view s(data, size);
    if (depth_ == 0) return fail("expected a map, found a string");
    if (depth_ > 1) return true;
    if (in_key_) {
      current_ = field_of(s);
      return true;
    }
    if (current_ == Field::type) {
      // A type this reader does not know makes a foreign event (docs/FORMAT.md, "Readers' rule").
      if (!kind_of(s, out_.kind)) {
        foreign_ = true;
        type_ = s;
      }
      return mark(Field::type);
    }
    if (current_ == kUnknownField) return true;
    return fail_type("a string");
  }

  bool start_array(uint32_t) {
    if (depth_ == 0) return fail("expected a map, found an array");
    if (depth_ == 1 && at_value() && current_ != kUnknownField && !fail_type("an array")) return false;
    ++depth_;
    return true;
  }
  bool end_array() {
    --depth_;
    return true;
  }
  bool start_map(uint32_t) {
    if (depth_ == 1 && at_value() && current_ != kUnknownField && !fail_type("a map")) return false;
    ++depth_;
    return true;
  }
  bool start_map_key() {
    if (depth_ == 1) {
      in_key_ = true;
      current_ = kUnknownField;  // a key that is not a string is an unknown key
    }
    return true;
  }
  bool end_map_key() {
    if (depth_ == 1) in_key_ = false;
    return true;
  }
  bool end_map() {
    --depth_;
    return depth_ == 0 ? finish() : true;
  }

  void parse_error(size_t, size_t error_offset) {
    if (error_.empty()) error_ = "malformed msgpack at byte " + std::to_string(error_offset) + " of the event";
  }
  void insufficient_bytes(size_t, size_t) { need_more_ = true; }

  [[nodiscard]] bool need_more() const { return need_more_; }
  [[nodiscard]] bool foreign() const { return foreign_; }
  [[nodiscard]] std::string_view type() const { return type_; }

 private:
  [[nodiscard]] bool at_value() const { return depth_ == 1 && !in_key_; }
  bool skip() const { return true; }
  // A value no field accepts: an error at the top level or as a known field's value, skipped elsewhere.
  bool scalar(const char* what) {
    if (depth_ == 0) return fail(std::string("expected a map, found ") + what);
    if (at_value() && current_ != kUnknownField) return fail_type(what);
    return true;
  }
  bool skip_key() const { return true; }  // a non-string key (or a value nested in an unknown key)

  bool mark(Field f) {
    const auto bit = 1u << static_cast<unsigned>(f);
    if (seen_ & bit)
      return schema::is_common(f) ? fail("duplicate key " + quoted(f)) : defer("duplicate key " + quoted(f));
    seen_ |= bit;
    return true;
  }
  bool fail(std::string message) {
    error_ = std::move(message);
    return false;
  }
  // A variant key's value is checked only once the type is known to have that key: the type may come after
  // it, and a foreign event's keys of the same name are its own (the first such error is kept for finish()).
  bool defer(std::string message) {
    if (deferred_.empty()) deferred_ = std::move(message);
    return true;
  }
  bool bad_value(std::string message) {
    return schema::is_common(current_) ? fail(std::move(message)) : defer(std::move(message));
  }
  bool fail_type(const char* found) { return bad_value("key " + quoted(current_) + " has " + found); }
  bool fail_range() { return bad_value("key " + quoted(current_) + " is out of range"); }

  // The map is complete: every key the variant needs must be there. Keys a variant does not have (size on
  // a Free, old_addr on a Malloc) are ignored, as serde ignores unknown keys of a flattened struct.
  bool finish() {
    for (std::size_t i = 0; i < schema::kFieldCount; ++i) {
      const auto f = static_cast<Field>(i);
      if (schema::is_common(f) && !(seen_ & (1u << i))) return fail("missing key " + quoted(f));
    }
    if (foreign_) return true;  // its other keys are its own
    if (!deferred_.empty()) return fail(std::move(deferred_));
    const schema::Variant& v = schema::variant(out_.kind);
    if (!v.has_size) {
      out_.size = 0;
    } else if (!(seen_ & (1u << static_cast<unsigned>(Field::size)))) {
      return fail("missing key " + quoted(Field::size) + " for " + std::string(v.name));
    }
    if (!v.has_old_addr) {
      out_.old_addr = 0;
      out_.flags = 0;
    }
    return true;
  }

  Event& out_;
  std::string& error_;
  unsigned depth_ = 0;
  bool in_key_ = false;
  bool need_more_ = false;
  Field current_ = kUnknownField;
  unsigned seen_ = 0;
  bool foreign_ = false;
  std::string_view type_;  // a foreign event's type, in the parsed bytes
  std::string deferred_;
};

// The fast path: the exact layout rmp_serde (and our encoder) writes: fixmap 5/6/7, fixstr keys in
// declaration order. Nearly every event of a real artifact takes it. Anything else (shuffled or unknown
// keys, wide headers, nil, truncation, errors) returns false and goes through msgpack-c's visitor parser,
// which owns leniency and error reporting. It exists for speed: decoding must stay within 2x of zstd
// decompression alone (bench/decode.cpp: BM_Decode_Artifact beside BM_Floor_ZstdDecompress).
class CanonicalReader {
 public:
  CanonicalReader(const unsigned char* p, const unsigned char* end) : p_(p), end_(end) {}

  // The key is a constant of constant size, so the compare unrolls into a few byte compares instead of a
  // call to memcmp.
  template <Field F>
  bool key() {
    constexpr const msgpack_schema::FixStr& k = msgpack_schema::kKey<F>;
    constexpr std::size_t n = k.size;
    if (static_cast<std::size_t>(end_ - p_) < n) return false;
    for (std::size_t i = 0; i < n; ++i) {
      if (p_[i] != static_cast<unsigned char>(k.bytes[i])) return false;
    }
    p_ += n;
    return true;
  }
  bool uint(std::uint64_t& v) {
    if (p_ >= end_) return false;
    const unsigned char b = *p_;
    if (b <= 0x7f) {
      v = b;
      ++p_;
      return true;
    }
    switch (b) {
      case 0xcc:
        return big_endian(1, v);
      case 0xcd:
        return big_endian(2, v);
      case 0xce:
        return big_endian(4, v);
      case 0xcf:
        return big_endian(8, v);
      default:
        return false;
    }
  }
  bool int32(std::int32_t& v) {
    if (p_ >= end_) return false;
    const unsigned char b = *p_;
    std::uint64_t u = 0;
    if (b >= 0xe0) {  // negative fixint
      v = static_cast<std::int32_t>(static_cast<signed char>(b));
      ++p_;
      return true;
    }
    if (b >= 0xd0 && b <= 0xd2) {  // int8/16/32
      const std::size_t n = std::size_t{1} << (b - 0xd0);
      if (!big_endian(n, u)) return false;
      const unsigned shift = static_cast<unsigned>(64 - 8 * n);
      v = static_cast<std::int32_t>(static_cast<std::int64_t>(u << shift) >> shift);
      return true;
    }
    if (!uint(u) || u > 0x7fffffffu) return false;
    v = static_cast<std::int32_t>(u);
    return true;
  }
  bool kind(EventKind& k) {
    if (p_ >= end_ || (*p_ & 0xe0) != 0xa0) return false;
    const std::size_t n = *p_ & 0x1f;
    if (static_cast<std::size_t>(end_ - p_) < n + 1) return false;
    if (!kind_of(std::string_view(reinterpret_cast<const char*>(p_ + 1), n), k)) return false;
    p_ += n + 1;
    return true;
  }
  bool skip(std::size_t n) {
    p_ += n;  // only called for bytes already checked
    return true;
  }
  [[nodiscard]] const unsigned char* position() const { return p_; }

 private:
  bool big_endian(std::size_t n, std::uint64_t& v) {
    if (static_cast<std::size_t>(end_ - p_) < n + 1) return false;
    std::uint64_t r = 0;
    for (std::size_t i = 1; i <= n; ++i) r = (r << 8) | p_[i];
    v = r;
    p_ += n + 1;
    return true;
  }
  const unsigned char* p_;
  const unsigned char* end_;
};

bool parse_canonical(const std::byte* data, std::size_t size, std::size_t& offset, Event& out) {
  const auto* begin = reinterpret_cast<const unsigned char*>(data) + offset;
  CanonicalReader r(begin, reinterpret_cast<const unsigned char*>(data) + size);
  if (begin >= reinterpret_cast<const unsigned char*>(data) + size) return false;
  const unsigned char header = *begin;
  // fixmap of the common keys plus none, some or all of the variant keys
  if (header < 0x80 + schema::kCommonFieldCount || header > 0x80 + schema::kFieldCount) return false;
  Event e;
  std::uint64_t old_addr = 0;
  const bool ok = r.skip(1) && r.key<Field::pid>() && r.int32(e.pid) && r.key<Field::tid>() && r.int32(e.tid) &&
                  r.key<Field::timestamp>() && r.uint(e.timestamp) && r.key<Field::addr>() && r.uint(e.addr) &&
                  r.key<Field::type>() && r.kind(e.kind);
  if (!ok) return false;
  // The map holds exactly the keys the writer puts for this variant: old_addr if it may have one and has
  // it, then size if it has one.
  const CanonicalShape& shape = kCanonicalShapes[static_cast<std::size_t>(e.kind)];
  if (header == shape.header) {
    if (shape.has_size && (!r.key<Field::size>() || !r.uint(e.size))) return false;
  } else {
    if (header != shape.header_with_old_addr || !r.key<Field::old_addr>() || !r.uint(old_addr) ||
        (shape.has_size && (!r.key<Field::size>() || !r.uint(e.size)))) {
      return false;
    }
    e.old_addr = old_addr;
    e.flags = kFlagHasOldAddr;
  }
  // Field by field: GCC compiles the 48-byte struct assignment to `rep movsl`, whose startup cost showed as
  // a quarter of this function's profile samples.
  out.timestamp = e.timestamp;
  out.addr = e.addr;
  out.size = e.size;
  out.old_addr = e.old_addr;
  out.pid = e.pid;
  out.tid = e.tid;
  out.kind = e.kind;
  out.flags = e.flags;
  std::memset(out.reserved, 0, sizeof out.reserved);
  offset = static_cast<std::size_t>(r.position() - reinterpret_cast<const unsigned char*>(data));
  return true;
}

}  // namespace

ParseResult parse_event(const std::byte* data, std::size_t size, std::size_t& offset, Event& out, std::string& error,
                        std::string_view* foreign_type) {
  if (parse_canonical(data, size, offset, out)) return ParseResult::ok;
  Event e;
  error.clear();
  EventVisitor visitor(e, error);
  std::size_t pos = offset;
  const bool ok = msgpack::parse(reinterpret_cast<const char*>(data), size, pos, visitor);
  if (ok) {
    out = e;
    offset = pos;
    if (!visitor.foreign()) return ParseResult::ok;
    if (foreign_type != nullptr) *foreign_type = visitor.type();
    return ParseResult::foreign;
  }
  if (visitor.need_more() && error.empty()) return ParseResult::need_more;
  if (error.empty()) error = "malformed msgpack";
  return ParseResult::error;
}

}  // namespace memtrack::codec
