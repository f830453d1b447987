// Parses one MemtrackEvent map from msgpack bytes, as leniently as rmp_serde reads it and strictly on
// everything malformed. Allocates nothing: built on msgpack-c's visitor parser, with the event schema
// checked in the visitor.
#pragma once

#include <cstddef>
#include <string>

#include "memtrack/codec/event.h"

namespace memtrack::codec {

enum class ParseResult {
  ok,         // one event parsed; `offset` advanced past it
  need_more,  // the bytes end inside the event; `offset` unchanged
  error,      // malformed; `error` says what, relative to the event's first byte
};

// Leniency (what rmp_serde accepts): keys in any order, unknown keys (with any value) ignored, integers in
// any valid msgpack width as long as the value fits the field, old_addr absent or nil, str8/str16/str32
// keys, map16/map32 headers. Errors: not a map, duplicate or missing required keys, a value of the wrong
// type or out of range, an unknown "type" string. Keys a variant does not have (size on a Free, old_addr on
// a Malloc) are ignored, as serde ignores unknown keys of a flattened struct.
ParseResult parse_event(const std::byte* data, std::size_t size, std::size_t& offset, Event& out, std::string& error);

}  // namespace memtrack::codec
