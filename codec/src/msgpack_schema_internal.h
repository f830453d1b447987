// The msgpack forms of the schema's strings (memtrack/codec/schema.h), computed at compile time: what the
// writer stores and what the parser's fast path compares against. Private to codec.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include "memtrack/codec/schema.h"

// Internal linkage (an unnamed namespace): the constants must be local to each object file, so that code
// built with -fPIC reads them directly rather than through the GOT.
namespace memtrack::codec::msgpack_schema {
namespace {

// A short string as msgpack writes it: a fixstr header (0xa0 | length), then the bytes. rmp_serde writes
// every key and variant name this way, since none reaches 32 bytes.
struct FixStr {
  std::array<char, 32> bytes{};
  std::size_t size = 0;  // header included
};

constexpr FixStr fixstr(std::string_view s) {
  if (s.size() >= 32) throw "a schema name must fit a fixstr";  // only ever evaluated at compile time
  FixStr f;
  f.bytes[0] = static_cast<char>(0xa0 | s.size());
  for (std::size_t i = 0; i < s.size(); ++i) f.bytes[i + 1] = s[i];
  f.size = s.size() + 1;
  return f;
}

// The key `F` as written before its value. A constant of known size: copying it compiles to a few immediate
// stores, comparing against it to a few byte compares.
template <schema::Field F>
constexpr FixStr kKey = fixstr(schema::field_name(F));

}  // namespace
}  // namespace memtrack::codec::msgpack_schema
