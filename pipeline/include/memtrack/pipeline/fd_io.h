// File descriptors as byte sources and sinks: the one read(2) and write(2) loops of the project.
//
// The codec is pure (it sees bytes through codec::ByteSource and returns bytes in buffers); every loop over
// read(2) or write(2), with its EINTR and short-transfer handling, is here or built on these: FdSource
// (decoders' input), FdSink (memtrack/pipeline/sink.h: the encoder's output), RawRecordReader
// (memtrack/pipeline/raw_record_reader.h: `memtrack encode`'s input) and the tool's buffered text output.
// None of them takes ownership of its descriptor.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "memtrack/codec/byte_source.h"

namespace memtrack::pipeline {

// Reads a file descriptor (file, pipe, stdin) for a decoder. read() retries EINTR, so a signal does not end
// the input; a reader that must stop on a signal polls its own flag (RawRecordReader).
class FdSource final : public codec::ByteSource {
 public:
  explicit FdSource(int fd) : fd_(fd) {}
  std::ptrdiff_t read(std::span<std::byte> out) override;

 private:
  int fd_;
};

// How far write_all() got: `written` bytes went out; `error` is the errno of the write(2) that failed, or 0.
// written < size with error == 0 means write(2) returned 0 for a non-empty request.
struct WriteResult {
  std::size_t written = 0;
  int error = 0;
};

// Writes all of `bytes` to `fd`, retrying EINTR and short writes; stops at the first failure. It never
// raises SIGPIPE itself: whether a closed pipe kills the process is the caller's signal mask's business.
[[nodiscard]] WriteResult write_all(int fd, std::span<const std::byte> bytes);

// The text of an errno value. Unlike std::strerror it may be called from several threads at once.
[[nodiscard]] std::string errno_text(int err);

}  // namespace memtrack::pipeline
