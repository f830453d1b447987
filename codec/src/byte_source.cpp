#include "memtrack/codec/byte_source.h"

#include <algorithm>
#include <cstring>

namespace memtrack::codec {

std::ptrdiff_t MemorySource::read(std::span<std::byte> out) {
  const std::size_t n = std::min(out.size(), bytes_.size() - pos_);
  if (n > 0) std::memcpy(out.data(), bytes_.data() + pos_, n);
  pos_ += n;
  return static_cast<std::ptrdiff_t>(n);
}

}  // namespace memtrack::codec
