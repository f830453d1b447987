// The MemtrackEvent schema (docs/FORMAT.md, "Events"): the keys of an event map, their order on the wire,
// and the variants with their names and the keys each one carries.
//
// This is the one place these facts live. The msgpack writer (msgpack_encoder.cpp), both parsers (the
// canonical fast path and msgpack-c's visitor, msgpack_decoder.cpp) and kind_name() are built from these
// tables at compile time, so a key or a variant is renamed or added here and nowhere else. Everything is
// constexpr: reading a name costs nothing at run time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "memtrack/codec/event.h"

namespace memtrack::codec::schema {

// The keys of an event map, in the order serde + rmp_serde write them: MemtrackEvent's own fields, the
// serde tag of the flattened Kind, then the variant's fields in declaration order (old_addr before size).
// The enumerator values are that order.
enum class Field : std::uint8_t { pid, tid, timestamp, addr, type, old_addr, size };
inline constexpr std::size_t kFieldCount = 7;

// Indexed by Field.
inline constexpr std::array<std::string_view, kFieldCount> kFieldNames = {
    "pid", "tid", "timestamp", "addr", "type", "old_addr", "size",
};

[[nodiscard]] constexpr std::string_view field_name(Field f) { return kFieldNames[static_cast<std::size_t>(f)]; }

// Every event has the keys up to and including the tag; the ones after it depend on the variant.
inline constexpr Field kLastCommonField = Field::type;
inline constexpr std::size_t kCommonFieldCount = static_cast<std::size_t>(kLastCommonField) + 1;
[[nodiscard]] constexpr bool is_common(Field f) { return f <= kLastCommonField; }

// One variant of Kind: the "type" string, and which of the variant keys it has. `size` is written and
// required whenever has_size; `old_addr` is an Option, written only when present (Event::has_old_addr).
struct Variant {
  std::string_view name;
  bool has_size;
  bool has_old_addr;
};

// Indexed by the EventKind value (the raw record's kind byte). Entry 0 is no kind: an empty name, which no
// parser matches.
inline constexpr std::array<Variant, 9> kVariants = {{
    {"", false, false},
    {"Malloc", true, false},
    {"Free", false, false},
    {"Calloc", true, false},
    {"Realloc", true, true},
    {"AlignedAlloc", true, false},
    {"Mmap", true, false},
    {"Munmap", true, false},
    {"Brk", true, false},
}};
static_assert(!is_valid_kind(0) && is_valid_kind(kVariants.size() - 1) && !is_valid_kind(kVariants.size()),
              "kVariants must have one entry per EventKind value, and entry 0 for none");

// Precondition: is_valid_kind(kind).
[[nodiscard]] constexpr const Variant& variant(EventKind kind) { return kVariants[static_cast<std::size_t>(kind)]; }

// The number of keys in the map of an event of this variant: the common ones, then the variant's.
[[nodiscard]] constexpr std::size_t key_count(const Variant& v, bool with_old_addr) {
  return kCommonFieldCount + (v.has_size ? 1 : 0) + (v.has_old_addr && with_old_addr ? 1 : 0);
}

}  // namespace memtrack::codec::schema
