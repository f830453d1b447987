// Where a decoder's compressed bytes come from. The codec defines the interface and an in-memory source
// only: reading a file descriptor is I/O policy (EINTR, blocking) and lives in the pipeline
// (memtrack/pipeline/fd_io.h: FdSource).
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

// Reads a span it does not own; the bytes must outlive the source.
class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::span<const std::byte> bytes) : bytes_(bytes) {}
  std::ptrdiff_t read(std::span<std::byte> out) override;

 private:
  std::span<const std::byte> bytes_;
  std::size_t pos_ = 0;
};

}  // namespace memtrack::codec
