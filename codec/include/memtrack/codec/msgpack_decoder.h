// Parses one MemtrackEvent map from msgpack bytes, as leniently as rmp_serde reads it and strictly on
// everything malformed. Allocates nothing: built on msgpack-c's visitor parser, with the event schema
// checked in the visitor.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "memtrack/codec/event.h"

namespace memtrack::codec {

enum class ParseResult {
  ok,         // one event parsed; `offset` advanced past it
  need_more,  // the bytes end inside the event; `offset` unchanged
  error,      // malformed; `error` says what, relative to the event's first byte
  foreign,    // a valid event map of a type this reader does not know; `offset` advanced past it
};

// Leniency (what rmp_serde accepts): keys in any order, unknown keys (with any value) ignored, integers in
// any valid msgpack width as long as the value fits the field, old_addr absent or nil, str8/str16/str32
// keys, map16/map32 headers. Errors: not a map, duplicate or missing required keys, a value of the wrong
// type or out of range. Keys a variant does not have (size on a Free, old_addr on a Malloc) are ignored, as
// serde ignores unknown keys of a flattened struct.
// A "type" string that names no known variant is not an error but a foreign event (docs/FORMAT.md, "Readers'
// rule"): its common keys (pid, tid, timestamp, addr) are checked and stored in `out` (whose kind is then
// meaningless), its other keys are its own and not checked; `foreign_type`, if given, views its type string
// in `data`.
ParseResult parse_event(const std::byte* data, std::size_t size, std::size_t& offset, Event& out, std::string& error,
                        std::string_view* foreign_type = nullptr);

}  // namespace memtrack::codec
