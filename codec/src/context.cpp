#include "memtrack/codec/context.h"

#include <zstd.h>

#include <cstdio>
#include <cstring>
#include <limits>
#include <msgpack.hpp>
#include <string_view>
#include <type_traits>

namespace memtrack::codec {
namespace {

// msgpack-c's packer writes to any stream with write(const char*, size_t).
struct ByteVectorStream {
  std::vector<std::byte>& out;
  void write(const char* data, std::size_t n) {
    const auto* p = reinterpret_cast<const std::byte*>(data);
    out.insert(out.end(), p, p + n);
  }
};
using Packer = msgpack::packer<ByteVectorStream>;

void pack_str(Packer& pk, std::string_view s) {
  pk.pack_str(static_cast<std::uint32_t>(s.size()));
  pk.pack_str_body(s.data(), static_cast<std::uint32_t>(s.size()));
}

// One value of a record, by its C++ type: integers and bools in msgpack's smallest encoding (msgpack-c's
// pack), strings as str, string lists as arrays of str, an empty optional as nil, byte strings as bin, and
// columns of wider unsigned integers as one bin of little-endian integers, whatever the host's byte order.
template <typename T>
requires std::is_integral_v<T>
void pack_value(Packer& pk, T v) { pk.pack(v); }
void pack_value(Packer& pk, std::string_view s) { pack_str(pk, s); }
void pack_value(Packer& pk, const std::vector<std::string>& v) {
  pk.pack_array(static_cast<std::uint32_t>(v.size()));
  for (const std::string& s : v) pack_str(pk, s);
}
template <typename T>
void pack_value(Packer& pk, const std::optional<T>& v) {
  if (v)
    pack_value(pk, *v);
  else
    pk.pack_nil();
}
void pack_value(Packer& pk, const std::vector<std::uint8_t>& v) {
  pk.pack_bin(static_cast<std::uint32_t>(v.size()));
  pk.pack_bin_body(reinterpret_cast<const char*>(v.data()), static_cast<std::uint32_t>(v.size()));
}
template <typename T>
requires std::is_unsigned_v<T>
void pack_value(Packer& pk, const std::vector<T>& v) {
  pk.pack_bin(static_cast<std::uint32_t>(v.size() * sizeof(T)));
  char buf[256];
  std::size_t n = 0;
  for (const T x : v) {
    for (std::size_t b = 0; b < sizeof(T); ++b) buf[n++] = static_cast<char>((x >> (8 * b)) & 0xFF);
    if (n == sizeof buf) pk.pack_bin_body(buf, static_cast<std::uint32_t>(n)), n = 0;
  }
  if (n > 0) pk.pack_bin_body(buf, static_cast<std::uint32_t>(n));
}

void pack_fields(Packer&) {}
template <typename V, typename... Rest>
void pack_fields(Packer& pk, std::string_view key, const V& value, const Rest&... rest) {
  pack_str(pk, key);
  pack_value(pk, value);
  pack_fields(pk, rest...);
}

// A record is a map: "type" first, then the given keys and values in order (docs/FORMAT.md's key order), its
// header counting them, so that the count and the keys cannot disagree.
template <typename... KeysAndValues>
void pack_record(Packer& pk, std::string_view type, const KeysAndValues&... kv) {
  static_assert(sizeof...(kv) % 2 == 0, "keys and values come in pairs");
  pk.pack_map(static_cast<std::uint32_t>(1 + sizeof...(kv) / 2));
  pack_fields(pk, "type", type, kv...);
}

void pack(Packer& pk, const RecordingInfo& r) {
  pack_record(pk, "Recording", "memtrack", r.memtrack_version, "command", r.command, "start_realtime_ns",
              r.start_realtime_ns, "start_monotonic_ns", r.start_monotonic_ns, "sections", r.sections, "pid", r.pid);
}
void pack(Packer& pk, const ProcessStart& r) {
  pack_record(pk, "ProcessStart", "pid", r.pid, "ppid", r.ppid, "event", r.event, "timestamp", r.timestamp);
}
void pack(Packer& pk, const ProcessExec& r) {
  pack_record(pk, "Exec", "pid", r.pid, "event", r.event, "timestamp", r.timestamp, "executable", r.executable, "argv",
              r.argv);
}
void pack(Packer& pk, const ProcessExit& r) {
  pack_record(pk, "ProcessExit", "pid", r.pid, "event", r.event, "timestamp", r.timestamp, "status", r.status, "signal",
              r.signal);
}
void pack(Packer& pk, const Untracked& r) {
  pack_record(pk, "Untracked", "pid", r.pid, "executable", r.executable, "reason", r.reason, "event", r.event);
}
void pack(Packer& pk, const StreamEnd& r) {
  pack_record(pk, "End", "events", r.events, "frames", r.frames, "clean", r.clean);
}
void pack(Packer& pk, const Module& r) {
  pack_record(pk, "Module", "pid", r.pid, "event", r.event, "path", r.path, "build_id", r.build_id, "bias", r.bias,
              "start", r.start, "end", r.end, "loaded", r.loaded);
}
void pack(Packer& pk, const StackNodes& r) {
  pack_record(pk, "StackNodes", "pid", r.pid, "event", r.event, "first_id", r.first_id, "parents", r.parents,
              "addresses", r.addresses);
}
void pack(Packer& pk, const EventStacks& r) {
  pack_record(pk, "EventStacks", "first_event", r.first_event, "ids", r.ids);
}
void pack(Packer& pk, const Symbols& r) {
  pack_record(pk, "Symbols", "path", r.path, "build_id", r.build_id, "addresses", r.addresses, "depths", r.depths,
              "functions", r.functions, "files", r.files, "lines", r.lines, "strings", r.strings);
}
template <typename T>
void pack_toggle(Packer& pk, const T& r, std::string_view type) {
  pack_record(pk, type, "pid", r.pid, "tid", r.tid, "event", r.event, "timestamp", r.timestamp, "source", r.source);
}
void pack(Packer& pk, const Pause& r) { pack_toggle(pk, r, "Pause"); }
void pack(Packer& pk, const Resume& r) { pack_toggle(pk, r, "Resume"); }
void pack(Packer& pk, const RegionBegin& r) {
  pack_record(pk, "RegionBegin", "pid", r.pid, "tid", r.tid, "event", r.event, "timestamp", r.timestamp, "name",
              r.name);
}
void pack(Packer& pk, const RegionEnd& r) {
  pack_record(pk, "RegionEnd", "pid", r.pid, "tid", r.tid, "event", r.event, "timestamp", r.timestamp);
}

void pack(Packer& pk, const Resident& r) {
  pack_record(pk, "Resident", "pid", r.pid, "event", r.event, "timestamp", r.timestamp, "anon", r.anon, "file", r.file,
              "shmem", r.shmem, "swap", r.swap, "own", r.own, "hwm", r.hwm);
}

void pack(Packer& pk, const ResidentPages& r) {
  pack_record(pk, "ResidentPages", "pid", r.pid, "event", r.event, "timestamp", r.timestamp, "part", r.part,
              "page_size", r.page_size, "starts", r.starts, "pages", r.pages, "present", r.present);
}

void store_le32(std::byte* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::byte>(v >> (8 * i));
}

// Reading: one record map at a time, with every key looked up by name, so key order, unknown keys and
// integer widths are as free as in the events (FORMAT.md). Failures throw RecordError, caught per frame.
struct RecordError {
  std::string what;
};

class Fields {
 public:
  explicit Fields(const msgpack::object& map) : map_(map.via.map) {}
  const msgpack::object* find(std::string_view key) const {
    for (std::uint32_t i = 0; i < map_.size; ++i) {
      const msgpack::object& k = map_.ptr[i].key;
      if (k.type == msgpack::type::STR && std::string_view(k.via.str.ptr, k.via.str.size) == key)
        return &map_.ptr[i].val;
    }
    return nullptr;
  }
  const msgpack::object& get(std::string_view key) const {
    const msgpack::object* v = find(key);
    if (v == nullptr) throw RecordError{"missing key \"" + std::string(key) + "\""};
    return *v;
  }
  template <typename T>
  T integer(std::string_view key) const {
    return to_integer<T>(get(key), key);
  }
  template <typename T>
  std::optional<T> optional_integer(std::string_view key) const {
    const msgpack::object* v = find(key);
    if (v == nullptr || v->type == msgpack::type::NIL) return std::nullopt;
    return to_integer<T>(*v, key);
  }
  std::string string(std::string_view key) const { return to_string(get(key), key); }
  std::vector<std::string> strings(std::string_view key) const {
    const msgpack::object& v = get(key);
    if (v.type != msgpack::type::ARRAY) throw RecordError{"key \"" + std::string(key) + "\" is not an array"};
    std::vector<std::string> out;
    out.reserve(v.via.array.size);
    for (std::uint32_t i = 0; i < v.via.array.size; ++i) out.push_back(to_string(v.via.array.ptr[i], key));
    return out;
  }
  std::vector<std::uint8_t> bytes(std::string_view key) const {
    const msgpack::object& v = get(key);
    if (v.type != msgpack::type::BIN) throw RecordError{"key \"" + std::string(key) + "\" is not a bin"};
    const auto* p = reinterpret_cast<const std::uint8_t*>(v.via.bin.ptr);
    return {p, p + v.via.bin.size};
  }
  template <typename T>
  std::vector<T> column(std::string_view key) const {
    const msgpack::object& v = get(key);
    if (v.type != msgpack::type::BIN) throw RecordError{"key \"" + std::string(key) + "\" is not a bin"};
    if (v.via.bin.size % sizeof(T) != 0)
      throw RecordError{"key \"" + std::string(key) + "\" has " + std::to_string(v.via.bin.size) +
                        " bytes, not a whole number of " + std::to_string(sizeof(T)) + "-byte integers"};
    const auto* p = reinterpret_cast<const std::uint8_t*>(v.via.bin.ptr);
    std::vector<T> out(v.via.bin.size / sizeof(T));
    for (std::size_t i = 0; i < out.size(); ++i) {
      T x = 0;
      for (std::size_t b = 0; b < sizeof(T); ++b) x |= static_cast<T>(T{p[i * sizeof(T) + b]} << (8 * b));
      out[i] = x;
    }
    return out;
  }
  bool boolean(std::string_view key) const {
    const msgpack::object& v = get(key);
    if (v.type != msgpack::type::BOOLEAN) throw RecordError{"key \"" + std::string(key) + "\" is not a bool"};
    return v.via.boolean;
  }

 private:
  template <typename T>
  static T to_integer(const msgpack::object& v, std::string_view key) {
    if (v.type == msgpack::type::POSITIVE_INTEGER) {
      if (v.via.u64 <= static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return static_cast<T>(v.via.u64);
    } else if (v.type == msgpack::type::NEGATIVE_INTEGER) {
      if constexpr (std::is_signed_v<T>) {
        if (v.via.i64 >= static_cast<std::int64_t>(std::numeric_limits<T>::min())) return static_cast<T>(v.via.i64);
      }
    } else {
      throw RecordError{"key \"" + std::string(key) + "\" is not an integer"};
    }
    throw RecordError{"key \"" + std::string(key) + "\" is out of range"};
  }
  static std::string to_string(const msgpack::object& v, std::string_view key) {
    if (v.type != msgpack::type::STR) throw RecordError{"key \"" + std::string(key) + "\" is not a string"};
    return {v.via.str.ptr, v.via.str.size};
  }
  const msgpack::object_map& map_;
};

// What the analysis relies on when it walks a snapshot's pages: whole, ascending, disjoint page ranges that
// stay in the address space, and exactly their bits.
void check(const ResidentPages& r) {
  const std::string what = "ResidentPages";
  if (r.starts.size() != r.pages.size())
    throw RecordError{what + " has " + std::to_string(r.starts.size()) + " starts but " +
                      std::to_string(r.pages.size()) + " page counts"};
  if (r.page_size == 0 || (r.page_size & (r.page_size - 1)) != 0)
    throw RecordError{what + " page_size " + std::to_string(r.page_size) + " is not a power of two"};
  std::uint64_t end = 0, bytes = 0;
  for (std::size_t i = 0; i < r.starts.size(); ++i) {
    const std::uint64_t start = r.starts[i], n = r.pages[i];
    if (start % r.page_size != 0 || start < end || n > (UINT64_MAX - start) / r.page_size)
      throw RecordError{what + " range " + std::to_string(i) + " (start " + std::to_string(start) + ", " +
                        std::to_string(n) + " pages) is not page-aligned, ascending and disjoint"};
    end = start + n * r.page_size;
    bytes += resident_bitmap_bytes(n);
  }
  if (bytes != r.present.size())
    throw RecordError{what + " ranges need " + std::to_string(bytes) + " bytes of bits but present has " +
                      std::to_string(r.present.size())};
}

// Returns false for a record of a type this version does not know (skipped, as FORMAT.md promises).
bool parse_record(const msgpack::object& obj, std::vector<ContextRecord>& out) {
  if (obj.type != msgpack::type::MAP) throw RecordError{"record is not a map"};
  const Fields f(obj);
  const std::string type = f.string("type");
  if (type == "Recording") {
    out.emplace_back(RecordingInfo{
        f.string("memtrack"), f.strings("command"), f.integer<std::uint64_t>("start_realtime_ns"),
        f.integer<std::uint64_t>("start_monotonic_ns"), f.strings("sections"), f.integer<std::int32_t>("pid")});
  } else if (type == "ProcessStart") {
    out.emplace_back(ProcessStart{f.integer<std::int32_t>("pid"), f.integer<std::int32_t>("ppid"),
                                  f.integer<std::uint64_t>("event"), f.integer<std::uint64_t>("timestamp")});
  } else if (type == "Exec") {
    out.emplace_back(ProcessExec{f.integer<std::int32_t>("pid"), f.integer<std::uint64_t>("event"),
                                 f.integer<std::uint64_t>("timestamp"), f.string("executable"), f.strings("argv")});
  } else if (type == "ProcessExit") {
    out.emplace_back(ProcessExit{f.integer<std::int32_t>("pid"), f.integer<std::uint64_t>("event"),
                                 f.integer<std::uint64_t>("timestamp"), f.optional_integer<std::int32_t>("status"),
                                 f.optional_integer<std::int32_t>("signal")});
  } else if (type == "Untracked") {
    out.emplace_back(Untracked{f.optional_integer<std::int32_t>("pid"), f.string("executable"), f.string("reason"),
                               f.integer<std::uint64_t>("event")});
  } else if (type == "End") {
    out.emplace_back(
        StreamEnd{f.integer<std::uint64_t>("events"), f.integer<std::uint64_t>("frames"), f.boolean("clean")});
  } else if (type == "Module") {
    out.emplace_back(Module{f.integer<std::int32_t>("pid"), f.integer<std::uint64_t>("event"), f.string("path"),
                            f.bytes("build_id"), f.integer<std::uint64_t>("bias"), f.integer<std::uint64_t>("start"),
                            f.integer<std::uint64_t>("end"), f.boolean("loaded")});
  } else if (type == "StackNodes") {
    StackNodes r{f.integer<std::int32_t>("pid"), f.integer<std::uint64_t>("event"),
                 f.integer<std::uint32_t>("first_id"), f.column<std::uint32_t>("parents"),
                 f.column<std::uint64_t>("addresses")};
    if (r.parents.size() != r.addresses.size())
      throw RecordError{"StackNodes has " + std::to_string(r.parents.size()) + " parents but " +
                        std::to_string(r.addresses.size()) + " addresses"};
    if (r.first_id == 0 || r.parents.size() > std::uint64_t{UINT32_MAX} - r.first_id + 1)
      throw RecordError{"StackNodes ids out of range (first_id " + std::to_string(r.first_id) + ")"};
    out.emplace_back(std::move(r));
  } else if (type == "EventStacks") {
    out.emplace_back(EventStacks{f.integer<std::uint64_t>("first_event"), f.column<std::uint32_t>("ids")});
  } else if (type == "Symbols") {
    Symbols r{f.string("path"),
              f.bytes("build_id"),
              f.column<std::uint64_t>("addresses"),
              f.column<std::uint32_t>("depths"),
              f.column<std::uint32_t>("functions"),
              f.column<std::uint32_t>("files"),
              f.column<std::uint32_t>("lines"),
              f.strings("strings")};
    if (r.depths.size() != r.addresses.size())
      throw RecordError{"Symbols has " + std::to_string(r.addresses.size()) + " addresses but " +
                        std::to_string(r.depths.size()) + " depths"};
    std::uint64_t frames = 0;
    for (const std::uint32_t d : r.depths) frames += d;
    if (r.functions.size() != frames || r.files.size() != frames || r.lines.size() != frames)
      throw RecordError{"Symbols depths add up to " + std::to_string(frames) + " frames but the frame columns have " +
                        std::to_string(r.functions.size()) + ", " + std::to_string(r.files.size()) + ", " +
                        std::to_string(r.lines.size())};
    for (const auto* col : {&r.functions, &r.files})
      for (const std::uint32_t i : *col)
        if (i != kNoString && i >= r.strings.size())
          throw RecordError{"Symbols string index " + std::to_string(i) + " beyond its " +
                            std::to_string(r.strings.size()) + " strings"};
    out.emplace_back(std::move(r));
  } else if (type == "Pause" || type == "Resume") {
    const std::int32_t pid = f.integer<std::int32_t>("pid"), tid = f.integer<std::int32_t>("tid");
    const auto event = f.integer<std::uint64_t>("event"), timestamp = f.integer<std::uint64_t>("timestamp");
    if (type == "Pause")
      out.emplace_back(Pause{pid, tid, event, timestamp, f.string("source")});
    else
      out.emplace_back(Resume{pid, tid, event, timestamp, f.string("source")});
  } else if (type == "RegionBegin") {
    out.emplace_back(RegionBegin{f.integer<std::int32_t>("pid"), f.integer<std::int32_t>("tid"),
                                 f.integer<std::uint64_t>("event"), f.integer<std::uint64_t>("timestamp"),
                                 f.string("name")});
  } else if (type == "RegionEnd") {
    out.emplace_back(RegionEnd{f.integer<std::int32_t>("pid"), f.integer<std::int32_t>("tid"),
                               f.integer<std::uint64_t>("event"), f.integer<std::uint64_t>("timestamp")});
  } else if (type == "Resident") {
    out.emplace_back(Resident{f.integer<std::int32_t>("pid"), f.integer<std::uint64_t>("event"),
                              f.integer<std::uint64_t>("timestamp"), f.integer<std::uint64_t>("anon"),
                              f.integer<std::uint64_t>("file"), f.integer<std::uint64_t>("shmem"),
                              f.integer<std::uint64_t>("swap"), f.integer<std::uint64_t>("own"),
                              f.integer<std::uint64_t>("hwm")});
  } else if (type == "ResidentPages") {
    ResidentPages r{f.integer<std::int32_t>("pid"),          f.integer<std::uint64_t>("event"),
                    f.integer<std::uint64_t>("timestamp"),    f.integer<std::uint32_t>("part"),
                    f.integer<std::uint32_t>("page_size"),    f.column<std::uint64_t>("starts"),
                    f.column<std::uint64_t>("pages"),         f.bytes("present")};
    check(r);
    out.emplace_back(std::move(r));
  } else {
    return false;
  }
  return true;
}

}  // namespace

std::vector<ResidentPages> split_resident_pages(const ResidentPages& snapshot, std::size_t max_bytes) {
  if (snapshot.present.size() <= max_bytes && snapshot.starts.size() * 8 <= max_bytes) {
    ResidentPages whole = snapshot;
    whole.part = 0;
    return {std::move(whole)};
  }
  std::vector<ResidentPages> parts;
  const auto fresh = [&] {
    ResidentPages p;
    p.pid = snapshot.pid;
    p.event = snapshot.event;
    p.timestamp = snapshot.timestamp;
    p.part = static_cast<std::uint32_t>(parts.size());
    p.page_size = snapshot.page_size;
    parts.push_back(std::move(p));
  };
  fresh();
  const std::uint64_t max_pages = std::uint64_t{max_bytes} * 8;  // a piece of a range: whole bytes of bits
  std::uint64_t bit = 0;  // where the current range's bits start in snapshot.present
  for (std::size_t i = 0; i < snapshot.starts.size(); ++i) {
    for (std::uint64_t done = 0; done < snapshot.pages[i] || (done == 0 && snapshot.pages[i] == 0);) {
      const std::uint64_t n = std::min(snapshot.pages[i] - done, max_pages);
      const std::uint64_t bytes = resident_bitmap_bytes(n);
      if (parts.back().present.size() + bytes > max_bytes || (parts.back().starts.size() + 1) * 8 > max_bytes) fresh();
      ResidentPages& p = parts.back();
      p.starts.push_back(snapshot.starts[i] + done * snapshot.page_size);
      p.pages.push_back(n);
      const std::size_t at = p.present.size();
      p.present.resize(at + bytes, 0);
      for (std::uint64_t j = 0; j < n; ++j) {
        const std::uint64_t b = bit + done + j;
        if ((snapshot.present[b / 8] >> (b % 8)) & 1u)
          p.present[at + j / 8] |= static_cast<std::uint8_t>(1u << (j % 8));
      }
      done += n;
      if (n == 0) break;
    }
    bit += resident_bitmap_bytes(snapshot.pages[i]) * 8;
  }
  return parts;
}

std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

void encode_context_record(const ContextRecord& record, std::vector<std::byte>& out) {
  ByteVectorStream stream{out};
  Packer pk(stream);
  std::visit([&](const auto& r) { pack(pk, r); }, record);
}

Status encode_context_frame(std::span<const ContextRecord> records, FrameCompressor& compressor,
                            std::vector<std::byte>& scratch, std::vector<std::byte>& out) {
  scratch.clear();
  for (const ContextRecord& r : records) encode_context_record(r, scratch);
  if (scratch.size() > kMaxContextPayloadBytes)
    return {Errc::too_large, "context frame of " + std::to_string(scratch.size()) + " bytes exceeds the " +
                                 std::to_string(kMaxContextPayloadBytes) + "-byte limit"};
  const std::size_t start = out.size();
  out.resize(start + kContextHeaderBytes + FrameCompressor::bound(scratch.size()));
  Status status;
  const std::size_t n = compressor.compress(scratch, std::span(out).subspan(start + kContextHeaderBytes), status);
  if (!status) {
    out.resize(start);
    return status;
  }
  out.resize(start + kContextHeaderBytes + n);
  std::byte* h = out.data() + start;
  store_le32(h, kContextFrameMagic);
  store_le32(h + 4, static_cast<std::uint32_t>(kContextHeaderBytes - 8 + n));
  std::memcpy(h + 8, kContextTag, 4);
  h[12] = std::byte{kFormatVersion};
  h[13] = std::byte{kContextFlagZstd};
  h[14] = h[15] = std::byte{0};
  return {};
}

bool is_context_frame(std::span<const std::byte> bytes) {
  return bytes.size() >= 4 && load_le32(bytes.data()) == kContextFrameMagic;
}

Status decode_context_frame(std::span<const std::byte> frame, std::uint64_t file_offset,
                            std::vector<ContextRecord>& out) {
  const std::string where = "context frame at byte " + std::to_string(file_offset);
  if (frame.size() < kContextHeaderBytes || !is_context_frame(frame))
    return {Errc::truncated, where + ": shorter than its header"};
  if (load_le32(frame.data() + 4) != frame.size() - 8)
    return {Errc::truncated, where + ": frame size field disagrees with the frame"};
  if (std::memcmp(frame.data() + 8, kContextTag, 4) != 0)
    return {Errc::bad_msgpack, where + ": no MTCX tag (a skippable frame of another writer)"};
  const auto version = std::to_integer<std::uint8_t>(frame[12]);
  const auto flags = std::to_integer<std::uint8_t>(frame[13]);
  if (version > kFormatVersion)
    return {Errc::bad_msgpack, where + ": format version " + std::to_string(version) +
                                   " (written by a newer memtrack; this one reads up to " +
                                   std::to_string(kFormatVersion) + ")"};
  if (version < 2)
    return {Errc::bad_msgpack, where + ": format version " + std::to_string(version) + " has no context"};
  if (flags != kContextFlagZstd || frame[14] != std::byte{0} || frame[15] != std::byte{0})
    return {Errc::bad_msgpack, where + ": reserved flags set"};

  const std::span<const std::byte> compressed = frame.subspan(kContextHeaderBytes);
  const unsigned long long declared = ZSTD_getFrameContentSize(compressed.data(), compressed.size());
  if (declared == ZSTD_CONTENTSIZE_ERROR || declared == ZSTD_CONTENTSIZE_UNKNOWN)
    return {Errc::bad_zstd, where + ": payload is not a zstd frame with a content size"};
  if (declared > kMaxContextPayloadBytes)
    return {Errc::too_large, where + ": payload declares " + std::to_string(declared) + " bytes (limit " +
                                 std::to_string(kMaxContextPayloadBytes) + ")"};
  std::vector<char> payload(static_cast<std::size_t>(declared));
  const std::size_t n = ZSTD_decompress(payload.data(), payload.size(), compressed.data(), compressed.size());
  if (ZSTD_isError(n)) return {Errc::bad_zstd, where + ": " + ZSTD_getErrorName(n)};
  if (n != payload.size()) return {Errc::bad_zstd, where + ": payload shorter than its declared size"};

  // Records parsed so far are kept only if the whole frame checks out, like a data frame's events.
  const std::size_t kept = out.size();
  std::size_t off = 0;
  while (off < payload.size()) {
    const std::size_t record_offset = off;
    try {
      // Limits keep a declared array or string size from allocating more than the payload could hold.
      const msgpack::unpack_limit limit(kMaxContextArrayElements, 1u << 10, kMaxContextBinBytes, kMaxContextBinBytes,
                                        1u << 20, 8);
      const msgpack::object_handle h = msgpack::unpack(payload.data(), payload.size(), off, nullptr, nullptr, limit);
      parse_record(h.get(), out);
    } catch (const RecordError& e) {
      out.resize(kept);
      return {Errc::bad_msgpack, where + ", record at payload offset " + std::to_string(record_offset) + ": " + e.what};
    } catch (const std::exception& e) {
      out.resize(kept);
      return {Errc::bad_msgpack, where + ", record at payload offset " + std::to_string(record_offset) +
                                     ": malformed msgpack (" + e.what() + ")"};
    }
  }
  return {};
}

}  // namespace memtrack::codec
