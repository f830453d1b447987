#include "memtrack/codec/event.h"

#include "memtrack/codec/schema.h"

namespace memtrack::codec {

std::string_view kind_name(EventKind kind) {
  const auto k = static_cast<std::uint8_t>(kind);
  return is_valid_kind(k) ? schema::kVariants[k].name : "Unknown";
}

}  // namespace memtrack::codec
