// The 48-byte little-endian raw record: the interchange format of `memtrack encode` (input) and
// `memtrack decode --format raw` (output). Layout in docs/FORMAT.md ("raw record").
//
// The record is a wire form, not the in-memory Event: pack_raw_record and unpack_raw_record convert
// field by field, little-endian whatever the host, so Event may change its layout (and grow fields the
// record does not carry) without changing a byte of the format. Reading records from a file descriptor is
// I/O and lives in the pipeline (memtrack/pipeline/raw_record_reader.h); this header is pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "memtrack/codec/event.h"
#include "memtrack/codec/status.h"

namespace memtrack::codec {

inline constexpr std::size_t kRawRecordSize = 48;

// Byte offsets of the fields in a record (docs/FORMAT.md): u64 timestamp, addr, size, old_addr; i32 pid,
// tid; u8 kind, flags; six reserved bytes that must be zero.
namespace raw_offset {
inline constexpr std::size_t timestamp = 0, addr = 8, size = 16, old_addr = 24, pid = 32, tid = 36, kind = 40,
                             flags = 41, reserved = 42;
}

// Writes `e` as one record. Every byte of `out` is written (the reserved bytes as zero), so a record packed
// from a valid event unpacks to the same event.
void pack_raw_record(const Event& e, std::span<std::byte, kRawRecordSize> out);

// Reads one record into `out` and checks it as validate_record does, in the same order and with the same
// messages ("record N: ..."). `record_index` is the 0-based index in the whole stream. On an error `out`
// is unspecified.
[[nodiscard]] Status unpack_raw_record(std::span<const std::byte, kRawRecordSize> in, std::uint64_t record_index,
                                       Event& out);

// Unpacks the whole records of `in` (in.size() / kRawRecordSize of them, at most out.size()) into `out`,
// stopping at the first invalid one. `unpacked` receives how many were valid; the status is that first
// error, naming its index (first_index + position). One call per block keeps the per-record loop inside
// this library, with no call per record.
[[nodiscard]] Status unpack_raw_records(std::span<const std::byte> in, std::uint64_t first_index, std::span<Event> out,
                                        std::size_t& unpacked);

// Checks that `e` can be written as a record: known kind, only bit 0 of flags and that bit only on
// Realloc, reserved bytes zero, no size on Free, no old_addr without its flag. Decoders use it to check
// that what they produce is a valid event.
[[nodiscard]] Status validate_record(const Event& e, std::uint64_t record_index);

}  // namespace memtrack::codec
