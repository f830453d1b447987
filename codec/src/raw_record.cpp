#include "memtrack/codec/raw_record.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>
#include <type_traits>

namespace memtrack::codec {
namespace {

// Little-endian loads and stores: memcpy on a little-endian host (a plain move), bytes assembled otherwise.
template <typename T>
T load_le(const std::byte* p) {
  using U = std::make_unsigned_t<T>;
  U u = 0;
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(&u, p, sizeof u);
  } else {
    for (std::size_t i = 0; i < sizeof u; ++i) u = static_cast<U>(u | (static_cast<U>(p[i]) << (8 * i)));
  }
  return static_cast<T>(u);
}

template <typename T>
void store_le(std::byte* p, T v) {
  using U = std::make_unsigned_t<T>;
  const auto u = static_cast<U>(v);
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(p, &u, sizeof u);
  } else {
    for (std::size_t i = 0; i < sizeof u; ++i) p[i] = static_cast<std::byte>((u >> (8 * i)) & 0xff);
  }
}

std::string at(std::uint64_t record_index) { return "record " + std::to_string(record_index) + ": "; }

// The checks of validate_record, on the fields as they are in either form, so a record and the event it
// unpacks to get the same first error. The order decides which message a record with several faults gets.
Status check(std::uint8_t kind, std::uint8_t flags, bool reserved_zero, std::uint64_t size, std::uint64_t old_addr,
             std::uint64_t record_index) {
  if (!is_valid_kind(kind)) return {Errc::bad_record, at(record_index) + "unknown kind " + std::to_string(kind)};
  if ((flags & ~kFlagHasOldAddr) != 0) {
    return {Errc::bad_record, at(record_index) + "reserved flag bits set (flags=" + std::to_string(flags) + ")"};
  }
  const bool has_old_addr = (flags & kFlagHasOldAddr) != 0;
  const auto k = static_cast<EventKind>(kind);
  if (has_old_addr && k != EventKind::Realloc) {
    return {Errc::bad_record, at(record_index) + "old_addr flag on a " + std::string(kind_name(k)) + " record"};
  }
  if (!reserved_zero) return {Errc::bad_record, at(record_index) + "reserved bytes 42..47 not zero"};
  if (k == EventKind::Free && size != 0)
    return {Errc::bad_record, at(record_index) + "Free record with a non-zero size"};
  if (!has_old_addr && old_addr != 0) {
    return {Errc::bad_record, at(record_index) + "old_addr set without the old_addr flag"};
  }
  return {};
}

bool all_zero(const std::byte* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != std::byte{0}) return false;
  }
  return true;
}

// The hot loop of `memtrack encode`: a valid record costs the loads and one branch per check.
inline bool unpack_one(const std::byte* p, std::uint64_t record_index, Event& e, Status& error) {
  const auto kind = static_cast<std::uint8_t>(p[raw_offset::kind]);
  const auto flags = static_cast<std::uint8_t>(p[raw_offset::flags]);
  const std::uint64_t size = load_le<std::uint64_t>(p + raw_offset::size);
  const std::uint64_t old_addr = load_le<std::uint64_t>(p + raw_offset::old_addr);
  const bool reserved_zero = all_zero(p + raw_offset::reserved, kRawRecordSize - raw_offset::reserved);
  // Fast acceptance of the common case; anything unusual goes through check() for its message.
  const bool plain = is_valid_kind(kind) && reserved_zero &&
                     ((flags == 0 && old_addr == 0) ||
                      (flags == kFlagHasOldAddr && static_cast<EventKind>(kind) == EventKind::Realloc)) &&
                     (static_cast<EventKind>(kind) != EventKind::Free || size == 0);
  if (!plain) {
    error = check(kind, flags, reserved_zero, size, old_addr, record_index);
    if (!error.is_ok()) return false;
  }
  e = Event{};
  e.timestamp = load_le<std::uint64_t>(p + raw_offset::timestamp);
  e.addr = load_le<std::uint64_t>(p + raw_offset::addr);
  e.size = size;
  e.old_addr = old_addr;
  e.pid = load_le<std::int32_t>(p + raw_offset::pid);
  e.tid = load_le<std::int32_t>(p + raw_offset::tid);
  e.kind = static_cast<EventKind>(kind);
  e.flags = flags;
  return true;
}

}  // namespace

void pack_raw_record(const Event& e, std::span<std::byte, kRawRecordSize> out) {
  std::byte* p = out.data();
  store_le(p + raw_offset::timestamp, e.timestamp);
  store_le(p + raw_offset::addr, e.addr);
  store_le(p + raw_offset::size, e.size);
  store_le(p + raw_offset::old_addr, e.old_addr);
  store_le(p + raw_offset::pid, e.pid);
  store_le(p + raw_offset::tid, e.tid);
  p[raw_offset::kind] = static_cast<std::byte>(e.kind);
  p[raw_offset::flags] = static_cast<std::byte>(e.flags);
  std::memset(p + raw_offset::reserved, 0, kRawRecordSize - raw_offset::reserved);
}

Status unpack_raw_record(std::span<const std::byte, kRawRecordSize> in, std::uint64_t record_index, Event& out) {
  Status error;
  unpack_one(in.data(), record_index, out, error);
  return error;
}

Status unpack_raw_records(std::span<const std::byte> in, std::uint64_t first_index, std::span<Event> out,
                          std::size_t& unpacked) {
  const std::size_t count = std::min(in.size() / kRawRecordSize, out.size());
  Status error;
  for (std::size_t i = 0; i < count; ++i) {
    if (!unpack_one(in.data() + i * kRawRecordSize, first_index + i, out[i], error)) {
      unpacked = i;
      return error;
    }
  }
  unpacked = count;
  return {};
}

Status validate_record(const Event& e, std::uint64_t record_index) {
  bool reserved_zero = true;
  for (std::uint8_t b : e.reserved) reserved_zero = reserved_zero && b == 0;
  return check(static_cast<std::uint8_t>(e.kind), e.flags, reserved_zero, e.size, e.old_addr, record_index);
}

}  // namespace memtrack::codec
