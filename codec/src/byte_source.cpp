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

std::ptrdiff_t InputWindow::fill() {
  if (eof) return 0;
  if (pos > 0) {
    std::memmove(bytes.data(), bytes.data() + pos, available());
    base += pos;
    end -= pos;
    pos = 0;
  }
  const std::ptrdiff_t n = source.read(std::span(bytes.data() + end, bytes.size() - end));
  if (n == 0) eof = true;
  if (n > 0) end += static_cast<std::size_t>(n);
  return n;
}

}  // namespace memtrack::codec
