// Where a decoder's compressed bytes come from: a file descriptor (file, pipe, stdin) or memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace memtrack::codec {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to out.size() bytes. Returns bytes read (> 0), 0 at end of input, or -errno on failure.
  // Blocks like read(2); retries EINTR itself.
  virtual std::ptrdiff_t read(std::span<std::byte> out) = 0;
};

class FdSource final : public ByteSource {
 public:
  explicit FdSource(int fd) : fd_(fd) {}  // does not take ownership
  std::ptrdiff_t read(std::span<std::byte> out) override;

 private:
  int fd_;
};

class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::span<const std::byte> bytes) : bytes_(bytes) {}
  std::ptrdiff_t read(std::span<std::byte> out) override;

 private:
  std::span<const std::byte> bytes_;
  std::size_t pos_ = 0;
};

}  // namespace memtrack::codec
