// Where a decoder's compressed bytes come from, and the window a sequential reader reads them through. The
// codec defines the interface and an in-memory source only: reading a file descriptor is I/O policy (EINTR,
// blocking) and lives in the pipeline (memtrack/pipeline/fd_io.h: FdSource).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

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

// How much a sequential artifact reader asks its source for at once (the size of its InputWindow).
inline constexpr std::size_t kInputChunk = 128u << 10;

// The input window of a reader that walks a source once, in order (FrameWalker): bytes[pos, end) were read
// and not consumed yet, bytes[0] is at source offset `base`. The reader consumes by advancing `pos` (never
// past `end`; it may also move `pos` back to a byte still held, to search again). The buffer never grows:
// a reader that needs more than its size at once holds those bytes itself. Not thread-safe; the source must
// outlive the window.
struct InputWindow {
  explicit InputWindow(ByteSource& s, std::size_t capacity = kInputChunk) : source(s), bytes(capacity) {}

  [[nodiscard]] std::uint64_t offset() const { return base + pos; }  // the source offset of bytes[pos]
  [[nodiscard]] std::size_t available() const { return end - pos; }
  [[nodiscard]] const std::byte* unread() const { return bytes.data() + pos; }

  // Moves the unread bytes to the front and reads once into the room after them. Returns what the source
  // returned: bytes read (> 0); 0 at the end of input, which sets `eof` (later calls then return 0 without
  // reading); or -errno, leaving everything as it was but the move (a later call reads again). Only with
  // room left (available() < bytes.size()): a source asked for no bytes returns 0, which reads as the end.
  std::ptrdiff_t fill();

  ByteSource& source;
  std::vector<std::byte> bytes;
  std::size_t pos = 0, end = 0;
  std::uint64_t base = 0;
  bool eof = false;
};

}  // namespace memtrack::codec
