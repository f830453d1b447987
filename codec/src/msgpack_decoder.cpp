#include "memtrack/codec/msgpack_decoder.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <msgpack.hpp>
#include <string_view>

namespace memtrack::codec {
namespace {

enum class Field : std::uint8_t { pid, tid, timestamp, addr, type, size, old_addr, unknown, count };

Field field_of(std::string_view key) {
  switch (key.size()) {
    case 3:
      if (key == "pid") return Field::pid;
      if (key == "tid") return Field::tid;
      break;
    case 4:
      if (key == "addr") return Field::addr;
      if (key == "type") return Field::type;
      if (key == "size") return Field::size;
      break;
    case 8:
      if (key == "old_addr") return Field::old_addr;
      break;
    case 9:
      if (key == "timestamp") return Field::timestamp;
      break;
    default:
      break;
  }
  return Field::unknown;
}

constexpr const char* kFieldNames[] = {"pid", "tid", "timestamp", "addr", "type", "size", "old_addr"};

bool kind_of(std::string_view name, EventKind& kind) {
  // Every event has a type string: pick the one candidate by length and first letter, then compare once,
  // instead of comparing against every kind_name() in turn.
  EventKind k;
  switch (name.size()) {
    case 3:
      k = EventKind::Brk;
      break;
    case 4:
      k = name[0] == 'F' ? EventKind::Free : EventKind::Mmap;
      break;
    case 6:
      k = name[0] == 'M' ? (name[1] == 'a' ? EventKind::Malloc : EventKind::Munmap) : EventKind::Calloc;
      break;
    case 7:
      k = EventKind::Realloc;
      break;
    case 12:
      k = EventKind::AlignedAlloc;
      break;
    default:
      return false;
  }
  // Compared here rather than with kind_name()'s operator==, which calls memcmp for every event.
  static constexpr std::string_view kNames[] = {"",     "Malloc", "Free", "Calloc", "Realloc", "AlignedAlloc",
                                                "Mmap", "Munmap", "Brk"};
  const std::string_view expected = kNames[static_cast<std::size_t>(k)];
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (name[i] != expected[i]) return false;
  }
  kind = k;
  return true;
}

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
    if (current_ == Field::unknown) return true;
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
  bool visit_negative_integer(int64_t v) {
    if (depth_ == 0) return fail("expected a map, found an integer");
    if (!at_value()) return skip_key();
    if (current_ == Field::pid || current_ == Field::tid) {
      if (v < std::numeric_limits<std::int32_t>::min()) return fail_range();
      (current_ == Field::pid ? out_.pid : out_.tid) = static_cast<std::int32_t>(v);
      return mark(current_);
    }
    if (current_ == Field::unknown) return true;
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
      if (!kind_of(s, out_.kind)) return fail("unknown event type \"" + std::string(s.substr(0, 32)) + "\"");
      return mark(Field::type);
    }
    if (current_ == Field::unknown) return true;
    return fail_type("a string");
  }

  bool start_array(uint32_t) {
    if (depth_ == 0) return fail("expected a map, found an array");
    if (depth_ == 1 && at_value() && current_ != Field::unknown) return fail_type("an array");
    ++depth_;
    return true;
  }
  bool end_array() {
    --depth_;
    return true;
  }
  bool start_map(uint32_t) {
    if (depth_ == 1 && at_value() && current_ != Field::unknown) return fail_type("a map");
    ++depth_;
    return true;
  }
  bool start_map_key() {
    if (depth_ == 1) {
      in_key_ = true;
      current_ = Field::unknown;  // a key that is not a string is an unknown key
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

 private:
  [[nodiscard]] bool at_value() const { return depth_ == 1 && !in_key_; }
  bool skip() const { return true; }
  // A value no field accepts: an error at the top level or as a known field's value, skipped elsewhere.
  bool scalar(const char* what) {
    if (depth_ == 0) return fail(std::string("expected a map, found ") + what);
    if (at_value() && current_ != Field::unknown) return fail_type(what);
    return true;
  }
  bool skip_key() const { return true; }  // a non-string key (or a value nested in an unknown key)

  bool mark(Field f) {
    const auto bit = 1u << static_cast<unsigned>(f);
    if (seen_ & bit) return fail(std::string("duplicate key \"") + kFieldNames[static_cast<unsigned>(f)] + "\"");
    seen_ |= bit;
    return true;
  }
  bool fail(std::string message) {
    error_ = std::move(message);
    return false;
  }
  bool fail_type(const char* found) {
    return fail(std::string("key \"") + kFieldNames[static_cast<unsigned>(current_)] + "\" has " + found);
  }
  bool fail_range() {
    return fail(std::string("key \"") + kFieldNames[static_cast<unsigned>(current_)] + "\" is out of range");
  }

  // The map is complete: every key the variant needs must be there. Keys a variant does not have (size on
  // a Free, old_addr on a Malloc) are ignored, as serde ignores unknown keys of a flattened struct.
  bool finish() {
    for (Field f : {Field::pid, Field::tid, Field::timestamp, Field::addr, Field::type}) {
      if (!(seen_ & (1u << static_cast<unsigned>(f)))) {
        return fail(std::string("missing key \"") + kFieldNames[static_cast<unsigned>(f)] + "\"");
      }
    }
    if (out_.kind == EventKind::Free) {
      out_.size = 0;
    } else if (!(seen_ & (1u << static_cast<unsigned>(Field::size)))) {
      return fail("missing key \"size\" for " + std::string(kind_name(out_.kind)));
    }
    if (out_.kind != EventKind::Realloc) {
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
  Field current_ = Field::unknown;
  unsigned seen_ = 0;
};

// The fast path: the exact layout rmp_serde (and our encoder) writes: fixmap 5/6/7, fixstr keys in
// declaration order. Nearly every event of a real artifact takes it. Anything else (shuffled or unknown
// keys, wide headers, nil, truncation, errors) returns false and goes through msgpack-c's visitor parser,
// which owns leniency and error reporting. It exists for speed: decoding must stay within 2x of zstd
// decompression alone (bench/decode.cpp: BM_Decode_Artifact beside BM_Floor_ZstdDecompress).
class CanonicalReader {
 public:
  CanonicalReader(const unsigned char* p, const unsigned char* end) : p_(p), end_(end) {}

  // N is a constant, so the compare unrolls into a few byte compares instead of a call to memcmp.
  template <std::size_t N>
  bool key(const char (&bytes)[N]) {
    constexpr std::size_t n = N - 1;  // without the literal's terminating zero
    if (static_cast<std::size_t>(end_ - p_) < n) return false;
    for (std::size_t i = 0; i < n; ++i) {
      if (p_[i] != static_cast<unsigned char>(bytes[i])) return false;
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
  if (header < 0x85 || header > 0x87) return false;
  Event e;
  std::uint64_t old_addr = 0;
  const bool ok = r.skip(1) && r.key("\xa3pid") && r.int32(e.pid) && r.key("\xa3tid") && r.int32(e.tid) &&
                  r.key("\xa9timestamp") && r.uint(e.timestamp) &&
                  r.key(
                      "\xa4"
                      "addr") &&
                  r.uint(e.addr) && r.key("\xa4type") && r.kind(e.kind);
  if (!ok) return false;
  const bool is_free = e.kind == EventKind::Free;
  if (header == 0x85) {
    if (!is_free) return false;
  } else if (header == 0x86) {
    if (is_free || !r.key("\xa4size") || !r.uint(e.size)) return false;
  } else {
    if (e.kind != EventKind::Realloc || !r.key("\xa8old_addr") || !r.uint(old_addr) || !r.key("\xa4size") ||
        !r.uint(e.size)) {
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

ParseResult parse_event(const std::byte* data, std::size_t size, std::size_t& offset, Event& out, std::string& error) {
  if (parse_canonical(data, size, offset, out)) return ParseResult::ok;
  Event e;
  error.clear();
  EventVisitor visitor(e, error);
  std::size_t pos = offset;
  const bool ok = msgpack::parse(reinterpret_cast<const char*>(data), size, pos, visitor);
  if (ok) {
    out = e;
    offset = pos;
    return ParseResult::ok;
  }
  if (visitor.need_more() && error.empty()) return ParseResult::need_more;
  if (error.empty()) error = "malformed msgpack";
  return ParseResult::error;
}

}  // namespace memtrack::codec
