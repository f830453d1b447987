// Placeholder until the visitor-based parser lands (in progress in this session); not a finished piece.
#include "memtrack/codec/msgpack_decoder.h"

namespace memtrack::codec {
ParseResult parse_event(const std::byte*, std::size_t, std::size_t&, Event&, std::string& error) {
  error = "msgpack decoding not built yet";
  return ParseResult::error;
}
}  // namespace memtrack::codec
